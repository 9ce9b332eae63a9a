#!/usr/bin/env bash
# Create .venv with Python 3.11 and install the project (re-installs only when pyproject.toml changes).
# Usage: scripts/bootstrap.sh [runtime|dev]
# The install goes through uv when it is on PATH or installs into .venv from the package index pip
# is set up for (several times faster than pip on a fresh venv), and through pip when it is not or
# fails. QIWEI_INSTALLER=pip (or uv) picks one; uv reads pip's own index, links and constraints.
set -euo pipefail
cd "$(dirname "$0")/.."
extra=${1:-dev}
installer=${QIWEI_INSTALLER:-auto}
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

# uv's options for what pip is configured with (pip config: files and PIP_* variables alike).
uv_options() {
  .venv/bin/python - <<'PY'
import shlex, subprocess, sys
out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
options = ["--index-strategy", "unsafe-best-match"]  # pip's rule: the best version on any index
seen = set()
for line in out.splitlines():
    key, _, value = line.partition("=")
    name, value = key.rsplit(".", 1)[-1], value.strip().strip("'\"")
    flag = {"index-url": "--index-url", "extra-index-url": "--extra-index-url",
            "find-links": "--find-links", "constraint": "--constraint"}.get(name)
    for item in value.split() if flag else ():
        if (flag, item) not in seen and (flag == "--extra-index-url" or flag == "--index-url" or __import__("os").path.exists(item)):
            seen.add((flag, item)); options += [flag, item]
print(shlex.join(options))
PY
}

pip_install() {
  # pipefail keeps pip's exit status; the filter only drops noise about absent local mirrors.
  .venv/bin/python -m pip install -q "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
}

install() {
  local target=$1 uv=""
  if [ "$installer" != pip ]; then
    uv=$(command -v uv || true)
    [ -n "$uv" ] || [ ! -x .venv/bin/uv ] || uv=.venv/bin/uv
    if [ -z "$uv" ] && pip_install uv >/dev/null 2>&1 && [ -x .venv/bin/uv ]; then uv=.venv/bin/uv; fi
    if [ -n "$uv" ]; then
      local options cert
      read -r -a options <<<"$(uv_options)"
      cert=$(.venv/bin/python -m pip config get global.cert 2>/dev/null || echo "${PIP_CERT:-}")
      if SSL_CERT_FILE=${cert:-${SSL_CERT_FILE:-}} "$uv" pip install --quiet --python .venv/bin/python \
        "${options[@]}" -e "$target"; then
        return 0
      fi
      [ "$installer" = uv ] && return 1
      echo "uv 安装失败，改用 pip (uv failed; installing with pip)" >&2
    elif [ "$installer" = uv ]; then
      echo "找不到 uv (uv not found)" >&2; return 1
    fi
  fi
  pip_install -e "$target"
}

if [ ! -x .venv/bin/python ]; then
  "$(pick_python)" -m venv .venv
  [ "$installer" = pip ] && .venv/bin/python -m pip install -q --upgrade pip
fi
stamp=".venv/.installed-$extra-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  target="."
  [ "$extra" = "dev" ] && target=".[dev]"
  install "$target"
  touch "$stamp"
fi
