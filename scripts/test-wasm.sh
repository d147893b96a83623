#!/usr/bin/env bash
# Builds the library for WebAssembly with Debian's emscripten (the wasm preset, build-wasm/:
# one thread, 128-bit SIMD; cmake/wasm.cmake) and the playground page, and runs, under Node, the
# library's tests that start neither programs nor threads and the browser edition's engine
# against the native build at one thread (web/tests/agreement.js), then the page in headless
# Chromium (tests/browser/check_playground.py). Needs the native release build first
# (./test.sh) for that comparison. Installs emscripten when it is missing (root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh emscripten
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
