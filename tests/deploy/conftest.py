"""Command-line options of the deploy tests; CTest passes them (tests/deploy/CMakeLists.txt)."""

import pathlib

import pytest


def pytest_addoption(parser):
    parser.addoption("--repo-root", required=True, help="Source tree root.")
    parser.addoption("--axion-server", default=None, help="axion-server binary.")
    parser.addoption("--health-probe", default=None, help="axion-health-probe binary.")
    parser.addoption("--prometheus", default="prometheus", help="Prometheus server binary.")
    parser.addoption("--kubectl", default="kubectl", help="kubectl binary (for kustomize).")


@pytest.fixture(scope="session")
def repo_root(request):
    return pathlib.Path(request.config.getoption("--repo-root")).resolve()


@pytest.fixture(scope="session")
def deploy_dir(repo_root):
    return repo_root / "deploy"


def _required_path(request, option):
    value = request.config.getoption(option)
    if not value:
        pytest.fail(f"{option} is required for this test")
    path = pathlib.Path(value)
    if not path.is_file():
        pytest.fail(f"{option}={value} does not exist")
    return path


@pytest.fixture(scope="session")
def server_binary(request):
    return _required_path(request, "--axion-server")


@pytest.fixture(scope="session")
def health_probe(request):
    return _required_path(request, "--health-probe")
