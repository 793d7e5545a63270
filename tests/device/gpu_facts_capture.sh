#!/usr/bin/env bash
# Run gpu_facts' gathering on a real GPU host that has no Ansible, keep its JSON, capture the raw output of every
# command it ran (as a fixture folder for the nvidia-smi replay stub), and run the benchmark.
#
# usage (from the collection root, on the lent GPU machine): OUT=/some/dir tests/device/gpu_facts_capture.sh
# Needs python3 (3.9+); torch is used for the busy case and the benchmark when it is importable.
#
# Writes under $OUT:
#   gpu_facts.json                 gather() with default options
#   gpu_facts_fabric_always.json   gather(fabric_query=always): reads nvidia-smi -q on real hardware
#   gpu_facts_tiny_timeout.json    gather(command_timeout=0.001): every call times out; shows that only the first
#                                  nvidia-smi call is made
#   gpu_facts_busy.json            gather() while a separate python process holds 10 GiB on GPU 0 (torch needed)
#   gpu_facts_busy_own.json        the same with that process's pid in own_pids
#   capture/<date>-<driver>-<gpu>/ NAME.cmd / NAME.txt / NAME.meta of each command gather() ran (same format as
#                                  tests/fixtures/h200-1gpu), plus a few probes, and a README.md
#   bench.json                     benchmarks/gpu_facts_bench.py
#   log.txt                        what this script did
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${OUT:?set OUT to the folder that receives the results}"
mkdir -p "$OUT"
PY=${PYTHON:-python3}
LOG="$OUT/log.txt"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }

# the collection must be importable as ansible_collections.repro.vllm: a temporary symlink to this checkout
COLL=$(mktemp -d "${TMPDIR:-/tmp}/repro-vllm-coll.XXXXXX")
HOLDER_PID=""
cleanup() {
  if [ -n "$HOLDER_PID" ]; then kill "$HOLDER_PID" 2>/dev/null || true; fi
  rm -rf "$COLL"
}
trap cleanup EXIT
mkdir -p "$COLL/ansible_collections/repro"
ln -s "$ROOT" "$COLL/ansible_collections/repro/vllm"
export PYTHONPATH="$COLL${PYTHONPATH:+:$PYTHONPATH}"

log "python: $("$PY" --version 2>&1); nvidia-smi: $(command -v nvidia-smi || echo none)"

gather_json() {  # gather_json OUTFILE JSON_OPTIONS
  "$PY" - "$1" "$2" <<'PY'
import json, sys, time
from ansible_collections.repro.vllm.plugins.module_utils.gpu._gpu import gather
start = time.monotonic()
facts = gather(json.loads(sys.argv[2]))
facts["_wall_ms_in_script"] = int((time.monotonic() - start) * 1000)
with open(sys.argv[1], "w") as fh:
    json.dump(facts, fh, indent=2, sort_keys=True)
print("%s: present=%s gpus=%d timed_out=%d skipped=%d errors=%d %d ms" % (
    sys.argv[1], facts["present"], facts["gpu_count"], len(facts["timed_out"]), len(facts["skipped"]),
    len(facts["errors"]), facts["duration_ms"]))
PY
}

log "gather with default options"
gather_json "$OUT/gpu_facts.json" '{}' | tee -a "$LOG"
log "gather with fabric_query=always"
gather_json "$OUT/gpu_facts_fabric_always.json" '{"fabric_query": "always"}' | tee -a "$LOG"
log "gather with command_timeout=0.001"
gather_json "$OUT/gpu_facts_tiny_timeout.json" '{"command_timeout": 0.001}' | tee -a "$LOG"

log "capture the raw output of every command gather() ran, and a few probes"
"$PY" - "$OUT/gpu_facts.json" "$OUT/capture" <<'PY' | tee -a "$LOG"
import datetime, json, os, re, subprocess, sys, time
from ansible_collections.repro.vllm.plugins.module_utils.gpu import _gpu

facts = json.load(open(sys.argv[1]))
driver = facts["driver"]["kernel_module_version"] or facts["driver"]["userspace_version"] or "nodriver"
gpu = re.sub(r"[^a-z0-9]+", "-", (facts["gpus"][0]["name"] if facts["gpus"] else "nogpu").lower()).strip("-")
gpu = gpu.replace("nvidia-", "")
folder = os.path.join(sys.argv[2], "%s-%s-%s" % (datetime.date.today().isoformat(), driver, gpu))
os.makedirs(folder, exist_ok=True)


def name_of(words):
    prog, args = os.path.basename(words[0]), words[1:]
    if prog == "nvidia-smi":
        if not args:
            return "nvsmi"
        if args[0].startswith("--query-gpu="):
            fields = tuple(args[0].split("=", 1)[1].split(","))
            return {_gpu.GPU_QUERY_FIELDS: "nvsmi_query_full", _gpu.GPU_QUERY_SAFE_FIELDS: "nvsmi_query_safe"}.get(
                fields, "nvsmi_query_%d" % len(fields))
        if args[0].startswith("--query-compute-apps="):
            return "nvsmi_apps_noheader"
        return "nvsmi_" + re.sub(r"[^A-Za-z0-9]+", "_", " ".join(args)).strip("_")
    return re.sub(r"[^A-Za-z0-9]+", "_", " ".join([prog] + args)).strip("_")


def capture(name, argv, shown=None):
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, check=False,
                              env=dict(os.environ, LC_ALL="C", LANG="C"))
        rc, out = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as exc:
        rc, out = 124, exc.output or b""
    except OSError as exc:
        rc, out = 127, str(exc).encode()
    ms = int((time.monotonic() - start) * 1000)
    base = os.path.join(folder, name)
    with open(base + ".cmd", "w") as fh:
        fh.write(" ".join(shown or argv) + " ")
    with open(base + ".txt", "wb") as fh:
        fh.write(out)
    with open(base + ".meta", "w") as fh:
        fh.write("rc=%s wall_ms=%d\n" % (rc, ms))
    print("captured %s rc=%s %d ms" % (name, rc, ms))


done = set()
for cmd in facts["commands"]:
    if cmd["status"] in ("not_found", "skipped") or tuple(cmd["cmd"]) in done:
        continue
    done.add(tuple(cmd["cmd"]))
    words = list(cmd["cmd"])
    shown = [os.path.basename(words[0])] + words[1:]  # the replay stub matches "nvidia-smi ..." and "ldconfig -p"
    capture(name_of(words), words, shown)

smi = facts["nvidia_smi_path"]
if smi:
    probes = {
        "nvsmi_nvlink_s": ["nvlink", "-s"],
        "nvsmi_q_d_fabric": ["-q", "-d", "FABRIC"],
        "nvsmi_query_fabric_camel": ["--query-gpu=index,fabric.cliqueId,fabric.clusterUuid",
                                     "--format=csv,noheader,nounits"],
        "nvsmi_q": ["-q"],
        "nvsmi_version": ["--version"],
        "nvsmi_help_query": ["--help-query-gpu"],
    }
    for name, args in probes.items():
        if not os.path.exists(os.path.join(folder, name + ".cmd")):
            capture(name, [smi] + args, ["nvidia-smi"] + args)
capture("proc_driver", ["cat", "/proc/driver/nvidia/version"])
capture("dev_nodes", ["sh", "-c", "ls -la /dev/nvidia* 2>&1"], ["sh", "-c", "ls -la /dev/nvidia* 2>&1"])
with open(os.path.join(folder, "README.md"), "w") as fh:
    fh.write("# Real captures: %s, driver %s (%s)\n\n" % (
        ", ".join(sorted(set(g["name"] for g in facts["gpus"]))) or "no GPU", driver, datetime.date.today()))
    fh.write("Made by `tests/device/gpu_facts_capture.sh` on the lent GPU machine: every command that\n"
             "`gather()` of `plugins/module_utils/gpu/_gpu.py` ran, run once more with its words unchanged, plus the\n"
             "probes `nvlink -s`, `-q -d FABRIC`, `--query-gpu` of the camelCase fabric fields, `-q`, `--version`\n"
             "and `--help-query-gpu`. `NAME.cmd` (the command, binary by name), `NAME.txt` (stdout and stderr\n"
             "together), `NAME.meta` (exit code and wall time in ms). Nothing was edited.\n")
print("capture folder: %s" % folder)
PY

if "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  log "busy case: a separate process holds 10 GiB on GPU 0"
  FIFO="$COLL/ready"
  mkfifo "$FIFO"
  "$PY" -c 'import sys, time, torch
x = torch.empty(10 * 2**30, dtype=torch.uint8, device="cuda:0")
torch.cuda.synchronize()
open(sys.argv[1], "w").write("ready\n")
time.sleep(300)' "$FIFO" &
  HOLDER_PID=$!
  if timeout 120 head -n1 "$FIFO" >/dev/null; then
    gather_json "$OUT/gpu_facts_busy.json" '{}' | tee -a "$LOG"
    gather_json "$OUT/gpu_facts_busy_own.json" "{\"own_pids\": [$HOLDER_PID]}" | tee -a "$LOG"
    log "holder pid $HOLDER_PID"
  else
    log "the 10 GiB holder did not get ready within 120 s; busy case skipped"
  fi
  kill "$HOLDER_PID" 2>/dev/null || true
  wait "$HOLDER_PID" 2>/dev/null || true
  HOLDER_PID=""
else
  log "torch with CUDA not available to $PY: busy case skipped"
fi

log "benchmark"
"$PY" "$ROOT/benchmarks/gpu_facts_bench.py" --runs 20 --collect-env-runs 3 --python "$PY" --out "$OUT/bench.json" \
  >/dev/null 2>>"$LOG" || log "benchmark failed: rc $?"
log "done"
