"""The installed `axion` command end to end (subprocesses) against a real axion-server."""

import json
import os
import subprocess

import numpy as np

import pytest

import axion as axion_client  # the package; `axion` is the command's fixture here
from clients_support import MODELS_DIR

PENDULUM_XML = MODELS_DIR / "double_pendulum.xml"
ARM_URDF = MODELS_DIR / "three_link_arm.urdf"


@pytest.fixture
def axion(axion_cli, server, client_id, tmp_path):
    """Runs `axion ARGS...` as this test's client identity; returns the CompletedProcess."""
    env = dict(os.environ, AXION_TARGET=server.target, AXION_CLIENT_ID=client_id)
    env.pop("AXION_AUTH_TOKEN", None)

    def run(*args, check=True):
        result = subprocess.run(
            [str(axion_cli), *map(str, args)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"axion {' '.join(map(str, args))} exited {result.returncode}:\n"
                f"{result.stdout}\n{result.stderr}"
            )
        return result

    yield run
    run("destroy", "--all", check=False)


def create(axion, model, count):
    return [int(line) for line in axion("create", model, "--count", count).stdout.split()]


def test_health(axion):
    result = axion("health")
    assert result.stdout.strip() == "SERVING"
    result = axion("health", "--service", "axion.v1.Simulation", "--wait", "5")
    assert result.stdout.strip() == "SERVING"


def test_health_of_unreachable_server_fails(axion_cli):
    result = subprocess.run(
        [str(axion_cli), "--target", "127.0.0.1:1", "--timeout", "2", "health"],
        capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    assert "UNAVAILABLE" in result.stderr or "DEADLINE_EXCEEDED" in result.stderr


def test_create_list_describe_destroy(axion):
    ids = create(axion, PENDULUM_XML, 2) + create(axion, ARM_URDF, 1)
    assert len(set(ids)) == 3

    table = axion("list").stdout.splitlines()
    assert table[0].split() == ["WORLD", "MODEL", "STEPS", "TIME(s)"]
    assert [line.split()[:3] for line in table[1:]] == [
        [str(ids[0]), "double_pendulum", "0"],
        [str(ids[1]), "double_pendulum", "0"],
        [str(ids[2]), "three_link_arm", "0"],
    ]
    listed = json.loads(axion("list", "--json").stdout)
    assert [w["world_id"] for w in listed] == ids

    described = json.loads(axion("describe", ids[2], "--json").stdout)
    assert described["model_name"] == "three_link_arm"
    assert [j["name"] for j in described["joints"]] == ["base_yaw", "shoulder", "elbow"]
    text = axion("describe", ids[2]).stdout
    assert "3 actuators" in text and "elbow" in text
    # each actuator's row names the joint it drives
    actuator_rows = [line.split() for line in text.splitlines() if line.startswith("elbow ")]
    assert actuator_rows and actuator_rows[-1][2] == "elbow", text
    assert [a["joint"] for a in described["actuators"]] == [0, 1, 2]
    assert described["keyframe_names"] == [] and "keyframes" not in text

    assert axion("destroy", ids[0]).stdout.split() == [str(ids[0])]
    assert axion("destroy", "--all").stdout.split() == [str(i) for i in ids[1:]]
    assert axion("list", "--json").stdout.strip() == "[]"


def test_create_json_and_warnings(axion, tmp_path):
    model = tmp_path / "pendulum_with_light.xml"
    model.write_text(PENDULUM_XML.read_text().replace(
        "<worldbody>", "<worldbody><light pos='0 0 3'/>"))
    result = axion("create", model, "--json", "--timestep", "0.002")
    created = json.loads(result.stdout)
    assert len(created["world_ids"]) == 1
    assert created["description"]["timestep"] == pytest.approx(0.002)
    assert created["description"]["joint_position_count"] == 2
    assert "warning" in result.stderr  # the importer's note about the ignored <light>


def test_create_balances_an_inertia_on_request(axion, tmp_path):
    # Principal moments 0.0031 + 0.0236 < 0.0269: refused unless --balance-inertia.
    model = tmp_path / "unbalanced_arm.urdf"
    model.write_text("""<robot name="arm"><link name="base"/>
      <link name="link2"><inertial><mass value="1.7"/>
        <inertia ixx="0.0031" iyy="0.0236" izz="0.0269" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><geometry><sphere radius="0.05"/></geometry></collision></link>
      <joint name="j" type="continuous"><parent link="base"/><child link="link2"/></joint>
    </robot>""")
    refused = axion("create", model, check=False)
    assert refused.returncode != 0 and "balance_inertia" in refused.stderr
    result = axion("create", model, "--balance-inertia", "--self-collision")
    assert len(result.stdout.split()) == 1
    assert "their mean" in result.stderr


def test_create_keeps_welded_bodies_on_request(axion, tmp_path):
    # The hand has no joint: merged into the arm unless --keep-welded-bodies.
    model = tmp_path / "welded_arm.xml"
    model.write_text("""<mujoco model="welded"><worldbody>
      <body name="arm" pos="0 0 1"><joint type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
        <body name="hand" pos="0.5 0 0"><geom type="sphere" size="0.08"/></body>
      </body></worldbody></mujoco>""")
    merged = json.loads(axion("create", model, "--json").stdout)
    assert merged["description"]["body_count"] == 1
    kept = json.loads(axion("create", model, "--json", "--keep-welded-bodies").stdout)
    assert kept["description"]["body_count"] == 2
    # describe says which body carries the merged hand, and where
    source = merged["description"]["source_bodies"]
    assert [(b["name"], b["body"]) for b in source] == [("arm", 0), ("hand", 0)]
    assert source[1]["offset"] == [0.5, 0, 0, 1, 0, 0, 0]
    text = axion("describe", merged["world_ids"][0]).stdout
    assert "CARRIED BY" in text and "hand" in text.split("CARRIED BY")[1]
    assert "CARRIED BY" not in axion("describe", kept["world_ids"][0]).stdout


def test_create_raises_light_bodies_on_request(axion, tmp_path):
    model = tmp_path / "light_arm.xml"
    model.write_text("""<mujoco><worldbody>
      <body name="base" pos="0 0 1"><freejoint/><geom type="sphere" size="0.1"/>
        <body name="finger"><joint type="hinge" armature="0.75"/>
          <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.005" density="1e-4"/></body>
      </body></worldbody></mujoco>""")
    assert "body 'finger' weighs" in axion("create", model).stderr
    raised = axion("create", model, "--bound-mass", "1e-3", "--bound-inertia", "1e-6")
    assert len(raised.stdout.split()) == 1
    assert "weighs" not in raised.stderr


def test_create_with_preconditioner(axion):
    ids = [int(line) for line in
           axion("create", PENDULUM_XML, "--preconditioner", "Jacobi").stdout.split()]
    assert len(ids) == 1
    axion("step", "--worlds", ids[0], "--steps", "10")
    result = axion("create", PENDULUM_XML, "--preconditioner", "ilu", check=False)
    assert result.returncode == 2 and "preconditioner" in result.stderr


def test_step_state_and_progress(axion):
    ids = create(axion, PENDULUM_XML, 3)
    result = axion("step", "--worlds", f"{ids[0]},{ids[1]}", "--steps", "40", "--chunk", "10",
                   "--progress")
    assert "stepped 2 worlds x 40 steps" in result.stdout
    assert "world-steps/s" in result.stdout
    assert "100.0%" in result.stderr and "40/40" in result.stderr  # the progress bar

    # Without --progress and without a terminal: no progress output.
    result = axion("step", "--steps", "5", "--json")
    summary = json.loads(result.stdout)
    assert (summary["worlds"], summary["steps"]) == (3, 5)
    assert result.stderr == ""

    state = json.loads(axion("state", "--json").stdout)["worlds"]
    assert [w["world_id"] for w in state] == ids
    assert [w["step_count"] for w in state] == [45, 45, 5]
    assert state[0]["time"] == pytest.approx(45 * 0.005)
    assert len(state[0]["joint_position"]) == 2 and len(state[0]["joint_velocity"]) == 2
    assert state[0]["joint_position"] == state[1]["joint_position"]
    assert state[0]["joint_position"] != state[2]["joint_position"]

    fields = json.loads(axion("state", "--worlds", ids[2], "--json",
                              "--fields", "body_pose,contacts,controls").stdout)["worlds"]
    assert len(fields) == 1
    assert [len(row) for row in fields[0]["body_pose"]] == [7, 7]
    assert fields[0]["contacts"] == {"body": [], "data": []}
    assert fields[0]["controls"] == []

    table = axion("state", "--worlds", ids[2]).stdout.splitlines()
    assert table[0].split() == ["WORLD", "STEPS", "TIME(s)", "FLAGS", "JOINT_POSITION",
                                "JOINT_VELOCITY"]
    assert table[1].split()[:2] == [str(ids[2]), "5"]


def test_snapshot_and_restore_through_a_file(axion, tmp_path):
    ids = create(axion, PENDULUM_XML, 2)
    axion("step", "--steps", "20")
    snapshot_file = tmp_path / "worlds.snap"
    assert "saved 2 worlds" in axion("snapshot", "-o", snapshot_file).stdout
    saved = json.loads(axion("state", "--json").stdout)["worlds"]

    axion("step", "--steps", "30")
    assert "restored 2 worlds" in axion("restore", snapshot_file).stdout
    assert json.loads(axion("state", "--json").stdout)["worlds"] == saved

    # One world's snapshot restored into another world of the same scene.
    axion("snapshot", "--worlds", ids[0], "-o", tmp_path / "one.snap")
    axion("step", "--worlds", ids[0], "--steps", "7")
    axion("restore", tmp_path / "one.snap", "--worlds", ids[1])
    state = json.loads(axion("state", "--json").stdout)["worlds"]
    assert state[1]["joint_position"] == saved[0]["joint_position"]
    assert state[1]["step_count"] == 20


def test_errors_carry_server_status(axion, tmp_path):
    result = axion("step", "--worlds", "987654321", check=False)
    assert result.returncode == 1
    assert "NOT_FOUND" in result.stderr and "987654321" in result.stderr

    bad = tmp_path / "bad.snap"
    bad.write_bytes(b"\xff\xff\xff not a snapshot")
    result = axion("restore", bad, check=False)
    assert result.returncode == 1 and "snapshot" in result.stderr

    result = axion("state", check=False)  # no worlds yet
    assert result.returncode == 1 and "no worlds" in result.stderr

    result = axion("create", tmp_path / "missing.xml", check=False)
    assert result.returncode == 1 and "does not exist" in result.stderr


def test_usage_errors_exit_2(axion):
    assert axion("destroy", check=False).returncode == 2
    assert axion("step", "--worlds", "abc", check=False).returncode == 2
    assert axion("create", "x.xml", "--count", "0", check=False).returncode == 2
    assert axion(check=False).returncode == 2


def test_describe_lists_sites(axion, tmp_path):
    model = tmp_path / "pendulum_with_sites.xml"
    model.write_text(PENDULUM_XML.read_text().replace(
        "<worldbody>", '<worldbody><site name="target" pos="1 0 1"/>', 1))
    world = create(axion, model, 1)[0]
    described = json.loads(axion("describe", world, "--json").stdout)
    assert described["source_sites"] == [
        {"name": "target", "body": -1, "offset": [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0], "mocap": -1}
    ]
    assert "target" in axion("describe", world).stdout.split("SITE")[1]


def test_describe_lists_keyframes(axion, server, client_id):
    with axion_client.Client(server.target, client_id=client_id) as client:
        model = client.get_model(client.create_worlds(PENDULUM_XML).world_ids[0])
        model.keyframes.add(name="up")
        model.keyframes.add()
        world = client.create_worlds(model).world_ids[0]
    assert json.loads(axion("describe", world, "--json").stdout)["keyframe_names"] == ["up", ""]
    assert "keyframes: 0 'up', 1" in axion("describe", world).stdout


def test_describe_lists_mocap_bodies(axion, server, client_id):
    with axion_client.Client(server.target, client_id=client_id) as client:
        world = client.create_worlds("""<mujoco><worldbody>
          <body name="target" mocap="true"><geom size="0.05" contype="0" conaffinity="0"/></body>
          <body name="ball" pos="0 0 1"><freejoint/><geom size="0.1"/></body>
          </worldbody></mujoco>""").world_ids[0]
    assert json.loads(axion("describe", world, "--json").stdout)["mocap_names"] == ["target"]
    assert "mocap bodies: 0 'target'" in axion("describe", world).stdout


def test_describe_lists_sensors(axion, server, client_id):
    with axion_client.Client(server.target, client_id=client_id) as client:
        world = client.create_worlds("""<mujoco><worldbody>
          <body name="ball" pos="0 0 1"><freejoint/><geom size="0.1"/><site name="imu"/></body>
          </worldbody><sensor><gyro name="spin" site="imu"/><clock/></sensor></mujoco>""").world_ids[0]
    described = json.loads(axion("describe", world, "--json").stdout)
    assert described["sensor_data_count"] == 4
    assert described["source_sensors"][0] == {"name": "spin", "type": "gyro", "offset": 0, "dim": 3}
    text = axion("describe", world).stdout
    assert "SENSOR" in text and "gyro" in text and "3:4" in text


def test_describe_lists_tendons(axion, server, client_id):
    with axion_client.Client(server.target, client_id=client_id) as client:
        world = client.create_worlds("""<mujoco><worldbody><site name="anchor" pos="1 0 1"/>
          <body name="arm" pos="0 0 1"><joint axis="0 1 0"/><geom size="0.1"/><site name="end"/>
          </body></worldbody>
          <tendon><spatial name="cable"><site site="anchor"/><site site="end"/></spatial></tendon>
          </mujoco>""").world_ids[0]
    assert json.loads(axion("describe", world, "--json").stdout)["tendon_names"] == ["cable"]
    assert "cable" in axion("describe", world).stdout.split("TENDON")[1]


def test_reset_to_the_initial_state_or_a_keyframe(axion, server, client_id):
    with axion_client.Client(server.target, client_id=client_id) as client:
        model = client.get_model(client.create_worlds(PENDULUM_XML).world_ids[0])
        bodies = len(model.bodies)
        pose = np.tile([0.0, 0.0, 5.0, 1.0, 0.0, 0.0, 0.0], bodies)
        model.keyframes.add(name="lifted", time=2.0, body_pose=pose)
        worlds = client.create_worlds(model, 2).world_ids
    axion("step", "--worlds", worlds[0], "--steps", "10")
    assert axion("reset", "--worlds", worlds[0], "--keyframe", "lifted").stdout.split() == [
        str(worlds[0])
    ]
    state = json.loads(
        axion("state", "--worlds", worlds[0], "--fields", "body_pose", "--json").stdout
    )
    assert state["worlds"][0]["time"] == 2.0
    assert state["worlds"][0]["body_pose"][0][2] == 5.0
    assert axion("reset").stdout.split()[-2:] == [str(w) for w in worlds]  # all, to the start
    state = json.loads(axion("state", "--worlds", worlds[0], "--json").stdout)
    assert state["worlds"][0]["time"] == 0.0
    # a keyframe some listed world's scene lacks resets none of them
    axion("step", "--worlds", worlds[0], "--steps", "3")
    result = axion("reset", "--keyframe", "missing", check=False)
    assert result.returncode == 1 and "NOT_FOUND" in result.stderr
    assert "no keyframe 'missing' (its keyframes: 'lifted'" in result.stderr or (
        "no keyframe 'missing' (it has none)" in result.stderr
    )
    state = json.loads(axion("state", "--worlds", worlds[0], "--json").stdout)
    assert state["worlds"][0]["time"] > 0.0 and state["worlds"][0]["step_count"] == 3

