"""The Kubernetes overlays as kustomize renders them (`kubectl kustomize`): what a cluster would
receive from `kubectl apply -k deploy/kubernetes/overlays/<name>`."""

import json
import re
import subprocess

import pytest
import yaml

NAMESPACED_KINDS = {
    "StatefulSet",
    "Service",
    "PodDisruptionBudget",
    "HorizontalPodAutoscaler",
    "ServiceMonitor",
    "PrometheusRule",
}


@pytest.fixture(scope="module")
def kubectl(request):
    binary = request.config.getoption("--kubectl")
    version = subprocess.run(
        [binary, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=60
    )
    assert version.returncode == 0, version.stderr
    kustomize = json.loads(version.stdout).get("kustomizeVersion", "")
    match = re.match(r"v(\d+)", kustomize)
    if not match or int(match.group(1)) < 4:
        # Components (kind: Component) need kustomize 4 or later (kubectl 1.21+).
        pytest.skip(f"kubectl's kustomize {kustomize!r} is too old for components")
    return binary


def render(kubectl, deploy_dir, overlay):
    result = subprocess.run(
        [kubectl, "kustomize", str(deploy_dir / "kubernetes" / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    objects = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


@pytest.mark.parametrize("overlay", ["cpu", "gpu"])
def test_overlay_renders_the_full_deployment(kubectl, deploy_dir, overlay):
    objects = render(kubectl, deploy_dir, overlay)
    assert set(objects) == {
        ("Namespace", "axion"),
        ("StatefulSet", "axion"),
        ("Service", "axion"),
        ("Service", "axion-headless"),
        ("PodDisruptionBudget", "axion"),
        ("HorizontalPodAutoscaler", "axion"),
        ("ServiceMonitor", "axion"),
        ("PrometheusRule", "axion"),
    }
    for (kind, name), obj in objects.items():
        if kind in NAMESPACED_KINDS:
            assert obj["metadata"]["namespace"] == "axion", (kind, name)
    statefulset = objects[("StatefulSet", "axion")]
    # The HPA owns the replica count.
    assert "replicas" not in statefulset["spec"]
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "axion-server:0.1.0"
    env_names = [e["name"] for e in container["env"]]
    assert len(env_names) == len(set(env_names)), env_names
    # The patch merged into the base container rather than replacing its probes and args.
    assert container["readinessProbe"]["grpc"]["port"] == 50051
    assert "--replica_id=$(AXION_REPLICA_ID)" in container["args"]
    assert statefulset["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "snapshots"


def test_gpu_overlay_renders_gpu_limits_and_cuda_backend(kubectl, deploy_dir):
    statefulset = render(kubectl, deploy_dir, "gpu")[("StatefulSet", "axion")]
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["AXION_BACKEND"] == "cuda"
    assert env["AXION_DRAIN_TIMEOUT_S"] == "30"


def test_cpu_overlay_renders_without_gpus(kubectl, deploy_dir):
    statefulset = render(kubectl, deploy_dir, "cpu")[("StatefulSet", "axion")]
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["AXION_BACKEND"] == "cpu"
    assert "tolerations" not in statefulset["spec"]["template"]["spec"]
