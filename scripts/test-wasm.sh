#!/usr/bin/env bash
# Builds the library for WebAssembly with Debian's emscripten (the wasm preset, build-wasm/:
# one thread, 128-bit SIMD; cmake/wasm.cmake) and runs, under Node, the library's tests that
# start neither programs nor threads, and the engine of the browser edition against the native
# build at one thread (web/tests/agreement.js). Needs the native release build first (./test.sh)
# for that comparison. Installs emscripten when it is missing (root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! dpkg-query -W -f='${Status}' emscripten 2>/dev/null | grep -q "install ok installed"; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "test-wasm: emscripten is missing and installing it needs root" >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  echo "test-wasm: installing emscripten"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    emscripten
fi
# Debian's emscripten finds acorn and terser through NODE_PATH, and wants a Python of its own
# choosing when another comes first on PATH.
export NODE_PATH=/usr/share/nodejs EMSDK_PYTHON=/usr/bin/python3

start=$SECONDS
[ -f build-wasm/CMakeCache.txt ] || cmake --preset wasm >/dev/null
cmake --build --preset wasm
built=$SECONDS
echo "test-wasm: built in $((built - start)) s"
ctest --preset wasm
echo "test-wasm: tests ran in $((SECONDS - built)) s under Node"
