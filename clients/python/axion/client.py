"""axion.Client: typed access to every call of axion.v1.Simulation, numpy arrays in and out."""

import collections
import os
import queue
import random
import threading
import time

import grpc
import numpy as np

from axion import errors
from axion import health as health_check
from axion._proto import axion_pb2 as pb
from axion._proto import axion_pb2_grpc as pb_grpc
from axion.scene import make_scene
from axion.types import (
    PARAMETER_FIELDS,
    CreatedWorlds,
    WorldDescription,
    WorldInfo,
    decode_observations,
    decode_parameters,
    observation_request,
    pack_float32,
    world_id_list,
)

DEFAULT_TARGET = "localhost:50051"

_FORMULATIONS = {
    "position": pb.FORMULATION_POSITION,
    "velocity": pb.FORMULATION_VELOCITY,
}
_PRECONDITIONERS = {
    "jacobi": pb.PRECONDITIONER_JACOBI,
    "tree": pb.PRECONDITIONER_TREE,
}
_FRICTION_COMBINES = {
    "geometric_mean": pb.FRICTION_COMBINE_GEOMETRIC_MEAN,
    "max": pb.FRICTION_COMBINE_MAX,
}
# SolverOptions enum fields given by name: the names, and whether any case is accepted.
_ENUM_OPTIONS = {
    "joint_formulation": (_FORMULATIONS, False),
    "contact_formulation": (_FORMULATIONS, False),
    "preconditioner": (_PRECONDITIONERS, True),
    "friction_combine": (_FRICTION_COMBINES, True),
}
# SolverOptions fields held in google.protobuf wrapper messages (set through `.value`).
_WRAPPED_OPTIONS = (
    "timestep",
    "baumgarte",
    "contact_margin",
    "newton_iterations",
    "newton_stall_iterations",
    "newton_tail_iterations",
    "newton_tail_residual",
    "cr_iterations",
    "newton_tolerance",
    "cr_tolerance",
    "line_search",
    "line_search_steps",
    "line_search_growth",
    "strict_after_cycle",
    "fb_epsilon",
    "speculative_contacts",
    "contact_compliance",
    "max_depenetration_speed",
    "fluid_density",
    "fluid_viscosity",
    "friction_newton",
    "step_halvings",
    "halving_iterations",
    "halving_residual",
    "loop_rows",
    "islands",
    "missed_contact_depth",
    "contact_redos",
    "halving_carryover",
    "contact_presolve_sweeps",
)


def solver_options(options):
    """An axion.v1.SolverOptions from a dict such as {"timestep": 0.005, "gravity": (0, 0, 0)}.

    Keys are the SolverOptions field names; the formulations take 'position' or 'velocity',
    the preconditioner 'jacobi' or 'tree', friction_combine 'geometric_mean' or 'max' (any
    case); enum values of the proto are accepted too.
    An axion.v1.SolverOptions is returned as is; None gives an empty (all defaults) message.
    """
    if options is None:
        return pb.SolverOptions()
    if isinstance(options, pb.SolverOptions):
        return options
    message = pb.SolverOptions()
    for key, value in options.items():
        if key in _WRAPPED_OPTIONS:
            getattr(message, key).value = value
        elif key in ("gravity", "fluid_wind"):
            x, y, z = (float(v) for v in value)
            vector = getattr(message, key)
            vector.x, vector.y, vector.z = x, y, z
        elif key in _ENUM_OPTIONS:
            names, any_case = _ENUM_OPTIONS[key]
            if isinstance(value, str):
                name = value.lower() if any_case else value
                if name not in names:
                    raise ValueError(f"{key}: '{value}' is not " + " or ".join(
                        f"'{n}'" for n in names))
                value = names[name]
            setattr(message, key, value)
        else:
            raise ValueError(f"unknown solver option '{key}'")
    return message


def _read_pem(value):
    """PEM bytes from bytes, PEM text, or a path to a PEM file."""
    if value is None or isinstance(value, bytes):
        return value
    text = os.fspath(value)
    if "-----BEGIN" in text:
        return text.encode("ascii")
    with open(text, "rb") as file:
        return file.read()


class Client:
    """A connection to axion-server.

    Args:
      target: "host:port" of the server.
      token: bearer token, sent as `authorization: Bearer <token>` on every call.
      tls: use TLS; `root_certificates` (PEM bytes or a file path; None: system roots),
        `certificate_chain` and `private_key` (mutual TLS) and `server_name` (expected name in
        the server certificate when it differs from the target host) configure it.
      timeout: deadline of each unary call in seconds (None: no deadline); every method also
        takes its own `timeout`.
      client_id: identity sent as `x-axion-client`; worlds belong to the identity that made
        them, and other identities see them as nonexistent.
      retries: extra attempts of idempotent reads (list, describe, get_state, snapshot, health)
        that fail with UNAVAILABLE, with exponential backoff; calls that change worlds are never
        retried.
      max_message_bytes: largest message sent or received (the server's default is 64 MiB).

    Errors are raised as subclasses of axion.AxionError (NotFound, InvalidArgument, ...) that
    carry the server's message and status code.
    """

    def __init__(
        self,
        target=DEFAULT_TARGET,
        token=None,
        tls=False,
        timeout=60.0,
        *,
        client_id=None,
        root_certificates=None,
        certificate_chain=None,
        private_key=None,
        server_name=None,
        retries=4,
        max_message_bytes=64 << 20,
    ):
        self.target = target
        self.timeout = timeout
        self.retries = retries
        options = [
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes),
        ]
        if tls or root_certificates or certificate_chain:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read_pem(root_certificates),
                private_key=_read_pem(private_key),
                certificate_chain=_read_pem(certificate_chain),
            )
            if server_name:
                options.append(("grpc.ssl_target_name_override", server_name))
            self.channel = grpc.secure_channel(target, credentials, options=options)
        else:
            self.channel = grpc.insecure_channel(target, options=options)
        self.metadata = []
        if token:
            self.metadata.append(("authorization", f"Bearer {token}"))
        if client_id:
            self.metadata.append(("x-axion-client", client_id))
        self.stub = pb_grpc.SimulationStub(self.channel)
        self._health = health_check.check_callable(self.channel)
        self._layouts = {}  # world id -> Layout, filled by create_worlds and describe_world
        self._layouts_lock = threading.Lock()

    # -- connection ------------------------------------------------------------------------

    def close(self):
        """Closes the channel; open step streams are cancelled."""
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _deadline(self, timeout):
        timeout = self.timeout if timeout is None else timeout
        return None if timeout is None else time.monotonic() + timeout

    @staticmethod
    def _remaining(deadline):
        return None if deadline is None else max(deadline - time.monotonic(), 0.0)

    def _call(self, method, request, timeout=None, idempotent=False):
        """Runs a unary call; idempotent calls are retried on UNAVAILABLE until the deadline."""
        deadline = self._deadline(timeout)
        attempts = 1 + (self.retries if idempotent else 0)
        backoff = 0.05
        for attempt in range(attempts):
            try:
                return method(request, timeout=self._remaining(deadline), metadata=self.metadata)
            except grpc.RpcError as error:
                retry = (
                    attempt + 1 < attempts
                    and error.code() == grpc.StatusCode.UNAVAILABLE
                    and (deadline is None or time.monotonic() + backoff < deadline)
                )
                if not retry:
                    raise errors.from_rpc_error(error) from None
            # Full jitter keeps many clients that lost the server at once from returning in step.
            time.sleep(backoff * (0.5 + random.random() / 2))
            backoff = min(backoff * 2, 2.0)
        raise AssertionError("unreachable")

    def health(self, service="", timeout=None):
        """The server's health status: 'SERVING', 'NOT_SERVING', ... ('' = the whole server;
        'axion.v1.Simulation' = the simulation service)."""
        response = self._call(
            self._health, health_check.encode_request(service), timeout, idempotent=True
        )
        return health_check.decode_response(response)

    def wait_until_serving(self, timeout=30.0, service=""):
        """Polls the health check until SERVING; raises DeadlineExceeded after `timeout` s."""
        end = time.monotonic() + timeout
        last = "no answer"
        while True:
            try:
                last = self.health(service, timeout=min(1.0, max(end - time.monotonic(), 0.01)))
                if last == "SERVING":
                    return
            except errors.AxionError as error:
                last = str(error)
            if time.monotonic() >= end:
                raise errors.DeadlineExceeded(
                    f"{self.target} not serving after {timeout} s (last: {last})"
                )
            time.sleep(0.05)

    # -- world management ----------------------------------------------------------------

    def create_worlds(
        self,
        scene,
        count=1,
        *,
        solver_options=None,
        contact_capacity=0,
        format=None,
        floating_base=False,
        timeout=None,
    ):
        """Creates `count` worlds of a scene, all in its initial state.

        `scene` is a path to an MJCF or URDF file, XML text, an axion.v1.Scene or an
        axion.v1.ModelDescription (see axion.make_scene). `solver_options` overrides the scene's
        options for these worlds (a dict of SolverOptions fields or the message).
        """
        request = pb.CreateWorldsRequest(
            scene=make_scene(scene, format=format, floating_base=floating_base),
            count=int(count),
            contact_capacity=int(contact_capacity),
        )
        if solver_options is not None:
            request.solver_options.CopyFrom(_solver_options(solver_options))
        response = self._call(self.stub.CreateWorlds, request, timeout)
        description = WorldDescription.from_proto(response.description)
        with self._layouts_lock:
            for world_id in response.world_ids:
                self._layouts[world_id] = description.layout
        return CreatedWorlds(list(response.world_ids), description, list(response.warnings))

    def destroy_worlds(self, world_ids=None, *, all_worlds=False, timeout=None):
        """Destroys the listed worlds (or all of this client's); returns the destroyed ids."""
        if all_worlds == (world_ids is not None):
            raise ValueError("pass either world_ids or all_worlds=True")
        request = pb.DestroyWorldsRequest(all=all_worlds)
        if world_ids is not None:
            request.world_ids.extend(world_id_list(world_ids))
        response = self._call(self.stub.DestroyWorlds, request, timeout)
        with self._layouts_lock:
            for world_id in response.world_ids:
                self._layouts.pop(world_id, None)
        return list(response.world_ids)

    def list_worlds(self, timeout=None):
        """This client's worlds in creation order, as WorldInfo."""
        response = self._call(self.stub.ListWorlds, pb.ListWorldsRequest(), timeout, True)
        return [WorldInfo(w.world_id, w.model_name, w.step_count, w.time) for w in response.worlds]

    def describe_world(self, world_id, timeout=None):
        """Names, order and per-world array sizes of a world (WorldDescription)."""
        request = pb.DescribeWorldRequest(world_id=int(world_id))
        response = self._call(self.stub.DescribeWorld, request, timeout, True)
        description = WorldDescription.from_proto(response.description)
        with self._layouts_lock:
            self._layouts[int(world_id)] = description.layout
        return description

    def get_model(self, world_id, timeout=None):
        """The full scene of a world as compiled (axion.v1.ModelDescription), with the world's
        effective solver options; it can be edited and passed to create_worlds."""
        request = pb.DescribeWorldRequest(world_id=int(world_id), include_model=True)
        return self._call(self.stub.DescribeWorld, request, timeout, True).model

    def layouts(self, world_ids, timeout=None):
        """Per-world array sizes (Layout) of `world_ids`, describing unknown worlds once."""
        ids = world_id_list(world_ids)
        with self._layouts_lock:
            missing = [w for w in dict.fromkeys(ids) if w not in self._layouts]
        if missing:
            deadline = self._deadline(timeout)
            futures = [
                (
                    world_id,
                    self.stub.DescribeWorld.future(
                        pb.DescribeWorldRequest(world_id=world_id),
                        timeout=self._remaining(deadline),
                        metadata=self.metadata,
                    ),
                )
                for world_id in missing
            ]
            for world_id, future in futures:
                try:
                    response = future.result()
                except grpc.RpcError as error:
                    raise errors.from_rpc_error(error) from None
                layout = WorldDescription.from_proto(response.description).layout
                with self._layouts_lock:
                    self._layouts[world_id] = layout
        with self._layouts_lock:
            return [self._layouts[w] for w in ids]

    def _observations(self, message, requested, timeout=None):
        layouts = self.layouts(message.world_ids, timeout) if message.world_ids else []
        return decode_observations(message, layouts, requested)

    # -- stepping and state ----------------------------------------------------------------

    def _step_request(self, world_ids, steps, controls, external_forces, observe, mocap_pose=None):
        ids = world_id_list(world_ids)
        request = pb.StepRequest(
            world_ids=ids,
            steps=[int(steps)] if isinstance(steps, (int, np.integer)) else [int(s) for s in steps],
            controls=pack_float32(controls, "controls", len(ids)),
            external_forces=pack_float32(external_forces, "external_forces", len(ids)),
            mocap_pose=pack_float32(mocap_pose, "mocap_pose", len(ids)),
        )
        request.observe.CopyFrom(observation_request(observe))
        return request

    def step(
        self,
        world_ids,
        steps=1,
        *,
        controls=None,
        external_forces=None,
        observe=None,
        mocap_pose=None,
        timeout=None,
    ):
        """Applies controls and forces, advances the worlds and returns Observations.

        Args:
          world_ids: an id or ids, each at most once.
          steps: steps for every world, or one count per world; 0 only applies and observes.
          controls: (world_count x actuator_count) array, kept until changed (None: keep).
          external_forces: (world_count x body_count x 6) force then torque on each body's
            centre of mass, world frame (None: keep).
          mocap_pose: (world_count x mocap_count x 7) where the mocap bodies go before the
            step, position then quaternion w x y z, kept until changed (None: keep).
          observe: field names (axion.types.OBSERVATION_FIELDS, and FILE_OBSERVATION_FIELDS:
            "file_position" and "file_velocity", the state in the model file's own coordinates,
            MuJoCo's qpos and qvel, for worlds of an MJCF or URDF file only), "all" (every
            field but the file coordinates) or None.
        """
        request = self._step_request(
            world_ids, steps, controls, external_forces, observe, mocap_pose
        )
        response = self._call(self.stub.Step, request, timeout)
        return self._observations(response.observations, request.observe, timeout)

    def get_state(self, world_ids, observe="all", timeout=None):
        """Observations of worlds without stepping (default "all": every field but the file
        coordinates, which are asked for by name as in step())."""
        request = pb.GetStateRequest(world_ids=world_id_list(world_ids))
        request.observe.CopyFrom(observation_request(observe))
        response = self._call(self.stub.GetState, request, timeout, True)
        return self._observations(response.observations, request.observe, timeout)

    def set_state(
        self,
        world_ids,
        *,
        body_pose=None,
        body_velocity=None,
        controls=None,
        external_forces=None,
        joint_position=None,
        joint_velocity=None,
        mocap_pose=None,
        timeout=None,
    ):
        """Writes body poses (W x B x 7), velocities (W x B x 6), controls (W x A), external
        forces (W x B x 6), joint positions (W x P), joint velocities (W x D) and mocap body
        poses (W x M x 7, applied first); fields left None keep their current values.

        Joint positions and velocities are laid out as get_state returns them (a ball joint's
        quaternion w x y z, see WorldDescription.joints). The bodies the joints move follow
        from their parents; free bodies and floating bases keep their state, and are set by
        body_pose / body_velocity, which are applied first.
        """
        ids = world_id_list(world_ids)
        request = pb.SetStateRequest(
            world_ids=ids,
            body_pose=pack_float32(body_pose, "body_pose", len(ids)),
            body_velocity=pack_float32(body_velocity, "body_velocity", len(ids)),
            controls=pack_float32(controls, "controls", len(ids)),
            external_forces=pack_float32(external_forces, "external_forces", len(ids)),
            joint_position=pack_float32(joint_position, "joint_position", len(ids)),
            joint_velocity=pack_float32(joint_velocity, "joint_velocity", len(ids)),
            mocap_pose=pack_float32(mocap_pose, "mocap_pose", len(ids)),
        )
        self._call(self.stub.SetState, request, timeout)

    def reset(
        self,
        world_ids=None,
        *,
        all_worlds=False,
        mask=None,
        body_pose=None,
        body_velocity=None,
        keyframe=None,
        joint_position=None,
        joint_velocity=None,
        timeout=None,
    ):
        """Returns worlds to their initial state, or to a keyframe; returns the ids that were
        reset.

        `mask` (one bool per listed world) selects which listed worlds are reset. `keyframe`
        (a name, or an index: WorldDescription.keyframe_names) starts them from that keyframe
        of their scene instead (axion.NotFound, naming the scene's keyframes, when it has
        none such). `body_pose` (reset_count x B x 7) and `body_velocity` (reset_count x B x 6)
        then optionally replace the bodies' state of the reset worlds, in order, and after them
        `joint_position` (reset_count x P) and `joint_velocity` (reset_count x D) the joints'
        (as in set_state).
        """
        if all_worlds == (world_ids is not None):
            raise ValueError("pass either world_ids or all_worlds=True")
        ids = [] if world_ids is None else world_id_list(world_ids)
        request = pb.ResetRequest(world_ids=ids, all=all_worlds)
        if mask is not None:
            request.mask.extend(bool(m) for m in mask)
        if keyframe is not None:
            # an index travels as its decimal text, which the server tries after the names
            request.keyframe = str(keyframe)
        request.body_pose = pack_float32(body_pose, "body_pose", None)
        request.body_velocity = pack_float32(body_velocity, "body_velocity", None)
        request.joint_position = pack_float32(joint_position, "joint_position", None)
        request.joint_velocity = pack_float32(joint_velocity, "joint_velocity", None)
        response = self._call(self.stub.Reset, request, timeout)
        return list(response.world_ids)

    def snapshot(self, world_ids, timeout=None):
        """Complete engine state of worlds: {world_id: opaque bytes}, in request order."""
        request = pb.SnapshotRequest(world_ids=world_id_list(world_ids))
        response = self._call(self.stub.Snapshot, request, timeout, True)
        return {s.world_id: s.data for s in response.snapshots}

    def restore(self, snapshots, timeout=None):
        """Restores snapshots bit-exactly: a {world_id: bytes} mapping or (world_id, bytes)
        pairs; each world must be of the scene the snapshot was taken from."""
        items = snapshots.items() if hasattr(snapshots, "items") else snapshots
        request = pb.RestoreRequest(
            snapshots=[pb.WorldSnapshot(world_id=int(w), data=bytes(d)) for w, d in items]
        )
        self._call(self.stub.Restore, request, timeout)

    # -- physical parameters -----------------------------------------------------------------

    def get_parameters(self, world_ids, timeout=None):
        """Physical parameters of worlds (Parameters: masses, centres of mass, frictions,
        joint springs, dampers, armatures and dry friction, actuator gains, gravity)."""
        ids = world_id_list(world_ids)
        response = self._call(
            self.stub.GetParameters, pb.GetParametersRequest(world_ids=ids), timeout, True
        )
        layouts = self.layouts(ids, timeout)
        return decode_parameters(response.world_ids, response.parameters, layouts)

    def set_parameters(self, world_ids, parameters=None, *, timeout=None, **arrays):
        """Gives each world its own physical parameters (domain randomisation); the worlds keep
        their state and go on from it.

        Arrays by name (see Parameters for the fields and shapes), (world_count x ...) or a
        list of per-world arrays, or a Parameters whose non-None fields are taken (named
        arrays override it). Fields not given keep the worlds' values. Every value of every
        world is checked before any world changes (axion.InvalidArgument naming the field,
        world and element).
        """
        ids = world_id_list(world_ids)
        fields = {}
        if parameters is not None:
            fields = {f: getattr(parameters, f) for f in PARAMETER_FIELDS}
        for name, value in arrays.items():
            if name not in PARAMETER_FIELDS:
                raise TypeError(
                    f"unknown parameter '{name}'; expected one of {', '.join(PARAMETER_FIELDS)}"
                )
            fields[name] = value
        message = pb.WorldParameters(
            **{
                name: pack_float32(value, name, len(ids))
                for name, value in fields.items()
                if value is not None
            }
        )
        request = pb.SetParametersRequest(world_ids=ids, parameters=message)
        self._call(self.stub.SetParameters, request, timeout)

    def open_step_stream(self, timeout=None):
        """A StepStream (one bidirectional StepStream call kept open for many steps).

        `timeout` bounds the whole stream's life (None: no deadline)."""
        return StepStream(self, timeout)


_solver_options = solver_options


class StepStream:
    """One open StepStream call: requests are answered one by one, in order.

    step() sends a request and waits for its answer. submit() and result() pipeline: submit
    several requests, then collect their Observations in the same order. A request the server
    rejects raises its AxionError from result() and the stream stays usable; a failure of the
    stream itself (server gone, deadline) marks it `broken`.
    """

    def __init__(self, client, timeout=None):
        self._client = client
        self._queue = queue.SimpleQueue()
        self._pending = collections.deque()  # (request_id, ObservationRequest), oldest first
        self._next_id = 1
        self._closed = False
        self.broken = False
        self._responses = client.stub.StepStream(
            self._requests(), timeout=timeout, metadata=client.metadata
        )

    def _requests(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            yield item

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def in_flight(self):
        """Requests submitted and not yet collected with result()."""
        return len(self._pending)

    def submit(
        self,
        world_ids,
        steps=1,
        *,
        controls=None,
        external_forces=None,
        observe=None,
        mocap_pose=None,
    ):
        """Sends a step request (arguments as Client.step); returns its request id."""
        if self._closed or self.broken:
            raise errors.Cancelled("step stream is closed")
        request = self._client._step_request(
            world_ids, steps, controls, external_forces, observe, mocap_pose
        )
        request_id = self._next_id
        self._next_id += 1
        self._pending.append((request_id, request.observe))
        self._queue.put(pb.StepStreamRequest(request_id=request_id, step=request))
        return request_id

    def result(self):
        """Observations of the oldest submitted request."""
        if not self._pending:
            raise RuntimeError("no step request in flight")
        request_id, observe = self._pending.popleft()
        try:
            response = next(self._responses)
        except StopIteration:
            self.broken = True
            raise errors.Unavailable("the server ended the step stream") from None
        except grpc.RpcError as error:
            self.broken = True
            raise errors.from_rpc_error(error) from None
        if response.request_id != request_id:
            self.broken = True
            raise errors.Internal(
                f"step stream answered request {response.request_id}, expected {request_id}"
            )
        if response.status.code != 0:
            raise errors.error_for(response.status.code, response.status.message)
        return self._client._observations(response.step.observations, observe)

    def step(
        self,
        world_ids,
        steps=1,
        *,
        controls=None,
        external_forces=None,
        observe=None,
        mocap_pose=None,
    ):
        """submit() then result(): one synchronous step over the stream."""
        if self._pending:
            raise RuntimeError("collect the pipelined results before a synchronous step")
        self.submit(
            world_ids,
            steps,
            controls=controls,
            external_forces=external_forces,
            observe=observe,
            mocap_pose=mocap_pose,
        )
        return self.result()

    def close(self):
        """Half-closes the stream; requests still in flight are abandoned."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        if self._pending or self.broken:
            self._responses.cancel()
            self._pending.clear()
            return
        # Wait for the server to end the call so that its resources are released in order.
        try:
            for _ in self._responses:
                pass
        except grpc.RpcError:
            pass
