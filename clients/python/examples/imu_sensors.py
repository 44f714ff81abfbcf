#!/usr/bin/env python3
"""Reads an MJCF model's sensors while its worlds step: an IMU and a touch pad on a box.

Each world drops the box (models/imu_box.xml) with its own small random spin; observe
["sensor_data"] returns MuJoCo's sensordata of every world, and WorldDescription.sensor(name,
data) picks one sensor's columns. While the box falls the accelerometer reads only its spin's
centripetal pull (the IMU sits off the centre of mass); once it rests, gravity's 9.81 m/s^2
upwards in the IMU's axes, the gyro nothing, and the pad the box's weight.

    python imu_sensors.py --target localhost:50051 --worlds 4 --seconds 2
"""

import argparse
import os
import pathlib
import sys

import numpy as np

import axion

DEFAULT_MODEL = pathlib.Path(__file__).resolve().parent / "models" / "imu_box.xml"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=os.environ.get("AXION_TARGET", axion.DEFAULT_TARGET))
    parser.add_argument("--model", default=str(DEFAULT_MODEL), help="MJCF file with sensors")
    parser.add_argument("--worlds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=2.0, help="simulated time")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial spins")
    parser.add_argument("--tolerance", type=float, default=None,
                        help="exit with status 1 unless the resting readings are within this "
                             "fraction of g and of the weight")
    args = parser.parse_args()

    with axion.Client(args.target) as client:
        created = client.create_worlds(args.model, args.worlds)
        ids, description = created.world_ids, created.description
        for sensor in description.source_sensors:
            print(f"sensor {sensor.name:12s} {sensor.type:14s} columns "
                  f"{sensor.offset}:{sensor.offset + sensor.dim}")
        # each world its own spin: the file's velocity (qvel) of the free joint
        rng = np.random.default_rng(args.seed)
        state = client.get_state(ids, observe=["body_pose", "body_velocity"])
        velocity = np.array(state.body_velocity, dtype=np.float32)
        velocity[:, 0, 3:] = rng.uniform(-2, 2, size=(args.worlds, 3))
        client.set_state(ids, body_pose=state.body_pose, body_velocity=velocity)

        steps = max(1, round(args.seconds / description.timestep))
        falling = client.step(ids, steps=10, observe=["sensor_data"]).sensor_data
        rest = client.step(ids, steps=steps, observe=["sensor_data"]).sensor_data
        g = 9.81
        for name, data in (("falling", falling), ("at rest", rest)):
            accel = description.sensor("accel", data)
            pad = description.sensor("pad_force", data)[:, 0]
            print(f"{name:8s} |accel| {np.array2string(np.linalg.norm(accel, axis=1), precision=3)}"
                  f" m/s^2, pad {np.array2string(pad, precision=2)} N")
        accel_error = np.abs(np.linalg.norm(description.sensor("accel", rest), axis=1) - g) / g
        weight_error = np.abs(description.sensor("pad_force", rest)[:, 0] - 3 * g) / (3 * g)
        spin = np.linalg.norm(description.sensor("gyro", rest), axis=1)
        print(f"largest |accel| error {accel_error.max():.2e} of g, weight error "
              f"{weight_error.max():.2e}, spin {spin.max():.2e} rad/s")
        client.destroy_worlds(ids)
    if args.tolerance is not None and max(accel_error.max(), weight_error.max()) > args.tolerance:
        sys.exit(1)


if __name__ == "__main__":
    main()
