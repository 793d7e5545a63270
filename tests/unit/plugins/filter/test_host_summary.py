# -*- coding: utf-8 -*-
"""plugin_utils/close/_fleet.py's host_summary / host_summary_line / fleet close on the shape gpu_facts returns (real
H200 values), and the closing table filter."""
from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.filter.fleet_hosts import closing_table
from ansible_collections.repro.vllm.plugins.plugin_utils.close._fleet import (
    fleet_close, fleet_summary, host_summary, host_summary_line)

H200 = {"present": True,
        "driver": {"userspace_version": "580.159.04", "kernel_module_version": "580.159.04",
                   "mismatch": False, "cuda_driver_version": "13.0"},
        "gpus": [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-x"}],
        "processes": [{"pid": 420, "process_name": "python3", "gpu_uuid": "GPU-x", "used_memory_mib": 10752, "own": False}],
        "timed_out": []}


def test_summary_of_busy_h200():
    s = host_summary({"host": "n1", "gpu": H200}, {})
    assert s["driver"] == "580.159.04" and s["gpu_count"] == 1 and s["gpu_names"] == ["NVIDIA H200"]
    assert s["foreign_processes"][0]["pid"] == 420
    line = host_summary_line(s)
    assert line.startswith("n1: ok | driver 580.159.04 | 1 x NVIDIA H200")
    assert "foreign procs 1 (pid 420 10752 MiB)" in line and line.endswith("timed out: none")


def test_summary_of_host_without_gpu_and_timeouts():
    s = host_summary({"host": "n2", "gpu": {"present": False, "reason": "nvidia-smi not found",
                                            "timed_out": [["nvidia-smi", "-L"]]}})
    line = host_summary_line(s)
    assert "no NVIDIA GPU (nvidia-smi not found)" in line and "timed out: nvidia-smi -L" in line


def test_lost_host_line():
    assert host_summary_line({"host": "n3", "status": "lost", "detail": "after step gathered"}) == "n3: LOST (after step gathered)"


def test_image_digest_prefers_repo_digest_then_config_then_pinned_reference():
    pinned = "vllm/vllm-openai@sha256:" + "c" * 64
    both = {"repo_digests": ["r@sha256:" + "a" * 64], "config_digests": ["sha256:" + "b" * 64]}
    assert host_summary({"host": "n", "gpu": H200}, both)["image_digest"] == "r@sha256:" + "a" * 64
    assert host_summary({"host": "n", "gpu": H200}, {"config_digests": ["sha256:" + "b" * 64]})["image_digest"] == "sha256:" + "b" * 64
    assert host_summary({"host": "n", "gpu": H200}, {"reference": pinned})["image_digest"] == "sha256:" + "c" * 64
    assert host_summary({"host": "n", "gpu": H200}, {})["image_digest"] is None


def test_fleet_summary_takes_each_hosts_registered_record_in_the_expected_order():
    ok = host_summary({"host": "n1", "gpu": H200}, {})
    records = [{"summary": ok, "changed": True},
               {"unreachable": True, "msg": "Failed to connect to the host via ssh: Connection refused"},
               {},
               {"failed": True, "msg": "timed out after 60 s"},
               {"unreachable": True, "msg": ""}]
    out = fleet_summary(["n1", "n2", "n3", "n4", "n5"], records)
    assert out[0] is ok
    assert out[1] == {"host": "n2", "status": "unreachable",
                      "detail": "Failed to connect to the host via ssh: Connection refused"}
    assert out[2]["status"] == "lost" and out[2]["host"] == "n3" and out[2]["detail"].endswith("(no message)")
    assert out[3]["status"] == "lost" and "timed out after 60 s" in out[3]["detail"]
    assert out[4]["detail"] == "unreachable"
    assert fleet_summary([], []) == []
    with pytest.raises(ValueError, match="2 hosts but 1 record"):
        fleet_summary(["a", "b"], [{}])


def test_fleet_close_says_which_hosts_are_not_complete():
    ok = host_summary({"host": "n1", "gpu": H200}, {})
    fleet = fleet_summary(["n1", "n2", "n3"], [{"summary": ok}, {"unreachable": True, "msg": "ssh: no route"}, {}])
    closing = fleet_close(fleet, "/r/case/run-004")
    assert closing["status"] == "failed" and closing["incomplete"] == ["n2", "n3"] and closing["complete"] == "1/3"
    assert closing["lines"][0] == host_summary_line(ok) and closing["lines"][1].startswith("n2: UNREACHABLE")


def test_fleet_close_of_a_complete_fleet():
    fleet = fleet_summary(["n1"], [{"summary": host_summary({"host": "n1", "gpu": H200}, {})}])
    assert fleet_close(fleet, "/r") == {"status": "ok", "incomplete": [], "lines": [host_summary_line(fleet[0])],
                                        "complete": "1/1"}
    assert fleet_close([], "/r")["status"] == "ok" and fleet_close([], "/r")["complete"] == "0/0"


def test_closing_table_of_the_attempts_and_the_fingerprint_run():
    """reproduce.yml's summary shows the console's table to a display without it (AWX's)."""
    attempts = [{"run": "run-002", "step": "minimal", "nodes": ["n1"], "ok": True, "refused": False, "stage": "none",
                 "path": "/r/c/run-002"},
                {"run": "run-003", "step": "prefix_caching", "nodes": ["n1"], "ok": False, "refused": False,
                 "stage": "startup", "error_class": "oom", "path": "/r/c/run-003"}]
    fleet = [{"host": "n1", "status": "ok"}, {"host": "n2", "status": "unreachable"}]
    lines = closing_table(attempts, fleet, {"violations": [{"host": None, "fact": "gpu_count"}]})
    rows = [ln.split() for ln in lines[2:]]
    assert [r[:4] for r in rows] == [["n1", "FAILED", "at", "prefix_caching"], ["n2", "UNREACHABLE", "-", "-"],
                                     ["job", "VIOLATION", "-", "gpu_count"]]
    assert rows[0][-1] == "/r/c/run-003" and closing_table([]) == []
