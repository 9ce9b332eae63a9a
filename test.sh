#!/usr/bin/env bash
# One command: install what the tests need and run the test suite.
# Extra arguments go to pytest, e.g. `./test.sh -m integration` or `./test.sh -m browser`.
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh dev
exec .venv/bin/pytest -q "$@"
