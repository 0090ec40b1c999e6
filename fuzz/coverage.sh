#!/usr/bin/env bash
# C edge coverage reached by a target's corpus under the sanitized build: runs the working
# corpus (fuzz/corpus/TARGET) and the seeds once (-runs=0) with libFuzzer's -print_coverage=1,
# and sums the covered edges per source file of the extensions.
#
#   fuzz/coverage.sh TARGET [CORPUS...]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
name="$1"; shift
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=("$ROOT/fuzz/corpus/$name" "$ROOT/fuzz/seeds/$name")
empty="$(mktemp -d)"
trap 'rm -rf "$empty"' EXIT
# an empty first folder, so that nothing is added to the corpus
"$ROOT/fuzz/build_sanitized.sh" fuzz "$name" -runs=0 -print_coverage=1 "$empty" "${dirs[@]}" 2>&1 \
  | awk -v name="$name" '
      /^(UN)?COVERED_FUNC:/ && $0 ~ /\/src\/neardup\// {
        split($5, e, "/"); file = $NF; sub(/:[0-9]+$/, "", file); sub(/.*\/src\/neardup\//, "", file)
        cov[file] += e[1]; tot[file] += e[2]; if ($1 == "COVERED_FUNC:") fc[file]++; ft[file]++
      }
      /INITED/ { inited = $0 }
      END {
        print name ": " inited
        for (f in tot) printf "%s: %s: edges %d/%d (%.1f%%), functions %d/%d\n", name, f, cov[f], tot[f], 100 * cov[f] / tot[f], fc[f], ft[f]
      }'
