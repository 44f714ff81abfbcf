"""axion-health-probe, the container HEALTHCHECK, against a stand-in grpc.health.v1 server on
loopback whose answers the test chooses byte by byte."""

import subprocess
from concurrent import futures

import grpc
import pytest

from deploy_support import LOOPBACK, free_port

# HealthCheckResponse wire bytes: field 1 (varint) = status.
SERVING = b"\x08\x01"
NOT_SERVING = b"\x08\x02"
SERVICE_UNKNOWN = b"\x08\x03"


class StandInHealthServer:
    """Answers /grpc.health.v1.Health/Check with `response` bytes, or aborts with `abort_code`;
    records every request's bytes."""

    def __init__(self):
        self.response = SERVING
        self.abort_code = None
        self.requests = []
        handler = grpc.method_handlers_generic_handler(
            "grpc.health.v1.Health", {"Check": grpc.unary_unary_rpc_method_handler(self._check)}
        )
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port(f"{LOOPBACK}:0")
        self.server.start()

    def _check(self, request, context):
        self.requests.append(request)
        if self.abort_code is not None:
            context.abort(self.abort_code, "stand-in failure")
        return self.response


@pytest.fixture(scope="module")
def stand_in():
    server = StandInHealthServer()
    yield server
    server.server.stop(grace=None)


def probe(health_probe, *args):
    return subprocess.run(
        [str(health_probe), *args], capture_output=True, text=True, timeout=30
    )


def test_serving_exits_zero(health_probe, stand_in):
    stand_in.response, stand_in.abort_code = SERVING, None
    result = probe(health_probe, f"--addr={LOOPBACK}:{stand_in.port}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "SERVING"
    # The overall status: an empty HealthCheckRequest.
    assert stand_in.requests[-1] == b""


@pytest.mark.parametrize(
    "response, name",
    [(NOT_SERVING, "NOT_SERVING"), (SERVICE_UNKNOWN, "SERVICE_UNKNOWN"), (b"", "UNKNOWN")],
)
def test_any_other_status_exits_one(health_probe, stand_in, response, name):
    stand_in.response, stand_in.abort_code = response, None
    result = probe(health_probe, f"--addr={LOOPBACK}:{stand_in.port}")
    assert result.returncode == 1, result.stderr
    assert result.stdout.strip() == name


def test_named_service_is_sent(health_probe, stand_in):
    stand_in.response, stand_in.abort_code = SERVING, None
    result = probe(
        health_probe, f"--addr={LOOPBACK}:{stand_in.port}", "--service=axion.v1.Simulation"
    )
    assert result.returncode == 0, result.stderr
    name = b"axion.v1.Simulation"
    assert stand_in.requests[-1] == b"\x0a" + bytes([len(name)]) + name


def test_fields_a_newer_server_adds_are_skipped(health_probe, stand_in):
    # field 2 (length-delimited "abc"), field 3 (fixed64), then status SERVING.
    stand_in.response = b"\x12\x03abc" + b"\x19" + bytes(8) + SERVING
    stand_in.abort_code = None
    result = probe(health_probe, f"--addr={LOOPBACK}:{stand_in.port}")
    assert result.returncode == 0, result.stderr


def test_malformed_response_is_a_failure(health_probe, stand_in):
    stand_in.response, stand_in.abort_code = b"\x08", None  # truncated varint
    result = probe(health_probe, f"--addr={LOOPBACK}:{stand_in.port}")
    assert result.returncode == 2
    assert "malformed" in result.stderr


def test_rpc_error_exits_two(health_probe, stand_in):
    stand_in.abort_code = grpc.StatusCode.NOT_FOUND
    result = probe(health_probe, f"--addr={LOOPBACK}:{stand_in.port}", "--service=missing")
    assert result.returncode == 2
    assert "code 5" in result.stderr


def test_no_server_exits_two_within_the_deadline(health_probe):
    result = probe(health_probe, f"--addr={LOOPBACK}:{free_port()}", "--timeout_s=1")
    assert result.returncode == 2
    assert "health RPC failed" in result.stderr


def test_bad_command_line_exits_three(health_probe):
    assert probe(health_probe, "--timeout_s=0").returncode == 3
    assert probe(health_probe, "--tls", "--tls_ca=/nonexistent/ca.pem").returncode == 3


def test_help_lists_the_probes_flags(health_probe):
    result = probe(health_probe, "--help")
    for flag in ("--addr", "--service", "--timeout_s", "--tls"):
        assert flag in result.stdout, result.stdout
