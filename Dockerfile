# syntax=docker/dockerfile:1
#
# Axion server image: the gRPC simulation server with its CUDA backend.
#
#   docker build -t axion-server:0.1.0 .
#   docker run --gpus all -p 50051:50051 -p 8080:8080 axion-server:0.1.0
#
# Both stages are Debian 12, like the machines the project is developed and tested on:
# scripts/install-deps.sh installs Debian 12 package names (gRPC 1.51, protobuf 3.21, abseil
# 20220623, prometheus-cpp 1.0), and NVIDIA publishes no Debian image, so the build stage adds the
# CUDA toolkit from NVIDIA's Debian 12 apt repository rather than starting from an Ubuntu
# nvidia/cuda image whose package names and library versions differ. The runtime stage is
# debian:12-slim with only the shared libraries the server links (found by
# deploy/docker/runtime-packages.sh); the GPU driver (libcuda) is mounted from the host by the
# NVIDIA container runtime, as for nvidia/cuda images. x86_64 only (the CUDA repository path
# below).

ARG DEBIAN_IMAGE=debian:12
ARG DEBIAN_SLIM_IMAGE=debian:12-slim

# ---------------------------------------------------------------------------------------------
# build: CUDA toolkit + the project's dependencies, then the same CMake build as `make build`.
FROM ${DEBIAN_IMAGE} AS build

# CUDA 12.x from NVIDIA's Debian 12 repository; the package suffix is the version with a dash.
ARG CUDA_PACKAGE_VERSION=12-8
# The common data-centre GPUs: A100 (80), A10/A40/RTX A-series (86), L4/L40 (89), H100/H200 (90).
ARG CUDA_ARCHITECTURES="80;86;89;90"
ARG CUDA_REPOSITORY=https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64

ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends ca-certificates curl \
 && curl -fsSL -o /tmp/cuda-keyring.deb "${CUDA_REPOSITORY}/cuda-keyring_1.1-1_all.deb" \
 && dpkg -i /tmp/cuda-keyring.deb \
 && rm /tmp/cuda-keyring.deb \
 && apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      cuda-compiler-${CUDA_PACKAGE_VERSION} \
      cuda-cudart-dev-${CUDA_PACKAGE_VERSION} \
      cuda-cccl-${CUDA_PACKAGE_VERSION} \
      cuda-libraries-dev-${CUDA_PACKAGE_VERSION} \
 && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/local/cuda/bin:${PATH}

WORKDIR /src

# Dependencies first, in their own layer, so source edits do not reinstall them.
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*

COPY . .

# The `release` preset is what `make build` configures (build/release); tests and benchmarks are
# not built into the image.
RUN cmake --preset release -G Ninja \
      -DAXION_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}" \
      -DAXION_BUILD_TESTS=OFF \
      -DAXION_BUILD_BENCHMARKS=OFF \
 && cmake --build build/release --target axion-server -j"$(nproc)" \
 && cmake -S deploy/docker/health-probe -B build/health-probe -G Ninja \
 && cmake --build build/health-probe -j"$(nproc)"

# Stage what the runtime image needs: the two binaries, the Debian packages of the libraries they
# load, and NVIDIA's apt source for any CUDA library among them.
RUN mkdir -p /out/bin /out/apt \
 && cp "$(find build/release -type f -name axion-server -perm -u+x | head -n 1)" /out/bin/ \
 && cp build/health-probe/axion-health-probe /out/bin/ \
 && deploy/docker/runtime-packages.sh /out/bin/axion-server /out/bin/axion-health-probe \
      > /out/runtime-packages.txt \
 && cp /usr/share/keyrings/cuda-archive-keyring.gpg /out/apt/ \
 && cp /etc/apt/sources.list.d/cuda-*.list /out/apt/ \
 && cat /out/runtime-packages.txt

# ---------------------------------------------------------------------------------------------
# runtime: the server, its shared libraries, a non-root user.
FROM ${DEBIAN_SLIM_IMAGE} AS runtime

ENV DEBIAN_FRONTEND=noninteractive
COPY --from=build /out/runtime-packages.txt /out/apt/ /tmp/axion/
# ca-certificates first: NVIDIA's repository is HTTPS, and slim images ship no CA bundle.
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends ca-certificates \
 && mv /tmp/axion/cuda-archive-keyring.gpg /usr/share/keyrings/ \
 && mv /tmp/axion/cuda-*.list /etc/apt/sources.list.d/ \
 && apt-get update -qq \
 && xargs -a /tmp/axion/runtime-packages.txt apt-get install -y -qq --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/axion

COPY --from=build /out/bin/axion-server /out/bin/axion-health-probe /usr/local/bin/

# A fixed numeric uid, so Kubernetes can check runAsNonRoot and volumes can be chowned to it
# (fsGroup 10001 in deploy/kubernetes).
RUN groupadd --system --gid 10001 axion \
 && useradd --system --uid 10001 --gid axion --home-dir /var/lib/axion --shell /usr/sbin/nologin axion \
 && mkdir -p /var/lib/axion/snapshots \
 && chown -R axion:axion /var/lib/axion

# The NVIDIA container runtime reads these to expose the GPUs and mount the driver's compute
# libraries (libcuda) and nvidia-smi.
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility

USER 10001:10001
WORKDIR /var/lib/axion

# 50051: gRPC API and grpc.health.v1; 8080: Prometheus metrics at /metrics.
EXPOSE 50051 8080

# Docker and Compose health: asks the server's grpc.health.v1 service (NOT_SERVING while it
# restores snapshots at start and while it drains) with the project's own small probe, as there
# is no grpc_health_probe package in Debian. Kubernetes ignores HEALTHCHECK and uses its native
# gRPC probes on the same service (deploy/kubernetes). Probes port 50051: keep --port at its
# default when relying on this check.
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
  CMD ["/usr/local/bin/axion-health-probe", "--addr=127.0.0.1:50051", "--timeout_s=3"]

# SIGTERM (Docker's default stop signal) starts the drain and the snapshot to --snapshot_dir;
# give containers a stop timeout longer than --drain_timeout_s (Compose: stop_grace_period).
ENTRYPOINT ["/usr/local/bin/axion-server"]
CMD ["--port=50051", "--metrics_port=8080", "--backend=auto", "--snapshot_dir=/var/lib/axion/snapshots"]
