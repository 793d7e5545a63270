# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run diff over real frozen runs: no change, one change, two changes, across cases and hosts."""
from __future__ import annotations

import os
import shutil

import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _diff
from ansible_collections.repro.vllm.plugins.module_utils.record._evidence import read_run
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import MASK

from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import (
    case, edit)

FAKE_HF = "hf_" + "FAKE" * 8


def _run(path, name):
    return read_run(os.path.join(path, name))


def test_same_attempt_twice_no_change(tmp_path):
    path = case(tmp_path, "cpu-ok", ["run-002", "run-004"])
    diff = _diff.run_diff(_run(path, "run-002"), _run(path, "run-004"))
    assert diff["hosts"] == {"localhost": []}
    assert diff["ambiguous"] is False and diff["variables"] == []
    assert diff["a"] == "cpu-ok/run-002" and diff["b"] == "cpu-ok/run-004"
    assert diff["summary"].startswith("no change")


def test_one_change_the_driver(tmp_path):
    """run-007 ran with nvidia-smi answering from the edited R570 capture: version and CUDA driver move together."""
    path = case(tmp_path, "cpu-ok", ["run-004", "run-007"])
    diff = _diff.run_diff(_run(path, "run-004"), _run(path, "run-007"))
    entries = {e["variable"]: e for e in diff["hosts"]["localhost"]}
    assert entries["driver"] == {"variable": "driver", "from": "580.159.04", "to": "570.172.08"}
    assert entries["cuda_driver"]["from"] == "13.0" and entries["cuda_driver"]["to"] == "12.8"
    assert diff["causes"] == ["driver"] and diff["ambiguous"] is False
    assert all(set(e) == {"variable", "from", "to"} for e in diff["hosts"]["localhost"])


def test_two_changes_across_cases_are_ambiguous(tmp_path):
    ok = case(tmp_path, "cpu-ok", ["run-007"])
    fail = case(tmp_path, "cpu-fail", ["run-002"])
    diff = _diff.run_diff(_run(ok, "run-007"), _run(fail, "run-002"))
    variables = diff["variables"]
    assert "command:--max-model-len" in variables and "driver" in variables
    entry = [e for e in diff["hosts"]["localhost"] if e["variable"] == "command:--max-model-len"][0]
    assert (entry["from"], entry["to"]) == ("512", "99999")
    assert diff["ambiguous"] is True and "CAUSAL AMBIGUITY" in diff["summary"]
    assert diff["a"] == "cpu-ok/run-007" and diff["b"] == "cpu-fail/run-002"


def test_environment_keys_redacted_and_request_fields(tmp_path):
    path = case(tmp_path, "cpu-ok", ["run-002", "run-004"])
    edit(os.path.join(path, "run-004", "hosts", "localhost", "command.json"),
         lambda d: (d["env_set_by_run"].update(HF_TOKEN=FAKE_HF, VLLM_CPU_KVCACHE_SPACE="2"),
                    d["env_set_by_run"].pop("DO_NOT_TRACK"), d["env"].pop("DO_NOT_TRACK")))
    edit(os.path.join(path, "run-004", "request.json"), lambda d: d["body"].update(max_tokens=64))
    diff = _diff.run_diff(_run(path, "run-002"), _run(path, "run-004"))
    entries = {e["variable"]: e for e in diff["hosts"]["localhost"]}
    assert entries["env:HF_TOKEN"] == {"variable": "env:HF_TOKEN", "from": None, "to": MASK}
    assert entries["env:DO_NOT_TRACK"]["to"] is None
    assert entries["env:VLLM_CPU_KVCACHE_SPACE"]["to"] == "2"
    assert entries["request:max_tokens"] == {"variable": "request:max_tokens", "from": 8, "to": 64}
    assert FAKE_HF not in repr(diff) and FAKE_HF not in _diff.diff_markdown(diff)
    assert diff["ambiguous"] is True


def test_fingerprints_of_two_hosts_paired_and_foreign_processes(tmp_path):
    """An isolated host against production: two cases, one host each, different names (the production host's
    folder renamed here to gpu-prod07), paired without a map."""
    prod = case(tmp_path, "busy")
    os.rename(os.path.join(prod, "run-001", "hosts", "localhost"), os.path.join(prod, "run-001", "hosts", "gpu-prod07"))
    lab = case(tmp_path, "slurm")
    a, b = _run(prod, "run-001"), _run(lab, "run-001")
    a["metadata"]["hosts"] = ["gpu-prod07"]
    diff = _diff.run_diff(a, b)
    assert list(diff["hosts"]) == ["gpu-prod07->localhost"]
    entries = {e["variable"]: e for e in diff["hosts"]["gpu-prod07->localhost"]}
    assert entries["foreign_processes"]["from"] == ["python3 on GPU-91ad0855-a280-e24b-1e44-5e7b819cac29"]
    assert entries["foreign_processes"]["to"] == []
    assert "gpu_map" in entries and "env:SLURM_JOB_ID" in entries
    with pytest.raises(_diff.DiffError):
        _diff.run_diff(a, b, host_map={"gpu-prod07": "gpu-lab01"})


def test_host_only_in_one_run(tmp_path):
    path = case(tmp_path, "cpu-ok", ["run-001", "run-003"])
    shutil.copytree(os.path.join(path, "run-003", "hosts", "localhost"), os.path.join(path, "run-003", "hosts", "n2"))
    diff = _diff.run_diff(_run(path, "run-001"), _run(path, "run-003"))
    assert diff["hosts"]["n2"] == [{"variable": "host", "from": "absent", "to": "present"}]


def test_tables(tmp_path):
    path = case(tmp_path, "cpu-ok", ["run-004", "run-007"])
    diff = _diff.run_diff(_run(path, "run-004"), _run(path, "run-007"))
    lines = _diff.diff_table_lines(diff)
    assert lines[0] == diff["summary"] and "localhost | driver | 580.159.04 -> 570.172.08" in lines
    md = _diff.diff_markdown(diff)
    assert "| driver | 580.159.04 | 570.172.08 |" in md and md.startswith("# Run diff: cpu-ok/run-004 -> cpu-ok/run-007")


def test_bad_input():
    with pytest.raises(_diff.DiffError):
        _diff.run_diff({}, {})


def test_further_requests_of_a_run_are_compared():
    body = {"model": "tiny", "messages": [{"role": "user", "content": "json"}]}
    before = {"route": "/v1/chat/completions", "body": body, "extra": [{"label": "structured_output", "body": body}]}
    assert _diff.request_changes(before, dict(before)) == []
    after = dict(before, extra=[{"label": "structured_output", "body": dict(body, max_tokens=9)}])
    assert [k for k, _b, _a in _diff.request_changes(before, after)] == ["extra"]
    assert [k for k, _b, _a in _diff.request_changes({"route": "/v1/completions"}, {"route": "/v1/completions"})] == []
