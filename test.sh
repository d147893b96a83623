#!/usr/bin/env bash
# Quickstart, command 2: installs what is missing, builds (release), and runs the whole test
# suite: the unit tests and every lesson with --quick.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
[ -f build/CMakeCache.txt ] || cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release
