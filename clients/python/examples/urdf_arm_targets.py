#!/usr/bin/env python3
"""Loads a URDF arm and drives its joints to random targets with position actuators.

The URDF importer gives every revolute joint an effort actuator. This example fetches the
imported scene (Client.get_model), turns those actuators into position actuators (the control is
the target angle; kp and kv are the drive's gains), creates worlds from the edited scene, steps
them with one set of targets per world and prints the final joint error.

    python urdf_arm_targets.py --target localhost:50051 --worlds 4 --steps 300
"""

import argparse
import os
import pathlib
import sys

import numpy as np

import axion

DEFAULT_MODEL = pathlib.Path(__file__).resolve().parent / "models" / "three_link_arm.urdf"


def position_controlled(model, kp, kv):
    """Copy of `model` whose actuators are position actuators limited to their joint ranges."""
    model = axion.pb.ModelDescription.FromString(model.SerializeToString())
    for actuator in model.actuators:
        joint = model.joints[actuator.joint]
        actuator.type = axion.pb.ACTUATOR_TYPE_POSITION
        actuator.kp = kp
        actuator.kv = kv
        actuator.ClearField("gear")
        actuator.ctrl_limited = joint.limited
        if joint.limited:
            actuator.ctrl_min = joint.lower[actuator.dof]
            actuator.ctrl_max = joint.upper[actuator.dof]
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=os.environ.get("AXION_TARGET", axion.DEFAULT_TARGET))
    parser.add_argument("--model", default=str(DEFAULT_MODEL), help="URDF file")
    parser.add_argument("--worlds", type=int, default=4, help="worlds, one target set each")
    parser.add_argument("--steps", type=int, default=300, help="steps per world")
    parser.add_argument("--kp", type=float, default=300.0, help="stiffness (N m/rad)")
    parser.add_argument("--kv", type=float, default=60.0, help="damping (N m s/rad)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the targets")
    parser.add_argument("--range-fraction", type=float, default=0.4,
                        help="targets lie within this fraction of each joint range")
    parser.add_argument("--tolerance", type=float, default=None,
                        help="exit with status 1 when the final error exceeds this (rad)")
    args = parser.parse_args()

    with axion.Client(args.target) as client:
        # Import once to get the compiled scene, then discard the probe world.
        probe = client.create_worlds(args.model, 1)
        model = client.get_model(probe.world_ids[0])
        client.destroy_worlds(probe.world_ids)

        created = client.create_worlds(position_controlled(model, args.kp, args.kv), args.worlds)
        description = created.description
        low, high = description.ctrl_range()
        # Targets inside a fraction of each joint's range around its middle.
        middle, half = (low + high) / 2, (high - low) / 2 * args.range_fraction
        rng = np.random.default_rng(args.seed)
        targets = rng.uniform(middle - half, middle + half,
                              size=(args.worlds, description.actuator_count)).astype(np.float32)
        # Joint-position column of each actuator's DOF.
        columns = [
            description.joints[a.joint].position_offset + a.dof for a in model.actuators
        ]

        with client.open_step_stream() as stream:
            # Targets are sent once (controls persist); then step in chunks of 50.
            obs = stream.step(created.world_ids, 0, controls=targets)
            done = 0
            while done < args.steps:
                count = min(50, args.steps - done)
                obs = stream.step(created.world_ids, count, observe=["joint_position"])
                done += count
                error = np.abs(obs.joint_position[:, columns] - targets)
                print(f"t = {done * description.timestep:6.3f} s  max |error| = "
                      f"{error.max():.5f} rad")
        client.destroy_worlds(created.world_ids)

    names = [a.name for a in description.actuators]
    for world in range(args.worlds):
        pairs = ", ".join(
            f"{n} {t:+.3f}->{q:+.3f}"
            for n, t, q in zip(names, targets[world], obs.joint_position[world, columns])
        )
        print(f"world {created.world_ids[world]}: {pairs}")
    final = float(error.max())
    print(f"final error: {final:.6f} rad (max over {args.worlds} worlds x {len(names)} joints)")
    if args.tolerance is not None and final > args.tolerance:
        print(f"final error above tolerance {args.tolerance}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
