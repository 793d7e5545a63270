#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time gpu_facts' gathering against ``python -m torch.utils.collect_env`` on the same host; print JSON.

gather() is timed twice: N calls in this process (the cost of the commands and parsing) and N fresh
``python -c`` processes (comparable with collect_env, which is a fresh process that imports torch). Both
report median, p90, min, max in milliseconds; ``ratio`` is collect_env's median over each.

Needs neither Ansible, nor a GPU, nor torch: without a GPU gather() still runs (and says present=false);
without torch collect_env is reported under ``not_run`` with the reason. So CI can smoke it:

    python benchmarks/gpu_facts_bench.py --runs 3 --collect-env-runs 1

Options for gather() (--nvidia-smi-path, --command-timeout, --gather) let it run against the replay stub too.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GATHER_MODULE = "ansible_collections.repro.vllm.plugins.module_utils.gpu._gpu"


def import_gather():
    """gather() and the sys.path entry that makes the collection importable (a temporary
    ansible_collections/repro/vllm symlink to this checkout when it is not already importable)."""
    try:
        mod = __import__(GATHER_MODULE, fromlist=["gather"])
    except ImportError:
        tmp = tempfile.mkdtemp(prefix="repro-vllm-bench-")
        os.makedirs(os.path.join(tmp, "ansible_collections", "repro"))
        os.symlink(ROOT, os.path.join(tmp, "ansible_collections", "repro", "vllm"))
        sys.path.insert(0, tmp)
        for name in [m for m in sys.modules if m == "ansible_collections" or m.startswith("ansible_collections.")]:
            del sys.modules[name]
        mod = __import__(GATHER_MODULE, fromlist=["gather"])
    here = os.path.abspath(mod.__file__)  # the folder holding ansible_collections/, at any depth of the file
    path_entry = here[:here.rindex(os.sep + "ansible_collections" + os.sep)]
    return mod.gather, path_entry


def stats(samples_ms):
    if not samples_ms:
        return {"runs": 0, "median_ms": None, "p90_ms": None, "min_ms": None, "max_ms": None}
    s = sorted(samples_ms)
    n = len(s)
    median = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0
    p90 = s[max(0, int(math.ceil(0.9 * n)) - 1)]  # nearest rank
    return {"runs": n, "median_ms": round(median, 1), "p90_ms": round(p90, 1), "min_ms": round(s[0], 1),
            "max_ms": round(s[-1], 1)}


def run_timed(argv, env=None, timeout=600):
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=timeout,
                              check=False)
        rc, out = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as exc:
        rc, out = None, exc.output or b""
    except OSError as exc:
        rc, out = 127, str(exc).encode()
    return rc, (time.monotonic() - start) * 1000.0, out.decode("utf-8", errors="replace")


def bench_gather(gather, path_entry, opts, runs, workers=None):
    """``workers`` None: gather()'s default; 0: its commands one after another (the way before issue 22)."""
    kwargs = {} if workers is None else {"workers": workers}
    in_proc, last = [], None
    for _run in range(runs):
        start = time.monotonic()
        last = gather(dict(opts), **kwargs)
        in_proc.append((time.monotonic() - start) * 1000.0)
    code = ("import json, sys; from %s import gather; f = gather(json.loads(sys.argv[1]), **json.loads(sys.argv[2]));"
            " print(f['present'])" % GATHER_MODULE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([path_entry] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    fresh, failures = [], []
    for _run in range(runs):
        rc, ms, out = run_timed([sys.executable, "-c", code, json.dumps(opts), json.dumps(kwargs)], env=env)
        if rc == 0:
            fresh.append(ms)
        else:
            failures.append({"rc": rc, "output_tail": out[-2000:]})
    summary = {
        "in_process": stats(in_proc),
        "fresh_process": stats(fresh),
        "fresh_process_failures": failures[:3],
        "present": last["present"] if last else None,
        "reason": last["reason"] if last else None,
        "gpu_count": last["gpu_count"] if last else None,
        "gpu_names": [g["name"] for g in last["gpus"]] if last else [],
        "driver": last["driver"]["kernel_module_version"] or last["driver"]["userspace_version"] if last else None,
        "timed_out": last["timed_out"] if last else [],
        "last_run_commands": [{"cmd": " ".join([os.path.basename(c["cmd"][0])] + c["cmd"][1:])[:120],
                               "status": c["status"], "duration_ms": c["duration_ms"]}
                              for c in (last["commands"] if last else [])],
    }
    return summary


def bench_collect_env(python, runs, timeout):
    """(summary, reason it did not run or None)."""
    if runs <= 0:
        return None, "not requested (--collect-env-runs 0)"
    rc, _ms, out = run_timed([python, "-c", "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 3)"],
                             timeout=60)
    if rc != 0:
        return None, "torch is not importable by %s (rc %s%s)" % (python, rc, ": " + out.strip()[-300:] if out.strip() else "")
    samples, failures = [], []
    for _run in range(runs):
        rc, ms, out = run_timed([python, "-m", "torch.utils.collect_env"], timeout=timeout)
        if rc == 0:
            samples.append(ms)
        else:
            failures.append({"rc": rc, "output_tail": out[-2000:]})
    if not samples:
        return {"failures": failures[:3]}, "python -m torch.utils.collect_env failed every time"
    return dict(stats(samples), python=python, failures=failures[:3]), None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--runs", type=int, default=10, help="gather() runs, in process and in fresh processes (10)")
    ap.add_argument("--collect-env-runs", type=int, default=3, help="collect_env runs, about 5 s each (3)")
    ap.add_argument("--collect-env-timeout", type=float, default=300)
    ap.add_argument("--python", default=sys.executable, help="interpreter that has torch (this one)")
    ap.add_argument("--nvidia-smi-path")
    ap.add_argument("--command-timeout", type=float, default=5.0)
    ap.add_argument("--gather", default="all", help="comma-separated sections (all)")
    ap.add_argument("--workers", type=int, help="threads for the commands that run at once after the probe "
                    "(gather()'s default); 0 runs them one after another, as before issue 22")
    ap.add_argument("--out", help="also write the JSON to this file")
    args = ap.parse_args(argv)

    gather, path_entry = import_gather()
    opts = {"command_timeout": args.command_timeout, "gather": args.gather.split(","),
            "nvidia_smi_path": args.nvidia_smi_path}
    result = {"host": socket.gethostname(), "python": platform.python_version(), "platform": platform.platform(),
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "options": opts, "workers": args.workers,
              "not_run": []}
    result["gather"] = bench_gather(gather, path_entry, opts, args.runs, args.workers)
    env_summary, why = bench_collect_env(args.python, args.collect_env_runs, args.collect_env_timeout)
    result["collect_env"] = env_summary
    if why:
        result["not_run"].append({"what": "python -m torch.utils.collect_env", "why": why})
    ratio = {}
    ce = (env_summary or {}).get("median_ms")
    for key in ("fresh_process", "in_process"):
        g = result["gather"][key]["median_ms"]
        ratio["collect_env_over_gather_" + key] = round(ce / g, 1) if ce and g else None
    result["ratio"] = ratio
    text = json.dumps(result, indent=2, sort_keys=True)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
