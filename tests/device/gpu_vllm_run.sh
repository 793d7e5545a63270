#!/usr/bin/env bash
# On a lent H200 after shared/gpu-vllm's two set-up calls (vLLM 0.26.0 at /var/tmp/gpu-vllm/bin/vllm, the tiny model
# at /var/tmp/gpu-vllm/model/tiny): run the collection's playbooks against the real GPU vLLM and bring the frozen
# records back. ansible-core comes from wheels carried in .whl (device README). docs/gpu.md says what each case is.
#
# usage (repository root): OUT=/some/dir bash tests/device/gpu_vllm_run.sh MODE...
#   ladder    reproduce.yml through every layer one GPU holds, under the h200-1gpu profile (case h200-ladder)
#   cases1    failures at the start: KV cache too small, max-model-len beyond the cache, a foreign process holding
#             most of the GPU's memory (the boundary, then allowed), CUDA_VISIBLE_DEVICES naming a GPU that is not there
#   cases2    --tensor-parallel-size 2 on one GPU, CUDA graph capture (no --enforce-eager), a damaged and a missing
#             weight shard
#   bench     benchmarks/vllm_server_overhead.py on the GPU (bare start vs the module's, alternating)
# Writes $OUT/records-MODE.tar.xz (the records root of the mode and each play's console, consoles/<case>.txt),
# $OUT/bench.json, and prints one line per play with its exit status and closing line.
set -uo pipefail
: "${OUT:?set OUT}"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
G=/var/tmp/gpu-vllm
if [ ! -x $G/bin/vllm ] || [ ! -d $G/model/tiny ]; then echo "NO GPU VLLM: run shared/gpu-vllm's stage1.sh and stage2.sh first"; exit 3; fi
PY=$(command -v python3)
if [ ! -x /tmp/site/bin/ansible-playbook ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 4
fi
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
COLL=/tmp/repro-coll
mkdir -p $COLL/ansible_collections/repro && ln -sfn "$ROOT" $COLL/ansible_collections/repro/vllm
export ANSIBLE_CONFIG="$ROOT/ansible.cfg" ANSIBLE_COLLECTIONS_PATH=$COLL ANSIBLE_NOCOLOR=1
INV="$ROOT/tests/device/gpu_vllm/hosts.yml"
WORK=/var/tmp/repro-gpu
HOLDER=""
cleanup() { [ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null; true; }
trap cleanup EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*"; }

play() {  # play MODE CASE [ansible-playbook args...]: reproduce.yml of one case, its console kept
  local mode=$1 case=$2 t0 rc; shift 2
  mkdir -p "$WORK/$mode/consoles"
  t0=$SECONDS
  timeout -s INT -k 30 "${PLAY_TIMEOUT:-470}" ansible-playbook -i "$INV" playbooks/reproduce.yml -e repro_vllm_case_id="$case" \
    -e repro_vllm_records_root="$WORK/$mode/records" -e repro_vllm_remote_root="$WORK/$mode/remote" "$@" \
    > "$WORK/$mode/consoles/$case.txt" 2>&1
  rc=$?
  log "$case rc=$rc in $((SECONDS - t0))s | $(grep -v '^\s*$' "$WORK/$mode/consoles/$case.txt" | tail -1)"
  grep -E "^(stage|verdict|FAIL|VIOLATION|compat|boundary)|first error|classified" "$WORK/$mode/consoles/$case.txt" | head -6
}

hold_gpu() {  # hold_gpu GIB: a foreign CUDA process holding GIB of the GPU's memory (another job on a shared node)
  local fifo=/tmp/holder.ready
  rm -f $fifo && mkfifo $fifo
  "$PY" -c 'import sys, time, torch
x = torch.empty(int(float(sys.argv[1]) * 1024 ** 3), dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
open(sys.argv[2], "w").write("ready\n")
time.sleep(900)' "$1" $fifo &
  HOLDER=$!
  timeout 120 head -n1 $fifo > /dev/null && log "foreign holder pid $HOLDER holds $1 GiB: $(nvidia-smi --query-gpu=memory.used --format=csv,noheader)"
}

pack() {  # pack MODE
  tar -C "$WORK/$1" -cJf "$OUT/records-$1.tar.xz" records consoles 2>/dev/null
  log "packed $(du -h "$OUT/records-$1.tar.xz" | cut -f1) records-$1.tar.xz"
}

for mode in "$@"; do
  case $mode in
    ladder)
      play ladder h200-ladder
      ;;
    cases1)
      play cases1 gpu-kv-cache-too-small -e repro_vllm_ladder_until= -e repro_vllm_collect_env=false \
        -e '{"repro_vllm_platform_args": ["--max-model-len", "512", "--enforce-eager", "--gpu-memory-utilization", "0.001"]}'
      play cases1 gpu-max-model-len-beyond-cache -e repro_vllm_ladder_until= -e repro_vllm_collect_env=false \
        -e '{"repro_vllm_platform_args": ["--max-model-len", "2048", "--enforce-eager", "--kv-cache-memory-bytes", "1048576"]}'
      play cases1 gpu-invisible-device -e repro_vllm_ladder_until= -e repro_vllm_collect_env=false \
        -e '{"repro_vllm_server_env": {"CUDA_VISIBLE_DEVICES": "1", "VLLM_USE_FLASHINFER_SAMPLER": "0", "HF_HUB_OFFLINE": "1", "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}}' \
        -e '{"repro_vllm_minimal_keep_env": ["CUDA_VISIBLE_DEVICES", "VLLM_USE_FLASHINFER_SAMPLER", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"]}'
      hold_gpu 120
      play cases1 gpu-foreign-process-boundary -e repro_vllm_ladder_until= -e repro_vllm_collect_env=false
      play cases1 gpu-foreign-process-allowed -e repro_vllm_ladder_until= -e repro_vllm_collect_env=false \
        -e repro_vllm_allow_foreign=true
      kill "$HOLDER"; wait "$HOLDER" 2>/dev/null; HOLDER=""
      pack cases1
      ;;
    cases2)
      play cases2 gpu-tensor-parallel-2-on-1 -e repro_vllm_ladder_until= -e repro_vllm_collect_env=false \
        -e '{"repro_vllm_platform_args": ["--max-model-len", "512", "--enforce-eager", "--gpu-memory-utilization", "0.3", "--tensor-parallel-size", "2"]}'
      play cases2 gpu-cuda-graphs -e repro_vllm_ladder_until= -e repro_vllm_collect_env=false \
        -e '{"repro_vllm_platform_args": ["--max-model-len", "512", "--gpu-memory-utilization", "0.3"]}'
      # a weight shard cut short (a copy interrupted mid-way) and one that is gone; the copies are this run's own
      for kind in damaged missing; do
        rm -rf $G/model/tiny-$kind && cp -r $G/model/tiny $G/model/tiny-$kind
        for f in "$G/model/tiny-$kind"/*.safetensors; do
          if [ $kind = damaged ]; then truncate -s $(( $(stat -c %s "$f") / 2 )) "$f"; else rm -f "$f"; fi
        done
        find "$G/model/tiny-$kind" -maxdepth 1 -type f -printf '  %f %s\n'
        play cases2 gpu-weight-shard-$kind -e repro_vllm_ladder_until= -e repro_vllm_collect_env=false \
          -e repro_vllm_model=$G/model/tiny-$kind
      done
      pack cases2
      ;;
    bench)
      "$PY" benchmarks/vllm_server_overhead.py --rounds "${BENCH_ROUNDS:-3}" --vllm $G/bin/vllm --model $G/model/tiny \
        --arg=--gpu-memory-utilization --arg=0.3 --env VLLM_USE_FLASHINFER_SAMPLER=0 --env HF_HUB_OFFLINE=1 \
        --env NCCL_NVLS_ENABLE=0 --env TORCH_SYMM_MEM_DISABLE_MULTICAST=1 --env NVSHMEM_DISABLE_NVLS=1 \
        > "$OUT/bench.json" 2> "$OUT/bench.stderr.txt"
      log "bench rc=$?"; tail -c 1500 "$OUT/bench.json"
      ;;
    *) echo "unknown mode $mode"; exit 2 ;;
  esac
  [ "$mode" = ladder ] && pack ladder
done
log "GPU after: $(nvidia-smi --query-gpu=memory.used --format=csv,noheader); servers left: $(pgrep -fc 'vllm serve|EngineCore' || true)"
