"""Python client of the Axion simulation server (gRPC service axion.v1.Simulation).

    import axion
    client = axion.Client("localhost:50051")
    worlds = client.create_worlds("humanoid.xml", count=8)
    obs = client.step(worlds.world_ids, steps=10, observe=["joint_position"])
    obs.joint_position  # (8 x joint_position_count) float32
    # the state in the model file's own coordinates: MuJoCo's qpos and qvel for MJCF
    obs = client.get_state(worlds.world_ids, observe=["file_position", "file_velocity"])
    obs.file_position  # (8 x description.file_position_count)

axion.VectorEnv runs N worlds of one model over one open stream for training loops; the
Gymnasium wrapper is axion.gym.AxionVectorEnv (needs the [gym] extra).
"""

from axion._proto import axion_pb2 as pb
from axion.client import DEFAULT_TARGET, Client, StepStream, solver_options
from axion.errors import (
    Aborted,
    AlreadyExists,
    AxionError,
    Cancelled,
    DataLoss,
    DeadlineExceeded,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    OutOfRange,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
    Unimplemented,
    Unknown,
)
from axion.scene import heightfield_shape, make_scene
from axion.types import (
    PARAMETER_FIELDS,
    ActuatorInfo,
    Contacts,
    CreatedWorlds,
    JointInfo,
    Layout,
    Observations,
    Parameters,
    SourceBody,
    SourceJoint,
    WorldDescription,
    WorldInfo,
    WorldStats,
)
from axion.vector_env import VectorEnv

__version__ = "0.1.0"

__all__ = [
    "pb",
    "DEFAULT_TARGET",
    "Client",
    "StepStream",
    "VectorEnv",
    "make_scene",
    "heightfield_shape",
    "PARAMETER_FIELDS",
    "solver_options",
    "ActuatorInfo",
    "Contacts",
    "CreatedWorlds",
    "JointInfo",
    "Layout",
    "Observations",
    "Parameters",
    "SourceBody",
    "SourceJoint",
    "WorldDescription",
    "WorldInfo",
    "WorldStats",
    "AxionError",
    "Aborted",
    "AlreadyExists",
    "Cancelled",
    "DataLoss",
    "DeadlineExceeded",
    "FailedPrecondition",
    "Internal",
    "InvalidArgument",
    "NotFound",
    "OutOfRange",
    "PermissionDenied",
    "ResourceExhausted",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
    "Unknown",
]
