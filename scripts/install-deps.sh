#!/usr/bin/env bash
# Installs Axion's build and test dependencies from Debian packages. Idempotent: packages that are
# already present are skipped, and nothing is done at all when everything is there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  libabsl-dev libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  prometheus-cpp-dev libtinyxml2-dev libpng-dev libomp-dev
  libmujoco-samples libmujoco-dev
  python3 python3-venv python3-pip python3-numpy python3-grpcio python3-grpc-tools
  python3-protobuf python3-pytest python3-yaml
  prometheus
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
