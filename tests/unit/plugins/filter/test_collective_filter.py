# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collective filters on the real device run's per-node results (controller side: ansible-test runs filter
tests where ansible itself can be imported, unlike module_utils tests)."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter import collective_verdict as F

FIX = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))
COLL = os.path.join(FIX, "2026-12-01-580.159.04-h200-driver-and-collective", "collective")


def _result(case):
    with open(os.path.join(COLL, case, "result.json")) as fh:
        return json.load(fh)


def test_filters():
    part = _result("nccl_2ranks_one_gpu")
    paths = F.collective_log_paths(["gpu-a01", part], "/rec/run-004")
    names = F.collective_log_paths(["gpu-a01", part], None)
    assert paths[0] == "/rec/run-004/hosts/gpu-a01/logs/torchrun.log" and len(paths) == len(part["logs"])
    assert names == ["gpu-a01/torchrun", "gpu-a01/rank0", "gpu-a01/rank0", "gpu-a01/rank1", "gpu-a01/rank1"]
    assert F.collective_verdict({"gpu-a01": _result("nccl_1rank")}, {"stage": "none"})["ok"] is True
    with pytest.raises(AnsibleFilterError):
        F.collective_verdict({}, None)
    with pytest.raises(AnsibleFilterError):
        F.collective_log_paths("gpu-a01", None)


def test_the_logs_of_every_node_are_those_of_each_node_in_order():
    parts = [_result("nccl_2ranks_one_gpu"), _result("gloo_2ranks_cpu")]
    logs = F.collective_logs(["gpu-a01", "gpu-a02"], parts, "/rec/run-004")
    assert logs["paths"] == (F.collective_log_paths(["gpu-a01", parts[0]], "/rec/run-004")
                             + F.collective_log_paths(["gpu-a02", parts[1]], "/rec/run-004"))
    assert logs["labels"] == (F.collective_log_paths(["gpu-a01", parts[0]], None)
                              + F.collective_log_paths(["gpu-a02", parts[1]], None))
    with pytest.raises(AnsibleFilterError, match="one collective_run result per node"):
        F.collective_logs(["gpu-a01", "gpu-a02"], parts[:1], "/rec/run-004")


def test_the_close_is_the_verdict_with_the_jobs_shape_and_the_classification():
    stages = {"stage": "none", "first_error": None, "changed": False, "invocation": {"module_args": {}}}
    closing = F.collective_close(["gpu-a01"], [_result("nccl_1rank")], stages, run="run-004", nproc_per_node=1,
                                 backend="nccl", master="gpu-a01:29500", timeout_s=120.0)
    verdict = F.collective_verdict({"gpu-a01": _result("nccl_1rank")}, stages)
    assert closing["verdict"] == verdict and closing["status"] == "ok"
    assert closing["parts"] == [
        {"part": "collective.json", "json": dict(verdict, run="run-004", nodes=["gpu-a01"], nproc_per_node=1,
                                                 backend="nccl", master="gpu-a01:29500", timeout_s=120.0)},
        {"part": "stages.json", "json": {"stage": "none", "first_error": None}}]
    failed = F.collective_close(["gpu-a01"], [_result("nccl_bad_socket_ifname")], {"stage": "none"})
    assert failed["status"] == "failed" and failed["verdict"]["ok"] is False
