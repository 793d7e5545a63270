#!/usr/bin/env bash
# Create the controller virtual env (.venv) and make this checkout visible to Ansible as repro.vllm.
# Idempotent; prints what it does. Never downloads a Python: it uses an interpreter already on the machine
# (pyenv's 3.13/3.12 first, ansible-core 2.21; a 3.11 falls back to ansible-core 2.19).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=${REPRO_VLLM_VENV:-$ROOT/.venv}
say() { printf '[setup-dev] %s\n' "$*"; }

find_python() {
  local v p
  for v in 3.13 3.12 3.11; do
    for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python"$v" /usr/local/bin/python"$v" /usr/bin/python"$v"; do
      if [ -x "$p" ] && "$p" -c 'import venv, ensurepip' 2>/dev/null; then echo "$p"; return 0; fi
    done
  done
  return 1
}

stamp="$VENV/.repro-vllm-requirements.sha256"
want=$(sha256sum requirements-dev.txt | cut -d' ' -f1)
if [ -x "$VENV/bin/ansible-playbook" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  say "controller venv up to date: $VENV"
else
  PY=$(find_python) || { echo "setup-dev: no Python 3.11+ with venv found (looked in pyenv and /usr/bin); install python3.11-venv or pyenv 3.13" >&2; exit 2; }
  say "creating $VENV with $PY"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -U pip 2>&1 | grep -v 'is ignored' || true
  say "installing requirements-dev.txt (ansible-core, ansible-lint, molecule, pytest, ansible-runner)"
  if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements-dev.txt > "$VENV/pip-install.log" 2>&1; then
    grep -v 'is ignored' "$VENV/pip-install.log" | tail -20 >&2
    echo "setup-dev: pip install -r requirements-dev.txt failed (full log: $VENV/pip-install.log)" >&2; exit 2
  fi
  echo "$want" > "$stamp"
fi

# Ansible finds collections only under .../ansible_collections/NS/NAME: link this checkout there.
LINKDIR="$ROOT/.cache/collections/ansible_collections/repro"
mkdir -p "$LINKDIR"
ln -sfn ../../../.. "$LINKDIR/vllm"
[ -f "$LINKDIR/vllm/galaxy.yml" ] || { echo "setup-dev: collection link $LINKDIR/vllm is broken" >&2; exit 2; }
say "ansible: $("$VENV/bin/ansible" --version | sed -n 1p)"
say "collection repro.vllm -> $ROOT (via .cache/collections)"
