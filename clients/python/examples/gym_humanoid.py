#!/usr/bin/env python3
"""Gym's Humanoid task on Axion: MuJoCo's qpos and qvel, Gym's reset noise, reward and ends.

    python gym_humanoid.py --target localhost:50051 --worlds 16 --steps 1000

MuJoCo's humanoid.xml in N worlds behind axion.VectorEnv, set up as Gymnasium's Humanoid-v4:
  observation  MuJoCo's qpos without the root's x and y, then qvel (26 + 27 values for
               humanoid.xml): the state in the file's own coordinates (VectorEnv fields
               file_position and file_velocity), which is where Humanoid-v4's observation starts
               (its cinert, cvel, qfrc_actuator and cfrc_ext parts are not served)
  reset        the initial state with uniform noise of 0.01 on every coordinate and velocity
               (reset_noise_scale), autoreset when an episode ends
  reward       1.25 x the root's forward speed + 5 while healthy - 0.1 x |action|^2 (Gym takes
               the centre of mass's speed; the root's is the nearest observed)
  terminated   the root's height outside [1, 2] m; truncated after --episode-steps
  frame_skip   5 steps of 0.005 s per action
  --randomize  domain randomisation (0: none): each episode scales every body's mass, every
               shape's friction, every joint's damping and every motor's gear by its own
               uniform draw from [1 - s, 1 + s] (VectorEnv randomize_fn, server SetParameters)
Random actions stand in for a policy; prints the episodes' returns and lengths and world-steps/s.
"""

import argparse
import os
import sys
import time

import numpy as np

import axion

DEFAULT_MODEL = "/usr/share/mujoco/model/humanoid/humanoid.xml"
FORWARD_WEIGHT, HEALTHY_REWARD, CTRL_COST = 1.25, 5.0, 0.1
HEALTHY_Z = (1.0, 2.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=os.environ.get("AXION_TARGET", axion.DEFAULT_TARGET))
    parser.add_argument("--model", default=DEFAULT_MODEL, help="MJCF file (default: humanoid)")
    parser.add_argument("--worlds", type=int, default=16, help="parallel worlds")
    parser.add_argument("--steps", type=int, default=1000, help="actions per world")
    parser.add_argument("--episode-steps", type=int, default=1000, help="truncation length")
    parser.add_argument("--seed", type=int, default=0, help="seed of the actions and reset noise")
    parser.add_argument("--randomize", type=float, default=0.0,
                        help="scale s of the per-episode parameter draws from [1 - s, 1 + s]")
    args = parser.parse_args()
    if not 0 <= args.randomize < 1:
        parser.error(f"--randomize must be in [0, 1), got {args.randomize}")

    def randomize(rng, nominal, count):
        def scaled(values):
            return values * rng.uniform(1 - args.randomize, 1 + args.randomize,
                                        size=(count,) + values.shape[1:])
        return {field: scaled(getattr(nominal, field))
                for field in ("body_mass", "shape_friction", "dof_damping", "actuator_gear")}

    def reward(obs, actions, info):
        z, forward_speed = obs[:, positions.start + 2], obs[:, velocities.start]
        healthy = (z > HEALTHY_Z[0]) & (z < HEALTHY_Z[1])
        return (FORWARD_WEIGHT * forward_speed + HEALTHY_REWARD * healthy
                - CTRL_COST * np.sum(np.square(actions), axis=1))

    def terminated(obs, info):
        z = obs[:, positions.start + 2]
        return (z < HEALTHY_Z[0]) | (z > HEALTHY_Z[1])

    rng = np.random.default_rng(args.seed)
    with axion.VectorEnv(args.target, args.model, args.worlds,
                         observation=("file_position", "file_velocity"), frame_skip=5,
                         max_episode_steps=args.episode_steps, reward_fn=reward,
                         termination_fn=terminated, autoreset=True, reset_noise_scale=0.01,
                         seed=args.seed,
                         randomize_fn=randomize if args.randomize > 0 else None) as env:
        positions = env.observation_slices["file_position"]
        velocities = env.observation_slices["file_velocity"]
        policy_dim = env.obs_dim - 2  # qpos[2:] and qvel: the root's x and y left out
        print(f"{args.worlds} worlds of '{env.description.model_name}': observation {policy_dim} "
              f"(MuJoCo's qpos[2:] and qvel), {env.act_dim} actions")
        obs = env.reset()
        if args.randomize > 0:
            mass = env.get_parameters().body_mass.sum(axis=1)
            print(f"randomised: total mass {mass.min():.2f} to {mass.max():.2f} kg across worlds")
        returns = np.zeros(args.worlds)
        lengths = np.zeros(args.worlds, dtype=np.int64)
        finished_returns, finished_lengths = [], []
        start = time.monotonic()
        for _ in range(args.steps):
            policy_input = np.delete(obs, [positions.start, positions.start + 1], axis=1)
            assert policy_input.shape == (args.worlds, policy_dim)
            actions = rng.uniform(env.action_low, env.action_high,
                                  size=(args.worlds, env.act_dim)).astype(np.float32)
            obs, rewards, done, truncated, _ = env.step(actions)
            returns += rewards
            lengths += 1
            for world in np.flatnonzero(done | truncated):
                finished_returns.append(returns[world])
                finished_lengths.append(lengths[world])
                returns[world], lengths[world] = 0, 0
        elapsed = time.monotonic() - start
    world_steps = args.worlds * args.steps * 5
    if finished_returns:
        print(f"{len(finished_returns)} episodes: mean return {np.mean(finished_returns):.1f}, "
              f"mean length {np.mean(finished_lengths):.1f} actions")
    else:
        print("0 episodes ended")
    print(f"{world_steps} world-steps in {elapsed:.3f} s: {world_steps / elapsed:,.0f} world-steps/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
