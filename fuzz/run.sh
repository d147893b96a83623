#!/usr/bin/env bash
# Runs every fuzz target for a fixed time, each from a copy of its committed seed corpus (so
# the corpus in git stays small and reviewed). Stops at the first target that finds
# something; libFuzzer then prints the input and saves it under BUILD/fuzz-artifacts/.
#
#   fuzz/run.sh [BUILD_DIR] [SECONDS_PER_TARGET]      defaults: build-fuzz 10
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
seconds=${2:-10}
targets=(fuzz_safetensors fuzz_model_config fuzz_sentence_pairs fuzz_pairs_file
         fuzz_tokenizer_encode fuzz_tokenizer_json fuzz_bpe_learn fuzz_utf8)

work="$build/fuzz-corpus"
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
for target in "${targets[@]}"; do
  rm -rf "${work:?}/$target"
  mkdir -p "$work/$target"
  cp fuzz/corpus/"$target"/* "$work/$target/"
  # -timeout: any one input taking over 10 s is a hang; -rss_limit_mb: a claim in the input
  # that makes the parser allocate gigabytes is a finding, not something to wait out.
  "$build/bin/$target" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=0 -artifact_prefix="$artifacts/$target-" \
    "$work/$target" >"$work/$target.log" 2>&1 || {
    echo "fuzz: $target found a failing input:" >&2
    tail -n 40 "$work/$target.log" >&2
    exit 1
  }
  printf '%-24s %s\n' "$target" "$(grep -E '^Done [0-9]+ runs' "$work/$target.log")"
done
