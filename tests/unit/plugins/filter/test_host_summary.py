# -*- coding: utf-8 -*-
"""host_summary / host_summary_line on the shape gpu_facts returns (real H200 values)."""
from __future__ import annotations

from ansible_collections.repro.vllm.plugins.filter.host_summary import host_summary, host_summary_line

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
