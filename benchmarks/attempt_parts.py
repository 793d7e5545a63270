# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where an attempt's wall time goes: each attempt run of a case split by part, against its server's lifetime.

Reads what a play already recorded, nothing more: each attempt run's ``terminal.log`` (the record_log callback:
every task's start, to the second), ``hosts/<host>/memory.jsonl`` (the server's lifetime: first to last sample),
``hosts/<host>/collect_env.json`` (``duration_ms``) and the case's next run (the close of an attempt ends where the
next run's log begins). Parts: ``prepare`` (paths, leftovers, folders), ``start`` (the server to ready), ``request``
(the fixed request, checkpoints, further requests, the layer's observation), ``stop``, ``collect`` (the node's part to
the controller; ``collect_env`` inside it, once per play), ``close`` (classify, judge, freeze).

    python3 benchmarks/attempt_parts.py RECORDS_ROOT/CASE [--host NAME]

Prints one JSON object: per run the seconds of each part, the server's lifetime, the wall time from the attempt's
first task to the next run, the share of the wall time the server was not alive, and the medians over the runs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import sys

TASK = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d) TASK \[(?:[\w.]+ : )?(.*)\]$")


def part_of(name):
    head, _sep, rest = name.partition(" | ")
    head = head.strip().lower()
    if head in ("start", "request", "collect", "close"):
        return head
    rest = rest.lower()
    if rest.startswith("stop") or "no process of the server may be left" in rest:
        return "stop"
    if any(w in rest for w in ("request", "checkpoint", "observation", "gateway", "still alive", "further")):
        return "request"
    if rest.startswith("each node's part") or rest.startswith("stages, request"):
        return "collect"
    return "prepare"


def _ts(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()


def tasks(path):
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            m = TASK.match(line.rstrip("\n"))
            if m:
                out.append((_ts(m.group(1)), m.group(2)))
    return out


def first_ts(path):
    with open(path, errors="replace") as f:
        for line in f:
            try:
                return _ts(line[:19])
            except ValueError:
                continue
    return None


def lifetime(path):
    ts = []
    with open(path) as f:
        for line in f:
            if line.strip():
                ts.append(json.loads(line)["t"])
    return (ts[-1] - ts[0]) if len(ts) > 1 else None


def split(case_dir, host):
    runs = sorted(r for r in os.listdir(case_dir) if r.startswith("run-"))
    out = []
    for i, run in enumerate(runs):
        folder = os.path.join(case_dir, run)
        if not os.path.isfile(os.path.join(folder, "outcome.json")) or not os.path.isfile(
                os.path.join(folder, "terminal.log")):
            continue
        seq = tasks(os.path.join(folder, "terminal.log"))
        nxt = first_ts(os.path.join(case_dir, runs[i + 1], "terminal.log")) if i + 1 < len(runs) else None
        if not seq or nxt is None:
            continue
        parts = dict.fromkeys(("prepare", "start", "request", "stop", "collect", "close"), 0.0)
        for (t, name), (t2, _n) in zip(seq, seq[1:] + [(nxt, None)]):
            parts[part_of(name)] += t2 - t
        host_dir = os.path.join(folder, "hosts", host)
        ce = os.path.join(host_dir, "collect_env.json")
        if os.path.isfile(ce):
            with open(ce) as f:
                parts["collect_env"] = round((json.load(f).get("duration_ms") or 0) / 1000.0, 1)
        life = lifetime(os.path.join(host_dir, "memory.jsonl")) if os.path.isfile(
            os.path.join(host_dir, "memory.jsonl")) else None
        wall = nxt - seq[0][0]
        out.append({"run": run, "parts_s": parts, "wall_s": wall, "server_alive_s": round(life, 1) if life else None,
                    "server_not_alive_share": round(1 - life / wall, 2) if life and wall else None})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case_dir")
    ap.add_argument("--host", default=None, help="the host whose server is timed (default: the only one)")
    opts = ap.parse_args(argv)
    host = opts.host
    if host is None:
        for run in sorted(os.listdir(opts.case_dir)):
            hosts = os.path.join(opts.case_dir, run, "hosts")
            if run.startswith("run-") and os.path.isdir(hosts):
                host = sorted(os.listdir(hosts))[0]
                break
    rows = split(opts.case_dir, host)
    if not rows:
        sys.exit("no attempt run with terminal.log and a next run in %s" % opts.case_dir)
    med = {k: statistics.median(r["parts_s"][k] for r in rows) for k in rows[0]["parts_s"] if k != "collect_env"}
    print(json.dumps({"case": os.path.basename(opts.case_dir.rstrip("/")), "host": host, "runs": rows,
                      "median_parts_s": med, "median_wall_s": statistics.median(r["wall_s"] for r in rows)},
                     indent=1))


if __name__ == "__main__":
    main()
