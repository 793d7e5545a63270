# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What does VLLM_TRACE_FUNCTION=1 cost a real vLLM start? (issue 15 item 4; NOT part of the test suite)

Three plays of ``playbooks/reproduce.yml`` on the localhost inventory (the real CPU vLLM and the tiny model of
scripts/setup-vllm-cpu.sh), each only the minimal start and its fixed request (``repro_vllm_ladder_until=''``),
one case, one after the other:

1. ``debug``: the collection's one-run debug (``repro_vllm_debug=true``: VLLM_LOGGING_LEVEL=DEBUG,
   CUDA_LAUNCH_BLOCKING=1, NCCL_DEBUG=TRACE) on the minimal run;
2. ``debug+trace``: the same plus ``repro_vllm_debug_trace_function=true`` (VLLM_TRACE_FUNCTION=1): the only
   difference from 1 is that variable, so the ratio of the two times to ready is its cost;
3. ``plain``: no debug at all, to show that nothing of 1 and 2 was carried on.

Each run's ``command.json`` records the debug variables as a one-run change (``debug.on``); the script checks that
run 2 had VLLM_TRACE_FUNCTION=1, that run 3 has no debug variable, and prints one JSON object: time to ready (from
``outcome.json``) of each run, the ratio trace / debug, the size of the trace files vLLM wrote (under a TMPDIR of
the benchmark's own, removed at the end), and the runs' folders.

    . scripts/env.sh && flock /tmp/repro-heavy.lock python benchmarks/trace_function_cost.py [--keep DIR]

The traced start is many times slower: the ready timeout is raised to ``--ready-timeout`` (default 1800 s).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
INVENTORY = os.path.join(REPO, "inventories", "localhost")
CASE = "trace-function-cost"
SERVER_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def dir_size(path):
    total, files = 0, 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(root, name))
                files += 1
            except OSError:
                pass
    return total, files


def play(work, port, tmpdir, extra, label, timeout_s):
    extra_vars = {"repro_vllm_records_root": os.path.join(work, "records"), "repro_vllm_case_id": CASE,
                  "repro_vllm_remote_root": os.path.join(work, "remote"), "repro_vllm_port": port,
                  "repro_vllm_fingerprint": False, "repro_vllm_ladder_until": "",
                  # the trace files go under this TMPDIR (the same in every play, so the command is the same)
                  "repro_vllm_server_env": dict(SERVER_ENV, TMPDIR=tmpdir)}
    extra_vars.update(extra)
    argv = ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "playbooks", "reproduce.yml"),
            "-e", json.dumps(extra_vars)]
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout_s, check=False)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-6000:] + proc.stderr[-2000:])
        raise SystemExit("the %s play failed (rc %d)" % (label, proc.returncode))
    return wall


def attempt_runs(work):
    base = os.path.join(work, "records", CASE)
    out = []
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name, "outcome.json")
        if name.startswith("run-") and os.path.exists(path):
            with open(path) as f:
                outcome = json.load(f)
            if outcome.get("purpose") == "minimal_startup":
                out.append((name, outcome))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--ready-timeout", type=int, default=1800, help="seconds the traced start may take")
    ap.add_argument("--keep", help="keep the records in this folder (default: a temporary one, removed)")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="repro-trace-bench-")
    os.makedirs(work, exist_ok=True)
    tmpdir = os.path.join(work, "tmp")
    os.makedirs(tmpdir, exist_ok=True)
    port = free_port()
    common = {"repro_vllm_ready_timeout": args.ready_timeout, "repro_vllm_record_only": False}
    plays = [
        ("debug", {"repro_vllm_debug": True, "repro_vllm_debug_step": "minimal"}),
        ("debug+trace", {"repro_vllm_debug": True, "repro_vllm_debug_step": "minimal",
                         "repro_vllm_debug_trace_function": True}),
        ("plain", {}),
    ]
    walls, trace_sizes = {}, {}
    try:
        for label, extra in plays:
            before, _n = dir_size(tmpdir)
            walls[label] = round(play(work, port, tmpdir, dict(common, **extra), label, args.ready_timeout + 900), 1)
            after, files = dir_size(tmpdir)
            trace_sizes[label] = {"bytes": after - before, "files_total": files}
        runs = attempt_runs(work)
        if len(runs) != 3:
            raise SystemExit("expected 3 minimal runs in %s, found %s" % (work, [r[0] for r in runs]))
        result = {"case": CASE, "runs": {}, "play_wall_s": walls, "trace_files": trace_sizes}
        for (label, _extra), (name, outcome) in zip(plays, runs):
            with open(os.path.join(work, "records", CASE, name, "hosts", "localhost", "command.json")) as f:
                cmd = json.load(f)
            env = cmd.get("env") or {}
            result["runs"][label] = {
                "run": name, "ok": outcome.get("ok"),
                "time_to_ready_s": (outcome.get("time_to_ready_s") or {}).get("localhost"),
                "debug_on": (cmd.get("debug") or {}).get("on"),
                "VLLM_TRACE_FUNCTION": env.get("VLLM_TRACE_FUNCTION"),
                "log_bytes": os.path.getsize(os.path.join(work, "records", CASE, name, "hosts", "localhost", "logs",
                                                          "server.log")),
            }
        r = result["runs"]
        checks = {
            "trace_only_in_its_run": r["debug+trace"]["VLLM_TRACE_FUNCTION"] == "1"
            and r["debug"]["VLLM_TRACE_FUNCTION"] is None and r["plain"]["VLLM_TRACE_FUNCTION"] is None,
            "recorded_as_one_run_change": r["debug"]["debug_on"] is True and r["debug+trace"]["debug_on"] is True
            and r["plain"]["debug_on"] is False,
            "all_ok": all(v["ok"] for v in r.values()),
        }
        result["checks"] = checks
        if r["debug"]["time_to_ready_s"] and r["debug+trace"]["time_to_ready_s"]:
            result["ratio_trace_over_debug"] = round(r["debug+trace"]["time_to_ready_s"] / r["debug"]["time_to_ready_s"], 2)
        if r["plain"]["time_to_ready_s"] and r["debug+trace"]["time_to_ready_s"]:
            result["ratio_trace_over_plain"] = round(r["debug+trace"]["time_to_ready_s"] / r["plain"]["time_to_ready_s"], 2)
        print(json.dumps(result, indent=2, sort_keys=True))
        return 0 if all(checks.values()) else 1
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)  # the trace files can be large
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
