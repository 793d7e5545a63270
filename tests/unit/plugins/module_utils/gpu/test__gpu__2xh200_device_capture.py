# -*- coding: utf-8 -*-
"""gpu_facts as it ran on a real two-GPU H200 host (tests/fixtures/2026-11-29-580.159.04-2xh200).

`module/gpu_facts*.json` is what gather() returned there (driver 580.159.04, open kernel module, two H200 joined
by 18 NVLinks); the other files are the raw answers of every command it ran, taken a few seconds later in the
same session. The parsers are held to that real output: the per-GPU table, `topo -m` with the GPU-GPU NVLink
cell, `nvlink -s` with its per-link speeds, the fabric section of `-q`, and the foreign-process view.
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.gpu import _gpu
from ansible_collections.repro.vllm.plugins.module_utils.gpu._gpu import gather

HERE = os.path.dirname(__file__)
FIX = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "fixtures"))
CAP = os.path.join(FIX, "2026-11-29-580.159.04-2xh200")
COLL = os.path.join(FIX, "2026-11-29-collective-2xh200")
ONE = os.path.join(FIX, "2026-11-29-580.159.04-h200")
BIN = os.path.join(FIX, "bin")

# the identity and configuration of a GPU; clocks, power and temperature move between two reads
STABLE = ("index", "uuid", "name", "serial", "pci_bus_id", "driver_version", "vbios_version", "memory_total_mib",
          "persistence_mode", "compute_mode", "compute_cap", "mig_mode", "ecc", "fabric", "platform", "c2c_mode",
          "addressing_mode", "pcie")


def _real(name, folder=CAP):
    with open(os.path.join(folder, "module", name)) as fh:
        return json.load(fh)


def _raw(name, folder=CAP):
    with open(os.path.join(folder, name)) as fh:
        return fh.read()


def _meta_rc(name):
    return int(_raw(name + ".meta").split()[0].split("=")[1])


@pytest.fixture
def replayed(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_VLLM_REPLAY_DIR", CAP)
    proc = tmp_path / "proc" / "driver" / "nvidia"
    proc.mkdir(parents=True)
    shutil.copy(os.path.join(CAP, "proc_driver.txt"), str(proc / "version"))
    return gather({"nvidia_smi_path": os.path.join(BIN, "nvidia-smi-replay"),
                   "ldconfig_path": os.path.join(BIN, "ldconfig-replay"),
                   "proc_root": str(tmp_path / "proc"), "dev_root": str(tmp_path / "nodev"), "command_timeout": 10})


# ------------------------------------------------------------------------------------ the module's own result

def test_real_result_describes_two_h200():
    real = _real("gpu_facts.json")
    assert real["present"] is True and real["gpu_count"] == 2 and real["reason"] is None
    assert real["driver"]["userspace_version"] == real["driver"]["kernel_module_version"] == "580.159.04"
    assert real["driver"]["kernel_module_flavor"] == "open" and real["driver"]["mismatch"] is False
    assert real["driver"]["cuda_driver_version"] == "13.0"
    gpus = real["gpus"]
    assert [g["index"] for g in gpus] == [0, 1]
    assert all(g["name"] == "NVIDIA H200" and g["compute_cap"] == "9.0" and g["memory_total_mib"] == 143771
               for g in gpus)
    assert len(set(g["uuid"] for g in gpus)) == 2 and all(g["uuid"].startswith("GPU-") for g in gpus)
    assert [g["pci_bus_id"] for g in gpus] == ["00000000:00:06.0", "00000000:00:07.0"]
    assert real["gpu_query"]["fallback_used"] is False and real["gpu_query"]["errors"] == []
    assert real["timed_out"] == [] and real["not_found"] == [] and real["errors"] == []
    assert real["visible_devices"]["nvidia_visible_devices"] == "0,1"


def test_real_result_topology_nvlink_and_fabric():
    real = _real("gpu_facts.json")
    topo = real["topology"]
    assert topo["parsed"] is True and topo["devices"] == ["GPU0", "GPU1"]
    assert topo["matrix"] == {"GPU0": {"GPU0": "X", "GPU1": "NV18"}, "GPU1": {"GPU0": "NV18", "GPU1": "X"}}
    assert real["nvlink"]["status"] == "ok" and real["nvlink"]["state"] == "reported"
    fab = real["fabric"]
    # NVLink between the two boards, but no multi-node fabric: every GPU Completed/Success in clique 0 with an
    # all-zero cluster UUID, so "attached" (to an NVLink fabric such as NVL72) is false
    assert fab["state_reported"] is True and fab["attached"] is False and fab["source"] == "nvidia-smi -q"
    assert [(g["index"], g["state"], g["status"], g["clique_id"]) for g in fab["gpus"]] == [
        (0, "Completed", "Success", "0"), (1, "Completed", "Success", "0")]
    assert fab["cliques"] == [{"clique_id": "0", "cluster_uuid": "00000000-0000-0000-0000-000000000000"}]
    assert real["imex"]["installed"] is False and real["imex"]["ctl_status"] == "not_found"
    assert _real("gpu_facts_fabric_always.json")["fabric"] == fab


def test_fabric_state_makes_auto_read_nvidia_smi_q():
    # on the one-GPU lease no GPU reported a fabric state and -q was not read; here both do, so it is
    cmds = [c["cmd"][1:] for c in _real("gpu_facts.json")["commands"] if c["cmd"][0].endswith("nvidia-smi")]
    assert ["-q"] in cmds
    one = [c["cmd"][1:] for c in _real("gpu_facts.json", ONE)["commands"] if c["cmd"][0].endswith("nvidia-smi")]
    assert ["-q"] not in one


# --------------------------------------------------------------------------- replay: raw answers -> same facts

def test_replay_of_the_real_answers_gives_the_real_facts(replayed):
    real = _real("gpu_facts.json")
    for key in ("present", "gpu_count", "topology", "nvlink", "processes", "fabric", "imex"):
        assert replayed[key] == real[key], key
    assert [{k: g[k] for k in STABLE} for g in replayed["gpus"]] == [{k: g[k] for k in STABLE} for g in real["gpus"]]
    for key in ("userspace_version", "kernel_module_version", "kernel_module_flavor", "cuda_driver_version",
                "mismatch", "nvml_version"):
        assert replayed["driver"][key] == real["driver"][key], key
    # (libcuda_resolved follows symlinks on the real file system: not part of a replay)
    for key in ("libcuda", "libnccl", "libnvidia_ml", "entries_read"):
        assert replayed["loader"][key] == real["loader"][key], key
    assert replayed["gpu_query"]["fallback_used"] is False


# ------------------------------------------------------------------------------------ parsers on raw answers

def test_per_gpu_table_parses_both_rows():
    fields = list(_gpu.GPU_QUERY_FIELDS)
    assert _raw("nvsmi_query_full.cmd").split()[1] == "--query-gpu=" + ",".join(fields)
    gpus = _gpu.parse_gpu_query(_raw("nvsmi_query_full.txt"), fields)["gpus"]
    real = _real("gpu_facts.json")["gpus"]
    assert [{k: g[k] for k in STABLE} for g in gpus] == [{k: g[k] for k in STABLE} for g in real]
    assert [g["platform"]["module_id"] for g in gpus] == [1, 3]   # two different boards of the HGX baseboard


def test_topology_with_an_nvlink_pair():
    out = _gpu.parse_topology(_raw("nvsmi_topo_m.txt"))
    assert out["parsed"] is True and out["devices"] == ["GPU0", "GPU1"] and out["nics"] == {}
    assert out["matrix"]["GPU0"]["GPU1"] == out["matrix"]["GPU1"]["GPU0"] == "NV18"
    assert out["affinity"] == {
        "GPU0": {"cpu_affinity": "0-31", "numa_affinity": "0", "gpu_numa_id": None},
        "GPU1": {"cpu_affinity": "0-31", "numa_affinity": "0", "gpu_numa_id": None}}


def test_collective_run_saw_the_same_links():
    # the collective capture (same lease, a few minutes earlier) recorded topo -m and nvlink -s of its own
    assert _raw("topo.txt", COLL) == _raw("nvsmi_topo_m.txt")
    assert _raw("nvlink_s.txt", COLL) == _raw("nvsmi_nvlink_s.txt")


def test_fabric_section_of_q_for_both_gpus():
    fab = _gpu.fabric_from_q(_raw("nvsmi_q.txt"))
    assert [(f["bus_id"], f["section_present"], f["state"], f["status"], f["clique_id"], f["cluster_uuid"])
            for f in fab] == [
        ("00000000:00:06.0", True, "Completed", "Success", "0", "00000000-0000-0000-0000-000000000000"),
        ("00000000:00:07.0", True, "Completed", "Success", "0", "00000000-0000-0000-0000-000000000000")]
    # this driver refuses "-q -d FABRIC" (exit 2): why the module reads the whole -q
    assert _meta_rc("nvsmi_q_d_fabric") == 2 and "Failed to parse --display/-d flags" in _raw("nvsmi_q_d_fabric.txt")


def test_idle_host_has_no_compute_processes():
    assert _raw("nvsmi_apps_noheader.txt") == "" and _meta_rc("nvsmi_apps_noheader") == 0
    assert _gpu.parse_compute_apps("")["processes"] == []


# ---------------------------------------------------------------------------- foreign processes, timeouts, cost

def test_busy_case_foreign_process_on_gpu0_only():
    busy, own = _real("gpu_facts_busy.json"), _real("gpu_facts_busy_own.json")
    foreign = [p for p in busy["processes"] if not p["own"]]
    assert len(foreign) == 1 and foreign[0]["gpu_index"] == 0 and foreign[0]["used_memory_mib"] > 10 * 1024
    by_index = dict((g["index"], g) for g in busy["gpus"])
    assert by_index[0]["foreign_memory_mib"] == foreign[0]["used_memory_mib"]
    assert by_index[1]["foreign_memory_mib"] == 0 and by_index[1]["foreign_processes"] == []
    summ = busy["processes_summary"]
    assert summ["gpus_with_foreign_processes"] == [0] and summ["foreign_process_count"] == 1
    # the holder's pid given as the module's own: nothing foreign is left on either GPU
    assert own["processes_summary"]["own_pids"] == [foreign[0]["pid"]]
    assert all(p["own"] for p in own["processes"]) and [g["foreign_memory_mib"] for g in own["gpus"]] == [0, 0]


def test_tiny_timeout_stops_after_first_nvidia_smi_call():
    t = _real("gpu_facts_tiny_timeout.json")
    assert t["present"] is True and t["gpu_count"] == 0  # /proc/driver/nvidia says so; nvidia-smi was too slow
    smi = [c for c in t["commands"] if c["cmd"][0].endswith("nvidia-smi")]
    assert smi[0]["status"] == "timed_out" and len(smi) > 1
    assert [c["status"] for c in smi[1:]] == ["skipped"] * (len(smi) - 1)


def test_benchmark_two_gpus_against_collect_env_and_one_gpu():
    two, one = _real("bench.json"), _real("bench.json", ONE)
    assert two["gather"]["gpu_count"] == 2 and one["gather"]["gpu_count"] == 1
    assert two["gather"]["fresh_process_failures"] == [] and two["collect_env"]["failures"] == []
    # gather() stays an order of magnitude cheaper than torch.utils.collect_env on both hosts
    for b in (two, one):
        assert b["gather"]["in_process"]["median_ms"] * 10 < b["collect_env"]["median_ms"]
        assert b["gather"]["fresh_process"]["median_ms"] * 10 < b["collect_env"]["median_ms"]
    # the two-GPU host pays for nvidia-smi -q (read because the GPUs report a fabric state)
    cmds = dict((c["cmd"], c["duration_ms"]) for c in two["gather"]["last_run_commands"])
    assert "nvidia-smi -q" in cmds
    assert "nvidia-smi -q" not in [d["cmd"] for d in one["gather"]["last_run_commands"]]
    assert cmds["nvidia-smi -q"] == max(cmds.values())
