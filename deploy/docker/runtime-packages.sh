#!/usr/bin/env bash
# Prints, one per line, the Debian packages that own the shared libraries the given ELF files
# load (directly or indirectly), so the runtime image installs exactly what the build linked
# against instead of a hand-kept list that drifts from the CMake targets.
#
# Usage: runtime-packages.sh ELF...
# Fails (exit 1) when a library is missing or owned by no package, naming the library, so a
# runtime image never ships with an unresolved dependency. libcuda.so.1 is the exception: the
# NVIDIA container runtime mounts it from the host driver at run time, so it is skipped; so are
# libraries of a CUDA toolkit installed outside dpkg under /usr/local/cuda (build hosts), which
# the image installs from NVIDIA's Debian repository.
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 ELF..." >&2
  exit 2
fi

status=0
declare -A needed_by=()  # library path as ldd printed it -> the ELF that needs it
for elf in "$@"; do
  if [ ! -f "$elf" ]; then
    echo "runtime-packages: no such file: $elf" >&2
    exit 1
  fi
  while read -r line; do
    case "$line" in
      *"=> not found"*)
        library=${line%% *}
        if [ "$library" = "libcuda.so.1" ]; then continue; fi
        echo "runtime-packages: $elf needs $library, which is not installed" >&2
        status=1
        ;;
      *"=> /"*)
        path=${line#*=> }
        path=${path%% (*}
        needed_by["$path"]=$elf
        ;;
    esac
  done < <(ldd "$elf")
done

# dpkg records a file under the path its package shipped it at; with merged /usr that can be
# either /lib/... or /usr/lib/..., so look up the path as ldd printed it, its canonical path, and
# the other side of the merge. One dpkg-query call for all of them: each call reads the whole
# package database.
candidates_of() {
  local path=$1 canonical
  canonical=$(readlink -f "$path")
  printf '%s\n' "$path" "$canonical" "${path#/usr}" "/usr${path}" "${canonical#/usr}" \
    "/usr${canonical}"
}
declare -A owner=()  # file path -> package
if [ ${#needed_by[@]} -gt 0 ]; then
  mapfile -t all_candidates < <(for path in "${!needed_by[@]}"; do candidates_of "$path"; done |
    sort -u)
  # "libfoo1:amd64: /usr/lib/x86_64-linux-gnu/libfoo.so.1" (or "a, b: path" when several
  # packages ship the path; the first will do); paths dpkg does not know are reported on stderr
  # and simply stay unmapped.
  while IFS= read -r line; do
    case "$line" in diversion*) continue ;; esac
    package_list=${line%%: /*}
    owner["${line#"$package_list": }"]=${package_list%%, *}
  done < <(dpkg-query -S "${all_candidates[@]}" 2>/dev/null || true)
fi

declare -A packages=()
for path in "${!needed_by[@]}"; do
  package=""
  while read -r candidate; do
    if [ -n "${owner[$candidate]:-}" ]; then
      package=${owner[$candidate]}
      break
    fi
  done < <(candidates_of "$path")
  if [ -n "$package" ]; then
    packages["${package%%:*}"]=1
  elif [[ "$(readlink -f "$path")" == /usr/local/cuda* ]]; then
    # A CUDA toolkit installed outside dpkg (NVIDIA's runfile, as on build hosts): in the image
    # the toolkit comes from NVIDIA's Debian repository and dpkg owns these files.
    echo "runtime-packages: note: $path comes from a CUDA toolkit outside dpkg; not listed" >&2
  else
    echo "runtime-packages: $path (needed by ${needed_by[$path]}) belongs to no Debian package" >&2
    status=1
  fi
done

if [ "$status" -ne 0 ]; then exit "$status"; fi
if [ ${#packages[@]} -gt 0 ]; then printf '%s\n' "${!packages[@]}" | sort; fi
