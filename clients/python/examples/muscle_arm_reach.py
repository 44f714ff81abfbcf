#!/usr/bin/env python3
"""Reaches joint targets with MuJoCo's muscle-driven arm (arm26.xml: six muscles).

Each world gets its own shoulder and elbow target. A feedback law turns each joint's error into
excitations of its flexor and extensor (the agonist pulls, the antagonist relaxes); the
muscles' activations follow their excitations with MuJoCo's time constants (the `activation`
observation), and their pulls depend on their lengths and rates (`tendon_state`): the arm
settles near its targets without a torque motor anywhere. The muscles' peak forces and length
ranges are computed when the file is loaded, as MuJoCo's compiler does.

    python muscle_arm_reach.py --target localhost:50051 --worlds 4 --seconds 2
"""

import argparse
import os
import sys

import numpy as np

import axion

DEFAULT_MODEL = "/usr/share/mujoco/model/tendon_arm/arm26.xml"
# (flexor, extensor) muscles of each joint, by name
JOINT_MUSCLES = {"shoulder": ("SF", "SE"), "elbow": ("EF", "EE")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=os.environ.get("AXION_TARGET", axion.DEFAULT_TARGET))
    parser.add_argument("--model", default=DEFAULT_MODEL, help="arm26.xml (libmujoco-samples)")
    parser.add_argument("--worlds", type=int, default=4, help="worlds, one target pose each")
    parser.add_argument("--seconds", type=float, default=2.0, help="simulated time")
    parser.add_argument("--gain", type=float, default=4.0, help="excitation per radian of error")
    parser.add_argument("--damping", type=float, default=0.4, help="excitation per rad/s")
    parser.add_argument("--seed", type=int, default=0, help="seed of the targets")
    parser.add_argument("--tolerance", type=float, default=None,
                        help="exit with status 1 when a joint ends further than this (rad) "
                             "from its target")
    args = parser.parse_args()

    with axion.Client(args.target) as client:
        created = client.create_worlds(args.model, args.worlds)
        ids, description = created.world_ids, created.description
        actuators = [a.name for a in description.actuators]
        joints = [j.name for j in description.joints]
        rng = np.random.default_rng(args.seed)
        # targets inside the joints' 0-120 degree ranges
        targets = rng.uniform(0.3, 1.8, size=(args.worlds, len(joints))).astype(np.float32)

        obs = client.get_state(ids, observe=["joint_position", "joint_velocity"])
        controls = np.zeros((args.worlds, len(actuators)), dtype=np.float32)
        steps = max(1, round(args.seconds / description.timestep))
        for _ in range(steps):
            for j, name in enumerate(joints):
                flexor, extensor = (actuators.index(m) for m in JOINT_MUSCLES[name])
                drive = (args.gain * (targets[:, j] - obs.joint_position[:, j])
                         - args.damping * obs.joint_velocity[:, j])
                controls[:, flexor] = np.clip(drive, 0, 1)
                controls[:, extensor] = np.clip(-drive, 0, 1)
            obs = client.step(ids, controls=controls,
                              observe=["joint_position", "joint_velocity", "activation",
                                       "tendon_state"])
        error = np.abs(obs.joint_position - targets)
        for w in range(args.worlds):
            angles = ", ".join(f"{name} {obs.joint_position[w, j]:.3f} (target {targets[w, j]:.3f})"
                               for j, name in enumerate(joints))
            active = ", ".join(f"{name} {obs.activation[w, a]:.2f}"
                               for a, name in enumerate(actuators))
            print(f"world {w}: {angles} rad; activations {active}")
        print(f"largest miss: {error.max():.4f} rad")
        if args.tolerance is not None and error.max() > args.tolerance:
            sys.exit(1)


if __name__ == "__main__":
    main()
