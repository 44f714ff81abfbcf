#!/usr/bin/env python3
"""Writes an MJCF scene of rough terrain for the speed comparisons (bench/models_speed.sh): an
<hfield> of RES x RES points over 8 m x 8 m (smooth random bumps up to HEIGHT m, in MuJoCo's
binary height map format beside the XML) and BODIES free bodies (boxes, capsules, spheres and
cylinders in turn) dropped onto it in a grid. Both engines read the same two files.

usage: bench/terrain_scene.py --out=DIR [--bodies=20] [--res=81] [--height=0.4] [--seed=1]
writes DIR/terrain.xml and DIR/terrain.bin
"""
import argparse
import math
import pathlib
import random
import struct


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--bodies", type=int, default=20)
    parser.add_argument("--res", type=int, default=81)
    parser.add_argument("--height", type=float, default=0.4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    # a sum of a few random waves: smooth at the scale of a body, bumpy over the field
    waves = [(rng.uniform(0.5, 3), rng.uniform(0, 2 * math.pi), rng.uniform(0, 2 * math.pi),
              rng.uniform(0.3, 1)) for _ in range(6)]
    values = []
    for r in range(args.res):
        for c in range(args.res):
            x, y = -4 + 8 * c / (args.res - 1), -4 + 8 * r / (args.res - 1)
            values.append(sum(a * math.sin(k * (x * math.cos(d) + y * math.sin(d)) + p)
                              for k, d, p, a in waves))
    (out / "terrain.bin").write_bytes(
        struct.pack("ii", args.res, args.res) + struct.pack(f"{len(values)}f", *values))
    kinds = [('box', '0.12 0.09 0.07'), ('capsule', '0.06 0.1'), ('sphere', '0.1'),
             ('cylinder', '0.09 0.07')]
    side = max(1, math.ceil(math.sqrt(args.bodies)))
    bodies = []
    for i in range(args.bodies):
        kind, size = kinds[i % len(kinds)]
        x = -3 + 6 * (i % side) / max(1, side - 1)
        y = -3 + 6 * (i // side) / max(1, side - 1)
        bodies.append(f'    <body pos="{x:.3f} {y:.3f} {args.height + 0.4:.3f}" '
                      f'euler="{17 * i % 90} {29 * i % 90} {41 * i % 90}"><freejoint/>'
                      f'<geom type="{kind}" size="{size}"/></body>')
    body_lines = "\n".join(bodies)
    (out / "terrain.xml").write_text(f"""<mujoco model="terrain">
  <option timestep="0.005"/>
  <asset><hfield name="terrain" file="terrain.bin" size="4 4 {args.height} 0.2"/></asset>
  <worldbody>
    <geom type="hfield" hfield="terrain" friction="0.8"/>
{body_lines}
  </worldbody>
</mujoco>
""")


if __name__ == "__main__":
    main()
