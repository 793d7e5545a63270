"""Whose process a GPU compute process is (pid namespaces, ``/proc/<pid>/status`` NSpid) and which libcuda the
workload's processes mapped (``/proc/<pid>/maps``): the ``processes`` and ``driver_in_use`` parts of
:func:`_gpu.gather`. Standard library only, like ``_gpu``.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import os
import re


# ---------------------------------------------------------------------------------------------------------------
# whose process is it: pid namespaces (/proc/<pid>/status NSpid)

ATTR_WORKLOAD = "workload"
ATTR_FOREIGN = "foreign"
ATTR_UNATTRIBUTED = "unattributed"
ATTRIBUTIONS = (ATTR_WORKLOAD, ATTR_FOREIGN, ATTR_UNATTRIBUTED)
COMM_LEN = 15  # the kernel keeps 15 characters of a process name (TASK_COMM_LEN - 1)


def parse_proc_status(text):
    """The fields of ``/proc/<pid>/status`` that attribution needs: name, pid, ppid, uid (real) and nspid (the pid
    in each pid namespace the process is in, from the reader's namespace inwards; [pid] on kernels without NSpid)."""
    out = {"name": None, "pid": None, "ppid": None, "uid": None, "nspid": []}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        value = value.strip()
        try:
            if key == "Name":
                out["name"] = value
            elif key == "Pid":
                out["pid"] = int(value)
            elif key == "PPid":
                out["ppid"] = int(value)
            elif key == "Uid":
                out["uid"] = int(value.split()[0])
            elif key == "NSpid":
                out["nspid"] = [int(v) for v in value.split()]
        except (ValueError, IndexError):
            continue
    if not out["nspid"] and out["pid"] is not None:
        out["nspid"] = [out["pid"]]
    return out


def read_process_table(proc_root="/proc"):
    """``{pid: parse_proc_status(...)}`` for every process readable under ``proc_root``, each with its ``argv0``
    (first word of its command line, or None). Processes that end while being read are left out."""
    table = {}
    try:
        names = os.listdir(proc_root)
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        text = read_text(os.path.join(proc_root, name, "status"), limit=8192)
        if text is None:
            continue
        rec = parse_proc_status(text)
        if rec["pid"] is None:
            rec["pid"] = int(name)
        if not rec["nspid"]:
            rec["nspid"] = [int(name)]
        cmdline = read_text(os.path.join(proc_root, name, "cmdline"), limit=4096)
        rec["argv0"] = (cmdline or "").split("\x00", 1)[0] or None
        table[int(name)] = rec
    return table


def _same_program(driver_name, rec):
    """Whether the driver's process name can be the process ``rec``: compared by base name with its argv0 and
    its (15-character) kernel name. Unknown on either side counts as the same."""
    if not driver_name or not rec:
        return True
    base = os.path.basename(driver_name.strip())
    names = [n for n in (rec.get("name"), os.path.basename(rec.get("argv0") or "")) if n]
    if not names:
        return True
    return any(base == n or base[:COMM_LEN] == n[:COMM_LEN] for n in names)


def descends_from(pid, roots, table):
    seen = set()
    while pid and pid not in seen:
        if pid in roots:
            return True
        seen.add(pid)
        pid = (table.get(pid) or {}).get("ppid")
    return False


def attribute_pid(pid, driver_name, workload_pids, table=None):
    """Who a compute process the driver lists belongs to: ``{attribution, reason, local_pid}``.

    The driver reports the pid as it sees it, which may be another pid namespace's (a container, or a sandbox
    whose namespace the driver does not see). The pid is looked up here directly, then among the inner-namespace
    pids of every process (``NSpid``); a candidate must carry the program name the driver reports. Found and
    equal to, or a descendant of, a workload pid: ``workload``. Found otherwise: ``foreign``. Not found, or
    several candidates: ``unattributed`` with the reason, never a guess."""
    workload = set(int(p) for p in workload_pids or ())
    if pid is None:
        return {"attribution": ATTR_UNATTRIBUTED, "local_pid": None,
                "reason": "the driver reported no pid for this process"}
    if table is None:
        if pid in workload:
            return {"attribution": ATTR_WORKLOAD, "local_pid": pid, "reason": "pid %d is a workload pid" % pid}
        return {"attribution": ATTR_UNATTRIBUTED, "local_pid": None,
                "reason": "pid %d is not a workload pid and no process table was read to place it" % pid}
    local = table.get(pid)
    if local is not None and _same_program(driver_name, local):
        found = [pid]
    else:
        found = sorted(p for p, rec in table.items() if pid in rec.get("nspid", [])[1:]
                       and _same_program(driver_name, rec))
    if not found and pid in workload and local is None:
        # the caller named this pid as the workload's (a pid as the driver reports it, say): taken as given
        return {"attribution": ATTR_WORKLOAD, "local_pid": None,
                "reason": "pid %d is a workload pid as given (no process of that pid here to check it against)" % pid}
    if not found:
        if local is not None:
            reason = ("pid %d here is '%s', the driver names '%s': the driver's pid belongs to another pid namespace"
                      % (pid, local.get("name") or local.get("argv0"), driver_name))
        else:
            reason = ("pid %d is not a process here, directly or as an inner-namespace pid (NSpid): the driver sees "
                      "it in a pid namespace this host's view does not include (container or sandbox)" % pid)
        return {"attribution": ATTR_UNATTRIBUTED, "local_pid": None, "reason": reason}
    if len(found) > 1:
        return {"attribution": ATTR_UNATTRIBUTED, "local_pid": None,
                "reason": "pid %d is an inner-namespace pid of several processes here (%s)"
                          % (pid, ", ".join(str(p) for p in found))}
    lpid = found[0]
    rec = table.get(lpid) or {}
    shown = "pid %d" % pid if lpid == pid else "pid %d (pid %d here, by NSpid %s)" % (
        pid, lpid, " ".join(str(p) for p in rec.get("nspid", [])))
    if descends_from(lpid, workload, table):
        how = "a workload pid" if lpid in workload else "a descendant of workload pid(s) %s" % ", ".join(
            str(p) for p in sorted(workload))
        return {"attribution": ATTR_WORKLOAD, "local_pid": lpid, "reason": "%s is %s" % (shown, how)}
    who = "'%s'" % (rec.get("argv0") or rec.get("name") or "?")
    if not workload:
        reason = "%s is %s and no workload pid was given: nothing of the workload runs yet" % (shown, who)
    else:
        reason = "%s is %s, neither a workload pid (%s) nor a descendant of one" % (
            shown, who, ", ".join(str(p) for p in sorted(workload)))
    return {"attribution": ATTR_FOREIGN, "local_pid": lpid, "reason": reason}


def attribute_processes(gpus, procs, own_pids=(), table=None):
    """Attribute each compute process and add ``foreign_processes``/``foreign_memory_mib`` and
    ``unaccounted_memory_mib`` (used memory no listed process accounts for) to each GPU. Returns a summary.

    Each process gets ``attribution`` (workload, foreign or unattributed, see :func:`attribute_pid`), ``reason``
    and ``local_pid``; ``own`` is true for the workload's. ``table`` is :func:`read_process_table`'s answer; without
    it only the pid the driver reports is compared with ``own_pids``. A GPU's ``foreign_processes`` lists every
    process that is not the workload's, each with its attribution, so an unattributed one is listed but never
    called foreign."""
    own = set(int(p) for p in own_pids or ())
    by_uuid = dict((g.get("uuid"), g) for g in gpus if g.get("uuid"))
    listed = {}
    for proc in procs:
        gpu = by_uuid.get(proc.get("gpu_uuid"))
        proc.update(attribute_pid(proc.get("pid"), proc.get("process_name"), own, table))
        proc["own"] = proc["attribution"] == ATTR_WORKLOAD
        proc["gpu_index"] = gpu.get("index") if gpu else None
        mem = proc.get("used_memory_mib") or 0
        if gpu is None:
            continue
        listed[id(gpu)] = listed.get(id(gpu), 0) + mem
        if not proc["own"]:
            gpu["foreign_processes"].append({"pid": proc.get("pid"), "process_name": proc.get("process_name"),
                                             "used_memory_mib": proc.get("used_memory_mib"),
                                             "attribution": proc["attribution"], "reason": proc["reason"],
                                             "local_pid": proc["local_pid"]})
            gpu["foreign_memory_mib"] += mem
    for gpu in gpus:
        if gpu.get("memory_used_mib") is not None:
            gpu["unaccounted_memory_mib"] = max(0, gpu["memory_used_mib"] - listed.get(id(gpu), 0))
    foreign = [p for p in procs if not p["own"]]
    counts = dict((a, 0) for a in ATTRIBUTIONS)
    for proc in procs:
        counts[proc["attribution"]] += 1
    return {"process_count": len(procs), "foreign_process_count": len(foreign),
            "foreign_memory_mib": sum(p.get("used_memory_mib") or 0 for p in foreign),
            "gpus_with_foreign_processes": [g.get("index") for g in gpus if g["foreign_processes"]],
            "unattributed_processes": [p.get("pid") for p in procs if p["gpu_index"] is None],
            "attribution_counts": counts}


# ---------------------------------------------------------------------------------------------------------------
# the driver in use: which libcuda a running process mapped

LIBCUDA_FILE_RE = re.compile(r"^libcuda\.so(?:\.(\d+(?:\.\d+)*))?$")


def libcuda_version(path):
    """The version in a libcuda file name (libcuda.so.580.159.04 -> 580.159.04); None for libcuda.so.1 or a
    name without one (the major number 1 is the soname, not a driver version)."""
    m = LIBCUDA_FILE_RE.match(os.path.basename(path or ""))
    if not m or not m.group(1) or "." not in m.group(1):
        return None
    return m.group(1)


def parse_maps_libcuda(text):
    """The libcuda files mapped in ``/proc/<pid>/maps`` text, in order of first mapping, without duplicates:
    [{path, version, deleted}] (``deleted`` when the kernel marks the file as replaced since it was mapped)."""
    out, seen = [], set()
    for line in (text or "").splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5].strip()
        deleted = path.endswith(" (deleted)")
        if deleted:
            path = path[:-len(" (deleted)")]
        if not LIBCUDA_FILE_RE.match(os.path.basename(path)) or path in seen:
            continue
        seen.add(path)
        out.append({"path": path, "version": libcuda_version(path), "deleted": deleted})
    return out


def read_maps_libcuda(proc_root, pid):
    """(libcuda entries, error) for a running process; reads ``/proc/<pid>/maps`` line by line (a vLLM worker's
    maps can be megabytes), keeping only libcuda lines. Needs the right to read it (same user or root)."""
    path = os.path.join(proc_root, str(pid), "maps")
    kept = []
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                if b"libcuda.so" in raw:
                    kept.append(raw.decode("utf-8", errors="replace"))
    except (OSError, IOError) as exc:
        return [], "%s: %s" % (path, exc.strerror or exc)
    return parse_maps_libcuda("".join(kept)), None


def is_forward_compat(path):
    """A libcuda from a CUDA forward-compatibility folder (``.../cuda*/compat/``, the cuda-compat package): a
    newer user-mode driver over an older kernel module, on purpose."""
    return "/compat/" in (path or "")


def driver_in_use(kernel_module_version, loader_resolved, smi_userspace_version, process_maps):
    """The driver actually in use, compared: ``{kernel_module_version, userspace_version, userspace_versions,
    userspace_source, processes, mismatch, evidence}``.

    ``loader_resolved`` is :func:`resolve_libcuda`'s answer (what a new process would load); ``process_maps`` is
    [{pid, source, libcuda (parse_maps_libcuda), error}] for running processes. A process that mapped no libcuda
    is not using the GPU driver and is left out. Mismatch: the loader's libcuda, or a process's mapped libcuda,
    differs from the kernel module (a forward-compatibility libcuda is reported, not counted), or the loader
    resolves libcuda to more than one version."""
    evidence = []
    loader_versions = []
    for ent in loader_resolved or []:
        if ent.get("version") and ent["version"] not in loader_versions:
            loader_versions.append(ent["version"])
    if loader_versions:
        userspace, source = loader_versions[0], "ldconfig -p (libcuda)"
    else:
        userspace, source = smi_userspace_version, "nvidia-smi --version" if smi_userspace_version else None
    kernel = kernel_module_version
    if len(loader_versions) > 1:
        evidence.append("the loader cache resolves libcuda to several versions: %s" % ", ".join(
            "%s -> %s" % (e["path"], e["target"]) for e in loader_resolved if e.get("version")))
    for ver in loader_versions:
        if kernel and ver != kernel:
            evidence.append("libcuda %s from the loader cache but kernel module %s" % (ver, kernel))
    processes = []
    for item in process_maps or []:
        libs = item.get("libcuda") or []
        if not libs and not item.get("error"):
            continue
        lib = libs[0] if libs else {}
        rec = {"pid": item.get("pid"), "source": item.get("source"), "libcuda_path": lib.get("path"),
               "libcuda_version": lib.get("version"), "forward_compat": is_forward_compat(lib.get("path")),
               "deleted": bool(lib.get("deleted")), "all_libcuda": [l["path"] for l in libs],
               "error": item.get("error")}
        processes.append(rec)
        ver = rec["libcuda_version"]
        if rec["deleted"]:
            evidence.append("pid %s mapped %s, since deleted or replaced on disk: it runs the old library"
                            % (rec["pid"], rec["libcuda_path"]))
        if ver and kernel and ver != kernel and not rec["forward_compat"]:
            evidence.append("pid %s mapped libcuda %s (%s) but the kernel module is %s"
                            % (rec["pid"], ver, rec["libcuda_path"], kernel))
        elif ver and userspace and ver != userspace and not rec["forward_compat"]:
            evidence.append("pid %s mapped libcuda %s (%s) but the loader cache resolves %s"
                            % (rec["pid"], ver, rec["libcuda_path"], userspace))
    return {"kernel_module_version": kernel, "userspace_version": userspace, "userspace_versions": loader_versions,
            "userspace_source": source, "processes": processes, "mismatch": bool(evidence), "evidence": evidence}


def read_text(path, limit=65536):
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", errors="replace")
    except (OSError, IOError):
        return None
