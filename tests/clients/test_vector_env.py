"""axion.VectorEnv against a real axion-server: shapes, reset masks, episodes, errors."""

import numpy as np
import pytest

import axion
from clients_support import (
    CREATURE_KEY_QPOS,
    CREATURE_KEY_QVEL,
    CREATURE_MJCF,
    HAND_MJCF,
    MODELS_DIR,
    PENDULUM_INERTIA,
    PENDULUM_MJCF,
    free_sphere_model,
)

ARM_URDF = MODELS_DIR / "three_link_arm.urdf"


@pytest.fixture
def arm_env(client):
    with axion.VectorEnv(client, ARM_URDF, 4) as env:
        yield env


def test_shapes_and_observation_layout(arm_env):
    env = arm_env
    assert (env.num_worlds, env.obs_dim, env.act_dim) == (4, 6, 3)
    assert env.world_ids.shape == (4,) and env.world_ids.dtype == np.uint64
    assert env.observation_slices == {"joint_position": slice(0, 3),
                                      "joint_velocity": slice(3, 6)}
    np.testing.assert_array_equal(env.action_low, [-50, -50, -30])
    np.testing.assert_array_equal(env.action_high, [50, 50, 30])
    obs = env.reset()
    assert obs.shape == (4, 6) and obs.dtype == np.float32
    np.testing.assert_array_equal(obs, 0.0)  # URDF joints start at zero, at rest
    obs, reward, terminated, truncated, info = env.step(np.zeros((4, 3), dtype=np.float32))
    assert obs.shape == (4, 6) and obs.dtype == np.float32
    assert reward.shape == (4,) and reward.dtype == np.float32
    assert terminated.shape == (4,) and terminated.dtype == bool
    assert truncated.shape == (4,) and truncated.dtype == bool
    for key in ("time", "step_count", "episode_step", "flags", "newton_iterations",
                "residual", "contact_count"):
        assert info[key].shape == (4,), key
    np.testing.assert_array_equal(info["step_count"], 1)


def test_observation_matches_client_state(client, arm_env):
    env = arm_env
    env.reset()
    obs, *_ = env.step(np.tile([[5.0, -3.0, 1.0]], (4, 1)).astype(np.float32))
    state = client.get_state(env.world_ids, observe=["joint_position", "joint_velocity"])
    np.testing.assert_array_equal(obs[:, :3], state.joint_position)
    np.testing.assert_array_equal(obs[:, 3:], state.joint_velocity)


def test_reset_mask_resets_only_masked_worlds(arm_env):
    env = arm_env
    initial = env.reset()
    actions = np.tile([[10.0, 10.0, 5.0]], (4, 1)).astype(np.float32)
    for _ in range(5):
        stepped, *_ = env.step(actions)
    assert not np.allclose(stepped, initial)
    mask = np.array([True, False, False, True])
    obs = env.reset(mask=mask)
    np.testing.assert_array_equal(obs[mask], initial[mask])
    np.testing.assert_array_equal(obs[~mask], stepped[~mask])
    np.testing.assert_array_equal(env.episode_steps, [0, 5, 5, 0])
    # An all-false mask changes nothing.
    np.testing.assert_array_equal(env.reset(mask=np.zeros(4, dtype=bool)), obs)


def test_reset_mask_of_wrong_shape_is_rejected(arm_env):
    with pytest.raises(ValueError, match="mask"):
        arm_env.reset(mask=[True, False])


def test_actions_of_wrong_shape_are_rejected(arm_env):
    with pytest.raises(ValueError, match="actions"):
        arm_env.step(np.zeros((4, 2), dtype=np.float32))


def test_nan_action_is_invalid_argument_and_env_stays_usable(arm_env):
    env = arm_env
    env.reset()
    actions = np.zeros((4, 3), dtype=np.float32)
    actions[2, 1] = np.nan
    with pytest.raises(axion.InvalidArgument, match="controls"):
        env.step(actions)
    obs, _, _, _, info = env.step(np.zeros((4, 3), dtype=np.float32))
    np.testing.assert_array_equal(info["step_count"], 1)  # the rejected step changed nothing
    assert np.isfinite(obs).all()


def test_actions_are_clipped_to_control_range(client, arm_env):
    env = arm_env
    env.reset()
    env.step(np.full((4, 3), 1000.0, dtype=np.float32))
    controls = client.get_state(env.world_ids, observe=["controls"]).controls
    np.testing.assert_array_equal(controls, np.tile([[50, 50, 30]], (4, 1)))


def test_unclipped_out_of_range_action_is_invalid_argument(client):
    with axion.VectorEnv(client, ARM_URDF, 2, clip_actions=False) as env:
        with pytest.raises(axion.InvalidArgument):
            env.step(np.full((2, 3), 1000.0, dtype=np.float32))


def test_frame_skip_and_pendulum_dynamics(client):
    # From rest at the bottom, gravity has no moment: one step of torque tau gives
    # omega = tau h / I.
    with axion.VectorEnv(client, PENDULUM_MJCF, 2, frame_skip=3) as env:
        env.reset()
        obs, _, _, _, info = env.step(np.array([[1.0], [-1.0]], dtype=np.float32))
        np.testing.assert_array_equal(info["step_count"], [3, 3])
        np.testing.assert_allclose(info["time"], 3 * 0.005)
        assert obs[0, 1] == pytest.approx(3 * 0.005 / PENDULUM_INERTIA, rel=5e-3)
        assert obs[1, 1] == pytest.approx(-obs[0, 1], rel=1e-5)


def test_truncation_and_autoreset(client):
    with axion.VectorEnv(client, PENDULUM_MJCF, 2, max_episode_steps=3, autoreset=True) as env:
        initial = env.reset()
        push = np.array([[1.0], [1.0]], dtype=np.float32)
        for step in range(1, 3):
            obs, _, terminated, truncated, info = env.step(push)
            assert not truncated.any() and not terminated.any()
            assert "final_observation" not in info
        obs, _, terminated, truncated, info = env.step(push)
        np.testing.assert_array_equal(truncated, [True, True])
        assert info["_final_observation"].all()
        assert (info["final_observation"][:, 1] > 0).all()  # moving before the reset
        np.testing.assert_array_equal(obs, initial)  # returned obs start the new episode
        np.testing.assert_array_equal(env.episode_steps, [0, 0])


def test_resets_start_from_the_reset_keyframe(client):
    model = client.get_model(client.create_worlds(PENDULUM_MJCF).world_ids[0])
    model.keyframes.add(name="out", body_pose=[0, 0, 2, np.cos(0.25), 0, np.sin(0.25), 0])
    with axion.VectorEnv(client, model, 2, max_episode_steps=2, autoreset=True,
                         reset_keyframe="out") as env:
        np.testing.assert_allclose(env.reset(), [[0.5, 0], [0.5, 0]], atol=1e-6)
        env.step(np.zeros((2, 1), dtype=np.float32))
        obs, _, _, truncated, _ = env.step(np.zeros((2, 1), dtype=np.float32))
        assert truncated.all()
        np.testing.assert_allclose(obs, [[0.5, 0], [0.5, 0]], atol=1e-6)  # autoreset
        # an explicit keyframe overrides it: index 0 is "out" too, "initial" is no keyframe
        obs = env.reset(mask=[True, False], keyframe=0)
        np.testing.assert_allclose(obs[0], [0.5, 0], atol=1e-6)
        with pytest.raises(axion.NotFound, match="initial"):
            env.reset(keyframe="initial")


def test_randomize_fn_draws_each_episodes_parameters(client):
    """Domain randomisation per episode: each reset world gets randomize_fn's gears, drawn
    again at its autoreset, the same draws for the same seed; the torque acts through them."""
    seen = []

    def randomize(rng, nominal, count):
        assert nominal.actuator_gear.shape == (1, 1)
        gear = nominal.actuator_gear * rng.uniform(0.5, 1.5, size=(count, 1))
        seen.append(gear)
        return {"actuator_gear": gear}

    def run(seed):
        seen.clear()
        with axion.VectorEnv(client, PENDULUM_MJCF, 3, max_episode_steps=2, autoreset=True,
                             seed=seed, randomize_fn=randomize) as env:
            env.reset()
            np.testing.assert_allclose(env.get_parameters().actuator_gear, seen[0], rtol=1e-6)
            obs, *_ = env.step(np.ones((3, 1), np.float32))
            np.testing.assert_allclose(obs[:, 1], seen[0][:, 0] * 0.005 / PENDULUM_INERTIA,
                                       rtol=5e-3)
            env.step(np.ones((3, 1), np.float32))  # truncated: autoreset draws again
            assert len(seen) == 2
            np.testing.assert_allclose(env.get_parameters().actuator_gear, seen[1], rtol=1e-6)
            env.set_parameters(mask=[False, True, False], actuator_gear=[[1.0]])
            return np.concatenate(seen), env.get_parameters().actuator_gear[:, 0]

    draws, gears = run(7)
    assert gears[1] == 1.0 and gears[0] != 1.0
    assert not np.allclose(draws[:3], draws[3:])
    np.testing.assert_array_equal(run(7)[0], draws)


def test_mocap_pose_observed_and_moved_each_step(client):
    """A policy's moving target: the hand's pose observed, set with each step's actions."""
    with axion.VectorEnv(client, HAND_MJCF, 2, observation=("mocap_pose", "body_pose")) as env:
        assert env.observation_slices["mocap_pose"] == slice(0, 7)
        obs = env.reset()
        np.testing.assert_allclose(obs[:, :7], [[0, 0, 1, 1, 0, 0, 0]] * 2, atol=1e-6)
        hands = np.array([[[0.3, 0, 1, 1, 0, 0, 0]], [[0, 0.3, 1.2, 1, 0, 0, 0]]], np.float32)
        obs, *_ = env.step(np.zeros((2, 0), np.float32), mocap_pose=hands)
        np.testing.assert_allclose(obs[:, :7], hands[:, 0], atol=1e-6)
        body = env.observation_slices["body_pose"]
        np.testing.assert_allclose(obs[:, body][:, :3], [[0.5, 0, 1], [0.2, 0.3, 1.2]], atol=1e-4)


def test_site_pose_on_a_mocap_body_follows_it(client):
    """A target site on a mocap body: its observed pose is where the mocap body was put."""
    model = HAND_MJCF.replace('contype="0" conaffinity="0"/>',
                              'contype="0" conaffinity="0"/><site name="target" pos="0 0 0.1"/>')
    with axion.VectorEnv(client, model, 2, observation=("site_pose",)) as env:
        assert env.description.source_sites[0].mocap == 0
        np.testing.assert_allclose(env.reset()[:, :3], [[0, 0, 1.1]] * 2, atol=1e-6)
        hands = np.array([[[0.3, 0, 1, 1, 0, 0, 0]], [[0, 0.3, 1.2, 1, 0, 0, 0]]], np.float32)
        obs, *_ = env.step(np.zeros((2, 0), np.float32), mocap_pose=hands)
        np.testing.assert_allclose(obs[:, :3], [[0.3, 0, 1.1], [0, 0.3, 1.3]], atol=1e-6)


FLOATING_ARM_MJCF = """<mujoco><option gravity="0 0 0"/><worldbody>
  <body name="base" pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.1 0.1"/>
    <body name="upper" pos="0.2 0 0"><joint name="shoulder" type="ball"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body name="lower" pos="0.3 0 0"><joint name="elbow" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/></body></body></body>
  </worldbody><actuator><motor joint="elbow"/></actuator></mujoco>"""


def test_reset_noise_perturbs_joints_and_free_bodies_within_the_scale(client):
    """Gym's reset_noise_scale: each reset world starts off the initial state by draws within
    the scale, the same ones for the same seed, and its joints hold exactly."""
    observe = ("joint_position", "joint_velocity", "body_pose", "body_velocity")
    scale = 0.05
    with axion.VectorEnv(client, FLOATING_ARM_MJCF, 3, observation=observe) as quiet:
        initial = quiet.reset()[0]
    with axion.VectorEnv(client, FLOATING_ARM_MJCF, 3, observation=observe,
                         reset_noise_scale=scale, seed=7) as env:
        assert env.description.free_bodies == [0]
        first = env.reset()
        position, velocity = first[:, 0:5], first[:, 5:9]
        base_pose, base_velocity = first[:, 9:16], first[:, 30:36]
        # every world drew its own noise, none larger than the scale (float32 transport)
        assert not np.allclose(first[0], first[1])
        tolerance = scale + 1e-6
        assert np.all(np.abs(position[:, 4] - initial[4]) <= tolerance)  # the elbow
        assert np.any(np.abs(position[:, 4] - initial[4]) > 0.1 * scale)
        assert np.all(np.abs(velocity) <= tolerance)
        assert np.all(np.abs(base_pose[:, :3] - initial[9:12]) <= tolerance)
        assert np.all(np.abs(base_velocity) <= tolerance)
        # the ball and the base turned by rotation vectors within the scale on each axis
        shoulder_turn = 2 * np.arccos(np.clip(np.abs(position[:, 0]), 0, 1))
        assert np.all(shoulder_turn <= np.sqrt(3) * scale + 1e-5)
        assert np.all(shoulder_turn > 0)
        base_turn = 2 * np.arccos(np.clip(np.abs(np.sum(base_pose[:, 3:] * initial[12:16], 1)), 0, 1))
        assert np.all(base_turn <= np.sqrt(3) * scale + 1e-5) and np.all(base_turn > 0)
        # the joints hold: a step without forces solves at once and keeps every rate
        obs, _, _, _, info = env.step(np.zeros((3, 1), dtype=np.float32))
        np.testing.assert_array_equal(info["flags"], 0)
        np.testing.assert_allclose(obs[:, 5:9], velocity, atol=2e-3)
        # the same seed draws the same noise; a masked reset perturbs only its worlds
        np.testing.assert_array_equal(env.reset(seed=7), first)
        stepped, *_ = env.step(np.zeros((3, 1), dtype=np.float32))
        again = env.reset(mask=[False, True, False])
        np.testing.assert_array_equal(again[[0, 2]], stepped[[0, 2]])
        assert not np.allclose(again[1], first[1])
    with pytest.raises(ValueError, match="reset_noise_scale"):
        axion.VectorEnv(client, FLOATING_ARM_MJCF, 1, reset_noise_scale=-1)


def test_reward_and_termination_functions(client):
    def reward_fn(obs, actions, info):
        return -np.abs(obs[:, 0])

    def termination_fn(obs, info):
        return info["episode_step"] >= np.array([1, 2])

    with axion.VectorEnv(client, PENDULUM_MJCF, 2, reward_fn=reward_fn,
                         termination_fn=termination_fn) as env:
        env.reset()
        obs, reward, terminated, _, _ = env.step(np.array([[2.0], [2.0]], dtype=np.float32))
        np.testing.assert_array_equal(reward, -np.abs(obs[:, 0]))
        np.testing.assert_array_equal(terminated, [True, False])
        _, _, terminated, _, _ = env.step(np.array([[2.0], [2.0]], dtype=np.float32))
        np.testing.assert_array_equal(terminated, [True, True])


def test_body_observations_of_free_bodies(client):
    with axion.VectorEnv(client, free_sphere_model(), 3,
                         observation=("body_pose", "body_velocity")) as env:
        assert env.obs_dim == 13 and env.act_dim == 0
        obs = env.reset()
        np.testing.assert_allclose(obs[:, :7], [[0, 0, 10, 1, 0, 0, 0]] * 3)
        obs, *_ = env.step(np.zeros((3, 0), dtype=np.float32))
        np.testing.assert_allclose(obs[:, 7 + 2], -9.81 * 0.01, rtol=1e-5)


def test_file_coordinates_observation_is_mujocos_qpos_and_qvel(client):
    observe = ("file_position", "file_velocity")
    with axion.VectorEnv(client, CREATURE_MJCF, 2, observation=observe,
                         reset_keyframe="pose") as env:
        assert env.obs_dim == 14 + 12
        assert env.observation_slices == {"file_position": slice(0, 14),
                                          "file_velocity": slice(14, 26)}
        obs = env.reset()
        assert obs.shape == (2, 26) and obs.dtype == np.float32
        np.testing.assert_allclose(obs[:, :14], [CREATURE_KEY_QPOS] * 2, atol=2e-6)
        np.testing.assert_allclose(obs[:, 14:], [CREATURE_KEY_QVEL] * 2, atol=2e-6)
        stepped, *_ = env.step(None)
        state = client.get_state(env.world_ids, observe=list(observe))
        np.testing.assert_array_equal(stepped[:, :14], state.file_position)
        np.testing.assert_array_equal(stepped[:, 14:], state.file_velocity)
        assert not np.allclose(stepped[:, :14], obs[:, :14])
    # a scene without a model file has no file coordinates
    with axion.VectorEnv(client, free_sphere_model(), 1, observation=observe) as env:
        assert env.obs_dim == 0
        with pytest.raises(axion.FailedPrecondition, match="no model file"):
            env.reset()


def test_actuator_force_observation_is_what_the_motors_push(client):
    # the arm's URDF joints are driven by efforts: each pushes with its action
    with axion.VectorEnv(client, ARM_URDF, 2, observation=("joint_position", "actuator_force")) as env:
        assert env.observation_slices["actuator_force"] == slice(3, 6)
        env.reset()
        actions = np.array([[5.0, -3.0, 1.0], [0.0, 2.0, -4.0]], dtype=np.float32)
        obs, *_ = env.step(actions)
        np.testing.assert_array_equal(obs[:, 3:], actions)


def test_sensor_data_observation_holds_the_files_sensors(client):
    # a free box's gyro and height: what the policy of a balancing task reads
    xml = """<mujoco><worldbody><geom type="plane" size="0 0 1"/>
      <body name="box" pos="0 0 0.5"><freejoint/><geom type="box" size="0.1 0.1 0.1"/>
        <site name="imu"/></body></worldbody>
      <sensor><gyro name="spin" site="imu"/><framepos name="where" objtype="site" objname="imu"/>
      </sensor></mujoco>"""
    with axion.VectorEnv(client, xml, 2, observation=("sensor_data",)) as env:
        assert env.obs_dim == 6
        assert env.observation_slices["sensor_data"] == slice(0, 6)
        obs = env.reset()
        np.testing.assert_allclose(obs[:, 3:], [[0, 0, 0.5]] * 2, atol=1e-6)
        for _ in range(50):
            obs, *_ = env.step(None)
        np.testing.assert_allclose(obs[:, :3], 0, atol=1e-6)  # no spin
        assert np.all(obs[:, 5] < 0.5)  # falling


def test_tendon_state_observation_holds_the_muscles_lengths(client):
    # two cables pulling a hinged bar from either side: their lengths and rates are columns of
    # the observation, and the longer one is the side the bar swings away from
    xml = """<mujoco><worldbody><site name="left" pos="-0.5 0 1"/><site name="right" pos="0.5 0 1"/>
      <body name="bar" pos="0 0 0.5"><joint name="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.4" size="0.02" mass="1"/><site name="tip" pos="0 0 0.4"/>
      </body></worldbody>
      <tendon><spatial name="flexor"><site site="left"/><site site="tip"/></spatial>
        <spatial name="extensor"><site site="right"/><site site="tip"/></spatial></tendon>
      <actuator><motor tendon="flexor" gear="-1"/></actuator></mujoco>"""
    with axion.VectorEnv(client, xml, 2, observation=("joint_position", "tendon_state")) as env:
        assert env.obs_dim == 1 + 4
        assert env.observation_slices["tendon_state"] == slice(1, 5)
        obs = env.reset()
        np.testing.assert_allclose(obs[:, 1], obs[:, 3], rtol=1e-6)  # symmetric at the start
        for _ in range(20):
            obs, *_ = env.step(np.array([[2.0], [0.0]], dtype=np.float32))
        assert obs[0, 1] < obs[0, 3]  # pulled towards the flexor's anchor
        assert obs[0, 2] < 0 < obs[0, 4]  # the flexor shortening, the extensor lengthening


def test_muscles_activation_follows_the_excitation(client):
    # a bar between two muscles on spatial tendons: the excited one's activation rises as the
    # explicit steps of da/dt = (u - a) / (0.02 (0.5 + 1.5 a)) take it, and its pull (a
    # shortening tendon) swings the bar its way; the other, unexcited, stays at rest
    xml = """<mujoco><option timestep="0.005"/><worldbody>
      <site name="left" pos="-0.5 0 1"/><site name="right" pos="0.5 0 1"/>
      <body name="bar" pos="0 0 0.5"><joint name="hinge" axis="0 1 0" range="-60 60" limited="true"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.4" size="0.02" mass="1"/><site name="tip" pos="0 0 0.4"/>
      </body></worldbody>
      <tendon><spatial name="flexor"><site site="left"/><site site="tip"/></spatial>
        <spatial name="extensor"><site site="right"/><site site="tip"/></spatial></tendon>
      <actuator><muscle name="flexor" tendon="flexor" timeconst="0.02 0.04" ctrlrange="0 1" ctrllimited="true"/>
        <muscle name="extensor" tendon="extensor" timeconst="0.02 0.04" ctrlrange="0 1" ctrllimited="true"/></actuator></mujoco>"""
    with axion.VectorEnv(client, xml, 2, observation=("joint_position", "tendon_state", "activation")) as env:
        assert env.observation_slices["activation"] == slice(5, 7)
        obs = env.reset()
        np.testing.assert_array_equal(obs[:, 5:7], 0)
        expected = 0.0
        for _ in range(10):
            obs, *_ = env.step(np.array([[0.8, 0.0], [0.0, 0.0]], dtype=np.float32))
            expected += 0.005 * (0.8 - expected) / (0.02 * (0.5 + 1.5 * expected))
            np.testing.assert_allclose(obs[0, 5], expected, rtol=1e-5)
        assert obs[0, 6] == 0 and (obs[1, 5:7] == 0).all()
        assert obs[0, 2] < 0 and obs[0, 1] < obs[1, 1]  # the flexor shortening, the bar its way
        assert obs[0, 0] != 0 and obs[1, 0] == 0


def test_unknown_observation_field_is_rejected(client):
    with pytest.raises(ValueError, match="observation"):
        axion.VectorEnv(client, PENDULUM_MJCF, 1, observation=("qpos",))


def test_close_destroys_worlds_and_owned_client(server, client_id):
    env = axion.VectorEnv(server.target, PENDULUM_MJCF, 2,
                          client_options={"client_id": client_id})
    ids = list(env.world_ids)
    env.step(np.zeros((2, 1), dtype=np.float32))
    env.close()
    with axion.Client(server.target, client_id=client_id) as c:
        assert [w.world_id for w in c.list_worlds() if w.world_id in ids] == []
    with pytest.raises(axion.Cancelled):
        env.step(np.zeros((2, 1), dtype=np.float32))


def test_site_pose_observations_follow_the_bodies(client):
    # a pendulum with a site at its bob's centre and a world target: their poses as observed
    mjcf = PENDULUM_MJCF.replace(
        '<geom name="ball"', '<site name="tip" pos="0 0 -1"/><geom name="ball"'
    ).replace("<worldbody>", '<worldbody><site name="target" pos="1 0 1"/>')
    with axion.VectorEnv(client, mjcf, 2, observation=("joint_position", "site_pose")) as env:
        assert env.observation_slices["site_pose"] == slice(1, 15)
        obs = env.reset()
        for _ in range(50):
            obs, *_ = env.step(np.array([[1.0], [-1.0]], dtype=np.float32))
        angle = obs[:, 0]
        sites = obs[:, 1:].reshape(2, 2, 7)
        np.testing.assert_allclose(sites[:, 0, :3], [[1, 0, 1]] * 2)
        np.testing.assert_allclose(sites[:, 1, 0], -np.sin(angle), atol=1e-5)
        np.testing.assert_allclose(sites[:, 1, 2], 2 - np.cos(angle), atol=1e-5)
        assert angle[0] * angle[1] < 0  # pushed apart: the sites follow each world's own bob

