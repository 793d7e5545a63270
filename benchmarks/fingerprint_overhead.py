"""Overhead of playbooks/fingerprint.yml above Ansible's own floor, over N real sshd hosts on loopback.

For each N (default 5 and 20) it starts N sshd daemons (tests/system/sshd_hosts.sh), then alternates runs of
benchmarks/ping.yml (one ping per host) and playbooks/fingerprint.yml (GPU facts replaying a real H200 capture)
and reports the median wall time of each and their ratio, as JSON. Both runs use the project's ansible.cfg
(pipelining on) and the same forks. Run after `make setup`:  . scripts/env.sh && python benchmarks/fingerprint_overhead.py
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
HARNESS = os.path.join(ROOT, "tests", "system", "sshd_hosts.sh")


def timed(argv, env):
    t0 = time.monotonic()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800, check=False)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-2000:])
        raise SystemExit("benchmark run failed: %s" % " ".join(argv))
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--hosts", type=int, nargs="+", default=[5, 20])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--forks", type=int, default=20)
    ap.add_argument("--port-base", type=int, default=23100)
    args = ap.parse_args()
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".cache", "collections"),
               REPRO_VLLM_REPLAY_DIR=os.path.join(ROOT, "tests", "fixtures", "h200-1gpu"))
    results = []
    for n in args.hosts:
        work = tempfile.mkdtemp(prefix="repro-vllm-bench-")
        try:
            subprocess.run([HARNESS, "start", work, str(n), str(args.port_base)], check=True, timeout=300)
            inv = os.path.join(work, "inventory.yml")
            common = ["-i", inv, "-f", str(args.forks)]
            fp_vars = ["-e", "repro_vllm_records_root=%s/records" % work, "-e", "repro_vllm_remote_root=%s/remote" % work,
                       "-e", "repro_vllm_nvidia_smi_path=%s" % os.path.join(ROOT, "tests", "fixtures", "bin", "nvidia-smi-replay"),
                       "-e", "repro_vllm_case_id=bench"]
            ping, fp = [], []
            timed(["ansible-playbook"] + common + [os.path.join(ROOT, "benchmarks", "ping.yml")], env)  # warm-up
            for _round in range(args.repeat):
                ping.append(timed(["ansible-playbook"] + common + [os.path.join(ROOT, "benchmarks", "ping.yml")], env))
                fp.append(timed(["ansible-playbook"] + common + fp_vars + [os.path.join(ROOT, "playbooks", "fingerprint.yml")], env))
            res = {"hosts": n, "forks": args.forks, "repeat": args.repeat,
                   "ping_median_s": round(statistics.median(ping), 2), "fingerprint_median_s": round(statistics.median(fp), 2)}
            res["ratio"] = round(res["fingerprint_median_s"] / res["ping_median_s"], 2)
            res["per_host_overhead_s"] = round((res["fingerprint_median_s"] - res["ping_median_s"]) / n, 3)
            results.append(res)
            print(json.dumps(res), flush=True)
        finally:
            subprocess.run([HARNESS, "stop", work], check=False, timeout=120)
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"benchmark": "fingerprint_overhead", "cpus": os.cpu_count(), "results": results}, indent=2))


if __name__ == "__main__":
    main()
