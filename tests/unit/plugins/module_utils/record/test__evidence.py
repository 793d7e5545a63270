# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading frozen runs back (module_utils/record/_evidence.py) on real runs of tests/fixtures/frozen-runs."""
from __future__ import annotations

import os

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.record import _evidence as e

from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import (
    case, save)


def test_attempt_run_read_back(tmp_path):
    path = case(tmp_path, "cpu-ok", ["run-001", "run-002", "run-005"])
    runs = e.case_runs(path)
    purposes = [(r["run"], r["purpose"]) for r in runs]
    assert purposes == [("run-001", "fingerprint"), ("run-002", "minimal_startup"), ("run-005", "summary")]
    attempt = runs[1]
    assert e.is_attempt(attempt) and not e.is_attempt(runs[0])
    assert e.attempt_result(attempt) == ("none", None, True)
    view = e.host_view(attempt, "localhost")
    assert view["argv"][1] == "serve" and view["env_set_by_run"]["HF_HUB_OFFLINE"] == "1"
    assert view["driver"] == "580.159.04" and view["sources"]["driver"] == "run-002/changes.json"
    fp = e.host_view(runs[0], "localhost")
    assert fp["gpu_model"] == "NVIDIA H200" and fp["gpu_count"] == 1 and fp["foreign_processes"] == []
    assert fp["sources"]["driver"] == "run-001/hosts/localhost/fingerprint.json"
    assert e.host_view(runs[0], "nowhere")["present"] is False


def test_resolve_and_errors(tmp_path):
    path = case(tmp_path, "cpu-ok", ["run-002"])
    root = os.path.dirname(path)
    assert e.resolve_run("run-002", root, "cpu-ok") == os.path.join(path, "run-002")
    assert e.resolve_run("cpu-ok/run-002", root) == os.path.join(path, "run-002")
    with pytest.raises(e.EvidenceError, match="not found as a frozen run"):
        e.resolve_run("run-009", root, "cpu-ok")
    with pytest.raises(e.EvidenceError, match="no run given"):
        e.resolve_run("", root)
    with pytest.raises(e.EvidenceError, match="not a run folder"):
        e.read_run(os.path.join(path, "run-404"))
    with open(os.path.join(path, "run-002", "stages.json"), "w") as f:
        f.write("{broken")
    with pytest.raises(e.EvidenceError, match="damaged"):
        e.read_run(os.path.join(path, "run-002"))


def test_unexpanded_shell_values():
    assert e.unexpanded(["--port", "8000", "$(hostname)", "${HOME}/x", "$PORT", "`id`", "price$"]) == [
        "$(hostname)", "${HOME}/x", "$PORT", "`id`"]


def test_service_part_is_read(tmp_path):
    path = case(tmp_path, "cpu-ok", ["run-001"])
    save(os.path.join(path, "run-001", "hosts", "localhost", "service.json"), {"kind": "pid", "restart_count": 0})
    view = e.host_view(e.read_run(os.path.join(path, "run-001")), "localhost")
    assert view["service"]["kind"] == "pid" and view["sources"]["service"] == "run-001/hosts/localhost/service.json"
