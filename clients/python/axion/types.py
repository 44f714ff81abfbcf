"""Plain Python views of the API's messages, with numpy arrays in place of packed bytes.

Bulk arrays on the wire are packed little-endian float32 (see proto/axion/v1/axion.proto); they
are decoded with np.frombuffer and reshaped, never element by element. For worlds of one scene
every array is a single ndarray with the world on the leading axis; for a request mixing worlds
of different scenes (different sizes) it is a list with one array per world.
"""

import dataclasses
from typing import List, Optional, Sequence, Union

import numpy as np

from axion._proto import axion_pb2 as pb

ArrayOrList = Union[np.ndarray, List[np.ndarray]]

# The observations every world has; "all" asks for these.
OBSERVATION_FIELDS = (
    "body_pose",
    "body_velocity",
    "joint_position",
    "joint_velocity",
    "body_contact_force",
    "contacts",
    "stats",
    "controls",
    "mocap_pose",
    "actuator_force",
    "tendon_state",
    "activation",
)
# The state in the scene file's own coordinates (MuJoCo's qpos and qvel) and its MJCF sensors
# (MuJoCo's sensordata), asked for by name: only worlds of an MJCF or URDF file have them
# (others raise axion.FailedPrecondition).
FILE_OBSERVATION_FIELDS = ("file_position", "file_velocity", "sensor_data")


def _enum_name(enum_type, value, prefix):
    """'JOINT_TYPE_REVOLUTE' -> 'revolute'."""
    return enum_type.Name(value)[len(prefix) :].lower()


@dataclasses.dataclass(frozen=True)
class Layout:
    """Per-world array sizes of one world (from its WorldDescription)."""

    body_count: int
    joint_position_count: int
    joint_dof_count: int
    actuator_count: int
    file_position_count: int = 0  # 0: a scene without a model file
    file_velocity_count: int = 0
    shape_count: int = 0
    mocap_count: int = 0
    sensor_data_count: int = 0
    tendon_count: int = 0

    def field_size(self, field):
        """(values per world, trailing shape) of an observation or parameter field."""
        if field == "body_pose":
            return self.body_count * 7, (self.body_count, 7)
        if field in ("body_velocity", "external_forces"):
            return self.body_count * 6, (self.body_count, 6)
        if field == "body_contact_force":
            return self.body_count * 3, (self.body_count, 3)
        if field == "joint_position":
            return self.joint_position_count, (self.joint_position_count,)
        if field == "joint_velocity":
            return self.joint_dof_count, (self.joint_dof_count,)
        if field in ("controls", "actuator_force", "activation"):
            return self.actuator_count, (self.actuator_count,)
        if field == "file_position":
            return self.file_position_count, (self.file_position_count,)
        if field == "file_velocity":
            return self.file_velocity_count, (self.file_velocity_count,)
        if field == "mocap_pose":
            return self.mocap_count * 7, (self.mocap_count, 7)
        if field == "sensor_data":
            return self.sensor_data_count, (self.sensor_data_count,)
        if field == "tendon_state":
            return self.tendon_count * 2, (self.tendon_count, 2)
        if field == "body_mass":
            return self.body_count, (self.body_count,)
        if field == "body_com":
            return self.body_count * 3, (self.body_count, 3)
        if field == "shape_size":
            return self.shape_count * 3, (self.shape_count, 3)
        if field.startswith("shape_"):
            return self.shape_count, (self.shape_count,)
        if field.startswith("dof_"):
            return self.joint_dof_count, (self.joint_dof_count,)
        if field.startswith("actuator_"):
            return self.actuator_count, (self.actuator_count,)
        if field in ("gravity", "fluid_wind"):
            return 3, (3,)
        raise KeyError(field)


@dataclasses.dataclass(frozen=True)
class JointInfo:
    """A joint's slice of the per-world joint arrays."""

    name: str
    type: str  # revolute, prismatic, ball, fixed, generic or universal
    position_offset: int  # first index in joint_position
    position_count: int  # coordinates in joint_position (ball: 4, a quaternion w x y z)
    dof_offset: int  # first index in joint_velocity
    dof_count: int  # coordinates in joint_velocity
    parent_body: int = -1  # body index; -1: the world
    child_body: int = 0

    @classmethod
    def from_proto(cls, message):
        return cls(
            name=message.name,
            type=_enum_name(pb.JointType, message.type, "JOINT_TYPE_"),
            position_offset=message.position_offset,
            position_count=message.position_count,
            dof_offset=message.dof_offset,
            dof_count=message.dof_count,
            parent_body=message.parent_body,
            child_body=message.child_body,
        )


@dataclasses.dataclass(frozen=True)
class ActuatorInfo:
    """An actuator's control slot; its index in WorldDescription.actuators is its control index."""

    name: str
    type: str  # effort, position or velocity
    ctrl_limited: bool
    ctrl_min: float
    ctrl_max: float
    # the force (N or N m) the actuator applies stays within [force_min, force_max]
    force_limited: bool = False
    force_min: float = 0.0
    force_max: float = 0.0
    # what it drives, the others -1: a joint's DOF (indices into WorldDescription.joints and
    # that joint's DOFs), a tendon, a body pushed through a site, or a body pulled onto what
    # it touches (MJCF's <adhesion>)
    joint: int = -1
    dof: int = -1
    tendon: int = -1
    site_body: int = -1
    adhesion_body: int = -1

    @classmethod
    def from_proto(cls, message):
        return cls(
            name=message.name,
            type=_enum_name(pb.ActuatorType, message.type, "ACTUATOR_TYPE_"),
            ctrl_limited=message.ctrl_limited,
            ctrl_min=message.ctrl_min,
            ctrl_max=message.ctrl_max,
            force_limited=message.force_limited,
            force_min=message.force_min,
            force_max=message.force_max,
            joint=message.joint,
            dof=message.dof,
            tendon=message.tendon,
            site_body=message.site_body,
            adhesion_body=message.adhesion_body,
        )


@dataclasses.dataclass(frozen=True)
class SourceBody:
    """Where a body (MJCF) or link (URDF) of the scene's file went."""

    name: str
    body: int  # index of the body that carries it in body_names; -1: static (the world)
    # pose of its frame in that body's frame (world frame when static): position xyz (m),
    # quaternion w x y z; the identity for a body of its own
    offset: np.ndarray  # (7,) float64
    # the mocap body (index into mocap_names) it rides on, offset then in its frame; -1: none
    mocap: int = -1

    @classmethod
    def from_proto(cls, message):
        p, q = message.offset.pos, message.offset.quat
        quat = (q.w, q.x, q.y, q.z) if message.offset.HasField("quat") else (1.0, 0.0, 0.0, 0.0)
        return cls(
            name=message.name,
            body=message.body,
            offset=np.array((p.x, p.y, p.z) + quat, dtype=np.float64),
            mocap=message.mocap.value if message.HasField("mocap") else -1,
        )


@dataclasses.dataclass(frozen=True)
class SourceJoint:
    """Where a joint of the scene's file went, and where its coordinates lie in the file
    coordinates (Observations.file_position and file_velocity: MuJoCo's qpos and qvel)."""

    name: str
    joint: int  # index in WorldDescription.joints; -1: none (free, floating or fixed joint)
    dof: int  # its coordinate: joint_velocity[joints[joint].dof_offset + dof]
    # its kind in the file: hinge, slide, ball, free, fixed or planar ("unspecified": not
    # recorded, a world stored by an older server, which then has no file coordinates)
    kind: str = "unspecified"
    file_body: int = -1  # index in WorldDescription.source_bodies of the body it moves
    # file_position[file_position_offset : + file_position_count] are its coordinates (MuJoCo's
    # jnt_qposadr; free: position and quaternion w x y z, 7; ball: quaternion, 4; hinge and
    # slide: 1) and file_velocity[file_velocity_offset : + file_velocity_count] its velocities
    # (jnt_dofadr; free: 6, ball: 3, hinge and slide: 1)
    file_position_offset: int = 0
    file_position_count: int = 0
    file_velocity_offset: int = 0
    file_velocity_count: int = 0

    @classmethod
    def from_proto(cls, message):
        return cls(
            name=message.name,
            joint=message.joint,
            dof=message.dof,
            kind=_enum_name(pb.SourceJointKind, message.kind, "SOURCE_JOINT_KIND_"),
            file_body=message.file_body,
            file_position_offset=message.file_position_offset,
            file_position_count=message.file_position_count,
            file_velocity_offset=message.file_velocity_offset,
            file_velocity_count=message.file_velocity_count,
        )


@dataclasses.dataclass(frozen=True)
class SourceSensor:
    """One MJCF sensor the server reads: its values are
    sensor_data[..., offset : offset + dim] (MuJoCo's sensor_adr and sensor_dim)."""

    name: str  # "" when unnamed
    type: str  # MuJoCo's element name: touch, gyro, jointpos, framequat, subtreecom, ...
    offset: int
    dim: int

    @classmethod
    def from_proto(cls, message):
        return cls(
            name=message.name,
            type=_enum_name(pb.SensorType, message.type, "SENSOR_TYPE_"),
            offset=message.offset,
            dim=message.dim,
        )


def _quat_multiply(a, b):
    """Hamilton product of (..., 4) arrays w x y z."""
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack(
        (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ),
        axis=-1,
    )


def _quat_rotate(q, v):
    """Rotates (..., 3) vectors v by (..., 4) unit quaternions q (w x y z)."""
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


@dataclasses.dataclass(frozen=True)
class WorldDescription:
    """Names, order and per-world array sizes of a world."""

    model_name: str
    body_names: List[str]
    shape_names: List[str]
    joints: List[JointInfo]
    actuators: List[ActuatorInfo]
    body_count: int
    joint_position_count: int
    joint_dof_count: int
    actuator_count: int
    contact_capacity: int
    timestep: float  # s
    # where the bodies and joints of an MJCF or URDF file went, in file order (empty for a
    # scene given as a ModelDescription)
    source_bodies: List[SourceBody] = dataclasses.field(default_factory=list)
    # the file's sites (MJCF <site>), in MuJoCo's order: carrier body and offset, as
    # source_bodies (see source_site_poses)
    source_sites: List[SourceBody] = dataclasses.field(default_factory=list)
    source_joints: List[SourceJoint] = dataclasses.field(default_factory=list)
    # keyframes of the scene in index order (Client.reset(keyframe=) takes a name or an index;
    # unnamed ones are ""); their states are in the ModelDescription (Client.get_model)
    keyframe_names: List[str] = dataclasses.field(default_factory=list)
    # per-world lengths of the file coordinates, observations file_position (Pf: MuJoCo's nq
    # for MJCF) and file_velocity (Df: nv); 0 for a scene given as a ModelDescription
    file_position_count: int = 0
    file_velocity_count: int = 0
    # mocap bodies (MuJoCo's mocap="true") in index order: mocap_pose is (M x 7)
    mocap_names: List[str] = dataclasses.field(default_factory=list)
    # the file's sensors (MJCF <sensor>) the server reads, in file order; sensor_data is
    # (sensor_data_count,) per world (see sensor)
    source_sensors: List[SourceSensor] = dataclasses.field(default_factory=list)
    sensor_data_count: int = 0
    # tendons (fixed and spatial) in index order: tendon_state is (T x 2)
    tendon_names: List[str] = dataclasses.field(default_factory=list)

    @classmethod
    def from_proto(cls, message):
        return cls(
            model_name=message.model_name,
            body_names=list(message.body_names),
            shape_names=list(message.shape_names),
            joints=[JointInfo.from_proto(j) for j in message.joints],
            actuators=[ActuatorInfo.from_proto(a) for a in message.actuators],
            body_count=message.body_count,
            joint_position_count=message.joint_position_count,
            joint_dof_count=message.joint_dof_count,
            actuator_count=message.actuator_count,
            contact_capacity=message.contact_capacity,
            timestep=message.timestep,
            source_bodies=[SourceBody.from_proto(b) for b in message.source.bodies],
            source_sites=[SourceBody.from_proto(s) for s in message.source.sites],
            source_joints=[SourceJoint.from_proto(j) for j in message.source.joints],
            keyframe_names=list(message.keyframe_names),
            file_position_count=message.file_position_count,
            file_velocity_count=message.file_velocity_count,
            mocap_names=list(message.mocap_names),
            source_sensors=[SourceSensor.from_proto(s) for s in message.source.sensors],
            sensor_data_count=message.sensor_data_count,
            tendon_names=list(message.tendon_names),
        )

    def sensor(self, name, sensor_data):
        """The values of the sensor called `name` from sensor_data (... x sensor_data_count):
        (... x dim)."""
        for s in self.source_sensors:
            if s.name == name:
                return np.asarray(sensor_data)[..., s.offset : s.offset + s.dim]
        known = ", ".join(s.name for s in self.source_sensors if s.name)
        raise KeyError(f"no sensor '{name}' (the scene's: {known or 'none'})")

    def source_body_poses(self, body_pose, mocap_pose=None):
        """World poses of the file's bodies from body_pose (... x body_count x 7) and, for
        bodies on mocap bodies, mocap_pose (... x mocap_count x 7).

        Returns (... x len(source_bodies) x 7): position xyz, quaternion w x y z, in file order,
        as the file's own simulator reports them (MuJoCo's xpos and xquat), merged bodies
        included.
        """
        return self._frame_poses(self.source_bodies, body_pose, mocap_pose)

    def source_site_poses(self, body_pose, mocap_pose=None):
        """World poses of the file's sites from body_pose (... x body_count x 7) and, for sites
        on mocap bodies, mocap_pose (... x mocap_count x 7; None: the initial poses are not
        known here, so such sites need it).

        Returns (... x len(source_sites) x 7): position xyz, quaternion w x y z, in MuJoCo's site
        order (its site_xpos, and site_xmat as a quaternion).
        """
        return self._frame_poses(self.source_sites, body_pose, mocap_pose)

    def _frame_poses(self, frames, body_pose, mocap_pose=None):
        """World poses of frames (SourceBody: carrier and offset) from body_pose."""
        body_pose = np.asarray(body_pose, dtype=np.float64)
        if body_pose.shape[-2:] != (self.body_count, 7):
            raise ValueError(
                f"body_pose: shape {body_pose.shape}, expected (..., {self.body_count}, 7)"
            )
        offsets = np.array([b.offset for b in frames], dtype=np.float64).reshape(-1, 7)
        carriers = np.array([b.body for b in frames], dtype=np.int64)
        mocaps = np.array([b.mocap for b in frames], dtype=np.int64)
        moving = carriers >= 0
        riding = mocaps >= 0
        if riding.any():
            if mocap_pose is None:
                raise ValueError("frames on mocap bodies: pass mocap_pose (observe 'mocap_pose')")
            mocap_pose = np.asarray(mocap_pose, dtype=np.float64)
        # a static body's offset is its world pose
        carrier = np.broadcast_to(
            np.array((0, 0, 0, 1, 0, 0, 0), dtype=np.float64),
            body_pose.shape[:-2] + (len(carriers), 7),
        ).copy()
        carrier[..., moving, :] = body_pose[..., carriers[moving], :]
        if riding.any():
            carrier[..., riding, :] = mocap_pose[..., mocaps[riding], :]
        position = carrier[..., :3] + _quat_rotate(carrier[..., 3:], offsets[:, :3])
        quat = _quat_multiply(carrier[..., 3:], offsets[:, 3:])
        return np.concatenate((position, quat), axis=-1)

    @property
    def free_bodies(self):
        """Indices of the bodies no joint moves (free bodies, floating bases): their state is
        their body pose and velocity, where the others' follows from their joints."""
        children = {joint.child_body for joint in self.joints}
        return [b for b in range(self.body_count) if b not in children]

    @property
    def layout(self):
        return Layout(
            self.body_count,
            self.joint_position_count,
            self.joint_dof_count,
            self.actuator_count,
            self.file_position_count,
            self.file_velocity_count,
            len(self.shape_names),
            len(self.mocap_names),
            self.sensor_data_count,
            len(self.tendon_names),
        )

    def ctrl_range(self):
        """(low, high) float32 arrays of shape (actuator_count,); +-inf where unlimited."""
        low = np.full(self.actuator_count, -np.inf, dtype=np.float32)
        high = np.full(self.actuator_count, np.inf, dtype=np.float32)
        for index, actuator in enumerate(self.actuators):
            if actuator.ctrl_limited:
                low[index] = actuator.ctrl_min
                high[index] = actuator.ctrl_max
        return low, high


@dataclasses.dataclass(frozen=True)
class CreatedWorlds:
    """Result of Client.create_worlds."""

    world_ids: List[int]
    description: WorldDescription
    warnings: List[str]


@dataclasses.dataclass(frozen=True)
class WorldInfo:
    """One entry of Client.list_worlds."""

    world_id: int
    model_name: str
    step_count: int
    time: float  # s


@dataclasses.dataclass(frozen=True)
class Contacts:
    """Active contacts of several worlds; contacts of world i follow those of world i-1."""

    count: np.ndarray  # (world_count,) int32
    body: np.ndarray  # (total_contacts x 2) int32: body a, body b (-1: static geometry)
    data: np.ndarray  # (total_contacts x 10) float32: position xyz, normal xyz, gap, force xyz
    # (total_contacts x 3) float32: torsional and rolling friction's torque on a (N m, world
    # frame; zero below contact dimension 4)
    torque: Optional[np.ndarray] = None

    @property
    def position(self):  # (total_contacts x 3) m, world frame
        return self.data[:, 0:3]

    @property
    def normal(self):  # (total_contacts x 3) unit, from b to a
        return self.data[:, 3:6]

    @property
    def gap(self):  # (total_contacts,) m, negative when penetrating
        return self.data[:, 6]

    @property
    def force(self):  # (total_contacts x 3) N, on body a, world frame
        return self.data[:, 7:10]

    def world_slice(self, world_index):
        """Rows of `body`/`data` that belong to the world at `world_index` of the request."""
        start = int(self.count[:world_index].sum())
        return slice(start, start + int(self.count[world_index]))


@dataclasses.dataclass(frozen=True)
class WorldStats:
    """Solver statistics of each world's last step call; every array is (world_count,)."""

    newton_iterations: np.ndarray  # int32
    cr_iterations: np.ndarray  # int32
    residual: np.ndarray  # float64, m/s
    contact_count: np.ndarray  # int32
    constraint_rows: np.ndarray  # int32
    # uint32: 1 not converged, 2 contact overflow, 4 non-finite (frozen), 8 pair overflow
    flags: np.ndarray
    step_count: np.ndarray  # uint64
    time: np.ndarray  # float64, s
    substeps: np.ndarray  # int32: 1, or more where a failed solve halved the step
    island_count: np.ndarray  # int32: sets of bodies joints and contacts connect, solved apart
    # int32: returns of the step to its start for a missed or misjudged contact
    contact_redos: np.ndarray
    # int32: line-search trials summed over Newton iterations (1 each where none was halved)
    line_search_trials: np.ndarray

    FLAG_NOT_CONVERGED = 1
    FLAG_CONTACT_OVERFLOW = 2
    FLAG_NON_FINITE = 4
    FLAG_PAIR_OVERFLOW = 8

    @classmethod
    def from_proto(cls, message):
        return cls(
            newton_iterations=np.asarray(message.newton_iterations, dtype=np.int32),
            cr_iterations=np.asarray(message.cr_iterations, dtype=np.int32),
            residual=np.asarray(message.residual, dtype=np.float64),
            contact_count=np.asarray(message.contact_count, dtype=np.int32),
            constraint_rows=np.asarray(message.constraint_rows, dtype=np.int32),
            flags=np.asarray(message.flags, dtype=np.uint32),
            step_count=np.asarray(message.step_count, dtype=np.uint64),
            time=np.asarray(message.time, dtype=np.float64),
            substeps=np.asarray(message.substeps, dtype=np.int32),
            island_count=np.asarray(message.island_count, dtype=np.int32),
            contact_redos=np.asarray(message.contact_redos, dtype=np.int32),
            line_search_trials=np.asarray(message.line_search_trials, dtype=np.int32),
        )


@dataclasses.dataclass(frozen=True)
class Observations:
    """Observations of several worlds; a field is None unless it was requested.

    Shapes for worlds of one scene (W worlds, B bodies, P joint coordinates, D DOF, A actuators,
    Pf and Df the file coordinates' lengths, WorldDescription.file_position_count and
    file_velocity_count):
      body_pose (W x B x 7): position xyz (m), quaternion w x y z, world frame
      body_velocity (W x B x 6): linear (m/s) then angular (rad/s) velocity, world frame
      joint_position (W x P), joint_velocity (W x D), body_contact_force (W x B x 3) N,
      controls (W x A), mocap_pose (W x M x 7): the mocap bodies' positions and quaternions,
      actuator_force (W x A): each actuator's force along its DOF or tendon (N or N m, gear
        included; a site actuator's, the scale of its wrench), servos' at the world's state.
      file_position (W x Pf), file_velocity (W x Df): the state in the scene file's own
        coordinates, file joint by file joint (SourceJoint.file_position_offset, ...): for
        MJCF MuJoCo's qpos and qvel exactly (a free joint's position, quaternion w x y z,
        linear velocity in the world frame and angular velocity in the body frame; a ball's
        quaternion and body-frame angular velocity; hinge angles, merged hinges included, and
        slide displacements); for URDF each moving joint's coordinates.
      sensor_data (W x S): the MJCF file's sensors, MuJoCo's sensordata for the world's state
        (WorldDescription.source_sensors: each one's offset and dim; S its sensor_data_count).
      tendon_state (W x T x 2): each tendon's length (m, or rad for a fixed tendon over hinges)
        and rate, MuJoCo's ten_length and ten_velocity (WorldDescription.tendon_names).
      activation (W x A): each actuator's activation, which follows its control (a muscle's in
        [0, 1] with its time constants, or an actuator's with dynamics; MuJoCo's act, per
        actuator); 0 for actuators without one.
    """

    world_ids: List[int]
    body_pose: Optional[ArrayOrList] = None
    body_velocity: Optional[ArrayOrList] = None
    joint_position: Optional[ArrayOrList] = None
    joint_velocity: Optional[ArrayOrList] = None
    body_contact_force: Optional[ArrayOrList] = None
    controls: Optional[ArrayOrList] = None
    file_position: Optional[ArrayOrList] = None
    file_velocity: Optional[ArrayOrList] = None
    mocap_pose: Optional[ArrayOrList] = None
    actuator_force: Optional[ArrayOrList] = None
    sensor_data: Optional[ArrayOrList] = None
    tendon_state: Optional[ArrayOrList] = None
    activation: Optional[ArrayOrList] = None
    contacts: Optional[Contacts] = None
    stats: Optional[WorldStats] = None


# Physical parameters of a world (Client.get_parameters, set_parameters), as
# axion.v1.WorldParameters carries them.
PARAMETER_FIELDS = (
    "body_mass",
    "body_com",
    "shape_friction",
    "shape_restitution",
    "shape_size",
    "shape_torsional_friction",
    "shape_rolling_friction",
    "dof_stiffness",
    "dof_damping",
    "dof_armature",
    "dof_friction_loss",
    "actuator_gear",
    "actuator_kp",
    "actuator_kv",
    "gravity",
    "fluid_wind",
)


@dataclasses.dataclass
class Parameters:
    """Physical parameters of several worlds (domain randomisation), float32.

    Shapes for W worlds of one scene (B bodies, S shapes, D DOF, A actuators); a list of
    per-world arrays where the worlds' scenes differ:
      body_mass (W x B) kg, > 0; setting it scales the body's inertia alike.
      body_com (W x B x 3) m: centre of mass in the body frame (the body frame stays put).
      shape_friction (W x S) >= 0; shape_restitution (W x S) in [0, 1].
      shape_torsional_friction, shape_rolling_friction (W x S) m, >= 0: where a contact's
        dimension is 4 (torsion) or 6 (both).
      shape_size (W x S x 3) m, as ShapeDesc::size (a sphere's radius, a capsule's or
        cylinder's radius and half length, a box's half extents); planes and convex hulls keep
        theirs. Masses and inertias stay as they are (set body_mass with them).
      dof_stiffness, dof_damping, dof_armature, dof_friction_loss (W x D) >= 0: the joints'
        springs, dampers, rotor inertias and dry friction per DOF. A value that is zero in the
        scene stays zero (and a non-zero one non-zero): those decide the joint's constraint
        rows, and the server refuses a change, naming the joint.
      actuator_gear, actuator_kp, actuator_kv (W x A): an effort actuator's gear, a servo's
        gains (>= 0).
      gravity (W x 3) m/s^2.
      fluid_wind (W x 3) m/s: the medium's velocity, where the scene has a fluid.
    A value equal to what get_parameters returned keeps the world's exact value, so arrays
    read, partly changed and written back change only what was changed.
    """

    world_ids: List[int]
    body_mass: Optional[ArrayOrList] = None
    body_com: Optional[ArrayOrList] = None
    shape_friction: Optional[ArrayOrList] = None
    shape_restitution: Optional[ArrayOrList] = None
    shape_size: Optional[ArrayOrList] = None
    shape_torsional_friction: Optional[ArrayOrList] = None
    shape_rolling_friction: Optional[ArrayOrList] = None
    dof_stiffness: Optional[ArrayOrList] = None
    dof_damping: Optional[ArrayOrList] = None
    dof_armature: Optional[ArrayOrList] = None
    dof_friction_loss: Optional[ArrayOrList] = None
    actuator_gear: Optional[ArrayOrList] = None
    actuator_kp: Optional[ArrayOrList] = None
    actuator_kv: Optional[ArrayOrList] = None
    gravity: Optional[ArrayOrList] = None
    fluid_wind: Optional[ArrayOrList] = None


def decode_parameters(world_ids, message, layouts):
    """Parameters from an axion.v1.WorldParameters message of `world_ids` (one Layout each)."""
    ids = list(world_ids)
    return Parameters(
        world_ids=ids,
        **{
            field: unpack_float32(getattr(message, field), len(ids), layouts, field)
            for field in PARAMETER_FIELDS
        },
    )


def observation_request(observe):
    """An ObservationRequest from field names, 'all', None or an ObservationRequest.

    'all' is OBSERVATION_FIELDS, what every world has; the file coordinates
    (FILE_OBSERVATION_FIELDS) are asked for by name.
    """
    if isinstance(observe, pb.ObservationRequest):
        return observe
    request = pb.ObservationRequest()
    if observe is None:
        return request
    if isinstance(observe, str):
        observe = OBSERVATION_FIELDS if observe == "all" else (observe,)
    names = OBSERVATION_FIELDS + FILE_OBSERVATION_FIELDS
    for name in observe:
        if name not in names:
            raise ValueError(f"unknown observation '{name}'; expected one of {', '.join(names)}")
        setattr(request, name, True)
    return request


def unpack_float32(data, world_count, layouts, field):
    """Decodes one packed float32 field of `world_count` worlds with the given layouts."""
    values = np.frombuffer(data, dtype="<f4")
    sizes = [layout.field_size(field) for layout in layouts]
    if all(size == sizes[0] for size in sizes):
        per_world, shape = sizes[0]
        if values.size != per_world * world_count:
            raise ValueError(
                f"{field}: {values.size} values for {world_count} worlds of {per_world} each"
            )
        # astype copies into a writable, native-endian array the caller may modify.
        return values.reshape((world_count,) + shape).astype(np.float32)
    expected = sum(per_world for per_world, _ in sizes)
    if values.size != expected:
        raise ValueError(f"{field}: {values.size} values where the worlds' sizes add to {expected}")
    result, start = [], 0
    for per_world, shape in sizes:
        result.append(values[start : start + per_world].reshape(shape).astype(np.float32))
        start += per_world
    return result


def decode_observations(message, layouts, requested=None):
    """Observations from an axion.v1.Observations message; `layouts` is one Layout per world.

    `requested` (an ObservationRequest) marks fields that were asked for: those are decoded even
    when empty on the wire (zero-size arrays, e.g. controls of a scene without actuators).
    """
    world_ids = list(message.world_ids)
    world_count = len(world_ids)
    fields = {}
    for field in (
        "body_pose",
        "body_velocity",
        "joint_position",
        "joint_velocity",
        "body_contact_force",
        "controls",
        "file_position",
        "file_velocity",
        "mocap_pose",
        "actuator_force",
        "sensor_data",
        "tendon_state",
        "activation",
    ):
        data = getattr(message, field)
        if data or (requested is not None and getattr(requested, field)):
            fields[field] = unpack_float32(data, world_count, layouts, field)
    if message.HasField("contacts"):
        contacts = message.contacts
        fields["contacts"] = Contacts(
            count=np.asarray(contacts.count, dtype=np.int32),
            body=np.frombuffer(contacts.body, dtype="<i4").reshape(-1, 2).astype(np.int32),
            data=np.frombuffer(contacts.data, dtype="<f4").reshape(-1, 10).astype(np.float32),
            torque=np.frombuffer(contacts.torque, dtype="<f4").reshape(-1, 3).astype(np.float32),
        )
    if message.HasField("stats"):
        fields["stats"] = WorldStats.from_proto(message.stats)
    return Observations(world_ids=world_ids, **fields)


def pack_float32(values, field, world_count):
    """Packs an array (world_count x ...) or a list of per-world arrays as float32 bytes.

    None and empty input give b"" (the server keeps the current values). Sizes are checked by
    the server, whose INVALID_ARGUMENT message names the world and the field.
    """
    if values is None:
        return b""
    if isinstance(values, (list, tuple)) and values and isinstance(values[0], np.ndarray):
        if world_count is not None and len(values) != world_count:
            raise ValueError(f"{field}: {len(values)} per-world arrays for {world_count} worlds")
        values = np.concatenate([np.ravel(v) for v in values])
    return np.ascontiguousarray(values, dtype="<f4").tobytes()


def world_id_list(world_ids: Union[int, Sequence[int], np.ndarray]):
    """A list of Python ints from an id, a sequence of ids or an integer array."""
    if isinstance(world_ids, (int, np.integer)):
        return [int(world_ids)]
    return [int(w) for w in world_ids]
