"""playbooks/fingerprint.yml on one real host (localhost) against ping, the bare gpu_facts play and torch's collect_env.

Alternates, after one warm-up of each, ``benchmarks/ping.yml`` (Ansible's floor), ``benchmarks/gpu_facts_only.yml``
(the bare module, one task), ``playbooks/fingerprint.yml`` (the whole record path: open, one task per host, judge,
close) and, when torch imports, ``python -m torch.utils.collect_env`` - all on this machine, with the project's
ansible.cfg and ``inventories/localhost`` (or ``--inventory``). Prints every run and the medians as JSON, with the
ratios issue 8 sets: fingerprint / ping (target <= 2x) and fingerprint / collect_env (target < 1).

Meant for a GPU host (the real nvidia-smi); on a machine without one pass ``--nvidia-smi`` (a replay).
  python benchmarks/fingerprint_localhost.py --repeat 3 --records /tmp/fp-bench
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


def timed(argv, env, cwd):
    t0 = time.monotonic()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    wall = round(time.monotonic() - t0, 2)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-6000:] + proc.stderr[-3000:])
        raise SystemExit("benchmark run failed (rc %d): %s" % (proc.returncode, " ".join(argv)))
    return wall, proc.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--inventory", default=os.path.join(ROOT, "inventories", "localhost"))
    ap.add_argument("--playbook-cmd", default="ansible-playbook",
                    help="how to start ansible-playbook (for example '%s -m ansible.cli.playbook')" % sys.executable)
    ap.add_argument("--nvidia-smi", default="", help="nvidia-smi to use (default: the one on PATH)")
    ap.add_argument("--no-collect-env", action="store_true")
    ap.add_argument("--records", default="", help="records root for the fingerprint runs (default: a temp folder)")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=PLAYBOOK",
                    help="another fingerprint playbook in the same rounds (an earlier version, say), as NAME")
    args = ap.parse_args()
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    work = tempfile.mkdtemp(prefix="repro-vllm-fp-localhost-")
    records = args.records or os.path.join(work, "records")
    extra = ["-e", "repro_vllm_nvidia_smi_path=%s" % args.nvidia_smi] if args.nvidia_smi else []
    base = args.playbook_cmd.split() + ["-i", args.inventory] + extra
    plays = {"ping": base + [os.path.join(ROOT, "benchmarks", "ping.yml")],
             "gpu_facts": base + [os.path.join(ROOT, "benchmarks", "gpu_facts_only.yml")],
             "fingerprint": base + ["-e", "repro_vllm_records_root=%s" % records, "-e", "repro_vllm_case_id=bench",
                                    os.path.join(ROOT, "playbooks", "fingerprint.yml")]}
    for entry in args.also:
        name, _sep, path = entry.partition("=")
        plays[name] = base + ["-e", "repro_vllm_records_root=%s" % records, "-e", "repro_vllm_case_id=bench-%s" % name,
                              os.path.abspath(path)]
    if not args.no_collect_env:
        probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, timeout=120, check=False)
        if probe.returncode == 0:
            plays["collect_env"] = [sys.executable, "-m", "torch.utils.collect_env"]
    out = {"benchmark": "fingerprint_localhost", "python": sys.version.split()[0], "cpus": os.cpu_count(),
           "repeat": args.repeat, "runs_s": {k: [] for k in plays}}
    last = ""
    try:
        for name, argv in plays.items():  # warm-up: caches, bytecode, the driver's first call
            timed(argv, env, work)
        for _round in range(args.repeat):
            for name, argv in plays.items():
                wall, stdout = timed(argv, env, work)
                out["runs_s"][name].append(wall)
                if name == "fingerprint":
                    last = stdout
        med = {k: round(statistics.median(v), 2) for k, v in out["runs_s"].items()}
        out["median_s"] = med
        out["fingerprint_over_ping"] = round(med["fingerprint"] / med["ping"], 2)
        out["fingerprint_over_gpu_facts"] = round(med["fingerprint"] / med["gpu_facts"], 2)
        if "collect_env" in med:
            out["fingerprint_over_collect_env"] = round(med["fingerprint"] / med["collect_env"], 2)
        for entry in args.also:
            name = entry.partition("=")[0]
            out["%s_over_ping" % name] = round(med[name] / med["ping"], 2)
            out["%s_over_gpu_facts" % name] = round(med[name] / med["gpu_facts"], 2)
        out["last_fingerprint_tail"] = last.strip().splitlines()[-4:]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
