"""The examples in clients/python/examples run to completion with small counts."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from clients_support import EXAMPLES_DIR, HUMANOID_XML

ARM26_XML = pathlib.Path("/usr/share/mujoco/model/tendon_arm/arm26.xml")


def run_example(server, name, *args, env_extra=None, cwd=None):
    env = dict(os.environ, AXION_TARGET=server.target)
    env.update(env_extra or {})
    result = subprocess.run(
        [sys.executable, str(EXAMPLES_DIR / name), *map(str, args)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, (
        f"{name} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


@pytest.mark.skipif(not HUMANOID_XML.is_file(), reason=f"{HUMANOID_XML} is not installed "
                    "(Debian package libmujoco-samples)")
def test_humanoid_throughput(server):
    result = run_example(server, "humanoid_throughput.py", "--worlds", 2, "--steps", 3,
                         "--progress")
    assert "2 worlds of 'Humanoid'" in result.stdout
    match = re.search(r"(\d+) world-steps in [\d.]+ s: ([\d,]+) world-steps/s", result.stdout)
    assert match and int(match.group(1)) == 6
    assert "3/3" in result.stderr  # progress bar


def test_urdf_arm_reaches_targets(server):
    # Position drives with kp = 300 N m/rad hold the arm against gravity: the shoulder sags by
    # (gravity torque) / kp, at most (1 kg * 0.2 m + 0.5 kg * 0.55 m) * 9.81 / 300 = 0.0155 rad.
    result = run_example(server, "urdf_arm_targets.py", "--worlds", 3, "--steps", 200,
                         "--tolerance", 0.02)
    match = re.search(r"final error: ([\d.]+) rad", result.stdout)
    assert match and float(match.group(1)) < 0.02


def test_imu_sensors_read_gravity_and_weight_at_rest(server):
    result = run_example(server, "imu_sensors.py", "--worlds", 3, "--seconds", 1.5,
                         "--tolerance", 1e-3)
    assert "accelerometer" in result.stdout
    assert "at rest" in result.stdout


def test_terrain_randomization_puts_each_box_on_its_own_ground(server):
    # boxes of half height 0.1 m on random rolling ground: each ends on its world's terrain
    # (0.1 m above it where flat, up to 0.1 / cos(slope) on a slope), none sunk or thrown
    result = run_example(server, "terrain_randomization.py", "--worlds", 4, "--steps", 400)
    above = [float(a) for a in re.findall(r"([\d.]+) m above the ground", result.stdout)]
    assert len(above) == 4
    assert all(0.095 < a < 0.15 for a in above), above


def test_cable_winch_lifts_loads_to_their_heights(server):
    # The winch's servo (kp = 1e5 N/m) holds the 20 kg load 196.2 N / 1e5 N/m = 1.96 mm short of
    # the length measured at the target; the cable's tension over the wheel is the weight.
    result = run_example(server, "cable_winch.py", "--worlds", 3, "--seconds", 3,
                         "--tolerance", 0.0025)
    match = re.search(r"largest miss: ([\d.]+) m", result.stdout)
    assert match and float(match.group(1)) < 0.0025
    pulls = [float(p) for p in re.findall(r"winch pull ([\d.]+) N", result.stdout)]
    assert len(pulls) == 3 and all(abs(p - 20 * 9.81) < 0.5 for p in pulls)


@pytest.mark.skipif(not ARM26_XML.is_file(), reason=f"{ARM26_XML} is not installed "
                    "(Debian package libmujoco-samples)")
def test_muscle_arm_reaches_its_targets(server):
    # excitations from each joint's error drive its flexor or extensor; the arm settles within
    # a few milliradians of each world's targets
    result = run_example(server, "muscle_arm_reach.py", "--worlds", 3, "--seconds", 2,
                         "--tolerance", 0.02)
    match = re.search(r"largest miss: ([\d.]+) rad", result.stdout)
    assert match and float(match.group(1)) < 0.02
    assert len(re.findall(r"activations SF", result.stdout)) == 3


@pytest.mark.skipif(not HUMANOID_XML.is_file(), reason=f"{HUMANOID_XML} is not installed "
                    "(Debian package libmujoco-samples)")
def test_gym_humanoid(server):
    result = run_example(server, "gym_humanoid.py", "--worlds", 3, "--steps", 40,
                         "--episode-steps", 10)
    assert "observation 53 (MuJoCo's qpos[2:] and qvel), 21 actions" in result.stdout
    match = re.search(r"(\d+) episodes: mean return (-?[\d.]+), mean length ([\d.]+)",
                      result.stdout)
    assert match and int(match.group(1)) >= 3 and float(match.group(3)) <= 10
    assert "600 world-steps" in result.stdout


@pytest.mark.skipif(not HUMANOID_XML.is_file(), reason=f"{HUMANOID_XML} is not installed "
                    "(Debian package libmujoco-samples)")
def test_gym_humanoid_with_domain_randomisation(server):
    result = run_example(server, "gym_humanoid.py", "--worlds", 4, "--steps", 30,
                         "--episode-steps", 10, "--randomize", 0.2)
    match = re.search(r"total mass ([\d.]+) to ([\d.]+) kg", result.stdout)
    # the humanoid weighs 40.8 kg; each of its 13 bodies within 20% of its own mass
    assert match and 32 < float(match.group(1)) < float(match.group(2)) < 49
    assert "600 world-steps" in result.stdout


def test_plot_trajectory_writes_png(server, tmp_path):
    pytest.importorskip("matplotlib")
    output = tmp_path / "trajectory.png"
    csv = tmp_path / "trajectory.csv"
    result = run_example(server, "plot_trajectory.py", "--steps", 40, "--output", output,
                         "--csv", csv)
    assert f"wrote {output}" in result.stdout
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert csv.read_text().splitlines()[0] == \
        "time,q_shoulder,q_elbow,qd_shoulder,qd_elbow"


def test_plot_trajectory_without_matplotlib(server, tmp_path):
    # A package named matplotlib that fails to import stands in for a missing installation.
    blocker = tmp_path / "blocked" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('matplotlib is blocked here')\n")
    output = tmp_path / "trajectory.png"
    csv = tmp_path / "trajectory.csv"
    pythonpath = os.pathsep.join(filter(None, [str(blocker.parent), os.environ.get("PYTHONPATH")]))
    result = run_example(server, "plot_trajectory.py", "--steps", 40, "--output", output,
                         "--csv", csv, env_extra={"PYTHONPATH": pythonpath})
    assert "recorded 40 steps (0.200 s)" in result.stdout
    assert "skipping the plot" in result.stdout
    assert not output.exists()
    rows = csv.read_text().splitlines()
    assert len(rows) == 1 + 41  # header, the initial state and 40 steps
