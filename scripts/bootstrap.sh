#!/usr/bin/env bash
# Create .venv with Python 3.11 and install the project (re-installs only when pyproject.toml changes).
# Usage: scripts/bootstrap.sh [runtime|dev]
set -euo pipefail
cd "$(dirname "$0")/.."
extra=${1:-dev}
pick_python() {
  for candidate in "${PYTHON:-}" python3.11 python3 python; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] < (3, 13) else 1)'; then
      echo "$candidate"; return 0
    fi
  done
  echo "需要 Python 3.11 或 3.12 (Python 3.11 or 3.12 is required)" >&2
  return 1
}
if [ ! -x .venv/bin/python ]; then
  "$(pick_python)" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
stamp=".venv/.installed-$extra-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  target="."
  [ "$extra" = "dev" ] && target=".[dev]"
  # pipefail keeps pip's exit status; the filter only drops noise about absent local mirrors.
  .venv/bin/python -m pip install -q -e "$target" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
  touch "$stamp"
fi
