#!/usr/bin/env bash
# Runs the ordinary build of the extensions under qemu-x86_64 (Debian: apt-get install
# qemu-user) with CPU models that lack what the fast paths use, so that each run-time choice is
# taken: the kernel's AVX2 paths (AVX2 + BMI1 + BMI2 + POPCNT + OS YMM state, else scalar) and
# _hamming's popcnt clone (target_clones: popcnt or portable).
#
#   fuzz/qemu_dispatch.sh [MODEL ...]        default: the models below
#   NEARDUP_QEMU_TESTS=1 fuzz/qemu_dispatch.sh   also tests/kernel/test_native.py and
#       tests/kernel/test_hardening.py under NEARDUP_QEMU_TEST_MODELS (default "Haswell,-bmi1,-bmi2
#       Nehalem"; slow: ~20 min each)
#
# For each model: calls made from bytes only (fuzz/qemu_bytes_probe.py: kernel, JSONL scanner,
# Hamming popcount) against the host's answers; then, where numpy runs (SSE4.2 and POPCNT),
# what the kernel detects and chooses and the fuzz targets over the seeds and the first
# NEARDUP_QEMU_CORPUS (default 200) inputs of each working corpus (fuzz/corpus), each checked
# against its oracle. Prints one line per model and check; exits 1 if any failed.
#
# qemu 7.2 (Debian 12) traps BMI2 instructions only when BMI1 is off too, so "Haswell,-bmi2"
# shows the choice (scalar) without the SIGILL a real CPU would give; "Haswell,-bmi1,-bmi2"
# traps, which is what the kernel's old AVX2-only check hit (exit 132).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
QEMU="${QEMU:-qemu-x86_64}"
command -v "$QEMU" >/dev/null || { echo "qemu_dispatch: no $QEMU (Debian: apt-get install qemu-user)" >&2; exit 1; }
N="${NEARDUP_QEMU_CORPUS:-200}"
models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  models=(
    "Haswell"              # AVX2, BMI1, BMI2, POPCNT: the AVX2 paths
    "Haswell,-bmi1,-bmi2"  # AVX2 without BMI
    "Haswell,-bmi2"        # AVX2 and BMI1 without BMI2
    "Haswell,-avx2"        # BMI without AVX2
    "Nehalem"              # SSE4.2 and POPCNT, no AVX
    "core2duo"             # no POPCNT: _hamming's portable clone
    "qemu64"               # the baseline x86-64 (SSE2)
  )
fi

probe='
import json
from neardup import _kernel, _native
print(json.dumps({"simd": _kernel.simd(), **_kernel.cpu_features()}, sort_keys=True))
'

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0
# the host's answers to calls made from bytes only, for the models numpy cannot run on
"$PY" "$ROOT/fuzz/qemu_bytes_probe.py" make "$tmp/probe.pkl" >/dev/null || exit 1
for model in "${models[@]}"; do
  q=("$QEMU" -cpu "$model")
  res="$("${q[@]}" "$PY" "$ROOT/fuzz/qemu_bytes_probe.py" check "$tmp/probe.pkl" 2>"$tmp/err")"
  rc=$?
  echo "$model: bytes probe exit=$rc $res"
  [ $rc -eq 0 ] || { fail=1; grep -v "TCG doesn't support" "$tmp/err" | tail -5; }
  if ! "${q[@]}" "$PY" -c "import numpy" 2>/dev/null; then
    echo "$model: numpy does not run here (its wheels need SSE4.2 and POPCNT): the bytes probe only"
    continue
  fi
  out="$("${q[@]}" "$PY" -c "$probe" 2>"$tmp/err")"
  rc=$?
  echo "$model: probe exit=$rc $out"
  [ $rc -eq 0 ] || { fail=1; grep -v "TCG doesn't support" "$tmp/err" | tail -5; continue; }
  for target in kernel hamming jsonl kernel_args; do
    files=("$ROOT/fuzz/seeds/$target")
    if [ -d "$ROOT/fuzz/corpus/$target" ]; then
      mkdir -p "$tmp/$target"
      # the first N inputs of the working corpus, by name (sha1): a fixed sample for a fixed corpus
      (cd "$ROOT/fuzz/corpus/$target" && ls | sort | head -n "$N" | xargs -r cp -t "$tmp/$target")
      files+=("$tmp/$target")
    fi
    res="$("${q[@]}" "$PY" "$ROOT/fuzz/replay.py" "$target" "${files[@]}" 2>"$tmp/err")"
    rc=$?
    echo "$model: $target exit=$rc $res"
    [ $rc -eq 0 ] || { fail=1; grep -v "TCG doesn't support" "$tmp/err" | tail -8; }
    rm -rf "$tmp/$target"
  done
done

if [ "${NEARDUP_QEMU_TESTS:-0}" = 1 ]; then
  read -r -a test_models <<< "${NEARDUP_QEMU_TEST_MODELS:-Haswell,-bmi1,-bmi2 Nehalem}"
  for model in "${test_models[@]}"; do
    # Left out: test_context_free_code_points_normalize_alone checks Python's unicodedata (no
    # kernel code) over every code point (time); the emulated-CPU tests start qemu themselves;
    # test_cpu_features_agree_with_the_kernel_of_this_machine compares with /proc/cpuinfo,
    # which qemu-user does not emulate (it shows the host's flags).
    res="$(cd "$ROOT" && "$QEMU" -cpu "$model" "$PY" -m pytest -p no:cacheprovider -rfE tests/kernel/test_native.py \
           tests/kernel/test_hardening.py -k "not context_free_code_points_normalize_alone and not emulated \
           and not cpu_features_agree" 2>&1 | grep -v "TCG doesn't support")"
    echo "$model: tests/kernel/test_native.py tests/kernel/test_hardening.py: $(echo "$res" | grep -E "passed|failed" | tail -1)"
    echo "$res" | grep -E "^(FAILED|ERROR)" | head -5
    echo "$res" | grep -qE "^(FAILED|ERROR)" && fail=1
  done
fi
exit $fail
