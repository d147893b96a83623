#!/usr/bin/env bash
# Quickstart, command 1: installs what is missing, builds (release), and runs the main
# lesson. Arguments go to the lesson, e.g. ./run.sh --quick or ./run.sh --help.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
[ -f build/CMakeCache.txt ] || cmake --preset release >/dev/null
cmake --build --preset release
exec ./build/bin/lesson01_autodiff "$@"
