#!/usr/bin/env bash
# On a lent NVIDIA machine, as root: a CUDA process in a pid namespace of its own (unshare --pid --mount-proc, as
# a container has), and how the driver's process list and gpu_facts' attribution look from outside and from
# inside that namespace.
# usage (from a copy of the collection root): OUT=/some/dir tests/device/nspid_capture.sh
# Writes $OUT/nspid/: NAME.cmd, NAME.txt, NAME.meta per command, gather_*.json, and $OUT/nspid/log.txt.
set -uo pipefail
: "${OUT:?set OUT}"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${PYTHON:-python3}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
D="$OUT/nspid"
mkdir -p "$D"
LOG="$D/log.txt"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
COLL=$(mktemp -d "${TMPDIR:-/tmp}/repro-vllm-coll.XXXXXX")
UNSHARE=""
cleanup() { [ -n "$UNSHARE" ] && kill "$UNSHARE" 2>/dev/null; rm -rf "$COLL"; }
trap cleanup EXIT
mkdir -p "$COLL/ansible_collections/repro"
ln -s "$ROOT" "$COLL/ansible_collections/repro/vllm"
export PYTHONPATH="$COLL"

cap() {  # cap NAME COMMAND-TEXT
  local name=$1 cmd=$2 t0 rc
  t0=$(date +%s%N)
  sh -c "$cmd" > "$D/$name.txt" 2>&1
  rc=$?
  printf '%s\n' "$cmd" > "$D/$name.cmd"
  echo "rc=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))" > "$D/$name.meta"
  log "captured $name rc=$rc"
}

gather() {  # gather OUTFILE OPTIONS-JSON [nsenter prefix...]
  local out=$1 opts=$2; shift 2
  "$@" env PYTHONPATH="$COLL" "$PY" - "$out" "$opts" <<'PY' 2>&1 | tee -a "$LOG"
import json, sys
from ansible_collections.repro.vllm.plugins.module_utils.gpu._gpu import gather
facts = gather(json.loads(sys.argv[2]))
json.dump(facts, open(sys.argv[1], "w"), indent=2, sort_keys=True)
print(sys.argv[1], [(p["pid"], p["attribution"], p["local_pid"], p["reason"]) for p in facts["processes"]])
print("  driver_in_use:", json.dumps({k: facts["driver_in_use"][k] for k in ("mismatch", "processes")})[:300])
PY
}

FIFO="$COLL/ready"
mkfifo "$FIFO"
unshare --pid --fork --mount-proc "$PY" -c 'import sys, time, torch
x = torch.zeros(256 * 1024 ** 2, device="cuda")
torch.cuda.synchronize()
open(sys.argv[1], "w").write("ready\n")
time.sleep(120)' "$FIFO" &
UNSHARE=$!
if ! timeout 120 head -n1 "$FIFO" > /dev/null; then
  log "the namespaced CUDA holder did not get ready"; exit 1
fi
INNER_HOST_PID=$(pgrep -P "$UNSHARE" | head -1)
log "unshare pid $UNSHARE, the CUDA process is pid $INNER_HOST_PID here (this script $$)"
echo "unshare=$UNSHARE cuda_process=$INNER_HOST_PID script=$$" > "$D/pids.txt"
APPS="nvidia-smi --query-compute-apps=pid,process_name,gpu_uuid,used_memory --format=csv,noheader,nounits"
cap outside_nvsmi_apps "$APPS"
cap outside_proc_status "grep -E '^(Name|Pid|PPid|NSpid)' /proc/$INNER_HOST_PID/status"
cap inside_nvsmi_apps "nsenter -t $INNER_HOST_PID -p -m $APPS"
cap inside_ps "nsenter -t $INNER_HOST_PID -p -m sh -c 'for s in /proc/[0-9]*/status; do grep -E \"^(Name|Pid|NSpid)\" \$s | tr \"\\n\" \" \"; echo; done'"
gather "$D/gather_outside_none.json" '{}'
gather "$D/gather_outside_unshare.json" "{\"own_pids\": [$UNSHARE]}"
gather "$D/gather_inside_none.json" '{}' nsenter -t "$INNER_HOST_PID" -p -m
gather "$D/gather_inside_own1.json" '{"own_pids": [1]}' nsenter -t "$INNER_HOST_PID" -p -m
kill "$UNSHARE" 2>/dev/null; wait "$UNSHARE" 2>/dev/null; UNSHARE=""
log "done"
