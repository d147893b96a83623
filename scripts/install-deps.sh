#!/usr/bin/env bash
# Installs the Debian / Ubuntu packages that gradformer builds with, only those missing, so
# that a second run costs a few dpkg queries. Needs root or sudo when something is missing.
# With package names as arguments, installs those instead (scripts/test-wasm.sh: emscripten).
set -euo pipefail

packages=(
  g++ cmake ninja-build git   # compiler, build system
  catch2                      # tests (v2.13)
  libfmt-dev                  # formatting
  libcli11-dev                # command-line flags
  libstb-dev                  # PNG writing, TrueType text
  fonts-dejavu-core fonts-wqy-microhei  # the pictures' text: DejaVu Sans, and CJK glyphs
  nlohmann-json3-dev          # checkpoint headers
  libopenblas-dev             # the optional BLAS backend for GEMM
  clang-format                # the formatting check
  clang-tidy                  # the function-size check (scripts/check-function-size.sh)
  clang libclang-rt-14-dev    # fuzzing: clang++ and libFuzzer (libclang_rt.fuzzer)
  chromium python3            # the run pages' browser tests (tests/browser/check_run_page.py)
)

if [ $# -gt 0 ]; then packages=("$@"); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "install-deps: these packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "${missing[@]}"
