#!/usr/bin/env python3
"""What a heavy scene import costs the other clients of a running axion-server: one client
steps its worlds one step per request while another creates worlds of a slow-to-import scene
(MuJoCo's arm26.xml, whose muscles' length ranges the importer finds by simulation), one
create_worlds call after another. Prints each creation's time (the first reads and compiles the
scene, later ones may find it compiled) and the stepping client's request latency while nobody
creates (baseline) and while the creations run.

usage: bench/server/scene_import_bench.py --target=HOST:PORT [--model=FILE] [--creates=8]
                                          [--step_model=FILE] [--step_worlds=64]
(start a server first, e.g. `axion-server --port=50051`).
"""
import argparse
import pathlib
import statistics
import threading
import time

import axion

REPO = pathlib.Path(__file__).resolve().parents[2]


def latencies(client, ids, seconds):
    """Step requests of one step each for `seconds`; their latencies (s)."""
    out = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        client.step(ids, steps=1)
        out.append(time.perf_counter() - start)
    return out


def summary(values):
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(0.99 * len(values)))]
    return (f"{len(values):>6} steps  p50 {statistics.median(values) * 1e3:7.2f} ms  "
            f"p99 {p99 * 1e3:7.2f} ms  max {values[-1] * 1e3:7.2f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=axion.DEFAULT_TARGET)
    parser.add_argument("--model", default="/usr/share/mujoco/model/tendon_arm/arm26.xml")
    parser.add_argument("--creates", type=int, default=8)
    parser.add_argument("--step_model", default=str(REPO / "tests/io/models/pendulum.xml"))
    parser.add_argument("--step_worlds", type=int, default=64)
    args = parser.parse_args()
    heavy = pathlib.Path(args.model).read_text()
    light = pathlib.Path(args.step_model).read_text()
    with axion.Client(args.target, timeout=600, client_id="import-bench-stepper") as stepper, \
            axion.Client(args.target, timeout=600, client_id="import-bench-creator") as creator:
        for client in (stepper, creator):
            client.destroy_worlds(all_worlds=True)
        ids = stepper.create_worlds(light, count=args.step_worlds).world_ids
        stepper.step(ids, steps=10)
        print("baseline   :", summary(latencies(stepper, ids, 2.0)))

        creations = []

        def create_all():
            for _ in range(args.creates):
                start = time.perf_counter()
                created = creator.create_worlds(heavy, count=1).world_ids
                creations.append(time.perf_counter() - start)
                creator.destroy_worlds(created)

        during = []
        worker = threading.Thread(target=create_all)
        worker.start()
        while worker.is_alive():
            during += latencies(stepper, ids, 0.05)
        worker.join()
        print("creating   :", summary(during))
        print("create_worlds (s):", " ".join(f"{t:.4f}" for t in creations))
        stepper.destroy_worlds(ids)


if __name__ == "__main__":
    main()
