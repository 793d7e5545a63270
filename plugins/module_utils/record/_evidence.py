"""Read frozen runs back into one comparable view: the evidence the decisions (score, diff, isolation, audit) use.

A run is read from its folder only (never changed): ``manifest.json`` for case, run id, purpose and time, the
run-level parts (``stages.json``, ``request.json``, ``outcome.json``, ``changes.json``, ``fleet.json``,
``compatibility.json``) and each ``hosts/<host>/`` part (``fingerprint.json``, ``container.json``, ``env.json``,
``command.json``, ``server.json``, ``service.json``, ``unreachable.json``, ``failed.json``, logs).

``host_view`` reduces one host of one run to the flat facts every decision compares, each with the file it came
from, so an answer can always cite ``run-NNN/hosts/<host>/<file>``. Controller side; Python standard library only.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import json
import os
import re

from ansible_collections.repro.vllm.plugins.module_utils.container._container import image_digest
from ansible_collections.repro.vllm.plugins.module_utils.record._record import MANIFEST, run_numbers, run_id_for

RUN_PARTS = ("stages.json", "request.json", "outcome.json", "changes.json", "fleet.json", "compatibility.json",
             "score.json", "isolation.json", "audit.json", "diff.json", "repeat.json", "collective.json")
HOST_PARTS = ("fingerprint.json", "container.json", "env.json", "command.json", "server.json", "service.json",
              "collect_env.json", "unreachable.json", "failed.json")
# logs are read for restart evidence only, and only this much of each
LOG_READ_LIMIT = 4 * 1024 * 1024


class EvidenceError(Exception):
    """A run or case folder that cannot be read as a repro.vllm record."""


def _load_json(path):
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise EvidenceError("%s cannot be read as JSON (%s); the record is damaged - run "
                            "repro.vllm.run_record state=verify on its run" % (path, exc))


def _json_parts(folder, names):
    """``{name: content}`` of the JSON parts ``names`` that ``folder`` holds."""
    found = {name: _load_json(os.path.join(folder, name)) for name in names}
    return {name: data for name, data in found.items() if data is not None}


def read_run(path):
    """One run folder -> dict(path, run, case, purpose, step, created, frozen, metadata, files, parts, hosts).

    ``parts`` maps each run-level JSON part present to its content; ``hosts`` maps each host folder to its parts
    plus ``logs`` (relative paths of files under ``logs/``). Raises EvidenceError for a folder that is not a run.
    """
    path = os.path.abspath(str(path))
    if not os.path.isdir(path):
        raise EvidenceError("%s is not a run folder (expected <records_root>/<case_id>/run-NNN)" % path)
    manifest = _load_json(os.path.join(path, MANIFEST)) or {}
    meta = manifest.get("metadata") or {}
    parts = _json_parts(path, RUN_PARTS)
    hosts = {}
    hosts_dir = os.path.join(path, "hosts")
    if os.path.isdir(hosts_dir):
        for host in sorted(os.listdir(hosts_dir)):
            hdir = os.path.join(hosts_dir, host)
            if not os.path.isdir(hdir):
                continue
            entry = _json_parts(hdir, HOST_PARTS)
            logs = []
            ldir = os.path.join(hdir, "logs")
            if os.path.isdir(ldir):
                for base, _dirs, files in os.walk(ldir):
                    for name in sorted(files):
                        logs.append(os.path.relpath(os.path.join(base, name), hdir))
            entry["logs"] = sorted(logs)
            hosts[host] = entry
    files = []
    for base, _dirs, names in os.walk(path):
        for name in names:
            files.append(os.path.relpath(os.path.join(base, name), path))
    outcome = parts.get("outcome.json") or {}
    fleet = parts.get("fleet.json") or {}
    purpose = meta.get("purpose") or outcome.get("purpose") or fleet.get("purpose")
    if purpose is None and any("fingerprint.json" in h for h in hosts.values()):
        purpose = "fingerprint"
    return {
        "path": path,
        "run": os.path.basename(path),
        "case": manifest.get("case_id") or os.path.basename(os.path.dirname(path)),
        "purpose": purpose,
        "step": meta.get("step") or outcome.get("step"),
        "created": manifest.get("created"),
        "frozen": bool(manifest),
        "metadata": meta,
        "files": sorted(files),
        "parts": parts,
        "hosts": hosts,
    }


def case_runs(case_dir):
    """Every run of a case folder, oldest first (run-NNN order)."""
    case_dir = os.path.abspath(str(case_dir))
    if not os.path.isdir(case_dir):
        raise EvidenceError("%s is not a case folder (expected <records_root>/<case_id> holding run-NNN)" % case_dir)
    return [read_run(os.path.join(case_dir, run_id_for(n))) for n in run_numbers(case_dir)]


def resolve_run(ref, records_root=None, case_id=None):
    """A run reference -> its folder: a path, ``<case>/run-NNN`` or ``run-NNN`` under records_root/case_id."""
    ref = str(ref or "").strip()
    if not ref:
        raise EvidenceError("no run given: pass a run folder, <case_id>/run-NNN or run-NNN")
    candidates = [ref]
    if records_root:
        candidates.append(os.path.join(str(records_root), ref))
        if case_id:
            candidates.append(os.path.join(str(records_root), str(case_id), ref))
    for cand in candidates:
        if os.path.isdir(cand) and os.path.isfile(os.path.join(cand, MANIFEST)):
            return os.path.abspath(cand)
    raise EvidenceError("run %r not found as a frozen run (looked in: %s); give the folder that holds manifest.json"
                        % (ref, ", ".join(candidates)))


def cite(run, host=None, part=None):
    """``run-003/hosts/node01/fingerprint.json`` (or ``case/run-003/stages.json`` across cases)."""
    bits = [run["run"]]
    if host is not None:
        bits += ["hosts", host]
    if part:
        bits.append(part)
    return "/".join(bits)


def _gpu_map(gpu):
    return [{"index": g.get("index"), "uuid": g.get("uuid"), "name": g.get("name"), "pci_bus_id": g.get("pci_bus_id")}
            for g in gpu.get("gpus") or []]


def _foreign(gpu):
    out = []
    for proc in gpu.get("processes") or []:
        if proc.get("own", False):
            continue
        out.append({"pid": proc.get("pid"), "name": proc.get("process_name"), "gpu_uuid": proc.get("gpu_uuid"),
                    "used_memory_mib": proc.get("used_memory_mib")})
    return out


def _probe(container):
    probe = (container or {}).get("probe") or {}
    return probe if probe.get("ran") else {}


def host_view(run, host):
    """The facts of one host in one run, flat, each None when the run did not record it.

    Keys: present, status, driver, kernel_module, cuda_driver, gpu_present, gpu_model, gpu_count,
    compute_capability, gpu_map, visible_devices, foreign_processes, memory_used_mib, os, kernel, image,
    image_digest, image_vllm, image_torch, image_cuda, argv, env, env_set_by_run, inherited_env, host_env,
    sources (fact group -> file cited).
    """
    h = run["hosts"].get(host)
    view = {k: None for k in (
        "status", "driver", "kernel_module", "cuda_driver", "gpu_present", "gpu_model", "gpu_count",
        "compute_capability", "gpu_map", "visible_devices", "foreign_processes", "memory_used_mib", "os", "kernel",
        "image", "image_digest", "image_id", "image_by_digest", "image_vllm", "image_torch", "image_cuda", "argv", "env",
        "env_set_by_run", "inherited_env", "host_env", "service")}
    view["present"] = h is not None
    view["sources"] = {}
    if h is None:
        return view
    if "unreachable.json" in h or "failed.json" in h:
        view["status"] = "unreachable" if "unreachable.json" in h else "failed"
    else:
        view["status"] = "ok"
    identity = (((run["parts"].get("changes.json") or {}).get("current") or {}).get("hosts") or {}).get(host) or {}
    fp = h.get("fingerprint.json")
    if fp is not None:
        gpu = fp.get("gpu") or {}
        drv = gpu.get("driver") or {}
        src = cite(run, host, "fingerprint.json")
        gpus = gpu.get("gpus") or []
        view.update(
            driver=drv.get("reported_version") or drv.get("userspace_version"),
            kernel_module=drv.get("kernel_module_version"),
            cuda_driver=drv.get("cuda_driver_version"),
            gpu_present=bool(gpu.get("present")),
            gpu_model=("/".join(sorted({g.get("name") for g in gpus if g.get("name")})) or None),
            gpu_count=len(gpus) if gpu.get("present") else 0,
            compute_capability=("/".join(sorted({str(g.get("compute_cap")) for g in gpus if g.get("compute_cap")}))
                                or None),
            gpu_map=_gpu_map(gpu),
            visible_devices=(gpu.get("visible_devices") or {}).get("cuda_visible_devices"),
            foreign_processes=_foreign(gpu),
            memory_used_mib={str(g.get("uuid") or g.get("index")): g.get("memory_used_mib") for g in gpus},
            os=(fp.get("os") or "").strip() or None,
            kernel=fp.get("kernel"),
        )
        view["visible_devices_recorded"] = "visible_devices" in gpu
        for group in ("driver", "gpus", "os"):
            view["sources"][group] = src
    elif identity:
        src = cite(run, None, "changes.json")
        view.update(driver=identity.get("driver"), kernel_module=identity.get("kernel_module"),
                    cuda_driver=identity.get("cuda_driver"), gpu_present=identity.get("gpu_present"),
                    gpu_map=identity.get("gpu_map"), visible_devices=identity.get("visible_devices"))
        view["gpu_count"] = len(identity.get("gpu_map") or []) if identity.get("gpu_present") else 0
        view["visible_devices_recorded"] = "visible_devices" in identity
        for group in ("driver", "gpus"):
            view["sources"][group] = src
    container = h.get("container.json")
    ran = ((h.get("server.json") or {}).get("container") or {}) if isinstance(h.get("server.json"), dict) else {}
    if ran.get("image_id"):
        # the server ran in a container: the image that ran (by id, and its repo digest where the runtime lists one)
        view["image"] = ran.get("image")
        view["image_digest"] = ran.get("image_repo_digest") or ran.get("image_id")
        view["image_id"] = ran.get("image_id")
        view["image_by_digest"] = True
        view["sources"]["image"] = cite(run, host, "server.json")
    elif container and not container.get("skipped"):
        view["image"] = container.get("reference")
        view["image_digest"] = image_digest(container)
        view["image_by_digest"] = bool(container.get("by_digest"))
        view["sources"]["image"] = cite(run, host, "container.json")
    elif identity.get("image") or identity.get("image_digest"):
        view["image"] = identity.get("image")
        view["image_digest"] = identity.get("image_digest")
        view["image_by_digest"] = "@sha256:" in str(identity.get("image") or "")
        view["sources"]["image"] = cite(run, None, "changes.json")
    if container and not container.get("skipped"):  # what the image itself says it holds
        probe = _probe(container)
        view.update(image_vllm=probe.get("vllm"), image_torch=probe.get("torch"), image_cuda=probe.get("torch_cuda"))
    cmd = h.get("command.json")
    if cmd is not None:
        view["argv"] = [str(a) for a in cmd.get("argv") or []]
        view["env_set_by_run"] = dict(cmd.get("env_set_by_run") or {})
        view["inherited_env"] = dict(cmd.get("env") or {})
        merged = dict(view["inherited_env"])
        merged.update(view["env_set_by_run"])
        view["env"] = merged
        view["sources"]["command"] = cite(run, host, "command.json")
    env = h.get("env.json")
    if env is not None:
        view["host_env"] = dict(env)
        view["sources"]["host_env"] = cite(run, host, "env.json")
    if h.get("service.json") is not None:
        view["service"] = h["service.json"]
        view["sources"]["service"] = cite(run, host, "service.json")
    return view


def run_hosts(run):
    """The hosts a run is about: its manifest's list (else the attempt's nodes), then any other host folder."""
    listed = run["metadata"].get("hosts")
    if not (isinstance(listed, list) and listed):
        listed = (run["parts"].get("outcome.json") or {}).get("nodes") or []
    out = [str(h) for h in listed]
    return out + [h for h in sorted(run["hosts"]) if h not in out]


def is_attempt(run):
    """True for a run of the method's own server start (minimal, request, ladder, rollback, repeat)."""
    return "outcome.json" in run["parts"]


def attempt_result(run):
    """(stage, error_class, ok) of an attempt run, from outcome.json (stages.json when outcome lacks it)."""
    outcome = run["parts"].get("outcome.json") or {}
    stages = run["parts"].get("stages.json") or {}
    stage = outcome.get("stage") or stages.get("stage")
    error_class = outcome.get("error_class") if "error_class" in outcome else stages.get("error_class")
    return stage, error_class, bool(outcome.get("ok"))


def attempt_key(run):
    """What two attempts must share to be the same attempt: each host's argv and the environment the run set,
    and the request (route and body). A second clean run of an attempt has the same key."""
    hosts = {}
    for host in run_hosts(run):
        view = host_view(run, host)
        hosts[host] = (tuple(view["argv"] or ()), tuple(sorted((view["env_set_by_run"] or {}).items())))
    req = run["parts"].get("request.json") or {}
    return (tuple(sorted(hosts.items())), repr(req.get("body")), req.get("route"))


def declared_repeat(run, of=None):
    """The ``repeat.json`` of a second clean run (reproduce.yml with repro_vllm_repeat_clean), or None; with ``of``
    (a run read with read_run) only when it repeats that run of the same case."""
    rep = run["parts"].get("repeat.json")
    if not isinstance(rep, dict) or not rep.get("repeats"):
        return None
    if of is not None and (rep["repeats"] != of["run"] or run["case"] != of["case"]):
        return None
    return rep


def result_text(result):
    """``passed (stage none)`` or ``failed at stage config (config_error)`` for an attempt_result tuple."""
    stage, error_class, ok = result
    if ok:
        return "passed (stage %s)" % (stage or "none")
    return "failed at stage %s (%s)" % (stage, error_class or "no error class")


_SHELL_RE = re.compile(r"\$\(|\$\{|`|\$[A-Za-z_]")


def unexpanded(values):
    """The strings of ``values`` that still hold shell syntax (``$(...)``, ``${X}``, ``$X``, backticks)."""
    return [v for v in values if isinstance(v, str) and _SHELL_RE.search(v)]


def host_logs(run, host):
    """The ``.log`` files of one host in a run (relative to ``hosts/<host>/``)."""
    return [rel for rel in (run["hosts"].get(host) or {}).get("logs") or [] if rel.endswith(".log")]


def read_log_tail(run, host, rel, limit=LOG_READ_LIMIT):
    """The text of one host log (the first ``limit`` bytes), or '' when absent."""
    path = os.path.join(run["path"], "hosts", host, rel)
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""
