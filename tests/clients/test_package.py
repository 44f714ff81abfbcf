"""Pieces of the axion package that need no server: wire encodings, scene building, the
installed distribution's requirements."""

import importlib.metadata

import numpy as np
import pytest

import axion
from axion import health, types
from axion.cli import parse_world_ids
from clients_support import MODELS_DIR, PENDULUM_MJCF


def test_health_request_encoding():
    assert health.encode_request("") == b""
    assert health.encode_request("axion.v1.Simulation") == b"\x0a\x13axion.v1.Simulation"
    long_name = "s" * 200  # length needs a two-byte varint
    assert health.encode_request(long_name)[:3] == b"\x0a\xc8\x01"


def test_health_response_decoding():
    assert health.decode_response(b"") == "UNKNOWN"
    assert health.decode_response(b"\x08\x01") == "SERVING"
    assert health.decode_response(b"\x08\x02") == "NOT_SERVING"
    # Unknown fields of every wire type are skipped.
    assert health.decode_response(b"\x12\x02ab\x19" + b"\0" * 8 + b"\x25\0\0\0\0\x08\x03") == (
        "SERVICE_UNKNOWN")
    with pytest.raises(ValueError):
        health.decode_response(b"\x08")


def test_make_scene_detects_formats():
    assert axion.make_scene(PENDULUM_MJCF).WhichOneof("source") == "mjcf"
    urdf = axion.make_scene(MODELS_DIR / "three_link_arm.urdf", floating_base=True)
    assert urdf.WhichOneof("source") == "urdf" and urdf.urdf_floating_base
    assert not urdf.urdf_self_collision and not urdf.balance_inertia
    urdf = axion.make_scene(
        MODELS_DIR / "three_link_arm.urdf", self_collision=True, balance_inertia=True
    )
    assert urdf.urdf_self_collision and urdf.balance_inertia
    assert axion.make_scene(
        MODELS_DIR / "three_link_arm.urdf", inertia_from_collision=True
    ).urdf_inertia_from_collision
    servo = axion.make_scene(MODELS_DIR / "three_link_arm.urdf", position_gains=(40.0, 4.0))
    assert (servo.urdf_position_kp, servo.urdf_position_kv) == (40.0, 4.0)
    assert not servo.HasField("floor_height")
    assert axion.make_scene(PENDULUM_MJCF, floor=-0.5).floor_height.value == -0.5
    terrain = axion.heightfield_shape([[0, 0.1], [0.2, 0.3]], size=(1, 2), base=0.5)
    scene = axion.make_scene(PENDULUM_MJCF, shapes=[terrain])
    assert list(scene.static_shapes[0].heightfield.heights) == [0, 0.1, 0.2, 0.3]
    assert scene.static_shapes[0].body == -1 and scene.static_shapes[0].size.z == 0.5
    with pytest.raises(ValueError, match="2-D array"):
        axion.heightfield_shape([0, 1, 2], size=(1, 1))
    assert axion.make_scene(PENDULUM_MJCF, balance_inertia=True).balance_inertia
    assert not axion.make_scene(PENDULUM_MJCF).mjcf_keep_welded_bodies
    assert axion.make_scene(PENDULUM_MJCF, keep_welded_bodies=True).mjcf_keep_welded_bodies
    # A comment and prolog before the root element.
    assert axion.make_scene("<?xml version='1.0'?><!-- c --><robot name='r'/>").urdf
    scene = axion.make_scene(PENDULUM_MJCF, light_body_mass_fraction=0.05)
    assert scene.mjcf_light_body_mass_fraction.value == pytest.approx(0.05)
    model = axion.pb.ModelDescription(name="m")
    assert axion.make_scene(model).model.name == "m"
    assert axion.make_scene(axion.pb.Scene(mjcf="x")).mjcf == "x"
    with pytest.raises(FileNotFoundError):
        axion.make_scene("no/such/model.xml")
    with pytest.raises(ValueError, match="format"):
        axion.make_scene(PENDULUM_MJCF, format="sdf")
    with pytest.raises(TypeError):
        axion.make_scene(42)


def test_solver_options_from_dict():
    options = axion.solver_options({
        "timestep": 0.002, "gravity": (0, 0, -1.62), "newton_iterations": 30,
        "line_search": False, "contact_formulation": "velocity"})
    assert options.timestep.value == pytest.approx(0.002)
    assert (options.gravity.x, options.gravity.y, options.gravity.z) == pytest.approx(
        (0, 0, -1.62))
    assert options.newton_iterations.value == 30
    assert options.HasField("line_search") and not options.line_search.value
    assert options.contact_formulation == axion.pb.FORMULATION_VELOCITY
    assert not options.HasField("baumgarte")
    with pytest.raises(ValueError):
        axion.solver_options({"time_step": 0.1})
    with pytest.raises(ValueError):
        axion.solver_options({"joint_formulation": "implicit"})


def test_solver_options_preconditioner():
    assert (axion.solver_options({"preconditioner": "jacobi"}).preconditioner
            == axion.pb.PRECONDITIONER_JACOBI)
    assert (axion.solver_options({"preconditioner": "Tree"}).preconditioner
            == axion.pb.PRECONDITIONER_TREE)
    assert (axion.solver_options({"preconditioner": axion.pb.PRECONDITIONER_JACOBI})
            .preconditioner == axion.pb.PRECONDITIONER_JACOBI)
    assert axion.solver_options({}).preconditioner == axion.pb.PRECONDITIONER_UNSPECIFIED
    with pytest.raises(ValueError, match="preconditioner"):
        axion.solver_options({"preconditioner": "ilu"})


def test_pack_and_unpack_float32_round_trip():
    values = np.arange(24, dtype=np.float64).reshape(2, 2, 6)
    packed = types.pack_float32(values, "body_velocity", 2)
    assert packed == values.astype("<f4").tobytes()
    layouts = [types.Layout(body_count=2, joint_position_count=0, joint_dof_count=0,
                            actuator_count=0)] * 2
    unpacked = types.unpack_float32(packed, 2, layouts, "body_velocity")
    assert unpacked.shape == (2, 2, 6) and unpacked.dtype == np.float32
    np.testing.assert_array_equal(unpacked, values)
    assert unpacked.flags.writeable
    assert types.pack_float32(None, "controls", 2) == b""
    # Per-world arrays of different sizes (worlds of different scenes).
    mixed = [types.Layout(1, 0, 0, 0), types.Layout(3, 0, 0, 0)]
    packed = types.pack_float32([np.ones((1, 7)), np.zeros((3, 7))], "body_pose", 2)
    parts = types.unpack_float32(packed, 2, mixed, "body_pose")
    assert [p.shape for p in parts] == [(1, 7), (3, 7)]
    with pytest.raises(ValueError):
        types.unpack_float32(packed[:-4], 2, mixed, "body_pose")


def test_observation_request_names():
    request = types.observation_request(["body_pose", "stats"])
    assert request.body_pose and request.stats and not request.contacts
    assert all(getattr(types.observation_request("all"), f) for f in types.OBSERVATION_FIELDS)
    # the file coordinates only by name: worlds without a model file have none
    assert not any(getattr(types.observation_request("all"), f)
                   for f in types.FILE_OBSERVATION_FIELDS)
    assert types.observation_request(["file_position"]).file_position
    layout = types.Layout(1, 2, 2, 0, file_position_count=7, file_velocity_count=6)
    assert layout.field_size("file_position") == (7, (7,))
    assert layout.field_size("file_velocity") == (6, (6,))
    with pytest.raises(ValueError, match="unknown observation"):
        types.observation_request(["qpos"])


def test_error_classes_map_status_codes():
    import grpc

    error = axion.errors.error_for(5, "world 3 not found")
    assert isinstance(error, axion.NotFound) and error.code == grpc.StatusCode.NOT_FOUND
    assert str(error) == "NOT_FOUND: world 3 not found"
    assert isinstance(axion.errors.error_for(grpc.StatusCode.RESOURCE_EXHAUSTED, ""),
                      axion.ResourceExhausted)
    assert isinstance(axion.errors.error_for(16, ""), axion.Unauthenticated)
    assert type(axion.errors.error_for(999, "")) is axion.Unknown


def pb_description(source_bodies):
    """A WorldDescription of one body, 'base', and `source_bodies` (name, body, offset)."""
    message = axion.pb.WorldDescription(body_names=["base"], body_count=1)
    for name, body, offset in source_bodies:
        entry = message.source.bodies.add(name=name, body=body)
        entry.offset.pos.x, entry.offset.pos.y, entry.offset.pos.z = offset[:3]
        entry.offset.quat.w, entry.offset.quat.x, entry.offset.quat.y, entry.offset.quat.z = (
            offset[3:])
    return types.WorldDescription.from_proto(message)


def test_source_body_poses_compose_carriers_and_offsets():
    # Body 0 turned 90 degrees about z at (1, 0, 0); a file body carried 0.5 m along its x axis
    # ends 0.5 m along world y, turned likewise; a static one stays at its offset.
    quarter = np.array([np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)])
    description = pb_description(
        [("carried", 0, [0.5, 0, 0, 1, 0, 0, 0]), ("ground", -1, [0, 0, -1, 1, 0, 0, 0])])
    body_pose = np.array([[[1, 0, 0, *quarter]], [[0, 0, 0, 1, 0, 0, 0]]])  # 2 worlds x 1 body
    poses = description.source_body_poses(body_pose)
    assert poses.shape == (2, 2, 7)
    np.testing.assert_allclose(poses[0, 0], [1, 0.5, 0, *quarter], atol=1e-15)
    np.testing.assert_allclose(poses[1, 0], [0.5, 0, 0, 1, 0, 0, 0], atol=1e-15)
    np.testing.assert_allclose(poses[:, 1], [[0, 0, -1, 1, 0, 0, 0]] * 2, atol=1e-15)
    with pytest.raises(ValueError, match="body_pose"):
        description.source_body_poses(np.zeros((2, 3, 7)))
    # an offset turned 90 degrees about x, on the carrier turned about z: its y axis ends along
    # world z (the carrier's turn applied after the offset's)
    turned = pb_description([("turned", 0, [0, 0, 0, np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0])])
    quat = turned.source_body_poses(body_pose)[0, 0, 3:]
    np.testing.assert_allclose(types._quat_rotate(quat, np.array([0.0, 1, 0])), [0, 0, 1],
                               atol=1e-15)


def test_frames_on_mocap_bodies_follow_the_mocap_poses():
    # a site 0.1 m along the x axis of mocap body 0, which is turned 90 degrees about z at
    # (0, 0, 1): it ends 0.1 m along world y from there; without the mocap poses, an error
    quarter = np.array([np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)])
    message = axion.pb.WorldDescription(body_names=["base"], body_count=1, mocap_names=["hand"])
    site = message.source.sites.add(name="tip", body=-1)
    site.offset.pos.x = 0.1
    site.offset.quat.w = 1
    site.mocap.value = 0
    description = types.WorldDescription.from_proto(message)
    assert description.source_sites[0].mocap == 0
    body_pose = np.zeros((1, 1, 7))
    body_pose[..., 3] = 1
    poses = description.source_site_poses(body_pose, np.array([[[0, 0, 1, *quarter]]]))
    np.testing.assert_allclose(poses[0, 0], [0, 0.1, 1, *quarter], atol=1e-15)
    with pytest.raises(ValueError, match="mocap_pose"):
        description.source_site_poses(body_pose)


def test_cli_world_id_parsing():
    assert parse_world_ids(["1,2", " 3 ", "0x10"]) == [1, 2, 3, 16]
    assert parse_world_ids(None) == []


def test_installed_runtime_satisfies_declared_requirements():
    # setup.py derives the grpcio/protobuf ranges from the generated code; the environment the
    # tests run in must satisfy them (pip resolved them at install time).
    packaging = pytest.importorskip("packaging.requirements")
    requirements = [packaging.Requirement(r) for r in importlib.metadata.requires("axion-client")
                    if "extra ==" not in r]
    names = {r.name for r in requirements}
    assert {"grpcio", "protobuf", "numpy"} <= names
    for requirement in requirements:
        installed = importlib.metadata.version(requirement.name)
        assert requirement.specifier.contains(installed, prereleases=True), (
            f"{requirement.name} {installed} outside {requirement.specifier}")
