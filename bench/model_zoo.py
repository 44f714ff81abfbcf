#!/usr/bin/env python3
"""Runs axion-sim over a collection of robot files from elsewhere and tabulates how each fares:
loaded or refused (with the reason), steps per second, Newton iterations per step, steps not
converged, non-finite steps and the largest body speed. The collection is pybullet's data
(pip package pybullet, fetched once with `pip download` into --dir): its OpenAI Gym MJCF files
and its robot URDFs (random_urdfs left out); --mujoco adds MuJoCo's samples
(/usr/share/mujoco/model), --dm-control DeepMind's control suite (pip package dm_control's
suite/*.xml, fetched the same way), --dm-locomotion its locomotion walkers (the CMU humanoid,
rodent, dog, fruit fly, jumping ball and soccer boxhead files, each alone: the walkers without
their arenas' free joint and floor), --gymnasium Gymnasium's MuJoCo environments (its
envs/mujoco/assets/*.xml). A regression check for "models from elsewhere" (README.md): a file
that used to run and now fails, or now stalls at the Newton limit, shows up here.

usage: bench/model_zoo.py [--axion-sim=PATH] [--dir=DIR] [--steps=400] [--noise=0.01]
                          [--timeout=120] [--mujoco] [--dm-control] [--dm-locomotion]
                          [--gymnasium]
                          [--no-pybullet]
                          [--only=SUBSTRING] [-- AXION_SIM_FLAGS...]
URDFs run with a fixed base; MJCF files at their own time step. Flags after "--" go to every
axion-sim run (e.g. -- --bound_mass=1e-4 --bound_inertia=1e-7).
"""
import argparse
import pathlib
import re
import subprocess
import sys
import zipfile

REPO = pathlib.Path(__file__).resolve().parent.parent
PYBULLET = "pybullet==3.2.7"
DM_CONTROL = "dm_control==1.0.50"
GYMNASIUM = "gymnasium==1.4.0"


def fetch_wheel_data(directory, requirement, prefix):
    """`prefix` (a folder inside the wheel of `requirement`) under `directory`, downloading the
    wheel with `pip download` and unpacking that folder the first time."""
    data = directory / prefix
    if data.is_dir():
        return data
    directory.mkdir(parents=True, exist_ok=True)
    package = requirement.split("==")[0]
    wheels = sorted(directory.glob(f"{package}-*.whl"))
    if not wheels:
        print(f"fetching {requirement} into {directory} (pip download, once)", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
             "-d", str(directory), requirement],
            check=True)
        wheels = sorted(directory.glob(f"{package}-*.whl"))
    if not wheels:
        sys.exit(f"model_zoo: no {package} wheel in {directory}")
    with zipfile.ZipFile(wheels[-1]) as wheel:
        members = [m for m in wheel.namelist() if m.startswith(f"{prefix}/")]
        wheel.extractall(directory, members)
    return data


def field(output, name):
    match = re.search(rf"^{re.escape(name)}\s*:\s*([-0-9.e+]+)", output, re.MULTILINE)
    return match.group(1) if match else ""


def run(axion_sim, model, args, extra):
    command = [str(axion_sim), f"--model={model}", f"--steps={args.steps}",
               f"--noise={args.noise}", "--threads=1", "--backend=cpu", "--report_speed"]
    try:
        result = subprocess.run(command + extra, capture_output=True, text=True,
                                timeout=args.timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"status": f"over {args.timeout} s"}
    if result.returncode != 0:
        message = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "failed"
        return {"status": "refused", "reason": message.replace("axion-sim: ", "")}
    out = result.stdout
    return {
        "status": "runs",
        "steps/s": field(out, "steps per second"),
        "newton": field(out, "newton iterations"),
        "not converged": field(out, "not converged"),
        "non-finite": field(out, "non-finite"),
        "max speed": field(out, "max body speed"),
    }


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--axion-sim", default=str(REPO / "build/release/engine/src/io/axion-sim"))
    parser.add_argument("--dir", default=str(REPO / "build/model_zoo"))
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--noise", type=float, default=0.01)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--mujoco", action="store_true", help="add MuJoCo's sample models")
    parser.add_argument("--dm-control", action="store_true",
                        help="add DeepMind's control suite (dm_control's suite/*.xml)")
    parser.add_argument("--dm-locomotion", action="store_true",
                        help="add dm_control's locomotion walkers (dm_control/locomotion)")
    parser.add_argument("--gymnasium", action="store_true",
                        help="add Gymnasium's MuJoCo environments (envs/mujoco/assets/*.xml)")
    parser.add_argument("--no-pybullet", action="store_true",
                        help="leave pybullet's collection out (the other collections only)")
    parser.add_argument("--only", default="", help="run only files whose path contains this")
    args = parser.parse_args(argv)
    axion_sim = pathlib.Path(args.axion_sim)
    if not axion_sim.is_file():
        sys.exit(f"model_zoo: axion-sim not found at {axion_sim}: build it or pass --axion-sim")
    models = []
    data = pathlib.Path(args.dir)
    if not args.no_pybullet:
        data = fetch_wheel_data(data, PYBULLET, "pybullet_data")
        models += sorted((data / "mjcf").glob("*.xml"))
        models += sorted(p for p in data.rglob("*.urdf") if "random_urdfs" not in p.parts)
    if args.mujoco:
        models += sorted(pathlib.Path("/usr/share/mujoco/model").glob("*/*.xml"))
    if args.dm_control:
        models += sorted(fetch_wheel_data(pathlib.Path(args.dir), DM_CONTROL,
                                          "dm_control/suite").glob("*.xml"))
    if args.dm_locomotion:
        # the walkers' own files: build_fruitfly's name meshes the wheel does not ship, and the
        # floors and defaults are parts of other files
        walkers = fetch_wheel_data(pathlib.Path(args.dir), DM_CONTROL, "dm_control/locomotion")
        models += sorted(p for p in walkers.rglob("*.xml")
                         if "build_fruitfly" not in p.parts and p.name != "floor.xml")
    if args.gymnasium:
        models += sorted(fetch_wheel_data(pathlib.Path(args.dir), GYMNASIUM,
                                          "gymnasium/envs/mujoco/assets").glob("*.xml"))
    models = [m for m in models if args.only in str(m)]

    columns = ["steps/s", "newton", "not converged", "non-finite", "max speed"]
    print(f"{'model':<44} {'status':<8} " + " ".join(f"{c:>13}" for c in columns))
    counts = {}
    for model in models:
        name = str(model.relative_to(data)) if data in model.parents else str(model)
        row = run(axion_sim, model, args, extra)
        counts[row["status"]] = counts.get(row["status"], 0) + 1
        if row["status"] == "runs":
            print(f"{name:<44} {'runs':<8} " + " ".join(f"{row[c]:>13}" for c in columns))
        else:
            reason = row.get("reason", "").replace(f"{data}/", "")
            print(f"{name:<44} {row['status']:<8} {reason[:140]}")
        sys.stdout.flush()
    print("; ".join(f"{n} {s}" for s, n in sorted(counts.items())), f"of {len(models)} files")


if __name__ == "__main__":
    main()
