#!/usr/bin/env bash
# Rebuilds docs/playground.html, the page a learner opens to train in the browser with nothing
# installed, from the sources here: the library for WebAssembly (the wasm preset, build-wasm/)
# and web/page/. Commit the page with the sources it was built from: CI checks its stamp and its
# bytes (ctest --preset wasm -R committed). What each rebuild costs the repository is in
# docs/browser-edition.md. Installs emscripten when it is missing (root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh emscripten
export NODE_PATH=/usr/share/nodejs EMSDK_PYTHON=/usr/bin/python3
[ -f build-wasm/CMakeCache.txt ] || cmake --preset wasm >/dev/null
cmake --build --preset wasm --target playground
cp build-wasm/playground.html docs/playground.html
size=$(stat -c %s docs/playground.html)
compressed=$(gzip -9 -c docs/playground.html | wc -c)
echo "build-playground: docs/playground.html, $((size / 1024)) KiB ($((compressed / 1024)) KiB compressed, about what a commit of it adds to the history)"
