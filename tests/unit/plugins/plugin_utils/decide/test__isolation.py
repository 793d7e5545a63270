# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The isolation decision, one condition at a time, from real frozen runs."""
from __future__ import annotations

import os

import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _isolation
from ansible_collections.repro.vllm.plugins.module_utils.record._evidence import case_runs

from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import (
    CONTAINERS, case, container_facts, load, save)

SHAPE = {"condition", "host", "evidence"}


def _decide(path, **kw):
    return _isolation.decide(case_runs(path), **kw)


def _conditions(decision):
    return [(r["condition"], r["host"]) for r in decision["reasons"]]


def test_stay_on_repeated_identical_runs(tmp_path):
    decision = _decide(case(tmp_path, "cpu-ok", ["run-001", "run-002", "run-003", "run-004", "run-005"]))
    assert decision["decision"] == "stay" and decision["reasons"] == []
    assert "cpu-ok/run-005" not in decision["runs"]  # the summary run holds decisions, not evidence


def test_driver_changed(tmp_path):
    decision = _decide(case(tmp_path, "cpu-ok", ["run-003", "run-004", "run-006", "run-007"]))
    assert decision["decision"] == "move"
    assert _conditions(decision) == [("driver_changed", "localhost")]
    reason = decision["reasons"][0]
    assert set(reason) == SHAPE
    assert "580.159.04 -> 570.172.08" in reason["evidence"]
    assert "run-004/changes.json" in reason["evidence"] and "run-006/hosts/localhost/fingerprint.json" in reason["evidence"]


def test_gpu_visibility_foreign_process(tmp_path):
    decision = _decide(case(tmp_path, "busy"))
    assert _conditions(decision) == [("gpu_visibility_changed", "localhost")]
    assert "pid 420 python3" in decision["reasons"][0]["evidence"]
    assert "run-001/hosts/localhost/fingerprint.json" in decision["reasons"][0]["evidence"]


def test_gpu_visibility_device_map_changed(tmp_path):
    """run-001 of fp-h200 replays tests/fixtures/h200-1gpu, run-002 (an audit) the edited R570 copy of the
    2026-11-29 H200: another GPU (UUID) and another driver."""
    decision = _decide(case(tmp_path, "fp-h200"))
    assert _conditions(decision) == [("driver_changed", "localhost"), ("gpu_visibility_changed", "localhost")]
    assert "device map" in decision["reasons"][1]["evidence"]


def test_scheduler_env(tmp_path):
    decision = _decide(case(tmp_path, "slurm"))
    assert _conditions(decision) == [("scheduler_env", "localhost")]
    evidence = decision["reasons"][0]["evidence"]
    assert "SLURM_JOB_ID" in evidence and "CUDA_VISIBLE_DEVICES" in evidence
    assert "run-001/hosts/localhost/env.json" in evidence
    assert _isolation.scheduler_variables({"CUDA_VISIBLE_DEVICES": "0"}) == []  # alone, the user may have set it
    # the lent H200's environment (2026-12-04; its frozen isolation.json named PMIX_MCA_gds and NVIDIA_VISIBLE_DEVICES
    # as scheduler-injected): MPI libraries' configuration the image sets, no scheduler
    image_defaults = {"PMIX_MCA_gds": "hash", "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
                      "OMPI_MCA_plm": "isolated", "NVIDIA_VISIBLE_DEVICES": "0"}
    assert _isolation.scheduler_variables(image_defaults) == []
    launched = dict(image_defaults, PMIX_RANK="0", PMIX_NAMESPACE="slurm.pmix.42.0")
    assert _isolation.scheduler_variables(launched) == ["PMIX_NAMESPACE", "PMIX_RANK", "NVIDIA_VISIBLE_DEVICES"]


def test_first_error_changed_without_a_recorded_change(tmp_path):
    """run-007 passed; run-011, same command, request and driver, failed: another process held the port."""
    decision = _decide(case(tmp_path, "cpu-ok", ["run-006", "run-007", "run-010", "run-011"]))
    assert _conditions(decision) == [("first_error_changed", "localhost")]
    evidence = decision["reasons"][0]["evidence"]
    assert "run-007" in evidence and "run-011" in evidence and "port_in_use" in evidence


def test_a_recorded_change_is_not_first_error_changed(tmp_path):
    decision = _decide(case(tmp_path, "cpu-fail"))
    assert decision["decision"] == "stay"  # the same failure twice


def test_image_rebuilt(tmp_path):
    """Two fingerprints of the same reference. The second's facts come from podman's real capture of ANOTHER image
    (tinypy) mapped to the tiny image's tag here: the tag now names a rebuilt image."""
    path = case(tmp_path, "cpu-ok", ["run-001", "run-003"])
    ref = "localhost/repro-vllm-tiny:0.1"
    save(os.path.join(path, "run-001", "hosts", "localhost", "container.json"), container_facts(tmp_path, ref))
    moved = load(os.path.join(CONTAINERS, "podman-4.3.1", "replay.json"))
    for entry in moved:
        if entry["suffix"][-1] == ref:
            entry["capture"] = os.path.join(os.path.abspath(CONTAINERS), "podman-4.3.1", "image_inspect_tinypy")
    mapping = os.path.join(str(tmp_path), "moved.json")
    save(mapping, moved)
    save(os.path.join(path, "run-003", "hosts", "localhost", "container.json"),
         container_facts(tmp_path, ref, mapping=mapping))
    decision = _decide(path)
    assert _conditions(decision) == [("image_rebuilt", "localhost")]
    assert "localhost/repro-vllm-tiny:0.1" in decision["reasons"][0]["evidence"]


def test_restarts_from_the_journal(tmp_path):
    """A journal of a vLLM unit with systemd's restart line, composed here from systemd's message
    ("Scheduled restart job, restart counter is at %u.") - no machine here runs systemd."""
    path = case(tmp_path, "cpu-ok", ["run-001"])
    logs = os.path.join(path, "run-001", "hosts", "localhost", "logs")
    os.makedirs(logs)
    with open(os.path.join(logs, "journal.log"), "w") as f:
        f.write("Dec 01 03:12:09 gpu-a01 systemd[1]: vllm.service: Main process exited, code=exited, status=1/FAILURE\n"
                "Dec 01 03:12:19 gpu-a01 systemd[1]: vllm.service: Scheduled restart job, restart counter is at 3.\n")
    decision = _decide(path)
    assert _conditions(decision) == [("restarts", "localhost")]
    assert "run-001/hosts/localhost/logs/journal.log" in decision["reasons"][0]["evidence"]


def test_restarts_from_the_frozen_service(tmp_path):
    path = case(tmp_path, "cpu-ok", ["run-001"])
    save(os.path.join(path, "run-001", "hosts", "localhost", "service.json"),
         {"kind": "pid", "restart_count": 2, "exit_codes": [1, 1]})
    assert _conditions(_decide(path)) == [("restarts", "localhost")]


def test_must_keep_serving(tmp_path):
    decision = _decide(case(tmp_path, "cpu-ok", ["run-001", "run-002"]), must_keep_serving=True)
    assert decision["decision"] == "move" and _conditions(decision) == [("must_keep_serving", None)]


def test_vocabulary_and_lines(tmp_path):
    decision = _decide(case(tmp_path, "busy"), must_keep_serving=True)
    assert all(r["condition"] in _isolation.CONDITIONS for r in decision["reasons"])
    lines = _isolation.decision_lines(decision)
    assert lines[0] == "isolation: MOVE (2 reason(s))" and lines[2].startswith("must_keep_serving | job |")


def test_bad_input():
    with pytest.raises(_isolation.IsolationError):
        _isolation.decide(None)
