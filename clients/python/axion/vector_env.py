"""axion.VectorEnv: N worlds of one model stepped together, for training loops.

Observation layout. Each world's observation is the concatenation, in the order given by
`observation`, of the flattened per-world arrays of these fields (P joint position
coordinates, D degrees of freedom, B bodies; see WorldDescription for the per-joint offsets):

  joint_position      P values: angle (rad) or displacement (m) per joint coordinate, in joint
                      order; a ball joint contributes a quaternion w x y z.
  joint_velocity      D values: rad/s or m/s per DOF, in joint order.
  body_pose           B x 7: position xyz (m) then quaternion w x y z, world frame.
  body_velocity       B x 6: linear (m/s) then angular (rad/s) velocity, world frame.
  body_contact_force  B x 3: net contact force on each body (N), world frame.
  file_position       Pf values: the state in the model file's own coordinates, MuJoCo's
                      qpos for MJCF (a free joint's position and quaternion, a ball's
                      quaternion, hinge angles and slide displacements, in the file's joint
                      order; SourceJoint.file_position_offset says where each joint's lie).
                      Only for an MJCF or URDF model.
  file_velocity       Df values: MuJoCo's qvel likewise (a free joint's linear velocity in the
                      world frame and angular velocity in the body frame, a ball's body-frame
                      angular velocity, hinge and slide rates).
  site_pose           S x 7: each MJCF <site>'s position xyz (m) and quaternion w x y z, world
                      frame (WorldDescription.source_sites order; MuJoCo's site_xpos and
                      site_xmat): targets and fingertips for rewards. Carried from the bodies'
                      poses on the client, which then asks the server for body_pose too.
  mocap_pose          M x 7: each mocap body's position (m) and quaternion w x y z (targets a
                      policy follows; step(actions, mocap_pose=) moves them).
  actuator_force      A values: the force each actuator applied over the last step, along its
                      joint DOF or tendon (N or N m, gear included): torque and energy terms.
  sensor_data         S values: the MJCF file's sensors (gyros, touch, joint and frame
                      sensors, ...), MuJoCo's sensordata; WorldDescription.source_sensors says
                      where each one's lie. Only for an MJCF model.
  tendon_state        T x 2: each tendon's length and rate (WorldDescription.tendon_names): a
                      muscle's or cable's length for biomechanical tasks.
  activation          A values: each muscle's activation (and that of an actuator with
                      dynamics; 0 for others), the state its control drives: with
                      tendon_state, what a muscle-driven policy observes (MyoSuite-style).

The default is ("joint_position", "joint_velocity"), i.e. obs[:, :P] = joint positions and
obs[:, P:P+D] = joint velocities; `observation_slices` maps each field to its columns. Free
bodies (an MJCF <freejoint>, a floating URDF base) have no joint coordinates: add "body_pose"
and "body_velocity" to observe them, or observe ("file_position", "file_velocity"), which hold
them as MuJoCo's qpos and qvel do (what Gym's MuJoCo tasks build their observations from).

Actions are the actuator controls, (num_worlds x actuator_count) in actuator order, held for
`frame_skip` engine steps.
"""

import numpy as np

from axion import errors
from axion.client import Client
from axion.types import WorldStats, _quat_multiply, observation_request

# What the reset noise perturbs (VectorEnv._perturbed).
_START_FIELDS = ("joint_position", "joint_velocity", "body_pose", "body_velocity")

OBSERVATION_CHOICES = (
    "joint_position",
    "joint_velocity",
    "body_pose",
    "body_velocity",
    "body_contact_force",
    "file_position",
    "file_velocity",
    "site_pose",
    "mocap_pose",
    "actuator_force",
    "sensor_data",
    "tendon_state",
    "activation",
)


class VectorEnv:
    """`num_worlds` worlds of one model behind one open StepStream.

    Args:
      client_or_target: an axion.Client, or a "host:port" target to connect to (then
        `client_options` are passed to axion.Client and the client is closed with the env).
      model: MJCF/URDF path or text, or a scene message (see axion.make_scene).
      num_worlds: number of parallel worlds N.
      observation: fields concatenated into each world's observation (see module doc).
      frame_skip: engine steps per step() call.
      max_episode_steps: steps after which a world's episode is truncated (None: never).
      reward_fn: reward_fn(obs, actions, info) -> (N,) rewards; None gives zeros (the server
        simulates physics only; a task supplies its own reward).
      termination_fn: termination_fn(obs, info) -> (N,) bools, OR-ed with the worlds whose
        state became non-finite (they are frozen by the server until reset).
      autoreset: reset finished worlds inside step(); their final observation is then in
        info["final_observation"] (rows where info["_final_observation"] is True).
      clip_actions: clip actions to the actuators' control ranges (the server rejects
        out-of-range controls); NaN is passed on and rejected (InvalidArgument).
      reset_keyframe: the keyframe of the model (a name or an index, see
        WorldDescription.keyframe_names) that reset() and autoresets start worlds from; None:
        the model's initial state.
      reset_noise_scale: perturbs each reset world's starting state (Gym's MuJoCo tasks'
        reset_noise_scale) by independent uniform draws from [-scale, scale]: every joint
        position coordinate (a ball joint turned by a rotation vector of three draws) and
        velocity, and every free body's position, orientation (a rotation vector), linear
        and angular velocity. The bodies the joints move follow from the perturbed
        coordinates, so every joint holds exactly. 0: no noise.
      seed: seed of the reset noise and of randomize_fn's generator (numpy's default_rng);
        reset(seed=) reseeds it.
      randomize_fn: domain randomisation, drawn anew for each episode:
        randomize_fn(rng, nominal, count) -> {parameter: array (count x ...)} gives the worlds
        being reset their physical parameters (any of axion.PARAMETER_FIELDS: masses, centres
        of mass, frictions, joint dynamics, actuator gains, gravity) before they restart;
        `nominal` is the model's own Parameters (arrays of one world, (1 x ...)) and `rng`
        the env's generator. None: every world keeps the model's.
      solver_options, contact_capacity, format, floating_base: as Client.create_worlds.
      destroy_on_close: destroy the worlds in close().
    """

    def __init__(
        self,
        client_or_target,
        model,
        num_worlds,
        *,
        observation=("joint_position", "joint_velocity"),
        frame_skip=1,
        max_episode_steps=None,
        reward_fn=None,
        termination_fn=None,
        autoreset=False,
        clip_actions=True,
        reset_keyframe=None,
        reset_noise_scale=0.0,
        seed=None,
        randomize_fn=None,
        solver_options=None,
        contact_capacity=0,
        format=None,
        floating_base=False,
        destroy_on_close=True,
        client_options=None,
    ):
        if num_worlds < 1:
            raise ValueError(f"num_worlds must be >= 1, got {num_worlds}")
        if frame_skip < 1:
            raise ValueError(f"frame_skip must be >= 1, got {frame_skip}")
        if not (np.isfinite(reset_noise_scale) and reset_noise_scale >= 0):
            raise ValueError(f"reset_noise_scale must be finite and >= 0, got {reset_noise_scale}")
        observation = tuple(observation)
        for field in observation:
            if field not in OBSERVATION_CHOICES:
                raise ValueError(
                    f"unknown observation field '{field}'; choose from {OBSERVATION_CHOICES}"
                )
        if isinstance(client_or_target, Client):
            self.client, self._owns_client = client_or_target, False
        else:
            self.client = Client(client_or_target, **(client_options or {}))
            self._owns_client = True
        self.num_worlds = int(num_worlds)
        self.frame_skip = int(frame_skip)
        self.max_episode_steps = max_episode_steps
        self.reward_fn = reward_fn
        self.termination_fn = termination_fn
        self.autoreset = autoreset
        self.clip_actions = clip_actions
        self.reset_keyframe = reset_keyframe
        self.reset_noise_scale = float(reset_noise_scale)
        self._rng = np.random.default_rng(seed)
        self.randomize_fn = randomize_fn
        self._nominal = None  # the model's Parameters, read at the first randomised reset
        self._start_states = {}  # keyframe -> one world's starting state, for the reset noise
        self.destroy_on_close = destroy_on_close
        self.observation_fields = observation
        self._stream = None
        self._closed = False
        try:
            created = self.client.create_worlds(
                model,
                self.num_worlds,
                solver_options=solver_options,
                contact_capacity=contact_capacity,
                format=format,
                floating_base=floating_base,
            )
        except BaseException:
            if self._owns_client:
                self.client.close()
            raise
        self.warnings = created.warnings
        self.description = created.description
        self._ids = created.world_ids
        self.world_ids = np.asarray(created.world_ids, dtype=np.uint64)  # (N,)
        layout = created.description.layout
        self.observation_slices = {}
        start = 0
        for field in observation:
            if field == "site_pose":
                size = 7 * len(created.description.source_sites)
            else:
                size = layout.field_size(field)[0]
            self.observation_slices[field] = slice(start, start + size)
            start += size
        self.obs_dim = start
        self.act_dim = created.description.actuator_count
        self.action_low, self.action_high = created.description.ctrl_range()  # (act_dim,)
        self.episode_steps = np.zeros(self.num_worlds, dtype=np.int64)  # (N,)
        # site poses are the bodies' poses carried to the sites here (the server sends bodies)
        served = tuple(f for f in observation if f != "site_pose")
        if "site_pose" in observation and "body_pose" not in served:
            served += ("body_pose",)
        on_mocap = any(s.mocap >= 0 for s in created.description.source_sites)
        if "site_pose" in observation and on_mocap and "mocap_pose" not in served:
            served += ("mocap_pose",)
        self._observe = observation_request(served + ("stats",))
        self._state_observe = observation_request(served)
        description = created.description
        self._free_bodies = np.asarray(description.free_bodies, dtype=np.int64)
        self._ball_offsets = [j.position_offset for j in description.joints if j.type == "ball"]
        self._scalar_positions = np.ones(description.joint_position_count, dtype=bool)
        for offset in self._ball_offsets:
            self._scalar_positions[offset : offset + 4] = False

    # -- helpers --------------------------------------------------------------------------

    def _flatten(self, observations):
        """(N x obs_dim) float32 from the requested fields, in `observation` order."""
        parts = [
            self._field(observations, field).reshape(self.num_worlds, -1)
            for field in self.observation_fields
        ]
        if not parts:
            return np.zeros((self.num_worlds, 0), dtype=np.float32)
        return np.concatenate(parts, axis=1)

    def _field(self, observations, field):
        if field == "site_pose":
            poses = self.description.source_site_poses(
                observations.body_pose, observations.mocap_pose
            )
            return poses.astype(np.float32)
        return getattr(observations, field)

    def _ensure_stream(self):
        if self._closed:
            raise errors.Cancelled("the environment is closed")
        if self._stream is None or self._stream.broken:
            if self._stream is not None:
                self._stream.close()
            self._stream = self.client.open_step_stream()
        return self._stream

    def _check_actions(self, actions):
        if actions is None:
            if self.act_dim:
                raise ValueError(f"actions: expected shape ({self.num_worlds}, {self.act_dim})")
            return None
        actions = np.asarray(actions, dtype=np.float32)
        if actions.shape != (self.num_worlds, self.act_dim):
            raise ValueError(
                f"actions: expected shape ({self.num_worlds}, {self.act_dim}), got {actions.shape}"
            )
        if self.clip_actions:
            actions = np.clip(actions, self.action_low, self.action_high)
        return actions

    # -- the environment interface ----------------------------------------------------------

    def observe(self):
        """Current observations (N x obs_dim) without stepping or resetting."""
        state = self.client.get_state(self._ids, observe=self._state_observe)
        return self._flatten(state)

    def reset(self, mask=None, keyframe=None, seed=None):
        """Resets the worlds where `mask` (N bools) is True, all when None; returns the
        observations (N x obs_dim) of every world (the others unchanged).

        The worlds start from `keyframe` (a name or an index), else from `reset_keyframe`,
        perturbed by `reset_noise_scale`; `seed` reseeds that noise.
        """
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        if keyframe is None:
            keyframe = self.reset_keyframe
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (self.num_worlds,):
                raise ValueError(f"mask: expected shape ({self.num_worlds},), got {mask.shape}")
            if not mask.any():
                return self.observe()
        count = self.num_worlds if mask is None else int(mask.sum())
        if self.randomize_fn is not None:
            if self._nominal is None:
                self._nominal = self.client.get_parameters(self._ids[:1])
            arrays = self.randomize_fn(self._rng, self._nominal, count)
            if arrays:
                ids = self._ids if mask is None else [w for w, m in zip(self._ids, mask) if m]
                self.client.set_parameters(ids, **arrays)
        noisy = self.reset_noise_scale > 0
        start_state = self._start_states.get(keyframe) if noisy else None
        if start_state is not None:
            # the starting state is known: one call resets and perturbs
            self.client.reset(
                self._ids, mask=mask, keyframe=keyframe, **self._perturbed(start_state, count)
            )
        else:
            reset_ids = self.client.reset(self._ids, mask=mask, keyframe=keyframe)
            if noisy:
                # every world of the model starts alike: read one once, then perturb them all
                start_state = self.client.get_state(reset_ids[:1], observe=_START_FIELDS)
                self._start_states[keyframe] = start_state
                self.client.set_state(reset_ids, **self._perturbed(start_state, count))
        if mask is None:
            self.episode_steps[:] = 0
        else:
            self.episode_steps[mask] = 0
        return self.observe()

    def get_parameters(self):
        """The worlds' physical parameters (axion.Parameters, arrays (N x ...))."""
        return self.client.get_parameters(self._ids)

    def set_parameters(self, mask=None, **arrays):
        """Gives the worlds where `mask` (N bools) is True, all when None, physical parameters
        (arrays (count x ...) by name, see axion.Parameters); their state is kept."""
        ids = self._ids
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (self.num_worlds,):
                raise ValueError(f"mask: expected shape ({self.num_worlds},), got {mask.shape}")
            ids = [w for w, m in zip(self._ids, mask) if m]
        if ids:
            self.client.set_parameters(ids, **arrays)

    def _perturbed(self, start_state, count):
        """`count` copies of one world's starting state (Observations of _START_FIELDS) with
        reset_noise_scale's uniform noise (see __init__), as set_state / reset arguments."""
        scale = self.reset_noise_scale

        def draw(*shape):
            return self._rng.uniform(-scale, scale, size=(count,) + shape)

        def copies(array):
            return np.repeat(np.asarray(array, dtype=np.float64)[:1], count, axis=0)

        position = copies(start_state.joint_position)
        position[:, self._scalar_positions] += draw(int(self._scalar_positions.sum()))
        for offset in self._ball_offsets:
            turned = _quat_multiply(_rotation_quat(draw(3)), position[:, offset : offset + 4])
            position[:, offset : offset + 4] = turned
        velocity = copies(start_state.joint_velocity)
        velocity += draw(velocity.shape[1])
        pose = copies(start_state.body_pose)
        body_velocity = copies(start_state.body_velocity)
        free = self._free_bodies
        if len(free) > 0:
            pose[:, free, :3] += draw(len(free), 3)
            pose[:, free, 3:] = _quat_multiply(_rotation_quat(draw(len(free), 3)), pose[:, free, 3:])
            body_velocity[:, free] += draw(len(free), 6)
        return {
            "body_pose": pose,
            "body_velocity": body_velocity,
            "joint_position": position,
            "joint_velocity": velocity,
        }

    def step(self, actions, mocap_pose=None):
        """Applies actions (N x act_dim) for `frame_skip` steps, the mocap bodies first moved
        to `mocap_pose` (N x M x 7, position and quaternion w x y z; None: where they are).

        Returns (obs (N x obs_dim) float32, reward (N,) float32, terminated (N,) bool,
        truncated (N,) bool, info dict of (N,) arrays: time, step_count, episode_step, flags,
        newton_iterations, residual, contact_count).
        """
        actions = self._check_actions(actions)
        observations = self._ensure_stream().step(
            self._ids,
            self.frame_skip,
            controls=actions,
            observe=self._observe,
            mocap_pose=mocap_pose,
        )
        obs = self._flatten(observations)
        stats = observations.stats
        self.episode_steps += 1
        info = {
            "time": stats.time,
            "step_count": stats.step_count,
            "episode_step": self.episode_steps.copy(),
            "flags": stats.flags,
            "newton_iterations": stats.newton_iterations,
            "residual": stats.residual,
            "contact_count": stats.contact_count,
        }
        terminated = (stats.flags & WorldStats.FLAG_NON_FINITE) != 0
        if self.termination_fn is not None:
            terminated = terminated | np.asarray(self.termination_fn(obs, info), dtype=bool)
        if self.max_episode_steps is not None:
            truncated = self.episode_steps >= self.max_episode_steps
        else:
            truncated = np.zeros(self.num_worlds, dtype=bool)
        if self.reward_fn is not None:
            reward = np.asarray(self.reward_fn(obs, actions, info), dtype=np.float32)
            reward = np.broadcast_to(reward, (self.num_worlds,)).copy()
        else:
            reward = np.zeros(self.num_worlds, dtype=np.float32)
        if self.autoreset:
            done = terminated | truncated
            if done.any():
                info["final_observation"] = obs
                info["_final_observation"] = done
                obs = self.reset(mask=done)
        return obs, reward, terminated, truncated, info

    def close(self):
        """Closes the stream, destroys the worlds (destroy_on_close) and an owned client."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._stream is not None:
                self._stream.close()
            if self.destroy_on_close:
                self.client.destroy_worlds(self._ids)
        finally:
            if self._owns_client:
                self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _rotation_quat(rotation_vector):
    """Unit quaternions (..., 4) w x y z of rotation vectors (..., 3)."""
    angle = np.linalg.norm(rotation_vector, axis=-1, keepdims=True)
    safe = np.where(angle > 0, angle, 1.0)
    return np.concatenate(
        (np.cos(angle / 2), np.where(angle > 0, np.sin(angle / 2) / safe, 0.5) * rotation_vector),
        axis=-1,
    )

