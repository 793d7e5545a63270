#!/usr/bin/env bash
# Run ansible-test on a copy of this collection laid out as .../ansible_collections/repro/vllm.
# ansible-test needs that path, refuses a symlink, and must not run inside this git tree (it would list files
# with the outer git and see none), so the tracked and untracked-not-ignored files are copied to a scratch tree.
# usage: tests/ansible-test.sh sanity|units|integration [ansible-test args...]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${REPRO_VLLM_VENV:-$ROOT/.venv}
[ -x "$VENV/bin/ansible-test" ] || { echo "tests/ansible-test.sh: no ansible-test in $VENV; run 'make setup' first" >&2; exit 2; }
PYV=$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# ansible-test bootstraps pip with a download that cannot be reached here; put a stand-in where it looks first.
mkdir -p "$HOME/.ansible/test/cache"
for v in $(grep -ho "pip='[0-9.]*'" "$VENV"/lib/python*/site-packages/ansible_test/_internal/python_requirements.py | tr -dc '0-9.\n'); do
  f="$HOME/.ansible/test/cache/get_pip_${v//./_}.py"
  [ -f "$f" ] || cat > "$f" <<'PY'
import subprocess, sys
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "--upgrade"] + args))
PY
done

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/repro-vllm-at.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
TREE="$SCRATCH/ansible_collections/repro/vllm"
mkdir -p "$TREE"
(cd "$ROOT" && git ls-files -z -co --exclude-standard | xargs -0 cp --parents -t "$TREE" 2>/dev/null) || true
# ansible-test hands the unit tests an environment of its own: REPRO_VLLM_REQUIRE_REAL_PARTS (tests/run-all.sh)
# reaches them as this file in the copy (tests/real_parts.py reads it)
if [ "${1:-}" = units ] && [ -n "${REPRO_VLLM_REQUIRE_REAL_PARTS:-}" ] && [ "${REPRO_VLLM_REQUIRE_REAL_PARTS}" != 0 ]; then
  echo "written by tests/ansible-test.sh: REPRO_VLLM_REQUIRE_REAL_PARTS=${REPRO_VLLM_REQUIRE_REAL_PARTS}" > "$TREE/tests/.require-real-parts"
fi
# ansible-test needs a git-less tree here; keep results of the run where the caller can read them
cd "$TREE"
set +e
PATH="$VENV/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$SCRATCH" "$VENV/bin/ansible-test" "$@" --local --python "$PYV" --color no
rc=$?
set -e
if [ -d tests/output ]; then mkdir -p "$ROOT/tests/output"; cp -r tests/output/. "$ROOT/tests/output/"; fi
exit $rc
