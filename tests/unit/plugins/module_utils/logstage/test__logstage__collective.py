# -*- coding: utf-8 -*-
"""log_stage across ranks on the real collective checkpoint of a 2 x H200 host
(tests/fixtures/2026-11-29-collective-2xh200: torchrun all-reduce with NCCL_DEBUG=INFO, healthy and one
deliberate fault at a time). The expected answers and why are in that folder's expected.json and README.md.
And across two hosts (tests/fixtures/2026-12-01-gloo-wrong-ifname-2nodes: gloo, one host on a wrong interface).
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.gpu._collective import classify_inputs
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import (
    ANSWER_STAGES, ERROR_CLASSES, classify_files, classify_text)

HERE = os.path.dirname(__file__)
COLL = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "fixtures", "2026-11-29-collective-2xh200"))
with open(os.path.join(COLL, "expected.json")) as _fh:
    EXPECTED = json.load(_fh)
CASES = sorted(EXPECTED["cases"])
PATHS, NODES = EXPECTED["paths"], EXPECTED["nodes"]


def _paths(case, names=None):
    return [os.path.join(COLL, case, n) for n in (names or PATHS)]


def _classify(case):
    return classify_files(_paths(case), nodes=NODES)


def test_fixture_bytes_are_the_captured_ones():
    with open(os.path.join(COLL, "SHA256SUMS")) as fh:
        sums = [line.split(None, 1) for line in fh.read().splitlines() if line.strip()]
    assert len(sums) == len(CASES) * (3 + len(PATHS) - 1) + 2
    for digest, name in sums:
        with open(os.path.join(COLL, name.strip()), "rb") as fh:
            assert hashlib.sha256(fh.read()).hexdigest() == digest, name


def test_every_case_is_captured_and_expected():
    on_disk = sorted(d for d in os.listdir(COLL) if os.path.isdir(os.path.join(COLL, d)))
    assert on_disk == CASES == ["bad_socket_ifname", "cvd_fewer_than_ranks", "healthy",
                                "rank1_exits_others_time_out", "rank1_fails_before_init"]
    for case in CASES:
        with open(os.path.join(COLL, case, "meta.txt")) as fh:
            rc = int(fh.read().split()[0].split("=")[1])
        assert rc == EXPECTED["cases"][case]["rc"], case
        with open(os.path.join(COLL, case, "command.txt")) as fh:
            cmd = fh.read()
        assert "NCCL_DEBUG=INFO" in cmd and "--nproc-per-node=2" in cmd and "--tee 3" in cmd


@pytest.mark.parametrize("case", CASES)
def test_answer_across_ranks(case):
    exp = EXPECTED["cases"][case]
    ans = _classify(case)
    json.dumps(ans)
    assert ans["stage"] == exp["stage"] and ans["stage"] in ANSWER_STAGES, ans["summary"]
    assert ans["error_class"] == exp["error_class"], ans["summary"]
    assert ans["error_class"] is None or ans["error_class"] in ERROR_CLASSES
    assert ans["stages_reached"] == exp["stages_reached"] and ans["last_stage"] == exp["last_stage"]
    for text in exp["summary_contains"]:
        assert text in ans["summary"], ans["summary"]
    fe, efe = ans["first_error"], exp["first_error"]
    if efe is None:
        assert fe is None, fe
    else:
        assert efe["line"] in fe["line"], fe
        assert (fe["node"], os.path.basename(fe["file"]), fe["lineno"]) == (efe["node"], efe["file"], efe["lineno"])
        assert (fe["process"], fe["kind"], fe["timestamp"]) == (efe["process"], efe["kind"], efe["timestamp"])
        assert (fe["stage"], fe["error_class"]) == (exp["stage"], exp["error_class"])
    # every expected consequence is listed, and the root cause is not among them
    if not exp["consequences"]:
        assert ans["consequences"] == []
    for want in exp["consequences"]:
        assert any(c["node"] == want["node"] and want["line"] in c["line"] for c in ans["consequences"]), want
    if fe is not None:
        assert not any(c["file"] == fe["file"] and c["lineno"] == fe["lineno"] for c in ans["consequences"])
    assert [t["node"] for t in ans["timeline"]] == NODES


@pytest.mark.parametrize("case", CASES)
def test_torchrun_log_alone_gives_the_same_reading(case):
    exp = EXPECTED["cases"][case]["torchrun_log_alone"]
    ans = classify_files(_paths(case, ["torchrun.log"]))
    assert (ans["stage"], ans["error_class"]) == (exp["stage"], exp["error_class"]), ans["summary"]
    if "line" in exp:
        fe = ans["first_error"]
        assert exp["line"] in fe["line"] and fe["lineno"] == exp["lineno"] and fe["process"] == exp["process"], fe


@pytest.mark.parametrize("case", CASES)
def test_rank_logs_without_torchrun_log(case):
    exp = EXPECTED["cases"][case]["ranks_alone"]
    ans = classify_files(_paths(case, PATHS[:-1]), nodes=NODES[:-1])
    assert (ans["stage"], ans["error_class"]) == (exp["stage"], exp["error_class"]), ans["summary"]


def test_tee_prefix_makes_a_stream_per_worker():
    # torchrun.log of cvd_fewer_than_ranks interleaves rank 1's traceback with rank 0's NCCL lines; read through
    # the "[default1]:" prefix, the traceback is whole and its error is rank 1's, not an unprefixed raw line
    ans = classify_files(_paths("cvd_fewer_than_ranks", ["torchrun.log"]))
    fe = ans["first_error"]
    assert fe["process"] == "default1" and fe["line"] == "torch.AcceleratorError: CUDA error: invalid device ordinal"
    assert fe["context"][0] == "Traceback (most recent call last):"
    assert "GPU device may be out of range, do you have enough GPUs?" in fe["context"]
    # and the NCCL lines behind "[default0]:" count as progress of that worker
    assert ans["timeline"][0]["stage_reached"] == "distributed_init"


def test_rank_prefix_is_not_taken_for_a_tee_prefix():
    with open(os.path.join(COLL, "bad_socket_ifname", "rank0.stderr.log"), "rb") as fh:
        data = fh.read()
    ans = classify_text(data, name="rank0.stderr.log")
    assert ans["first_error"]["process"] == "rank0" and "DistBackendError" in ans["first_error"]["line"]


def test_external_stop_is_not_a_root_cause():
    ans = _classify("rank1_exits_others_time_out")
    kinds = set(c["kind"] for c in ans["consequences"])
    assert kinds == {"consequence"} and ans["first_error"] is None
    # the rank that stayed: NCCL init started and never completed
    rank0 = [t for t in ans["timeline"] if t["node"] == "rank0" and t["lines"]][0]
    assert rank0["stage_reached"] == "distributed_init" and rank0["first_error"] is None


def test_run_ended_only_when_every_communicator_was_destroyed():
    healthy = os.path.join(COLL, "healthy", "rank0.stdout.log")
    hung = os.path.join(COLL, "rank1_exits_others_time_out", "rank0.stdout.log")
    ans = classify_files([healthy, hung], nodes=["a", "b"])
    assert ans["stage"] == "none" and "destroyed again" not in ans["summary"]
    assert ans["summary"] == "no failure found; stuck in distributed_init; NCCL communicator init started and never completed on b"
    # the healthy log cut right after "Init COMPLETE": set up but not torn down, so nothing is said about NCCL
    with open(healthy, "rb") as fh:
        data = fh.read()
    cut = data[:data.index(b"- Init COMPLETE\n") + len(b"- Init COMPLETE\n")]
    assert classify_text(cut, name="cut")["summary"] == "no failure found; stuck in distributed_init"


def _run_module(tmp_path, **args):
    from ansible_collections.repro.vllm.plugins.modules import log_stage
    module = log_stage.__file__.replace(".pyc", ".py")
    coll_parent = os.path.abspath(os.path.join(os.path.dirname(module), *([os.pardir] * 5)))
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([coll_parent] + [p for p in sys.path if p]))
    proc = subprocess.run([sys.executable, module, str(args_file)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("case", ["cvd_fewer_than_ranks", "rank1_exits_others_time_out"])
def test_module_gives_the_same_answer(tmp_path, case):
    res = _run_module(tmp_path, paths=_paths(case), nodes=NODES)
    assert res["changed"] is False and not res.get("failed")
    got = dict((k, v) for k, v in res.items() if k not in ("changed", "invocation", "failed"))
    assert got == _classify(case)


# --- two hosts, gloo, node02 given a GLOO_SOCKET_IFNAME that does not exist (tests/system/test_collective.py) ---
GLOO = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "fixtures", "2026-12-01-gloo-wrong-ifname-2nodes"))


def _gloo_inputs(only=None):
    """The logs as the collective role gives them: each node's `logs` list of its collective_run result."""
    paths, nodes = [], []
    for host in ("node01", "node02"):
        with open(os.path.join(GLOO, host, "collective.json")) as fh:
            logs = json.load(fh)["logs"]
        if only == "ranks":
            logs = [n for n in logs if n.startswith("rank")]
        elif only == "torchrun":
            logs = [n for n in logs if not n.startswith("rank")]
        p, n = classify_inputs(os.path.join(GLOO, host), logs, host)
        paths += p
        nodes += n
    return paths, nodes


def test_gloo_fixture_bytes_are_the_captured_ones():
    with open(os.path.join(GLOO, "SHA256SUMS")) as fh:
        sums = [line.split(None, 1) for line in fh.read().splitlines() if line.strip()]
    assert len(sums) == 8
    for digest, name in sums:
        with open(os.path.join(GLOO, name.strip()), "rb") as fh:
            assert hashlib.sha256(fh.read()).hexdigest() == digest, name


def test_wrong_interface_names_the_node_that_failed_at_once_not_the_one_that_timed_out_later():
    paths, nodes = _gloo_inputs()
    assert nodes[0] == "node01/torchrun"  # the role's order: torchrun.log first, then the rank files
    ans = classify_files(paths, nodes=nodes)
    fe = ans["first_error"]
    assert (ans["stage"], ans["error_class"]) == ("distributed_init", "nccl_error"), ans["summary"]
    assert fe["node"] == "node02/rank1" and fe["kind"] == "failure" and fe["timestamp"] is None, fe
    assert "Unable to find address for: doesnotexist0" in fe["line"] and "GLOO_SOCKET_IFNAME" in fe["hint"]
    assert os.path.basename(fe["file"]) == "rank1.stderr.log"
    # its time: the first timestamp after gloo's line in node02's torchrun.log, an upper bound, said as such
    assert ans["order_uncertain"] and "first timestamp after it" in ans["order_uncertain_why"]
    # node01's store timeout, 50 s later, is its victim and listed after it
    victims = [c for c in ans["consequences"] if "DistStoreError: wait timeout" in c["line"]]
    assert victims and {c["node"] for c in victims} == {"node01/rank0", "node01/torchrun"}
    assert all(c["kind"] == "victim" and c["error_class"] == "timeout" for c in victims)


def test_wrong_interface_from_either_kind_of_file_alone():
    # torchrun.log alone: gloo's line is bounded by torchrun's own `E1201 19:01:54` line, before node01's 19:02:43
    ans = classify_files(*_gloo_inputs("torchrun"))
    assert ans["first_error"]["node"] == "node02/torchrun" and ans["error_class"] == "nccl_error", ans["summary"]
    # the rank files alone carry no time on node02: the victim tier still puts node01's store timeout behind it
    ans = classify_files(*_gloo_inputs("ranks"))
    assert ans["first_error"]["node"] == "node02/rank1" and ans["error_class"] == "nccl_error", ans["summary"]
    # node01's logs alone: its store timeout stands in, as what it is (a victim)
    paths, nodes = _gloo_inputs()
    ans = classify_files([p for p, n in zip(paths, nodes) if n.startswith("node01/")],
                         nodes=[n for n in nodes if n.startswith("node01/")])
    assert ans["first_error"]["kind"] == "victim" and ans["error_class"] == "timeout", ans["summary"]
    assert "look for the rank or node that failed first" in ans["first_error"]["hint"]


def test_the_same_line_on_another_host_lends_no_time():
    # the change this test makes: node02's rank file given once more, first, as a third host "node03" (no
    # timestamp in it): node02's torchrun copy must not lend it its time (it would win on file order), so node02
    # still comes first
    paths, nodes = _gloo_inputs()
    extra = os.path.join(GLOO, "node02", "rank1.stderr.log")
    ans = classify_files([extra] + paths, nodes=["node03/rank9"] + nodes)
    assert ans["first_error"]["node"] == "node02/rank1", ans["summary"]


BARRIER = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "fixtures",
                                        "2026-12-05-torchrun-exit-barrier-2nodes"))


@pytest.mark.parametrize("run", ["run2", "run6"])
def test_exit_barrier_after_successful_workers_is_teardown(run):
    # both ranks printed the right sum; node 1's agent then lost the store of node 0's agent in its exit barrier
    # (the flake of the CI's healthy Gloo run): the store client's warning, its C++ frames and the barrier's
    # DistNetworkError are set apart as after the stop, and the checkpoint passes
    files = [os.path.join(BARRIER, run, n, "torchrun.log") for n in ("node01", "node02")]
    ans = classify_files(files, nodes=["node01/torchrun", "node02/torchrun"])
    assert (ans["stage"], ans["error_class"], ans["first_error"]) == ("none", None, None)
    apart = [(e["node"], e["lineno"]) for e in ans["after_stop"]]
    assert ("node02/torchrun", 19) in apart
    assert any(node == "node02/torchrun" and 2 <= n < 19 for node, n in apart)  # the store client's warning block
    from ansible_collections.repro.vllm.plugins.module_utils.gpu._collective import judge
    ok = {"ok": True, "ranks": [0], "results": [{"ok": True}]}
    assert judge({"node01": ok, "node02": dict(ok, ranks=[1])}, ans)["ok"] is True


def test_the_same_store_error_without_the_barrier_record_is_still_a_failure():
    # the barrier's record is what makes the store's error teardown: the lines before it, read alone, are the
    # failure they always were (a prefix of the real capture: the file cut before line 19, nothing edited)
    with open(os.path.join(BARRIER, "run6", "node02", "torchrun.log")) as fh:
        head = "".join(fh.readlines()[:18])
    ans = classify_text(head)
    assert ans["stage"] == "distributed_init" and ans["after_stop"] == []
