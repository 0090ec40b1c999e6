#!/usr/bin/env bash
# Builds neardup's C extensions with AddressSanitizer and UndefinedBehaviorSanitizer (and, with
# clang, libFuzzer's coverage hooks) into fuzz/build/sanitized, beside a copy of the Python
# package, and runs commands against that build with the sanitizer runtime preloaded.
#
#   fuzz/build_sanitized.sh build                     build (clang if present, else gcc)
#   fuzz/build_sanitized.sh fuzz TARGET [OPTIONS...]  atheris/libFuzzer on TARGET (clang build)
#   fuzz/build_sanitized.sh replay TARGET PATH...     fuzz/replay.py under the sanitizers
#   fuzz/build_sanitized.sh run CMD [ARGS...]         any command (pytest, python -c ...)
#
# Environment: PYTHON (default .venv/bin/python), CC (default clang, else gcc),
# NEARDUP_SAN_DIR (default fuzz/build/sanitized). The ordinary editable build in src/ is not
# touched: the sanitized package comes first on PYTHONPATH.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
OUT="${NEARDUP_SAN_DIR:-$ROOT/fuzz/build/sanitized}"
if [ -z "${CC:-}" ]; then
  if command -v clang >/dev/null; then CC=clang; else CC=gcc; fi
fi
say() { echo "build_sanitized: $*" >&2; }

is_clang() { "$CC" --version 2>/dev/null | grep -q clang; }

# -fno-sanitize-recover: undefined behaviour stops the process (a finding), not a warning line.
# -O1 and frame pointers: readable stacks at a speed the campaign can afford.
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
if is_clang; then SAN="$SAN -fsanitize=fuzzer-no-link"; fi

build() {
  # built beside the old build and swapped in, so that a campaign running on the old one keeps
  # its files until it restarts
  local new="$OUT.new"
  rm -rf "$new"
  mkdir -p "$new"
  # the Python package without the ordinary build's extensions
  (cd "$ROOT/src" && tar --exclude='*.so' --exclude='__pycache__' -cf - neardup) | tar -xf - -C "$new"
  say "compiling with $CC: $SAN"
  (cd "$ROOT" && NEARDUP_REQUIRE_EXTENSIONS=1 CC="$CC" LDSHARED="$CC -shared" CFLAGS="$SAN" LDFLAGS="$SAN" \
     "$PY" setup.py -q build_ext --force --build-lib "$new" --build-temp "$new/tmp" 2>&1 \
     | grep -v -e SetuptoolsDeprecationWarning -e '^!!' -e '^ *\*\*\*' -e 'project.license' -e 'By 2027' \
               -e 'See https://packaging' -e 'corresp(dist' -e '^ *$' || true)
  for ext in _kernel _hamming _jsonl _htmlscan; do
    ls "$new"/neardup/"$ext".*.so >/dev/null 2>&1 || { say "neardup.$ext was not built"; exit 1; }
  done
  echo "$CC" > "$new/CC"
  rm -rf "$OUT.old"
  if [ -d "$OUT" ]; then mv "$OUT" "$OUT.old"; fi
  mv "$new" "$OUT"
  say "built into $OUT"
}

# The ASan runtime to preload (Python itself is not instrumented): atheris' libFuzzer+ASan for
# a clang build run under libFuzzer, else the compiler's own.
runtime() {
  local cc; cc="$(cat "$OUT/CC" 2>/dev/null || echo "$CC")"
  if [ "${1:-}" = fuzz ]; then
    "$PY" -c 'import atheris, os; print(os.path.join(atheris.path(), "asan_with_fuzzer.so"))'
  elif "$cc" --version 2>/dev/null | grep -q clang; then
    "$cc" -print-file-name=libclang_rt.asan-x86_64.so
  else
    "$cc" -print-file-name=libasan.so
  fi
}

with_sanitizers() {
  local mode="$1"; shift
  [ -d "$OUT/neardup" ] || build
  local rt; rt="$(runtime "$mode")"
  [ -f "$rt" ] || { say "no ASan runtime at $rt"; exit 1; }
  # detect_leaks=0: CPython keeps its objects to the end; allocator_may_return_null: a hostile
  # size is a MemoryError, not an abort; PYTHONMALLOC=malloc: Python's objects go through
  # ASan's allocator too, so that a freed str read by the kernel is reported.
  env LD_PRELOAD="$rt" PYTHONPATH="$OUT:$ROOT/fuzz${PYTHONPATH:+:$PYTHONPATH}" PYTHONMALLOC="${PYTHONMALLOC:-malloc}" \
      ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1:abort_on_error=0:halt_on_error=1:symbolize=1}" \
      UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}" "$@"
}

cmd="${1:-build}"
shift || true
case "$cmd" in
  build) build ;;
  fuzz)
    is_clang || { say "coverage-guided fuzzing needs clang (apt-get install clang)"; exit 1; }
    [ $# -ge 1 ] || { say "usage: $0 fuzz TARGET [libFuzzer options] [CORPUS...]"; exit 2; }
    with_sanitizers fuzz "$PY" "$ROOT/fuzz/run_atheris.py" "$@" ;;
  replay) with_sanitizers run "$PY" "$ROOT/fuzz/replay.py" "$@" ;;
  run) with_sanitizers run "$@" ;;
  *) say "unknown command $cmd (build, fuzz, replay, run)"; exit 2 ;;
esac
