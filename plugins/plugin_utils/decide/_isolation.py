"""The isolation decision: leave the shared cluster (``move``) or reproduce where it failed (``stay``).

From evidence only (docs/architecture.md, "Isolation decision"): ``move`` when at least one condition of a fixed
vocabulary holds on the runs given (a case's runs, oldest first; for an audit, each host's previous run of the
case and the audit run). Every reason names its host (null for the job) and cites the runs and files it read.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import re

from ansible_collections.repro.vllm.plugins.plugin_utils.decide._diff import run_diff
from ansible_collections.repro.vllm.plugins.module_utils.record._evidence import (
    attempt_key, attempt_result, cite, declared_repeat, host_view, is_attempt, read_log_tail, result_text)

CONDITIONS = ("driver_changed", "image_rebuilt", "gpu_visibility_changed", "scheduler_env", "first_error_changed",
              "restarts", "must_keep_serving")
# environment variables a batch scheduler or an orchestrator puts into a job (the job did not set them itself)
SCHEDULER_PREFIXES = ("SLURM_", "KUBERNETES_", "PBS_", "LSB_", "SGE_", "FLUX_", "NOMAD_", "OMPI_COMM_WORLD_",
                      "PMI_", "PMIX_")
SCHEDULER_NAMES = ("JOB_ID", "GPU_DEVICE_ORDINAL")
# variables that a scheduler sets when it assigns devices; scheduler-injected when found next to a scheduler's own
SCHEDULER_DEVICE_NAMES = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
# restart evidence in logs: systemd's restart job, the kubelet's back-off and probe kills, docker's health check
RESTART_PATTERNS = (
    ("systemd restart", re.compile(r"Scheduled restart job, restart counter is at (\d+)")),
    ("kubelet back-off", re.compile(r"Back-off restarting failed container")),
    ("liveness probe kill", re.compile(r"failed liveness probe, will be restarted|Liveness probe failed")),
    ("health check", re.compile(r"health_status: unhealthy|health check failed", re.IGNORECASE)),
)
DEFAULT_MEMORY_IN_USE_MIB = 1024


class IsolationError(ValueError):
    """Input that is not a list of runs."""


def _reason(condition, host, evidence):
    return {"condition": condition, "host": host, "evidence": evidence}


def _series(runs, host):
    """[(run, view)] of the runs where ``host`` answered, oldest first."""
    out = []
    for run in runs:
        if host in run["hosts"]:
            view = host_view(run, host)
            if view["status"] == "ok":
                out.append((run, view))
    return out


def _strip_digest(ref):
    return str(ref or "").split("@", 1)[0]


def _pairs(series, group, same_kind=False):
    """Consecutive (run, view) pairs that both recorded ``group``; ``same_kind``: only fingerprint with fingerprint
    and attempt with attempt (an attempt's visible devices are the ones the run set, a fingerprint's the login's)."""
    with_group = [(r, v) for r, v in series if group in v["sources"]]
    if not same_kind:
        return list(zip(with_group, with_group[1:]))
    out = []
    for kind in ("fingerprint.json", "changes.json"):
        same = [(r, v) for r, v in with_group if v["sources"][group].endswith(kind)]
        out += list(zip(same, same[1:]))
    return out


def _driver(host, series):
    out = []
    for (ra, va), (rb, vb) in _pairs(series, "driver"):
        changed = [(k, va[k], vb[k]) for k in ("driver", "kernel_module", "cuda_driver") if va[k] != vb[k]]
        if changed:
            out.append(_reason("driver_changed", host, "%s: %s (%s -> %s)" % (
                ", ".join("%s %s -> %s" % c for c in changed), "between " + ra["run"] + " and " + rb["run"],
                va["sources"]["driver"], vb["sources"]["driver"])))
    return out


def _image(host, series):
    out = []
    for (ra, va), (rb, vb) in _pairs(series, "image"):
        same_ref = _strip_digest(va["image"]) == _strip_digest(vb["image"])
        if same_ref and va["image_digest"] and vb["image_digest"] and va["image_digest"] != vb["image_digest"]:
            out.append(_reason("image_rebuilt", host, "%s: digest %s -> %s under the same reference (%s -> %s)" % (
                _strip_digest(va["image"]), va["image_digest"], vb["image_digest"], va["sources"]["image"],
                vb["sources"]["image"])))
        del ra, rb
    return out


def _visibility(host, series, memory_in_use_mib):
    out = []
    fps = [(r, v) for r, v in series if v["foreign_processes"] is not None]
    if fps:
        run, view = fps[-1]
        src = cite(run, host, "fingerprint.json")
        if view["foreign_processes"]:
            out.append(_reason("gpu_visibility_changed", host, "foreign GPU processes: %s (%s)" % (
                ", ".join("pid %s %s on %s, %s MiB" % (p["pid"], p["name"], p["gpu_uuid"], p["used_memory_mib"])
                          for p in view["foreign_processes"]), src)))
        used = {k: v for k, v in (view["memory_used_mib"] or {}).items() if v is not None and v > memory_in_use_mib}
        if used and not view["foreign_processes"]:
            out.append(_reason("gpu_visibility_changed", host, "GPU memory in use with no process of this job: %s (%s)"
                               % (", ".join("%s %s MiB" % kv for kv in sorted(used.items())), src)))
    for (ra, va), (rb, vb) in _pairs(series, "gpus", same_kind=True):
        bits = []
        if [g.get("uuid") for g in va["gpu_map"] or []] != [g.get("uuid") for g in vb["gpu_map"] or []] or \
                [g.get("pci_bus_id") for g in va["gpu_map"] or []] != [g.get("pci_bus_id") for g in vb["gpu_map"] or []]:
            bits.append("device map %s -> %s" % (
                ["%s:%s" % (g.get("index"), g.get("uuid")) for g in va["gpu_map"] or []],
                ["%s:%s" % (g.get("index"), g.get("uuid")) for g in vb["gpu_map"] or []]))
        if va["visible_devices"] != vb["visible_devices"]:
            bits.append("visible devices %s -> %s" % (va["visible_devices"], vb["visible_devices"]))
        if bits:
            out.append(_reason("gpu_visibility_changed", host, "%s between %s and %s (%s -> %s)" % (
                "; ".join(bits), ra["run"], rb["run"], va["sources"]["gpus"], vb["sources"]["gpus"])))
    return out


def _launched(name):
    """A name a scheduler or launcher sets for one job (PMIX_RANK), not an MPI library's configuration: Open MPI
    and PMIx read their MCA parameters from ``OMPI_MCA_*`` / ``PMIX_MCA_*`` variables, which images set as
    defaults (NGC-style images carry PMIX_MCA_gds=hash; the lent H200 had it with no scheduler at all)."""
    return (name.startswith(SCHEDULER_PREFIXES) or name in SCHEDULER_NAMES) and "_MCA_" not in name


def scheduler_variables(env, set_by_run=None):
    """Names in ``env`` a scheduler injected (device variables only when a scheduler's own variable is there and
    the run did not set them)."""
    env = env or {}
    own = set(set_by_run or {})
    found = sorted(k for k in env if k not in own and _launched(k))
    if found:
        found += sorted(k for k in env if k in SCHEDULER_DEVICE_NAMES and k not in own)
    return found


def _scheduler(host, series):
    for run, view in reversed(series):
        for env, src, own in ((view["inherited_env"], view["sources"].get("command"), view["env_set_by_run"]),
                              (view["host_env"], view["sources"].get("host_env"), None)):
            names = scheduler_variables(env, own)
            if names:
                return [_reason("scheduler_env", host, "scheduler-injected variables %s (%s)" % (
                    ", ".join(names[:12]) + (" and %d more" % (len(names) - 12) if len(names) > 12 else ""), src))]
        del run
    return []


def _restarts(host, series):
    out = []
    for run, view in series:
        svc = view["service"]
        if svc:
            count = svc.get("restart_count")
            codes = [c for c in svc.get("exit_codes") or [] if c not in (None, 0)]
            if (isinstance(count, int) and count > 0) or codes:
                out.append(_reason("restarts", host, "the production server restarted %s time(s), last exit codes %s "
                                   "(%s)" % (count, codes or "-", view["sources"]["service"])))
        for rel in run["hosts"].get(host, {}).get("logs") or []:
            text = read_log_tail(run, host, rel)
            for label, rx in RESTART_PATTERNS:
                hits = rx.findall(text)
                if hits:
                    out.append(_reason("restarts", host, "%s: %d line(s) in %s" % (
                        label, len(hits), cite(run, host, rel))))
    return out


def _first_error(runs):
    out = []
    attempts = [r for r in runs if is_attempt(r)]
    for i, run in enumerate(attempts):
        key = attempt_key(run)
        earlier = [r for r in attempts[:i] if attempt_key(r) == key]
        if not earlier:
            continue
        # a second clean run (repeat.json) is compared with the run it repeats; any other with the latest like it
        named = [r for r in earlier if declared_repeat(run, r) is not None]
        prev = (named or earlier)[-1]
        rep = declared_repeat(run, prev)
        a, b = attempt_result(prev), attempt_result(run)
        if rep is not None and "same_stage" in rep and "same_error_class" in rep:
            if rep["same_stage"] and rep["same_error_class"]:
                continue
        elif a[:2] == b[:2]:
            continue
        diff = run_diff(prev, run)
        if diff["variables"]:
            continue
        node = ((run["parts"].get("stages.json") or {}).get("first_error") or {}).get("node")
        cites = [cite(prev, None, "outcome.json"), cite(run, None, "outcome.json")]
        if rep is not None:
            cites.append(cite(run, None, "repeat.json"))
        out.append(_reason("first_error_changed", node, "%s in %s, %s in %s%s, same command, environment and "
                           "request and no recorded change between them (%s)" % (
                               result_text(a), prev["run"], result_text(b), run["run"],
                               " (its second clean run)" if rep is not None else "", ", ".join(cites))))
    return out


def decide(runs, must_keep_serving=False, memory_in_use_mib=DEFAULT_MEMORY_IN_USE_MIB, hosts=None):
    """isolation.json for ``runs`` (read with ``_evidence.read_run``, oldest first).

    ``hosts`` limits the per-host conditions (default: every host of the runs). Returns
    ``{"decision": "move"|"stay", "reasons": [{"condition", "host", "evidence"}], "runs": [...]}``.
    """
    if not isinstance(runs, list) or any(not isinstance(r, dict) or "parts" not in r for r in runs):
        raise IsolationError("isolation: the input must be runs read with read_run, oldest first")
    runs = [r for r in runs if r.get("purpose") not in ("summary", "diff")]
    names = hosts if hosts is not None else sorted({h for r in runs for h in r["hosts"]})
    reasons = []
    for host in names:
        series = _series(runs, host)
        reasons += _driver(host, series)
        reasons += _image(host, series)
        reasons += _visibility(host, series, memory_in_use_mib)
        reasons += _scheduler(host, series)
        reasons += _restarts(host, series)
    reasons += _first_error(runs)
    if must_keep_serving:
        reasons.append(_reason("must_keep_serving", None, "declared by the user (repro_vllm_must_keep_serving: true): "
                               "the cluster must keep serving while the failure is reproduced"))
    order = {c: i for i, c in enumerate(CONDITIONS)}
    reasons.sort(key=lambda r: (order[r["condition"]], str(r["host"])))
    return {"decision": "move" if reasons else "stay", "reasons": reasons,
            "runs": ["%s/%s" % (r["case"], r["run"]) for r in runs]}


def decision_lines(decision):
    """Console lines: the decision, then one per reason."""
    lines = ["isolation: %s (%s)" % (decision["decision"].upper(), "%d reason(s)" % len(decision["reasons"])
                                     if decision["reasons"] else "no condition holds")]
    for r in decision["reasons"]:
        lines.append("%s | %s | %s" % (r["condition"], r["host"] or "job", r["evidence"]))
    return lines
