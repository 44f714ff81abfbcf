"""axion.Client against a real axion-server: every call, arrays, errors, streams."""

import concurrent.futures
import shutil
import subprocess
import threading
import time

import grpc
import numpy as np
import pytest

import axion
from axion._proto import axion_pb2_grpc
from clients_support import (
    BOX_ON_PLANE_MJCF,
    CREATURE_KEY_QPOS,
    CREATURE_KEY_QVEL,
    CREATURE_MJCF,
    HAND_MJCF,
    MODELS_DIR,
    PENDULUM_INERTIA,
    PENDULUM_MJCF,
    free_sphere_model,
    start_server,
)

G = 9.81


# -- health and world management ---------------------------------------------------------------


def test_health_reports_serving_for_server_and_service(client):
    assert client.health() == "SERVING"
    assert client.health("axion.v1.Simulation") == "SERVING"


def test_health_of_unknown_service_is_not_found(client):
    with pytest.raises(axion.NotFound):
        client.health("no.such.Service")


def test_create_worlds_from_mjcf_text_returns_ids_and_layout(client):
    created = client.create_worlds(PENDULUM_MJCF, count=3)
    assert len(created.world_ids) == 3
    assert len(set(created.world_ids)) == 3
    assert all(w > 0 for w in created.world_ids)
    d = created.description
    assert d.model_name == "pendulum"
    assert d.body_names == ["bob"]
    assert (d.body_count, d.joint_position_count, d.joint_dof_count, d.actuator_count) == (
        1, 1, 1, 1)
    assert d.timestep == pytest.approx(0.005)
    assert d.joints[0].name == "hinge" and d.joints[0].type == "revolute"
    actuator = d.actuators[0]
    assert (actuator.name, actuator.type, actuator.ctrl_limited) == ("torque", "effort", True)
    low, high = d.ctrl_range()
    np.testing.assert_array_equal(low, [-2.0])
    np.testing.assert_array_equal(high, [2.0])


def test_create_worlds_from_urdf_path_detects_format(client):
    created = client.create_worlds(MODELS_DIR / "three_link_arm.urdf", count=2)
    d = created.description
    assert d.model_name == "three_link_arm"
    assert [j.name for j in d.joints] == ["base_yaw", "shoulder", "elbow"]
    assert [a.type for a in d.actuators] == ["effort"] * 3
    # Effort actuators get the URDF <limit effort> as control range.
    assert [(a.ctrl_min, a.ctrl_max) for a in d.actuators] == [(-50, 50), (-50, 50), (-30, 30)]


UNBALANCED_ARM = """<robot name="arm">
  <link name="base"/>
  <link name="link2"><inertial><mass value="1.7"/>
    <inertia ixx="0.0031" iyy="0.0236" izz="0.0269" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j" type="continuous"><parent link="base"/><child link="link2"/></joint>
</robot>"""


def test_urdf_inertia_is_refused_or_balanced_on_request(client):
    # Principal moments 0.0031 + 0.0236 < 0.0269: no real body has them.
    with pytest.raises(axion.AxionError, match="balance_inertia"):
        client.create_worlds(UNBALANCED_ARM)
    created = client.create_worlds(axion.make_scene(UNBALANCED_ARM, balance_inertia=True))
    assert created.description.body_count == 1
    assert any("their mean" in w for w in created.warnings)


WELDED_MJCF = """<mujoco model="welded"><worldbody>
  <body name="arm" pos="0 0 1"><joint name="hinge" type="hinge" axis="0 1 0"/>
    <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
    <body name="hand" pos="0.5 0 0"><geom type="sphere" size="0.08"/></body>
  </body></worldbody></mujoco>"""


def test_mjcf_bodies_without_joints_merge_unless_kept(client):
    # The hand has no joint: it moves with the arm, merged into it by default.
    merged = client.create_worlds(WELDED_MJCF)
    assert merged.description.body_count == 1
    assert list(merged.description.body_names) == ["arm"]
    assert any("'hand' has no joint: merged into 'arm'" in w for w in merged.warnings)
    kept = client.create_worlds(axion.make_scene(WELDED_MJCF, keep_welded_bodies=True))
    assert kept.description.body_count == 2
    assert list(kept.description.body_names) == ["arm", "hand"]
    # The description says where each body and joint of the file went.
    arm, hand = merged.description.source_bodies
    assert (arm.name, arm.body, hand.name, hand.body) == ("arm", 0, "hand", 0)
    np.testing.assert_allclose(hand.offset, [0.5, 0, 0, 1, 0, 0, 0])
    assert [b.body for b in kept.description.source_bodies] == [0, 1]
    (hinge,) = merged.description.source_joints
    assert (hinge.name, hinge.joint, hinge.dof) == ("hinge", 0, 0)
    assert client.describe_world(merged.world_ids[0]).source_bodies[1].body == 0
    # The hand swings with the arm either way: its world pose comes from its carrier's.
    merged_obs = client.step(merged.world_ids, steps=250, observe=["body_pose"])
    kept_obs = client.step(kept.world_ids, steps=250, observe=["body_pose"])
    merged_hand = merged.description.source_body_poses(merged_obs.body_pose)[:, 1]
    kept_hand = kept.description.source_body_poses(kept_obs.body_pose)[:, 1]
    np.testing.assert_allclose(kept_hand, kept_obs.body_pose[:, 1])
    assert merged_hand[0, 2] < 0.7  # it has swung down from 1 m
    # (the weld is held to the solver's tolerance, so the two swings part by under a millimetre)
    np.testing.assert_allclose(merged_hand, kept_hand, atol=2e-3)


def test_mjcf_sites_are_named_frames_on_their_bodies(client):
    # A pendulum with a site at its bob (turned), one on its hinge and a world target.
    mjcf = PENDULUM_MJCF.replace(
        '<geom name="ball"',
        '<site name="tip" pos="0 0 -1" euler="0 0.3 0"/><site pos="0 0 0"/><geom name="ball"',
    ).replace("<worldbody>", '<worldbody><site name="target" pos="1 0 1"/>')
    created = client.create_worlds(mjcf)
    assert not any("site" in w for w in created.warnings)
    sites = created.description.source_sites
    assert [(s.name, s.body) for s in sites] == [("target", -1), ("tip", 0), ("bob_site2", 0)]
    obs = client.step(created.world_ids, steps=100, observe=["body_pose", "joint_position"])
    poses = created.description.source_site_poses(obs.body_pose)[0]
    angle = float(obs.joint_position[0, 0])  # about +y: the bob swings to +x / -x
    np.testing.assert_allclose(poses[0], [1, 0, 1, 1, 0, 0, 0])
    np.testing.assert_allclose(poses[1, :3], [-np.sin(angle), 0, 2 - np.cos(angle)], atol=1e-5)
    np.testing.assert_allclose(poses[2, :3], [0, 0, 2], atol=1e-5)
    # the tip's frame turns with the bob, on top of its own 0.3 rad about y
    half = (angle + 0.3) / 2
    np.testing.assert_allclose(np.abs(poses[1, 3:]), np.abs([np.cos(half), 0, np.sin(half), 0]),
                               atol=1e-5)


LIGHT_ARM_MJCF = """<mujoco model="light_arm"><worldbody>
  <body name="base" pos="0 0 1"><freejoint/><geom type="sphere" size="0.1"/>
    <body name="finger"><joint name="knuckle" type="hinge" armature="0.75"/>
      <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.005" density="1e-4"/></body>
  </body></worldbody></mujoco>"""


def test_mjcf_bound_mass_raises_light_bodies(client):
    # A 1e-8 kg finger on a heavy rotor: named in a warning, raised by the bounds.
    light = client.create_worlds(LIGHT_ARM_MJCF)
    assert any("body 'finger' weighs" in w for w in light.warnings)
    raised = client.create_worlds(
        axion.make_scene(LIGHT_ARM_MJCF, bound_mass=1e-3, bound_inertia=1e-6)
    )
    assert not any("weighs" in w for w in raised.warnings)
    finger = client.get_model(raised.world_ids[0]).bodies[1]
    assert finger.name == "finger"
    assert finger.mass == pytest.approx(1e-3)
    with pytest.raises(axion.InvalidArgument, match="mjcf_bound_mass"):
        client.create_worlds(axion.make_scene(LIGHT_ARM_MJCF, bound_mass=-1.0))


def test_fluid_options_and_light_bodies_exempt_from_the_fluid(client):
    # A slide and a hinge in one MJCF body become a chain through a light stand-in body, which
    # the fluid leaves alone; the scene survives the round trip through its ModelDescription.
    xml = """<mujoco><option density="1000" viscosity="0.1" gravity="0 0 0" wind="1 2 0"/><worldbody>
      <body name="fish"><joint name="x" type="slide" axis="1 0 0"/><joint name="turn" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 1 0 0" size="0.1"/></body></worldbody></mujoco>"""
    created = client.create_worlds(xml)
    model = client.get_model(created.world_ids[0])
    assert model.options.fluid_density.value == 1000
    assert model.options.fluid_viscosity.value == pytest.approx(0.1)
    assert (model.options.fluid_wind.x, model.options.fluid_wind.y) == (1, 2)
    exempt = {b.name: b.fluid_exempt for b in model.bodies}
    assert exempt == {"fish/x": True, "fish": False}
    again = client.get_model(client.create_worlds(model).world_ids[0])
    assert [b.fluid_exempt for b in again.bodies] == [b.fluid_exempt for b in model.bodies]


def test_create_worlds_from_model_description(client):
    created = client.create_worlds(free_sphere_model(), count=2)
    assert created.description.model_name == "free_sphere"
    assert created.description.body_count == 1
    assert created.description.timestep == pytest.approx(0.01)


TERRAIN_MJCF = """
<mujoco model="terrain">
  <option timestep="0.005"/>
  <asset>
    <hfield name="step" nrow="3" ncol="4" size="1.5 1 0.2 0.1"
            elevation="0 0 1 1  0 0 1 1  0 0 1 1"/>
  </asset>
  <worldbody>
    <geom type="hfield" hfield="step"/>
    <body name="low" pos="-1 0 0.5"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
    <body name="high" pos="1.2 0 0.5"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
  </worldbody>
</mujoco>
"""


def test_terrain_from_mjcf_text_holds_bodies_at_its_heights(client):
    # the grid inline (elevation): two boxes land on a terrain's two levels, 0 and 0.2 m
    created = client.create_worlds(TERRAIN_MJCF, count=2)
    model = client.get_model(created.world_ids[0])
    assert model.shapes[0].type == axion.pb.SHAPE_TYPE_HEIGHT_FIELD
    assert list(model.shapes[0].heightfield.heights)[2] == pytest.approx(0.2)
    obs = client.step(created.world_ids, steps=300, observe=["body_pose", "body_velocity"])
    np.testing.assert_allclose(obs.body_pose[:, 0, 2], 0.1, atol=1e-3)
    np.testing.assert_allclose(obs.body_pose[:, 1, 2], 0.3, atol=1e-3)
    assert np.abs(obs.body_velocity).max() < 1e-3


def test_bodies_sunk_into_the_ground_come_out_at_the_speed_asked(client):
    # both boxes start 3 cm into the terrain; a world with max_depenetration_speed 0.5 m/s
    # lifts them 2.5 mm a step (h 5 ms) instead of all at once
    sunk = TERRAIN_MJCF.replace('pos="-1 0 0.5"', 'pos="-1 0 0.07"').replace(
        'pos="1.2 0 0.5"', 'pos="1.2 0 0.27"')
    gentle = client.create_worlds(sunk, solver_options={"max_depenetration_speed": 0.5})
    options = client.get_model(gentle.world_ids[0]).options
    assert options.max_depenetration_speed.value == pytest.approx(0.5)
    at_once = client.create_worlds(sunk)
    ids = gentle.world_ids + at_once.world_ids
    obs = client.step(ids, steps=1, observe=["body_velocity"])
    np.testing.assert_allclose(obs.body_velocity[0, :, 2], 0.5, atol=0.02)
    assert obs.body_velocity[1, :, 2].min() > 5.0
    obs = client.step(ids, steps=40, observe=["body_pose"])
    # the gentle world's boxes rest on their levels; the others are still in the air
    np.testing.assert_allclose(obs.body_pose[0, :, 2], [0.1, 0.3], atol=2e-3)
    assert obs.body_pose[1, :, 2].min() > 0.5


FLOATING_BLOCK_URDF = """<robot name="block">
  <link name="block">
    <inertial><mass value="2"/><inertia ixx="0.02" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision>
  </link>
</robot>"""


def test_urdf_robot_stands_on_terrain_added_to_its_scene(client):
    # a URDF has no ground: a height field built in numpy (a 0.5 m step up along x, 1 m below
    # the block, which a URDF places at the origin) comes with the scene, and the floating
    # block falls onto the level under it
    heights = np.zeros((5, 9))
    heights[:, 6:] = 0.5  # columns at x = 1, 1.5, 2 of -2 .. 2
    terrain = axion.heightfield_shape(heights, size=(2.0, 1.0), pos=(0, 0, -1.0), friction=0.8)
    assert terrain.size.z == pytest.approx(0.1)
    low = axion.make_scene(FLOATING_BLOCK_URDF, floating_base=True, shapes=[terrain])
    created = client.create_worlds(low)
    model = client.get_model(created.world_ids[0])
    assert model.shapes[-1].type == axion.pb.SHAPE_TYPE_HEIGHT_FIELD
    assert model.shapes[-1].heightfield.cols == 9
    obs = client.step(created.world_ids, steps=200, observe=["body_pose"])
    np.testing.assert_allclose(obs.body_pose[0, 0, :3], [0, 0, -0.9], atol=1e-3)
    # the same terrain 1.5 m to the left: the block is over the upper level
    moved = axion.make_scene(FLOATING_BLOCK_URDF, floating_base=True,
                             shapes=[axion.heightfield_shape(heights, size=(2.0, 1.0),
                                                             pos=(-1.5, 0, -1.0))])
    obs = client.step(client.create_worlds(moved).world_ids, steps=200, observe=["body_pose"])
    np.testing.assert_allclose(obs.body_pose[0, 0, :3], [0, 0, -0.4], atol=1e-3)
    stray = axion.pb.Shape(name="stray", type=axion.pb.SHAPE_TYPE_BOX)
    stray.size.x = stray.size.y = stray.size.z = 0.1
    with pytest.raises(axion.InvalidArgument, match="static_shapes.0. 'stray'.*body must be -1"):
        client.create_worlds(axion.make_scene(FLOATING_BLOCK_URDF, shapes=[stray]))


def test_create_worlds_solver_options_override_timestep(client):
    created = client.create_worlds(PENDULUM_MJCF, solver_options={"timestep": 0.002})
    assert created.description.timestep == pytest.approx(0.002)
    assert client.describe_world(created.world_ids[0]).timestep == pytest.approx(0.002)


def test_create_worlds_solver_options_contacts(client):
    created = client.create_worlds(
        PENDULUM_MJCF,
        solver_options={"speculative_contacts": False, "contact_compliance": 1e-6,
                        "friction_newton": False})
    options = client.get_model(created.world_ids[0]).options
    assert options.HasField("speculative_contacts") and not options.speculative_contacts.value
    assert options.HasField("friction_newton") and not options.friction_newton.value
    assert options.contact_compliance.value == pytest.approx(1e-6)
    fluid = client.get_model(client.create_worlds(
        PENDULUM_MJCF,
        solver_options={"fluid_density": 1.2, "fluid_viscosity": 1.8e-5, "fluid_wind": (3, 0, -1)},
    ).world_ids[0]).options
    assert fluid.fluid_density.value == pytest.approx(1.2)
    assert (fluid.fluid_wind.x, fluid.fluid_wind.y, fluid.fluid_wind.z) == (3, 0, -1)
    assert fluid.fluid_viscosity.value == pytest.approx(1.8e-5)
    default = client.get_model(client.create_worlds(PENDULUM_MJCF).world_ids[0]).options
    assert default.speculative_contacts.value
    assert default.friction_newton.value
    assert default.contact_compliance.value == 0


def test_friction_combine_line_search_growth_and_contact_dim(client):
    created = client.create_worlds(
        PENDULUM_MJCF,
        solver_options={"friction_combine": "geometric_mean", "line_search_growth": 10.0})
    options = client.get_model(created.world_ids[0]).options
    assert options.friction_combine == axion.pb.FRICTION_COMBINE_GEOMETRIC_MEAN
    assert options.line_search_growth.value == pytest.approx(10.0)
    # MJCF keeps MuJoCo's rules: the larger friction, and each geom's condim.
    mjcf = client.get_model(client.create_worlds(PENDULUM_MJCF.replace(
        "<geom ", '<geom condim="1" ', 1)).world_ids[0])
    assert mjcf.options.friction_combine == axion.pb.FRICTION_COMBINE_MAX
    assert mjcf.options.line_search_growth.value == pytest.approx(1000.0)
    assert [s.contact_dim.value for s in mjcf.shapes][0] == 1
    with pytest.raises(ValueError, match="friction_combine"):
        axion.solver_options({"friction_combine": "min"})
    with pytest.raises(axion.AxionError, match="line_search_growth"):
        client.create_worlds(PENDULUM_MJCF, solver_options={"line_search_growth": 0.5})


def test_newton_stall_iterations(client):
    created = client.create_worlds(PENDULUM_MJCF, solver_options={"newton_stall_iterations": 15})
    assert client.get_model(created.world_ids[0]).options.newton_stall_iterations.value == 15
    default = client.create_worlds(PENDULUM_MJCF)
    assert client.get_model(default.world_ids[0]).options.newton_stall_iterations.value == 0
    with pytest.raises(axion.AxionError, match="newton_stall_iterations"):
        client.create_worlds(PENDULUM_MJCF, solver_options={"newton_stall_iterations": -2})


def test_newton_tail(client):
    created = client.create_worlds(
        PENDULUM_MJCF,
        solver_options={"newton_tail_iterations": 5, "newton_tail_residual": 1e-5})
    options = client.get_model(created.world_ids[0]).options
    assert options.newton_tail_iterations.value == 5
    assert options.newton_tail_residual.value == pytest.approx(1e-5)
    default = client.get_model(client.create_worlds(PENDULUM_MJCF).world_ids[0]).options
    assert default.newton_tail_iterations.value == 10
    assert default.newton_tail_residual.value == pytest.approx(1e-4)
    with pytest.raises(axion.AxionError, match="newton_tail_residual"):
        client.create_worlds(PENDULUM_MJCF, solver_options={"newton_tail_residual": -1.0})


def test_strict_after_cycle(client):
    default = client.get_model(client.create_worlds(PENDULUM_MJCF).world_ids[0]).options
    assert default.strict_after_cycle.value is True
    created = client.create_worlds(PENDULUM_MJCF, solver_options={"strict_after_cycle": False})
    assert client.get_model(created.world_ids[0]).options.strict_after_cycle.value is False


# The pendulum released horizontally at 0.2 s, 3 Newton iterations per attempt: whole steps
# fail, halves and quarters solve.
HORIZONTAL_PENDULUM_MJCF = PENDULUM_MJCF.replace('pos="0 0 -1"', 'pos="1 0 0"')
HALVING_OPTIONS = {"timestep": 0.2, "newton_iterations": 3, "halving_iterations": 3,
                   "halving_residual": 1e-6}


def test_step_halvings(client):
    # The stats say how many steps each call's step took.
    horizontal, options = HORIZONTAL_PENDULUM_MJCF, HALVING_OPTIONS
    halving = client.create_worlds(horizontal, solver_options=options).world_ids
    whole = client.create_worlds(
        horizontal, solver_options=dict(options, step_halvings=0)).world_ids
    model = client.get_model(halving[0])
    assert model.options.step_halvings.value == 4
    assert model.options.halving_iterations.value == 3
    assert model.options.halving_residual.value == pytest.approx(1e-6)
    substeps = []
    for _ in range(5):
        obs = client.step(halving + whole, observe=["stats"])
        substeps.append(obs.stats.substeps.tolist())
    assert max(s[0] for s in substeps) > 1
    assert all(s[1] == 1 for s in substeps)
    assert obs.stats.island_count.tolist() == [1, 1]  # the bob, on its hinge to the world
    # every Newton iteration evaluates at least one line-search trial
    assert len(obs.stats.line_search_trials) == 2
    assert (obs.stats.line_search_trials >= obs.stats.newton_iterations).all()
    assert obs.stats.line_search_trials[0] > 0
    np.testing.assert_allclose(obs.stats.time, [1.0, 1.0])
    assert obs.stats.flags[0] & axion.WorldStats.FLAG_NOT_CONVERGED == 0
    assert obs.stats.flags[1] & axion.WorldStats.FLAG_NOT_CONVERGED != 0
    # loop counts are bounded too: one client's world must not stall the server's batch
    for bad in ({"step_halvings": 11}, {"halving_iterations": 0}, {"halving_residual": -1.0},
                {"newton_iterations": 2**31 - 1}, {"cr_iterations": 10001},
                {"line_search_steps": 31}):
        with pytest.raises(axion.AxionError, match=next(iter(bad))):
            client.create_worlds(PENDULUM_MJCF, solver_options=bad)


def test_halving_carryover(client):
    # The same pendulum: with the level carried over (the default) a step after a halved one
    # starts halved, so the 10 steps take fewer Newton iterations than restarting whole each
    # step; both stay solved and advance the same time.
    horizontal, options = HORIZONTAL_PENDULUM_MJCF, HALVING_OPTIONS
    carried = client.create_worlds(horizontal, solver_options=options).world_ids
    restarted = client.create_worlds(
        horizontal, solver_options=dict(options, halving_carryover=False)).world_ids
    assert client.get_model(carried[0]).options.halving_carryover.value is True
    assert client.get_model(restarted[0]).options.halving_carryover.value is False
    newton = np.zeros(2)
    for _ in range(10):
        obs = client.step(carried + restarted, observe=["stats"])
        newton += obs.stats.newton_iterations
        assert (obs.stats.flags & axion.WorldStats.FLAG_NOT_CONVERGED == 0).all()
    np.testing.assert_allclose(obs.stats.time, [2.0, 2.0])
    assert newton[0] < newton[1]


def test_loop_rows(client):
    # The rows closing loops are eliminated on top of the tree solve, 16 at most by default; 0
    # turns that off; a value out of [0, 16] is refused, naming the field.
    default = client.get_model(client.create_worlds(PENDULUM_MJCF).world_ids[0]).options
    assert default.loop_rows.value == 16
    off = client.create_worlds(PENDULUM_MJCF, solver_options={"loop_rows": 0}).world_ids
    assert client.get_model(off[0]).options.loop_rows.value == 0
    obs = client.step(off, observe=["stats"])
    assert obs.stats.flags[0] & axion.WorldStats.FLAG_NOT_CONVERGED == 0
    with pytest.raises(axion.AxionError, match="loop_rows"):
        client.create_worlds(PENDULUM_MJCF, solver_options={"loop_rows": 17})


TWO_BALLS_MJCF = """
<mujoco>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body pos="0 0 1"><freejoint/><geom type="sphere" size="0.1"/></body>
    <body pos="1 0 1"><freejoint/><geom type="sphere" size="0.1"/></body>
  </worldbody>
</mujoco>
"""


def test_islands(client):
    # Two balls apart are two islands, each solved with its own line search and convergence
    # test; islands=False makes the world one Newton system.
    apart = client.create_worlds(TWO_BALLS_MJCF).world_ids
    assert client.get_model(apart[0]).options.islands.value is True
    whole = client.create_worlds(TWO_BALLS_MJCF, solver_options={"islands": False}).world_ids
    assert client.get_model(whole[0]).options.islands.value is False
    obs = client.step(apart + whole, observe=["stats"])
    assert obs.stats.island_count.tolist() == [2, 1]


def test_contact_redos(client):
    # Without the speculative test a falling ball's contact with the floor is found only at the
    # end of the step that took it 0.3 m deep; that step goes back to its start with the
    # contact in its set (contact_redos), or, with redos off, ends deep.
    options = {"timestep": 0.1, "speculative_contacts": False}
    redo = client.create_worlds(TWO_BALLS_MJCF, solver_options=options).world_ids
    deep = client.create_worlds(
        TWO_BALLS_MJCF, solver_options=dict(options, contact_redos=0)).world_ids
    model = client.get_model(redo[0])
    assert model.options.contact_redos.value == 1
    assert model.options.missed_contact_depth.value == pytest.approx(0.005)
    redos = np.zeros(2, dtype=np.int64)
    lowest = np.full(2, np.inf)
    for _ in range(10):
        obs = client.step(redo + deep, observe=["stats", "body_pose"])
        redos += obs.stats.contact_redos
        lowest = np.minimum(lowest, obs.body_pose[:, 0, 2])
    assert redos[0] >= 1 and redos[1] == 0
    assert lowest[0] > 0.1 - 1e-3  # the ball's radius: it never sank
    assert lowest[1] < 0.1 - 0.05
    assert model.options.contact_presolve_sweeps.value == 1000
    off = client.create_worlds(TWO_BALLS_MJCF, solver_options={"contact_presolve_sweeps": 0})
    assert client.get_model(off.world_ids[0]).options.contact_presolve_sweeps.value == 0
    for bad in ({"contact_redos": 5}, {"missed_contact_depth": -1.0},
                {"contact_presolve_sweeps": -1}):
        with pytest.raises(axion.AxionError, match=next(iter(bad))):
            client.create_worlds(TWO_BALLS_MJCF, solver_options=bad)


def test_create_worlds_solver_options_preconditioner(client):
    jacobi = client.create_worlds(PENDULUM_MJCF, solver_options={"preconditioner": "jacobi"})
    tree = client.create_worlds(PENDULUM_MJCF, solver_options={"preconditioner": "TREE"})
    default = client.create_worlds(PENDULUM_MJCF)
    assert (client.get_model(jacobi.world_ids[0]).options.preconditioner
            == axion.pb.PRECONDITIONER_JACOBI)
    assert (client.get_model(tree.world_ids[0]).options.preconditioner
            == axion.pb.PRECONDITIONER_TREE)
    assert (client.get_model(default.world_ids[0]).options.preconditioner
            == axion.pb.PRECONDITIONER_TREE)
    ids = jacobi.world_ids + tree.world_ids
    obs = client.step(ids, steps=20, controls=np.full((2, 1), 1.0, dtype=np.float32),
                      observe=["joint_position"])
    assert np.all(np.isfinite(obs.joint_position))
    assert obs.joint_position[0, 0] > 0
    # Both preconditioners solve the same system: the trajectories agree.
    np.testing.assert_allclose(obs.joint_position[0], obs.joint_position[1], atol=1e-4)


def test_make_scene_rejects_unknown_xml_root():
    with pytest.raises(ValueError, match="root element"):
        axion.make_scene("<sdf version='1.6'><model/></sdf>")


def test_list_worlds_in_creation_order_with_step_counts(client):
    first = client.create_worlds(PENDULUM_MJCF, count=2).world_ids
    second = client.create_worlds(free_sphere_model(), count=1).world_ids
    client.step(first[1], steps=4)
    worlds = client.list_worlds()
    assert [w.world_id for w in worlds] == first + second
    assert [w.model_name for w in worlds] == ["pendulum", "pendulum", "free_sphere"]
    assert [w.step_count for w in worlds] == [0, 4, 0]
    assert worlds[1].time == pytest.approx(4 * 0.005)


def test_describe_world_and_get_model(client):
    world = client.create_worlds(PENDULUM_MJCF).world_ids[0]
    description = client.describe_world(world)
    assert description.body_names == ["bob"]
    # the motor drives the hinge's DOF
    torque = description.actuators[0]
    assert (torque.joint, torque.dof, torque.tendon, torque.site_body, torque.adhesion_body) == (
        0, 0, -1, -1, -1)
    model = client.get_model(world)
    assert isinstance(model, axion.pb.ModelDescription)
    assert [b.name for b in model.bodies] == ["bob"]
    assert model.bodies[0].mass == pytest.approx(1.0)
    assert model.options.timestep.value == pytest.approx(0.005)


ADHESION_MJCF = """
<mujoco model="pad">
  <option timestep="0.01" gravity="0 0 0"/>
  <worldbody>
    <geom type="plane" size="0 0 1"/>
    <body name="ball" pos="0 0 0.11">
      <freejoint/><geom type="sphere" size="0.1" mass="1" margin="0.02" gap="0.02"/>
    </body>
  </worldbody>
  <actuator><adhesion name="pad" body="ball" ctrlrange="0 1" gain="2"/></actuator>
</mujoco>
"""


def test_adhesion_pad_is_described_and_pulls(client):
    # the ball hovers 1 cm up, within its margin: the pad pulls it down by 2 ctrl newtons
    world = client.create_worlds(ADHESION_MJCF).world_ids[0]
    pad = client.describe_world(world).actuators[0]
    assert (pad.joint, pad.site_body, pad.adhesion_body) == (-1, -1, 0)
    obs = client.step(world, steps=3, controls=np.array([[1.0]], dtype=np.float32),
                      observe=["body_velocity"])
    assert obs.body_velocity[0, 0, 2] == pytest.approx(-2 * 3 * 0.01, abs=1e-6)


def test_destroy_worlds_removes_them(client):
    ids = client.create_worlds(PENDULUM_MJCF, count=3).world_ids
    assert client.destroy_worlds(ids[:2]) == ids[:2]
    assert [w.world_id for w in client.list_worlds()] == ids[2:]
    with pytest.raises(axion.NotFound):
        client.step(ids[0])
    assert client.destroy_worlds(all_worlds=True) == ids[2:]
    assert client.list_worlds() == []


def test_destroy_requires_ids_or_all(client):
    with pytest.raises(ValueError):
        client.destroy_worlds()


# -- stepping and observations -----------------------------------------------------------------


def test_step_all_observations_have_documented_shapes(client):
    ids = client.create_worlds(PENDULUM_MJCF, count=4).world_ids
    obs = client.step(ids, steps=3, observe="all")
    assert obs.world_ids == ids
    assert obs.body_pose.shape == (4, 1, 7) and obs.body_pose.dtype == np.float32
    assert obs.body_velocity.shape == (4, 1, 6)
    assert obs.joint_position.shape == (4, 1)
    assert obs.joint_velocity.shape == (4, 1)
    assert obs.body_contact_force.shape == (4, 1, 3)
    assert obs.controls.shape == (4, 1)
    assert obs.actuator_force.shape == (4, 1)
    assert obs.contacts.count.shape == (4,)
    np.testing.assert_array_equal(obs.stats.step_count, [3, 3, 3, 3])
    np.testing.assert_allclose(obs.stats.time, 3 * 0.005)
    # Arrays are writable copies, not views of the message.
    obs.joint_position[0, 0] = 1.0
    # Quaternions are unit length; the bob hangs 1 m below the hinge at rest, i.e. the body
    # frame stays at the hinge (0, 0, 2).
    np.testing.assert_allclose(np.linalg.norm(obs.body_pose[:, 0, 3:], axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(obs.body_pose[:, 0, :3], [[0, 0, 2]] * 4, atol=1e-5)


def test_step_without_observe_returns_no_arrays(client):
    ids = client.create_worlds(PENDULUM_MJCF, count=2).world_ids
    obs = client.step(ids)
    assert obs.world_ids == ids
    assert obs.body_pose is None and obs.joint_position is None and obs.stats is None


def test_free_fall_matches_semi_implicit_euler(client):
    # v_n = -g n h and z_n = z0 - g h^2 n (n + 1) / 2 for the engine's semi-implicit Euler.
    ids = client.create_worlds(free_sphere_model(height=10.0), count=2).world_ids
    n, h = 50, 0.01
    obs = client.step(ids, steps=n, observe=["body_pose", "body_velocity"])
    np.testing.assert_allclose(obs.body_velocity[:, 0, 2], -G * n * h, rtol=1e-5)
    np.testing.assert_allclose(
        obs.body_pose[:, 0, 2], 10.0 - G * h * h * n * (n + 1) / 2, rtol=1e-5)
    np.testing.assert_allclose(obs.body_velocity[:, 0, [0, 1, 3, 4, 5]], 0.0, atol=1e-6)


def test_steps_per_world(client):
    ids = client.create_worlds(PENDULUM_MJCF, count=3).world_ids
    obs = client.step(ids, steps=[1, 0, 5], observe=["stats"])
    np.testing.assert_array_equal(obs.stats.step_count, [1, 0, 5])
    obs = client.step(np.asarray(ids, dtype=np.uint64), steps=np.int64(2), observe=["stats"])
    np.testing.assert_array_equal(obs.stats.step_count, [3, 2, 7])


def test_controls_drive_the_pendulum_and_persist(client):
    # From rest at the bottom, gravity has no moment: one step of torque tau gives
    # omega = tau h / I.
    ids = client.create_worlds(PENDULUM_MJCF, count=2).world_ids
    torque = np.array([[1.5], [-0.5]], dtype=np.float32)
    obs = client.step(ids, controls=torque, observe=["joint_velocity", "controls"])
    np.testing.assert_allclose(
        obs.joint_velocity[:, 0], torque[:, 0] * 0.005 / PENDULUM_INERTIA, rtol=1e-3)
    np.testing.assert_array_equal(obs.controls, torque)
    later = client.step(ids, observe=["controls"])  # no controls: the previous ones stay
    np.testing.assert_array_equal(later.controls, torque)


def test_actuator_forces_are_what_the_actuators_apply(client):
    # A position servo holding a 1 kg bob out sideways against gravity (the bob at 0.5 m from
    # the hinge) exerts, at rest, the weight's moment m g l cos(q); a geared motor gear * ctrl.
    servo = """<mujoco><option timestep="0.005"/><worldbody>
      <body name="arm" pos="0 0 1"><joint name="hinge" axis="0 1 0" damping="0.5"/>
        <geom type="sphere" size="0.05" pos="0.5 0 0" mass="1"/></body></worldbody>
      <actuator><position name="hold" joint="hinge" kp="200" kv="5"/>
        <motor name="push" joint="hinge" gear="4"/></actuator></mujoco>"""
    ids = client.create_worlds(servo, count=2).world_ids
    controls = np.array([[0.0, 0.0], [0.0, 0.25]], dtype=np.float32)
    obs = client.step(ids, steps=600, controls=controls,
                      observe=["joint_position", "actuator_force"])
    q = obs.joint_position[:, 0].astype(np.float64)
    assert obs.actuator_force.shape == (2, 2)
    np.testing.assert_allclose(obs.actuator_force[:, 1], [0.0, 1.0])
    held = obs.actuator_force[:, 0] + obs.actuator_force[:, 1]
    np.testing.assert_allclose(np.abs(held), G * 0.5 * np.cos(q), rtol=1e-4)
    np.testing.assert_allclose(obs.actuator_force[:, 0], -200 * q, rtol=1e-3)


def test_mjcf_sensors_read_the_state(client):
    # A pendulum at rest under a servo: its angle sensor reads joint_position, the actuator's
    # force sensor the servo's force before its gear, the clock the time, and a touch sensor
    # under a box resting on the floor the box's weight.
    xml = """<mujoco><option timestep="0.005"/><worldbody><geom type="plane" size="0 0 1"/>
      <body name="arm" pos="0 0 1"><joint name="hinge" axis="0 1 0" damping="0.5"/>
        <geom type="sphere" size="0.05" pos="0.5 0 0" mass="1"/></body>
      <body name="box" pos="2 0 0.05"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="3"/>
        <site name="sole" type="box" size="0.06 0.06 0.01" pos="0 0 -0.05"/></body></worldbody>
      <actuator><position name="hold" joint="hinge" kp="200" gear="2"/></actuator>
      <sensor><jointpos name="angle" joint="hinge"/><actuatorfrc name="hold_force" actuator="hold"/>
        <touch name="weight" site="sole"/><clock name="time"/></sensor></mujoco>"""
    created = client.create_worlds(xml, count=2)
    description = created.description
    assert [s.name for s in description.source_sensors] == ["angle", "hold_force", "weight", "time"]
    assert [s.type for s in description.source_sensors] == ["jointpos", "actuatorfrc", "touch",
                                                            "clock"]
    assert description.sensor_data_count == 4
    obs = client.step(created.world_ids, steps=400,
                      observe=["joint_position", "actuator_force", "sensor_data"])
    assert obs.sensor_data.shape == (2, 4)
    np.testing.assert_allclose(description.sensor("angle", obs.sensor_data)[:, 0],
                               obs.joint_position[:, 0], rtol=1e-6)
    np.testing.assert_allclose(obs.sensor_data[:, 1], obs.actuator_force[:, 0] / 2, rtol=1e-6)
    np.testing.assert_allclose(obs.sensor_data[:, 2], 3 * G, rtol=1e-3)
    np.testing.assert_allclose(obs.sensor_data[:, 3], 2.0, rtol=1e-6)
    with pytest.raises(KeyError, match="no sensor 'gyro'"):
        description.sensor("gyro", obs.sensor_data)
    # a scene without a model file has no sensors to read
    plain = client.create_worlds(free_sphere_model(), count=1).world_ids
    with pytest.raises(axion.FailedPrecondition, match="observe.sensor_data"):
        client.get_state(plain, observe=["sensor_data"])


def test_tendon_state_reads_lengths_and_rates(client):
    # A cable from a world site 1 m to the side of a pendulum's hinge to its bob 0.5 m below
    # the hinge: at angle q about y its length is |(1 + 0.5 sin q, 0, 0.5 cos q)|, its rate
    # 0.5 cos q / L times the swing's rate; the file's tendonpos sensor reads the same length.
    xml = """<mujoco><option timestep="0.002"/><worldbody><site name="anchor" pos="1 0 1"/>
      <body name="arm" pos="0 0 1"><joint name="hinge" axis="0 1 0"/>
        <geom type="sphere" size="0.05" pos="0 0 -0.5" mass="1"/><site name="bob" pos="0 0 -0.5"/>
      </body></worldbody>
      <tendon><spatial name="cable"><site site="anchor"/><site site="bob"/></spatial></tendon>
      <actuator><motor joint="hinge"/></actuator>
      <sensor><tendonpos name="cable_length" tendon="cable"/></sensor></mujoco>"""
    created = client.create_worlds(xml, count=2)
    assert created.description.tendon_names == ["cable"]
    obs = client.step(created.world_ids, steps=100, controls=np.array([[4.0], [-3.0]]),
                      observe=["joint_position", "joint_velocity", "tendon_state", "sensor_data"])
    assert obs.tendon_state.shape == (2, 1, 2)
    q, rate = obs.joint_position[:, 0], obs.joint_velocity[:, 0]
    assert np.all(np.abs(q) > 0.1)
    length = np.hypot(1 + 0.5 * np.sin(q), 0.5 * np.cos(q))
    np.testing.assert_allclose(obs.tendon_state[:, 0, 0], length, rtol=1e-5)
    np.testing.assert_allclose(obs.tendon_state[:, 0, 1], 0.5 * np.cos(q) / length * rate,
                               rtol=2e-5)
    np.testing.assert_allclose(obs.sensor_data[:, 0], length, rtol=1e-5)
    # every world has the field; a scene without tendons reads (W x 0 x 2)
    plain = client.create_worlds(free_sphere_model(), count=1).world_ids
    assert client.get_state(plain, observe=["tendon_state"]).tendon_state.shape == (1, 0, 2)


def test_external_force_balancing_gravity_keeps_body_still(client):
    mass = 2.0
    ids = client.create_worlds(free_sphere_model(mass=mass), count=1).world_ids
    force = np.zeros((1, 1, 6), dtype=np.float32)
    force[0, 0, 2] = mass * G
    obs = client.step(ids, steps=20, external_forces=force, observe=["body_velocity"])
    np.testing.assert_allclose(obs.body_velocity, 0.0, atol=1e-4)


def test_contacts_and_contact_force_of_resting_box(client):
    ids = client.create_worlds(BOX_ON_PLANE_MJCF, count=2).world_ids
    obs = client.step(ids, steps=100, observe=["contacts", "body_contact_force", "body_pose"])
    contacts = obs.contacts
    assert (contacts.count > 0).all()
    assert contacts.data.shape == (contacts.count.sum(), 10)
    assert contacts.body.shape == (contacts.count.sum(), 2)
    np.testing.assert_allclose(np.abs(contacts.normal[:, 2]), 1.0, atol=1e-4)
    rows = contacts.world_slice(1)
    assert rows.stop - rows.start == contacts.count[1]
    # At rest the ground carries the weight: net contact force on the box = m g upwards.
    np.testing.assert_allclose(obs.body_contact_force[:, 0, 2], 2.0 * G, rtol=1e-3)
    np.testing.assert_allclose(obs.body_pose[:, 0, 2], 0.1, atol=2e-3)


SPINNING_BALL_MJCF = """<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="0 0 0.1"/>
    <body pos="0 0 0.1">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1" condim="4" friction="1 0.02 0.0001"/>
    </body>
  </worldbody>
  <keyframe><key qvel="0 0 0 0 0 10"/></keyframe>
</mujoco>"""


def test_contact_torque_of_a_ball_spinning_on_the_floor(client):
    # torsional friction (condim 4): the contact resists the spin with mu_t times its normal
    # force, which the contacts' torque reports
    ids = client.create_worlds(SPINNING_BALL_MJCF, count=1).world_ids
    client.reset(ids, keyframe=0)
    obs = client.step(ids, steps=10, observe=["contacts", "body_velocity"])
    contacts = obs.contacts
    assert contacts.torque.shape == (contacts.count.sum(), 3) == (1, 3)
    normal_force = float(np.dot(contacts.force[0], contacts.normal[0]))
    np.testing.assert_allclose(normal_force, G, rtol=1e-5)
    np.testing.assert_allclose(abs(float(np.dot(contacts.torque[0], contacts.normal[0]))),
                               0.02 * normal_force, rtol=1e-5)
    rate = 0.02 * G / (0.4 * 0.1 * 0.1)
    np.testing.assert_allclose(obs.body_velocity[0, 0, 5], 10 - rate * 0.05, rtol=1e-5)


def test_mixed_scenes_give_per_world_arrays(client):
    pendulum = client.create_worlds(PENDULUM_MJCF).world_ids[0]
    arm = client.create_worlds(MODELS_DIR / "three_link_arm.urdf").world_ids[0]
    obs = client.get_state([pendulum, arm], observe=["joint_position", "body_pose"])
    assert isinstance(obs.joint_position, list)
    assert [q.shape for q in obs.joint_position] == [(1,), (3,)]
    assert [p.shape for p in obs.body_pose] == [(1, 7), (3, 7)]


def test_layouts_of_worlds_created_by_another_client_object(server, client, client_id):
    ids = client.create_worlds(PENDULUM_MJCF, count=2).world_ids
    with axion.Client(server.target, client_id=client_id) as other:
        obs = other.get_state(ids, observe=["body_pose"])
    assert obs.body_pose.shape == (2, 1, 7)


# -- state, reset, snapshots -------------------------------------------------------------------


def test_set_state_then_get_state_round_trips(client):
    ids = client.create_worlds(free_sphere_model(), count=2).world_ids
    pose = np.array([[[1, 2, 3, 1, 0, 0, 0]], [[-1, 0, 4, 0, 0, 0, 2]]], dtype=np.float32)
    velocity = np.arange(12, dtype=np.float32).reshape(2, 1, 6)
    client.set_state(ids, body_pose=pose, body_velocity=velocity)
    obs = client.get_state(ids, observe=["body_pose", "body_velocity"])
    expected = pose.copy()
    expected[1, 0, 3:] = [0, 0, 0, 1]  # the server normalises quaternions
    np.testing.assert_allclose(obs.body_pose, expected, atol=1e-6)
    np.testing.assert_allclose(obs.body_velocity, velocity, atol=1e-6)


def test_get_state_defaults_to_every_field(client):
    ids = client.create_worlds(PENDULUM_MJCF).world_ids
    obs = client.get_state(ids)
    for field in ("body_pose", "body_velocity", "joint_position", "joint_velocity",
                  "body_contact_force", "controls", "contacts", "stats"):
        assert getattr(obs, field) is not None, field


def test_reset_with_mask_resets_only_selected_worlds(client):
    ids = client.create_worlds(PENDULUM_MJCF, count=3).world_ids
    client.step(ids, steps=10, controls=np.ones((3, 1), dtype=np.float32))
    before = client.get_state(ids, observe=["joint_position", "stats"])
    assert client.reset(ids, mask=[True, False, True]) == [ids[0], ids[2]]
    after = client.get_state(ids, observe=["joint_position", "stats"])
    np.testing.assert_array_equal(after.stats.step_count, [0, 10, 0])
    np.testing.assert_array_equal(after.joint_position[[0, 2]], 0.0)
    np.testing.assert_array_equal(after.joint_position[1], before.joint_position[1])


def test_reset_all_worlds_with_given_pose(client):
    ids = client.create_worlds(free_sphere_model(), count=2).world_ids
    client.step(ids, steps=5)
    pose = np.array([[[0, 0, 1, 1, 0, 0, 0]], [[0, 0, 2, 1, 0, 0, 0]]], dtype=np.float32)
    assert sorted(client.reset(all_worlds=True, body_pose=pose)) == sorted(ids)
    obs = client.get_state(ids, observe=["body_pose", "stats"])
    np.testing.assert_allclose(obs.body_pose, pose, atol=1e-6)
    np.testing.assert_array_equal(obs.stats.step_count, [0, 0])


def pendulum_pose(angle):
    """The pendulum's body pose (its frame on the hinge at (0, 0, 2)) turned `angle` about y."""
    return [0.0, 0.0, 2.0, np.cos(angle / 2), 0.0, np.sin(angle / 2), 0.0]


def test_set_state_joint_state_places_the_bodies(client):
    ids = client.create_worlds(PENDULUM_MJCF, count=2).world_ids
    position = np.array([[0.5], [-1.0]], dtype=np.float32)  # (W x P)
    velocity = np.array([[2.0], [0.0]], dtype=np.float32)  # (W x D)
    client.set_state(ids, joint_position=position, joint_velocity=velocity)
    obs = client.get_state(ids, observe=["joint_position", "joint_velocity", "body_pose",
                                         "body_velocity"])
    np.testing.assert_allclose(obs.joint_position, position, atol=1e-6)
    np.testing.assert_allclose(obs.joint_velocity, velocity, atol=1e-5)
    # the hinge turns the bob's frame about y in place: its ball, 1 m below, swings out to -x
    np.testing.assert_allclose(obs.body_pose[:, 0],
                               [pendulum_pose(0.5), pendulum_pose(-1.0)], atol=1e-6)
    np.testing.assert_allclose(obs.body_velocity[:, 0], [[0, 0, 0, 0, 2, 0], [0] * 6], atol=1e-5)
    # velocities alone keep the positions
    client.set_state(ids, joint_velocity=np.zeros((2, 1), dtype=np.float32))
    obs = client.get_state(ids, observe=["joint_position", "joint_velocity"])
    np.testing.assert_allclose(obs.joint_position, position, atol=1e-6)
    np.testing.assert_array_equal(obs.joint_velocity, 0.0)
    # released at 0.5 rad, gravity swings it back
    swung = client.step(ids[0], steps=20, observe=["joint_velocity"])
    assert swung.joint_velocity[0, 0] < -0.1


def test_bad_joint_state_is_invalid_argument_and_changes_nothing(client):
    ids = client.create_worlds(PENDULUM_MJCF, count=2).world_ids
    client.step(ids, steps=3, controls=np.ones((2, 1), dtype=np.float32))
    before = client.snapshot(ids)
    with pytest.raises(axion.InvalidArgument, match="joint_position: expected 2 float32"):
        client.set_state(ids, joint_position=np.zeros(3, dtype=np.float32))
    with pytest.raises(axion.InvalidArgument, match="joint_velocity") as raised:
        client.set_state(ids, joint_position=[[0.1], [0.2]], joint_velocity=[[0.0], [np.nan]])
    assert str(ids[1]) in raised.value.message and "not finite" in raised.value.message
    with pytest.raises(axion.InvalidArgument, match="joint_position"):
        client.reset(ids, joint_position=np.zeros((2, 2), dtype=np.float32))
    assert client.snapshot(ids) == before


def pendulum_with_keyframes(client):
    """The pendulum's ModelDescription with two keyframes: "swung" (0.5 rad, turning at
    2 rad/s, t = 2 s, the motor at 1 N m) and an unnamed one at -1 rad."""
    model = client.get_model(client.create_worlds(PENDULUM_MJCF).world_ids[0])
    model.keyframes.add(name="swung", time=2.0, body_pose=pendulum_pose(0.5),
                        body_velocity=[0, 0, 0, 0, 2, 0], controls=[1.0])
    model.keyframes.append(axion.pb.Keyframe(body_pose=pendulum_pose(-1.0)))
    return model


def test_keyframes_survive_the_model_description_round_trip(client):
    model = pendulum_with_keyframes(client)
    created = client.create_worlds(model)
    assert created.description.keyframe_names == ["swung", ""]
    assert client.describe_world(created.world_ids[0]).keyframe_names == ["swung", ""]
    described = client.get_model(created.world_ids[0])
    assert list(described.keyframes) == list(model.keyframes)
    assert list(described.keyframes[0].body_pose) == pendulum_pose(0.5)
    again = client.get_model(client.create_worlds(described).world_ids[0])
    assert again == described
    model.keyframes[1].controls.extend([0.0, 0.0])  # one actuator
    with pytest.raises(axion.InvalidArgument, match="keyframe 1"):
        client.create_worlds(model)


def test_reset_to_keyframe_by_name_and_index(client):
    ids = client.create_worlds(pendulum_with_keyframes(client), count=2).world_ids
    client.step(ids, steps=5)
    assert client.reset(ids, keyframe="swung") == ids
    obs = client.get_state(ids, observe=["joint_position", "joint_velocity", "controls", "stats"])
    np.testing.assert_allclose(obs.joint_position, [[0.5], [0.5]], atol=1e-6)
    np.testing.assert_allclose(obs.joint_velocity, [[2.0], [2.0]], atol=1e-5)
    np.testing.assert_array_equal(obs.controls, [[1.0], [1.0]])
    np.testing.assert_array_equal(obs.stats.time, [2.0, 2.0])
    np.testing.assert_array_equal(obs.stats.step_count, [0, 0])
    # by index (the unnamed one), masked, and then the given joint velocity over it
    client.reset(ids, mask=[False, True], keyframe=1, joint_velocity=[[-3.0]])
    obs = client.get_state(ids, observe=["joint_position", "joint_velocity", "controls", "stats"])
    np.testing.assert_allclose(obs.joint_position, [[0.5], [-1.0]], atol=1e-6)
    np.testing.assert_allclose(obs.joint_velocity, [[2.0], [-3.0]], atol=1e-5)
    np.testing.assert_array_equal(obs.controls, [[1.0], [0.0]])
    np.testing.assert_array_equal(obs.stats.time, [2.0, 0.0])


def test_mjcf_keys_are_keyframes(client):
    xml = PENDULUM_MJCF.replace(
        "</mujoco>", '<keyframe><key name="up" qpos="0.7" time="3"/></keyframe></mujoco>')
    ids = client.create_worlds(xml).world_ids
    assert client.describe_world(ids[0]).keyframe_names == ["up"]
    client.reset(ids, keyframe="up")
    obs = client.get_state(ids, observe=["joint_position", "stats"])
    np.testing.assert_allclose(obs.joint_position, [[0.7]], atol=1e-6)
    np.testing.assert_array_equal(obs.stats.time, [3.0])


def test_unknown_keyframe_is_not_found_and_resets_nothing(client):
    ids = client.create_worlds(pendulum_with_keyframes(client), count=2).world_ids
    client.step(ids, steps=3)
    before = client.snapshot(ids)
    with pytest.raises(axion.NotFound, match="no keyframe 'jump'") as raised:
        client.reset(ids, keyframe="jump")
    assert "'swung', ''" in raised.value.message
    with pytest.raises(axion.NotFound, match="it has none"):
        client.reset(ids + client.create_worlds(PENDULUM_MJCF).world_ids, keyframe="swung")
    assert client.snapshot(ids) == before


# -- file coordinates (MuJoCo's qpos and qvel) ---------------------------------------------------

FILE_FIELDS = ["file_position", "file_velocity", "joint_position"]


def test_file_coordinates_are_the_keys_qpos_and_qvel(client):
    created = client.create_worlds(CREATURE_MJCF, count=2)
    ids, description = created.world_ids, created.description
    assert (description.file_position_count, description.file_velocity_count) == (14, 12)
    joints = description.source_joints
    assert [j.name for j in joints] == ["root", "hip", "w1", "w2", "w3"]
    assert [j.kind for j in joints] == ["free", "ball", "hinge", "hinge", "hinge"]
    assert [j.file_body for j in joints] == [0, 1, 2, 2, 2]
    assert [(j.file_position_offset, j.file_position_count) for j in joints] == [
        (0, 7), (7, 4), (11, 1), (12, 1), (13, 1)]
    assert [(j.file_velocity_offset, j.file_velocity_count) for j in joints] == [
        (0, 6), (6, 3), (9, 1), (10, 1), (11, 1)]
    wrist = description.joints[joints[2].joint]
    assert wrist.type == "generic" and joints[4].joint == joints[2].joint

    client.reset(ids[:1], keyframe="pose")
    obs = client.get_state(ids, observe=FILE_FIELDS)
    assert obs.file_position.shape == (2, 14) and obs.file_position.dtype == np.float32
    assert obs.file_velocity.shape == (2, 12)
    np.testing.assert_allclose(obs.file_position[0], CREATURE_KEY_QPOS, atol=2e-6)
    np.testing.assert_allclose(obs.file_velocity[0], CREATURE_KEY_QVEL, atol=2e-6)
    # the other world at qpos0: the torso where the file puts it, every joint at its zero
    np.testing.assert_allclose(obs.file_position[1, :3], [0, 0, 1], atol=1e-6)
    np.testing.assert_allclose(obs.file_position[1, 7:], [1, 0, 0, 0, 0, 0, 0], atol=1e-6)
    np.testing.assert_array_equal(obs.file_velocity[1], 0)
    # the engine's merged wrist measures a rotation vector, off MuJoCo's angles
    merged = [obs.joint_position[0, wrist.position_offset + j.dof] for j in joints[2:]]
    assert np.max(np.abs(np.subtract(merged, CREATURE_KEY_QPOS[11:]))) > 0.01

    # the same through step (0 steps: observe only) and the stream
    stepped = client.step(ids[:1], steps=0, observe=FILE_FIELDS)
    np.testing.assert_array_equal(stepped.file_position, obs.file_position[:1])
    np.testing.assert_array_equal(stepped.file_velocity, obs.file_velocity[:1])
    with client.open_step_stream() as stream:
        streamed = stream.step(ids[:1], steps=0, observe=FILE_FIELDS)
    np.testing.assert_array_equal(streamed.file_position, obs.file_position[:1])
    # ... and a step moves them on
    moved = client.step(ids[:1], steps=3, observe=FILE_FIELDS)
    assert not np.allclose(moved.file_position, obs.file_position[:1])


def test_file_coordinates_of_a_model_description_world_are_refused(client):
    creature = client.create_worlds(CREATURE_MJCF).world_ids[0]
    created = client.create_worlds(free_sphere_model())
    sphere = created.world_ids[0]
    assert created.description.file_position_count == 0
    assert created.description.source_joints == []
    before = client.snapshot([creature, sphere])
    with pytest.raises(axion.FailedPrecondition, match=f"world {sphere}.*no model file"):
        client.get_state([creature, sphere], observe=["file_velocity"])
    with pytest.raises(axion.FailedPrecondition, match="observe.file_position"):
        client.step([creature, sphere], steps=3, observe=["file_position"])
    assert client.snapshot([creature, sphere]) == before  # nothing stepped
    # "all" asks for what every world has, so it serves both
    assert not axion.types.observation_request("all").file_position
    obs = client.get_state([creature, sphere])
    assert obs.file_position is None and obs.joint_position is not None


def test_file_coordinates_survive_a_server_restart(server_binary, tmp_path, client_id):
    args = [f"--snapshot_dir={tmp_path}"]
    process = start_server(server_binary, args)
    try:
        with axion.Client(process.target, client_id=client_id) as first:
            world = first.create_worlds(CREATURE_MJCF).world_ids[0]
            first.reset([world], keyframe="pose")
            first.step([world], steps=5)
            before = first.get_state([world], observe=FILE_FIELDS)
    finally:
        process.stop()  # writes the world to the snapshot dir
    process = start_server(server_binary, args)
    try:
        with axion.Client(process.target, client_id=client_id) as second:
            after = second.get_state([world], observe=FILE_FIELDS)
            np.testing.assert_array_equal(after.file_position, before.file_position)
            np.testing.assert_array_equal(after.file_velocity, before.file_velocity)
            joints = second.describe_world(world).source_joints
            assert [j.kind for j in joints] == ["free", "ball", "hinge", "hinge", "hinge"]
            second.reset([world], keyframe="pose")
            reset = second.get_state([world], observe=FILE_FIELDS)
            np.testing.assert_allclose(reset.file_position[0], CREATURE_KEY_QPOS, atol=2e-6)
            np.testing.assert_allclose(reset.file_velocity[0], CREATURE_KEY_QVEL, atol=2e-6)
    finally:
        process.stop()


def test_snapshot_restore_is_bit_exact(client):
    ids = client.create_worlds(BOX_ON_PLANE_MJCF, count=2).world_ids
    client.step(ids, steps=7)
    snapshots = client.snapshot(ids[:1])
    assert list(snapshots) == ids[:1] and isinstance(snapshots[ids[0]], bytes)
    first = client.step(ids[0], steps=5, observe=["body_pose", "body_velocity"])
    # Restore into the same world and into the other one: both replay the same trajectory.
    client.restore({ids[0]: snapshots[ids[0]]})
    client.restore([(ids[1], snapshots[ids[0]])])
    again = client.step(ids, steps=5, observe=["body_pose", "body_velocity"])
    for world in range(2):
        np.testing.assert_array_equal(again.body_pose[world], first.body_pose[0])
        np.testing.assert_array_equal(again.body_velocity[world], first.body_velocity[0])


def test_restore_snapshot_of_another_scene_is_invalid(client):
    box = client.create_worlds(BOX_ON_PLANE_MJCF).world_ids[0]
    pendulum = client.create_worlds(PENDULUM_MJCF).world_ids[0]
    data = client.snapshot(box)[box]
    with pytest.raises(axion.InvalidArgument):
        client.restore({pendulum: data})


# -- errors ------------------------------------------------------------------------------------


def test_unknown_world_is_not_found_with_server_message(client):
    with pytest.raises(axion.NotFound) as raised:
        client.step([987654321])
    error = raised.value
    assert isinstance(error, axion.AxionError)
    assert error.code == grpc.StatusCode.NOT_FOUND
    assert "987654321" in error.message
    assert str(error).startswith("NOT_FOUND: ")
    with pytest.raises(axion.NotFound, match="987654321"):
        client.get_state([987654321])
    with pytest.raises(axion.NotFound, match="987654321"):
        client.describe_world(987654321)


def test_nan_control_is_invalid_argument_and_changes_nothing(client):
    ids = client.create_worlds(PENDULUM_MJCF, count=2).world_ids
    controls = np.array([[0.5], [np.nan]], dtype=np.float32)
    with pytest.raises(axion.InvalidArgument) as raised:
        client.step(ids, controls=controls)
    assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "controls" in raised.value.message and "nan" in raised.value.message.lower()
    state = client.get_state(ids, observe=["stats", "controls"])
    np.testing.assert_array_equal(state.stats.step_count, [0, 0])
    np.testing.assert_array_equal(state.controls, 0.0)


def test_out_of_range_control_is_invalid_argument(client):
    ids = client.create_worlds(PENDULUM_MJCF).world_ids
    with pytest.raises(axion.InvalidArgument, match="controls"):
        client.step(ids, controls=[[5.0]])


def test_wrong_array_size_is_invalid_argument(client):
    ids = client.create_worlds(PENDULUM_MJCF, count=2).world_ids
    with pytest.raises(axion.InvalidArgument, match="controls"):
        client.step(ids, controls=np.zeros(3, dtype=np.float32))


def test_parameters_give_each_world_its_own_dynamics(client):
    """Domain randomisation: per-world gear and mass, read back, and the torque's effect on each
    pendulum from rest (omega = gear tau h / I, the inertia scaling with the mass)."""
    ids = client.create_worlds(PENDULUM_MJCF, count=3).world_ids
    nominal = client.get_parameters(ids)
    assert isinstance(nominal, axion.Parameters)
    assert nominal.world_ids == ids
    assert nominal.body_mass.shape == (3, 1) and nominal.body_com.shape == (3, 1, 3)
    assert nominal.shape_friction.shape == (3, 1) and nominal.dof_damping.shape == (3, 1)
    np.testing.assert_allclose(nominal.shape_size, [[[0.05, 0, 0]]] * 3, rtol=1e-6)
    np.testing.assert_allclose(nominal.actuator_gear, [[1], [1], [1]])
    np.testing.assert_allclose(nominal.gravity, [[0, 0, -9.81]] * 3, rtol=1e-6)
    np.testing.assert_allclose(nominal.body_mass, 1.0, rtol=1e-6)
    # written back unchanged: nothing changes (the same bits as a fourth, untouched world)
    client.set_parameters(ids, nominal)
    client.set_parameters(ids[1:], actuator_gear=[[2.0], [1.0]], body_mass=[[1.0], [3.0]])
    got = client.get_parameters(ids)
    np.testing.assert_allclose(got.actuator_gear, [[1], [2], [1]])
    np.testing.assert_allclose(got.body_mass[:, 0], [1, 1, 3], rtol=1e-6)
    obs = client.step(ids, controls=np.ones((3, 1), np.float32), observe="joint_velocity")
    rates = obs.joint_velocity[:, 0]
    assert rates[0] == pytest.approx(0.005 / PENDULUM_INERTIA, rel=5e-3)
    assert rates[1] == pytest.approx(2 * rates[0], rel=1e-5)
    assert rates[2] == pytest.approx(rates[0] / 3, rel=1e-5)


def test_bad_parameters_change_no_world(client):
    ids = client.create_worlds(PENDULUM_MJCF, count=2).world_ids
    before = client.get_parameters(ids)
    with pytest.raises(axion.InvalidArgument, match=r"body_mass: world \d+, body 'bob'.*must be > 0"):
        client.set_parameters(ids, body_mass=[[2.0], [-1.0]])
    with pytest.raises(axion.InvalidArgument, match="joint 0 .'hinge'. differs"):
        client.set_parameters(ids, dof_damping=[[0.5], [0.5]])  # the hinge has no damper
    with pytest.raises(TypeError, match="unknown parameter 'mass'"):
        client.set_parameters(ids, mass=[[1.0], [1.0]])
    after = client.get_parameters(ids)
    for field in axion.PARAMETER_FIELDS:
        np.testing.assert_array_equal(getattr(after, field), getattr(before, field))


def test_mocap_poses_move_what_is_welded_to_them(client):
    """Teleoperation: each world's mocap hand set per step (set_state, step, a stream); the
    welded block follows 0.2 m beside it; observations report the hands."""
    created = client.create_worlds(HAND_MJCF, count=2)
    ids = created.world_ids
    assert created.description.mocap_names == ["hand"]
    client.set_state(ids, mocap_pose=np.array([[[0, 0.5, 1, 1, 0, 0, 0]], [[0, -0.5, 1, 1, 0, 0, 0]]]))
    obs = client.step(ids, steps=3, observe=["body_pose", "mocap_pose"])
    assert obs.mocap_pose.shape == (2, 1, 7)
    np.testing.assert_allclose(obs.body_pose[:, 0, :3], [[0.2, 0.5, 1], [0.2, -0.5, 1]], atol=1e-5)
    path = [0.01 * k for k in range(1, 11)]
    with client.open_step_stream() as stream:
        for x in path:
            hands = np.array([[[x, 0.5, 1, 1, 0, 0, 0]], [[-x, -0.5, 1, 1, 0, 0, 0]]], np.float32)
            obs = stream.step(ids, mocap_pose=hands, observe=["body_pose", "mocap_pose"])
            np.testing.assert_allclose(obs.mocap_pose, hands, atol=1e-6)
            np.testing.assert_allclose(obs.body_pose[:, 0, 0], [x + 0.2, -x + 0.2], atol=1e-5)
    state = client.get_state(ids)  # "all" includes the mocap poses
    np.testing.assert_allclose(state.mocap_pose[:, 0, 0], [0.1, -0.1], atol=1e-6)
    with pytest.raises(axion.InvalidArgument, match="mocap_pose: world .*, mocap body 0"):
        client.step(ids, mocap_pose=np.zeros((2, 1, 7), np.float32))


def test_malformed_scene_is_invalid_argument(client):
    with pytest.raises(axion.InvalidArgument):
        client.create_worlds("<mujoco><worldbody><body><geom type='banana'/></body>"
                             "</worldbody></mujoco>")


def test_worlds_of_another_client_are_not_found(server, client):
    world = client.create_worlds(PENDULUM_MJCF).world_ids[0]
    with axion.Client(server.target, client_id="someone-else") as other:
        with pytest.raises(axion.NotFound):
            other.get_state([world])
        assert world not in [w.world_id for w in other.list_worlds()]


# -- streams -----------------------------------------------------------------------------------


def test_step_stream_answers_in_order_and_survives_errors(client):
    ids = client.create_worlds(PENDULUM_MJCF, count=2).world_ids
    with client.open_step_stream() as stream:
        first = stream.submit(ids, 1, observe=["stats"])
        second = stream.submit(ids, 2, observe=["stats"])
        assert (first, second, stream.in_flight) == (1, 2, 2)
        np.testing.assert_array_equal(stream.result().stats.step_count, [1, 1])
        np.testing.assert_array_equal(stream.result().stats.step_count, [3, 3])
        with pytest.raises(axion.InvalidArgument, match="controls"):
            stream.step(ids, controls=[[np.nan], [0.0]])
        with pytest.raises(axion.NotFound):
            stream.step([987654321])
        obs = stream.step(ids, 1, controls=[[1.0], [-1.0]], observe=["controls", "stats"])
        np.testing.assert_array_equal(obs.controls, [[1.0], [-1.0]])
        np.testing.assert_array_equal(obs.stats.step_count, [4, 4])
        assert not stream.broken


def test_step_stream_matches_unary_step(client):
    ids = client.create_worlds(BOX_ON_PLANE_MJCF, count=2).world_ids
    unary = client.step(ids[:1], steps=10, observe=["body_pose"])
    with client.open_step_stream() as stream:
        streamed = stream.step(ids[1:], steps=10, observe=["body_pose"])
    np.testing.assert_array_equal(unary.body_pose[0], streamed.body_pose[0])


# -- authentication (a second server with a token) ---------------------------------------------


@pytest.fixture(scope="module")
def token_server(server_binary):
    process = start_server(server_binary, env={"AXION_AUTH_TOKEN": "s3cret"})
    yield process
    process.stop()


def test_token_is_required_and_accepted(token_server):
    with axion.Client(token_server.target) as anonymous:
        with pytest.raises(axion.Unauthenticated):
            anonymous.list_worlds()
    with axion.Client(token_server.target, token="wrong") as wrong:
        with pytest.raises(axion.Unauthenticated):
            wrong.list_worlds()
    with axion.Client(token_server.target, token="s3cret") as good:
        assert good.list_worlds() == []


# -- TLS (a third server with a self-signed certificate) ---------------------------------------


@pytest.fixture(scope="module")
def tls_server(server_binary, tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate for the TLS test")
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "server.pem", directory / "server.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60)
    process = start_server(server_binary, [f"--tls_cert={cert}", f"--tls_key={key}"],
                           client_options={"tls": True, "root_certificates": cert})
    process.certificate = cert
    yield process
    process.stop()


def test_tls_connection_with_trusted_certificate(tls_server):
    cert = tls_server.certificate
    for root in (cert, cert.read_bytes(), str(cert)):  # a path or the PEM itself
        with axion.Client(tls_server.target, tls=True, root_certificates=root) as secure:
            assert secure.health() == "SERVING"
            world = secure.create_worlds(PENDULUM_MJCF).world_ids[0]
            assert secure.destroy_worlds([world]) == [world]
    with axion.Client(tls_server.target, timeout=5, retries=0) as plaintext:
        with pytest.raises(axion.Unavailable):
            plaintext.list_worlds()


# -- deadlines and retries (a scripted in-process server) --------------------------------------


class ScriptedSimulation(axion_pb2_grpc.SimulationServicer):
    """Answers ListWorlds with UNAVAILABLE `failures` times, CreateWorlds always UNAVAILABLE,
    and Step after `step_delay` seconds; counts the calls."""

    def __init__(self, failures=0, step_delay=0.0):
        self.failures = failures
        self.step_delay = step_delay
        self.calls = {"ListWorlds": 0, "CreateWorlds": 0, "Step": 0}
        self.lock = threading.Lock()

    def ListWorlds(self, request, context):
        with self.lock:
            self.calls["ListWorlds"] += 1
            fail = self.calls["ListWorlds"] <= self.failures
        if fail:
            context.abort(grpc.StatusCode.UNAVAILABLE, "warming up")
        return axion.pb.ListWorldsResponse(
            worlds=[axion.pb.WorldInfo(world_id=7, model_name="m", step_count=3, time=0.5)])

    def CreateWorlds(self, request, context):
        with self.lock:
            self.calls["CreateWorlds"] += 1
        context.abort(grpc.StatusCode.UNAVAILABLE, "draining")

    def Step(self, request, context):
        with self.lock:
            self.calls["Step"] += 1
        time.sleep(self.step_delay)
        return axion.pb.StepResponse()


@pytest.fixture
def scripted():
    servicers = []

    def start(**kwargs):
        servicer = ScriptedSimulation(**kwargs)
        server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
        axion_pb2_grpc.add_SimulationServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servicers.append(server)
        return servicer, f"127.0.0.1:{port}"

    yield start
    for server in servicers:
        server.stop(0)


def test_idempotent_reads_are_retried_on_unavailable(scripted):
    servicer, target = scripted(failures=2)
    with axion.Client(target, retries=4, timeout=10) as c:
        worlds = c.list_worlds()
    assert servicer.calls["ListWorlds"] == 3
    assert worlds == [axion.WorldInfo(7, "m", 3, 0.5)]


def test_retries_give_up_with_unavailable(scripted):
    servicer, target = scripted(failures=100)
    with axion.Client(target, retries=2, timeout=10) as c:
        with pytest.raises(axion.Unavailable, match="warming up"):
            c.list_worlds()
    assert servicer.calls["ListWorlds"] == 3


def test_calls_that_change_worlds_are_not_retried(scripted):
    servicer, target = scripted()
    with axion.Client(target, retries=4, timeout=10) as c:
        with pytest.raises(axion.Unavailable, match="draining"):
            c.create_worlds(PENDULUM_MJCF)
    assert servicer.calls["CreateWorlds"] == 1


def test_deadline_exceeded(scripted):
    _, target = scripted(step_delay=2.0)
    with axion.Client(target, timeout=10) as c:
        with pytest.raises(axion.DeadlineExceeded):
            c.step([1], timeout=0.2)
