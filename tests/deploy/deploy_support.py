"""Helpers shared by the deploy tests: reading the deploy/ files, PromQL metric names, the
Prometheus text format, and child processes (axion-server, prometheus) on loopback ports that
are always stopped."""

import contextlib
import json
import math
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

LOOPBACK = "127.0.0.1"

# The metrics axion-server exports (deploy/ depends on each of these names).
SERVER_METRICS = {
    "axion_requests_total": "counter",
    "axion_worlds_alive": "gauge",
    "axion_batch_worlds": "histogram",
    "axion_queue_wait_seconds": "histogram",
    "axion_engine_step_seconds": "histogram",
    "axion_engine_step_calls_total": "counter",
    "axion_newton_iterations": "histogram",
    "axion_cr_iterations": "histogram",
    "axion_solver_residual": "histogram",
    "axion_nonconverged_world_steps_total": "counter",
    "axion_halved_world_steps_total": "counter",
    "axion_redone_world_steps_total": "counter",
    "axion_contacts_per_world": "histogram",
    "axion_device_memory_bytes": "gauge",
    "axion_device_memory_capacity_bytes": "gauge",
    "axion_world_steps_total": "counter",
    "axion_queue_depth": "gauge",
    "axion_scene_cache_lookups_total": "counter",
    "axion_scene_prepare_seconds": "histogram",
}

HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


# ---------------------------------------------------------------------------------------------
# deploy/ files


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def load_yaml_all(path):
    with open(path, encoding="utf-8") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def dashboard_paths(deploy_dir):
    return sorted((pathlib.Path(deploy_dir) / "grafana" / "dashboards").glob("*.json"))


def iter_panels(panels):
    for panel in panels:
        yield panel
        yield from iter_panels(panel.get("panels", []))


def dashboard_queries(dashboard):
    """(where, expr) for every PromQL expression of a dashboard: panel targets and template
    variable queries."""
    queries = []
    for panel in iter_panels(dashboard.get("panels", [])):
        for target in panel.get("targets", []):
            if target.get("expr"):
                where = f'panel "{panel.get("title")}" {target.get("refId")}'
                queries.append((where, target["expr"]))
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") != "query":
            continue
        query = variable.get("query")
        if isinstance(query, dict):
            query = query.get("query")
        match = re.fullmatch(r"label_values\((.*),\s*\w+\)", query or "")
        if match:
            # label_values(selector, label) is Grafana's; its selector is PromQL.
            queries.append((f'variable "{variable["name"]}"', match.group(1)))
    return queries


def rule_queries(rules_doc):
    return [
        (f'rule "{rule.get("alert") or rule.get("record")}"', rule["expr"])
        for group in rules_doc["groups"]
        for rule in group["rules"]
    ]


def adapter_queries(adapter_config, label_matchers, group_by):
    """prometheus-adapter rules with their templates filled in as the adapter would for one
    metric request."""
    queries = []
    for rule in adapter_config["rules"]:
        series = re.match(r"\s*([a-zA-Z_:][a-zA-Z0-9_:]*)", rule["seriesQuery"]).group(1)
        query = (
            rule["metricsQuery"]
            .replace("<<.Series>>", series)
            .replace("<<.LabelMatchers>>", label_matchers)
            .replace("<<.GroupBy>>", group_by)
        )
        queries.append((f'adapter rule "{rule["name"]["as"]}"', query))
    return queries


def substitute_grafana_variables(expr, job="axion", rate_interval="30s"):
    """The PromQL Grafana would send: dashboard variables replaced by concrete values."""
    return (
        expr.replace("$__rate_interval", rate_interval)
        .replace("$__interval", rate_interval)
        .replace("${job}", job)
        .replace("$job", job)
        .replace("${instance}", ".*")
        .replace("$instance", ".*")
    )


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_LABELS = re.compile(r"\{[^{}]*\}")
_BY = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENT = re.compile(r"\b[a-zA-Z_:][a-zA-Z0-9_:]*\b")


def axion_metric_names(expr):
    """Names of the axion_* series an expression selects (label names, strings and grouping
    clauses are not metric names)."""
    stripped = _BY.sub(" ", _LABELS.sub(" ", _STRING.sub(" ", expr)))
    return {name for name in _IDENT.findall(stripped) if name.startswith("axion_")}


def base_metric_name(series_name, exported_types):
    """Family name of a series: axion_x_bucket -> axion_x when axion_x is a histogram."""
    for suffix in HISTOGRAM_SUFFIXES:
        if series_name.endswith(suffix):
            base = series_name[: -len(suffix)]
            if exported_types.get(base) == "histogram":
                return base
    return series_name


# ---------------------------------------------------------------------------------------------
# Prometheus text exposition format

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$")
_LABEL_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text):
    """(types, samples): family name -> type, and a list of (series name, labels dict, value)."""
    types = {}
    samples = []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(None, 3)
            types[name] = kind.strip()
        elif line and not line.startswith("#"):
            match = _SAMPLE.match(line)
            if not match:
                raise ValueError(f"malformed exposition line: {line!r}")
            labels = dict(_LABEL_PAIR.findall(match.group(3) or ""))
            samples.append((match.group(1), labels, float(match.group(4))))
    return types, samples


def sample_value(samples, name, **labels):
    """Sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    found = False
    for series, series_labels, value in samples:
        if series == name and all(series_labels.get(k) == v for k, v in labels.items()):
            total += value
            found = True
    if not found:
        raise KeyError(f"no sample {name}{labels}")
    return total


# ---------------------------------------------------------------------------------------------
# Processes and loopback networking


def free_port():
    """A port that was free on loopback a moment ago (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout_s, interval_s=0.1, what="condition"):
    deadline = time.monotonic() + timeout_s
    last_error = None
    while time.monotonic() < deadline:
        try:
            result = predicate()
            if result:
                return result
        except Exception as error:  # keep polling; report the last failure on timeout
            last_error = error
        time.sleep(interval_s)
    raise TimeoutError(f"timed out after {timeout_s}s waiting for {what}; last error: {last_error}")


def http_get(url, timeout_s=5.0):
    assert urllib.parse.urlparse(url).hostname == LOOPBACK, url
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return response.read().decode("utf-8")


class ManagedProcess:
    """A child process in its own process group, with its output in a log file. stop() ends the
    whole group: SIGTERM, then SIGKILL after a grace period. Use as a context manager so a
    failing test never leaves it running."""

    def __init__(self, args, log_path, env=None):
        self.args = [str(a) for a in args]
        self.log_path = pathlib.Path(log_path)
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            self.args,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def alive(self):
        return self.process.poll() is None

    def log(self):
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def signal(self, signum):
        if self.alive():
            os.killpg(self.process.pid, signum)

    def wait(self, timeout_s):
        return self.process.wait(timeout=timeout_s)

    def stop(self, grace_s=10.0):
        if self.alive():
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=grace_s)
            except ProcessLookupError:
                pass
        # Children the process may have left in its group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self._log.close()
        return self.process.returncode


def generate_stubs(repo_root, out_dir):
    """Python gRPC stubs for proto/axion/v1 in out_dir, importable as axion.v1.axion_pb2."""
    from grpc_tools import protoc

    proto_dir = pathlib.Path(repo_root) / "proto"
    include_dirs = [str(proto_dir)]
    # Well-known types (google/protobuf/wrappers.proto): grpc_tools ships them in pip builds;
    # Debian's build relies on libprotobuf-dev's copy.
    with contextlib.suppress(Exception):
        import importlib.resources

        include_dirs.append(str(importlib.resources.files("grpc_tools") / "_proto"))
    include_dirs.append("/usr/include")
    args = ["grpc_tools.protoc"]
    args += [f"-I{d}" for d in include_dirs if pathlib.Path(d).is_dir()]
    args += [f"--python_out={out_dir}", f"--grpc_python_out={out_dir}"]
    args += [str(p) for p in sorted((proto_dir / "axion" / "v1").glob("*.proto"))]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed: {' '.join(args)}")
    if str(out_dir) not in sys.path:
        sys.path.insert(0, str(out_dir))
    from axion.v1 import axion_pb2, axion_pb2_grpc

    return axion_pb2, axion_pb2_grpc


# ---------------------------------------------------------------------------------------------
# axion-server under test

_SERVING_LINE = re.compile(r"serving on [^ ]+:(\d+) \(backend (\w+), metrics port (-?\d+)\)")


class AxionServerProcess(ManagedProcess):
    """axion-server on loopback. Ports 0 let the server pick free ports, which it reports in its
    'serving on' line, so parallel test runs never collide."""

    def __init__(self, binary, work_dir, replica_id=0, snapshot_dir=None, extra_args=()):
        work_dir = pathlib.Path(work_dir)
        work_dir.mkdir(parents=True, exist_ok=True)
        args = [
            binary,
            f"--host={LOOPBACK}",
            "--port=0",
            "--metrics_port=0",
            "--backend=cpu",
            "--engine_threads=2",
            f"--replica_id={replica_id}",
            "--drain_timeout_s=20",
        ]
        if snapshot_dir is not None:
            args.append(f"--snapshot_dir={snapshot_dir}")
        args += list(extra_args)
        env = dict(os.environ)
        env.pop("AXION_AUTH_TOKEN", None)
        log_index = len(list(work_dir.glob("axion-server*.log")))
        super().__init__(args, work_dir / f"axion-server-{log_index}.log", env=env)
        match = wait_for(
            lambda: self._serving_line(), timeout_s=60, what="axion-server to report serving"
        )
        self.grpc_port = int(match.group(1))
        self.backend = match.group(2)
        self.metrics_port = int(match.group(3))
        self.grpc_target = f"{LOOPBACK}:{self.grpc_port}"
        self.metrics_url = f"http://{LOOPBACK}:{self.metrics_port}/metrics"

    def _serving_line(self):
        if not self.alive():
            raise RuntimeError(f"axion-server exited with {self.process.returncode}:\n{self.log()}")
        return _SERVING_LINE.search(self.log())

    def scrape(self):
        return parse_exposition(http_get(self.metrics_url))


def box_on_plane_scene(pb, name="box-on-plane"):
    """A 1 kg, 0.2 m cube resting 0.5 mm into a ground plane: one contact manifold from the first
    step, so the contact and solver metrics see real work."""
    half = 0.1
    mass = 1.0
    inertia = mass * (2 * half) ** 2 / 6.0  # solid cube about its centre
    model = pb.ModelDescription(name=name)
    model.bodies.add(
        name="box",
        mass=mass,
        inertia=[inertia, inertia, inertia],
        pose=pb.Pose(pos=pb.Vec3(x=0.0, y=0.0, z=half - 0.0005)),
    )
    model.shapes.add(name="ground", body=-1, type=pb.SHAPE_TYPE_PLANE)
    model.shapes.add(
        name="box", body=0, type=pb.SHAPE_TYPE_BOX, size=pb.Vec3(x=half, y=half, z=half)
    )
    return pb.Scene(model=model)


def pendulum_scene(pb, name="pendulum"):
    """A 1 kg bob on a 0.5 m massless arm, hinged to the world about the y axis, starting
    horizontal. Its joint rows always leave a residual, so with one Newton iteration and an
    unreachable tolerance every step ends non-converged."""
    model = pb.ModelDescription(name=name)
    model.bodies.add(
        name="bob", mass=1.0, inertia=[1e-3, 1e-3, 1e-3], pose=pb.Pose(pos=pb.Vec3(x=0.5, z=1.0))
    )
    # Joint frame at the hinge (0.5 m back along -x from the bob), its x axis turned onto world y.
    half_turn = math.sqrt(0.5)
    model.joints.add(
        name="hinge",
        type=pb.JOINT_TYPE_REVOLUTE,
        parent=-1,
        child=0,
        child_frame=pb.Pose(pos=pb.Vec3(x=-0.5), quat=pb.Quat(w=half_turn, z=half_turn)),
    )
    return pb.Scene(model=model)


def unconvergeable_options(pb):
    """Solver options no world with constraint rows can converge under."""
    options = pb.SolverOptions()
    options.newton_iterations.value = 1
    options.newton_tolerance.value = 1e-300
    return options
