#!/usr/bin/env bash
# Builds gradformer for 64-bit ARM Linux on an x86-64 Debian 12 and runs the test suite (the
# unit tests and every lesson with --quick) under qemu-aarch64. That is the machine of a
# learner on Apple silicon, whose Docker runs Debian 12 as linux/arm64, and of ARM servers.
# Installs what is missing first (root or sudo): the cross compiler, qemu-user, and the ARM
# builds of the libraries we link, beside the x86 ones (Debian multiarch). The build goes to
# build-aarch64/ (the aarch64 preset, cmake/aarch64-linux-gnu.cmake).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -m)" = aarch64 ]; then
  echo "test-aarch64: this machine is ARM already: ./test.sh runs the suite natively" >&2
  exec ./test.sh
fi

# For this machine: the build tools, the cross compiler and the emulator, and the libraries
# that are headers and CMake files only, which serve both architectures (Catch2 v2, CLI11,
# stb, nlohmann-json). For ARM: the libraries with compiled code (fmt, OpenBLAS).
packages=(
  cmake ninja-build
  g++-aarch64-linux-gnu
  qemu-user
  catch2 libcli11-dev libstb-dev nlohmann-json3-dev
  libfmt-dev:arm64
  libopenblas-dev:arm64
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "test-aarch64: these packages are missing and installing them needs root: ${missing[*]}" >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  echo "test-aarch64: installing ${missing[*]}"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    "${sudo[@]}" dpkg --add-architecture arm64
  fi
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
fi

start=$SECONDS
[ -f build-aarch64/CMakeCache.txt ] || cmake --preset aarch64 >/dev/null
# Only what the tests run: the unit tests (which bring the transformer CLI that the CLI tests
# start), the lessons, and the one benchmark a test starts (bench.decode_refuses_bf16); not the
# other benchmarks.
lessons=()
for dir in lessons/[0-9][0-9]_*/; do
  if [ -f "$dir/main.cpp" ]; then lessons+=("lesson$(basename "$dir")"); fi
done
cmake --build --preset aarch64 --target gradformer_tests "${lessons[@]}" decode
built=$SECONDS
echo "test-aarch64: built in $((built - start)) s"

# Under qemu the tests run 40 to 60 times slower than natively (every ARM instruction is
# translated, every float operation emulated). What only this run checks is the arithmetic on
# ARM: the NEON kernels, their results at 1 and 8 threads, and that every lesson's checks hold
# with ARM's rounding. Tests whose outcome cannot depend on the machine repeat ./test.sh's run
# at 50 times its cost, so they are left out here; `ctest --preset aarch64` runs everything.
#   Repeats of a run the suite makes anyway: every lesson again at 1 and 8 threads (each lesson
#     runs once below, and the copy task's "threads: ..." test compares 1 and 8 threads); the
#     toy translation at 1 and 8 threads (the same kernels as the copy task's, plus tokenizers,
#     batching and BLEU, which are integer code); three translation models for `generate`
#     (17 min under qemu; lesson 09 trains one on ARM).
#   Bookkeeping around the arithmetic: the run page and report; resuming bit for bit (both
#     halves run on the same machine, so the test is of what the checkpoint stores); a run
#     driven by the library against the command; --pairs batching; the real-text recipe's
#     schedule; resident memory over 330 steps (5 min under qemu); a language model's run
#     resumed (lesson 13 trains language models on ARM).
# The preset's "threads: ..." tests compare 1 thread with 8 only, not 1, 2, 3, 4 and 8.
slow='^(lessons: every lesson gives the same numbers'
slow+='|threads: toy translation training'
slow+='|generate writes the toy language'
slow+='|train writes the run.s page beside the checkpoint'
slow+='|train --resume continues'
slow+='|a text run driven by the library'
slow+='|train --pairs with --batch as large as the file'
slow+='|train --task translate on real text follows the recipe'
slow+='|training for many steps keeps resident memory'
slow+='|a language-model run checks perplexity)'
ctest --preset aarch64 -E "$slow"
echo "test-aarch64: tests ran in $((SECONDS - built)) s under qemu-aarch64"
