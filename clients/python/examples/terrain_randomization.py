"""Each world on a terrain of its own: domain randomization of the ground.

A box (MJCF) is dropped onto rolling terrain, a height field built here in numpy with random
waves, different in every world. The terrain travels with the scene (`axion.make_scene(...,
shapes=[axion.heightfield_shape(...)])`), so each world is created from its own scene, and all
of them then step together in one call. At the end each box rests on its own ground: its
height above the terrain under it is reported next to its half height (0.1 m).

usage: terrain_randomization.py [--target localhost:50051] [--worlds 8] [--steps 400]
                                [--seed 1]
"""

import argparse
import os

import numpy as np

import axion

BOX_MJCF = """<mujoco model="box_on_terrain">
  <option timestep="0.005"/>
  <worldbody>
    <body name="box" pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
  </worldbody>
</mujoco>"""

SIZE = (2.0, 2.0)  # half extents of the terrain (m)
POINTS = 41  # grid points per side (0.1 m cells)


def random_terrain(rng):
    """Heights (POINTS x POINTS, m): a few random waves, up to about 0.3 m."""
    x = np.linspace(-SIZE[0], SIZE[0], POINTS)
    y = np.linspace(-SIZE[1], SIZE[1], POINTS)
    xx, yy = np.meshgrid(x, y)  # rows along y, columns along x
    heights = np.zeros_like(xx)
    for _ in range(4):
        k, angle, phase = rng.uniform(0.5, 2.0), rng.uniform(0, np.pi), rng.uniform(0, 2 * np.pi)
        heights += 0.08 * np.sin(k * (xx * np.cos(angle) + yy * np.sin(angle)) + phase)
    return heights


def surface_height(heights, x, y):
    """The terrain's height under (x, y), by the grid's triangles (MuJoCo's split)."""
    u = (x + SIZE[0]) / (2 * SIZE[0]) * (POINTS - 1)
    v = (y + SIZE[1]) / (2 * SIZE[1]) * (POINTS - 1)
    c, r = min(int(u), POINTS - 2), min(int(v), POINTS - 2)
    fu, fv = u - c, v - r
    h = heights
    if fv >= fu:
        return h[r, c] + fv * (h[r + 1, c] - h[r, c]) + fu * (h[r + 1, c + 1] - h[r + 1, c])
    return h[r, c] + fu * (h[r, c + 1] - h[r, c]) + fv * (h[r + 1, c + 1] - h[r, c + 1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=os.environ.get("AXION_TARGET", axion.DEFAULT_TARGET))
    parser.add_argument("--worlds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    client = axion.Client(args.target)
    terrains, ids = [], []
    for _ in range(args.worlds):
        heights = random_terrain(rng)
        terrain = axion.heightfield_shape(heights, size=SIZE, friction=0.9)
        ids += client.create_worlds(axion.make_scene(BOX_MJCF, shapes=[terrain])).world_ids
        terrains.append(heights)
    try:
        obs = client.step(ids, steps=args.steps, observe=["body_pose", "body_velocity"])
        print(f"{args.worlds} worlds, each box on its own terrain, after {args.steps} steps:")
        for w, heights in enumerate(terrains):
            x, y, z = (float(v) for v in obs.body_pose[w, 0, :3])
            ground = surface_height(heights, x, y)
            speed = float(np.linalg.norm(obs.body_velocity[w, 0, :3]))
            print(f"  world {w}: box at ({x:+.3f}, {y:+.3f}), {z - ground:.4f} m above the "
                  f"ground under it (half height 0.1), {speed:.1e} m/s")
    finally:
        client.destroy_worlds(ids)


if __name__ == "__main__":
    main()
