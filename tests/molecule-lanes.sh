#!/usr/bin/env bash
# The molecule gate in two lanes (tests/run-all.sh). Three scenarios start the real CPU vLLM, and a start is mostly
# single-threaded imports, so one scenario at a time leaves a core idle. Each lane runs its scenarios one after the
# other with `molecule test -s NAME`; the scenarios use their own ports (8093-8095) and their own ephemeral folders,
# so the lanes never meet. Each lane's output goes to its own log, printed whole when the lane ends (never
# interleaved). Exit status 0 only if every scenario passed; the last lines name each scenario's result.
# Lanes: REPRO_VLLM_MOLECULE_LANES="a,b c,d" overrides the default split (space between lanes, comma inside one).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
LANES=${REPRO_VLLM_MOLECULE_LANES:-"feature_layer,record single_request,minimal_startup,fingerprint"}
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/repro-vllm-molecule.XXXXXX")
trap 'rm -rf "$LOGDIR"' EXIT

# every scenario must be in exactly one lane: a new scenario left out of the split would silently never run
want=$(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' | xargs -n1 basename | sort)
have=$(tr ', ' '\n' <<<"$LANES" | sed '/^$/d' | sort)
if [ "$want" != "$have" ]; then
  echo "molecule-lanes: the lanes ($LANES) do not hold exactly the scenarios under molecule/:" >&2
  diff <(echo "$want") <(echo "$have") >&2
  exit 2
fi

lane() {  # lane N a,b,c: runs the scenarios in order, writes N.log and one result line per scenario to N.res
  local n=$1 s t0
  for s in ${2//,/ }; do
    t0=$SECONDS
    if molecule test -s "$s" >>"$LOGDIR/$n.log" 2>&1; then
      echo "scenario $s PASSED in $((SECONDS - t0))s" >>"$LOGDIR/$n.res"
    else
      echo "scenario $s FAILED in $((SECONDS - t0))s" >>"$LOGDIR/$n.res"
    fi
  done
}

pids=(); n=0
for l in $LANES; do
  n=$((n + 1)); echo "molecule lane $n: ${l//,/ }"
  lane "$n" "$l" & pids+=($!)
done
rc=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || rc=1
  echo; echo "===== molecule lane $((i + 1)) ====="; cat "$LOGDIR/$((i + 1)).log"
done
echo
cat "$LOGDIR"/*.res
grep -q FAILED "$LOGDIR"/*.res && rc=1
exit "$rc"
