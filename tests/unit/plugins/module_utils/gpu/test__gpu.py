# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU parsers against the real H200 captures in tests/fixtures (driver 580.159.04, 2026-11-29).

Faulty inputs (truncated lines, undecodable bytes) are made at test time by altering copies of real captures;
each such test says so. The one text that is not a capture is the NVML mismatch line, see its test.
"""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.gpu import _gpu, _process

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
IDLE = "h200-1gpu"
BUSY = "h200-1gpu-busy"


def capture(folder, name):
    """(argv words, text, rc) of a real capture."""
    base = os.path.join(FIXTURES, folder, name)
    with open(base + ".cmd") as fh:
        words = fh.read().split()
    with open(base + ".txt", "rb") as fh:
        text = fh.read().decode("utf-8")
    with open(base + ".meta") as fh:
        rc = int([w for w in fh.read().split() if w.startswith("rc=")][0][3:])
    return words, text, rc


def query_fields(words):
    """The field list of a --query-gpu / --query-compute-apps command line."""
    for w in words:
        if w.startswith(("--query-gpu=", "--query-compute-apps=")):
            return w.split("=", 1)[1].split(",")
    raise AssertionError("no query in %r" % words)


# ------------------------------------------------------------------------------------------------ field names

def test_every_queried_field_is_accepted_by_the_real_driver():
    with open(os.path.join(FIXTURES, BUSY, "all_fields.list")) as fh:
        accepted = set(fh.read().strip().split(","))
    words, text, rc = capture(BUSY, "all_fields_query")
    assert rc == 0 and set(query_fields(words)) == accepted  # the driver answered all of them in one call
    assert set(_gpu.GPU_QUERY_FIELDS) <= accepted, set(_gpu.GPU_QUERY_FIELDS) - accepted
    assert len(set(_gpu.GPU_QUERY_FIELDS)) == len(_gpu.GPU_QUERY_FIELDS)


def test_fallback_fields_are_the_real_busy_query_and_apps_fields_the_real_apps_query():
    assert list(_gpu.GPU_QUERY_SAFE_FIELDS) == query_fields(capture(BUSY, "busy_query")[0])
    assert list(_gpu.APPS_FIELDS) == query_fields(capture(BUSY, "busy_apps_noheader")[0])
    assert list(_gpu.APPS_FIELDS) == query_fields(capture(IDLE, "nvsmi_apps")[0])


def test_help_text_lists_the_aliases_used():
    _words, text, _rc = capture(IDLE, "nvsmi_help_query")
    for alias, canon in _gpu.FIELD_ALIASES.items():
        assert '"%s"' % alias in text and '"%s"' % canon in text


# ------------------------------------------------------------------------------------------------ GPU query

H200_COMMON = {"name": "NVIDIA H200", "pci_bus_id": "00000000:00:06.0", "memory_total_mib": 143771,
               "driver_version": "580.159.04", "compute_cap": "9.0", "persistence_mode": True,
               "compute_mode": "Default", "index": 0}


@pytest.mark.parametrize("folder,name,uuid,used,free", [
    (IDLE, "nvsmi_query", "GPU-28c213c1-bcca-1fbe-60ef-e9178d887fc7", 0, 143156),
    (BUSY, "busy_query", "GPU-91ad0855-a280-e24b-1e44-5e7b819cac29", 10767, 132390),
], ids=["h200-580.159.04-idle-2026-11-29", "h200-580.159.04-busy-2026-11-29"])
def test_gpu_query_captures(folder, name, uuid, used, free):
    words, text, rc = capture(folder, name)
    assert rc == 0
    out = _gpu.parse_gpu_query(text, query_fields(words))
    assert out["errors"] == []
    assert len(out["gpus"]) == 1
    gpu = out["gpus"][0]
    for key, value in H200_COMMON.items():
        assert gpu[key] == value, key
    assert gpu["uuid"] == uuid
    assert gpu["memory_used_mib"] == used
    assert gpu["memory_free_mib"] == free
    assert gpu["mig_mode"]["current"] is False
    assert gpu["mig_mode"]["pending"] is None  # not asked in these two captures


def test_gpu_query_idle_capture_ecc_clocks_power():
    words, text, _rc = capture(IDLE, "nvsmi_query")
    gpu = _gpu.parse_gpu_query(text, query_fields(words))["gpus"][0]
    assert gpu["vbios_version"] == "96.00.A5.00.1A"
    assert gpu["ecc"]["mode_current"] is True
    assert gpu["ecc"]["uncorrected_volatile_total"] == 0
    assert gpu["clocks_sm_mhz"] == 435  # asked as the alias clocks.sm
    assert gpu["clocks_max_sm_mhz"] == 1980
    assert gpu["power_draw_w"] == pytest.approx(99.64)
    assert gpu["temperature_gpu_c"] == 34 and gpu["pstate"] == "P0"
    assert gpu["memory_free_mib"] == 143156
    assert gpu["unavailable"] == {} and gpu["extra"] == {}


def _all_fields_values():
    """The real all-fields capture as {field: raw value}: header line (with units) dropped, values as printed."""
    words, text, _rc = capture(BUSY, "all_fields_query")
    fields = query_fields(words)
    rows, errors = _gpu.parse_csv("\n".join(text.splitlines()[1:]), len(fields))
    assert errors == [] and len(rows) == 1
    return dict(zip(fields, rows[0]))


def test_gpu_record_from_every_field_of_the_real_driver():
    values = _all_fields_values()
    gpu = _gpu.gpu_record(dict((f, values[f]) for f in _gpu.GPU_QUERY_FIELDS))
    assert gpu["memory_total_mib"] == 143771 and gpu["memory_used_mib"] == 10767  # "143771 MiB" with units
    assert gpu["memory_reserved_mib"] == 616
    assert gpu["mig_mode"] == {"current": False, "pending": False}
    assert gpu["ecc"] == {"mode_current": True, "mode_pending": True, "uncorrected_volatile_total": 0,
                          "uncorrected_aggregate_total": 0, "corrected_volatile_total": 0}
    assert gpu["remapped_rows"] == {"pending": False, "failure": False, "uncorrectable": 0}
    assert gpu["power_draw_w"] == pytest.approx(121.25) and gpu["power_limit_w"] == pytest.approx(700.0)
    assert gpu["pcie"] == {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16}
    assert gpu["serial"] == "1653724066798" and gpu["gpu_recovery_action"] == "None"
    # [N/A] and plain N/A (the fabric fields print it without brackets) become null, raw kept
    assert gpu["retired_pages_pending"] is None and gpu["unavailable"]["retired_pages.pending"] == "[N/A]"
    assert gpu["fabric"] == {"state": None, "status": None}
    assert gpu["unavailable"]["fabric.state"] == "N/A"
    assert gpu["platform"]["chassis_serial_number"] is None and gpu["platform"]["module_id"] == 1
    for _field, path, _kind in _gpu.GPU_FIELDS:  # every key present
        node = gpu
        for key in path:
            assert key in node
            node = node[key]


@pytest.mark.parametrize("field,marker", [
    ("display_mode", "[Requested functionality has been deprecated]"),
    ("hostname", "[N/A]"),
    ("fabric.health.summary", "N/A"),
])
def test_unavailable_markers_seen_in_the_real_capture(field, marker):
    values = _all_fields_values()
    assert values[field] == marker
    assert _gpu.is_unavailable(values[field])
    assert not _gpu.is_unavailable(values["name"])


def test_unknown_fields_land_in_extra():
    values = _all_fields_values()
    gpu = _gpu.gpu_record({"index": values["index"], "inforom.img": values["inforom.img"]})
    assert gpu["index"] == 0 and gpu["extra"] == {"inforom.img": "G520.0282.02.02"}


def test_truncated_line_is_an_error_not_a_gpu():
    # faulty input made here: a copy of the real busy_query capture cut in the middle of its line
    words, text, _rc = capture(BUSY, "busy_query")
    cut = text[:text.index("NVIDIA H200") + 8]
    out = _gpu.parse_gpu_query(cut, query_fields(words))
    assert out["gpus"] == []
    assert len(out["errors"]) == 1 and "values where 12 fields were asked" in out["errors"][0]["reason"]


def test_undecodable_bytes_do_not_break_the_row():
    # faulty input made here: two bytes that are not UTF-8 put into a copy of the real capture, decoded the way
    # the command runner decodes (errors="replace")
    words, text, _rc = capture(BUSY, "busy_query")
    raw = text.encode("utf-8").replace(b"NVIDIA H200", b"NVIDIA \xff\xfeH200")
    gpu = _gpu.parse_gpu_query(raw.decode("utf-8", errors="replace"), query_fields(words))["gpus"][0]
    assert gpu["name"] == u"NVIDIA \ufffd\ufffdH200"
    assert gpu["memory_used_mib"] == 10767


# ------------------------------------------------------------------------------------------------ processes

def test_compute_apps_busy_capture_foreign_process():
    words, text, _rc = capture(BUSY, "busy_apps_noheader")
    procs = _gpu.parse_compute_apps(text, query_fields(words))
    assert procs["errors"] == []
    assert procs["processes"] == [{"pid": 420, "process_name": "python3",
                                   "gpu_uuid": "GPU-91ad0855-a280-e24b-1e44-5e7b819cac29",
                                   "used_memory_mib": 10758, "gpu_index": None, "own": False}]
    assert 10 * 1024 - 100 < procs["processes"][0]["used_memory_mib"] < 10 * 1024 + 800  # "holding 10 GiB"


def test_compute_apps_with_header_and_units_quirk():
    # header says "used_gpu_memory [MiB]" for the field used_memory: columns go by position, header skipped
    words, text, _rc = capture(BUSY, "busy_apps")
    assert "used_gpu_memory [MiB]" in text.splitlines()[0]
    procs = _gpu.parse_compute_apps(text, query_fields(words))["processes"]
    assert [(p["pid"], p["used_memory_mib"]) for p in procs] == [(420, 10758)]


def test_compute_apps_idle_capture_is_empty():
    words, text, _rc = capture(IDLE, "nvsmi_apps")
    assert _gpu.parse_compute_apps(text, query_fields(words)) == {"processes": [], "errors": []}


@pytest.mark.parametrize("own,foreign", [([], [420]), ([420], []), ([1, 2], [420])])
def test_attribution(own, foreign):
    qwords, qtext, _rc = capture(BUSY, "busy_query")
    awords, atext, _rc = capture(BUSY, "busy_apps_noheader")
    gpus = _gpu.parse_gpu_query(qtext, query_fields(qwords))["gpus"]
    procs = _gpu.parse_compute_apps(atext, query_fields(awords))["processes"]
    summ = _process.attribute_processes(gpus, procs, own)
    assert [p["pid"] for p in gpus[0]["foreign_processes"]] == foreign
    assert gpus[0]["foreign_memory_mib"] == (10758 if foreign else 0)
    assert gpus[0]["unaccounted_memory_mib"] == 10767 - 10758
    assert procs[0]["gpu_index"] == 0 and procs[0]["own"] is (420 in own)
    assert summ["foreign_process_count"] == len(foreign)
    assert summ["gpus_with_foreign_processes"] == ([0] if foreign else [])


# ------------------------------------------------------------------------------------------------ driver

def test_smi_version_capture():
    _words, text, _rc = capture(IDLE, "nvsmi_version")
    assert _gpu.parse_smi_version(text) == {"nvidia_smi_version": "580.159.04", "nvml_version": "580.159",
                                            "driver_version": "580.159.04", "cuda_version": "13.0"}


@pytest.mark.parametrize("folder,name", [(IDLE, "nvsmi"), (BUSY, "busy_nvsmi")])
def test_smi_table_header(folder, name):
    _words, text, _rc = capture(folder, name)
    assert _gpu.parse_smi_table(text) == {"nvidia_smi_version": "580.159.04", "driver_version": "580.159.04",
                                          "cuda_version": "13.0"}


def test_proc_driver_version_open_kernel_module():
    _words, text, _rc = capture(IDLE, "proc_driver")
    out = _gpu.parse_proc_version(text)
    assert out["version"] == "580.159.04"
    assert out["flavor"] == "open"
    assert out["nvrm_line"].startswith("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64")
    assert out["gcc"] == "gcc version 15.3.0 (GCC)"


IDLE_SMI = ("nvsmi", "nvsmi_L", "nvsmi_q", "nvsmi_query", "nvsmi_version", "nvsmi_topo", "nvsmi_apps")
BUSY_SMI = ("busy_nvsmi", "busy_query", "bad_field", "q_memory_ecc")
HEALTHY_SMI_CAPTURES = [(IDLE, n) for n in IDLE_SMI] + [(BUSY, n) for n in BUSY_SMI]


@pytest.mark.parametrize("folder,name", HEALTHY_SMI_CAPTURES)
def test_no_nvml_failure_in_healthy_captures(folder, name):
    assert _gpu.detect_nvml_failure(capture(folder, name)[1]) is None


def test_nvml_mismatch_message():
    # Not a capture: no mismatched host was available. The line is the message the driver prints for it, as
    # quoted in the project brief; only its detection is tested here.
    out = _gpu.detect_nvml_failure("Failed to initialize NVML: Driver/library version mismatch\n")
    assert out["mismatch"] is True and out["reason"] == "Driver/library version mismatch"


def test_bad_field_capture_names_the_field():
    words, text, rc = capture(BUSY, "bad_field")
    assert rc == 2
    assert _gpu.BAD_FIELD_RE.search(text).group(1) == "not.a.field"
    assert _gpu.parse_gpu_query(text, query_fields(words))["gpus"] == []


# ------------------------------------------------------------------------------------------------ topology, -q

def test_topology_capture():
    _words, text, _rc = capture(IDLE, "nvsmi_topo")
    assert "\x1b[4m" in text  # the real header is underlined with ANSI escapes
    out = _gpu.parse_topology(text)
    assert out["parsed"] is True
    assert out["devices"] == ["GPU0"]
    assert out["matrix"] == {"GPU0": {"GPU0": "X"}}
    assert out["affinity"] == {"GPU0": {"cpu_affinity": "0-15", "numa_affinity": "0", "gpu_numa_id": None}}
    assert out["nics"] == {}


def test_topology_of_non_topology_text_is_not_parsed():
    assert _gpu.parse_topology(capture(IDLE, "nvsmi_version")[1])["parsed"] is False


def test_smi_q_capture():
    _words, text, _rc = capture(IDLE, "nvsmi_q")
    out = _gpu.parse_smi_q(text)
    assert out["header"]["CUDA Version"] == "13.0" and out["header"]["Attached GPUs"] == "1"
    assert len(out["gpus"]) == 1
    gpu = out["gpus"][0]
    assert gpu["bus_id"] == "00000000:00:06.0" and gpu["Product Name"] == "NVIDIA H200"
    assert gpu["MIG Mode"] == {"Current": "Disabled", "Pending": "Disabled"}
    assert gpu["ECC Mode"]["Current"] == "Enabled"
    assert gpu["Fabric"]["State"] == "N/A"


def test_smi_q_display_subset_capture():
    _words, text, _rc = capture(BUSY, "q_memory_ecc")
    gpu = _gpu.parse_smi_q(text)["gpus"][0]
    assert gpu["FB Memory Usage"]["Used"] == "10767 MiB"
    assert gpu["ECC Errors"]["Aggregate"]["DRAM Correctable"] == "1533628"


def test_fabric_section_of_pcie_h200_is_all_na():
    out = _gpu.fabric_from_q(capture(IDLE, "nvsmi_q")[1])
    assert out == [{"bus_id": "00000000:00:06.0", "section_present": True, "state": None, "status": None,
                    "clique_id": None, "cluster_uuid": None,
                    "health": {"Summary": None, "Bandwidth": None, "Route Recovery in progress": None,
                               "Route Unhealthy": None, "Access Timeout Recovery": None,
                               "Incorrect Configuration": None, "Partition Assigned": None}}]


def test_nvlink_state_from_run_results():
    # the h200-1gpu README: "nvidia-smi nvlink -s prints nothing on this PCIe-attached GPU"
    assert _gpu.nvlink_state({"status": "ok", "stdout": "", "stderr": ""}) == "no_links"
    assert _gpu.nvlink_state({"status": "timed_out", "stdout": ""}) == "timed_out"


# ------------------------------------------------------------------------------------------------ loader, env, /dev

def test_ldconfig_capture():
    _words, text, _rc = capture(IDLE, "ldconfig")
    out = _gpu.parse_ldconfig(text)
    assert out["entries_read"] == 100
    assert [e["path"] for e in out["libcuda"]] == ["/usr/local/nvidia/lib64/libcuda.so.1", "/lib/libcuda.so.1",
                                                   "/usr/local/nvidia/lib64/libcuda.so", "/lib/libcuda.so"]
    assert [e["name"] for e in out["libnccl"]] == ["libnccl.so.2", "libnccl.so"]
    assert out["libnccl"][0]["path"] == "/lib/x86_64-linux-gnu/libnccl.so.2"
    assert len(out["libnvidia_ml"]) == 4 and out["libnvidia_ml"][0]["flags"] == "libc6,x86-64"


def test_resolve_libcuda_reads_the_version_from_the_file_name(tmp_path):
    target = tmp_path / "libcuda.so.580.159.04"
    target.write_bytes(b"")
    link = tmp_path / "libcuda.so.1"
    link.symlink_to(target.name)
    entries = [{"name": "libcuda.so.1", "flags": "", "path": str(link)},
               {"name": "libcuda.so.1", "flags": "", "path": "/lib/libcuda.so.1.not-here"}]
    assert _gpu.resolve_libcuda(entries) == [{"path": str(link), "target": str(target), "version": "580.159.04"}]


def test_visible_devices_from_the_real_environment_capture():
    env = dict(line.split("=", 1) for line in capture(IDLE, "env_gpu")[1].splitlines() if "=" in line)
    out = _gpu.visible_devices(env)
    assert out["nvidia_visible_devices"] == "0"
    assert out["nvidia_driver_capabilities"] == "compute,graphics,utility"
    assert out["cuda_visible_devices"] is None and out["cuda_visible_devices_list"] is None
    # the fail_no_devices capture ran with CUDA_VISIBLE_DEVICES set and empty: no GPU is visible
    assert _gpu.visible_devices({"CUDA_VISIBLE_DEVICES": ""})["cuda_visible_devices_list"] == []
    assert _gpu.visible_devices({"CUDA_VISIBLE_DEVICES": "0,1"})["cuda_visible_devices_list"] == ["0", "1"]


def test_device_nodes(tmp_path):
    (tmp_path / "nvidiactl").write_bytes(b"")
    (tmp_path / "null-not-listed").write_bytes(b"")
    caps = tmp_path / "nvidia-caps"
    caps.mkdir()
    (caps / "nvidia-cap1").write_bytes(b"")
    made_char = False
    if hasattr(os, "mknod"):
        try:  # a real character device like the capture's /dev/nvidia0 (195, 0), when allowed
            os.mknod(str(tmp_path / "nvidia0"), 0o666 | stat.S_IFCHR, os.makedev(195, 0))
            made_char = True
        except (OSError, PermissionError):
            pass
    out = _gpu.list_device_nodes(str(tmp_path))
    by_name = dict((os.path.relpath(n["path"], str(tmp_path)), n) for n in out)
    assert "null-not-listed" not in by_name
    assert by_name["nvidia-caps"]["type"] == "dir"
    assert by_name[os.path.join("nvidia-caps", "nvidia-cap1")]["type"] == "file"
    assert by_name["nvidiactl"]["type"] == "file" and by_name["nvidiactl"]["major"] is None
    if made_char:
        assert (by_name["nvidia0"]["type"], by_name["nvidia0"]["major"], by_name["nvidia0"]["minor"]) == ("char", 195, 0)
    assert _gpu.list_device_nodes(str(tmp_path / "absent")) == []


def test_convert_kinds():
    assert _gpu.convert("Enabled", "enabled") == (True, None)
    assert _gpu.convert("Yes", "yes") == (True, None)
    assert _gpu.convert("[Not Supported]", "int") == (None, "[Not Supported]")
    assert _gpu.convert("garbage", "int") == (None, "garbage")
