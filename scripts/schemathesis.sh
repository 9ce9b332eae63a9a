#!/usr/bin/env bash
# Fuzz every API operation with schemathesis (settings: tests/api_fuzz/schemathesis.toml).
# Usage:
#   scripts/schemathesis.sh                        the CI check: a seeded live server inside pytest
#   scripts/schemathesis.sh URL TOKEN [options]    against a running server (e.g. run.sh on
#                                                  http://127.0.0.1:4320) with a staff token; extra
#                                                  options go to `schemathesis run`
# It creates, edits, forgets and erases data: never point it at a production server.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  exec .venv/bin/pytest -q -s -m integration tests/api_fuzz
fi
if [ $# -lt 2 ]; then
  echo "用法 (usage): scripts/schemathesis.sh [URL TOKEN [schemathesis options]]" >&2
  exit 2
fi
url=${1%/}
token=$2
shift 2
exec .venv/bin/schemathesis --config-file tests/api_fuzz/schemathesis.toml run "$url/api/schema/?format=json" \
  --header "Authorization: Token $token" "$@"
