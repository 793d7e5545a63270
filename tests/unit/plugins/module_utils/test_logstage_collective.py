# -*- coding: utf-8 -*-
"""log_stage across ranks on the real collective checkpoint of a 2 x H200 host
(tests/fixtures/2026-11-29-collective-2xh200: torchrun all-reduce with NCCL_DEBUG=INFO, healthy and one
deliberate fault at a time). The expected answers and why are in that folder's expected.json and README.md.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.repro.vllm.plugins.module_utils._logstage import (
    ANSWER_STAGES, ERROR_CLASSES, classify_files, classify_text)

HERE = os.path.dirname(__file__)
COLL = os.path.normpath(os.path.join(HERE, "..", "..", "..", "fixtures", "2026-11-29-collective-2xh200"))
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
