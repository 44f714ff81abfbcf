#!/usr/bin/env python3
"""What creating, reading and destroying many worlds costs on a running axion-server:
create_worlds of N worlds in one call, get_state of all of them (joint positions, the file
coordinates, the MJCF sensors), one step of the batch, and destroy_worlds of all of them in one
call (one re-pack of the server's batch, however many go).

usage: bench/server/lifecycle_bench.py --target=HOST:PORT [--model=FILE] [--worlds=256,1024,2048]
                                       [--repeats=3]
(start a server first, e.g. `axion-server --max_worlds_per_client=100000`). The default model is
tests/io/models/sensors.xml, whose 44 sensors make the sensor read's cost visible. Prints the
fastest of `repeats` timings of each call.
"""
import argparse
import pathlib
import time

import axion
from parameters_bench import fastest  # beside this script

REPO = pathlib.Path(__file__).resolve().parents[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=axion.DEFAULT_TARGET)
    parser.add_argument("--model", default=str(REPO / "tests/io/models/sensors.xml"))
    parser.add_argument("--worlds", default="256,1024,2048")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    model = pathlib.Path(args.model).read_text()
    with axion.Client(args.target, timeout=600, client_id="lifecycle-bench") as client:
        client.destroy_worlds(all_worlds=True)
        print(f"{'worlds':>7} {'create':>9} {'joint_position':>15} {'file coords':>12} "
              f"{'sensor_data':>12} {'step':>9} {'destroy':>9}   (seconds; per world in us)")
        for count in (int(n) for n in args.worlds.split(",")):
            created, destroyed = [], []
            ids = []

            def create():
                start = time.perf_counter()
                ids[:] = client.create_worlds(model, count=count).world_ids
                created.append(time.perf_counter() - start)

            def destroy():
                start = time.perf_counter()
                client.destroy_worlds(ids)
                destroyed.append(time.perf_counter() - start)

            for _ in range(args.repeats):
                create()
                destroy()
            create()
            client.step(ids, steps=20)
            reads = {
                name: fastest(args.repeats, lambda fields=fields: client.get_state(ids, observe=fields))
                for name, fields in (("joint", ["joint_position"]),
                                     ("file", ["file_position", "file_velocity"]),
                                     ("sensors", ["sensor_data"]))
            }
            step = fastest(args.repeats, lambda: client.step(ids, steps=1))
            destroy()

            def cell(seconds):
                return f"{seconds:.4f} ({seconds / count * 1e6:.1f})"

            print(f"{count:>7} {min(created):>9.4f} {cell(reads['joint']):>15} "
                  f"{cell(reads['file']):>12} {cell(reads['sensors']):>12} {cell(step):>9} "
                  f"{min(destroyed):>9.4f}")


if __name__ == "__main__":
    main()
