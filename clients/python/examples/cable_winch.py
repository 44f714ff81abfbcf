#!/usr/bin/env python3
"""Lifts loads with a winch: a position servo on a spatial tendon's length.

The cable (models/cable_winch.xml) runs from a winch on the floor over a pulley wheel, a sphere
it wraps around, down to a 20 kg load on a vertical slide. Each world gets its own target
height. The cable length that puts the load there is measured, not derived: the load is set to
that height (set_state's joint_position) and observe=["tendon_state"] reads the cable's length
(MuJoCo's ten_length: the two straight runs and the arc round the wheel). The winch is then
commanded to that length from the start pose, and the load ends at its target, short by the
weight over the servo's stiffness.

    python cable_winch.py --target localhost:50051 --worlds 4 --seconds 3
"""

import argparse
import os
import pathlib
import sys

import numpy as np

import axion

DEFAULT_MODEL = pathlib.Path(__file__).resolve().parent / "models" / "cable_winch.xml"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=os.environ.get("AXION_TARGET", axion.DEFAULT_TARGET))
    parser.add_argument("--model", default=str(DEFAULT_MODEL), help="MJCF file with the winch")
    parser.add_argument("--worlds", type=int, default=4, help="worlds, one target height each")
    parser.add_argument("--seconds", type=float, default=3.0, help="simulated time")
    parser.add_argument("--seed", type=int, default=0, help="seed of the target heights")
    parser.add_argument("--tolerance", type=float, default=None,
                        help="exit with status 1 when a load ends further than this (m) from "
                             "its target")
    args = parser.parse_args()

    with axion.Client(args.target) as client:
        created = client.create_worlds(args.model, args.worlds)
        ids, description = created.world_ids, created.description
        cable = description.tendon_names.index("cable")
        rng = np.random.default_rng(args.seed)
        lifts = rng.uniform(-0.5, 0.8, size=args.worlds).astype(np.float32)  # slide travel (m)

        # the cable's length with each load at its target: set there, read, reset
        client.set_state(ids, joint_position=lifts[:, None],
                         joint_velocity=np.zeros((args.worlds, 1), dtype=np.float32))
        lengths = client.get_state(ids, observe=["tendon_state"]).tendon_state[:, cable, 0]
        client.reset(ids)
        start = client.get_state(ids, observe=["tendon_state"]).tendon_state[:, cable, 0]

        steps = max(1, round(args.seconds / description.timestep))
        obs = client.step(ids, steps=steps, controls=lengths[:, None],
                          observe=["joint_position", "tendon_state", "actuator_force"])
        error = np.abs(obs.joint_position[:, 0] - lifts)
        for w in range(args.worlds):
            print(f"world {w}: target {lifts[w]:+.3f} m, cable {start[w]:.3f} -> {lengths[w]:.3f} m "
                  f"(reached {obs.tendon_state[w, cable, 0]:.4f} m), load at "
                  f"{obs.joint_position[w, 0]:+.4f} m, winch pull {-obs.actuator_force[w, 0]:.1f} N")
        print(f"largest miss: {error.max():.4f} m")
        if args.tolerance is not None and error.max() > args.tolerance:
            sys.exit(1)


if __name__ == "__main__":
    main()
