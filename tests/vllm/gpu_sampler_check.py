# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check the vllm_server memory sampler on a REAL NVIDIA GPU (run by hand on a GPU host; not part of CI).

Starts, through ``module_utils/server/_server.spawn`` (the code the module uses), a Python process that takes
``--gib`` GiB on GPU 0 with torch after 3 s and holds it 5 s, then reads ``memory.jsonl``: the per-GPU
``memory.used`` samples from the real ``nvidia-smi`` must rise by about that much while it runs, and the
supervisor must stop by itself once the process is gone. Prints one JSON object; exit 0 when it held.

    python3 tests/vllm/gpu_sampler_check.py [--out DIR] [--gib 4]

Needs only the standard library, torch with CUDA and nvidia-smi on the host (no Ansible).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--gib", type=int, default=4)
    opts = ap.parse_args()
    out = opts.out or tempfile.mkdtemp(prefix="gpu-sampler.")
    os.makedirs(out, exist_ok=True)
    coll = tempfile.mkdtemp(prefix="coll.")
    os.makedirs(os.path.join(coll, "ansible_collections", "repro"))
    os.symlink(REPO, os.path.join(coll, "ansible_collections", "repro", "vllm"))
    sys.path.insert(0, coll)
    from ansible_collections.repro.vllm.plugins.module_utils.common import _cmd  # noqa: E402
    from ansible_collections.repro.vllm.plugins.module_utils.server import _server as srv  # noqa: E402

    nvsmi = srv.find_nvidia_smi()
    if not nvsmi:
        print(json.dumps({"ok": False, "why": "no nvidia-smi on PATH"}))
        return 2
    raw = _cmd.run_cmd([nvsmi] + srv.GPU_QUERY, timeout=10)
    prog = ("import time, torch; time.sleep(3); "
            "x = torch.empty(%d * 1024 ** 3, dtype=torch.uint8, device='cuda:0'); x.fill_(1); "
            "torch.cuda.synchronize(); print('allocated', flush=True); time.sleep(5)" % opts.gib)
    state = os.path.join(out, "state.json")
    memory = os.path.join(out, "memory.jsonl")
    info = srv.spawn([sys.executable, "-c", prog], dict(os.environ), os.path.join(out, "server.log"), out, state,
                     memory, interval=1.0, nvidia_smi=nvsmi, gpu_timeout=5.0)
    rec = srv.wait_exit_record(srv.exit_file_for(state), 120)
    deadline = time.monotonic() + 10
    while srv.pid_alive(info["supervisor_pid"]) and time.monotonic() < deadline:
        srv.reap_quietly(info["supervisor_pid"])
        time.sleep(0.2)
    with open(memory) as f:
        samples = [json.loads(line) for line in f]
    used = [s["gpus"][0]["memory_used_mib"] for s in samples if s.get("gpus")]
    rise = (max(used) - used[0]) if used else 0
    result = {
        "nvidia_smi": nvsmi, "query": [os.path.basename(nvsmi)] + srv.GPU_QUERY, "query_status": raw["status"],
        "query_stdout": raw["stdout"], "exit": rec, "samples": len(samples), "gpu0_used_mib": used,
        "rise_mib": rise, "peak_rss_bytes": max(s["rss_bytes"] for s in samples) if samples else 0,
        "supervisor_gone": not srv.pid_alive(info["supervisor_pid"]),
    }
    result["ok"] = bool(rec and rec["exit_code"] == 0 and rise >= opts.gib * 1024 * 0.9 and result["supervisor_gone"])
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
