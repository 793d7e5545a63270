# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compatibility judgement (module_utils/compat/_compat.py) on the real H200 and 2 x H200 captures: every boundary
from inside and from outside, the profiles shipped in profiles/ and the refusal of bad profiles.

Facts come from what gather() returned on the real machines (tests/fixtures/*/module/gpu_facts*.json), from
gather() replaying real captures (h200-1gpu, h200-1gpu-busy, and the EDITED r570 folder, labelled in its README),
and from container_facts replaying the real podman capture. Where a test changes one value of a real capture to
reach the other side of a boundary that no capture here shows (a fabric-attached GPU, IMEX, a proprietary module)
the line says "EDITED" and names the one value changed.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import stat
import sys

import pytest

from ansible_collections.repro.vllm.plugins.action import compatibility as action
from ansible_collections.repro.vllm.plugins.module_utils.compat import _compat
from ansible_collections.repro.vllm.plugins.module_utils.container import _container
from ansible_collections.repro.vllm.plugins.module_utils.gpu import _gpu

FIX = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))
BIN = os.path.join(FIX, "bin")
H200 = os.path.join(FIX, "2026-11-29-580.159.04-h200")
X2 = os.path.join(FIX, "2026-11-29-580.159.04-2xh200")
R570 = os.path.join(FIX, "edited-2026-11-29-570.195.03-h200")
CUDA_PROC = os.path.join(FIX, "2026-12-01-580.159.04-h200-cuda-process")
MATRIX = action.load_matrix()


def real(folder, name="gpu_facts.json"):
    with open(os.path.join(folder, "module", name)) as fh:
        return json.load(fh)


def replayed(tmp_path, folder, proc_driver=None):
    """gather() against nvidia-smi-replay/ldconfig-replay of a capture folder, /proc/driver/nvidia from it."""
    os.environ["REPRO_VLLM_REPLAY_DIR"] = folder
    try:
        proc = tmp_path / ("proc-" + os.path.basename(folder)) / "driver" / "nvidia"
        proc.mkdir(parents=True)
        src = proc_driver or os.path.join(folder, "proc_driver.txt")
        if os.path.isfile(src):
            shutil.copy(src, str(proc / "version"))
        return _gpu.gather({"nvidia_smi_path": os.path.join(BIN, "nvidia-smi-replay"),
                            "ldconfig_path": os.path.join(BIN, "ldconfig-replay"),
                            "proc_root": str(proc.parent.parent), "dev_root": str(tmp_path / "nodev"),
                            "command_timeout": 10})
    finally:
        del os.environ["REPRO_VLLM_REPLAY_DIR"]


def profile(**kw):
    """A user profile (validated like a profile file) for one H200 with a CUDA 13.0 image."""
    data = {"name": "my-h200-cu130", "gpu_models": ["H200"], "gpu_count_min": 1, "image_cuda": "13.0"}
    data.update(kw)
    return _compat.validate_profile(data, "test profile")


def host(gpu, container=None, env=None):
    gpu = copy.deepcopy(gpu)
    if env is not None:
        gpu["visible_devices"] = _gpu.visible_devices(env)
    return {"fingerprint": {"host": "x", "gpu": gpu}, "container": container or {"skipped": True}}


def judge(prof, hosts, allow_foreign=False):
    if "fingerprint" in hosts:  # one host
        hosts = {"node01": hosts}
    return _compat.check(prof, MATRIX, hosts, allow_foreign)


def facts_of(doc, key="violations"):
    return [(e["host"], e["fact"]) for e in doc[key]]


# ------------------------------------------------------------------------------------------------ profiles
def test_every_shipped_profile_and_the_matrix_validate():
    names = action.builtin_names()
    assert {"kimi-k3-gb300", "kimi-k3-b300", "kimi-k3-h200", "h200-1gpu", "cpu-smoke"} <= set(names)
    for name in names:
        prof = action.load_profile(name, None)
        assert prof["name"] == name
        for row in prof["sources"].values():
            assert row["confidence"] in _compat.CONFIDENCE and row["source"]
    gb300 = action.load_profile("kimi-k3-gb300", None)
    assert (gb300["gpu_models"], gb300["gpu_count_min"], gb300["gpus_per_host"], gb300["image_cuda"],
            gb300["driver_branch_min"], gb300["fabric"], gb300["imex"]) == (
        ["GB300"], 8, 4, "13.0", 580, "required", "required")
    assert action.load_profile("kimi-k3-h200", None)["sources"]["gpu_count_min"]["confidence"] == "uncertain"
    for key in ("cuda_family_rules", "cuda_release_minimums", "image_tags", "compute_capabilities", "gpus"):
        assert all(r["source"] and r["confidence"] in _compat.CONFIDENCE for r in MATRIX[key])


@pytest.mark.parametrize("data, key", [
    ({"name": "x", "gpu_models": ["H200"], "gpu_count_min": 8, "image_cuda": "13.0", "gpu_count": 8}, "gpu_count"),
    ({"name": "x", "gpu_models": ["H200"], "image_cuda": "13.0"}, "gpu_count_min"),
    ({"name": "x", "gpu_models": "H200", "gpu_count_min": 8, "image_cuda": "13.0"}, "gpu_models"),
    ({"name": "x", "gpu_models": ["H200"], "gpu_count_min": 8, "image_cuda": 13.0}, "image_cuda"),
    ({"name": "x", "gpu_models": ["H200"], "gpu_count_min": 8, "image_cuda": "cu130"}, "image_cuda"),
    ({"name": "x", "gpu_models": ["H200"], "gpu_count_min": "8", "image_cuda": "13.0"}, "gpu_count_min"),
    ({"name": "x", "gpu_models": ["H200"], "gpu_count_min": 8, "image_cuda": "13.0", "fabric": "yes"}, "fabric"),
    ({"name": "x", "gpu_models": ["H200"], "gpu_count_min": 8, "image_cuda": "13.0", "gpus_per_host": 0},
     "gpus_per_host"),
    ({"name": "x y", "gpu_models": ["H200"], "gpu_count_min": 8, "image_cuda": "13.0"}, "name"),
    ({"name": "x", "gpu_models": ["H200"], "gpu_count_min": 8, "image_cuda": "13.0",
      "sources": {"gpu_count_min": {"source": "me", "confidence": "sure"}}}, "sources.gpu_count_min"),
])
def test_a_malformed_profile_is_refused_naming_the_key(data, key):
    with pytest.raises(_compat.ProfileError) as err:
        _compat.validate_profile(data, "my.yml")
    assert err.value.key == key and repr(key) in str(err.value) and "my.yml" in str(err.value)


def test_the_documented_user_profile_loads_from_a_relative_path(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "p.yml").write_text(
        "name: my-h200-cu130\ngpu_models: [H200]\ngpu_count_min: 8\ngpus_per_host: 8\nimage_cuda: \"13.0\"\n"
        "driver_branch_min: 580\nfabric: optional\n")
    prof = action.load_profile(None, "conf/p.yml", cwd=str(tmp_path))
    assert prof["name"] == "my-h200-cu130" and prof["gpus_per_host"] == 8 and prof["fabric"] == "optional"
    assert prof["origin"] == str(tmp_path / "conf" / "p.yml")


def test_unknown_name_both_variables_missing_and_broken_files_are_refused(tmp_path):
    with pytest.raises(_compat.ProfileError) as err:
        action.load_profile("kimi-k3-h100", None)
    assert err.value.key == "repro_vllm_profile" and "kimi-k3-gb300" in str(err.value)
    # both given: the file wins (the shipped inventories set repro_vllm_profile in group_vars), and the console says so
    cpu = os.path.join(action.PROFILES_DIR, "cpu-smoke.yml")
    assert action.load_profile("kimi-k3-h200", cpu)["name"] == "cpu-smoke"
    assert _compat.choice_line("kimi-k3-h200", cpu) == (
        "compatibility | profile file %s used (repro_vllm_profile_file); it wins over repro_vllm_profile=kimi-k3-h200 "
        "(set in the inventory or on the command line), which is ignored" % cpu)
    assert _compat.choice_line("kimi-k3-h200", "") is None and _compat.choice_line(None, cpu) is None
    with pytest.raises(_compat.ProfileError) as err:
        action.load_profile(None, "nowhere.yml", cwd=str(tmp_path))
    assert "does not exist" in str(err.value)
    bad = tmp_path / "bad.yml"
    bad.write_text("name: x\ngpu_models: [H200\n")
    with pytest.raises(_compat.ProfileError) as err:
        action.load_profile(None, str(bad))
    assert "not valid YAML" in str(err.value) and "line" in str(err.value)
    bad.write_text("- just\n- a list\n")
    with pytest.raises(_compat.ProfileError, match="a profile is a YAML mapping"):
        action.load_profile(None, str(bad))


# ------------------------------------------------------------------------------------------------ vocabulary
@pytest.mark.parametrize("name, token, hit", [
    ("NVIDIA H200", "H200", True), ("NVIDIA H200 NVL", "H200", True), ("NVIDIA GB200", "B200", False),
    ("NVIDIA B200", "B200", True), ("NVIDIA GB300", "GB300", True), ("NVIDIA B300 SXM6 AC", "GB300", False),
    ("NVIDIA H100 80GB HBM3", "H100", True), ("NVIDIA H100 80GB HBM3", "H10", False),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000", True), ("NVIDIA GH200 480GB", "H200", False),
])
def test_model_tokens_are_whole_words(name, token, hit):
    assert _compat.model_matches(name, token) is hit


def test_matrix_lookups():
    assert _compat.required_driver_branch(profile(), MATRIX)[0] == 580
    assert _compat.required_driver_branch(profile(image_cuda="12.9"), MATRIX)[0] == 525
    assert _compat.gpu_row(MATRIX, "NVIDIA GB200")["model"] == "GB200"
    assert _compat.image_cuda_from_tag(MATRIX, "vllm/vllm-openai:kimi-k3")[0] == "13.0"
    assert _compat.image_cuda_from_tag(MATRIX, "docker.io/vllm/vllm-openai:v0.27.1-cu129")[0] == "12.9"
    assert _compat.image_cuda_from_tag(MATRIX, "vllm/vllm-openai:v0.27.1")[0] == "13.0"
    assert _compat.image_cuda_from_tag(MATRIX, "vllm/vllm-openai:v0.17.0")[0] is None
    doc = judge(profile(driver_branch_min=590), host(real(H200)))
    assert all(v["fact"] in _compat.FACTS for v in doc["violations"])
    assert all(n["fact"] in _compat.FACTS for n in doc["notes"])


# ------------------------------------------------------------------------------------------------ the real H200
def test_real_h200_inside_its_profile_passes():
    doc = judge(profile(gpus_per_host=1, driver_branch_min=580), host(real(H200)))
    assert doc["verdict"] == "pass" and doc["violations"] == [] and doc["profile"] == "my-h200-cu130"
    # what could not be read is said, not silently passed
    assert ("node01", "driver_in_use") in facts_of(doc, "notes") and ("node01", "image_cuda") in facts_of(doc, "notes")


def test_driver_branch_both_sides_on_the_real_h200():
    assert judge(profile(driver_branch_min=580), host(real(H200)))["verdict"] == "pass"
    doc = judge(profile(driver_branch_min=590), host(real(H200)))
    assert facts_of(doc) == [("node01", "driver_branch")]
    v = doc["violations"][0]
    assert v["required"].startswith(">= r590") and v["found"] == "r580 (580.159.04, kernel module)"
    assert "r590" in v["fix"]


def test_another_driver_branch_is_exactly_one_violation(tmp_path):
    """The EDITED r570 capture (README beside it) against the shipped H200 profile's CUDA 13 boundary."""
    facts = replayed(tmp_path, R570)
    assert facts["driver"]["userspace_version"] == facts["driver"]["kernel_module_version"] == "570.195.03"
    assert facts["driver"]["cuda_driver_version"] == "12.8"
    doc = judge(profile(), host(facts))
    assert doc["verdict"] == "fail" and facts_of(doc) == [("node01", "driver_branch")]
    v = doc["violations"][0]
    assert v["required"].startswith(">= r580 (a CUDA 13.0 image needs r580+: ")
    assert v["found"] == "r570 (570.195.03, kernel module)"
    # the same host, the real 580 capture next to it: only the edited host is refused
    both = judge(profile(gpu_count_min=2), {"node01": host(real(H200)), "node02": host(facts)})
    assert facts_of(both) == [("node02", "driver_branch")]


def test_cuda_driver_both_sides_and_the_forward_path(tmp_path):
    facts = replayed(tmp_path, R570)
    # the branch is allowed by the profile, but the r570 driver supports CUDA 12.8, the image is 13.0
    doc = judge(profile(driver_branch_min=570), host(facts))
    assert facts_of(doc) == [("node01", "cuda_driver")]
    assert doc["violations"][0]["found"] == "the driver supports CUDA 12.8"
    # inside: the driver's CUDA 13.0 runs a 13.0 image; a 13.1 image is minor-version compatibility, a note
    assert judge(profile(), host(real(H200)))["verdict"] == "pass"
    doc = judge(profile(image_cuda="13.1"), host(real(H200)))
    assert doc["verdict"] == "pass" and ("node01", "cuda_driver") in facts_of(doc, "notes")
    # the cuda-compat forward path: the image opts in (EDITED: VLLM_ENABLE_CUDA_COMPATIBILITY=1 in its env)
    container = {"reference": "vllm/vllm-openai:v0.27.1", "found_in": ["docker"], "repo_digests": ["sha256:" + "a" * 64],
                 "runtimes": {"docker": {"image": {"env": {"CUDA_VERSION": "13.0.2",
                                                           "VLLM_ENABLE_CUDA_COMPATIBILITY": "1"}}}}}
    doc = judge(profile(driver_branch_min=570), host(facts, container))
    assert doc["verdict"] == "pass"
    assert any(n["fact"] == "cuda_driver" and "forward path" in n["note"] for n in doc["notes"])


def test_kernel_module_both_sides():
    gpu = real(H200)
    assert judge(profile(kernel_module="open"), host(gpu))["violations"] == []
    proprietary = copy.deepcopy(gpu)
    proprietary["driver"]["kernel_module_flavor"] = "proprietary"  # EDITED: flavor only
    doc = judge(profile(kernel_module="open"), host(proprietary))
    assert facts_of(doc) == [("node01", "kernel_module")] and "proprietary" in doc["violations"][0]["found"]
    assert judge(profile(), host(proprietary))["verdict"] == "pass"  # H200 runs either flavor
    mismatch = copy.deepcopy(gpu)
    mismatch["driver"].update(mismatch=True, kernel_module_version="580.95.05", mismatch_evidence=[
        "nvidia-smi 580.159.04 (userspace) but kernel module 580.95.05 (/proc/driver/nvidia/version)"])  # EDITED
    doc = judge(profile(), host(mismatch))
    assert ("node01", "kernel_module") in facts_of(doc) and "580.95.05" in doc["violations"][0]["found"]


def test_gpu_model_both_sides_and_gb200_is_not_b200():
    gpu = real(X2)
    assert judge(profile(gpu_count_min=2), host(gpu))["verdict"] == "pass"
    doc = judge(profile(gpu_models=["H100", "B200"], gpu_count_min=2), host(gpu))
    assert facts_of(doc) == [("node01", "gpu_model")]
    assert doc["violations"][0]["found"] == "GPU 0 NVIDIA H200, GPU 1 NVIDIA H200"
    gb = copy.deepcopy(gpu)
    for g in gb["gpus"]:
        g["name"] = "NVIDIA GB200"  # EDITED: the name only
    assert ("node01", "gpu_model") in facts_of(judge(profile(gpu_models=["B200"], gpu_count_min=2), host(gb)))


def test_gpu_count_across_the_job_both_sides():
    one, two = real(H200), real(X2)
    assert judge(profile(gpu_count_min=3), {"a": host(one), "b": host(two)})["verdict"] == "pass"
    doc = judge(profile(gpu_count_min=4), {"a": host(one), "b": host(two)})
    assert facts_of(doc) == [(None, "gpu_count")] and doc["violations"][0]["found"] == "3 GPUs on 2 host(s)"
    missing = {"a": host(two), "b": {"fingerprint": None, "missing": "unreachable: ssh: connect refused"}}
    doc = judge(profile(gpu_count_min=3), missing)
    assert facts_of(doc) == [(None, "gpu_count")] and "no fingerprint of b" in doc["violations"][0]["found"]
    assert ("b", "gpu_count") in facts_of(doc, "notes")


def test_gpus_per_host_both_sides():
    assert judge(profile(gpus_per_host=2, gpu_count_min=2), host(real(X2)))["verdict"] == "pass"
    doc = judge(profile(gpus_per_host=8, gpu_count_min=2), host(real(X2)))
    assert facts_of(doc) == [("node01", "gpus_per_host")] and doc["violations"][0]["found"] == "2 GPUs"


def test_compute_capability_both_sides():
    gpu = real(H200)  # compute capability 9.0: first CUDA 11.8 (Hopper)
    assert judge(profile(image_cuda="11.8"), host(gpu))["verdict"] == "pass"
    doc = judge(profile(image_cuda="11.7"), host(gpu))
    assert facts_of(doc) == [("node01", "compute_capability")]
    assert "CUDA >= 11.8" in doc["violations"][0]["required"] and "sm_90" in doc["violations"][0]["found"]


def test_fabric_both_sides():
    x2 = real(X2)  # Completed/Success but cluster UUID all zeros: NVSwitch-less, not a multi-node fabric
    doc = judge(profile(fabric="required", gpu_count_min=2), host(x2))
    assert facts_of(doc) == [("node01", "fabric")] and "00000000-0000" in doc["violations"][0]["found"]
    one = real(H200)  # a fabric state of N/A
    assert facts_of(judge(profile(fabric="required"), host(one))) == [("node01", "fabric")]
    assert judge(profile(fabric="optional", gpu_count_min=2), host(x2))["verdict"] == "pass"
    attached = copy.deepcopy(x2)
    for f in attached["fabric"]["gpus"]:
        f["cluster_uuid"] = "5a2b6c1e-0000-4000-8000-00000000c0de"  # EDITED: a non-zero cluster UUID
    assert judge(profile(fabric="required", gpu_count_min=2), host(attached))["verdict"] == "pass"
    other = copy.deepcopy(attached)
    for f in other["fabric"]["gpus"]:
        f["cluster_uuid"] = "77777777-0000-4000-8000-00000000c0de"  # EDITED: another domain
    doc = judge(profile(fabric="required", gpu_count_min=4), {"a": host(attached), "b": host(other)})
    assert facts_of(doc) == [(None, "fabric")]


def test_imex_both_sides():
    gpu = real(X2)  # IMEX not installed there
    doc = judge(profile(imex="required", gpu_count_min=2), host(gpu))
    assert facts_of(doc) == [("node01", "imex")] and "not installed" in doc["violations"][0]["found"]
    running = copy.deepcopy(gpu)
    running["imex"].update(installed=True, ctl_status="ok", channels=["channel0"])  # EDITED: IMEX up
    assert judge(profile(imex="required", gpu_count_min=2), host(running))["verdict"] == "pass"


def _replay_bin(tmp_path, name, mapping):
    path = tmp_path / name
    path.write_text('#!/bin/sh\nexec "%s" "%s" "%s" "$@"\n' % (
        sys.executable, os.path.join(FIX, "containers", "replay.py"), mapping))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_image_cuda_and_image_digest_from_real_podman_captures(tmp_path):
    mapping = os.path.join(FIX, "containers", "podman-4.3.1", "replay.json")
    podman = {"podman": _replay_bin(tmp_path, "podman", mapping)}
    present = _container.gather("localhost/repro-vllm-tiny:0.1", binaries=podman, runtimes=["podman"])[0]
    absent = _container.gather("localhost/absent:1", binaries=podman, runtimes=["podman"])[0]
    gpu = real(H200)
    # the image says CUDA_VERSION=13.0.2: inside a CUDA 13.0 profile, outside a 12.9 one
    doc = judge(profile(), host(gpu, present))
    assert doc["verdict"] == "pass" and ("node01", "image_digest") not in facts_of(doc, "notes")
    doc = judge(profile(image_cuda="12.9", driver_branch_min=580), host(gpu, present))
    assert facts_of(doc) == [("node01", "image_cuda")] and "13.0.2" in doc["violations"][0]["found"]
    doc = judge(profile(), host(gpu, absent))
    assert facts_of(doc) == [("node01", "image_digest")] and "podman" in doc["violations"][0]["found"]
    doc = judge(profile(image_by_digest=True), host(gpu, present))
    assert facts_of(doc) == [("node01", "image_digest")]
    other = copy.deepcopy(present)
    other["repo_digests"] = ["localhost/repro-vllm-tiny@sha256:" + "b" * 64]  # EDITED: a rebuilt image
    doc = judge(profile(gpu_count_min=2), {"a": host(gpu, present), "b": host(real(H200), other)})
    assert facts_of(doc) == [(None, "image_digest")]


@pytest.mark.parametrize("env, fact", [
    ({}, None), ({"CUDA_VISIBLE_DEVICES": "0"}, None),
    ({"CUDA_VISIBLE_DEVICES": ""}, "visible_devices"),   # h200-1gpu/fail_no_devices: no GPU at all
    ({"CUDA_VISIBLE_DEVICES": "7"}, "visible_devices"),  # h200-1gpu/fail_invalid_ordinal
])
def test_visible_devices_both_sides(env, fact):
    doc = judge(profile(), host(real(H200), env=env))
    assert facts_of(doc) == ([("node01", fact)] if fact else [])


def test_visible_devices_fewer_than_the_profile_needs():
    doc = judge(profile(gpus_per_host=2, gpu_count_min=2), host(real(X2), env={"CUDA_VISIBLE_DEVICES": "1"}))
    assert facts_of(doc) == [("node01", "visible_devices")]


def _driver_in_use_from_capture(folder):
    """The driver_in_use section (the contract of gpu_facts) from the real CUDA process capture: the kernel
    module of /proc/driver/nvidia/version and the libcuda the process mapped in /proc/<pid>/maps."""
    with open(os.path.join(folder, "proc_driver.txt")) as fh:
        kernel = _gpu.parse_proc_version(fh.read())["version"]
    with open(os.path.join(folder, "proc_maps.txt")) as fh:
        libs = sorted(set(re.findall(r"(\S+/libcuda\.so\.(\d+\.\d+(?:\.\d+)?))\s*$", fh.read(), re.M)))
    return {"kernel_module_version": kernel, "userspace_version": kernel, "mismatch": False,
            "processes": [{"pid": 510, "libcuda_path": p, "libcuda_version": v} for p, v in libs]}


def test_driver_in_use_both_sides_from_the_real_cuda_process():
    diu = _driver_in_use_from_capture(CUDA_PROC)
    assert diu["processes"] and diu["processes"][0]["libcuda_version"] == "580.159.04"
    gpu = real(H200)
    gpu["driver_in_use"] = diu
    doc = judge(profile(), host(gpu))
    assert doc["verdict"] == "pass" and ("node01", "driver_in_use") not in facts_of(doc, "notes")
    stale = copy.deepcopy(gpu)
    stale["driver_in_use"]["kernel_module_version"] = "580.95.05"  # EDITED: the module was upgraded under it
    doc = judge(profile(), host(stale))
    assert facts_of(doc) == [("node01", "driver_in_use")] and "libcuda.so.580.159.04" in doc["violations"][0]["found"]
    flagged = copy.deepcopy(gpu)
    flagged["driver_in_use"].update(mismatch=True, evidence=["the loader cache resolves libcuda to several versions"])
    doc = judge(profile(), host(flagged))
    assert facts_of(doc) == [("node01", "driver_in_use")] and "several versions" in doc["violations"][0]["found"]
    compat = copy.deepcopy(stale)
    compat["driver_in_use"]["processes"][0].update(  # EDITED: the library from a cuda-compat folder
        forward_compat=True, libcuda_path="/usr/local/cuda-13.0/compat/libcuda.so.580.159.04")
    doc = judge(profile(), host(compat))
    assert doc["verdict"] == "pass" and any("forward path" in n["note"] for n in doc["notes"])


def test_foreign_processes_both_sides_on_the_real_busy_captures(tmp_path):
    busy, own = real(X2, "gpu_facts_busy.json"), real(X2, "gpu_facts_busy_own.json")
    doc = judge(profile(gpu_count_min=2), host(busy))
    assert facts_of(doc) == [("node01", "foreign_processes")]
    assert doc["violations"][0]["found"] == "pid 1098 python3 on GPU 0 (10758 MiB)"
    # the same process passed as the workload's own pid: inside (and GPU 1's 4 MiB is below the tolerance)
    assert judge(profile(gpu_count_min=2), host(own))["verdict"] == "pass"
    doc = judge(profile(gpu_count_min=2), host(busy), allow_foreign=True)
    assert doc["verdict"] == "pass" and any(
        n["fact"] == "foreign_processes" and "repro_vllm_allow_foreign" in n["note"] for n in doc["notes"])
    # the one-GPU busy capture replayed through gather(): the same boundary from the raw nvidia-smi answers
    shared_busy = replayed(tmp_path, os.path.join(FIX, "h200-1gpu-busy"),
                           proc_driver=os.path.join(FIX, "h200-1gpu", "proc_driver.txt"))
    assert [g["name"] for g in shared_busy["gpus"]] == ["NVIDIA H200"]
    doc = judge(profile(), host(shared_busy))
    assert facts_of(doc) == [("node01", "foreign_processes")] and "pid 420" in doc["violations"][0]["found"]
    # a GPU the server will not use (CUDA_VISIBLE_DEVICES=1) is not its business
    assert judge(profile(gpu_count_min=1), host(busy, env={"CUDA_VISIBLE_DEVICES": "1"}))["verdict"] == "pass"


def test_h200_1gpu_idle_is_inside_and_its_busy_twin_outside(tmp_path):
    """h200-1gpu and h200-1gpu-busy replayed through gather(), with the idle host's real environment capture."""
    env = {}
    with open(os.path.join(FIX, "h200-1gpu", "env_gpu.txt")) as fh:
        for line in fh:
            key, sep, value = line.rstrip("\n").partition("=")
            if sep:
                env[key] = value
    idle = replayed(tmp_path, os.path.join(FIX, "h200-1gpu"))
    busy = replayed(tmp_path, os.path.join(FIX, "h200-1gpu-busy"),
                    proc_driver=os.path.join(FIX, "h200-1gpu", "proc_driver.txt"))
    prof = profile(gpus_per_host=1, driver_branch_min=580, kernel_module="open")
    doc = judge(prof, {"idle": host(idle, env=env), "busy": host(busy, env=env)})
    assert facts_of(doc) == [("busy", "foreign_processes")]
    assert judge(prof, host(idle, env=env))["verdict"] == "pass"


def test_attribution_from_gpu_facts_is_used_and_unattributed_is_a_note():
    busy = real(X2, "gpu_facts_busy.json")
    for attribution, verdict in (("workload", "pass"), ("foreign", "fail"), ("unattributed", "pass")):
        gpu = copy.deepcopy(busy)
        gpu["processes"][0].update(attribution=attribution, reason="NSpid 1098 -> 510")  # the gpu_facts contract
        gpu["processes_summary"]["own_pids"] = [510]  # EDITED: a workload is named (a running server's pid)
        doc = judge(profile(gpu_count_min=2), host(gpu))
        assert doc["verdict"] == verdict, attribution
    assert any("could not tell" in n["note"] for n in doc["notes"])


def test_unattributed_with_no_workload_running_is_foreign():
    """Before vLLM starts no process can be the workload's: one that could not be mapped still holds the GPU."""
    gpu = copy.deepcopy(real(X2, "gpu_facts_busy.json"))
    gpu["processes"][0].update(attribution="unattributed", reason="pid not visible here")  # the gpu_facts contract
    gpu["processes_summary"]["own_pids"] = []
    doc = judge(profile(gpu_count_min=2), host(gpu))
    assert facts_of(doc) == [("node01", "foreign_processes")]
    assert "no workload process is running" in doc["violations"][0]["found"]


def test_memory_no_process_accounts_for_is_foreign():
    gpu = real(X2, "gpu_facts_busy.json")
    gpu["processes"] = []  # EDITED: the process list lost, the 10 GiB in use stays
    gpu["gpus"][0]["unaccounted_memory_mib"] = gpu["gpus"][0]["memory_used_mib"]
    doc = judge(profile(gpu_count_min=2), host(gpu))
    assert facts_of(doc) == [("node01", "foreign_processes")] and "10767 MiB" in doc["violations"][0]["found"]


# ------------------------------------------------------------------------------------------------ shipped profiles
def test_shipped_profiles_on_the_real_captures():
    one, two = real(H200), real(X2)
    doc = judge(action.load_profile("cpu-smoke", None), host(one))
    assert doc["verdict"] == "pass" and ("job", "gpu_model") not in facts_of(doc, "notes")
    doc = judge(action.load_profile("kimi-k3-h200", None), {"a": host(one), "b": host(two)})
    assert sorted(facts_of(doc), key=str) == sorted(
        [(None, "gpu_count"), ("a", "gpus_per_host"), ("b", "gpus_per_host")], key=str)
    assert any(n["host"] is None and n["fact"] == "gpu_count" and "uncertain" in n["note"] for n in doc["notes"])
    doc = judge(action.load_profile("kimi-k3-gb300", None), host(two))
    assert {"gpu_model", "gpus_per_host", "fabric", "imex", "gpu_count"} <= set(f for _h, f in facts_of(doc))
    # the one-H200 profile of docs/gpu.md: the lent H200 is inside it, its two-GPU twin is not (one per host)
    h200 = action.load_profile("h200-1gpu", None)
    assert _compat.profile_needs_gpu(h200) and h200["driver_branch_min"] == 580
    doc = judge(h200, host(one))
    assert doc["verdict"] == "pass" and doc["violations"] == [], doc
    assert facts_of(judge(h200, host(two))) == [("node01", "gpus_per_host")]


def test_console_lines_name_host_fact_required_found_fix():
    doc = judge(profile(driver_branch_min=590), host(real(H200)))
    lines = _compat.console_lines(doc)
    assert lines[0] == "compatibility | profile my-h200-cu130: FAIL, 1 violation(s), %d note(s)" % len(doc["notes"])
    assert lines[1].startswith("VIOLATION node01 | driver_branch | required: >= r590")
    assert "| found: r580 (580.159.04, kernel module) | fix: install an r590" in lines[1]


# ------------------------------------------------------------------------------------------------ the judge itself
def _judge_run(run_path, hosts):
    """What the action does with the open run (action.judge_run), against a shipped profile."""
    return action.judge_run(action.load_profile("kimi-k3-h200", None), MATRIX, run_path, hosts)


def _run_with_parts(tmp_path, parts):
    """A run folder holding ``{host: fingerprint document}`` as hosts/<host>/fingerprint.json."""
    for name, doc in parts.items():
        folder = tmp_path / "run-001" / "hosts" / name
        folder.mkdir(parents=True)
        (folder / "fingerprint.json").write_text(json.dumps(doc))
    return str(tmp_path / "run-001")


def test_a_part_the_judge_cannot_read_fails_once_naming_the_host_the_folder_and_the_fix(tmp_path):
    # node01: the real H200 facts; node02: the same facts EDITED here (the GPU list turned into a string, the shape
    # of a hand-edited or foreign fingerprint.json) - the judge must name node02, not raise a traceback
    good = {"host": "node01", "gpu": real(H200)}
    bad = copy.deepcopy(good)
    bad.update(host="node02")
    bad["gpu"]["gpus"] = "NVIDIA H200"
    run = _run_with_parts(tmp_path, {"node01": good, "node02": bad})
    with pytest.raises(_compat.JudgeError) as err:
        action._compat.check(action.load_profile("kimi-k3-h200", None), MATRIX,
                             action.read_hosts(run, ["node01", "node02"]))
    assert err.value.host == "node02" and "AttributeError" in str(err.value)
    from ansible.errors import AnsibleActionFail
    with pytest.raises(AnsibleActionFail) as fail:
        _judge_run(run, ["node01", "node02"])
    msg = str(fail.value)
    assert "host node02" in msg and "repro.vllm.compatibility" in msg and "no compatibility.json" in msg
    assert os.path.join(run, "hosts", "node02") in msg and "--limit node02" in msg
    # a part that is not even an object is the same kind of failure
    run2 = _run_with_parts(tmp_path / "b", {"node03": ["not", "an", "object"]})
    with pytest.raises(AnsibleActionFail, match="host node03: its parts cannot be judged .*JSON object"):
        _judge_run(run2, ["node03"])
    # and the good host alone is judged as before (the guard changed nothing for a real part)
    assert _judge_run(run, ["node01"])["verdict"] in ("pass", "fail")


# ------------------------------------------------------------------------------------------ the action as a task
def _task(args, check_mode=False):
    """The action as a task on the controller runs it (the playbooks register its result)."""
    import types
    act = action.ActionModule.__new__(action.ActionModule)
    act._task = types.SimpleNamespace(args=dict(args), check_mode=check_mode, async_val=0,
                                      action="repro.vllm.compatibility")
    act._connection = types.SimpleNamespace(transport="local", _shell=types.SimpleNamespace(tmpdir="/nonexistent"))
    return act.run(task_vars={})


def test_a_run_that_is_not_judged_loads_nothing_and_still_answers_with_a_verdict():
    # the compatibility role's profile entry point registers this as _repro_vllm_compat_profile (the playbooks' open
    # checks the profile itself, with the same loader: run_record create's `compatibility`)
    res = _task({"state": "profile", "enabled": False, "profile": "no-such-profile"})
    assert res["enabled"] is False and res["verdict"] == "unchecked" and "profile" not in res
    res = _task({"state": "profile", "profile": "kimi-k3-h200"})
    assert res["enabled"] is True and res["profile"]["name"] == "kimi-k3-h200" and "is valid" in res["msg"]
    from ansible.errors import AnsibleActionFail
    with pytest.raises(AnsibleActionFail, match="refused before any host is touched"):
        _task({"state": "profile", "profile": "no-such-profile"})


def test_the_judge_writes_compatibility_json_into_the_open_run_in_the_same_task(tmp_path):
    run = _run_with_parts(tmp_path, {"node01": {"host": "node01", "gpu": real(H200)}})
    res = _task({"run_path": run, "hosts": ["node01"], "profile": "kimi-k3-h200", "write": True})
    # registered as repro_vllm_compatibility_result (audit.yml; fingerprint.yml's close hands the same keys back)
    assert res["run_path"] == run and res["verdict"] in ("pass", "fail") and res["lines"]
    with open(os.path.join(run, "compatibility.json")) as fh:
        assert json.load(fh) == res["compatibility"]
    assert res["changed"] is True and res["written"]["part"] == "compatibility.json"
    # the same verdict again changes nothing; without write nothing is written
    assert _task({"run_path": run, "hosts": ["node01"], "profile": "kimi-k3-h200", "write": True})["changed"] is False
    other = _run_with_parts(tmp_path / "b", {"node01": {"host": "node01", "gpu": real(H200)}})
    assert "written" not in _task({"run_path": other, "hosts": ["node01"], "profile": "kimi-k3-h200"})
    assert not os.path.exists(os.path.join(other, "compatibility.json"))
    # check mode, the run never created: nothing to judge, and enforce.yml still finds a verdict
    res = _task({"run_path": str(tmp_path / "never"), "hosts": ["node01"], "profile": "kimi-k3-h200", "write": True},
                check_mode=True)
    assert res["skipped"] and res["verdict"] == "unchecked" and res["lines"] == [res["msg"]]
