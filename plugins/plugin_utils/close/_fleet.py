"""A fleet run's hosts: each host's summary (the fleet table's row), fleet.json's ``hosts`` from what each host's
record task registered, and how the run closes (repro.vllm.run_record ``state=close kind=fleet``; the host_record
action writes each host's summary and line with them)."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.container._container import image_digest


def host_summary(fingerprint, container=None):
    """Reduce one host's fingerprint (and container facts) to the summary the fleet table prints."""
    gpu = (fingerprint or {}).get("gpu") or {}
    driver = gpu.get("driver") or {}
    gpus = gpu.get("gpus") or []
    names = sorted({g.get("name") for g in gpus if g.get("name")})
    foreign = []
    for proc in gpu.get("processes") or []:
        if not proc.get("own", False):
            # attribution (gpu_facts): foreign, or unattributed when the pid could not be placed on this host
            foreign.append({"pid": proc.get("pid"), "name": proc.get("process_name"),
                            "gpu_uuid": proc.get("gpu_uuid"), "used_memory_mib": proc.get("used_memory_mib"),
                            "attribution": proc.get("attribution")})
    timed_out = list(gpu.get("timed_out") or []) + list((container or {}).get("timed_out") or [])
    return {
        "host": fingerprint.get("host"),
        "status": "ok",
        "gpu_present": bool(gpu.get("present")),
        "driver": driver.get("userspace_version") or driver.get("kernel_module_version"),
        "driver_mismatch": bool(driver.get("mismatch")),
        "cuda_driver_version": driver.get("cuda_driver_version") or gpu.get("cuda_driver_version"),
        "gpu_count": len(gpus),
        "gpu_names": names,
        "image_digest": image_digest(container),
        "foreign_processes": foreign,
        "timed_out": [" ".join(t) if isinstance(t, list) else t for t in timed_out],
        "detail": gpu.get("reason") if not gpu.get("present") else None,
    }


def host_summary_line(summary):
    """One readable line per host for the play output."""
    s = summary or {}
    if s.get("status") != "ok":
        return "%s: %s (%s)" % (s.get("host"), str(s.get("status", "?")).upper(), s.get("detail") or "no detail")
    if s.get("gpu_present"):
        gpus = "%d x %s" % (s.get("gpu_count", 0), "/".join(s.get("gpu_names") or ["?"]))
        drv = "driver %s%s" % (s.get("driver") or "?", " (MISMATCH kernel/userspace)" if s.get("driver_mismatch") else "")
    else:
        gpus = "no NVIDIA GPU (%s)" % (s.get("detail") or "not detected")
        drv = "driver -"
    foreign = s.get("foreign_processes") or []
    parts = [
        "%s: ok" % s.get("host"), drv, gpus,
        "image %s" % (s.get("image_digest") or "-"),
        "foreign procs %d%s" % (len(foreign), (" (%s)" % ", ".join(
            "pid %s %s MiB%s" % (p.get("pid"), p.get("used_memory_mib"),
                                 " unattributed" if p.get("attribution") == "unattributed" else "")
            for p in foreign)) if foreign else ""),
        "timed out: %s" % (", ".join(s.get("timed_out")) if s.get("timed_out") else "none"),
    ]
    return " | ".join(parts)


def fleet_summary(hosts, records):
    """fleet.json's ``hosts``: one summary per expected host, in order, from each host's registered record result.

    ``records`` holds, for each of ``hosts`` in the same order, what the host's record task registered
    (``_repro_vllm_host_record``: repro.vllm.host_record's result, with its ``summary``), or an empty value where
    the host never registered one.  A result with a summary is taken as it is; an unreachable host is
    ``unreachable``; any other host is ``lost``, with the message it left when there is one."""
    hosts = list(hosts or [])
    records = list(records or [])
    if len(records) != len(hosts):
        raise ValueError("fleet_summary: %d hosts but %d record results; pass one result (or {}) per host"
                         % (len(hosts), len(records)))
    out = []
    for host, rec in zip(hosts, records):
        rec = rec if isinstance(rec, dict) else {}
        if isinstance(rec.get("summary"), dict):
            out.append(rec["summary"])
        elif rec.get("unreachable"):
            out.append({"host": host, "status": "unreachable", "detail": rec.get("msg") or "unreachable"})
        else:
            out.append({"host": host, "status": "lost",
                        "detail": "no result came back: the host stopped before its record task ran (%s)"
                                  % (rec.get("msg") or "no message")})
    return out


def fleet_close(fleet, run_path):
    """How a run of the record role closes, from its fleet.json ``hosts`` (fleet_summary): ``status`` (``ok`` when
    every host is ok, else ``failed``), ``incomplete`` (the hosts that are not ok), ``lines`` (one line per host) and
    ``complete`` (``ok/all``). Whether the job fails on it is the exit rule's (plugin_utils/close/_exitrule.py)."""
    fleet = list(fleet or [])
    incomplete = [h.get("host") for h in fleet if h.get("status") != "ok"]
    return {"status": "failed" if incomplete else "ok", "incomplete": incomplete,
            "lines": [host_summary_line(h) for h in fleet], "complete": "%d/%d" % (len(fleet) - len(incomplete), len(fleet))}
