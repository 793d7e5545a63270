#!/usr/bin/env bash
# Capture the collective checkpoint on a multi-GPU host: a healthy torchrun all-reduce over every GPU with
# NCCL_DEBUG=INFO, then one deliberate fault at a time. Per case: torchrun's own output and each rank's
# stdout/stderr (torchrun --log-dir), the command, exit code and wall time.
# usage (repository root, on the GPU machine): OUT=/some/dir tests/device/collective_capture.sh
set -uo pipefail
: "${OUT:?set OUT}"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# NVLink multicast stays off on shared machines
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
PY=${PYTHON:-python3}
mkdir -p "$OUT"
run_case() {  # run_case NAME ENV...
  local name=$1; shift
  local d="$OUT/$name"; mkdir -p "$d/ranks"
  local port=$((29500 + RANDOM % 1000))
  local cmd=(env "$@" NCCL_DEBUG=INFO timeout 180 "$PY" -m torch.distributed.run --nproc-per-node="$NGPU"
             --master-addr=127.0.0.1 --master-port="$port" --log-dir "$d/ranks" --redirects 3 --tee 3
             "$ROOT/tests/device/collective_check.py")
  printf '%s\n' "${cmd[*]}" > "$d/command.txt"
  local t0; t0=$(date +%s%N)
  "${cmd[@]}" > "$d/torchrun.log" 2>&1
  local rc=$?
  echo "rc=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))" > "$d/meta.txt"
  echo "$name: $(cat "$d/meta.txt")"
}
run_case healthy
run_case cvd_fewer_than_ranks CUDA_VISIBLE_DEVICES=0
run_case bad_socket_ifname NCCL_SOCKET_IFNAME=doesnotexist0
run_case rank1_exits_others_time_out REPRO_FAULT=exit_rank1_clean REPRO_PG_TIMEOUT=30
run_case rank1_fails_before_init REPRO_FAULT=exit_rank1_error
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
nvidia-smi nvlink -s > "$OUT/nvlink_s.txt" 2>&1
