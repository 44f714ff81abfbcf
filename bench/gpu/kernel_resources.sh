#!/usr/bin/env bash
# What each device kernel of a CUDA build holds per thread, without a GPU: registers and stack
# frame (cuobjdump -res-usage) and the local-memory loads and stores in its code (LDL / STL in
# cuobjdump -sass; instructions in the code, not executed). A kernel's stack frame and local
# accesses are its thread's arrays, spills and copies in local memory, which on the device
# live in L1 at best and in device memory at worst (RESULTS.md, "Kernels that copied the
# batch's view"). Sorted by stack frame, largest first.
#
# cuobjdump and nvdisasm come from the CUDA toolkit where it has them; otherwise from PyPI
# (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm), installed once under TOOLS_DIR.
#
# usage: bench/gpu/kernel_resources.sh [BINARY (build/release/tests/cuda/cuda_backend_test)]
#                                      [TOOLS_DIR (build/cuda-tools)]
set -euo pipefail
binary=${1:-build/release/tests/cuda/cuda_backend_test}
tools=${2:-build/cuda-tools}
[ -f "$binary" ] || { echo "$binary is missing: build with the CUDA backend first" >&2; exit 1; }

find_tool() {
  local name=$1
  if command -v "$name" >/dev/null; then command -v "$name"; return; fi
  for dir in /usr/local/cuda/bin "$tools"/nvidia/*/bin; do
    [ -x "$dir/$name" ] && { echo "$dir/$name"; return; }
  done
}
if [ -z "$(find_tool cuobjdump)" ] || [ -z "$(find_tool nvdisasm)" ]; then
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --target "$tools" nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
fi
cuobjdump=$(find_tool cuobjdump)
nvdisasm=$(find_tool nvdisasm)
[ -n "$cuobjdump" ] && [ -n "$nvdisasm" ] || { echo "cuobjdump or nvdisasm not found" >&2; exit 1; }
export PATH="$(dirname "$nvdisasm"):$PATH"  # cuobjdump -sass runs nvdisasm

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# mangled name, registers, stack bytes
"$cuobjdump" -res-usage "$binary" 2>/dev/null | grep -A1 '^ *Function' | paste - - |
  sed -E 's/.*Function ([^:]*):.*REG:([0-9]+) STACK:([0-9]+).*/\1 \2 \3/' | sort -u >"$work/res"
# mangled name, local loads, local stores
"$cuobjdump" -sass "$binary" 2>/dev/null |
  awk '/Function : / { name = $3; ldl[name] += 0; stl[name] += 0 }
       /[[:space:]]LDL/ { ldl[name]++ }
       /[[:space:]]STL/ { stl[name]++ }
       END { for (n in ldl) print n, ldl[n], stl[n] }' | sort -u >"$work/sass"
join "$work/res" "$work/sass" | sort -k3,3nr -k2,2nr >"$work/joined"

printf '%9s %11s %11s %12s  %s\n' registers stack_bytes local_loads local_stores kernel
while read -r name registers stack loads stores; do
  # the pass's lambda, as the demangler names it, without the namespaces and the arguments
  kernel=$(echo "$name" | c++filt |
    sed -E 's/axion::(cuda_backend|pipeline|kernels)::|axion:://g; s/\(CudaExec&, BatchView const&[^)]*\)//g' |
    sed -E 's/^void //; s/>\(int, int, .*$/>/' | cut -c1-150)
  printf '%9s %11s %11s %12s  %s\n' "$registers" "$stack" "$loads" "$stores" "$kernel"
done <"$work/joined"
