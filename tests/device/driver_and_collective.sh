#!/usr/bin/env bash
# On a lent NVIDIA machine (no Ansible there): capture the driver actually in use by a real CUDA process, run
# gpu_facts' gathering and the in-image probe script beside it, then the collective checkpoint's node part
# (plugins/module_utils/gpu/_collective.py, the code the collective_run module runs) with NCCL, healthy and with
# deliberate faults, and gloo on the CPU.
#
# usage (from a copy of the collection root): OUT=/some/dir tests/device/driver_and_collective.sh
# Writes $OUT/driver/ (NAME.cmd, NAME.txt, NAME.meta per command, gather_*.json, probe*), $OUT/collective/<case>/
# (torchrun.log, rank<N>.{stdout,stderr}.log, allreduce.py, result.json, case.txt) and $OUT/log.txt.
set -uo pipefail
: "${OUT:?set OUT}"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${PYTHON:-python3}
# NVLink multicast stays off on shared machines
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT/driver" "$OUT/collective"
LOG="$OUT/log.txt"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
COLL=$(mktemp -d "${TMPDIR:-/tmp}/repro-vllm-coll.XXXXXX")
HOLDER=""
cleanup() { [ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null; rm -rf "$COLL"; }
trap cleanup EXIT
mkdir -p "$COLL/ansible_collections/repro"
ln -s "$ROOT" "$COLL/ansible_collections/repro/vllm"
export PYTHONPATH="$COLL${PYTHONPATH:+:$PYTHONPATH}"

cap() {  # cap NAME COMMAND-TEXT: run through sh, keep command, output and exit code
  local name=$1 cmd=$2 t0 rc
  t0=$(date +%s%N)
  sh -c "$cmd" > "$OUT/driver/$name.txt" 2>&1
  rc=$?
  printf '%s\n' "$cmd" > "$OUT/driver/$name.cmd"
  echo "rc=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))" > "$OUT/driver/$name.meta"
  log "captured $name rc=$rc"
}

log "python: $("$PY" --version 2>&1) at $(command -v "$PY"); $(nvidia-smi -L 2>&1 | head -3)"

# ------------------------------------------------------------------- a real CUDA process and its driver
FIFO="$COLL/ready"
mkfifo "$FIFO"
"$PY" -c 'import sys, time, torch
x = torch.zeros(256 * 1024 ** 2, device="cuda")
torch.cuda.synchronize()
open(sys.argv[1], "w").write("ready\n")
time.sleep(120)' "$FIFO" &
HOLDER=$!
if timeout 120 head -n1 "$FIFO" > /dev/null; then
  log "holder pid $HOLDER (this script: $$)"
  echo "$HOLDER" > "$OUT/driver/holder_pid.txt"
  cap proc_maps "cat /proc/$HOLDER/maps"
  cap proc_status "cat /proc/$HOLDER/status"
  cap proc_cmdline "tr '\\0' ' ' < /proc/$HOLDER/cmdline"
  cap nvsmi_apps_noheader "nvidia-smi --query-compute-apps=pid,process_name,gpu_uuid,used_memory --format=csv,noheader,nounits"
  cap proc_driver "cat /proc/driver/nvidia/version"
  cap ldconfig_cuda "ldconfig -p | grep -E 'libcuda|libnvidia-ml'"
  cap libcuda_files "ls -la /usr/local/nvidia/lib64/libcuda.so* /lib/libcuda.so* 2>&1; readlink -f /usr/local/nvidia/lib64/libcuda.so.1 /lib/libcuda.so.1"
  cap self_status "grep -E '^(Name|Pid|PPid|NSpid)' /proc/self/status"
  for mode in own parent none; do
    case $mode in
      own) opts="{\"own_pids\": [$HOLDER]}" ;;
      parent) opts="{\"own_pids\": [$$]}" ;;
      none) opts='{}' ;;
    esac
    "$PY" - "$OUT/driver/gather_$mode.json" "$opts" <<'PY' 2>&1 | tee -a "$LOG"
import json, sys
from ansible_collections.repro.vllm.plugins.module_utils.gpu._gpu import gather
facts = gather(json.loads(sys.argv[2]))
json.dump(facts, open(sys.argv[1], "w"), indent=2, sort_keys=True)
print(sys.argv[1], json.dumps(facts["driver_in_use"])[:400])
print([(p["pid"], p["attribution"], p["reason"]) for p in facts["processes"]])
PY
  done
else
  log "the CUDA holder did not get ready within 120 s"
fi
kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null; HOLDER=""

# the in-image probe script, run by the machine's own python3 (what an image's python3 runs in a container)
"$PY" - "$OUT/driver" <<'PY' 2>&1 | tee -a "$LOG"
import os, subprocess, sys
from ansible_collections.repro.vllm.plugins.module_utils.container._container import PROBE_SCRIPT
for name, extra in (("probe", {}), ("probe_novisible", {"CUDA_VISIBLE_DEVICES": ""})):
    p = subprocess.run(["python3", "-c", PROBE_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=dict(os.environ, **extra), timeout=120)
    for ext, data in ((".out", p.stdout), (".err", p.stderr), (".rc", b"%d\n" % p.returncode)):
        open(os.path.join(sys.argv[1], name + ext), "wb").write(data)
    print(name, p.returncode, p.stdout.decode()[:300])
PY

# ------------------------------------------------------------------- the collective checkpoint's node part
coll() {  # coll CASE JSON-OPTIONS
  local d="$OUT/collective/$1"
  mkdir -p "$d"
  log "collective $1: $2"
  "$PY" - "$d" "$2" <<'PY' 2>&1 | tee -a "$LOG"
import json, sys
from ansible_collections.repro.vllm.plugins.module_utils.gpu import _collective
opts = dict(python=sys.executable, nnodes=1, node_rank=0, nproc_per_node=1, master_addr="127.0.0.1",
            backend="nccl", timeout=120, log_dir=sys.argv[1],
            env={"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"})
extra = json.loads(sys.argv[2])
opts["env"].update(extra.pop("env", {}))
opts.update(extra)
res = _collective.run(opts)
json.dump(res, open(sys.argv[1] + "/result.json", "w"), indent=2, sort_keys=True)
print(sys.argv[1], "ok=%s status=%s rc=%s wall=%ss reason=%s" % (res["ok"], res["status"], res["rc"], res["wall_s"],
                                                                 res["reason"]))
PY
}
coll nccl_1rank '{"master_port": 29610}'
coll nccl_2ranks_one_gpu '{"master_port": 29611, "nproc_per_node": 2, "device_map": "shared", "timeout": 90}'
coll nccl_bad_socket_ifname '{"master_port": 29612, "env": {"NCCL_SOCKET_IFNAME": "doesnotexist0"}, "timeout": 90}'
coll nccl_node1_never_starts '{"master_port": 29613, "nnodes": 2, "timeout": 40, "init_timeout": 20}'
coll gloo_2ranks_cpu '{"master_port": 29614, "nproc_per_node": 2, "backend": "gloo", "timeout": 90}'
nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv > "$OUT/nvsmi_after.txt" 2>&1
log "done"
