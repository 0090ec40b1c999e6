#!/usr/bin/env bash
# Installs what neardup needs on a fresh Debian/Ubuntu machine, then neardup itself (editable).
#   scripts/setup.sh            the library, the command line and the input readers
#   scripts/setup.sh test       everything the test suite needs (service, Spark, report, Chromium)
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-run}"

apt_pkgs=()
[ -f /usr/include/xxhash.h ] || apt_pkgs+=(libxxhash-dev)        # XXH3 for the compiled kernel
command -v gcc >/dev/null || apt_pkgs+=(gcc)
if [ "$what" = test ]; then
  command -v chromium >/dev/null || apt_pkgs+=(chromium)          # the report's browser test
  command -v java >/dev/null || apt_pkgs+=(default-jre-headless)  # Spark in local mode
fi
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${apt_pkgs[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${apt_pkgs[@]}" >/dev/null
fi

PY="${PYTHON:-python3}"
extras="io"
[ "$what" = test ] && extras="all"
echo "setup: pip install -e .[$extras]" >&2
"$PY" -m pip install -q --disable-pip-version-check -e ".[$extras]" 2>&1 | grep -v -e "^WARNING: Running pip as" -e "is ignored: it is neither" -e "does not provide the extra" || true
"$PY" -c "import neardup, neardup._kernel" || { echo "setup: the compiled kernel did not build" >&2; exit 1; }
