"""A real Prometheus (the Debian package) scraping a real axion-server on loopback while a client
steps worlds: the server's metrics arrive with non-zero values, the alert rules evaluate without
errors (and the non-convergence and server-down alerts go pending when their condition holds),
and every dashboard and adapter query is valid PromQL that the server's data answers."""

import json
import math
import time
import urllib.error
import urllib.parse

import grpc
import pytest
import yaml

from deploy_support import (
    LOOPBACK,
    SERVER_METRICS,
    AxionServerProcess,
    ManagedProcess,
    adapter_queries,
    box_on_plane_scene,
    pendulum_scene,
    unconvergeable_options,
    dashboard_paths,
    dashboard_queries,
    free_port,
    generate_stubs,
    http_get,
    load_json,
    load_yaml,
    substitute_grafana_variables,
    wait_for,
)

# Stepping runs this long, paced, so that Prometheus (scraping every second) sees the counters
# grow over several scrapes; the call count is bounded too.
STEP_SECONDS = 6.0
STEP_PAUSE_SECONDS = 0.01
MAX_STEP_CALLS = 2000
MIN_SCRAPES = 5


class Prometheus(ManagedProcess):
    def __init__(self, binary, work_dir, metrics_target, rules_file):
        config = {
            "global": {
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "evaluation_interval": "1s",
            },
            "rule_files": [str(rules_file)],
            "scrape_configs": [
                {"job_name": "axion", "static_configs": [{"targets": [metrics_target]}]}
            ],
        }
        config_path = work_dir / "prometheus.yml"
        config_path.write_text(yaml.safe_dump(config))
        self.port = free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        super().__init__(
            [
                binary,
                f"--config.file={config_path}",
                f"--storage.tsdb.path={work_dir / 'data'}",
                f"--web.listen-address={LOOPBACK}:{self.port}",
                "--storage.tsdb.retention.time=1h",
                "--log.level=warn",
            ],
            work_dir / "prometheus.log",
        )

        def ready():
            if not self.alive():
                raise RuntimeError(f"prometheus exited:\n{self.log()}")
            return "Ready" in http_get(f"{self.url}/-/ready", timeout_s=2)

        wait_for(ready, timeout_s=60, interval_s=0.25, what="prometheus to be ready")

    def api(self, path, **params):
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            body = json.loads(http_get(url, timeout_s=10))
        except urllib.error.HTTPError as error:  # bad queries answer 400 with a JSON error
            body = json.loads(error.read().decode("utf-8"))
        return body

    def query(self, expr):
        body = self.api("query", query=expr)
        if body["status"] != "success":
            raise AssertionError(f"query failed: {expr}\n{body.get('error')}")
        return body["data"]["result"]


@pytest.fixture(scope="module")
def stack(request, repo_root, deploy_dir, server_binary, tmp_path_factory):
    """Server, Prometheus scraping it, and a client that has stepped worlds."""
    pb2, pb2_grpc = generate_stubs(repo_root, tmp_path_factory.mktemp("stubs"))
    work_dir = tmp_path_factory.mktemp("stack")
    with AxionServerProcess(server_binary, work_dir / "server", replica_id=1) as server:
        prometheus_dir = work_dir / "prometheus"
        prometheus_dir.mkdir()
        with Prometheus(
            request.config.getoption("--prometheus"),
            prometheus_dir,
            f"{LOOPBACK}:{server.metrics_port}",
            deploy_dir / "prometheus" / "rules" / "axion-alerts.yml",
        ) as prometheus:
            with grpc.insecure_channel(server.grpc_target) as channel:
                stub = pb2_grpc.SimulationStub(channel)
                scene = box_on_plane_scene(pb2)
                relaxed = stub.CreateWorlds(pb2.CreateWorldsRequest(scene=scene, count=6))
                # Two worlds that never converge: a steady non-converged fraction.
                strict = stub.CreateWorlds(
                    pb2.CreateWorldsRequest(
                        scene=pendulum_scene(pb2),
                        count=2,
                        solver_options=unconvergeable_options(pb2),
                    )
                )
                world_ids = list(relaxed.world_ids) + list(strict.world_ids)
                deadline = time.monotonic() + STEP_SECONDS
                calls = 0
                while time.monotonic() < deadline and calls < MAX_STEP_CALLS:
                    stub.Step(pb2.StepRequest(world_ids=world_ids, steps=[2]))
                    calls += 1
                    time.sleep(STEP_PAUSE_SECONDS)
                # One client error, so the failed-requests panel has a series.
                with pytest.raises(grpc.RpcError):
                    stub.Step(pb2.StepRequest(world_ids=[(1 << 48) | 0xFFFFFFFF]))
                _, samples = server.scrape()
                final_steps = sum(v for s, _, v in samples if s == "axion_world_steps_total")
                # Prometheus has the data once it has scraped the final counter value, and rates
                # need several samples.
                wait_for(
                    lambda: float(
                        prometheus.query('axion_world_steps_total{job="axion"}')[0]["value"][1]
                    )
                    >= final_steps,
                    timeout_s=30,
                    interval_s=0.5,
                    what="Prometheus to scrape the final step count",
                )
                scrapes = 'count_over_time(axion_world_steps_total{job="axion"}[1m])'
                wait_for(
                    lambda: scalar(prometheus.query(scrapes)) >= MIN_SCRAPES,
                    timeout_s=30,
                    interval_s=0.5,
                    what=f"{MIN_SCRAPES} scrapes",
                )
                yield {"server": server, "prometheus": prometheus, "calls": calls}


def scalar(result):
    assert len(result) == 1, result
    return float(result[0]["value"][1])


def test_scraped_metrics_have_non_zero_values(stack):
    prometheus = stack["prometheus"]
    assert scalar(prometheus.query('up{job="axion"}')) == 1
    present = {}
    for name, kind in SERVER_METRICS.items():
        series = f"{name}_count" if kind == "histogram" else name
        result = prometheus.query(f'sum({series}{{job="axion"}})')
        assert result, f"Prometheus has no {series}"
        present[name] = scalar(result)
    # Everything the stepping client exercises; the queue and memory gauges may be 0 on an idle
    # CPU replica, and the capacity gauge is 0 there by definition.
    for name in (
        "axion_requests_total",
        "axion_worlds_alive",
        "axion_batch_worlds",
        "axion_queue_wait_seconds",
        "axion_engine_step_seconds",
        "axion_engine_step_calls_total",
        "axion_newton_iterations",
        "axion_cr_iterations",
        "axion_solver_residual",
        "axion_nonconverged_world_steps_total",
        "axion_contacts_per_world",
        "axion_world_steps_total",
    ):
        assert present[name] > 0, name
    assert present["axion_worlds_alive"] == 8
    step_ok = 'sum(axion_requests_total{job="axion", method="Step", code="OK"})'
    assert scalar(prometheus.query(step_ok)) == stack["calls"]
    assert scalar(prometheus.query('sum(rate(axion_world_steps_total{job="axion"}[5s]))')) > 0


def test_alert_rules_evaluate_and_non_convergence_goes_pending(stack):
    prometheus = stack["prometheus"]

    def evaluated():
        groups = prometheus.api("rules")["data"]["groups"]
        rules = [r for g in groups for r in g["rules"]]
        # Never-evaluated rules report Go's zero time.
        done = rules and all(not r["lastEvaluation"].startswith("0001") for r in rules)
        return rules if done else None

    rules = wait_for(evaluated, timeout_s=30, interval_s=0.5, what="rules to be evaluated")
    for rule in rules:
        assert rule["health"] == "ok", (rule["name"], rule.get("lastError"))
    states = {r["name"]: r["state"] for r in rules}
    # A quarter of the worlds cannot converge: the condition holds, the 15 minute `for` has not
    # passed.
    assert states["AxionNonConvergedWorldStepsRising"] == "pending"
    for name in (
        "AxionServerDown",
        "AxionNoServers",
        "AxionRequestsFailing",
        "AxionDeviceMemoryNearFull",
    ):
        assert states[name] == "inactive", name


def test_adapter_metric_is_computable(stack, deploy_dir):
    prometheus = stack["prometheus"]
    adapter = load_yaml(deploy_dir / "kubernetes" / "prometheus-adapter" / "config.yaml")
    for where, query in adapter_queries(adapter, 'job="axion"', "instance"):
        result = prometheus.query(query)
        assert len(result) == 1, (where, result)
        value = float(result[0]["value"][1])
        assert math.isfinite(value) and value >= 0, (where, value)
        assert result[0]["metric"]["instance"] == f"{LOOPBACK}:{stack['server'].metrics_port}"


def test_every_dashboard_query_runs(stack, deploy_dir):
    prometheus = stack["prometheus"]
    answered = 0
    for path in dashboard_paths(deploy_dir):
        for where, expr in dashboard_queries(load_json(path)):
            result = prometheus.query(substitute_grafana_variables(expr, rate_interval="10s"))
            answered += bool(result)
            if "device_memory" not in expr:
                # Device memory ratios are empty on a CPU replica (no capacity); every other
                # panel has data after the stepping.
                assert result, f"{path.name}: {where} returned no data: {expr}"
    assert answered > 20


def test_server_down_alert_goes_pending_when_the_server_stops(stack):
    # Runs last in this module: it stops the server.
    prometheus = stack["prometheus"]
    stack["server"].stop()

    def pending():
        alerts = prometheus.api("alerts")["data"]["alerts"]
        return [a for a in alerts if a["labels"]["alertname"] == "AxionServerDown"]

    (alert,) = wait_for(pending, timeout_s=30, interval_s=0.5, what="AxionServerDown to go pending")
    assert alert["state"] == "pending"
    assert alert["labels"]["severity"] == "critical"
    assert alert["labels"]["instance"] == f"{LOOPBACK}:{stack['server'].metrics_port}"
