"""Static checks of deploy/: every file parses, and the pieces agree with each other and with
the server's contract (ports, health probes, metric names, drain timeout, snapshot volume)."""

import fnmatch
import pathlib
import re

import pytest

from deploy_support import (
    SERVER_METRICS,
    adapter_queries,
    axion_metric_names,
    base_metric_name,
    dashboard_paths,
    dashboard_queries,
    iter_panels,
    load_json,
    load_yaml,
    load_yaml_all,
    rule_queries,
)

GRPC_PORT = 50051
METRICS_PORT = 8080
JOB = "axion"


# ---------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def kube_dir(deploy_dir):
    return deploy_dir / "kubernetes"


@pytest.fixture(scope="module")
def base_objects(kube_dir):
    kustomization = load_yaml(kube_dir / "base" / "kustomization.yaml")
    objects = {}
    for resource in kustomization["resources"]:
        for doc in load_yaml_all(kube_dir / "base" / resource):
            objects[(doc["kind"], doc["metadata"]["name"])] = doc
    return objects


@pytest.fixture(scope="module")
def statefulset(base_objects):
    return base_objects[("StatefulSet", "axion")]


@pytest.fixture(scope="module")
def container(statefulset):
    containers = statefulset["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["axion-server"]
    return containers[0]


def flag_value(args, flag):
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{flag}=")]
    assert len(values) == 1, f"--{flag} given {len(values)} times in {args}"
    return values[0]


def env_value(container, name):
    for entry in container.get("env", []):
        if entry["name"] == name:
            return entry
    raise KeyError(f"env {name} not set on container {container['name']}")


def resolved_flag(container, flag):
    """A flag's value with $(VAR) references resolved from the container's literal env."""
    value = flag_value(container["args"], flag)
    return re.sub(r"\$\((\w+)\)", lambda m: env_value(container, m.group(1))["value"], value)


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def promql_metrics(queries):
    names = set()
    for _, expr in queries:
        names |= axion_metric_names(expr)
    return names


def unknown_metrics(names):
    """Series names that are neither an exported family nor a histogram series of one."""
    types = dict(SERVER_METRICS)
    return sorted(n for n in names if base_metric_name(n, types) not in types)


# ---------------------------------------------------------------------------------------------
# Kubernetes


def test_every_kubernetes_file_parses(kube_dir):
    files = sorted(kube_dir.rglob("*.yaml"))
    assert len(files) >= 15
    for path in files:
        docs = load_yaml_all(path)
        assert docs, f"{path} is empty"
        for doc in docs:
            assert isinstance(doc, dict), path


def test_kustomizations_reference_existing_files(kube_dir):
    for path in kube_dir.rglob("kustomization.yaml"):
        kustomization = load_yaml(path)
        entries = kustomization.get("resources", []) + kustomization.get("components", [])
        entries += [p["path"] for p in kustomization.get("patches", []) if "path" in p]
        assert entries, path
        for entry in entries:
            assert (path.parent / entry).exists(), f"{path}: {entry} does not exist"


def test_statefulset_pods_are_selected_and_named_through_headless_service(
    base_objects, statefulset
):
    pod_labels = statefulset["spec"]["template"]["metadata"]["labels"]
    assert matches(statefulset["spec"]["selector"]["matchLabels"], pod_labels)
    headless = base_objects[("Service", statefulset["spec"]["serviceName"])]
    assert headless["spec"]["clusterIP"] == "None"
    # Clients resolve axion-<ordinal>.axion-headless even while a replica starts or drains.
    assert headless["spec"]["publishNotReadyAddresses"] is True
    assert matches(headless["spec"]["selector"], pod_labels)
    assert {p["name"]: p["port"] for p in headless["spec"]["ports"]} == {
        "grpc": GRPC_PORT,
        "metrics": METRICS_PORT,
    }
    service = base_objects[("Service", "axion")]
    assert service["spec"].get("clusterIP") != "None"
    assert matches(service["spec"]["selector"], pod_labels)
    assert [(p["name"], p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [
        ("grpc", GRPC_PORT, "grpc")
    ]


def test_container_ports_are_named_and_match_flags(container):
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"grpc": GRPC_PORT, "metrics": METRICS_PORT}
    assert int(flag_value(container["args"], "port")) == GRPC_PORT
    assert int(flag_value(container["args"], "metrics_port")) == METRICS_PORT


def test_probes_use_grpc_health_on_the_grpc_port(container):
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == GRPC_PORT, probe
        # The server's overall status, not a named service.
        assert container[probe]["grpc"].get("service", "") == "", probe


def test_grace_period_outlasts_drain_and_liveness_outlasts_drain(statefulset, container):
    drain_timeout_s = int(resolved_flag(container, "drain_timeout_s"))
    pre_stop = container["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    pre_stop_s = int(pre_stop[1])
    grace_s = statefulset["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    # preStop runs inside the grace period, before SIGTERM; the server then exits within its
    # drain timeout (snapshots included). Leave a margin for process exit and volume flushes.
    assert grace_s >= pre_stop_s + drain_timeout_s + 15, (grace_s, pre_stop_s, drain_timeout_s)
    liveness = container["livenessProbe"]
    assert liveness["periodSeconds"] * liveness["failureThreshold"] > drain_timeout_s
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 120


def test_replica_id_is_the_pod_ordinal(container):
    assert flag_value(container["args"], "replica_id") == "$(AXION_REPLICA_ID)"
    source = env_value(container, "AXION_REPLICA_ID")["valueFrom"]["fieldRef"]["fieldPath"]
    assert source == "metadata.labels['apps.kubernetes.io/pod-index']"


def test_every_arg_variable_is_defined(container):
    defined = {e["name"] for e in container["env"]}
    for arg in container["args"]:
        for name in re.findall(r"\$\((\w+)\)", arg):
            assert name in defined, f"{arg} uses undefined {name}"


def test_snapshots_go_to_a_per_pod_volume(statefulset, container):
    snapshot_dir = flag_value(container["args"], "snapshot_dir")
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert snapshot_dir in mounts
    claim_names = [c["metadata"]["name"] for c in statefulset["spec"]["volumeClaimTemplates"]]
    assert mounts[snapshot_dir] in claim_names
    retention = statefulset["spec"]["persistentVolumeClaimRetentionPolicy"]
    assert retention == {"whenScaled": "Retain", "whenDeleted": "Retain"}


def test_pod_runs_as_the_image_user(statefulset, container, repo_root):
    pod_security = statefulset["spec"]["template"]["spec"]["securityContext"]
    assert pod_security["runAsNonRoot"] is True
    dockerfile = (repo_root / "Dockerfile").read_text()
    user = re.findall(r"^USER\s+(\d+)", dockerfile, re.MULTILINE)
    assert user and int(user[-1]) == pod_security["runAsUser"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_pod_disruption_budget_covers_the_pods(base_objects, statefulset):
    pdb = base_objects[("PodDisruptionBudget", "axion")]
    assert pdb["apiVersion"] == "policy/v1"
    assert pdb["spec"]["maxUnavailable"] == 1
    pod_labels = statefulset["spec"]["template"]["metadata"]["labels"]
    assert matches(pdb["spec"]["selector"]["matchLabels"], pod_labels)


def overlay_patch(kube_dir, overlay):
    kustomization = load_yaml(kube_dir / "overlays" / overlay / "kustomization.yaml")
    assert "../../base" in kustomization["resources"]
    assert set(kustomization["components"]) == {
        "../../components/monitoring",
        "../../components/autoscaling",
    }
    (patch,) = kustomization["patches"]
    doc = load_yaml(kube_dir / "overlays" / overlay / patch["path"])
    assert (doc["kind"], doc["metadata"]["name"]) == ("StatefulSet", "axion")
    (container,) = doc["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "axion-server"
    return kustomization, doc, container


def test_gpu_overlay_requests_a_gpu_and_the_cuda_backend(kube_dir):
    kustomization, doc, container = overlay_patch(kube_dir, "gpu")
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert env_value(container, "AXION_BACKEND")["value"] == "cuda"
    tolerations = doc["spec"]["template"]["spec"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations
    assert kustomization["namespace"] == "axion"


def test_cpu_overlay_selects_the_cpu_backend_without_gpus(kube_dir):
    kustomization, _, container = overlay_patch(kube_dir, "cpu")
    assert env_value(container, "AXION_BACKEND")["value"] == "cpu"
    assert "nvidia.com/gpu" not in container["resources"].get("limits", {})
    assert kustomization["namespace"] == "axion"


def test_service_monitor_scrapes_the_metrics_port_as_job_axion(kube_dir, base_objects):
    monitor = load_yaml(kube_dir / "components" / "monitoring" / "servicemonitor.yaml")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["kind"] == "ServiceMonitor"
    selector = monitor["spec"]["selector"]["matchLabels"]
    selected = [
        svc
        for (kind, _), svc in base_objects.items()
        if kind == "Service" and matches(selector, svc["metadata"]["labels"])
    ]
    assert [s["metadata"]["name"] for s in selected] == ["axion-headless"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in selected[0]["spec"]["ports"]}
    assert endpoint["port"] == "metrics"
    assert endpoint["path"] == "/metrics"
    # The job label comes from this Service label; rules and dashboard expect job="axion".
    assert selected[0]["metadata"]["labels"][monitor["spec"]["jobLabel"]] == JOB


def test_prometheus_rule_matches_the_rules_file(kube_dir, deploy_dir):
    rule = load_yaml(kube_dir / "components" / "monitoring" / "prometheusrule.yaml")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["kind"] == "PrometheusRule"
    rules_file = load_yaml(deploy_dir / "prometheus" / "rules" / "axion-alerts.yml")
    assert rule["spec"]["groups"] == rules_file["groups"]


def test_hpa_scales_the_statefulset_on_an_adapter_metric(kube_dir):
    hpa = load_yaml(kube_dir / "components" / "autoscaling" / "horizontalpodautoscaler.yaml")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "axion",
    }
    assert 1 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "Pods"
    adapter = load_yaml(kube_dir / "prometheus-adapter" / "config.yaml")
    served = {rule["name"]["as"] for rule in adapter["rules"]}
    assert metric["pods"]["metric"]["name"] in served
    assert metric["pods"]["metric"]["name"] == "axion_queue_wait_seconds_mean"
    # Scale-down parks worlds in snapshots: it must be slower than scale-up.
    behavior = hpa["spec"]["behavior"]
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] > behavior["scaleUp"][
        "stabilizationWindowSeconds"
    ]
    component = load_yaml(kube_dir / "components" / "autoscaling" / "kustomization.yaml")
    assert "op: remove" in component["patches"][0]["patch"]
    assert "/spec/replicas" in component["patches"][0]["patch"]


def test_adapter_config_and_helm_values_agree_and_query_exported_metrics(kube_dir):
    config = load_yaml(kube_dir / "prometheus-adapter" / "config.yaml")
    values = load_yaml(kube_dir / "prometheus-adapter" / "values.yaml")
    assert values["rules"]["custom"] == config["rules"]
    assert values["rules"]["default"] is False
    for rule in config["rules"]:
        # The adapter maps these labels to the pod the HPA asks about.
        assert rule["resources"]["overrides"]["pod"] == {"resource": "pod"}
        assert rule["resources"]["overrides"]["namespace"] == {"resource": "namespace"}
        assert re.search(rule["name"]["matches"], rule["seriesQuery"].split("{")[0])
    queries = adapter_queries(config, 'namespace="axion",pod="axion-0"', "pod")
    names = promql_metrics(queries)
    assert "axion_queue_wait_seconds_sum" in names
    assert unknown_metrics(names) == []


# ---------------------------------------------------------------------------------------------
# Prometheus


def test_alert_rules_cover_the_required_conditions_and_known_metrics(deploy_dir):
    rules = load_yaml(deploy_dir / "prometheus" / "rules" / "axion-alerts.yml")
    alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"] if "alert" in r}
    for name in (
        "AxionServerDown",
        "AxionQueueWaitHigh",
        "AxionNonConvergedWorldStepsRising",
        "AxionDeviceMemoryNearFull",
    ):
        assert name in alerts
        assert alerts[name]["labels"]["severity"] in {"warning", "critical"}
        assert alerts[name]["annotations"]["summary"]
    for _, expr in rule_queries(rules):
        # Every selector is scoped to the job the scrape configs and ServiceMonitor produce.
        for selector in re.findall(r"\b(?:up|axion_\w+)\{([^}]*)\}", expr):
            assert f'job="{JOB}"' in selector, expr
    assert unknown_metrics(promql_metrics(rule_queries(rules))) == []


def test_prometheus_config_scrapes_the_compose_server(deploy_dir):
    config = load_yaml(deploy_dir / "prometheus" / "prometheus.yml")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    (static,) = jobs[JOB]["static_configs"]
    compose = load_yaml(deploy_dir / "compose" / "docker-compose.yml")
    command = compose["services"]["axion"]["command"]
    assert static["targets"] == [f"axion:{flag_value(command, 'metrics_port')}"]
    assert jobs[JOB].get("metrics_path", "/metrics") == "/metrics"
    rule_globs = config["rule_files"]
    matched = [p for g in rule_globs for p in (deploy_dir / "prometheus").glob(g)]
    assert deploy_dir / "prometheus" / "rules" / "axion-alerts.yml" in matched


# ---------------------------------------------------------------------------------------------
# Grafana


def test_dashboards_parse_and_query_only_exported_metrics(deploy_dir):
    paths = dashboard_paths(deploy_dir)
    assert paths
    for path in paths:
        dashboard = load_json(path)
        assert dashboard["uid"] and dashboard["title"]
        panel_ids = [p["id"] for p in iter_panels(dashboard["panels"])]
        assert len(panel_ids) == len(set(panel_ids)), f"{path}: duplicate panel ids"
        for panel in iter_panels(dashboard["panels"]):
            grid = panel["gridPos"]
            assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24, panel["title"]
            if panel["type"] != "row":
                assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
                assert panel["targets"], panel["title"]
        queries = dashboard_queries(dashboard)
        assert unknown_metrics(promql_metrics(queries)) == []


def test_dashboard_shows_every_server_metric(deploy_dir):
    used = set()
    for path in dashboard_paths(deploy_dir):
        for name in promql_metrics(dashboard_queries(load_json(path))):
            used.add(base_metric_name(name, SERVER_METRICS))
    assert sorted(set(SERVER_METRICS) - used) == []


def test_grafana_provisioning_points_at_the_compose_mounts(deploy_dir):
    provisioning = deploy_dir / "grafana" / "provisioning"
    datasources = load_yaml(provisioning / "datasources" / "prometheus.yml")
    (datasource,) = datasources["datasources"]
    assert datasource["type"] == "prometheus"
    assert datasource["url"] == "http://prometheus:9090"
    providers = load_yaml(provisioning / "dashboards" / "axion.yml")
    (provider,) = providers["providers"]
    compose = load_yaml(deploy_dir / "compose" / "docker-compose.yml")
    mounts = dict(v.split(":")[:2][::-1] for v in compose["services"]["grafana"]["volumes"])
    assert mounts[provider["options"]["path"]] == "../grafana/dashboards"
    assert mounts["/etc/grafana/provisioning"] == "../grafana/provisioning"


# ---------------------------------------------------------------------------------------------
# Compose


def test_compose_stack_is_consistent(deploy_dir, repo_root):
    compose_dir = deploy_dir / "compose"
    compose = load_yaml(compose_dir / "docker-compose.yml")
    services = compose["services"]
    assert set(services) == {"axion", "prometheus", "grafana"}
    axion = services["axion"]
    build_context = (compose_dir / axion["build"]["context"]).resolve()
    assert build_context == repo_root
    assert (build_context / axion["build"]["dockerfile"]).is_file()
    command = axion["command"]
    published = {p.rsplit(":", 1)[1] for p in axion["ports"]}
    assert published == {flag_value(command, "port"), flag_value(command, "metrics_port")}
    # Ports stay on loopback unless the user widens them.
    for service in services.values():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), port
    snapshot_dir = flag_value(command, "snapshot_dir")
    assert any(v.endswith(f":{snapshot_dir}") for v in axion["volumes"])
    grace_s = int(axion["stop_grace_period"].rstrip("s"))
    assert grace_s > int(flag_value(command, "drain_timeout_s"))
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (compose_dir / source).exists(), volume
            else:
                assert source in compose["volumes"], volume


def test_compose_gpu_override_only_changes_the_backend_and_devices(deploy_dir):
    base = load_yaml(deploy_dir / "compose" / "docker-compose.yml")["services"]["axion"]
    gpu = load_yaml(deploy_dir / "compose" / "docker-compose.gpu.yml")["services"]["axion"]
    expected = [a if not a.startswith("--backend=") else "--backend=cuda" for a in base["command"]]
    assert gpu["command"] == expected
    (device,) = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]


# ---------------------------------------------------------------------------------------------
# Container image


def dockerfile_instructions(text):
    """(instruction, arguments) pairs with line continuations joined and comments dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [tuple(line.strip().split(None, 1)) for line in joined.splitlines() if line.strip()]


def test_dockerfile_builds_like_make_build_and_runs_unprivileged(repo_root):
    instructions = dockerfile_instructions((repo_root / "Dockerfile").read_text())
    by_kind = {}
    for kind, args in instructions:
        by_kind.setdefault(kind.upper(), []).append(args)
    stages = by_kind["FROM"]
    assert len(stages) == 2 and stages[0].endswith("AS build") and stages[1].endswith("AS runtime")
    runs = " ".join(by_kind["RUN"])
    assert "scripts/install-deps.sh" in runs
    assert "cmake --preset release" in runs
    assert "-DAXION_CUDA=ON" in runs
    args = dict(a.split("=", 1) for a in by_kind["ARG"] if "=" in a)
    assert args["CUDA_ARCHITECTURES"].strip('"') == "80;86;89;90"
    assert args["CUDA_PACKAGE_VERSION"].startswith("12-")
    assert sorted(" ".join(by_kind["EXPOSE"]).split()) == ["50051", "8080"]
    assert by_kind["USER"][-1].split(":")[0] != "0"
    (healthcheck,) = by_kind["HEALTHCHECK"]
    assert "axion-health-probe" in healthcheck and f"127.0.0.1:{GRPC_PORT}" in healthcheck
    assert by_kind["ENTRYPOINT"] == ['["/usr/local/bin/axion-server"]']
    # Every local file the build copies exists.
    for args in by_kind["COPY"]:
        if args.startswith("--from"):
            continue
        for source in args.split()[:-1]:
            assert (repo_root / source).exists(), source
    for path in re.findall(r"(deploy/docker/[\w./-]+|scripts/[\w.-]+)", runs):
        assert (repo_root / path).exists(), path


def test_dockerignore_keeps_what_the_build_needs(repo_root):
    patterns = [
        line.strip()
        for line in (repo_root / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    def ignored(path):
        parts = pathlib.PurePosixPath(path).parts
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(fnmatch.fnmatch(p, pat.strip("/")) for p in prefixes for pat in patterns)

    for needed in (
        "CMakeLists.txt",
        "CMakePresets.json",
        "engine/CMakeLists.txt",
        "proto/axion/v1/axion.proto",
        "server/CMakeLists.txt",
        "scripts/install-deps.sh",
        "deploy/docker/runtime-packages.sh",
        "deploy/docker/health-probe/CMakeLists.txt",
        "deploy/docker/health-probe/health_probe.cc",
    ):
        assert not ignored(needed), needed
    for unwanted in ("build/release/CMakeCache.txt", ".git/HEAD", "engine/__pycache__/x.pyc"):
        assert ignored(unwanted), unwanted
