#!/usr/bin/env bash
# Packs the GPU test and benchmark binaries with what they need at run time into one folder, for
# a GPU machine that has the NVIDIA driver but not this build's libraries or MuJoCo's sample
# models: the two executables, every shared library they load that is not the C library's own
# (Abseil, tinyxml2, libpng, OpenMP, the C++ runtime, the CUDA runtime) and the sample models the
# tests and the humanoid scenes read, and the tests' own models. On the GPU machine:
#
#   BUNDLE/setup.sh            # installs the models under /usr/share/mujoco/model if missing
#   export LD_LIBRARY_PATH=BUNDLE/lib
#   BUNDLE/bin/cuda_backend_test; bench/gpu/short_run.sh BUNDLE/bin
#
# usage: bench/gpu/bundle.sh [BUILD_DIR (build/release)] [BUNDLE (gpu-bundle)]
set -euo pipefail
build=${1:-build/release}
bundle=${2:-gpu-bundle}
models=/usr/share/mujoco/model
# bring the binaries up to date first: a stale CUDA unit against newer headers reads the batch's
# arrays at the wrong offsets
cmake --build "$build" --target cuda_backend_test gpu_bench
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/model"
for exe in tests/cuda/cuda_backend_test bench/gpu/gpu_bench; do
  [ -x "$build/$exe" ] || { echo "$build/$exe is missing: build with the CUDA backend first" >&2; exit 1; }
  cp "$build/$exe" "$bundle/bin/"
  # the C library, the loader and the kernel's vDSO come from the machine that runs them
  ldd "$build/$exe" | awk '$3 ~ /^\// { print $3 }' |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
    xargs -r -I{} cp -L -n {} "$bundle/lib/"
done
for dir in humanoid tendon_arm slider_crank composite adhesion; do
  cp -r "$models/$dir" "$bundle/model/"
done
# the tests' own models, read from the source tree's path compiled into cuda_backend_test
# (AXION_TEST_MODELS), which the GPU machine's copy of the tree need not share
source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
mkdir -p "$bundle/test-models"
cp -r "$source_dir/tests/io/models/." "$bundle/test-models/"
echo "$source_dir/tests/io/models" >"$bundle/test-models.path"
cat >"$bundle/setup.sh" <<'SETUP'
#!/usr/bin/env bash
# Installs the bundled MuJoCo sample models where the tests and gpu_bench look for them.
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /usr/share/mujoco/model
for dir in "$here"/model/*; do
  [ -e "/usr/share/mujoco/model/$(basename "$dir")" ] || cp -r "$dir" /usr/share/mujoco/model/
done
# ... and the tests' own models where the test binary was built to read them
test_models=$(cat "$here/test-models.path")
if [ ! -e "$test_models" ]; then
  mkdir -p "$test_models"
  cp -r "$here/test-models/." "$test_models/"
fi
SETUP
chmod +x "$bundle/setup.sh"
du -sh "$bundle"
