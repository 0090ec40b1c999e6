#!/usr/bin/env bash
# Installs neardup into a virtual environment of the checkout (.venv), with what it needs from the
# system first. Safe to run again: it installs only what is missing.
#   scripts/setup.sh            the library, the command line and the input readers
#   scripts/setup.sh test       everything the test suite and the documentation site need (service,
#                               Spark, report, Chromium, mkdocs)
#
# The environment is made with the machine's own `python3 -m venv` (PEP 668: Debian's Python
# refuses `pip install` outside one). Set PYTHON to use another interpreter; set
# NEARDUP_VENV to put the environment elsewhere. Afterwards: `. .venv/bin/activate`.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-run}"
PY="${PYTHON:-python3}"
VENV="${NEARDUP_VENV:-.venv}"

say() { echo "setup: $*" >&2; }

command -v "$PY" >/dev/null || { say "no $PY on this machine: install Python 3.10 or newer (Debian: apt-get install python3)"; exit 1; }
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { say "$PY is $("$PY" -V 2>&1); neardup needs 3.10 or newer"; exit 1; }

# What this machine lacks, as Debian packages. The interpreter's own packages are named after
# it (python3.11-venv for /usr/bin/python3.11); a pyenv or other self-built Python has venv and
# its headers already, so nothing is asked for it.
pyver="$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
pkgs=()
"$PY" -c 'import ensurepip, venv' 2>/dev/null || pkgs+=("python$pyver-venv")
"$PY" - <<'PY' 2>/dev/null || pkgs+=("python$pyver-dev")
import os, sys, sysconfig
sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))
PY
command -v "${CC:-cc}" >/dev/null || command -v gcc >/dev/null || pkgs+=(gcc)
if [ "$what" = test ]; then
  command -v chromium >/dev/null || pkgs+=(chromium)          # the report's browser test
  command -v java >/dev/null || pkgs+=(default-jre-headless)  # Spark in local mode
fi
# Tools some tests use and skip without (saying so): installed when this can be done unasked (as
# root or with password-less sudo), never a reason to stop.
optional=()
if [ "$what" = test ]; then
  # the fuzz targets' sanitized build: clang and its ASan/UBSan run-time libraries
  case "$(clang -print-file-name=libclang_rt.asan-x86_64.a 2>/dev/null)" in
    /*) ;;
    *) optional+=(clang libclang-rt-dev) ;;
  esac
  command -v qemu-x86_64 >/dev/null || optional+=(qemu-user)  # the kernel's CPU dispatch on emulated CPUs
fi

if [ ${#pkgs[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    say "missing: ${pkgs[*]} (Debian names); install their equivalents with this system's package manager, then run this again"
    exit 1
  fi
  if [ "$(id -u)" = 0 ]; then SUDO=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO=(sudo -n)
  elif command -v sudo >/dev/null && [ -t 0 ]; then SUDO=(sudo)         # asks for the password
  else
    say "missing Debian packages: ${pkgs[*]}; run 'sudo apt-get install ${pkgs[*]}' (or as root), then run this again"
    exit 1
  fi
  say "installing Debian packages: ${pkgs[*]}"
  "${SUDO[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi
if [ ${#optional[@]} -gt 0 ] && command -v apt-get >/dev/null; then
  if [ "$(id -u)" = 0 ]; then OPT_SUDO=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then OPT_SUDO=(sudo -n)
  else OPT_SUDO=(unasked)
  fi
  if [ "${OPT_SUDO[0]:-}" = unasked ]; then
    say "optional test tools missing: ${optional[*]} (Debian names): the tests that need them skip"
  else
    say "installing optional test tools: ${optional[*]}"
    { "${OPT_SUDO[@]}" apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive "${OPT_SUDO[@]}" apt-get install -y -qq --no-install-recommends "${optional[@]}" >/dev/null; } ||
      say "could not install ${optional[*]}: the tests that need them skip"
  fi
fi

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import pip' 2>/dev/null; then
  say "creating the virtual environment $VENV with $PY ($pyver)"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"

extras="io"
[ "$what" = test ] && extras="all"
say "pip install -e .[$extras] into $VENV"
# Every C extension is required here: a build that leaves one out must stop the set-up, not
# give a slow neardup without a word.
# (pip's notes about this machine's pip.conf find-links that do not exist are not shown)
NEARDUP_REQUIRE_EXTENSIONS=1 "$VPY" -m pip install -q --disable-pip-version-check -e ".[$extras]" \
  2> >(grep -v -e "is ignored: it is neither a file nor a directory" -e "does not provide the extra" >&2)
"$VPY" -c "import neardup._kernel, neardup._hamming, neardup._jsonl" \
  || { say "the compiled extensions did not build (see the compiler's messages above)"; exit 1; }
say "ready: . $VENV/bin/activate, then neardup --help"
