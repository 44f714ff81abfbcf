#!/usr/bin/env python3
"""Records a joint trajectory (default: a double pendulum) and plots it to a PNG.

    python plot_trajectory.py --target localhost:50051 --steps 400 --output trajectory.png

matplotlib is optional: without it the trajectory is still recorded (and written with --csv),
and the plot is skipped with a message.
"""

import argparse
import os
import pathlib
import sys

import numpy as np

import axion

DEFAULT_MODEL = pathlib.Path(__file__).resolve().parent / "models" / "double_pendulum.xml"


def record(target, model, steps):
    """Time (T,), joint positions (T x P), joint velocities (T x D) and the joint name of each
    position and velocity column."""
    with axion.VectorEnv(target, model, 1) as env:
        positions = env.observation_slices["joint_position"]
        velocities = env.observation_slices["joint_velocity"]
        obs = env.reset()
        times, rows = [0.0], [obs[0]]
        for _ in range(steps):
            # No actuators in the pendulum: the action array is (1 x 0).
            obs, _, terminated, _, info = env.step(np.zeros((1, env.act_dim), np.float32))
            if terminated[0]:
                raise RuntimeError("the simulation became non-finite")
            times.append(float(info["time"][0]))
            rows.append(obs[0])
        joints = env.description.joints
        position_names = [j.name for j in joints for _ in range(j.position_count)]
        velocity_names = [j.name for j in joints for _ in range(j.dof_count)]
    trajectory = np.asarray(rows)
    return (np.asarray(times), trajectory[:, positions], trajectory[:, velocities],
            position_names, velocity_names)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=os.environ.get("AXION_TARGET", axion.DEFAULT_TARGET))
    parser.add_argument("--model", default=str(DEFAULT_MODEL), help="MJCF or URDF file")
    parser.add_argument("--steps", type=int, default=400, help="steps to record")
    parser.add_argument("--output", default="trajectory.png", help="PNG to write")
    parser.add_argument("--csv", help="also write time, positions and velocities as CSV")
    args = parser.parse_args()

    times, positions, velocities, names, velocity_names = record(
        args.target, args.model, args.steps)
    print(f"recorded {len(times) - 1} steps ({times[-1]:.3f} s) of {positions.shape[1]} joint "
          f"coordinates; final positions {np.array2string(positions[-1], precision=4)}")
    if args.csv:
        header = ["time"] + [f"q_{n}" for n in names] + [f"qd_{n}" for n in velocity_names]
        np.savetxt(args.csv, np.column_stack([times, positions, velocities]), delimiter=",",
                   header=",".join(header), comments="")
        print(f"wrote {args.csv}")

    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install matplotlib): skipping the plot")
        return 0

    figure, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    for column, name in enumerate(names):
        top.plot(times, positions[:, column], label=name)
    for column, name in enumerate(velocity_names):
        bottom.plot(times, velocities[:, column], label=name)
    top.set_ylabel("joint position (rad)")
    top.legend(loc="upper right")
    bottom.set_ylabel("joint velocity (rad/s)")
    bottom.set_xlabel("time (s)")
    top.set_title(f"{pathlib.Path(args.model).name}: joint trajectory")
    figure.tight_layout()
    figure.savefig(args.output, dpi=100)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
