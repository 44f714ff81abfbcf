#!/usr/bin/env python3
"""Writes an MJCF scene of spheres falling into an open box: the many-shapes case of the
benchmarks (bench/models_speed.sh, bench/collision_scaling.sh).

A floor and four walls (planes) bound a 1 m square; the spheres (radius 2.5 cm) start on a grid
of COLUMNS x COLUMNS columns, LAYERS high, 7 cm apart, from 0.65 m up, each on a free joint (or
on three slide joints: --joint=slide) and frictionless (condim 1) unless --condim=3.
--jitter=MM moves each sphere's start across by up to MM millimetres (uniform, --seed=1, at
most 9.9 mm so that no two overlap): exact columns land and stand, their balance never broken,
where jittered ones topple into a real pile. --box=HALF makes the box 2 HALF m wide, the columns
centred in it (a denser pile from fewer spheres).

usage: bench/sphere_pile.py [--columns=10] [--layers=10] [--joint=free|slide] [--condim=1|3]
                            [--jitter=0] [--seed=1] [--box=0.5] > pile.xml
"""
import argparse
import random
import sys


def pile(columns, layers, joint, condim, jitter=0.0, seed=1, box=None):
    spacing, start = 0.07, -0.35
    if box is not None:
        start = -spacing * (columns - 1) / 2
    half = 0.5 if box is None else box
    count = columns * columns * layers
    head = [
        '<mujoco model="pile">',
        '  <option timestep=".01" solver="CG" tolerance="1e-6"/>',
        f'  <size nconmax="{6 * count}" njmax="{8 * count}"/>',
        "  <worldbody>",
        '    <geom type="plane" size="2 2 .1"/>',
    ]
    if box is None:
        head += [
            '    <geom type="plane" size=".5 .5 .05" zaxis="1 0 0"  pos="-.5 0 -.25"/>',
            '    <geom type="plane" size=".5 .5 .05" zaxis="-1 0 0" pos=".5 0 -.25"/>',
            '    <geom type="plane" size=".5 .5 .05" zaxis="0 1 0"  pos="0 -.5 -.25"/>',
            '    <geom type="plane" size=".5 .5 .05" zaxis="0 -1 0" pos="0 .5 -.25"/>',
        ]
    else:
        head += [f'    <geom type="plane" size="{half:g} {half:g} .05" zaxis="{zaxis}" pos="{pos}"/>'
                 for zaxis, pos in (("1 0 0", f"{-half:g} 0 0"), ("-1 0 0", f"{half:g} 0 0"),
                                    ("0 1 0", f"0 {-half:g} 0"), ("0 -1 0", f"0 {half:g} 0"))]
    if joint == "free":
        joints = "<freejoint/>"
    else:
        joints = "".join(f'<joint type="slide" axis="{a}"/>'
                         for a in ("1 0 0", "0 1 0", "0 0 1"))
    bodies = []
    rng = random.Random(seed)
    for i in range(columns):
        for j in range(columns):
            for k in range(layers):
                x, y = start + spacing * i, start + spacing * j
                if jitter > 0:
                    x += rng.uniform(-jitter, jitter)
                    y += rng.uniform(-jitter, jitter)
                z = 0.65 + spacing * k
                bodies.append(f'<body pos="{x:.3f} {y:.3f} {z:.3f}">{joints}'
                              f'<geom type="sphere" size=".025" condim="{condim}"/></body>')
    return "\n".join(head + ["    " + "".join(bodies), "  </worldbody>", "</mujoco>", ""])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", type=int, default=10)
    parser.add_argument("--layers", type=int, default=10)
    parser.add_argument("--joint", choices=("free", "slide"), default="free")
    parser.add_argument("--condim", type=int, choices=(1, 3), default=1)
    parser.add_argument("--jitter", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--box", type=float, default=None)
    args = parser.parse_args()
    if args.columns < 1 or args.columns > 10 or args.layers < 1:
        sys.exit("sphere_pile.py: --columns must be in [1, 10] (the box holds 10 x 10), "
                 "--layers >= 1")
    if not 0 <= args.jitter <= 9.9:
        sys.exit("sphere_pile.py: --jitter must be in [0, 9.9] mm (the spheres are 2 cm apart)")
    if args.box is not None and not 0.07 * args.columns / 2 < args.box <= 0.5:
        sys.exit("sphere_pile.py: --box must hold the columns (more than 0.035 m per column) "
                 "and be at most 0.5 m")
    sys.stdout.write(pile(args.columns, args.layers, args.joint, args.condim, args.jitter / 1000,
                          args.seed, args.box))


if __name__ == "__main__":
    main()
