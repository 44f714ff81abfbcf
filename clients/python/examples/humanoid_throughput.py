#!/usr/bin/env python3
"""Steps N humanoids with random actions through axion.VectorEnv and reports world-steps/s.

    python humanoid_throughput.py --target localhost:50051 --worlds 64 --steps 500
"""

import argparse
import os
import sys
import time

import numpy as np

import axion
from axion.progress import Progress

DEFAULT_MODEL = "/usr/share/mujoco/model/humanoid/humanoid.xml"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=os.environ.get("AXION_TARGET", axion.DEFAULT_TARGET))
    parser.add_argument("--model", default=DEFAULT_MODEL, help="MJCF file (default: humanoid)")
    parser.add_argument("--worlds", type=int, default=64, help="parallel worlds")
    parser.add_argument("--steps", type=int, default=500, help="steps per world")
    parser.add_argument("--frame-skip", type=int, default=1, help="engine steps per action")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random actions")
    parser.add_argument("--progress", action="store_true",
                        help="draw the progress bar even when stderr is not a terminal")
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    with axion.VectorEnv(args.target, args.model, args.worlds, frame_skip=args.frame_skip) as env:
        print(f"{args.worlds} worlds of '{env.description.model_name}': "
              f"{env.description.body_count} bodies, obs_dim {env.obs_dim}, act_dim {env.act_dim}")
        # Unlimited actuators get actions in [-1, 1].
        low = np.where(np.isfinite(env.action_low), env.action_low, -1.0)
        high = np.where(np.isfinite(env.action_high), env.action_high, 1.0)
        env.reset()
        non_finite = 0
        start = time.monotonic()
        with Progress(args.steps, "stepping", unit="steps",
                      enabled=True if args.progress else None) as progress:
            for _ in range(args.steps):
                actions = rng.uniform(low, high, size=(args.worlds, env.act_dim))
                obs, _, terminated, _, _ = env.step(actions.astype(np.float32))
                if terminated.any():
                    non_finite += int(terminated.sum())
                    env.reset(mask=terminated)
                progress.update()
        elapsed = time.monotonic() - start
    world_steps = args.worlds * args.steps * args.frame_skip
    print(f"{world_steps} world-steps in {elapsed:.3f} s: "
          f"{world_steps / elapsed:,.0f} world-steps/s "
          f"({args.steps / elapsed:,.1f} batched steps/s)")
    if non_finite:
        print(f"{non_finite} worlds became non-finite and were reset", file=sys.stderr)
    assert obs.shape == (args.worlds, env.obs_dim)
    return 0


if __name__ == "__main__":
    sys.exit(main())
