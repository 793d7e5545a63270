"""A PyTorch all-reduce over every rank, started by torchrun: the collective checkpoint of the method.

Each rank prints one JSON line (rank, world size, device, the all-reduced value and whether it is right).
REPRO_FAULT selects one deliberate fault for capture runs:
  exit_rank1_clean   rank 1 exits with code 0 before init, so the other ranks wait in the rendezvous and time out
  exit_rank1_error   rank 1 exits with code 3 before init (torchrun stops the others: ChildFailedError)
REPRO_PG_TIMEOUT: seconds for init_process_group (default 60). Backend: nccl with CUDA, gloo without.
"""
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    fault = os.environ.get("REPRO_FAULT", "")
    if rank == 1 and fault == "exit_rank1_clean":
        print("rank 1: leaving before init_process_group (deliberate fault)", flush=True)
        sys.exit(0)
    if rank == 1 and fault == "exit_rank1_error":
        print("rank 1: failing before init_process_group (deliberate fault)", flush=True)
        sys.exit(3)
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local)
    t0 = time.monotonic()
    dist.init_process_group("nccl" if use_cuda else "gloo",
                            timeout=datetime.timedelta(seconds=int(os.environ.get("REPRO_PG_TIMEOUT", "60"))))
    init_s = time.monotonic() - t0
    x = torch.full((1 << 20,), float(rank + 1), device="cuda" if use_cuda else "cpu")
    t1 = time.monotonic()
    dist.all_reduce(x)
    if use_cuda:
        torch.cuda.synchronize()
    expected = world * (world + 1) / 2.0
    value = float(x[0].item())
    print(json.dumps({"rank": rank, "world_size": world, "device": str(x.device), "value": value,
                      "expected": expected, "ok": abs(value - expected) < 1e-3,
                      "init_s": round(init_s, 3), "allreduce_s": round(time.monotonic() - t1, 4)}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
