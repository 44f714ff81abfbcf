"""Scenes, paths and the server process shared by the Python client tests.

(A module of its own rather than conftest.py, whose name other test directories share.)
"""

import os
import pathlib
import re
import signal
import subprocess
import threading

import axion

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES_DIR = REPO_ROOT / "clients" / "python" / "examples"
MODELS_DIR = EXAMPLES_DIR / "models"
HUMANOID_XML = pathlib.Path("/usr/share/mujoco/model/humanoid/humanoid.xml")

START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 20

# A 1 kg ball (radius 0.05 m) on a 1 m massless rod, hinged about y and hanging at rest, with a
# torque motor limited to [-2, 2] N m. Inertia about the hinge: 1 * 1^2 + 2/5 * 1 * 0.05^2.
PENDULUM_MJCF = """
<mujoco model="pendulum">
  <compiler angle="radian"/>
  <option timestep="0.005" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="bob" pos="0 0 2">
      <joint name="hinge" type="hinge" axis="0 1 0" pos="0 0 0"/>
      <geom name="ball" type="sphere" size="0.05" pos="0 0 -1" mass="1"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="torque" joint="hinge" ctrlrange="-2 2" ctrllimited="true"/>
  </actuator>
</mujoco>
"""
PENDULUM_INERTIA = 1.0 + 0.4 * 0.05**2  # kg m^2 about the hinge

# A mocap "hand" at (0, 0, 1) and a free 1 kg block welded to it 0.2 m along x.
HAND_MJCF = """<mujoco><worldbody>
  <body name="hand" mocap="true" pos="0 0 1">
    <geom type="box" size="0.05 0.05 0.05" contype="0" conaffinity="0"/></body>
  <body name="block" pos="0.2 0 1"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="1"/>
  </body></worldbody>
  <equality><weld body1="hand" body2="block"/></equality></mujoco>"""

# A 0.2 m, 2 kg box resting on the ground plane (released 1 cm above it).
BOX_ON_PLANE_MJCF = """
<mujoco model="box_on_plane">
  <option timestep="0.005" gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="ground" type="plane" size="5 5 0.1"/>
    <body name="box" pos="0 0 0.11">
      <freejoint/>
      <geom name="box" type="box" size="0.1 0.1 0.1" mass="2"/>
    </body>
  </worldbody>
</mujoco>
"""

# A free torso carrying a thigh on a ball joint and a wrist on three orthogonal hinges at one
# anchor, which the importer merges into one generic joint (its joint_position holds a rotation
# vector's components, not MuJoCo's angles), and a key holding MuJoCo's qpos (the root's 7, the
# hip's quaternion, w1 w2 w3; both quaternions exactly unit) and qvel (6, 3, 3).
CREATURE_MJCF = """
<mujoco model="creature">
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="torso" pos="0 0 1" euler="10 20 30">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.05"/>
      <body name="thigh" pos="-0.3 0 0">
        <joint name="hip" type="ball" pos="0.02 0 0"/>
        <geom type="capsule" fromto="0 0 0 -0.3 0 0" size="0.03"/>
      </body>
      <body name="wrist" pos="0 0.3 0" euler="0 0 20">
        <joint name="w1" axis="1 0 0"/><joint name="w2" axis="0 1 0"/>
        <joint name="w3" axis="0 0 1"/>
        <geom type="box" size="0.05 0.04 0.03"/>
      </body>
    </body>
  </worldbody>
  <keyframe>
    <key name="pose" qpos="0.5 -0.2 1.3  0.7 0.1 -0.5 0.5  0.9 0.3 -0.1 0.3  0.3 -0.4 0.5"
         qvel="0.1 -0.2 0.3 0.5 -0.4 0.6  1.1 0.7 -0.9  0.8 -0.3 0.6"/>
  </keyframe>
</mujoco>
"""
CREATURE_KEY_QPOS = [0.5, -0.2, 1.3, 0.7, 0.1, -0.5, 0.5, 0.9, 0.3, -0.1, 0.3, 0.3, -0.4, 0.5]
CREATURE_KEY_QVEL = [0.1, -0.2, 0.3, 0.5, -0.4, 0.6, 1.1, 0.7, -0.9, 0.8, -0.3, 0.6]


def free_sphere_model(mass=2.0, height=10.0):
    """A ModelDescription of one free sphere (no ground, no joints), built directly."""
    model = axion.pb.ModelDescription(name="free_sphere")
    body = model.bodies.add(name="ball", mass=mass, inertia=[0.01, 0.01, 0.01])
    body.pose.pos.z = height
    body.pose.quat.w = 1.0
    shape = model.shapes.add(name="ball", body=0, type=axion.pb.SHAPE_TYPE_SPHERE)
    shape.size.x = 0.1
    model.options.timestep.value = 0.01
    return model


class ServerProcess:
    """An axion-server child process and its stderr, read by a background thread."""

    def __init__(self, binary, extra_args=(), env=None):
        """`env`: variables added to this process's environment for the server."""
        self.binary = binary
        args = [
            str(binary),
            "--host=127.0.0.1",
            "--port=0",
            "--metrics_port=-1",
            "--backend=cpu",
            "--drain_timeout_s=5",
            *extra_args,
        ]
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=None if env is None else {**os.environ, **env},
        )
        self.lines = []
        self._port_found = threading.Event()
        self.port = None
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        if not self._port_found.wait(START_TIMEOUT_S) or self.port is None:
            self.stop()
            raise RuntimeError(f"axion-server did not start:\n{self.log()}")
        self.target = f"127.0.0.1:{self.port}"

    def _read_stderr(self):
        pattern = re.compile(r"serving on [^\s]*:(\d+)")
        for line in self.process.stderr:
            self.lines.append(line)
            match = pattern.search(line)
            if match and self.port is None:
                self.port = int(match.group(1))
                self._port_found.set()
        self._port_found.set()  # the process ended

    def log(self):
        return "".join(self.lines)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_TIMEOUT_S)
        self._reader.join(STOP_TIMEOUT_S)


def start_server(binary, extra_args=(), env=None, client_options=None):
    """A started server that reports SERVING; stop() it when done. `client_options` are the
    axion.Client arguments that reach it (TLS)."""
    server = ServerProcess(binary, extra_args, env)
    with axion.Client(server.target, **(client_options or {})) as probe:
        try:
            probe.wait_until_serving(START_TIMEOUT_S)
        except axion.AxionError:
            server.stop()
            raise
    return server
