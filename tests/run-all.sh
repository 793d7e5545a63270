#!/usr/bin/env bash
# The whole test suite, every gate, in one command (README: "Run the tests"; .ci/run calls this).
# Sets up what it needs first (controller venv, system packages, the CPU vLLM and its tiny model), then runs
# each gate, keeps going after a failing gate so one run shows everything, and ends with
#   N passed, N failed
# counting gates. Exit status 0 only if every gate passed.
# Select gates: REPRO_VLLM_GATES="sanity units" tests/run-all.sh   (names: see GATES below)
# Every real part a gate needs is installed first (or the run stops), and REPRO_VLLM_REQUIRE_REAL_PARTS=1 turns a
# test's "skip: real part missing" into a failure (tests/real_parts.py): skips are for ad-hoc pytest runs only.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
export PIP_DISABLE_PIP_VERSION_CHECK=1 ANSIBLE_FORCE_COLOR=0 NO_COLOR=1 PY_COLORS=0 PYTHONDONTWRITEBYTECODE=1
export ANSIBLE_NOCOLOR=1
export REPRO_VLLM_REQUIRE_REAL_PARTS=1
GATES=${REPRO_VLLM_GATES:-"sanity units integration system vllm molecule lint build"}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/repro-vllm-tests.XXXXXX")
LOGS="$ROOT/tests/output/run-all"
mkdir -p "$LOGS"
t0=$SECONDS
passed=0; failed=0; failed_names=()
step() { printf '\n=== [%4ds] %s\n' "$((SECONDS - t0))" "$*"; }
trap 'rm -rf "$WORK"' EXIT

step "setup: controller venv"
bash scripts/setup-dev.sh || { echo "FATAL: controller venv could not be made"; echo "0 passed, 1 failed"; exit 1; }
# shellcheck source=scripts/env.sh
. scripts/env.sh
step "setup: system packages (sshd, nginx, podman, shellcheck, locale)"
bash scripts/setup-test-deps.sh || { echo "FATAL: system packages missing"; echo "0 passed, 1 failed"; exit 1; }
# the system gate (real-server, collective and multi-node tests), the vllm gate and three molecule scenarios start
# the real CPU vLLM
case " $GATES " in *" system "*|*" vllm "*|*" molecule "*)
  step "setup: CPU vLLM and the tiny model (cached between runs)"
  bash scripts/setup-vllm-cpu.sh || { echo "FATAL: the CPU vLLM could not be set up"; echo "0 passed, 1 failed"; exit 1; } ;;
esac

gate() {  # gate NAME command...
  local name=$1; shift
  case " $GATES " in *" $name "*) ;; *) return 0 ;; esac
  step "gate $name: $*"
  local g0=$SECONDS
  if "$@" 2>&1 | tee "$LOGS/$name.log"; then
    passed=$((passed + 1)); echo "--- gate $name PASSED in $((SECONDS - g0))s"
  else
    failed=$((failed + 1)); failed_names+=("$name"); echo "--- gate $name FAILED in $((SECONDS - g0))s (log: tests/output/run-all/$name.log)"
  fi
}

gate sanity tests/ansible-test.sh sanity
gate units tests/ansible-test.sh units
gate integration tests/ansible-test.sh integration
gate system python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --no-loadscope-reorder --durations=30 tests/system

gate vllm python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=10 tests/vllm
gate molecule bash tests/molecule-lanes.sh
gate lint ansible-lint
gate build tests/build-and-install.sh "$WORK/build"

echo
echo "gates run in $((SECONDS - t0))s; failed: ${failed_names[*]:-none}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
