#!/usr/bin/env bash
# One command: install what the tests need and run the test suite.
# Extra arguments go to pytest, e.g. `./test.sh -m integration` or `./test.sh -m browser`.
# The default run (unit and API tests) is spread over the machine's cores with pytest-xdist (each
# worker has its own data directory and account databases; the tests marked `long` go first and an
# idle worker takes over half of a busy one's queue); a marker run (-m …) or an explicit
# -n stays as asked: the integration and browser tests share servers and run one at a time.
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh dev
# Bytecode (and pytest's rewritten test modules) cached in __pycache__ even where the environment
# sets PYTHONDONTWRITEBYTECODE: every worker would otherwise compile every module at start-up.
unset PYTHONDONTWRITEBYTECODE
# Each test's data dir and account databases in memory where the machine has room (4 GiB free in
# /dev/shm): a test's SQLite files never need to outlive it, and on disk every checkpoint and close
# waited for the disk (~10% of the run). PYTEST_DEBUG_TEMPROOT is pytest's root for tmp_path; set it
# yourself to choose another place.
if [[ -z "${PYTEST_DEBUG_TEMPROOT:-}" && -d /dev/shm && -w /dev/shm ]]; then
  free_kib=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }' || true)
  if [[ "${free_kib:-0}" -ge 4194304 ]]; then
    export PYTEST_DEBUG_TEMPROOT=/dev/shm
  fi
fi
parallel=(-n auto --dist worksteal)
for arg in "$@"; do
  case "$arg" in
    -m|-m*|-n|-n*|--numprocesses*) parallel=() ;;
  esac
done
exec .venv/bin/pytest -q "${parallel[@]}" "$@"
