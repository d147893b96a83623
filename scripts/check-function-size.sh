#!/usr/bin/env bash
# Fails when a function of the library, of the CLI or of a lesson is longer than 80 lines, so
# that each one still reads in one go. The count is clang-tidy's readability-function-size: the
# line of the closing brace minus that of the opening one, comments and blank lines included. A
# function that has a reason to be longer says so on the line of its name:
#
#   int main(int argc, char** argv) {  // NOLINT(readability-function-size): <the reason>
#
# Reads the compile flags from build/compile_commands.json (cmake --preset release writes it).
# scripts/check-function-size.sh 60 lists the functions over 60 lines instead, to see which
# ones come close.
set -euo pipefail
cd "$(dirname "$0")/.."

limit=${1:-80}
dirs=(autograd nn models data viz cli lessons)
[ -d training ] && dirs+=(training)
database=build/compile_commands.json

tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [ -z "$tidy" ]; then
  echo "check-function-size: clang-tidy is missing (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
if [ ! -f "$database" ]; then
  echo "check-function-size: $database is missing; run cmake --preset release first" >&2
  exit 1
fi
mapfile -t sources < <(git ls-files "${dirs[@]}" | grep '\.cpp$')
for f in "${sources[@]}"; do
  if ! grep -qF "\"file\": \"$PWD/$f\"" "$database"; then
    echo "check-function-size: $f is not in $database; run cmake --preset release again" >&2
    exit 1
  fi
done

# Only this one check runs, so a file costs no more than clang's parse of it. The headers of
# the same folders are checked where the sources include them. -w: the compile flags are
# g++'s, and clang's view of their warnings is not this check's business. Nor are clang 14's
# errors on valid C++20 that it does not support yet (a lambda capturing a structured
# binding): the functions around them are still measured. A fatal error is different: clang
# stops there, and what follows it would go unmeasured.
pattern=$(
  IFS='|'
  echo "${dirs[*]}"
)
output=$(printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -n 4 "$tidy" -p build --quiet \
  --checks='-*,readability-function-size' \
  --config="{CheckOptions: [{key: readability-function-size.LineThreshold, value: $limit}]}" \
  --extra-arg=-w --header-filter="^$PWD/($pattern)/" 2>&1 || true)

if grep -q 'fatal error:' <<<"$output"; then
  grep 'fatal error:' <<<"$output" >&2
  echo "check-function-size: clang-tidy could not parse every file (above)" >&2
  exit 1
fi

# clang-tidy prints "FILE:LINE:COL: warning: function 'NAME' exceeds ..." and then one note
# per threshold passed, such as "FILE:LINE:COL: note: N lines including whitespace and
# comments (threshold T)".
report=$(awk -v root="$PWD/" '
  / warning: function .* \[readability-function-size\]$/ {
    split($1, at, ":"); where = substr(at[1], length(root) + 1) ":" at[2]
    name = $0; sub(/^[^'\'']*'\''/, "", name); sub(/'\''.*$/, "", name)
    next
  }
  / note: .*\(threshold [0-9]+\)$/ && name != "" {
    note = $0; sub(/^.* note: /, "", note)
    printf "%s: %s: %s\n", where, name, note
  }' <<<"$output" | sort -u -t: -k1,1 -k2,2n)

if [ -n "$report" ]; then
  echo "$report"
  echo "check-function-size: $(cut -d: -f1,2 <<<"$report" | sort -u | wc -l) function(s)" \
    "longer than $limit lines (above); split them, or say why one must stay long with" \
    "// NOLINT(readability-function-size): <why> on the line of its name" >&2
  exit 1
fi
echo "check-function-size: no function longer than $limit lines in ${dirs[*]}"
