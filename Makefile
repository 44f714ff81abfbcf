# Axion: the two commands of the README, and their building blocks.
#   make run   - build everything, start axion-server, run the humanoid client example against it
#   make test  - build everything and run every test (C++, Python client, deployment)
# Both install missing Debian packages first (scripts/install-deps.sh; idempotent).

BUILD_DIR ?= build/release
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
VENV ?= build/venv
PYTHON ?= /usr/bin/python3

.PHONY: all deps configure build venv run test bench clean

all: build

deps:
	bash scripts/install-deps.sh

# The client tests run in the venv, so it exists before CMake looks for it.
configure: deps venv
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DAXION_CLIENT_PYTHON=$(abspath $(VENV))/bin/python $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

# Python client in a virtual environment that sees Debian's numpy/grpcio/protobuf.
venv: deps
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv --system-site-packages $(VENV)
	$(VENV)/bin/python -m pip install -q --no-build-isolation --no-index --no-deps ./clients/python

run: build
	bash scripts/run.sh $(BUILD_DIR) $(VENV)

test: build
	AXION_PYTHON=$(abspath $(VENV))/bin/python ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS) --timeout 1200

bench: build
	bash scripts/bench.sh $(BUILD_DIR)

clean:
	rm -rf build
