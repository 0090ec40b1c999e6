#!/usr/bin/env bash
# The main job on a fresh machine: deduplicate every /usr/share/doc/*/copyright file (real text
# that every Debian machine has) and show what was found. Installs neardup into .venv first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${NEARDUP_VENV:-.venv}"
out="${1:-out/copyright-dedup}"
"$VENV/bin/neardup" dedup /usr/share/doc/*/copyright --output "$out"
echo
echo "Largest clusters (survivor: size):"
"$VENV/bin/python" - "$out" <<'PY'
import json, sys
s = json.load(open(f"{sys.argv[1]}/summary.json"))
for c in s["clusters"]["largest"][:5]:
    print(f"  {c['survivor']}: {c['size']}")
print(f"Outputs in {sys.argv[1]}: clusters.jsonl, pairs.jsonl, kept.jsonl, summary.json")
PY
