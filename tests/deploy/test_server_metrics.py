"""A real axion-server on loopback ports against what deploy/ assumes of it: the metric names
the dashboard, alert rules and adapter query; the counter semantics the alert ratios rely on;
health states through the image's probe; snapshot on SIGTERM and restore under the same
replica id (how Kubernetes moves worlds across pod restarts)."""

import signal
import subprocess

import grpc
import pytest

from deploy_support import (
    HISTOGRAM_SUFFIXES,
    SERVER_METRICS,
    AxionServerProcess,
    adapter_queries,
    axion_metric_names,
    base_metric_name,
    box_on_plane_scene,
    pendulum_scene,
    unconvergeable_options,
    dashboard_paths,
    dashboard_queries,
    generate_stubs,
    load_json,
    load_yaml,
    rule_queries,
    sample_value,
)

NONCONVERGED_FLAG = 1  # WorldStats.flags bit: Newton did not converge


@pytest.fixture(scope="module")
def pb(repo_root, tmp_path_factory):
    return generate_stubs(repo_root, tmp_path_factory.mktemp("stubs"))


@pytest.fixture(scope="module")
def server(server_binary, tmp_path_factory):
    with AxionServerProcess(server_binary, tmp_path_factory.mktemp("server"), replica_id=5) as s:
        yield s


@pytest.fixture(scope="module")
def stub(pb, server):
    axion_pb2, axion_pb2_grpc = pb
    with grpc.insecure_channel(server.grpc_target) as channel:
        yield axion_pb2_grpc.SimulationStub(channel)


def run_probe(health_probe, server, *args):
    return subprocess.run(
        [str(health_probe), f"--addr={server.grpc_target}", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_help_lists_the_servers_flags(server_binary):
    # what an operator reads before writing a container's arguments
    result = subprocess.run(
        [str(server_binary), "--help"], capture_output=True, text=True, timeout=30
    )
    for flag in ("--port", "--backend", "--max_worlds_per_client", "--drain_timeout_s", "--auth_token"):
        assert flag in result.stdout, result.stdout


def test_health_probe_reports_serving(health_probe, server):
    for args in ((), ("--service=axion.v1.Simulation",)):
        result = run_probe(health_probe, server, *args)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "SERVING"


def test_every_metric_is_exported_with_its_type(pb, server, stub):
    # Labelled families (axion_requests_total) have no series before their first request.
    stub.ListWorlds(pb[0].ListWorldsRequest())
    types, samples = server.scrape()
    missing = sorted(set(SERVER_METRICS) - set(types))
    assert missing == [], f"axion-server does not export {missing}"
    for name, kind in SERVER_METRICS.items():
        assert types[name] == kind, name
        if kind == "histogram":
            series = {s for s, _, _ in samples}
            for suffix in HISTOGRAM_SUFFIXES:
                assert name + suffix in series, name + suffix
            assert any(
                s == name + "_bucket" and labels.get("le") == "+Inf" for s, labels, _ in samples
            ), name


def test_deploy_queries_use_only_exported_metrics(pb, server, stub, deploy_dir):
    stub.ListWorlds(pb[0].ListWorldsRequest())
    types, _ = server.scrape()
    queries = []
    for path in dashboard_paths(deploy_dir):
        queries += dashboard_queries(load_json(path))
    queries += rule_queries(load_yaml(deploy_dir / "prometheus" / "rules" / "axion-alerts.yml"))
    adapter = load_yaml(deploy_dir / "kubernetes" / "prometheus-adapter" / "config.yaml")
    queries += adapter_queries(adapter, 'job="axion"', "instance")
    unknown = sorted(
        {
            (where, name)
            for where, expr in queries
            for name in axion_metric_names(expr)
            if base_metric_name(name, types) not in types
        }
    )
    assert unknown == []


def counters(server):
    _, samples = server.scrape()

    def value(name, **labels):
        try:
            return sample_value(samples, name, **labels)
        except KeyError:
            return 0.0

    return {
        "world_steps": value("axion_world_steps_total"),
        "nonconverged": value("axion_nonconverged_world_steps_total"),
        "newton_count": value("axion_newton_iterations_count"),
        "contacts_count": value("axion_contacts_per_world_count"),
        "contacts_sum": value("axion_contacts_per_world_sum"),
        "batch_worlds_sum": value("axion_batch_worlds_sum"),
        "engine_calls": value("axion_engine_step_calls_total"),
        "engine_seconds_count": value("axion_engine_step_seconds_count"),
        "queue_wait_count": value("axion_queue_wait_seconds_count"),
        "step_ok": value("axion_requests_total", method="Step", code="OK"),
        "step_not_found": value("axion_requests_total", method="Step", code="NOT_FOUND"),
        "worlds_alive": value("axion_worlds_alive"),
    }


def test_counters_match_the_work_done(pb, server, stub):
    axion_pb2, _ = pb
    before = counters(server)
    scene = box_on_plane_scene(axion_pb2)
    relaxed = stub.CreateWorlds(axion_pb2.CreateWorldsRequest(scene=scene, count=6))
    # One Newton iteration against an unreachable tolerance: these worlds never converge.
    strict = stub.CreateWorlds(
        axion_pb2.CreateWorldsRequest(
            scene=pendulum_scene(axion_pb2),
            count=2,
            solver_options=unconvergeable_options(axion_pb2),
        )
    )
    world_ids = list(relaxed.world_ids) + list(strict.world_ids)
    assert len(world_ids) == 8
    # World ids carry the replica id in their high 16 bits.
    assert {w >> 48 for w in world_ids} == {5}
    assert counters(server)["worlds_alive"] == before["worlds_alive"] + 8

    calls, steps_per_call = 5, 3
    flagged = 0
    for _ in range(calls):
        response = stub.Step(
            axion_pb2.StepRequest(
                world_ids=world_ids,
                steps=[steps_per_call],
                observe=axion_pb2.ObservationRequest(stats=True),
            )
        )
        stats = response.observations.stats
        assert list(response.observations.world_ids) == world_ids
        flagged += sum(1 for f in stats.flags if f & NONCONVERGED_FLAG)
        assert min(stats.contact_count[: len(relaxed.world_ids)]) > 0
    with pytest.raises(grpc.RpcError) as error:
        stub.Step(axion_pb2.StepRequest(world_ids=[(5 << 48) | 0xFFFFFFFF]))
    assert error.value.code() == grpc.StatusCode.NOT_FOUND

    after = counters(server)
    delta = {k: after[k] - before[k] for k in after}
    world_calls = len(world_ids) * calls
    assert delta["world_steps"] == world_calls * steps_per_call
    # The alert and dashboard ratio: non-converged (world, call) pairs over one Newton
    # observation per (world, call) pair, never over world steps.
    assert delta["newton_count"] == world_calls
    assert delta["nonconverged"] == flagged
    assert flagged == len(strict.world_ids) * calls
    assert delta["contacts_count"] == world_calls
    assert delta["contacts_sum"] >= len(relaxed.world_ids) * calls  # boxes resting on the plane
    assert delta["step_ok"] == calls
    assert delta["step_not_found"] == 1
    assert delta["queue_wait_count"] >= calls
    assert delta["engine_calls"] >= 1
    assert delta["engine_seconds_count"] == delta["engine_calls"]
    assert delta["batch_worlds_sum"] >= world_calls

    stub.DestroyWorlds(axion_pb2.DestroyWorldsRequest(world_ids=world_ids))
    assert counters(server)["worlds_alive"] == before["worlds_alive"]


def test_sigterm_saves_worlds_and_the_same_replica_restores_them(
    pb, server_binary, health_probe, tmp_path
):
    axion_pb2, axion_pb2_grpc = pb
    snapshot_dir = tmp_path / "snapshots"
    snapshot_dir.mkdir()
    with AxionServerProcess(
        server_binary, tmp_path / "first", replica_id=3, snapshot_dir=snapshot_dir
    ) as first:
        with grpc.insecure_channel(first.grpc_target) as channel:
            stub = axion_pb2_grpc.SimulationStub(channel)
            created = stub.CreateWorlds(
                axion_pb2.CreateWorldsRequest(scene=box_on_plane_scene(axion_pb2), count=3)
            )
            world_ids = list(created.world_ids)
            stub.Step(axion_pb2.StepRequest(world_ids=world_ids, steps=[7]))
        assert {w >> 48 for w in world_ids} == {3}
        first.signal(signal.SIGTERM)
        assert first.wait(timeout_s=30) == 0, first.log()
    assert any(snapshot_dir.iterdir()), "no snapshot written on SIGTERM"

    with AxionServerProcess(
        server_binary, tmp_path / "second", replica_id=3, snapshot_dir=snapshot_dir
    ) as second:
        assert run_probe(health_probe, second).returncode == 0
        assert second.scrape()[1] and counters(second)["worlds_alive"] == 3
        with grpc.insecure_channel(second.grpc_target) as channel:
            stub = axion_pb2_grpc.SimulationStub(channel)
            listed = stub.ListWorlds(axion_pb2.ListWorldsRequest())
            assert [w.world_id for w in listed.worlds] == world_ids
            assert [w.step_count for w in listed.worlds] == [7, 7, 7]
