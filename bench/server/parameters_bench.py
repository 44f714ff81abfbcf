#!/usr/bin/env python3
"""What domain randomisation costs on a running axion-server: SetParameters for every world of
a batch (each world its own masses, frictions, dampers and gears, so one model compile per
world and one re-pack of the batch per call), a VectorEnv reset of all worlds with and without
randomize_fn, and a step of the batch before and after the parameters differ per world.

usage: bench/server/parameters_bench.py --target=HOST:PORT [--model=FILE] [--worlds=64,1024]
                                        [--repeats=5]
Prints the fastest of `repeats` timings of each call.
"""
import argparse
import time

import numpy as np

import axion

FIELDS = ("body_mass", "shape_friction", "dof_damping", "actuator_gear")


def fastest(repeats, call):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=axion.DEFAULT_TARGET)
    parser.add_argument("--model", default="/usr/share/mujoco/model/humanoid/humanoid.xml")
    parser.add_argument("--worlds", default="64,1024")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with axion.Client(args.target, timeout=600) as client:
        print(f"{'worlds':>7} {'set_parameters':>15} {'per world':>10} {'reset':>9} "
              f"{'reset+rand':>11} {'step (same)':>12} {'step (varied)':>14}")
        for count in (int(w) for w in args.worlds.split(",")):
            ids = client.create_worlds(args.model, count=count).world_ids
            nominal = client.get_parameters(ids[:1])

            def draws(n):
                return {f: getattr(nominal, f) * rng.uniform(0.8, 1.2, (n,) + getattr(nominal, f).shape[1:])
                        for f in FIELDS}

            # a settled batch, stepped by the same call before and after
            client.step(ids, steps=20, observe=None)
            step_same = fastest(args.repeats, lambda: client.step(ids, observe=None))
            set_time = fastest(args.repeats, lambda: client.set_parameters(ids, **draws(count)))
            step_varied = fastest(args.repeats, lambda: client.step(ids, observe=None))
            client.destroy_worlds(ids)
            times = []
            for randomize in (None, lambda r, nom, n: draws(n)):
                with axion.VectorEnv(client, args.model, count, randomize_fn=randomize) as env:
                    env.reset()
                    times.append(fastest(args.repeats, env.reset))
            print(f"{count:>7} {set_time * 1e3:>12.1f} ms {set_time / count * 1e6:>7.0f} us "
                  f"{times[0] * 1e3:>6.1f} ms {times[1] * 1e3:>8.1f} ms "
                  f"{step_same * 1e3:>9.2f} ms {step_varied * 1e3:>11.2f} ms")


if __name__ == "__main__":
    main()
