#!/usr/bin/env bash
# Installs everything the tests need into .venv, then runs them there. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
VENV="${NEARDUP_VENV:-.venv}"
# as `. .venv/bin/activate` would: the tests call the environment's commands (neardup,
# schemathesis) by name
export PATH="$(cd "$VENV/bin" && pwd):$PATH" VIRTUAL_ENV="$(cd "$VENV" && pwd)"
NEARDUP_REQUIRE_NATIVE=1 "$VENV/bin/python" -m pytest "$@"
