#!/usr/bin/env bash
# Installs everything the tests need into .venv, then runs them there. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
VENV="${NEARDUP_VENV:-.venv}"
NEARDUP_REQUIRE_NATIVE=1 "$VENV/bin/python" -m pytest "$@"
