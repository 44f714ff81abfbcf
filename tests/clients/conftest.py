"""Fixtures of the Python client tests: a real axion-server on a free loopback port.

The server binary comes from $AXION_SERVER, else `axion-server` on PATH; CTest passes the one it
built (tests/clients/CMakeLists.txt). The tests import the installed axion-client package
(pip install ./clients/python), not the source tree.
"""

import os
import pathlib
import shutil
import sys
import uuid

import pytest

import axion
from clients_support import start_server


@pytest.fixture(scope="session")
def server_binary():
    value = os.environ.get("AXION_SERVER") or shutil.which("axion-server")
    if not value:
        pytest.fail("no axion-server binary: set AXION_SERVER=PATH (ctest does)")
    path = pathlib.Path(value)
    if not path.is_file():
        pytest.fail(f"axion-server binary {path} does not exist")
    return path


@pytest.fixture(scope="session")
def server(server_binary):
    """One server for the whole session; every test uses its own client identity."""
    process = start_server(server_binary)
    yield process
    process.stop()


@pytest.fixture
def client_id():
    """A fresh client identity: the test sees only the worlds it creates."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def client(server, client_id):
    with axion.Client(server.target, client_id=client_id, timeout=120) as c:
        yield c
        try:
            c.destroy_worlds(all_worlds=True)
        except axion.AxionError:
            pass


@pytest.fixture(scope="session")
def axion_cli():
    """Path of the installed `axion` console script (next to this interpreter)."""
    script = pathlib.Path(sys.executable).parent / "axion"
    if not script.is_file():
        pytest.fail(f"the axion console script is not installed next to {sys.executable}")
    return script

