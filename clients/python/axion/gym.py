"""Gymnasium vector environment over axion.VectorEnv (pip install 'axion-client[gym]').

    import axion.gym
    env = axion.gym.AxionVectorEnv("localhost:50051", "humanoid.xml", num_envs=64)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

Observations and actions are as in axion.VectorEnv. Finished worlds are reset within the same
step() (Gymnasium's same-step autoreset): the returned observation of such a world is its
first observation of the new episode, and its last one is in info["final_obs"] (rows where
info["_final_obs"] is True).
"""

import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
    from gymnasium.vector.utils import batch_space
except ImportError as error:  # pragma: no cover - exercised only without gymnasium
    raise ImportError(
        "axion.gym needs gymnasium: pip install 'axion-client[gym]' (or pip install gymnasium)"
    ) from error

from axion.vector_env import VectorEnv

_AUTORESET_MODE = getattr(gymnasium.vector, "AutoresetMode", None)


class AxionVectorEnv(gymnasium.vector.VectorEnv):
    """A gymnasium.vector.VectorEnv of `num_envs` Axion worlds of one model.

    Keyword arguments other than `num_envs` are those of axion.VectorEnv (observation,
    frame_skip, max_episode_steps, reward_fn, termination_fn, solver_options, ...).
    """

    metadata = {"render_modes": []}
    if _AUTORESET_MODE is not None:
        metadata["autoreset_mode"] = _AUTORESET_MODE.SAME_STEP

    def __init__(self, client_or_target, model, num_envs, **kwargs):
        kwargs.pop("autoreset", None)
        self.env = VectorEnv(client_or_target, model, num_envs, autoreset=False, **kwargs)
        self.num_envs = num_envs
        self.render_mode = None
        self.single_observation_space = spaces.Box(
            -np.inf, np.inf, shape=(self.env.obs_dim,), dtype=np.float32
        )
        self.single_action_space = spaces.Box(
            self.env.action_low, self.env.action_high, shape=(self.env.act_dim,), dtype=np.float32
        )
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

    def reset(self, *, seed=None, options=None):
        """Resets all worlds, or those of options["reset_mask"] (N bools); returns (obs, {}).

        options["keyframe"] (a name or an index) starts them from that keyframe of the model
        instead of the env's `reset_keyframe`. The physics is deterministic: `seed` seeds the
        reset noise (VectorEnv's reset_noise_scale) and the spaces' random sampling.
        """
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
            self.observation_space.seed(seed)
        mask = keyframe = None
        if options:
            mask = options.get("reset_mask", options.get("mask"))
            keyframe = options.get("keyframe")
        return self.env.reset(mask=mask, keyframe=keyframe, seed=seed), {}

    def step(self, actions):
        obs, reward, terminated, truncated, info = self.env.step(actions)
        done = terminated | truncated
        if done.any():
            info["final_obs"] = obs
            info["_final_obs"] = done
            obs = self.env.reset(mask=done)
        return obs, reward, terminated, truncated, info

    def close_extras(self, **kwargs):
        self.env.close()
