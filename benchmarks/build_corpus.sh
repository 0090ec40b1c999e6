#!/usr/bin/env bash
# Build the real-text benchmark corpus (benchmarks/data/corpus.jsonl) from the documentation
# installed on this Debian machine, using the shared builder ../shared/bench/build_corpus.py.
#
# Usage: benchmarks/build_corpus.sh            (from anywhere)
# Env:   NEARDUP_SHARED  shared folder holding bench/build_corpus.py
#                        (default: <repo>/../shared, i.e. X/shared when the repo is X/main)
#        PYTHON          interpreter to run the builder (default: python3)
# Skips the build when benchmarks/data/corpus.jsonl already exists (delete it to rebuild).
# Expected result on the reference machine: ~23,700 documents, ~128 MB.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
shared="${NEARDUP_SHARED:-$(cd "$repo/.." && pwd)/shared}"
python="${PYTHON:-python3}"
out="$repo/benchmarks/data/corpus.jsonl"

if [[ -s "$out" ]]; then
    echo "corpus exists: $out ($(wc -l < "$out") docs); delete it to rebuild" >&2
    exit 0
fi

builder="$shared/bench/build_corpus.py"
if [[ ! -f "$builder" ]]; then
    echo "error: $builder not found (set NEARDUP_SHARED)" >&2
    exit 1
fi

pkgs=(mandoc python3-doc postgresql-doc debian-reference-en)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
    echo "installing: ${missing[*]}" >&2
    sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"
fi

mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
"$python" "$builder" "$tmp"
mv "$tmp" "$out"
echo "wrote $out: $(wc -l < "$out") docs, $(du -m "$out" | cut -f1) MB" >&2
