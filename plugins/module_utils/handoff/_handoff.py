"""The hand-off package: one deterministic ``tar.gz`` of a case's frozen runs an upstream maintainer can act on.

Why one file (over 1,000 lines): the package's facts, pictures and tar are one deterministic build (``build_package``)
citing the same runs through the same helpers; writing ``summary.md`` is ``_summary_md.py``, drawing the SVGs
``_svg.py``.

``build_package(records_root, case_id, ...)`` (controller side, standard library only):

1. verifies every selected run against its ``manifest.json`` (``_record.verify``); a tampered run stops the
   package, naming the run and the file;
2. reads the runs (``_evidence``) into the facts of vLLM's bug report for the guide's 13 items
   (``summary.json``) and renders them as ``summary.md`` (tables, long logs in ``<details>``, Mermaid pictures);
3. draws the per-node stage timeline and each run's memory trace as standalone SVG (``_svg``);
4. lists what kinds were redacted where (``redactions.json``, from the markers in the frozen files);
5. scans every member for secret shapes (``_redact.scan_secrets``) and refuses to pack on any finding, naming
   file and line - a scan, never a rewrite of frozen files;
6. writes ``<case_id>-handoff-<YYYYMMDDTHHMMSSZ>.tar.gz`` and its ``.sha256`` under
   ``<records_root>/<case_id>/handoff/``: sorted members under ``<case_id>-handoff/``, fixed mtime (the newest
   run's creation time), uid/gid 0, no owner names, modes 0644/0755, gzip without a name or a time.  The same
   runs give the same sha256 whatever the time in the file name.

The case key (``.redact.key``) and anything outside the selected runs never enter the package.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import calendar
import gzip
import io
import json
import os
import re
import tarfile
import time

from ansible_collections.repro.vllm.plugins.module_utils.record import _evidence, _record
from ansible_collections.repro.vllm.plugins.module_utils.decide import _verdict
from ansible_collections.repro.vllm.plugins.module_utils.record._record import (
    MANIFEST, RecordError, describe_problems, render_json, run_id_for, run_numbers, validate_case_id, verify)
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import redaction_markers, scan_secrets
from ansible_collections.repro.vllm.plugins.module_utils.decide._score import first_error_stamp
from ansible_collections.repro.vllm.plugins.module_utils.handoff._svg import line_chart, stage_grid
from ansible_collections.repro.vllm.plugins.module_utils.handoff._summary_md import memory_mermaid, quote_argv, render_markdown

SUMMARY_FORMAT = 2
HANDOFF_DIR = "handoff"
STAGES = ("environment", "config", "cuda_init", "distributed_init", "weight_loading", "engine_init", "api_ready",
          "request")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.tar\.gz$")
_SAFE_MEMBER_RE = re.compile(r"^[A-Za-z0-9._@+=,-][A-Za-z0-9._@+=,/ -]*$")
_VERSION_RES = (
    ("vllm", re.compile(r"vLLM API server version (\S+)")),
    ("vllm", re.compile(r"Initializing a V1 LLM engine \(v([0-9][^)\s]*)\)")),
    ("vllm", re.compile(r"\u2588\s+version ([0-9]\S*)")),
    ("vllm", re.compile(r"\bvllm(?:-cpu)?[ =]=?\s*version\s+(\S+)", re.IGNORECASE)),
    ("torch", re.compile(r"\btorch(?:\s+version)?[ =:]+([0-9][0-9A-Za-z.+]*)")),
    ("cuda", re.compile(r"\bCUDA (?:runtime )?version[ :]+([0-9][0-9.]*)")),
)


# collect_env's own lines (vLLM's "Key   : value" and torch's "Key: value"; both real captures in tests/fixtures) and
# its "[pip3] name==version" lines -> the versions table's components
_COLLECT_ENV_KEYS = (
    ("vllm", "vLLM Version"),
    ("torch", "PyTorch version"),
    ("cuda", "CUDA runtime version"),
    ("torch_cuda", "CUDA used to build PyTorch"),
    ("python", "Python version"),
    ("driver", "Nvidia driver version"),
)
_COLLECT_ENV_PIP = ("transformers", "flashinfer-python", "triton", "nvidia-nccl-cu12", "nvidia-nccl-cu13")
_COLLECT_ENV_LINE_RE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z ]*?)\s*:\s*(?P<value>\S.*)$")
_COLLECT_ENV_PIP_RE = re.compile(r"^\[(?:pip3?|conda)\]\s+(?P<name>[A-Za-z0-9_.\-]+)==(?P<value>\S+)")
_NOT_A_VERSION = ("none", "n/a", "could not collect", "")


def versions_from_collect_env(output):
    """``{component: version}`` from vLLM's (or torch's) collect_env output: the versions table's values, so that
    a package holding collect_env never says torch is "unknown"."""
    keys = {label.lower(): name for name, label in _COLLECT_ENV_KEYS}
    found = {}
    for line in str(output or "").splitlines():
        line = line.strip()
        m = _COLLECT_ENV_LINE_RE.match(line)
        if m and m.group("key").strip().lower() in keys:
            name = keys[m.group("key").strip().lower()]
            value = m.group("value").strip()
            if name == "python":
                value = value.split()[0]
            if value.lower() not in _NOT_A_VERSION:
                found.setdefault(name, value)
            continue
        m = _COLLECT_ENV_PIP_RE.match(line)
        if m and m.group("name").lower() in _COLLECT_ENV_PIP:
            found.setdefault(m.group("name").lower(), m.group("value"))
    return found


class HandoffError(Exception):
    """The package cannot be made; the message names the run, file and line, and the fix."""


# ------------------------------------------------------------------------------------------------ helpers
def _unknown(how):
    return {"value": "unknown", "how": how}


def _read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def _unix(text, formats):
    """``text`` (UTC) as Unix seconds by the first of ``formats`` it matches, else None."""
    for fmt in formats:
        try:
            return calendar.timegm(time.strptime(text, fmt))
        except (TypeError, ValueError):
            continue
    return None


def _mib(value):
    return round(float(value) / (1024.0 * 1024.0), 1)


# ------------------------------------------------------------------------------------------------ verification
def select_runs(case_dir, runs=None):
    """The run folders to pack (all of the case, oldest first, or the named ``run-NNN``)."""
    numbers = run_numbers(case_dir)
    all_ids = [run_id_for(n) for n in numbers]
    if not all_ids:
        raise HandoffError("%s holds no run-NNN folder: nothing to hand off (run playbooks/reproduce.yml with "
                           "repro_vllm_case_id=%s first)" % (case_dir, os.path.basename(case_dir)))
    if not runs:
        return all_ids
    unknown = [r for r in runs if r not in all_ids]
    if unknown:
        raise HandoffError("runs %s are not in %s (it has %s)" % (", ".join(unknown), case_dir, ", ".join(all_ids)))
    return [r for r in all_ids if r in runs]


def verify_runs(case_dir, run_ids):
    """Verify every run's manifest; raise HandoffError naming the first tampered run and its files."""
    checked = 0
    for rid in run_ids:
        path = os.path.join(case_dir, rid)
        try:
            res = verify(path)
        except RecordError as exc:
            raise HandoffError("%s cannot be verified: %s; the package is not made" % (rid, exc))
        if not res["ok"]:
            raise HandoffError(
                "%s/%s does not match its manifest (%s); the package is not made. The run was changed after it was "
                "frozen: restore it from a verified copy, or leave it out with repro_vllm_handoff_runs"
                % (os.path.basename(case_dir), rid, describe_problems(res)))
        checked += res["checked"]
    return checked


# ------------------------------------------------------------------------------------------------ facts
def _versions_from_logs(run, host):
    found = {}
    for rel in _evidence.host_logs(run, host):
        text = _evidence.read_log_tail(run, host, rel, limit=512 * 1024)
        for name, rx in _VERSION_RES:
            if name in found:
                continue
            m = rx.search(text)
            if m:
                found[name] = {"value": m.group(1).rstrip(",."), "source": _evidence.cite(run, host, rel)}
    return found


def _model_of(argv):
    """(model, revision) from a vllm serve argv."""
    model = revision = None
    args = [str(a) for a in argv or []]
    for i, arg in enumerate(args):
        if arg == "serve" and i + 1 < len(args) and not args[i + 1].startswith("-"):
            model = args[i + 1]
        elif arg in ("--model",) and i + 1 < len(args):
            model = args[i + 1]
        elif arg.startswith("--model="):
            model = arg.split("=", 1)[1]
        elif arg == "--revision" and i + 1 < len(args):
            revision = args[i + 1]
        elif arg.startswith("--revision="):
            revision = arg.split("=", 1)[1]
    return model, revision


def _attempts(runs):
    return [r for r in runs if _evidence.is_attempt(r)]


def _step(run):
    """The run's step as the hand-off shows it: the verdict's chooser, ``-`` when the run names none."""
    return _verdict.run_step(run) or "-"


def _run_row(run):
    stage, error_class, ok = _evidence.attempt_result(run) if _evidence.is_attempt(run) else (None, None, None)
    outcome = run["parts"].get("outcome.json") or {}
    meta = run.get("metadata") or {}
    return {"run": run["run"], "run_uid": meta.get("run_uid"), "status": _verdict.run_status(run),
            "seal_reason": meta.get("seal_reason"), "step": _step(run), "created": run.get("created"),
            "hosts": _evidence.run_hosts(run), "attempt": _evidence.is_attempt(run),
            "stage": stage, "error_class": error_class, "ok": ok,
            "summary": outcome.get("summary") or (run["parts"].get("stages.json") or {}).get("summary")}


def collect_env_item(runs):
    """vLLM's own report of the serving environment (hosts/<head>/collect_env.json of the play's minimal start): the
    newest run that holds one that ran; unknown, with the reason and how, when none did."""
    why = "no run of the case holds it (made before this collection captured it, or repro_vllm_collect_env: false)"
    for run in reversed(runs):
        for host, parts in sorted((run.get("hosts") or {}).items()):
            ce = parts.get("collect_env.json")
            if not isinstance(ce, dict):
                continue
            if ce.get("status") == "ok" and ce.get("output"):
                return {"value": ce["output"], "host": host, "python": ce.get("python"),
                        "source": _evidence.cite(run, host, "collect_env.json")}
            why = "it did not run on %s (%s: %s)" % (host, ce.get("status"), ce.get("msg") or "no message")
    return _unknown("%s; run 'python -m vllm.collect_env' with the python beside the vllm binary of the command (or "
                    "inside the image) on the serving host and attach its output" % why)


def container_argv(run, host, argv=None):
    """The ``<runtime> run ... <image>@sha256:... <vllm args>`` that ran, for a server run in a container (server.json
    ``container``): its ``argv`` as vllm_server recorded it, or, in records made before that key, rebuilt from the
    record (``binary``, ``args`` up to the image, ``run_ref``) and the command's arguments after its program (the
    record's ``--entrypoint`` is that program). None for a bare process."""
    server = (run["hosts"].get(host) or {}).get("server.json")
    ran = server.get("container") if isinstance(server, dict) else None
    if not isinstance(ran, dict) or not ran.get("run_ref"):
        return None
    if ran.get("argv"):
        return [str(a) for a in ran["argv"]]
    args = [str(a) for a in ran.get("args") or []]
    if "--entrypoint" not in args or not argv:
        return None
    return [str(ran.get("binary") or ran.get("runtime")), "run"] + args + [str(ran["run_ref"])] + [str(a) for a in argv[1:]]


def env_sources(cmd, production=(set(), set())):
    """``{name: ENV_SOURCES key}`` for every variable of a node's environment as started (command.json ``env`` and
    ``env_set_by_run``): a secret the production environment held is ``production`` (the minimal command kept it as
    a secret), another secret variable ``secret``; a variable the run set that the production environment gave is
    ``production``, else ``run``; everything else ``inherited``. A name in both the production environment and
    ``repro_vllm_secret_env`` reads ``production`` (the record keeps one list of secret names)."""
    plain, secret = production
    set_by_run = cmd.get("env_set_by_run") or {}
    secrets = set(cmd.get("secret_env_names") or [])
    out = {}
    for name in sorted(set(cmd.get("env") or {}) | set(set_by_run)):
        if name in secrets:
            out[name] = "production" if name in secret else "secret"
        elif name in set_by_run:
            out[name] = "production" if name in plain else "run"
        else:
            out[name] = "inherited"
    return out


def _by_source(sources):
    """``{source: [names]}`` (summary.json keeps names as values: a secret's name as a key would read as a secret)."""
    out = {}
    for name, source in sorted(sources.items()):
        out.setdefault(source, []).append(name)
    return out


def _per_host(runs, picker):
    """``{host: the first answer of picker(run, host, view)}`` over ``runs`` in order (a picker answers None when
    the run does not tell)."""
    hosts = {}
    for run in runs:
        for host in _evidence.run_hosts(run):
            if host not in hosts:
                got = picker(run, host, _evidence.host_view(run, host))
                if got:
                    hosts[host] = got
    return hosts


def _host_item(runs, picker, how, prefer=None):
    """Per host, the newest run's answer from ``picker``; runs holding the ``prefer`` part for that host (the
    fingerprint) are asked first."""
    order = list(reversed(runs))
    if prefer:
        order.sort(key=lambda r: not any(prefer in (r["hosts"].get(h) or {}) for h in r["hosts"]))
    hosts = _per_host(order, picker)
    return {"value": "per host", "hosts": hosts} if hosts else _unknown(how)


def _focus_run(runs, verdict):
    """The run the items answer for: the verdict's run when it is an attempt (the failing one, or the last healthy
    one), else None."""
    rid = (verdict.get("verdict_detail") or {}).get("run")
    for run in runs:
        if run["run"] == rid and _evidence.is_attempt(run):
            return run
    return None


def _derivation(attempts):
    """(run, host, minimal_derivation) of the play's minimal run (command.json), or (None, None, None)."""
    for run in attempts:
        for host in _evidence.run_hosts(run):
            cmd = (run["hosts"].get(host) or {}).get("command.json") or {}
            if isinstance(cmd.get("minimal_derivation"), dict):
                return run, host, cmd["minimal_derivation"]
    return None, None, None


def _production_item(attempts):
    """The production command beside the command that ran: what the minimal derivation kept and removed (by
    category) and the options this collection does not know, from the minimal run's command.json."""
    run, host, der = _derivation(attempts)
    if der is None:
        return {"value": "not applicable", "note": "no production command was given (repro_vllm_production_argv): "
                                                   "the minimal command was built from repro_vllm_model"}
    removed = der.get("removed") or {}
    return {"value": "recorded", "run": run["run"], "host": host, "source": _evidence.cite(run, host, "command.json"),
            "argv": der.get("production_argv"), "minimal_argv": der.get("argv"),
            "kept": [e.get("item") for e in der.get("kept") or [] if isinstance(e, dict)],
            "removed": {cat: [{"item": e.get("item"), "layer": e.get("layer"), "why": e.get("why")}
                              for e in entries if isinstance(e, dict)]
                        for cat, entries in sorted(removed.items()) if isinstance(entries, list)},
            "unknown": [e.get("item") for e in removed.get("unknown") or [] if isinstance(e, dict)],
            "warnings": list(der.get("warnings") or [])}


def _repeat_item(verdict, focus, attempts, play_runs):
    """Was the *failure* reproduced by a second clean run: yes, no or not tried; not applicable without a failure."""
    kind = verdict["verdict"]
    if kind not in ("fails_at_minimal", "fails_at_layer") or focus is None:
        why = {"boundary": "the method stopped at the compatibility boundary: no server was started, nothing to repeat",
               "healthy": "nothing failed: there is no failure to reproduce (healthy repeats are not counted)"}
        return {"value": "not applicable", "note": why.get(kind, "the case has no failed attempt to repeat (%s)" % kind)}
    runs = []
    # declared repeats (repeat.json): the failing run itself repeating an earlier play's run (it reproduced that
    # failure or not), then the runs of this play repeating the failing one (they reproduced it when they failed)
    declared = [(focus, _evidence.declared_repeat(focus), False)]
    declared += [(run, _evidence.declared_repeat(run, of=focus), True) for run in play_runs]
    for run, rep, must_fail in declared:
        if rep is None:
            continue
        same = bool(rep.get("same_stage")) and bool(rep.get("same_error_class"))
        stage, error_class, ok = _evidence.attempt_result(run)
        runs.append({"run": run["run"], "repeats": focus["run"] if must_fail else rep["repeats"],
                     "same_stage": rep.get("same_stage"), "same_error_class": rep.get("same_error_class"),
                     "reproduced": same and not (must_fail and ok), "stage": stage, "error_class": error_class,
                     "summary": rep.get("summary"), "declared": True, "source": _evidence.cite(run, None, "repeat.json")})
    if not runs:
        key = _evidence.attempt_key(focus)
        want = _evidence.attempt_result(focus)
        for run in attempts:
            if run is focus or run["run"] <= focus["run"] or "rollback" in str(_step(run)):
                continue
            if _evidence.attempt_key(run) == key:
                got = _evidence.attempt_result(run)
                runs.append({"run": run["run"], "repeats": focus["run"], "same_stage": got[0] == want[0],
                             "same_error_class": got[1] == want[1], "reproduced": got == want, "stage": got[0],
                             "error_class": got[1], "summary": run["parts"]["outcome.json"].get("summary"),
                             "declared": False, "source": _evidence.cite(run, None, "outcome.json")})
    if not runs:
        return {"value": "not tried", "failed_run": focus["run"],
                "how": "run playbooks/reproduce.yml with repro_vllm_repeat_clean: true: a second clean run of the "
                       "attempt that failed (%s)" % focus["run"]}
    return {"value": "yes" if all(r["reproduced"] for r in runs) else "no", "failed_run": focus["run"], "runs": runs}


def _rollback_item(verdict, focus, play_runs):
    detail = verdict["verdict_detail"]
    if verdict["verdict"] != "fails_at_layer":
        why = {"fails_at_minimal": "the minimal start failed: there is no earlier good state to return to",
               "boundary": "the method stopped at the compatibility boundary before any server was started",
               "healthy": "no layer changed the result, so nothing was rolled back"}
        note = why.get(verdict["verdict"], "no ladder layer failed (%s)" % verdict["verdict"])
        return {"value": "not applicable", "note": note}
    rows = []
    after = False
    for run in play_runs:
        if focus is not None and run is focus:
            after = True
            continue
        outcome = run["parts"].get("outcome.json") or {}
        if after and ("rollback" in str(_step(run)) or outcome.get("rollback_of")):
            stage, error_class, ok = _evidence.attempt_result(run)
            rows.append({"run": run["run"], "step": _step(run), "stage": stage, "error_class": error_class, "ok": ok,
                         "earlier_state_returned": outcome.get("earlier_state_returned"),
                         "rollback_of": outcome.get("rollback_of"), "summary": outcome.get("summary"),
                         "source": _evidence.cite(run, None, "outcome.json")})
    if detail.get("rollback") is None or not rows:
        return {"value": "unknown", "how": "no rollback run after %s: feature_layer rolls back after a failing layer; "
                                           "rerun the ladder (repro_vllm_ladder_until) past layer %s"
                                           % (detail.get("run"), detail.get("layer"))}
    return {"value": detail["rollback"], "runs": rows}


def _compatibility(play_runs):
    for run in reversed(play_runs):
        compat = run["parts"].get("compatibility.json")
        if isinstance(compat, dict):
            return {"profile": compat.get("profile"), "verdict": compat.get("verdict"), "run": run["run"],
                    "violations": [v for v in compat.get("violations") or [] if isinstance(v, dict)],
                    "source": _evidence.cite(run, None, "compatibility.json")}
    return None


_ABS_RUN_RE = re.compile(r"(?<![\w.-])(?:/[^\s/`'\"|]+)*/(run-[0-9]{3,}/)")
_REL_RUN_RE = re.compile(r"(?<![\w/.-])(run-[0-9]{3,}/)")


def package_path(text):
    """A run path as the package holds it: ``runs/run-NNN/...`` for ``run-NNN/...`` or any absolute path of a run."""
    return _REL_RUN_RE.sub(r"runs/\1", _ABS_RUN_RE.sub(r"runs/\1", text))


def _package_paths(data):
    """Every ``source`` and ``file`` (and a timestamp's note) made a path inside the package, never a controller path."""
    if isinstance(data, dict):
        return {k: (package_path(v) if isinstance(v, str) and k in ("source", "file", "timestamp") else _package_paths(v))
                for k, v in data.items()}
    if isinstance(data, list):
        return [_package_paths(v) for v in data]
    return data


def collect_facts(case_id, runs, verdict=None):
    """The summary's facts (``summary.json``) from the read runs (``_evidence.read_run`` answers): the verdict of the
    case's latest play (``_verdict``), and the 13 items answering for its failing run."""
    if verdict is None:
        verdict = _verdict.verdict_of_case(runs, case_id)
    play_ids = set((verdict.get("play") or {}).get("runs") or [])
    play_runs = [r for r in runs if r["run"] in play_ids] or list(runs)
    attempts = _attempts(play_runs)
    focus = _focus_run(play_runs, verdict)
    answering = ([focus] if focus is not None else []) + attempts  # the failing (or last healthy) run first
    items = {}

    def driver(run, host, view):
        if view["driver"] or view["kernel_module"]:
            return {"driver": view["driver"], "kernel_module": view["kernel_module"],
                    "cuda_driver": view["cuda_driver"], "os": view["os"], "kernel": view["kernel"],
                    "source": view["sources"].get("driver")}
        if view["gpu_present"] is False and view["sources"].get("driver"):
            return {"driver": "none (no NVIDIA GPU on this host)", "kernel_module": None, "cuda_driver": None,
                    "os": view["os"], "kernel": view["kernel"], "source": view["sources"].get("driver")}
        return None
    items["host_driver"] = _host_item(runs, driver, "run playbooks/fingerprint.yml on the hosts (gpu_facts reads "
                                                    "nvidia-smi and /proc/driver/nvidia/version)", prefer="fingerprint.json")

    def image(run, host, view):
        if view["image"] or view["image_digest"]:
            out = {"image": view["image"], "digest": view["image_digest"], "by_digest": view["image_by_digest"],
                   "source": view["sources"].get("image")}
            if view.get("image_id"):
                out["image_id"] = view["image_id"]  # the server ran in this image (server.json container)
            return out
        if view["argv"] and not view["image"]:
            return {"image": "none (bare process, no container)", "digest": None, "by_digest": None,
                    "source": view["sources"].get("command")}
        return None
    items["image"] = _host_item(runs, image, "set repro_vllm_image so container_facts records the repo digest "
                                             "(docker image inspect --format '{{.RepoDigests}}' IMAGE)")

    def versions(run, host, view):
        got = {}
        for name, key in (("vllm", "image_vllm"), ("torch", "image_torch"), ("cuda", "image_cuda")):
            if view.get(key):
                got[name] = {"value": view[key], "source": view["sources"].get("image")}
        for name, val in _versions_from_logs(run, host).items():
            got.setdefault(name, val)
        if view["cuda_driver"]:
            got.setdefault("cuda_driver", {"value": view["cuda_driver"], "source": view["sources"].get("driver")})
        return got or None
    items["versions"] = _host_item(runs, versions, "run 'python -m vllm.collect_env' (or vllm's collect_env.py) in "
                                                   "the serving image or venv and attach its output")
    ce = collect_env_item(runs)
    if ce.get("host") and ce.get("value"):
        # vLLM's own report of the serving environment answers what the image probe and the logs did not
        from_ce = {name: {"value": value, "source": ce["source"]}
                   for name, value in versions_from_collect_env(ce["value"]).items()}
        if from_ce:
            if items["versions"].get("value") != "per host":
                items["versions"] = {"value": "per host", "hosts": {}}
            mine = items["versions"]["hosts"].setdefault(ce["host"], {})
            for name, val in from_ce.items():
                mine.setdefault(name, val)
    items["versions"]["collect_env"] = ce

    def gpus(run, host, view):
        if view["gpu_present"] is None and not view["sources"].get("gpus"):
            return None
        return {"count": view["gpu_count"], "names": view["gpu_model"], "visible_devices": view["visible_devices"],
                "compute_capability": view["compute_capability"], "foreign_processes": view["foreign_processes"],
                "map": view["gpu_map"], "source": view["sources"].get("gpus")}
    items["gpus"] = _host_item(runs, gpus, "run playbooks/fingerprint.yml (gpu_facts lists every GPU with its UUID "
                                           "and CUDA_VISIBLE_DEVICES)", prefer="fingerprint.json")

    def command(run, host, view):
        if not view["argv"]:
            return None
        ran = container_argv(run, host, view["argv"])
        if ran:  # the server ran in a container: what ran is the runtime's run of the image by digest
            return {"argv": ran, "shell": quote_argv(ran), "run": run["run"], "vllm_argv": view["argv"],
                    "source": _evidence.cite(run, host, "server.json")}
        return {"argv": view["argv"], "shell": quote_argv(view["argv"]), "run": run["run"],
                "source": view["sources"].get("command")}
    first_cmd = _per_host(answering, command)
    if first_cmd:
        items["command"] = {"value": "per host", "hosts": first_cmd, "run": focus["run"] if focus is not None else None,
                            "failed": focus is not None and verdict["verdict"] not in ("healthy", "refused", "incomplete")}
    elif verdict["verdict"] == "boundary":
        items["command"] = {"value": "not applicable",
                            "note": "the method stopped at the compatibility boundary: no server was started"}
    else:
        items["command"] = _unknown("start the server through playbooks/reproduce.yml (command.json records the argv "
                                    "as started), or paste the production command")
    items["command"]["production"] = _production_item(attempts)

    # the production environment's names the minimal command kept (minimal_derivation: env, secret_env)
    derived = _derivation(attempts)[2] or {}
    production = set(derived.get("env") or {}), set(derived.get("secret_env") or {})

    def environment(run, host, view):
        if view["env"] is None:
            return None
        cmd = (run["hosts"].get(host) or {}).get("command.json") or {}
        return {"set_by_run": view["env_set_by_run"], "inherited": view["inherited_env"],
                "inherited_names": cmd.get("inherited_env_names") or [], "source": view["sources"].get("command"),
                "from": _by_source(env_sources(cmd, production))}
    env_hosts = _per_host(answering, environment)
    if env_hosts:
        items["environment"] = {"value": "per host", "hosts": env_hosts}
    elif verdict["verdict"] == "boundary":
        items["environment"] = {"value": "not applicable", "note": "no server was started (compatibility boundary)"}
    else:
        items["environment"] = _unknown("start the server through playbooks/reproduce.yml (command.json records the "
                                        "environment, secrets redacted)")

    model_hosts = {}
    for host, cmd in first_cmd.items():
        model, revision = _model_of(cmd["argv"])
        if model:
            model_hosts[host] = {"model": model, "revision": revision, "local": model.startswith("/"),
                                 "source": cmd["source"]}
    if model_hosts:
        items["model"] = {"value": "per host", "hosts": model_hosts}
        if all(not m["revision"] for m in model_hosts.values()):
            items["model"]["how"] = ("no --revision in the command: add --revision <commit>, or for local weights "
                                     "attach 'sha256sum <model dir>/*.safetensors <model dir>/config.json'")
    else:
        items["model"] = _unknown("the command names no model: give repro_vllm_model or the production command")

    request = None
    for run in answering:
        req = run["parts"].get("request.json")
        if req and req.get("body") is not None:
            request = {"route": req.get("route"), "body": req.get("body"), "timeout": req.get("timeout"),
                       "concurrency": req.get("concurrency"), "client": req.get("client"),
                       "source": _evidence.cite(run, None, "request.json")}
            break
    items["request"] = request and dict(request, value="recorded") or _unknown(
        "set repro_vllm_request_body (the saved body) and run playbooks/reproduce.yml; single_request replays it "
        "through one fixed client path")

    first = None
    for run in answering:
        stages = run["parts"].get("stages.json") or {}
        err = stages.get("first_error")
        if err:
            first = {"run": run["run"], "stage": stages.get("stage"), "error_class": stages.get("error_class"),
                     "line": err.get("line"), "timestamp": first_error_stamp(run, err), "node": err.get("node"),
                     "process": err.get("process"), "file": err.get("file"), "lineno": err.get("lineno"),
                     "source": _evidence.cite(run, None, "stages.json")}
            break
    if first:
        items["first_exception"] = dict(first, value="found")
        if not first.get("timestamp"):
            items["first_exception"]["how"] = ("the log line has no timestamp and no stamped line precedes it: keep "
                                               "vLLM's default log format or run the container with timestamps "
                                               "(docker logs -t) so order across nodes is known")
    elif verdict["verdict"] == "boundary":
        items["first_exception"] = {"value": "not applicable",
                                    "note": "the method stopped at the compatibility boundary: vLLM was not started"}
    elif verdict["verdict"] == "fails_at_layer" and verdict["verdict_detail"].get("error_class") == "expectation_not_met":
        d = verdict["verdict_detail"]
        items["first_exception"] = {"value": "none", "note": "layer %s served without an exception; its expectation "
                                                             "was not met (%s)" % (d["layer"], d["run"])}
    elif attempts and verdict["verdict"] == "healthy":
        items["first_exception"] = {"value": "none", "note": "no attempt logged an exception: every run passed"}
    else:
        items["first_exception"] = _unknown("run playbooks/reproduce.yml so the server logs are captured and classified")

    stage_rows = []
    for run in attempts:
        stage, error_class, ok = _evidence.attempt_result(run)
        stages = run["parts"].get("stages.json") or {}
        stage_rows.append({"run": run["run"], "step": _step(run), "stage": stage, "error_class": error_class,
                           "ok": ok, "stages_reached": stages.get("stages_reached") or [],
                           "consequences": len(stages.get("consequences") or []),
                           "source": _evidence.cite(run, None, "stages.json")})
    items["stage"] = ({"value": "per run", "runs": stage_rows} if stage_rows else
                      _unknown("run playbooks/reproduce.yml; log_stage classifies every node's log"))

    change_rows = []
    for run in attempts:
        ch = run["parts"].get("changes.json") or {}
        diff = ch.get("diff") or {}
        changed = ch.get("changed_variable") or []
        stage, error_class, ok = _evidence.attempt_result(run)
        change_rows.append({"run": run["run"], "step": ch.get("step") or _step(run), "previous": ch.get("previous_run"),
                            "changed_variable": changed, "differences": _diff_names(diff),
                            "one_variable": diff.get("one_variable"),
                            "unexpected": diff.get("unexpected_variables") or diff.get("unexpected") or [],
                            "stage": stage, "error_class": error_class, "ok": ok,
                            "source": _evidence.cite(run, None, "changes.json")})
    items["changes"] = ({"value": "per run", "runs": change_rows} if change_rows else
                        _unknown("run the ladder (repro_vllm_ladder_until=prefix_caching or later)"))

    items["rollback"] = _rollback_item(verdict, focus, play_runs)
    items["repeat"] = _repeat_item(verdict, focus, attempts, play_runs)

    secret_names = set()
    score = isolation = None
    for run in reversed(runs):
        if score is None and run["parts"].get("score.json") is not None:
            score = dict(run["parts"]["score.json"], source=_evidence.cite(run, None, "score.json"))
        if isolation is None and run["parts"].get("isolation.json") is not None:
            isolation = dict(run["parts"]["isolation.json"], source=_evidence.cite(run, None, "isolation.json"))

    for run in attempts:
        for host in _evidence.run_hosts(run):
            cmd = ((run["hosts"].get(host) or {}).get("command.json") or {})
            secret_names.update(cmd.get("secret_env_names") or [])
            for name, value in list((cmd.get("env_set_by_run") or {}).items()) + list((cmd.get("env") or {}).items()):
                if isinstance(value, str) and value.startswith("<redacted"):
                    secret_names.add(name)
            for i, arg in enumerate(cmd.get("argv") or []):
                if isinstance(arg, str) and arg.startswith("<redacted") and i:
                    secret_names.add("argv " + str(cmd["argv"][i - 1]))
                elif isinstance(arg, str) and "=<redacted" in arg:
                    secret_names.add("argv " + arg.split("=", 1)[0])

    play_of = {}
    for group in _verdict.plays(runs):
        for r in group["runs"]:
            play_of[r["run"]] = group["play_id"]
    rows = []
    for r in runs:
        rows.append(dict(_run_row(r), play=play_of.get(r["run"]), status=_verdict.run_status(r)))
    return _package_paths({
        "format": SUMMARY_FORMAT, "case_id": case_id,
        "verdict": verdict["verdict"], "verdict_detail": verdict["verdict_detail"],
        "verdict_sentence": verdict["verdict_sentence"], "play": verdict.get("play"),
        "history": verdict.get("history") or [],
        "compatibility": _compatibility(play_runs),
        "runs": rows,
        "items": items,
        "score": score, "isolation": isolation,
        "secret_variable_names": sorted(secret_names),
    })


def _diff_names(diff):
    """What differs from the previous run, from record_diff's answer: ``variable key: before -> after``."""
    names = []
    if not isinstance(diff, dict):
        return names
    for entry in diff.get("changes") or []:
        if isinstance(entry, dict):
            names.append("%s %s: %s -> %s" % (entry.get("variable"), entry.get("key"), _short(entry.get("before")),
                                              _short(entry.get("after"))))
        else:
            names.append(str(entry))
    return names


def _short(value, limit=60):
    text = "unset" if value is None else str(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ------------------------------------------------------------------------------------------------ pictures
def timeline_rows(runs):
    """Rows of the stage grid: one per (attempt run, node); the first failure across the case is starred."""
    rows = []
    first_key = None
    for run in _attempts(runs):
        stages = run["parts"].get("stages.json") or {}
        err = stages.get("first_error") or {}
        if err and first_key is None:
            first_key = (run["run"], err.get("node"))
        for node in stages.get("timeline") or []:
            reached = []
            for mark in node.get("stage_marks") or []:
                if mark.get("stage") not in reached:
                    reached.append(mark.get("stage"))
            if node.get("stage_reached") and node["stage_reached"] not in reached:
                reached.append(node["stage_reached"])
            own = node.get("first_error") or {}
            failed = own.get("stage") if own else None
            when = own.get("timestamp") if own else node.get("last_timestamp")
            note = ("%s %s" % (own.get("error_class") or "error", when or "")).strip() if own else (
                "ready %s" % node.get("ready_timestamp") if node.get("ready") else "reached %s" % (node.get("stage_reached") or "-"))
            rows.append({"label": "%s %s %s" % (run["run"], _step(run), node.get("node") or "-"),
                         "run": run["run"], "node": node.get("node"), "reached": reached, "failed": failed,
                         "marks": node.get("stage_marks") or [], "note": note,
                         "failed_at": own.get("timestamp") if own else None,
                         "first": (run["run"], node.get("node")) == first_key})
    return rows


def memory_series(run, host):
    """(series, marks, start) of one host's memory.jsonl in a run; times in seconds since the server start."""
    text = _read_text(os.path.join(run["path"], "hosts", host, "memory.jsonl"))
    if text is None:
        text = _read_text(os.path.join(run["path"], "hosts", host, "logs", "memory.jsonl"))
    if not text:
        return [], [], None
    samples = []
    for line in text.splitlines():
        try:
            s = json.loads(line)
        except ValueError:
            continue
        if isinstance(s, dict) and isinstance(s.get("t"), (int, float)):
            samples.append(s)
    server = (run["hosts"].get(host) or {}).get("server.json") or {}
    start = (server.get("start") or {}).get("started_at")
    t0 = start if isinstance(start, (int, float)) else (samples[0]["t"] if samples else None)
    if t0 is None:
        return [], [], None
    rss = [(s["t"] - t0, _mib(s.get("rss_bytes") or 0)) for s in samples]
    series = [{"name": "%s RSS" % host, "points": rss}] if rss else []
    gpu_idx = sorted({g.get("index") for s in samples for g in (s.get("gpus") or []) if isinstance(g, dict)},
                     key=lambda v: (v is None, v))
    for idx in gpu_idx:
        pts = [(s["t"] - t0, float(g.get("memory_used_mib") or 0)) for s in samples for g in (s.get("gpus") or [])
               if isinstance(g, dict) and g.get("index") == idx]
        series.append({"name": "%s GPU %s" % (host, idx), "points": pts})
    marks = [{"x": 0.0, "label": "start"}]
    ttr = (server.get("start") or {}).get("time_to_ready_s")
    if isinstance(ttr, (int, float)):
        marks.append({"x": float(ttr), "label": "ready"})
    for rel in sorted(run.get("files") or []):
        if rel.startswith("responses/") and rel.endswith(".json"):
            resp = _record.read_json_file(os.path.join(run["path"], rel)) or {}
            sent = _first_number(resp, ("sent_at", "started_at"))
            if sent is not None:
                marks.append({"x": sent - t0, "label": "request " + os.path.basename(rel)[:-5]})
    if not any(m["label"].startswith("request") for m in marks):
        first_request = _log_mark_seconds(run, host, server, "request", ttr if isinstance(ttr, (int, float)) else None)
        if first_request is not None:
            marks.append({"x": first_request, "label": "request (log)"})
    after = _first_number(((server.get("after_requests") or {}).get("memory") or {}).get("last"), ("t",))
    if after is not None and after - t0 > 0:
        marks.append({"x": after - t0, "label": "requests done"})
    stop = server.get("stop") or {}
    stopped = _first_number(stop, ("stopped_at", "finished_at", "ended_at"))
    if stopped is None:
        stopped = _first_number((stop.get("memory") or {}).get("last"), ("t",))
    if stopped is not None:
        marks.append({"x": stopped - t0, "label": "stop"})
    elif samples:
        marks.append({"x": samples[-1]["t"] - t0, "label": "last sample"})
    return series, marks, t0


def _log_seconds(stamp):
    """vLLM's ``MM-DD HH:MM:SS`` (no year, host time) as seconds, only for differences within one log."""
    if not isinstance(stamp, str):
        return None
    got = _unix("1972-" + stamp, ("%Y-%m-%d %H:%M:%S",))
    return got if got is not None else _unix(stamp[:19], ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"))


def _log_mark_seconds(run, host, server, stage, ready_s=None):
    """Seconds since the server start at which the node's log reached ``stage`` (the classifier's stage marks).

    The log's clock is anchored at readiness when known (``ready_s`` after start = the ``api_ready`` mark), else at
    the log's first mark (which comes after the interpreter's start-up, so it reads early).
    """
    marks = ((server.get("after_requests") or {}).get("stage_marks") or (server.get("stop") or {}).get("stage_marks")
             or [])
    if not marks:
        for node in (run["parts"].get("stages.json") or {}).get("timeline") or []:
            if node.get("node") == host:
                marks = node.get("stage_marks") or []
    at = {m.get("stage"): _log_seconds(m.get("timestamp")) for m in reversed(marks)}
    if at.get(stage) is None:
        return None
    if ready_s is not None and at.get("api_ready") is not None:
        return float(ready_s + at[stage] - at["api_ready"])
    base = _log_seconds(marks[0].get("timestamp"))
    return float(at[stage] - base) if base is not None else None


def _first_number(data, keys):
    if not isinstance(data, dict):
        return None
    for key in keys:
        if isinstance(data.get(key), (int, float)) and not isinstance(data.get(key), bool):
            return float(data[key])
    return None


def pictures(runs):
    """{'files': {relpath: svg text}, 'timeline_rows': [...], 'memory': [{run, host, series names, marks, mermaid, file}]}"""
    files = {}
    rows = timeline_rows(runs)
    files["pictures/stage-timeline.svg"] = stage_grid("Stage reached per node and run (red: failed there)",
                                                      list(STAGES), rows)
    memory = []
    for run in _attempts(runs):
        for host in _evidence.run_hosts(run):
            series, marks, _t0 = memory_series(run, host)
            if not series:
                continue
            rel = "pictures/memory-%s-%s.svg" % (run["run"], _safe_name(host))
            title = "%s (%s) %s: memory" % (run["run"], _step(run), host)
            files[rel] = line_chart(title, series, marks)
            memory.append({"run": run["run"], "host": host, "file": rel,
                           "series": [s["name"] for s in series],
                           "peak_mib": {s["name"]: max(p[1] for p in s["points"]) for s in series if s["points"]},
                           "marks": [{"label": m["label"], "seconds": round(m["x"], 1)} for m in marks],
                           "mermaid": memory_mermaid(title, series)})
    return {"files": files, "timeline_rows": rows, "memory": memory}


def _safe_name(text):
    return re.sub(r"[^A-Za-z0-9._-]", "_", str(text)) or "_"


# ------------------------------------------------------------------------------------------------ members and tar
def manifest_without_owner(path):
    """A run's manifest.json as packed: ``metadata.owner`` (controller, records root, pid, user, job id) left out.
    The files it lists are unchanged, so the run still verifies against it in the package."""
    with open(path, "rb") as f:
        manifest = json.loads(f.read().decode("utf-8"))
    if isinstance(manifest.get("metadata"), dict) and "owner" in manifest["metadata"]:
        manifest["metadata"] = dict((k, v) for k, v in manifest["metadata"].items() if k != "owner")
        manifest["metadata"]["owner_withheld"] = True
    return render_json(manifest)


def run_members(case_dir, run_ids, top):
    """(arcname, absolute path) for every regular file of the runs (manifest.json included), sorted."""
    out = []
    for rid in run_ids:
        base = os.path.join(case_dir, rid)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, case_dir).replace(os.sep, "/")
                if os.path.islink(full) or not os.path.isfile(full):
                    raise HandoffError("%s is not a regular file; a run holds only regular files" % full)
                out.append(("%s/runs/%s" % (top, rel), full))
    return out


def safe_member(name):
    """True for a relative, normalised member path without '..', absolute parts or odd characters."""
    if not name or name.startswith("/") or "\\" in name or "//" in name:
        return False
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return False
    return bool(_SAFE_MEMBER_RE.match(name))


def scan_members(members):
    """[(arcname, line, kind)] of secret shapes in any member (path or bytes)."""
    findings = []
    for arc, src in members:
        data = src if isinstance(src, bytes) else _read_bytes(src)
        text = data.decode("utf-8", "replace")
        for line, kind in scan_secrets(text):
            findings.append((arc, line, kind))
    return findings


def _read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def write_tar_gz(path, members, mtime):
    """Deterministic tar.gz, streamed (a file at a time): members in the given (sorted) order with their parent
    folders first, fixed metadata, gzip without a name or a time.  Returns the sha256 of the written file."""
    mtime = int(mtime or 0)

    def info_for(name, kind, size=0):
        info = tarfile.TarInfo(name)
        info.type = kind
        info.size = size
        info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
        info.mtime, info.uid, info.gid, info.uname, info.gname = mtime, 0, 0, "", ""
        return info

    tmp = path + ".part"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as gz:
                with tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar:
                    dirs_done = set()
                    for arc, src in members:
                        parts = arc.split("/")
                        for i in range(1, len(parts)):
                            d = "/".join(parts[:i])
                            if d not in dirs_done:
                                dirs_done.add(d)
                                tar.addfile(info_for(d, tarfile.DIRTYPE))
                        if isinstance(src, bytes):
                            tar.addfile(info_for(arc, tarfile.REGTYPE, len(src)), io.BytesIO(src))
                        else:
                            with open(src, "rb") as data:
                                size = os.fstat(data.fileno()).st_size
                                tar.addfile(info_for(arc, tarfile.REGTYPE, size), data)
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(path):
            raise HandoffError("%s already exists; nothing was overwritten (run again a second later)" % path)
        os.rename(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return _record.hash_file(path)[1]


def build_package(records_root, case_id, runs=None, profile_file=None, stamp=None, check_mode=False):
    """Make the hand-off package of a case.  Returns dict(path, sha256, sha256_path, name, members, runs, findings,
    summary (facts), bytes, redactions).  Raises HandoffError with a message naming the run/file/line to fix."""
    validate_case_id(case_id)
    case_dir = os.path.join(os.path.abspath(records_root), case_id)
    if not os.path.isdir(case_dir):
        raise HandoffError("%s does not exist: no case %r under %s (check repro_vllm_records_root and "
                           "repro_vllm_case_id)" % (case_dir, case_id, records_root))
    # a run a killed play left open is sealed first (incomplete, interrupted) once its owner is provably gone; a run
    # whose play still runs is left out of the package and named
    sealing = _record.seal_interrupted(case_dir, _record.read_collection_version(),
                                       {"play": "handoff"}, check_mode=check_mode)
    still_open = dict((o["run"], o["why"]) for o in sealing["open"])
    run_ids = [rid for rid in select_runs(case_dir, runs) if rid not in still_open
               and not (check_mode and rid in [x["run"] for x in sealing["sealed"]])]
    if not run_ids:
        raise HandoffError("every run of %s is still open (%s); hand the case off once its play has ended"
                           % (case_dir, "; ".join("%s: %s" % kv for kv in sorted(still_open.items()))))
    checked = verify_runs(case_dir, run_ids)
    read = [_evidence.read_run(os.path.join(case_dir, rid)) for rid in run_ids]
    top = "%s-handoff" % case_id
    facts = collect_facts(case_id, read, _verdict.verdict_of_case(read, case_id))
    pics = pictures(read)

    members = []
    generated = {}
    for arc, src in run_members(case_dir, run_ids, top):
        if arc.count("/") == 3 and arc.endswith("/" + MANIFEST):
            # <top>/runs/<run>/manifest.json: the package names the run by its run_uid; who ran it stays here
            generated[arc[len(top) + 1:]] = manifest_without_owner(src)
        else:
            members.append((arc, src))
    redactions = {}
    for arc, src in members:
        marks = redaction_markers(_read_bytes(src).decode("utf-8", "replace"))
        if marks:
            redactions[arc[len(top) + 1:]] = marks
    if profile_file:
        if not os.path.isfile(profile_file):
            raise HandoffError("profile file %s does not exist (repro_vllm_handoff_profile_file)" % profile_file)
        pname = "profile/" + _safe_name(os.path.basename(profile_file))
        generated[pname] = _read_bytes(profile_file)
        facts["profile_file"] = pname
    else:
        facts["profile_file"] = None
    facts["pictures"] = {"timeline": "pictures/stage-timeline.svg",
                         "memory": [{k: v for k, v in m.items() if k != "mermaid"} for m in pics["memory"]]}
    facts["redactions"] = [{"file": f, "line": line, "kind": kind} for f, v in sorted(redactions.items())
                           for line, kind in v]
    facts["verified"] = {"runs": run_ids, "files_checked": checked}
    facts["sealed_now"] = [{"run": x["run"], "run_uid": x["run_uid"], "why": x["why"]} for x in sealing["sealed"]]
    facts["left_out_open"] = [{"run": rid, "why": why} for rid, why in sorted(still_open.items())]
    for rel, svg in pics["files"].items():
        generated[rel] = svg.encode("utf-8")
    generated["summary.md"] = render_markdown(facts, pics, read, redactions).encode("utf-8")
    generated["summary.json"] = (json.dumps(facts, indent=2, sort_keys=True, default=str) + "\n").encode("utf-8")
    generated["redactions.json"] = (json.dumps(facts["redactions"], indent=2, sort_keys=True) + "\n").encode("utf-8")
    all_members = sorted([("%s/%s" % (top, k), v) for k, v in generated.items()] + members, key=lambda m: m[0])
    bad = [arc for arc, _src in all_members if not safe_member(arc)]
    if bad:
        raise HandoffError("unsafe member paths %s; rename those files in the run (only letters, digits and ._-@+=, "
                           "no '..')" % ", ".join(bad[:5]))
    findings = scan_members(all_members)
    if findings:
        raise HandoffError(
            "secret shapes found, the package is not made: %s. The frozen runs are not rewritten: redact at the "
            "source (repro.vllm.redact with the case key) and make the run again, or leave the run out with "
            "repro_vllm_handoff_runs" % "; ".join("%s line %d (%s)" % f for f in findings[:10]))
    newest = max([_unix(r.get("created"), ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%S")) or 0
                  for r in read] + [0])
    out_dir = os.path.join(case_dir, HANDOFF_DIR)
    stamp = stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    name = "%s-handoff-%s.tar.gz" % (case_id, stamp)
    if not _NAME_RE.match(name):
        raise HandoffError("package name %r is not a safe file name" % name)
    path = os.path.join(out_dir, name)
    result = {"name": name, "path": path, "sha256_path": path + ".sha256", "runs": run_ids,
              "members": [m[0] for m in all_members], "summary": facts, "redactions": facts["redactions"],
              "findings": [], "files_checked": checked,
              # sealed runs whose hosts' files never reached the controller, and how to get them (issue 32)
              "host_files_missing": [m for m in (_record.host_files_never_fetched(os.path.join(case_dir, rid))
                                                 for rid in run_ids) if m]}
    if check_mode:
        result.update(sha256=None, bytes=None, changed=True)
        return result
    os.makedirs(out_dir, mode=0o755, exist_ok=True)
    digest = write_tar_gz(path, all_members, newest)
    tmp = path + ".sha256.part"
    with open(tmp, "w") as f:
        f.write("%s  %s\n" % (digest, name))
    os.rename(tmp, path + ".sha256")
    result.update(sha256=digest, bytes=os.path.getsize(path), changed=True)
    return result


def check_package(path):
    """Read a package back: its .sha256 matches, members are safe, no secret shape inside.  Returns a dict."""
    with open(path + ".sha256") as f:
        want = f.read().split()[0]
    digest = _record.hash_file(path)[1]
    problems = []
    if digest != want:
        problems.append("sha256 differs from %s.sha256" % os.path.basename(path))
    names = []
    with tarfile.open(path, "r:gz") as tar:
        for info in tar:
            if not safe_member(info.name) or not (info.isfile() or info.isdir()):
                problems.append("unsafe member %s" % info.name)
                continue
            if info.isfile():
                names.append(info.name)
                problems += ["%s line %d (%s)" % f for f in scan_members([(info.name, tar.extractfile(info).read())])]
    return {"ok": not problems, "problems": problems, "members": names, "sha256": digest}
