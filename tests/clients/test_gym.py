"""axion.gym.AxionVectorEnv (Gymnasium vector API); skipped where gymnasium is not installed."""

import numpy as np
import pytest

from clients_support import MODELS_DIR, PENDULUM_MJCF

try:
    import gymnasium

    import axion.gym
except ImportError:
    gymnasium = None

# Marked per test (not a module-level skip) so that a run without gymnasium reports skipped
# tests rather than none collected.
pytestmark = pytest.mark.skipif(
    gymnasium is None, reason="gymnasium is not installed (pip install 'axion-client[gym]')")


def test_spaces_reset_and_step(client):
    env = axion.gym.AxionVectorEnv(client, MODELS_DIR / "three_link_arm.urdf", num_envs=3)
    try:
        assert isinstance(env, gymnasium.vector.VectorEnv)
        assert env.num_envs == 3
        assert env.single_observation_space.shape == (6,)
        assert env.single_action_space.shape == (3,)
        np.testing.assert_array_equal(env.single_action_space.low, [-50, -50, -30])
        assert env.observation_space.shape == (3, 6)
        assert env.action_space.shape == (3, 3)
        if hasattr(gymnasium.vector, "AutoresetMode"):
            assert env.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
        obs, info = env.reset(seed=3)
        assert obs.shape == (3, 6) and info == {}
        assert env.observation_space.contains(obs)
        actions = env.action_space.sample()
        assert env.action_space.contains(actions)
        obs, reward, terminated, truncated, info = env.step(actions)
        assert obs.shape == (3, 6) and reward.shape == (3,)
        assert terminated.dtype == bool and truncated.dtype == bool
        assert env.observation_space.contains(obs)
    finally:
        env.close()
    assert env.closed
    assert client.list_worlds() == []


def test_seed_makes_action_sampling_reproducible(client):
    with_seed = []
    for _ in range(2):
        env = axion.gym.AxionVectorEnv(client, PENDULUM_MJCF, num_envs=2)
        env.reset(seed=11)
        with_seed.append(env.action_space.sample())
        env.close()
    np.testing.assert_array_equal(with_seed[0], with_seed[1])


def test_same_step_autoreset_on_truncation(client):
    env = axion.gym.AxionVectorEnv(client, PENDULUM_MJCF, num_envs=2, max_episode_steps=2)
    try:
        initial, _ = env.reset()
        push = np.array([[1.0], [1.0]], dtype=np.float32)
        _, _, _, truncated, info = env.step(push)
        assert not truncated.any() and "final_obs" not in info
        obs, _, _, truncated, info = env.step(push)
        np.testing.assert_array_equal(truncated, [True, True])
        np.testing.assert_array_equal(info["_final_obs"], [True, True])
        assert (info["final_obs"][:, 1] > 0).all()
        np.testing.assert_array_equal(obs, initial)
    finally:
        env.close()


def test_reset_mask_option(client):
    env = axion.gym.AxionVectorEnv(client, PENDULUM_MJCF, num_envs=2)
    try:
        initial, _ = env.reset()
        stepped, *_ = env.step(np.array([[1.0], [1.0]], dtype=np.float32))
        obs, _ = env.reset(options={"reset_mask": np.array([False, True])})
        np.testing.assert_array_equal(obs[0], stepped[0])
        np.testing.assert_array_equal(obs[1], initial[1])
    finally:
        env.close()


def test_keyframe_option(client):
    model = client.get_model(client.create_worlds(PENDULUM_MJCF).world_ids[0])
    model.keyframes.add(name="out", body_pose=[0, 0, 2, np.cos(0.25), 0, np.sin(0.25), 0])
    env = axion.gym.AxionVectorEnv(client, model, num_envs=2)
    try:
        initial, _ = env.reset()
        obs, _ = env.reset(options={"keyframe": "out", "reset_mask": np.array([False, True])})
        np.testing.assert_array_equal(obs[0], initial[0])
        np.testing.assert_allclose(obs[1], [0.5, 0], atol=1e-6)
    finally:
        env.close()
