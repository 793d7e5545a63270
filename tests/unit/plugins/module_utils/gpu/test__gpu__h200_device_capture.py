# -*- coding: utf-8 -*-
"""gpu_facts as it ran on the real H200 (tests/fixtures/2026-11-29-580.159.04-h200).

`module/gpu_facts*.json` is what gather() returned on that machine (driver 580.159.04, open kernel module, one
H200); the other files are the raw answers of every command it ran there. Replaying those answers here must
give the same facts, so the parsers are held to what real hardware printed, not to what we expect it to print.
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.gpu._gpu import gather

HERE = os.path.dirname(__file__)
CAP = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "fixtures", "2026-11-29-580.159.04-h200"))
BIN = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "fixtures", "bin"))


def _real(name):
    with open(os.path.join(CAP, "module", name)) as fh:
        return json.load(fh)


@pytest.fixture
def replayed(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_VLLM_REPLAY_DIR", CAP)
    proc = tmp_path / "proc" / "driver" / "nvidia"
    proc.mkdir(parents=True)
    shutil.copy(os.path.join(CAP, "proc_driver.txt"), str(proc / "version"))
    return gather({"nvidia_smi_path": os.path.join(BIN, "nvidia-smi-replay"),
                   "ldconfig_path": os.path.join(BIN, "ldconfig-replay"),
                   "proc_root": str(tmp_path / "proc"), "dev_root": str(tmp_path / "nodev"), "command_timeout": 10})


def test_real_result_describes_the_h200():
    real = _real("gpu_facts.json")
    assert real["present"] is True and real["gpu_count"] == 1
    assert real["driver"]["userspace_version"] == real["driver"]["kernel_module_version"] == "580.159.04"
    assert real["driver"]["kernel_module_flavor"] == "open" and real["driver"]["mismatch"] is False
    assert real["driver"]["cuda_driver_version"] == "13.0"
    gpu = real["gpus"][0]
    assert gpu["name"] == "NVIDIA H200" and gpu["compute_cap"] == "9.0" and gpu["memory_total_mib"] == 143771
    assert gpu["uuid"].startswith("GPU-") and real["gpu_query"]["fallback_used"] is False
    assert real["timed_out"] == [] and real["not_found"] == [] or "nvidia-smi" not in str(real["not_found"])


def test_replay_of_the_real_answers_gives_the_real_facts(replayed):
    real = _real("gpu_facts.json")
    for key in ("present", "gpu_count", "topology", "nvlink", "processes"):
        assert replayed[key] == real[key], key
    # the raw answers were taken a few seconds after gather() ran there: clocks, power and temperature moved,
    # the identity and configuration of the GPU did not
    stable = ("index", "uuid", "name", "serial", "pci_bus_id", "driver_version", "vbios_version", "memory_total_mib",
              "persistence_mode", "compute_mode", "compute_cap", "mig_mode", "ecc", "fabric", "platform", "c2c_mode",
              "addressing_mode")
    assert [{k: g[k] for k in stable} for g in replayed["gpus"]] == [{k: g[k] for k in stable} for g in real["gpus"]]
    for key in ("userspace_version", "kernel_module_version", "kernel_module_flavor", "cuda_driver_version", "mismatch"):
        assert replayed["driver"][key] == real["driver"][key], key
    assert replayed["gpu_query"]["fallback_used"] is False


def test_busy_h200_foreign_process_seen_and_own_pid_excluded():
    busy, own = _real("gpu_facts_busy.json"), _real("gpu_facts_busy_own.json")
    foreign = [p for p in busy["processes"] if not p["own"]]
    assert len(foreign) == 1 and foreign[0]["used_memory_mib"] > 10000
    assert busy["gpus"][0]["foreign_memory_mib"] == foreign[0]["used_memory_mib"]
    assert all(p["own"] for p in own["processes"]) and own["gpus"][0]["foreign_memory_mib"] == 0


def test_tiny_timeout_on_real_hardware_stops_after_first_nvidia_smi_call():
    t = _real("gpu_facts_tiny_timeout.json")
    assert t["present"] is True  # /proc/driver/nvidia says so even when nvidia-smi is too slow
    smi_calls = [c for c in t["commands"] if "nvidia-smi" in c["cmd"][0]]
    assert smi_calls[0]["status"] == "timed_out"
    assert [c["status"] for c in smi_calls[1:]] == ["skipped"] * (len(smi_calls) - 1) and len(smi_calls) > 1


def test_benchmark_on_the_h200_gpu_facts_far_cheaper_than_collect_env():
    bench = _real("bench.json")
    assert bench["gather"]["in_process"]["median_ms"] * 10 < bench["collect_env"]["median_ms"]
