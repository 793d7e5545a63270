"""playbooks/fingerprint.yml against Ansible's floor over N simulated hosts (local connections, real H200 replay).

Two measurements, both side by side in one run, printed as JSON:

* ``--ratio N`` (default 20): alternates three plays over the same N hosts, same forks and the project's
  ansible.cfg - ``benchmarks/ping.yml`` (the floor), ``benchmarks/gpu_facts_only.yml`` (one task calling the bare
  ``repro.vllm.gpu_facts`` module: the work that cannot be avoided) and ``playbooks/fingerprint.yml`` - and reports
  medians and the ratio fingerprint / gpu_facts (issue 8: <= 1.5x, goal 1.2x) and fingerprint / ping.
* ``--fleet 100 300 1000``: one fingerprint of each size (forks 50 by default) and seconds per host; a flat
  figure means the total grows linearly. ``--fleet-playbooks fingerprint audit`` times audit.yml at each size too.

Every host is ``ansible_connection: local`` with its own inventory name, and nvidia-smi is the replay of the real
H200 capture (tests/fixtures/h200-1gpu), so the controller does all of Ansible's per-host work that a real fleet
costs, minus the network. Run after `make setup`:  . scripts/env.sh && python benchmarks/fingerprint_fleet.py
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
REPLAY = os.path.join(ROOT, "tests", "fixtures", "bin", "nvidia-smi-replay")
CAPTURE = os.path.join(ROOT, "tests", "fixtures", "h200-1gpu")


def inventory(work, n):
    path = os.path.join(work, "hosts-%d.yml" % n)
    with open(path, "w") as f:
        f.write("---\nsim:\n  hosts:\n")
        for i in range(1, n + 1):
            f.write("    sim%04d:\n" % i)
        f.write("  vars:\n    ansible_connection: local\n")
        f.write("    ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n")
        f.write("    repro_vllm_nvidia_smi_path: %s\n" % REPLAY)
    return path


def timed(argv, env):
    t0 = time.monotonic()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=3600, check=False)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-2000:])
        raise SystemExit("benchmark run failed (rc %d): %s" % (proc.returncode, " ".join(argv)))
    return round(wall, 2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--ratio", type=int, default=20, help="hosts for the side-by-side ratio (0: skip)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--forks", type=int, default=20, help="forks of the ratio runs")
    ap.add_argument("--fleet", type=int, nargs="*", default=[], help="fleet sizes for seconds per host")
    ap.add_argument("--fleet-forks", type=int, default=50)
    ap.add_argument("--fleet-playbooks", nargs="+", default=["fingerprint"], choices=["fingerprint", "audit"],
                    help="playbooks timed at each fleet size (audit.yml: fingerprint, judge, drift and isolation)")
    args = ap.parse_args()
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".cache", "collections"),
               REPRO_VLLM_REPLAY_DIR=CAPTURE, ANSIBLE_NOCOLOR="1")
    work = tempfile.mkdtemp(prefix="repro-vllm-fleet-bench-")
    out = {"benchmark": "fingerprint_fleet", "cpus": os.cpu_count(), "ratio": None, "fleet": []}
    try:
        if args.ratio:
            inv = inventory(work, args.ratio)
            common = ["-i", inv, "-f", str(args.forks)]
            plays = {"ping": [os.path.join(ROOT, "benchmarks", "ping.yml")],
                     "gpu_facts": [os.path.join(ROOT, "benchmarks", "gpu_facts_only.yml")],
                     "fingerprint": ["-e", "repro_vllm_records_root=%s/records" % work, "-e", "repro_vllm_case_id=bench",
                                     os.path.join(ROOT, "playbooks", "fingerprint.yml")]}
            times = {k: [] for k in plays}
            timed(["ansible-playbook"] + common + plays["ping"], env)  # warm-up (caches, bytecode)
            for _round in range(args.repeat):
                for name, tail in plays.items():
                    times[name].append(timed(["ansible-playbook"] + common + tail, env))
            med = {k: round(statistics.median(v), 2) for k, v in times.items()}
            out["ratio"] = {"hosts": args.ratio, "forks": args.forks, "repeat": args.repeat, "runs_s": times,
                            "median_s": med,
                            "fingerprint_over_gpu_facts": round(med["fingerprint"] / med["gpu_facts"], 2),
                            "fingerprint_over_ping": round(med["fingerprint"] / med["ping"], 2),
                            "gpu_facts_over_ping": round(med["gpu_facts"] / med["ping"], 2)}
            print(json.dumps(out["ratio"]), flush=True)
        for n in args.fleet:
            inv = inventory(work, n)
            for book in args.fleet_playbooks:
                wall = timed(["ansible-playbook", "-i", inv, "-f", str(args.fleet_forks), "-e",
                              "repro_vllm_records_root=%s/records" % work, "-e", "repro_vllm_case_id=%s%d" % (book, n),
                              os.path.join(ROOT, "playbooks", book + ".yml")], env)
                res = {"playbook": book, "hosts": n, "forks": args.fleet_forks, "seconds": wall,
                       "s_per_host": round(wall / n, 3)}
                if book == "fingerprint":
                    res["fingerprint_s"] = wall  # the key earlier runs of this benchmark printed
                out["fleet"].append(res)
                print(json.dumps(res), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
