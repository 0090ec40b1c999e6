#!/usr/bin/env bash
# Installs everything the tests need, then runs them. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
python3 -m pytest "$@"
