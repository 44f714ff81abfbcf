"""deploy/docker/runtime-packages.sh, which picks the Debian packages the runtime image installs
from the shared libraries the binaries load."""

import shutil
import subprocess

import pytest


@pytest.fixture(scope="module")
def script(deploy_dir):
    return deploy_dir / "docker" / "runtime-packages.sh"


def run(script, *elfs):
    return subprocess.run(
        ["bash", str(script), *map(str, elfs)], capture_output=True, text=True, timeout=120
    )


def installed(package):
    result = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True
    )
    return result.returncode == 0 and "install ok installed" in result.stdout


def check_packages(result, expected_prefixes):
    assert result.returncode == 0, result.stderr
    packages = result.stdout.split()
    assert packages == sorted(set(packages))
    for package in packages:
        assert ":" not in package, package  # architecture qualifiers are stripped
        assert installed(package), package
    for prefix in expected_prefixes:
        assert any(p.startswith(prefix) for p in packages), (prefix, packages)
    return packages


def test_health_probe_needs_grpc_and_abseil(script, health_probe):
    check_packages(run(script, health_probe), ["libc6", "libstdc++6", "libgrpc++", "libabsl"])


def test_server_libraries_all_resolve_to_packages(request, script, health_probe):
    server = request.config.getoption("--axion-server")
    if not server:
        pytest.fail("--axion-server is required for this test")
    packages = check_packages(
        run(script, server, health_probe),
        ["libc6", "libgrpc++", "libprotobuf", "libprometheus-cpp-core", "libprometheus-cpp-pull"],
    )
    # The health probe adds nothing the server does not already need.
    assert packages == run(script, server).stdout.split()


@pytest.fixture(scope="module")
def compiler():
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.fail("no C compiler to build the test programs")
    return cc


def build_program_linking(compiler, tmp_path, soname):
    """A program linked against a fresh shared library with the given soname, found through an
    rpath in tmp_path; returns (program, library)."""
    (tmp_path / "lib.c").write_text("int axion_test_symbol(void) { return 7; }\n")
    (tmp_path / "main.c").write_text(
        "int axion_test_symbol(void);\nint main(void) { return axion_test_symbol() - 7; }\n"
    )
    library = tmp_path / soname
    subprocess.run(
        [compiler, "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", library, tmp_path / "lib.c"],
        check=True,
    )
    program = tmp_path / "program"
    subprocess.run(
        [compiler, "-o", program, tmp_path / "main.c", library, f"-Wl,-rpath,{tmp_path}"],
        check=True,
    )
    return program, library


def test_library_owned_by_no_package_fails(script, compiler, tmp_path):
    program, library = build_program_linking(compiler, tmp_path, "libaxionlocal.so.1")
    result = run(script, program)
    assert result.returncode == 1
    assert f"{library} (needed by {program}) belongs to no Debian package" in result.stderr


def test_missing_library_fails(script, compiler, tmp_path):
    program, library = build_program_linking(compiler, tmp_path, "libaxionmissing.so.1")
    library.unlink()
    result = run(script, program)
    assert result.returncode == 1
    assert "needs libaxionmissing.so.1, which is not installed" in result.stderr


def test_missing_driver_library_is_left_to_the_container_runtime(script, compiler, tmp_path):
    # libcuda.so.1 comes from the host driver at run time, never from the image.
    program, library = build_program_linking(compiler, tmp_path, "libcuda.so.1")
    library.unlink()
    result = run(script, program)
    assert result.returncode == 0, result.stderr
    assert "libc6" in result.stdout.split()


def test_no_arguments_is_a_usage_error(script):
    assert run(script).returncode == 2
