#!/usr/bin/env bash
# The README's main job: start axion-server (GPU when present, else CPU), run the humanoid
# example against it with a progress bar, print throughput, stop the server.
set -euo pipefail
build_dir=${1:-build/release}
venv=${2:-build/venv}
server="$build_dir/server/axion-server"
[ -x "$server" ] || { echo "run: $server is missing; run 'make build' first" >&2; exit 1; }

port=$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
metrics_port=$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp -t axion-server.XXXXXX.log)
"$server" --port="$port" --metrics_port="$metrics_port" --backend=auto >"$log" 2>&1 &
server_pid=$!
cleanup() {
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
}
trap cleanup EXIT

echo "axion-server started on 127.0.0.1:$port (metrics on :$metrics_port, log $log)"
"$venv/bin/axion" --target="127.0.0.1:$port" health --wait=30 >/dev/null

"$venv/bin/python" clients/python/examples/humanoid_throughput.py \
  --target="127.0.0.1:$port" --worlds="${AXION_RUN_WORLDS:-64}" --steps="${AXION_RUN_STEPS:-200}" --progress
