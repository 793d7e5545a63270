"""NVIDIA GPU facts of one host: parsers (pure functions on text) and :func:`gather`.

Why one file (over 1,000 lines): each section is a parser beside the gatherer step that runs its command, so a new
nvidia-smi field or driver quirk is one edit with its captured fixture. Process attribution and the driver in use
(``/proc`` readers) are in ``_process``. Standard library only, importing without Ansible, so the same code runs in
the ``gpu_facts`` module and standalone on a GPU machine with no Ansible (``tests/device/*.sh``,
``benchmarks/gpu_facts_bench.py``).

The parsers were written against real captures of an NVIDIA H200 with driver 580.159.04 (see
``tests/fixtures/h200-1gpu*``); ``topo -m`` with NVLink pairs against the two-GPU H200 capture
``tests/fixtures/2026-11-29-580.159.04-2xh200``. ``nvidia-smi nvlink -s`` (its state said), ``nvidia-imex-ctl -N``
and ``nvidia-ctk --version`` are kept raw and not parsed.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import csv
import functools
import os
import re
import stat
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.repro.vllm.plugins.module_utils.common._cmd import (
    STATUS_NOT_FOUND, STATUS_OK, STATUS_TIMED_OUT, find_binary, run_cmd, summary)
from ansible_collections.repro.vllm.plugins.module_utils.gpu._process import (
    attribute_processes, descends_from, driver_in_use, libcuda_version, read_maps_libcuda, read_process_table, read_text)

SECTIONS = ("driver", "gpus", "processes", "topology", "nvlink", "fabric", "imex", "visible_devices",
            "device_nodes", "loader", "container_toolkit")

DEFAULT_TIMEOUT = 5.0
STATUS_SKIPPED = "skipped"
RAW_LIMIT = 65536
# threads that run the commands independent of each other once nvidia-smi --version answered (at most 8 such
# commands: the query chain, compute apps, topo, nvlink, ldconfig, imex-ctl and two toolkit versions)
WORKERS = 8

DEFAULT_OPTIONS = {
    "nvidia_smi_path": None,
    "command_timeout": DEFAULT_TIMEOUT,
    "proc_root": "/proc",
    "dev_root": "/dev",
    "ldconfig_path": None,
    "imex_config_dir": "/etc/nvidia-imex",
    "own_pids": [],
    "gather": ["all"],
    "extra_query_fields": [],
    "fabric_query": "auto",
}

# (query field, place in the GPU record, converter name). Every field is one the 580 driver accepts
# (tests/fixtures/h200-1gpu-busy/all_fields.list); one --query-gpu call with all of them took 23-123 ms there.
GPU_FIELDS = (
    ("index", ("index",), "int"),
    ("uuid", ("uuid",), "str"),
    ("name", ("name",), "str"),
    ("serial", ("serial",), "str"),
    ("pci.bus_id", ("pci_bus_id",), "str"),
    ("driver_version", ("driver_version",), "str"),
    ("vbios_version", ("vbios_version",), "str"),
    ("memory.total", ("memory_total_mib",), "int"),
    ("memory.used", ("memory_used_mib",), "int"),
    ("memory.free", ("memory_free_mib",), "int"),
    ("memory.reserved", ("memory_reserved_mib",), "int"),
    ("persistence_mode", ("persistence_mode",), "enabled"),
    ("compute_mode", ("compute_mode",), "str"),
    ("compute_cap", ("compute_cap",), "str"),
    ("mig.mode.current", ("mig_mode", "current"), "enabled"),
    ("mig.mode.pending", ("mig_mode", "pending"), "enabled"),
    ("ecc.mode.current", ("ecc", "mode_current"), "enabled"),
    ("ecc.mode.pending", ("ecc", "mode_pending"), "enabled"),
    ("ecc.errors.uncorrected.volatile.total", ("ecc", "uncorrected_volatile_total"), "int"),
    ("ecc.errors.uncorrected.aggregate.total", ("ecc", "uncorrected_aggregate_total"), "int"),
    ("ecc.errors.corrected.volatile.total", ("ecc", "corrected_volatile_total"), "int"),
    ("retired_pages.pending", ("retired_pages_pending",), "yes"),
    ("remapped_rows.pending", ("remapped_rows", "pending"), "yes"),
    ("remapped_rows.failure", ("remapped_rows", "failure"), "yes"),
    ("remapped_rows.uncorrectable", ("remapped_rows", "uncorrectable"), "int"),
    ("gpu_recovery_action", ("gpu_recovery_action",), "str"),
    ("pstate", ("pstate",), "str"),
    ("temperature.gpu", ("temperature_gpu_c",), "int"),
    ("power.draw", ("power_draw_w",), "float"),
    ("power.limit", ("power_limit_w",), "float"),
    ("clocks.current.sm", ("clocks_sm_mhz",), "int"),
    ("clocks.max.sm", ("clocks_max_sm_mhz",), "int"),
    ("clocks_event_reasons.active", ("clocks_event_reasons_active",), "str"),
    ("pcie.link.gen.gpucurrent", ("pcie", "gen_current"), "int"),
    ("pcie.link.gen.max", ("pcie", "gen_max"), "int"),
    ("pcie.link.width.current", ("pcie", "width_current"), "int"),
    ("pcie.link.width.max", ("pcie", "width_max"), "int"),
    ("addressing_mode", ("addressing_mode",), "str"),
    ("c2c.mode", ("c2c_mode",), "enabled"),
    ("fabric.state", ("fabric", "state"), "str"),
    ("fabric.status", ("fabric", "status"), "str"),
    ("platform.chassis_serial_number", ("platform", "chassis_serial_number"), "str"),
    ("platform.slot_number", ("platform", "slot_number"), "int"),
    ("platform.tray_index", ("platform", "tray_index"), "int"),
    ("platform.host_id", ("platform", "host_id"), "int"),
    ("platform.module_id", ("platform", "module_id"), "int"),
)
GPU_QUERY_FIELDS = tuple(f[0] for f in GPU_FIELDS)
# The fallback when the driver refuses the full query: long-standing fields only (the same twelve as the
# real capture h200-1gpu-busy/busy_query).
GPU_QUERY_SAFE_FIELDS = ("index", "uuid", "name", "pci.bus_id", "driver_version", "memory.total", "memory.used",
                         "memory.free", "persistence_mode", "compute_mode", "mig.mode.current", "compute_cap")
# Other names the driver accepts for the same field (nvsmi_help_query: '"clocks.current.sm" or "clocks.sm"').
FIELD_ALIASES = {"clocks.sm": "clocks.current.sm", "gpu_name": "name", "gpu_uuid": "uuid", "gpu_serial": "serial",
                 "gpu_bus_id": "pci.bus_id", "clocks_throttle_reasons.active": "clocks_event_reasons.active"}
TOPO_ARGS = ("topo", "-m")
NVLINK_ARGS = ("nvlink", "-s")
IMEX_CTL = "nvidia-imex-ctl"
TOOLKIT_TOOLS = (("nvidia_ctk", "nvidia-ctk"), ("nvidia_container_cli", "nvidia-container-cli"))
# Positional: with a header, nvidia-smi names the last column "used_gpu_memory [MiB]" although the field asked
# for is "used_memory" (h200-1gpu-busy/busy_apps), so columns are never matched by header name.
APPS_FIELDS = ("pid", "process_name", "gpu_uuid", "used_memory")

TOPO_AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
BAD_FIELD_RE = re.compile(r'Field "([^"]+)" is not a valid field to query')
NVML_FAIL_RE = re.compile(r"^.*Failed to initialize NVML: *(.*?)\s*$", re.M)
SMI_FAIL_RE = re.compile(r"^.*NVIDIA-SMI has failed.*$", re.M)
NVML_LIB_RE = re.compile(r"NVML library version: *(\S+)")
MISMATCH_TEXT = "Driver/library version mismatch"
SMI_TABLE_RE = re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)")
KERNEL_VERSION_RE = re.compile(r"\s(\d+\.\d+(?:\.\d+)*)\s")
LDCONFIG_RE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(.+?)\s*$")
LOADER_LIBS = (("libcuda", "libcuda.so"), ("libnccl", "libnccl.so"), ("libnvidia_ml", "libnvidia-ml.so"))
SMI_Q_GPU_RE = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")


# ---------------------------------------------------------------------------------------------------------------
# values

def is_unavailable(raw):
    """True for a value that means "no value": empty, N/A, or any bracketed marker such as [N/A],
    [Not Supported], [Unknown Error] or [Requested functionality has been deprecated]."""
    v = (raw or "").strip()
    return v in ("", "N/A") or (v.startswith("[") and v.endswith("]"))


def _strip_unit(value, units=("MiB", "W", "MHz", "%", "C", "us")):
    for unit in units:
        if value.endswith(" " + unit):
            return value[:-len(unit) - 1]
    return value


def convert(raw, kind):
    """(value, raw_if_not_converted). Unavailable or unparsable values give None and keep the raw text."""
    v = (raw or "").strip()
    if is_unavailable(v):
        return None, v
    try:
        if kind == "int":
            return int(_strip_unit(v)), None
        if kind == "float":
            return float(_strip_unit(v)), None
        if kind == "enabled":
            return {"enabled": True, "disabled": False}[v.lower()], None
        if kind == "yes":
            return {"yes": True, "no": False}[v.lower()], None
    except (ValueError, KeyError):
        return None, v
    return v, None


def parse_csv(text, nfields):
    """Rows (lists of stripped strings) of nvidia-smi ``--format=csv,noheader`` output and the lines that do
    not have exactly ``nfields`` values (a truncated or corrupted answer) as errors."""
    rows, errors = [], []
    for lineno, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        try:
            cells = next(csv.reader([line.replace("\x00", "")], skipinitialspace=True))
        except (csv.Error, StopIteration) as exc:
            errors.append({"lineno": lineno, "line": line[:500], "reason": "not CSV: %s" % exc})
            continue
        if len(cells) != nfields:
            errors.append({"lineno": lineno, "line": line[:500],
                           "reason": "%d values where %d fields were asked" % (len(cells), nfields)})
            continue
        rows.append([c.strip() for c in cells])
    return rows, errors


# ---------------------------------------------------------------------------------------------------------------
# GPUs and processes

def _set_path(rec, path, value):
    for key in path[:-1]:
        rec = rec.setdefault(key, {})
    rec[path[-1]] = value


def empty_gpu():
    """A GPU record with every key present and null."""
    rec = {}
    for _field, path, _kind in GPU_FIELDS:
        _set_path(rec, path, None)
    rec.update(foreign_processes=[], foreign_memory_mib=0, unaccounted_memory_mib=None, unavailable={}, extra={})
    return rec


def gpu_record(values):
    """A GPU record from ``{query field: raw value}`` (field names or their aliases)."""
    spec = dict((f, (path, kind)) for f, path, kind in GPU_FIELDS)
    rec = empty_gpu()
    for field, raw in values.items():
        canon = FIELD_ALIASES.get(field, field)
        if canon not in spec:
            rec["extra"][field] = raw
            continue
        path, kind = spec[canon]
        value, kept = convert(raw, kind)
        _set_path(rec, path, value)
        if kept is not None:
            rec["unavailable"][canon] = kept
    return rec


def parse_gpu_query(text, fields):
    """GPUs from ``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits``; ``{gpus, errors}``."""
    fields = list(fields)
    rows, errors = parse_csv(text, len(fields))
    gpus = [gpu_record(dict(zip(fields, row))) for row in rows]
    return {"gpus": gpus, "errors": errors}


def parse_compute_apps(text, fields=APPS_FIELDS):
    """Processes from ``nvidia-smi --query-compute-apps=<fields> --format=csv,noheader,nounits``."""
    fields = list(fields)
    rows, errors = parse_csv(text, len(fields))
    procs = []
    for row in rows:
        values = dict(zip(fields, row))
        if values.get("pid", "").lower() == "pid":
            continue  # a header line (the --format without noheader): its names do not match the fields
        pid, _kept = convert(values.get("pid"), "int")
        mem, _kept = convert(values.get("used_memory", values.get("used_gpu_memory")), "int")
        name, _kept = convert(values.get("process_name"), "str")
        uuid, _kept = convert(values.get("gpu_uuid"), "str")
        procs.append({"pid": pid, "process_name": name, "gpu_uuid": uuid, "used_memory_mib": mem,
                      "gpu_index": None, "own": False})
    return {"processes": procs, "errors": errors}


# ---------------------------------------------------------------------------------------------------------------
# driver

def parse_smi_version(text):
    """``nvidia-smi --version``: nvidia_smi_version, nvml_version, driver_version, cuda_version (or None)."""
    keys = {"nvidia-smi version": "nvidia_smi_version", "nvml version": "nvml_version",
            "driver version": "driver_version", "cuda version": "cuda_version"}
    out = dict((v, None) for v in keys.values())
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in keys and value.strip():
            out[keys[key.strip().lower()]] = value.strip()
    return out


def parse_smi_table(text):
    """The header of the default ``nvidia-smi`` table: nvidia_smi_version, driver_version, cuda_version."""
    m = SMI_TABLE_RE.search(text or "")
    if not m:
        return {"nvidia_smi_version": None, "driver_version": None, "cuda_version": None}
    return {"nvidia_smi_version": m.group(1), "driver_version": m.group(2), "cuda_version": m.group(3)}


def parse_proc_version(text):
    """``/proc/driver/nvidia/version``: version, flavor (open/proprietary), the NVRM line, the GCC line."""
    out = {"version": None, "flavor": None, "nvrm_line": None, "gcc": None}
    for line in (text or "").splitlines():
        if line.startswith("NVRM version:") and out["nvrm_line"] is None:
            out["nvrm_line"] = line.strip()
            m = KERNEL_VERSION_RE.search(line + " ")
            out["version"] = m.group(1) if m else None
            if "Open Kernel Module" in line:
                out["flavor"] = "open"
            elif "Kernel Module" in line:
                out["flavor"] = "proprietary"
        elif line.startswith("GCC version:"):
            out["gcc"] = line.partition(":")[2].strip() or None
    return out


def detect_nvml_failure(text):
    """An NVML initialisation failure printed by nvidia-smi, or None.

    Returns ``{line, reason, mismatch, nvml_library_version}``; ``mismatch`` is True for
    "Failed to initialize NVML: Driver/library version mismatch"."""
    text = text or ""
    m = NVML_FAIL_RE.search(text)
    if m:
        lib = NVML_LIB_RE.search(text)
        return {"line": m.group(0).strip(), "reason": m.group(1) or None, "mismatch": MISMATCH_TEXT in m.group(1),
                "nvml_library_version": lib.group(1) if lib else None}
    m = SMI_FAIL_RE.search(text)
    if m:
        return {"line": m.group(0).strip(), "reason": m.group(0).strip(), "mismatch": False,
                "nvml_library_version": None}
    return None


# ---------------------------------------------------------------------------------------------------------------
# topology, -q sections, fabric

def parse_topology(text):
    """``nvidia-smi topo -m``: devices (column labels), matrix {row: {column: link}}, affinity per GPU row
    (cpu_affinity, numa_affinity, gpu_numa_id) and the NIC legend. Empty cells are dropped before the values
    are lined up with the header, since the driver writes an extra tab before "GPU NUMA ID" in data rows."""
    out = {"devices": [], "matrix": {}, "affinity": {}, "nics": {}, "parsed": False}
    lines = ANSI_RE.sub("", text or "").splitlines()
    header_at = None
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.split("\t") if c.strip()]
        if line[:1] in ("\t", " ") and cells and cells[0].startswith(("GPU", "NIC")):
            header_at, header = i, cells
            break
    if header_at is None:
        return out
    devices = [c for c in header if c not in TOPO_AFFINITY_COLUMNS]
    extra = [c for c in header if c in TOPO_AFFINITY_COLUMNS]
    out["devices"] = devices
    for line in lines[header_at + 1:]:
        if not line.strip():
            break
        cells = [c.strip() for c in line.split("\t")]
        label, values = cells[0], [c for c in cells[1:] if c]
        if not label or len(values) < len(devices):
            continue
        out["matrix"][label] = dict(zip(devices, values[:len(devices)]))
        rest = values[len(devices):]
        if rest and len(rest) == len(extra):
            aff = dict(zip(extra, rest))  # cpu_affinity, numa_affinity, gpu_numa_id
            out["affinity"][label] = dict((c.lower().replace(" ", "_"), _na(aff.get(c))) for c in TOPO_AFFINITY_COLUMNS)
    in_nic_legend = False
    for line in lines:
        if line.strip() == "NIC Legend:":
            in_nic_legend = True
            continue
        if in_nic_legend:
            m = re.match(r"^\s*(NIC\d+):\s*(\S+)\s*$", line)
            if m:
                out["nics"][m.group(1)] = m.group(2)
            elif line.strip():
                in_nic_legend = False
    out["parsed"] = bool(out["matrix"])
    return out


def _q_put(parent, key, value):
    if key in parent:
        if not isinstance(parent[key], list):
            parent[key] = [parent[key]]
        parent[key].append(value)
    else:
        parent[key] = value


def parse_smi_q(text):
    """``nvidia-smi -q`` (or ``-q -d ...``) as nested dicts by indentation: ``{header: {...}, gpus: [...]}``,
    each GPU with its ``bus_id``. Keys repeated under one parent become lists."""
    header, gpus = {}, []
    stack = [(-1, header)]
    for line in (text or "").splitlines():
        if not line.strip() or line.lstrip().startswith("=="):
            continue
        indent = len(line) - len(line.lstrip(" "))
        s = line.strip()
        m = SMI_Q_GPU_RE.match(s)
        if indent == 0 and m:
            gpu = {"bus_id": m.group(1)}
            gpus.append(gpu)
            stack = [(-1, header), (0, gpu)]
            continue
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        key, sep, value = s.partition(":")
        if sep:
            _q_put(parent, key.strip(), value.strip())
        else:
            child = {}
            _q_put(parent, s, child)
            stack.append((indent, child))
    return {"header": header, "gpus": gpus}


def _na(value):
    return None if not isinstance(value, str) or is_unavailable(value) else value


def fabric_from_q(text):
    """The "Fabric" section of each GPU in ``nvidia-smi -q``: bus_id, state, status, clique_id, cluster_uuid,
    health (a dict of its lines). A GPU without the section gets ``section_present: False``."""
    out = []
    for gpu in parse_smi_q(text)["gpus"]:
        fab = gpu.get("Fabric")
        rec = {"bus_id": gpu["bus_id"], "section_present": isinstance(fab, dict), "state": None, "status": None,
               "clique_id": None, "cluster_uuid": None, "health": {}}
        if isinstance(fab, dict):
            rec.update(state=_na(fab.get("State")), status=_na(fab.get("Status")), clique_id=_na(fab.get("CliqueId")),
                       cluster_uuid=_na(fab.get("ClusterUUID")))
            health = fab.get("Health")
            if isinstance(health, dict):
                rec["health"] = dict((k, _na(v)) for k, v in health.items() if isinstance(v, str))
        out.append(rec)
    return out


def nvlink_state(result):
    """State of ``nvidia-smi nvlink -s`` from its run result: no_links (exit 0, nothing printed: a PCIe GPU),
    reported (exit 0 with output, kept raw), or the run status (failed, timed_out, not_found, skipped)."""
    if result.get("status") != STATUS_OK:
        return result.get("status") or "error"
    return "reported" if (result.get("stdout") or "").strip() else "no_links"


# ---------------------------------------------------------------------------------------------------------------
# loader, device nodes, environment

def parse_ldconfig(text):
    """``ldconfig -p``: the libcuda, libnccl and libnvidia-ml entries ({name, flags, path}) and how many
    library lines were read."""
    out = dict((key, []) for key, _prefix in LOADER_LIBS)
    count = 0
    for line in (text or "").splitlines():
        m = LDCONFIG_RE.match(line)
        if not m:
            continue
        count += 1
        name = m.group(1)
        for key, prefix in LOADER_LIBS:
            if name == prefix or name.startswith(prefix + "."):
                out[key].append({"name": name, "flags": m.group(2), "path": m.group(3)})
    out["entries_read"] = count
    return out


def resolve_libcuda(entries):
    """For each libcuda entry whose file exists here, the file it resolves to and the version in its name
    (libcuda.so.1 -> libcuda.so.580.159.04 gives 580.159.04). Entries whose path does not exist are skipped."""
    out = []
    for ent in entries:
        path = ent.get("path") or ""
        if not os.path.exists(path):
            continue
        target = os.path.realpath(path)
        out.append({"path": path, "target": target, "version": libcuda_version(target)})
    return out


def _node(path):
    try:
        st = os.lstat(path)
    except OSError as exc:
        return {"path": path, "type": "error", "major": None, "minor": None, "mode": None, "error": str(exc)}
    mode = st.st_mode
    kind = ("char" if stat.S_ISCHR(mode) else "block" if stat.S_ISBLK(mode) else "dir" if stat.S_ISDIR(mode)
            else "link" if stat.S_ISLNK(mode) else "file" if stat.S_ISREG(mode) else "other")
    dev = kind in ("char", "block")
    return {"path": path, "type": kind, "major": os.major(st.st_rdev) if dev else None,
            "minor": os.minor(st.st_rdev) if dev else None, "mode": "%04o" % stat.S_IMODE(mode)}


def list_device_nodes(dev_root):
    """``<dev_root>/nvidia*`` and, for folders such as nvidia-caps and nvidia-caps-imex-channels, their entries."""
    try:
        names = sorted(n for n in os.listdir(dev_root) if n.startswith("nvidia"))
    except OSError:
        return []
    out = []
    for name in names:
        path = os.path.join(dev_root, name)
        rec = _node(path)
        out.append(rec)
        if rec["type"] == "dir":
            try:
                children = sorted(os.listdir(path))
            except OSError:
                children = []
            out.extend(_node(os.path.join(path, c)) for c in children)
    return out


def visible_devices(environ):
    """The variables that decide which GPUs a process sees, from ``environ`` (None when unset)."""
    out = {}
    for var in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CUDA_DEVICE_ORDER",
                "NVIDIA_IMEX_CHANNELS"):
        out[var.lower()] = environ.get(var)
    cvd = out["cuda_visible_devices"]
    # an empty CUDA_VISIBLE_DEVICES hides every GPU (h200-1gpu/fail_no_devices); unset shows them all
    out["cuda_visible_devices_list"] = None if cvd is None else [d.strip() for d in cvd.split(",") if d.strip()]
    return out


# ---------------------------------------------------------------------------------------------------------------
# gathering

class _Runner:
    """Runs commands through run_cmd, keeps their summaries, and stops calling nvidia-smi after it hung once.

    :meth:`prefetch` runs commands that do not depend on each other at once, on a few threads, and keeps their
    results unrecorded; :meth:`run` then hands out a prefetched result instead of running the command again and
    records it there, so the records come in the order the gathering code asks for them, whatever finished
    first. Only :meth:`prefetch` uses threads; everything it shares with them is the hung flag, under a lock."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.commands = []
        self.timed_out = []
        self.not_found = []
        self.skipped = []
        self.smi_hung = None  # the first nvidia-smi call that timed out, in the order of the records
        self._started_hung = None  # the first nvidia-smi call that timed out, in time (set by prefetch's threads)
        self._lock = threading.Lock()
        self._ready = {}

    def missing(self, name, msg):
        self.not_found.append(name)
        self.commands.append({"cmd": [name], "rc": None, "status": STATUS_NOT_FOUND, "duration_ms": 0,
                              "timeout": self.timeout, "truncated": False, "msg": msg})

    def _hung(self):
        with self._lock:
            return self.smi_hung or self._started_hung

    def _skip(self, argv, hung):
        return {"cmd": list(argv), "rc": None, "status": STATUS_SKIPPED, "duration_ms": 0, "timeout": self.timeout,
                "truncated": False, "stdout": "", "stderr": "",
                "msg": "not run: '%s' timed out earlier in this task, and a wedged driver answers no later call"
                       % hung}

    def run(self, argv, smi=False):
        queued = self._ready.get(tuple(argv))
        if queued:
            res = queued.pop(0)[0]  # it ran in prefetch: recorded here, in this call's place
        else:
            hung = self._hung() if smi else None
            if hung:
                res = self._skip(argv, hung)
                self.commands.append(summary(res))
                self.skipped.append(" ".join(argv))
                return res
            res = run_cmd(argv, timeout=self.timeout)
        self.commands.append(summary(res))
        if res["status"] == STATUS_TIMED_OUT:
            self.timed_out.append(" ".join(res["cmd"]))
            if smi and not self.smi_hung:
                self.smi_hung = " ".join(res["cmd"])
        elif res["status"] == STATUS_NOT_FOUND:
            self.not_found.append(res["cmd"][0])
        return res

    def prefetch(self, jobs, workers=WORKERS):
        """Run ``jobs`` at once on up to ``workers`` threads. A job is ``(func, args)``; ``func(start, *args)``
        runs its commands one after another with ``start(argv, smi=False)``, which runs one through run_cmd and
        returns its result. Once an nvidia-smi call has timed out, ``start`` starts no further one: it returns a
        skipped result and keeps it nowhere, so that :meth:`run` records the skip in its own place. The results
        wait, in the order of the jobs, for :meth:`run`."""
        if not jobs or workers < 1:
            return
        done = [[] for _job in jobs]

        def start(results, argv, smi=False):
            if smi:
                hung = self._hung()
                if hung:
                    return self._skip(argv, hung)
            res = run_cmd(argv, timeout=self.timeout)
            if smi and res["status"] == STATUS_TIMED_OUT:
                with self._lock:
                    self._started_hung = self._started_hung or " ".join(res["cmd"])
            results.append((res, smi))
            return res

        def work(func, args, results):
            try:
                func(functools.partial(start, results), *args)
            except Exception:  # pylint: disable=broad-except
                pass  # what it did not run, run() runs when the gathering asks for it, under its own guard

        with ThreadPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
            for (func, args), results in zip(jobs, done):
                pool.submit(work, func, args, results)
        for results in done:
            for res, smi in results:
                self._ready.setdefault(tuple(res["cmd"]), []).append((res, smi))

    def settle(self):
        """Record what ran in prefetch but was never asked for (a section left out after the GPU query failed
        to reach NVML), in the order of the jobs."""
        for key in list(self._ready):
            while self._ready[key]:
                self.run(list(key), smi=self._ready[key][0][1])
        self._ready = {}


def _first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:500]
    return None


def _out(res):
    return (res.get("stdout") or "") + (res.get("stderr") or "")


def empty_facts():
    """The fact dict with every key present and nothing detected."""
    return {
        "present": False,
        "reason": None,
        "nvidia_smi_path": None,
        "gathered": [],
        "driver": {"userspace_version": None, "nvml_version": None, "reported_version": None,
                   "kernel_module_version": None, "kernel_module_flavor": None, "kernel_module_line": None,
                   "kernel_module_source": None, "cuda_driver_version": None, "cuda_driver_version_source": None,
                   "nvml_error": None, "mismatch": False, "mismatch_checked": False, "mismatch_evidence": []},
        "driver_in_use": driver_in_use(None, [], None, []),
        "gpu_count": 0,
        "gpus": [],
        "gpu_query": {"status": None, "fields": [], "fallback_used": False, "fallback_reason": None,
                      "rejected_field": None, "errors": []},
        "processes": [],
        "processes_summary": {"status": None, "process_count": 0, "foreign_process_count": 0,
                              "foreign_memory_mib": 0, "gpus_with_foreign_processes": [],
                              "unattributed_processes": [], "own_pids": [], "errors": []},
        "topology": {"status": None, "raw": None, "devices": [], "matrix": {}, "affinity": {}, "nics": {},
                     "parsed": False},
        "nvlink": {"status": None, "state": None, "raw": None},
        "fabric": {"status": None, "source": None, "state_reported": False, "attached": None, "cliques": [],
                   "gpus": []},
        "imex": {"installed": False, "daemon_path": None, "ctl_path": None, "config_dir": None,
                 "config_present": False, "nodes_config_present": False, "nodes_config_raw": None,
                 "channels": [], "ctl_status": None, "ctl_output": None},
        "visible_devices": visible_devices({}),
        "device_nodes": [],
        "loader": {"status": None, "ldconfig_path": None, "libcuda": [], "libnccl": [], "libnvidia_ml": [],
                   "libcuda_resolved": [], "entries_read": 0},
        "container_toolkit": {"nvidia_ctk": {"path": None, "status": None, "version_line": None},
                              "nvidia_container_cli": {"path": None, "status": None, "version_line": None}},
        "commands": [],
        "timed_out": [],
        "not_found": [],
        "skipped": [],
        "errors": [],
        "duration_ms": 0,
    }


def _wanted(gather_opt):
    items = list(gather_opt or ["all"])
    if "all" in items:
        return set(SECTIONS)
    unknown = [s for s in items if s not in SECTIONS]
    if unknown:
        raise ValueError("unknown gather section(s) %s; choose from all, %s"
                         % (", ".join(unknown), ", ".join(SECTIONS)))
    return set(items) | {"driver"}


def _query_argv(smi, fields):
    return [smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]


def _apps_argv(smi):
    return [smi, "--query-compute-apps=" + ",".join(APPS_FIELDS), "--format=csv,noheader,nounits"]


def _query_refused(res):
    """True when the driver answered the --query-gpu call with a refusal (no hang, skip, missing binary or NVML
    failure): the cue for the fallback to the safe fields."""
    return (res["status"] not in (STATUS_OK, STATUS_TIMED_OUT, STATUS_SKIPPED, STATUS_NOT_FOUND)
            and not detect_nvml_failure(_out(res)))


def _query_gpus(run, smi, fields):
    """Run the --query-gpu call, falling back once to the safe field set when the driver refuses it."""
    info = {"status": None, "fields": list(fields), "fallback_used": False, "fallback_reason": None,
            "rejected_field": None, "errors": []}
    res = run(_query_argv(smi, fields), smi=True)
    info["status"] = res["status"]
    if _query_refused(res):
        text = _out(res)
        bad = BAD_FIELD_RE.search(text)
        info["rejected_field"] = bad.group(1) if bad else None
        info["fallback_reason"] = "the full --query-gpu call ended %s (rc %s): %s" % (
            res["status"], res.get("rc"), _first_line(text) or "no output")
        fields = list(GPU_QUERY_SAFE_FIELDS)
        info.update(fields=fields, fallback_used=True)
        res = run(_query_argv(smi, fields), smi=True)
        info["status"] = res["status"]
    parsed = {"gpus": [], "errors": []}
    if res["status"] == STATUS_OK:
        parsed = parse_gpu_query(res["stdout"], fields)
    info["errors"] = parsed["errors"]
    return info, parsed["gpus"], res


def _fabric(facts, run, smi, mode):
    fab = facts["fabric"]
    per_gpu = [{"index": g.get("index"), "uuid": g.get("uuid"), "bus_id": g.get("pci_bus_id"),
                "state": g["fabric"]["state"], "status": g["fabric"]["status"], "clique_id": None,
                "cluster_uuid": None, "health": {}} for g in facts["gpus"]]
    fab["gpus"] = per_gpu
    fab["source"] = "query-gpu" if per_gpu else None
    fab["state_reported"] = any(g["state"] for g in per_gpu)
    fab["status"] = facts["gpu_query"]["status"]
    if mode == "always" or (mode == "auto" and fab["state_reported"]):
        # clique and cluster UUID come only from the -q "Fabric" section: this driver refuses -q -d FABRIC
        # ("Failed to parse --display/-d flags", h200-1gpu README), so the whole -q is read
        res = run([smi, "-q"], smi=True)
        fab["status"] = res["status"]
        if res["status"] == STATUS_OK:
            fab["source"] = "nvidia-smi -q"
            by_bus = dict((_norm_bus(r["bus_id"]), r) for r in fabric_from_q(res["stdout"]))
            for g in per_gpu:
                q = by_bus.get(_norm_bus(g["bus_id"] or ""))
                if q:
                    g.update(state=q["state"] or g["state"], status=q["status"] or g["status"],
                             clique_id=q["clique_id"], cluster_uuid=q["cluster_uuid"], health=q["health"])
            fab["state_reported"] = any(g["state"] for g in per_gpu)
    if per_gpu and not fab["state_reported"]:
        fab["attached"] = False  # all N/A: a PCIe or non-NVSwitch GPU (compat.md 4.2)
    elif any(g["cluster_uuid"] for g in per_gpu):
        fab["attached"] = all((g["state"] or "").lower() == "completed" and (g["status"] or "").lower() == "success"
                              and g["cluster_uuid"] and g["cluster_uuid"].strip("0-") for g in per_gpu)
    cliques = []
    for g in per_gpu:
        key = {"cluster_uuid": g["cluster_uuid"], "clique_id": g["clique_id"]}
        if (g["cluster_uuid"] or g["clique_id"]) and key not in cliques:
            cliques.append(key)
    fab["cliques"] = cliques


def _norm_bus(bus_id):
    """00000000:00:06.0 and 0000:00:06.0 name the same device."""
    dom, _sep, rest = (bus_id or "").lower().partition(":")
    return "%s:%s" % (dom[-4:], rest) if rest else dom


def _imex(facts, run, opts):
    imex = facts["imex"]
    daemon = find_binary("nvidia-imex")
    ctl = find_binary(IMEX_CTL)
    cfg_dir = opts["imex_config_dir"]
    imex.update(daemon_path=daemon, ctl_path=ctl, config_dir=cfg_dir,
                config_present=os.path.isfile(os.path.join(cfg_dir, "config.cfg")),
                nodes_config_present=os.path.isfile(os.path.join(cfg_dir, "nodes_config.cfg")))
    imex["nodes_config_raw"] = read_text(os.path.join(cfg_dir, "nodes_config.cfg")) if imex[
        "nodes_config_present"] else None
    chan_dir = os.path.join(opts["dev_root"], "nvidia-caps-imex-channels")
    imex["channels"] = sorted(os.listdir(chan_dir)) if os.path.isdir(chan_dir) else []
    imex["installed"] = bool(daemon or ctl)
    if ctl:
        # no capture of this output exists in the project yet: kept raw, not parsed
        res = run([ctl, "-N"])
        imex["ctl_status"] = res["status"]
        imex["ctl_output"] = _out(res)[:RAW_LIMIT]
    else:
        imex["ctl_status"] = STATUS_NOT_FOUND


def _toolkit(facts, run):
    for key, name in TOOLKIT_TOOLS:
        path = find_binary(name)
        rec = facts["container_toolkit"][key]
        rec["path"] = path
        if not path:
            rec["status"] = STATUS_NOT_FOUND
            continue
        res = run([path, "--version"])
        rec["status"] = res["status"]
        rec["version_line"] = _first_line(_out(res))  # no capture of this output yet: first line, raw


def _smi_chain(start, smi, fields, table):
    """The nvidia-smi calls of gather() that wait for each other, as one prefetch job: the GPU query (``fields``;
    None when no section needs it) with its fallback, then the default table when ``table`` (--version printed
    no CUDA version) unless the query failed on NVML: the calls and conditions of :func:`_query_gpus` and gather()."""
    res = None
    if fields:
        res = start(_query_argv(smi, fields), smi=True)
        if _query_refused(res):
            res = start(_query_argv(smi, GPU_QUERY_SAFE_FIELDS), smi=True)
    if table and not (res and res["status"] != STATUS_OK and detect_nvml_failure(_out(res))):
        start([smi], smi=True)


def _one_command(start, argv, smi):
    start(argv, smi=smi)


def _prefetch_jobs(want, opts, smi, query_fields, table):
    """The commands of gather() that need nothing but the probe's answer, as :meth:`_Runner.prefetch` jobs in the
    order gather() asks for their results. ``smi`` is None when no nvidia-smi call may start (none found, the probe
    hung or failed on NVML); the fabric's ``-q`` is not here: whether it runs depends on the GPUs found."""
    jobs = []
    if smi:
        if query_fields or table:
            jobs.append((_smi_chain, (smi, query_fields, table)))
        for section, argv in (("processes", _apps_argv(smi)), ("topology", [smi, *TOPO_ARGS]),
                              ("nvlink", [smi, *NVLINK_ARGS])):
            if section in want:
                jobs.append((_one_command, (argv, True)))
    tools = []
    if "loader" in want:
        tools.append((_ldconfig_binary(opts["ldconfig_path"]), "-p"))
    if "imex" in want:
        tools.append((find_binary(IMEX_CTL), "-N"))
    if "container_toolkit" in want:
        tools.extend((find_binary(name), "--version") for _key, name in TOOLKIT_TOOLS)
    jobs.extend((_one_command, ([path, arg], False)) for path, arg in tools if path)
    return jobs


def _guard(facts, section, func, *args):
    try:
        func(*args)
    except Exception as exc:  # pylint: disable=broad-except
        facts["errors"].append({"section": section, "error": "%s: %s" % (type(exc).__name__, exc)})


def gather(options=None, workers=WORKERS):
    """Collect the GPU facts of this host; never raises for a missing, failing or hung tool.

    ``options`` keys (all optional, see DEFAULT_OPTIONS): nvidia_smi_path, command_timeout, proc_root, dev_root,
    ldconfig_path, imex_config_dir, own_pids, gather, extra_query_fields, fabric_query (auto, always, never).
    Raises ValueError only for an unknown section name in ``gather``.

    ``nvidia-smi --version`` runs first and alone: the probe. When it answered (no timeout, no NVML failure), the
    commands that need nothing else run at once on up to ``workers`` threads (see :func:`_prefetch_jobs`); a
    wedged driver thus gets one nvidia-smi process, never several. Their results are then read in the order of
    the code below, so the facts and the order of ``commands`` are those of one command after another
    (``workers=0``, which the tests compare with).
    """
    opts = dict(DEFAULT_OPTIONS)
    opts.update(dict((k, v) for k, v in (options or {}).items() if v is not None))
    want = _wanted(opts["gather"])
    start = time.monotonic()
    runner = _Runner(float(opts["command_timeout"]))
    facts = empty_facts()
    tables = {}
    facts["gathered"] = [s for s in SECTIONS if s in want]
    drv = facts["driver"]

    # cheap first: environment, files under /proc and /dev
    if "visible_devices" in want:
        facts["visible_devices"] = visible_devices(os.environ)
    proc_version = os.path.join(opts["proc_root"], "driver", "nvidia", "version")
    kernel_text = read_text(proc_version)
    if kernel_text is not None:
        kv = parse_proc_version(kernel_text)
        drv.update(kernel_module_version=kv["version"], kernel_module_flavor=kv["flavor"],
                   kernel_module_line=kv["nvrm_line"], kernel_module_source=proc_version)
    if "device_nodes" in want:
        facts["device_nodes"] = list_device_nodes(opts["dev_root"])

    smi = find_binary("nvidia-smi", explicit=opts["nvidia_smi_path"])
    facts["nvidia_smi_path"] = smi
    nvml = None
    version_ok = False
    if not smi:
        if opts["nvidia_smi_path"]:
            smi_missing = "nvidia_smi_path %s is not an executable file" % opts["nvidia_smi_path"]
        else:
            smi_missing = "nvidia-smi not found on PATH or in /usr/bin, /usr/sbin, /bin, /sbin"
        runner.missing(opts["nvidia_smi_path"] or "nvidia-smi", smi_missing)
    else:
        res = runner.run([smi, "--version"], smi=True)
        if res["status"] == STATUS_OK:
            version_ok = True
            v = parse_smi_version(res["stdout"])
            drv.update(userspace_version=v["nvidia_smi_version"], nvml_version=v["nvml_version"],
                       reported_version=v["driver_version"], cuda_driver_version=v["cuda_version"])
            if v["cuda_version"]:
                drv["cuda_driver_version_source"] = "nvidia-smi --version"
        else:
            nvml = detect_nvml_failure(_out(res))

    query_fields = list(GPU_QUERY_FIELDS) + [f for f in opts["extra_query_fields"] if f not in GPU_QUERY_FIELDS]
    probe_answered = bool(smi) and not nvml and not runner.smi_hung
    runner.prefetch(_prefetch_jobs(want, opts, smi if probe_answered else None,
                                   query_fields if want & {"gpus", "processes", "fabric"} else None,
                                   not drv["cuda_driver_version"]), workers)

    if smi:
        if want & {"gpus", "processes", "fabric"} and not nvml:
            info, gpus, qres = _query_gpus(runner.run, smi, query_fields)
            facts["gpu_query"] = info
            facts["gpus"] = gpus
            facts["gpu_count"] = len(gpus)
            if qres["status"] != STATUS_OK:
                nvml = nvml or detect_nvml_failure(_out(qres))
            if gpus and not drv["reported_version"]:
                drv["reported_version"] = gpus[0]["driver_version"]

        if not drv["cuda_driver_version"] and not nvml and not runner.smi_hung:
            # older nvidia-smi --version prints no CUDA line; the default table header always has it
            res = runner.run([smi], smi=True)
            if res["status"] == STATUS_OK:
                t = parse_smi_table(res["stdout"])
                if t["cuda_version"]:
                    drv.update(cuda_driver_version=t["cuda_version"], cuda_driver_version_source="nvidia-smi")
                drv["userspace_version"] = drv["userspace_version"] or t["nvidia_smi_version"]
                drv["reported_version"] = drv["reported_version"] or t["driver_version"]
            else:
                nvml = nvml or detect_nvml_failure(_out(res))

        if "processes" in want and not nvml:
            _guard(facts, "processes", _processes, facts, runner.run, smi, opts["own_pids"], opts["proc_root"], tables)
        if "topology" in want and not nvml:
            _guard(facts, "topology", _topology, facts, runner.run, smi)
        if "nvlink" in want and not nvml:
            res = runner.run([smi, *NVLINK_ARGS], smi=True)
            facts["nvlink"] = {"status": res["status"], "state": nvlink_state(res), "raw": _out(res)[:RAW_LIMIT]}
        if "fabric" in want and not nvml:
            _guard(facts, "fabric", _fabric, facts, runner.run, smi, opts["fabric_query"])

    if "loader" in want:
        _guard(facts, "loader", _loader, facts, runner, opts["ldconfig_path"])
    _guard(facts, "driver_in_use", _driver_in_use, facts, opts, tables)
    if "imex" in want:
        _guard(facts, "imex", _imex, facts, runner.run, opts)
    if "container_toolkit" in want:
        _guard(facts, "container_toolkit", _toolkit, facts, runner.run)

    runner.settle()
    _verdict(facts, nvml, version_ok, smi, proc_version, runner)
    facts.update(commands=runner.commands, timed_out=runner.timed_out, not_found=runner.not_found,
                 skipped=runner.skipped, duration_ms=int((time.monotonic() - start) * 1000))
    return facts


def _processes(facts, run, smi, own_pids, proc_root, tables):
    summ = facts["processes_summary"]
    summ["own_pids"] = sorted(set(int(p) for p in own_pids or ()))
    res = run(_apps_argv(smi), smi=True)
    summ["status"] = res["status"]
    if res["status"] != STATUS_OK:
        return
    parsed = parse_compute_apps(res["stdout"])
    facts["processes"] = parsed["processes"]
    table = _table(tables, proc_root) if parsed["processes"] else None
    summ.update(attribute_processes(facts["gpus"], parsed["processes"], own_pids, table))
    summ["errors"] = parsed["errors"]


def _table(tables, proc_root):
    """The process table, read once per gather()."""
    if "table" not in tables:
        tables["table"] = read_process_table(proc_root)
    return tables["table"]


MAPS_PROCESS_LIMIT = 64


def _driver_in_use(facts, opts, tables):
    """Which libcuda the workload's processes (own_pids and their descendants) and every compute process placed
    here mapped, compared with the kernel module and the loader cache."""
    own = set(int(p) for p in opts["own_pids"] or ())
    pids = []
    if own or facts["processes"]:
        table = _table(tables, opts["proc_root"])
        for pid in sorted(table):
            if descends_from(pid, own, table):
                pids.append((pid, "workload"))
        for proc in facts["processes"]:
            lpid = proc.get("local_pid")
            if lpid is not None and lpid not in [p for p, _s in pids]:
                pids.append((lpid, "compute_process"))
    maps = []
    for pid, source in pids[:MAPS_PROCESS_LIMIT]:
        libs, err = read_maps_libcuda(opts["proc_root"], pid)
        maps.append({"pid": pid, "source": source, "libcuda": libs,
                     "error": err if source == "compute_process" or pid in own else None})
    drv = facts["driver"]
    facts["driver_in_use"] = driver_in_use(drv["kernel_module_version"], facts["loader"]["libcuda_resolved"],
                                           drv["userspace_version"], maps)
    facts["driver_in_use"]["processes_truncated"] = len(pids) > MAPS_PROCESS_LIMIT


def _topology(facts, run, smi):
    res = run([smi, *TOPO_ARGS], smi=True)
    topo = facts["topology"]
    topo["status"] = res["status"]
    topo["raw"] = _out(res)[:RAW_LIMIT] if res["status"] != STATUS_SKIPPED else None
    if res["status"] == STATUS_OK:
        topo.update(parse_topology(res["stdout"]))


def _ldconfig_binary(explicit):
    return find_binary("ldconfig", explicit=explicit, extra_dirs=("/sbin", "/usr/sbin"))


def _loader(facts, runner, explicit):
    ldconfig = _ldconfig_binary(explicit)
    loader = facts["loader"]
    loader["ldconfig_path"] = ldconfig
    if not ldconfig:
        loader["status"] = STATUS_NOT_FOUND
        runner.missing(explicit or "ldconfig", "%s is not an executable file" % explicit if explicit
                       else "ldconfig not found on PATH or in /sbin, /usr/sbin")
        return
    res = runner.run([ldconfig, "-p"])
    loader["status"] = res["status"]
    if res["status"] == STATUS_OK:
        loader.update(parse_ldconfig(res["stdout"]))
        loader["libcuda_resolved"] = resolve_libcuda(loader["libcuda"])


def _verdict(facts, nvml, version_ok, smi, proc_version, runner):
    drv = facts["driver"]
    evidence = []
    if nvml:
        drv["nvml_error"] = nvml["line"]
        if nvml["mismatch"]:
            evidence.append("nvidia-smi: %s" % nvml["line"])
    user, kernel = drv["userspace_version"], drv["kernel_module_version"]
    if user and kernel and user != kernel:
        evidence.append("nvidia-smi %s (userspace) but kernel module %s (%s)" % (user, kernel, proc_version))
    drv["mismatch_evidence"] = evidence
    drv["mismatch"] = bool(evidence)
    drv["mismatch_checked"] = bool(nvml and nvml["mismatch"]) or bool(user and kernel)
    facts["present"] = bool(kernel or facts["gpu_count"] or version_ok or (nvml and nvml["mismatch"]))
    if facts["present"]:
        facts["reason"] = None
        return
    parts = []
    if not smi:
        parts.append(next((c["msg"] for c in runner.commands if c["status"] == STATUS_NOT_FOUND),
                          "nvidia-smi not found"))
    elif runner.smi_hung:
        parts.append("'%s' timed out after %ss" % (runner.smi_hung, runner.timeout))
    elif nvml:
        parts.append("nvidia-smi: %s" % nvml["line"])
    else:
        parts.append("nvidia-smi reported no GPU")
    parts.append("%s does not exist (no NVIDIA kernel module loaded)" % proc_version)
    facts["reason"] = "; ".join(parts)
