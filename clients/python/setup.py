"""Build script of axion-client: generates the protobuf and gRPC modules, then packages them.

The API contract lives in proto/axion/v1/axion.proto at the repository root, outside this
package. Every build runs the installed grpcio-tools on it and writes axion/_proto/ (never
committed). The generated code only loads with a protobuf runtime at least as new as the protoc
that wrote it, and the gRPC stubs check the grpcio version they were made for, so the package's
grpcio and protobuf requirements are derived here from what the build actually produced.

Where the proto is looked up, in order:
  1. $AXION_PROTO_DIR (a directory holding axion/v1/axion.proto);
  2. ./proto next to this file (what an sdist carries: `sdist` copies it there);
  3. ../../proto (this package inside the Axion repository).
"""

import atexit
import importlib.metadata
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import setup
from setuptools.command.sdist import sdist

HERE = pathlib.Path(__file__).resolve().parent
PROTO_FILE = pathlib.Path("axion", "v1", "axion.proto")
OUT_DIR = HERE / "axion" / "_proto"

# Oldest runtimes the client code itself is written against (the Debian 12 packages).
MIN_GRPCIO = "1.51"
MIN_NUMPY = "1.21"


def find_proto_root():
    candidates = []
    if os.environ.get("AXION_PROTO_DIR"):
        candidates.append(pathlib.Path(os.environ["AXION_PROTO_DIR"]))
    candidates += [HERE / "proto", HERE.parent.parent / "proto"]
    for root in candidates:
        if (root / PROTO_FILE).is_file():
            return root.resolve()
    searched = ", ".join(str(c / PROTO_FILE) for c in candidates)
    sys.exit(
        "axion-client: cannot find the API definition axion/v1/axion.proto (looked for "
        f"{searched}). Build from the Axion repository (pip install ./clients/python), from an "
        "sdist made by `python -m build`, or set AXION_PROTO_DIR to the repository's proto/ "
        "directory."
    )


def run_protoc(proto_root, out_dir):
    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError:
        sys.exit(
            "axion-client: grpcio-tools is needed to build this package "
            "(pip install grpcio-tools, or let pip build in an isolated environment)."
        )
    include = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"--proto_path={proto_root}",
        f"--proto_path={include}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        str(proto_root / PROTO_FILE),
    ]
    if protoc.main(args) != 0:
        sys.exit(f"axion-client: grpc_tools.protoc failed on {proto_root / PROTO_FILE}")


def install_generated(staging):
    """Moves the generated modules into axion/_proto with package-relative imports.

    protoc writes `from axion.v1 import axion_pb2`, after the proto's path; in this package the
    module is axion._proto.axion_pb2 (the descriptor keeps its canonical name axion/v1/axion.proto).
    """
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for stale in OUT_DIR.glob("*.py"):
        stale.unlink()
    (OUT_DIR / "__init__.py").write_text(
        '"""Modules generated from proto/axion/v1/axion.proto at build time."""\n'
    )
    for name in ("axion_pb2.py", "axion_pb2_grpc.py"):
        text = (staging / "axion" / "v1" / name).read_text()
        text, rewrites = re.subn(
            r"^from axion\.v1 import (\w+_pb2)", r"from axion._proto import \1", text, flags=re.M
        )
        if name == "axion_pb2_grpc.py" and rewrites == 0:
            sys.exit("axion-client: unexpected import layout in the generated gRPC module")
        (OUT_DIR / name).write_text(text)


def check_generated():
    """Imports the new modules with this interpreter's protobuf and grpcio, in a clean process."""
    # The package itself is not imported (its dependencies need not be in the build
    # environment): axion and axion._proto are stood in for by bare namespace modules.
    probe = (
        "import sys, types\n"
        "for name, path in (('axion', []), ('axion._proto', [sys.argv[1]])):\n"
        "    module = types.ModuleType(name)\n"
        "    module.__path__ = path\n"
        "    sys.modules[name] = module\n"
        "import axion._proto.axion_pb2_grpc\n"
        "import axion._proto.axion_pb2 as pb\n"
        "pb.StepRequest(world_ids=[1]).SerializeToString()\n"
    )
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run(
        [sys.executable, "-c", probe, str(OUT_DIR)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        sys.exit(
            "axion-client: the generated protobuf modules do not load with the protobuf/grpcio "
            "installed next to grpcio-tools; install matching versions "
            f"(pip install -U grpcio-tools). Error:\n{result.stderr}"
        )


def version_of(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def major_minor(version):
    parts = re.findall(r"\d+", version)[:2]
    return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0


def runtime_requirements():
    """grpcio/protobuf ranges that load exactly the modules generated by this build."""
    pb2 = (OUT_DIR / "axion_pb2.py").read_text()
    grpc_module = (OUT_DIR / "axion_pb2_grpc.py").read_text()
    # Recent protoc writes the runtime it requires (ValidateProtobufRuntimeVersion(..., 5, 29, 0,
    # ...)); older output carries no such check: require the runtime the build just loaded it with.
    match = re.search(r"ValidateProtobufRuntimeVersion\(\s*[\w.]+,\s*(\d+),\s*(\d+),", pb2)
    if match:
        protobuf_floor = (int(match.group(1)), int(match.group(2)))
    else:
        protobuf_floor = major_minor(version_of("protobuf") or "3.19")
    protobuf_req = (
        f"protobuf>={protobuf_floor[0]}.{protobuf_floor[1]},<{protobuf_floor[0] + 1}"
    )
    # Recent grpcio-tools stubs refuse a grpcio older than themselves (GRPC_GENERATED_VERSION).
    match = re.search(r"GRPC_GENERATED_VERSION\s*=\s*['\"]([\d.]+)['\"]", grpc_module)
    grpc_floor = max(major_minor(MIN_GRPCIO), major_minor(match.group(1)) if match else (0, 0))
    grpcio_req = f"grpcio>={grpc_floor[0]}.{grpc_floor[1]},<2"
    return [grpcio_req, protobuf_req, f"numpy>={MIN_NUMPY},<3"]


def generate():
    proto_root = find_proto_root()
    with tempfile.TemporaryDirectory() as staging:
        run_protoc(proto_root, staging)
        install_generated(pathlib.Path(staging))
    check_generated()
    return proto_root


class SdistWithProto(sdist):
    """Carries the API definition inside the sdist, where ../../proto does not exist."""

    def make_release_tree(self, base_dir, files):
        # Generated modules are not shipped: a build from the sdist regenerates them for its
        # own grpcio-tools.
        files = [f for f in files if not pathlib.PurePath(f).parts[:2] == ("axion", "_proto")]
        super().make_release_tree(base_dir, files)
        target = pathlib.Path(base_dir, "proto", PROTO_FILE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PROTO_ROOT / PROTO_FILE, target)


PROTO_ROOT = generate()

# Intermediate build files go to a private temporary directory rather than ./build inside the
# source tree, which pip builds in place.
BUILD_BASE = tempfile.mkdtemp(prefix="axion-client-build-")
atexit.register(shutil.rmtree, BUILD_BASE, ignore_errors=True)

setup(
    packages=["axion", "axion._proto"],
    install_requires=runtime_requirements(),
    cmdclass={"sdist": SdistWithProto},
    options={"build": {"build_base": BUILD_BASE}},
)
