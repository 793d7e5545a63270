# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver actually in use and whose compute process it is (issue 10, items 3 and 5).

Maps, loader cache and kernel module version are the real captures of a CUDA process on the lent H200
(tests/fixtures/2026-12-01-580.159.04-h200-cuda-process). Attribution is tested on real processes of this
machine: a child of the test (the workload's descendant), an unrelated one, and one in a pid namespace of its
own (``unshare --pid``), whose NSpid line is written by the kernel.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.gpu import _gpu, _process
from ansible_collections.repro.vllm.tests import real_parts

FIX = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures"))
CUDA_PROC = os.path.join(FIX, "2026-12-01-580.159.04-h200-cuda-process")
LIB = "/usr/local/nvidia/lib64/libcuda.so.580.159.04"


def _raw(name, folder=CUDA_PROC):
    with open(os.path.join(folder, name), encoding="utf-8") as fh:
        return fh.read()


# ------------------------------------------------------------------------------------------- maps and versions

def test_real_maps_name_the_loaded_libcuda_file():
    libs = _process.parse_maps_libcuda(_raw("proc_maps.txt"))
    assert libs == [{"path": LIB, "version": "580.159.04", "deleted": False}]


def test_libcuda_version_from_file_names():
    assert _process.libcuda_version(LIB) == "580.159.04"
    assert _process.libcuda_version("/lib/libcuda.so.1") is None  # the soname's 1 is no driver version
    assert _process.libcuda_version("/lib/libcuda.so") is None
    assert _process.libcuda_version("/lib/libcudart.so.13") is None


def test_real_capture_is_consistent_no_mismatch():
    kernel = _gpu.parse_proc_version(_raw("proc_driver.txt"))["version"]
    # both loader-cache folders of the capture point at the same real file, as the process maps show
    loader = [{"path": e["path"], "target": LIB, "version": "580.159.04"}
              for e in _gpu.parse_ldconfig(_raw("ldconfig_cuda.txt"))["libcuda"] if e["name"] == "libcuda.so.1"]
    assert [e["path"] for e in loader] == ["/usr/local/nvidia/lib64/libcuda.so.1", "/lib/libcuda.so.1"]
    maps = [{"pid": 510, "source": "workload", "libcuda": _process.parse_maps_libcuda(_raw("proc_maps.txt")),
             "error": None}]
    res = _process.driver_in_use(kernel, loader, "580.159.04", maps)
    assert res["kernel_module_version"] == "580.159.04" and res["userspace_version"] == "580.159.04"
    assert res["mismatch"] is False and res["evidence"] == []
    assert res["processes"][0]["pid"] == 510 and res["processes"][0]["libcuda_path"] == LIB
    assert res["processes"][0]["libcuda_version"] == "580.159.04"


def test_process_on_another_libcuda_than_the_kernel_module_is_a_mismatch():
    # the real maps against a kernel module of another release (the situation after a driver upgrade that left
    # the server running on the library it mapped before): the comparison must name the pid and both versions
    maps = [{"pid": 510, "source": "workload", "libcuda": _process.parse_maps_libcuda(_raw("proc_maps.txt")),
             "error": None}]
    res = _process.driver_in_use("580.95.05", [], None, maps)
    assert res["mismatch"] is True
    assert res["evidence"] == ["pid 510 mapped libcuda 580.159.04 (%s) but the kernel module is 580.95.05" % LIB]


def test_deleted_library_and_forward_compat():
    deleted = _process.parse_maps_libcuda(_raw("proc_maps.txt").replace(LIB, LIB + " (deleted)"))
    assert deleted[0]["deleted"] is True and deleted[0]["path"] == LIB
    maps = [{"pid": 7, "source": "workload", "libcuda": deleted, "error": None}]
    res = _process.driver_in_use("580.159.04", [], None, maps)
    assert res["mismatch"] is True and "since deleted or replaced" in res["evidence"][0]
    compat = [{"path": "/usr/local/cuda-13.0/compat/libcuda.so.580.65.06", "version": "580.65.06",
               "deleted": False}]
    maps = [{"pid": 8, "source": "workload", "libcuda": compat, "error": None}]
    res = _process.driver_in_use("570.172.08", [], None, maps)
    assert res["mismatch"] is False and res["processes"][0]["forward_compat"] is True


def test_loader_with_two_versions_is_a_mismatch():
    loader = [{"path": "/a/libcuda.so.1", "target": "/a/libcuda.so.580.159.04", "version": "580.159.04"},
              {"path": "/b/libcuda.so.1", "target": "/b/libcuda.so.570.86.15", "version": "570.86.15"}]
    res = _process.driver_in_use("580.159.04", loader, None, [])
    assert res["mismatch"] is True and res["userspace_versions"] == ["580.159.04", "570.86.15"]
    assert any("several versions" in e for e in res["evidence"])


def test_unreadable_maps_are_reported_not_dropped(tmp_path):
    libs, err = _process.read_maps_libcuda(str(tmp_path), 999999)
    assert libs == [] and "maps" in err
    maps = [{"pid": 999999, "source": "workload", "libcuda": libs, "error": err}]
    res = _process.driver_in_use("580.159.04", [], None, maps)
    assert res["processes"][0]["error"] == err and res["mismatch"] is False


def test_maps_of_this_very_process_are_read():
    libs, err = _process.read_maps_libcuda("/proc", os.getpid())
    assert err is None and libs == []  # pytest maps no libcuda


# ------------------------------------------------------------------------------------------------- attribution

@pytest.fixture
def child():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    time.sleep(0.2)
    yield proc
    proc.kill()
    proc.wait()


def test_real_status_has_nspid():
    rec = _process.parse_proc_status(_raw_proc("self"))
    assert rec["pid"] == os.getpid() and rec["nspid"][0] == os.getpid() and rec["ppid"] == os.getppid()


def _raw_proc(pid):
    with open("/proc/%s/status" % pid, encoding="utf-8") as fh:
        return fh.read()


def test_descendant_of_the_workload_is_workload(child):
    table = _process.read_process_table("/proc")
    name = os.path.basename(sys.executable)
    res = _process.attribute_pid(child.pid, name, [os.getpid()], table)
    assert res["attribution"] == "workload" and res["local_pid"] == child.pid
    assert "descendant" in res["reason"]


def test_other_process_is_foreign_with_its_name(child):
    table = _process.read_process_table("/proc")
    name = os.path.basename(sys.executable)
    res = _process.attribute_pid(child.pid, name, [1 << 30], table)
    assert res["attribution"] == "foreign" and "neither a workload pid" in res["reason"]
    res = _process.attribute_pid(child.pid, name, [], table)
    assert res["attribution"] == "foreign" and "no workload pid was given" in res["reason"]


def test_same_pid_other_program_is_unattributed(child):
    table = _process.read_process_table("/proc")
    res = _process.attribute_pid(child.pid, "/usr/bin/not-this-program", [], table)
    assert res["attribution"] == "unattributed" and "another pid namespace" in res["reason"]


def test_pid_seen_nowhere_is_unattributed():
    table = _process.read_process_table("/proc")
    missing = max(table) + 100000
    res = _process.attribute_pid(missing, "python3", [os.getpid()], table)
    assert res["attribution"] == "unattributed" and res["local_pid"] is None
    assert "not a process here" in res["reason"]


def test_inner_namespace_pid_is_mapped_through_nspid(tmp_path):
    unshare = shutil.which("unshare")
    if not unshare:
        real_parts.missing("unshare", "no unshare on PATH")
    # a program name of its own: other pid namespaces on this machine have a pid 1 too, and a "sleep" among them
    # would make pid 1 ambiguous (rightly unattributed)
    prog = tmp_path / ("nsprobe%d" % os.getpid())[:15]
    shutil.copy(shutil.which("sleep"), str(prog))
    proc = subprocess.Popen([unshare, "--user", "--map-root-user", "--pid", "--fork", "--mount-proc",
                             str(prog), "30"], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 5
        inner = None
        while time.monotonic() < deadline and inner is None:
            table = _process.read_process_table("/proc")
            # (the forked child has its pid namespace before it execs the probe: wait for the probe's own name, or the
            # attribution below reads the child while it is still unshare - a race seen once in CI)
            inner = next((p for p, r in table.items() if r.get("ppid") == proc.pid and r["nspid"][1:]
                          and r.get("name") == prog.name), None)
            time.sleep(0.05)
        if inner is None:
            said = proc.stderr.read1(4096).decode("utf-8", "replace").strip() if proc.poll() is not None else ""
            real_parts.missing("unshare", "no pid namespace could be made here in 5 s: %s" % (said or "no answer"))
        rec = table[inner]
        assert rec["nspid"] == [inner, 1]  # the kernel's own NSpid line: host view, then the namespace's pid 1
        # the driver of a sandbox reports the inner pid: mapped to the process here, and to the workload that
        # started it (this test, through unshare)
        res = _process.attribute_pid(1, prog.name, [os.getpid()], table)
        assert res == {"attribution": "workload", "local_pid": inner,
                       "reason": "pid 1 (pid %d here, by NSpid %d 1) is a descendant of workload pid(s) %d"
                                 % (inner, inner, os.getpid())}
        # not started by the workload: foreign, and said how it was found
        res = _process.attribute_pid(1, prog.name, [1 << 30], table)
        assert res["attribution"] == "foreign" and "by NSpid" in res["reason"]
        # two processes that are pid 1 of their namespace and carry the same name: no guess
        twin = dict(table[inner], pid=inner + 1000000)
        table[inner + 1000000] = twin
        res = _process.attribute_pid(1, prog.name, [os.getpid()], table)
        assert res["attribution"] == "unattributed" and "several processes" in res["reason"]
    finally:
        proc.kill()
        proc.wait()


def test_attribute_processes_counts_and_lists_on_real_capture():
    # the real answer of the capture, in the field order its .cmd asked for
    apps = _gpu.parse_compute_apps(_raw("nvsmi_apps.txt"), ("pid", "process_name", "used_memory", "gpu_uuid"))
    assert [(p["pid"], p["used_memory_mib"]) for p in apps["processes"]] == [(510, 1634)]
    gpus = [dict(_gpu.empty_gpu(), index=0, uuid="GPU-0afccc54-e54d-8725-94d8-2758ad8ce328", memory_used_mib=2000)]
    summ = _process.attribute_processes(gpus, apps["processes"], [], table={})
    assert summ["attribution_counts"] == {"workload": 0, "foreign": 0, "unattributed": 1}
    assert gpus[0]["foreign_processes"][0]["attribution"] == "unattributed"
    summ = _process.attribute_processes([dict(g, foreign_processes=[], foreign_memory_mib=0) for g in gpus],
                                        apps["processes"], [510], table={})
    assert summ["attribution_counts"]["workload"] == 1


# -------------------------------------------------------------- the real pid-namespace capture on the H200

NSPID = os.path.join(FIX, "2026-12-01-580.159.04-h200-nspid")


def _real_json(name):
    import json
    with open(os.path.join(NSPID, name)) as fh:
        return json.load(fh)


def test_driver_answers_in_the_callers_namespace():
    outside = _gpu.parse_compute_apps(_raw("outside_nvsmi_apps.txt", NSPID))["processes"]
    inside = _gpu.parse_compute_apps(_raw("inside_nvsmi_apps.txt", NSPID))["processes"]
    status = _process.parse_proc_status(_raw("outside_proc_status.txt", NSPID))
    assert [p["pid"] for p in outside] == [442] and [p["pid"] for p in inside] == [1]
    assert status["nspid"] == [442, 1] and status["ppid"] == 439


def test_inner_pid_from_a_container_placed_by_the_hosts_nspid():
    # the process list as nvidia-smi printed it inside the namespace (pid 1), /proc read on the machine: the
    # real status line of that process makes the table entry, its parent (unshare, 439) is the workload
    status = _process.parse_proc_status(_raw("outside_proc_status.txt", NSPID))
    table = {442: dict(status, argv0="python3"), 439: {"pid": 439, "ppid": 431, "nspid": [439], "name": "unshare"}}
    inside = _gpu.parse_compute_apps(_raw("inside_nvsmi_apps.txt", NSPID))["processes"]
    res = _process.attribute_pid(inside[0]["pid"], inside[0]["process_name"], [439], table)
    assert res["attribution"] == "workload" and res["local_pid"] == 442 and "by NSpid 442 1" in res["reason"]
    res = _process.attribute_pid(inside[0]["pid"], inside[0]["process_name"], [], table)
    assert res["attribution"] == "foreign" and res["local_pid"] == 442


def test_real_gathers_on_both_sides_of_the_namespace():
    out = _real_json("gather_outside_unshare.json")
    assert [(p["pid"], p["attribution"], p["local_pid"]) for p in out["processes"]] == [(442, "workload", 442)]
    assert out["driver_in_use"]["processes"][0]["libcuda_path"] == LIB and out["driver_in_use"]["mismatch"] is False
    none = _real_json("gather_outside_none.json")
    assert none["processes"][0]["attribution"] == "foreign"
    inside = _real_json("gather_inside_own1.json")
    assert [(p["pid"], p["attribution"]) for p in inside["processes"]] == [(1, "workload")]
    assert inside["driver_in_use"]["processes"][0]["source"] == "workload"
