"""Building an axion.v1.Scene from a file path, XML text or a model description."""

import os
import pathlib
import re

from axion._proto import axion_pb2 as pb

# The first element of an XML document, after the prolog, comments and doctype.
_FIRST_ELEMENT = re.compile(
    r"^\s*(?:<\?.*?\?>\s*|<!--.*?-->\s*|<!DOCTYPE[^>]*>\s*)*<\s*([\w:.-]+)", re.S
)


def xml_format(text):
    """'mjcf' for a <mujoco> document, 'urdf' for a <robot> document, else None."""
    match = _FIRST_ELEMENT.match(text)
    if match is None:
        return None
    root = match.group(1).lower()
    if root == "mujoco":
        return "mjcf"
    if root == "robot":
        return "urdf"
    return None


def make_scene(
    source,
    *,
    format=None,
    floating_base=False,
    light_body_mass_fraction=None,
    self_collision=False,
    balance_inertia=False,
    inertia_from_collision=False,
    position_gains=None,
    floor=None,
    keep_welded_bodies=False,
    bound_mass=0.0,
    bound_inertia=0.0,
    shapes=(),
):
    """An axion.v1.Scene from any of:

    - an axion.v1.Scene (returned as is) or an axion.v1.ModelDescription;
    - a path (str or os.PathLike) to an MJCF (.xml) or URDF (.urdf) file, read here and sent as
      text: files it references (meshes, <include>) are resolved by the server against its
      --asset_dir, not on this machine;
    - MJCF or URDF XML text.

    `format` ('mjcf' or 'urdf') overrides detection, which looks at the root element
    (<mujoco> or <robot>). `floating_base` makes a URDF's root link a free body, and
    `self_collision` lets its links collide with each other. `light_body_mass_fraction` is the
    MJCF importer's mass fraction for inserted bodies. `balance_inertia` sets principal moments
    that break the triangle inequality to their mean (MuJoCo's balanceinertia) instead of
    refusing the file; `inertia_from_collision` takes a URDF's link inertias from their
    collision geometry, as pybullet does by default. `position_gains=(kp, kv)` makes a URDF's
    joint actuators position servos (their controls are target positions). `floor` adds a
    ground plane at that height (m) to an MJCF or URDF scene. `keep_welded_bodies` keeps each
    MJCF body without joints as a body of its own on a fixed joint (by default it is merged into
    its parent, which it moves with). `bound_mass` (kg) and `bound_inertia` (kg m^2) raise every
    MJCF body's mass and principal moments to at least these (MuJoCo's <compiler boundmass
    boundinertia>): links of 1e-7 kg on heavy rotors otherwise solve slowly. `shapes`: static
    axion.v1.Shape messages (body -1) added to an MJCF or URDF scene after its own, such as
    `heightfield_shape(...)` to put a robot on terrain.
    """
    if isinstance(source, pb.Scene):
        return source
    if isinstance(source, pb.ModelDescription):
        return pb.Scene(model=source)
    if isinstance(source, bytes):
        source = source.decode("utf-8")
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and "<" not in source and source.strip()
    ):
        path = pathlib.Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"model file '{path}' does not exist")
        text = path.read_text(encoding="utf-8")
        if format is None and path.suffix.lower() == ".urdf":
            format = "urdf"
    elif isinstance(source, str):
        text = source
    else:
        raise TypeError(
            "scene must be a path, XML text, an axion.v1.Scene or an axion.v1.ModelDescription, "
            f"not {type(source).__name__}"
        )
    if format is None:
        format = xml_format(text)
        if format is None:
            raise ValueError(
                "cannot tell the model format: the root element is neither <mujoco> (MJCF) nor "
                "<robot> (URDF); pass format='mjcf' or format='urdf'"
            )
    if format == "mjcf":
        scene = pb.Scene(
            mjcf=text,
            balance_inertia=balance_inertia,
            mjcf_keep_welded_bodies=keep_welded_bodies,
            mjcf_bound_mass=bound_mass,
            mjcf_bound_inertia=bound_inertia,
        )
        if light_body_mass_fraction is not None:
            scene.mjcf_light_body_mass_fraction.value = light_body_mass_fraction
    elif format == "urdf":
        scene = pb.Scene(
            urdf=text,
            urdf_floating_base=floating_base,
            urdf_self_collision=self_collision,
            urdf_inertia_from_collision=inertia_from_collision,
            urdf_position_kp=position_gains[0] if position_gains else 0.0,
            urdf_position_kv=position_gains[1] if position_gains else 0.0,
            balance_inertia=balance_inertia,
        )
    else:
        raise ValueError(f"unknown model format '{format}' (expected 'mjcf' or 'urdf')")
    if floor is not None:
        scene.floor_height.value = floor
    scene.static_shapes.extend(shapes)
    return scene


def heightfield_shape(heights, size, base=None, pos=(0.0, 0.0, 0.0), friction=None,
                      name="terrain"):
    """A static height field axion.v1.Shape (terrain) from `heights`, a (rows x cols) array of
    surface heights (m): rows run along y, columns along x, over [-size[0], size[0]] x
    [-size[1], size[1]] (m) about `pos`. The solid reaches `base` (m) below pos; by default
    0.1 m below the lowest height. `friction`: the Coulomb coefficient (default 0.5)."""
    import numpy as np

    grid = np.asarray(heights, dtype=float)
    if grid.ndim != 2 or grid.shape[0] < 2 or grid.shape[1] < 2:
        raise ValueError(f"heights must be a 2-D array of at least 2 x 2, not {grid.shape}")
    if base is None:
        base = max(0.0, -float(grid.min())) + 0.1
    shape = pb.Shape(name=name, body=-1, type=pb.SHAPE_TYPE_HEIGHT_FIELD)
    shape.pose.pos.x, shape.pose.pos.y, shape.pose.pos.z = (float(v) for v in pos)
    shape.pose.quat.w = 1.0
    shape.size.x, shape.size.y, shape.size.z = float(size[0]), float(size[1]), float(base)
    shape.heightfield.rows, shape.heightfield.cols = grid.shape
    shape.heightfield.heights.extend(grid.ravel().tolist())
    if friction is not None:
        shape.material.friction.value = friction
    return shape

