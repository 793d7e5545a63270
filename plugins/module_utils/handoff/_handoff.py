"""The hand-off package: one deterministic ``tar.gz`` of a case's frozen runs an upstream maintainer can act on.

Why one file (over 1,000 lines): the package's facts, pictures, ``summary.md`` and tar are one deterministic build
(``build_package``) citing the same runs through the same helpers (``_cite``, ``_unknown``, the Markdown writers);
the SVG drawing is already ``_svg.py``. The natural split (render / pack) waits for the one step chooser of issue 34
item 4.

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
import hashlib
import io
import json
import os
import re
import shlex
import tarfile
import time

from ansible_collections.repro.vllm.plugins.module_utils.record import _evidence, _record
from ansible_collections.repro.vllm.plugins.module_utils.decide import _verdict
from ansible_collections.repro.vllm.plugins.module_utils.record._record import (
    MANIFEST, RecordError, describe_problems, render_json, run_id_for, run_numbers, validate_case_id, verify)
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import redaction_markers, scan_secrets
from ansible_collections.repro.vllm.plugins.module_utils.decide._score import first_error_stamp, score_markdown
from ansible_collections.repro.vllm.plugins.module_utils.handoff._svg import line_chart, stage_grid

SUMMARY_FORMAT = 2
HANDOFF_DIR = "handoff"
STAGES = ("environment", "config", "cuda_init", "distributed_init", "weight_loading", "engine_init", "api_ready",
          "request")
ITEMS = (
    ("host_driver", "Host driver"),
    ("image", "Image digest"),
    ("versions", "vLLM and runtime versions"),
    ("gpus", "GPU count, names and visibility"),
    ("command", "Full startup command"),
    ("environment", "Relevant environment (redacted)"),
    ("model", "Model revision or local weight identifier"),
    ("request", "Fixed request body"),
    ("first_exception", "First exception with timestamp"),
    ("stage", "Stage classification"),
    ("changes", "One-variable change table across runs"),
    ("rollback", "Result after rollback"),
    ("repeat", "Second clean run"),
)
MAX_LOG_EXCERPT_LINES = 80
MAX_MEMORY_POINTS = 60
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
# who writes score.json and isolation.json: reproduce.yml's last play (the decide role, a summary run of the case);
# playbooks/diff.yml writes diff.json and diff.md, not these
SUMMARY_RUN_HOW = ("run playbooks/reproduce.yml on this case: its last play (\"Reproduce | baseline score and isolation "
                   "decision\", the decide role) writes %s into a summary run of the case")


def _unknown(how):
    return {"value": "unknown", "how": how}


def _cite(run, host=None, part=None):
    return _evidence.cite(run, host, part)


def _read_text(path, limit=None):
    try:
        with open(path, "rb") as f:
            data = f.read() if limit is None else f.read(limit)
    except OSError:
        return None
    return data.decode("utf-8", "replace")


def _parse_created(value):
    if not isinstance(value, str):
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%S"):
        try:
            return calendar.timegm(time.strptime(value, fmt))
        except ValueError:
            continue
    return None


def _mib(value):
    return round(float(value) / (1024.0 * 1024.0), 1)


def _quote_argv(argv):
    return " ".join(shlex.quote(str(a)) if not str(a).startswith("<redacted") else str(a) for a in argv)


def _md_cell(value):
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ").strip() or "-"


def _md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _col in header) + "|"]
    for row in rows:
        out.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
    return "\n".join(out)


def _fence(text, lang="text"):
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return "%s%s\n%s\n%s" % (ticks, lang, text.rstrip("\n"), ticks)


def _details(summary, body):
    return "<details>\n<summary>%s</summary>\n\n%s\n\n</details>" % (summary, body)


def _mermaid_label(text):
    return re.sub(r"\s+", " ", re.sub(r"[\"<>{}\[\]()|#;`]", " ", str(text))).strip() or "-"


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
def _host_logs(run, host):
    entry = run["hosts"].get(host) or {}
    return [rel for rel in entry.get("logs") or [] if rel.endswith(".log")]


def _versions_from_logs(run, host):
    found = {}
    for rel in _host_logs(run, host):
        text = _evidence.read_log_tail(run, host, rel, limit=512 * 1024)
        for name, rx in _VERSION_RES:
            if name in found:
                continue
            m = rx.search(text)
            if m:
                found[name] = {"value": m.group(1).rstrip(",."), "source": _cite(run, host, rel)}
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
                        "source": _cite(run, host, "collect_env.json")}
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


# where each variable of the server's environment came from (summary.json items.environment.hosts.<h>.from)
ENV_SOURCES = {
    "run": "set by the run",
    "production": "the production environment (repro_vllm_production_env)",
    "secret": "the secret environment (repro_vllm_secret_env)",
    "inherited": "inherited",
}


def _production_env(attempts):
    """``(plain, secret)`` names of the production environment the minimal command kept, from the play's minimal
    run (command.json ``minimal_derivation``: ``env`` the kept variables, ``secret_env`` the secret ones)."""
    for run in attempts:
        for host in _evidence.run_hosts(run):
            derived = ((run["hosts"].get(host) or {}).get("command.json") or {}).get("minimal_derivation")
            if isinstance(derived, dict):
                return set(derived.get("env") or {}), set(derived.get("secret_env") or {})
    return set(), set()


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


def _host_item(runs, picker, how, prefer=None):
    """Per host, the newest run's answer from ``picker(run, host, view)`` -> dict or None; runs holding the
    ``prefer`` part for that host (the fingerprint) are asked first."""
    hosts = {}
    order = list(reversed(runs))
    if prefer:
        order = [r for r in order if any(prefer in (r["hosts"].get(h) or {}) for h in r["hosts"])] + \
            [r for r in order if not any(prefer in (r["hosts"].get(h) or {}) for h in r["hosts"])]
    for run in order:
        for host in _evidence.run_hosts(run):
            if host in hosts:
                continue
            got = picker(run, host, _evidence.host_view(run, host))
            if got:
                hosts[host] = got
    if not hosts:
        return _unknown(how)
    return {"value": "per host", "hosts": hosts}


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
    return {"value": "recorded", "run": run["run"], "host": host, "source": _cite(run, host, "command.json"),
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
    own = _evidence.declared_repeat(focus)
    if own is not None:
        # the failing run is itself the second clean run of an earlier play's run: it reproduced that failure or not
        same = bool(own.get("same_stage")) and bool(own.get("same_error_class"))
        stage, error_class, _ok = _evidence.attempt_result(focus)
        runs.append({"run": focus["run"], "repeats": own["repeats"], "same_stage": own.get("same_stage"),
                     "same_error_class": own.get("same_error_class"), "reproduced": same, "stage": stage,
                     "error_class": error_class, "summary": own.get("summary"), "declared": True,
                     "source": _cite(focus, None, "repeat.json")})
    for run in play_runs:
        rep = _evidence.declared_repeat(run, of=focus)
        if rep is not None:
            same = bool(rep.get("same_stage")) and bool(rep.get("same_error_class"))
            stage, error_class, ok = _evidence.attempt_result(run)
            runs.append({"run": run["run"], "repeats": focus["run"], "same_stage": rep.get("same_stage"),
                         "same_error_class": rep.get("same_error_class"), "reproduced": same and not ok,
                         "stage": stage, "error_class": error_class, "summary": rep.get("summary"),
                         "declared": True, "source": _cite(run, None, "repeat.json")})
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
                             "declared": False, "source": _cite(run, None, "outcome.json")})
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
                         "source": _cite(run, None, "outcome.json")})
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
                    "source": _cite(run, None, "compatibility.json")}
    return None


# a redaction marker directly followed by punctuation (``<redacted>,``) reads as a value to the secret scan
_MARKER_END_RE = re.compile(r"(<redacted(?::[a-z0-9_]+(?::[0-9a-f]{8,64})?)?>)(?=\S)")
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
            return {"argv": ran, "shell": _quote_argv(ran), "run": run["run"], "vllm_argv": view["argv"],
                    "source": _cite(run, host, "server.json")}
        return {"argv": view["argv"], "shell": _quote_argv(view["argv"]), "run": run["run"],
                "source": view["sources"].get("command")}
    first_cmd = {}
    for run in ([focus] if focus is not None else []) + attempts:
        for host in _evidence.run_hosts(run):
            view = _evidence.host_view(run, host)
            if view["argv"] and host not in first_cmd:
                first_cmd[host] = command(run, host, view)
    failed = focus is not None and verdict["verdict"] not in ("healthy", "refused", "incomplete")
    items["command"] = ({"value": "per host", "hosts": first_cmd, "run": focus["run"] if focus is not None else None,
                         "failed": failed, "production": _production_item(attempts)} if first_cmd else
                        dict(_unknown("start the server through playbooks/reproduce.yml (command.json records the argv "
                                      "as started), or paste the production command"),
                             production=_production_item(attempts)))
    if not first_cmd and verdict["verdict"] == "boundary":
        items["command"] = {"value": "not applicable", "production": _production_item(attempts),
                            "note": "the method stopped at the compatibility boundary: no server was started"}

    secret_names = set()

    production = _production_env(attempts)

    def environment(run, host, view):
        cmd = ((run["hosts"].get(host) or {}).get("command.json") or {})
        secret_names.update(cmd.get("secret_env_names") or [])
        if view["env"] is None:
            return None
        return {"set_by_run": view["env_set_by_run"], "inherited": view["inherited_env"],
                "inherited_names": cmd.get("inherited_env_names") or [], "source": view["sources"].get("command"),
                "from": _by_source(env_sources(cmd, production))}
    env_hosts = {}
    for run in ([focus] if focus is not None else []) + attempts:
        for host in _evidence.run_hosts(run):
            if host not in env_hosts:
                got = environment(run, host, _evidence.host_view(run, host))
                if got:
                    env_hosts[host] = got
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
    for run in ([focus] if focus is not None else []) + attempts:
        req = run["parts"].get("request.json")
        if req and req.get("body") is not None:
            request = {"route": req.get("route"), "body": req.get("body"), "timeout": req.get("timeout"),
                       "concurrency": req.get("concurrency"), "client": req.get("client"),
                       "source": _cite(run, None, "request.json")}
            break
    items["request"] = request and dict(request, value="recorded") or _unknown(
        "set repro_vllm_request_body (the saved body) and run playbooks/reproduce.yml; single_request replays it "
        "through one fixed client path")

    first = None
    for run in ([focus] if focus is not None else []) + attempts:
        stages = run["parts"].get("stages.json") or {}
        err = stages.get("first_error")
        if err:
            first = {"run": run["run"], "stage": stages.get("stage"), "error_class": stages.get("error_class"),
                     "line": err.get("line"), "timestamp": first_error_stamp(run, err), "node": err.get("node"),
                     "process": err.get("process"), "file": err.get("file"), "lineno": err.get("lineno"),
                     "source": _cite(run, None, "stages.json")}
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
                           "source": _cite(run, None, "stages.json")})
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
                            "source": _cite(run, None, "changes.json")})
    items["changes"] = ({"value": "per run", "runs": change_rows} if change_rows else
                        _unknown("run the ladder (repro_vllm_ladder_until=prefix_caching or later)"))

    items["rollback"] = _rollback_item(verdict, focus, play_runs)
    items["repeat"] = _repeat_item(verdict, focus, attempts, play_runs)

    score = isolation = None
    for run in reversed(runs):
        if score is None and run["parts"].get("score.json") is not None:
            score = dict(run["parts"]["score.json"], source=_cite(run, None, "score.json"))
        if isolation is None and run["parts"].get("isolation.json") is not None:
            isolation = dict(run["parts"]["isolation.json"], source=_cite(run, None, "isolation.json"))

    for run in attempts:
        for host in _evidence.run_hosts(run):
            cmd = ((run["hosts"].get(host) or {}).get("command.json") or {})
            secret_names.update(cmd.get("secret_env_names") or [])
            for name, value in (cmd.get("env_set_by_run") or {}).items():
                if isinstance(value, str) and value.startswith("<redacted"):
                    secret_names.add(name)
            for name, value in (cmd.get("env") or {}).items():
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
    first_run = None
    for run in _attempts(runs):
        stages = run["parts"].get("stages.json") or {}
        err = stages.get("first_error") or {}
        if err and first_run is None:
            first_run = run["run"]
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
                         "first": False, "_key": (run["run"], node.get("node"))})
    for row in rows:
        row["first"] = first_key is not None and row["_key"] == first_key
        del row["_key"]
    return rows


def timeline_mermaid(rows):
    """A Mermaid flowchart: per run and node, the stages reached in order, the failing one red."""
    out = ["flowchart LR"]
    for i, row in enumerate(rows):
        out.append('  subgraph r%d["%s"]' % (i, _mermaid_label(("* " if row["first"] else "") + row["label"])))
        out.append("    direction LR")
        ids = []
        times = {}
        for mark in row["marks"]:
            times.setdefault(mark.get("stage"), mark.get("timestamp"))
        if row["failed"] and row.get("failed_at"):
            times[row["failed"]] = row["failed_at"]
        for j, stage in enumerate(row["reached"]):
            nid = "r%ds%d" % (i, j)
            label = stage if not times.get(stage) else "%s %s" % (stage, times[stage])
            if stage == row["failed"]:
                label = "FAILED %s" % label
            out.append('    %s["%s"]' % (nid, _mermaid_label(label)))
            ids.append((nid, stage))
        if len(ids) > 1:
            out.append("    " + " --> ".join(n for n, _s in ids))
        out.append("  end")
        for nid, stage in ids:
            if stage == row["failed"]:
                out.append("  style %s fill:#f8d0d0,stroke:#d62728" % nid)
    return "\n".join(out)


def memory_series(run, host):
    """(series, marks, start) of one host's memory.jsonl in a run; times in seconds since the server start."""
    path = os.path.join(run["path"], "hosts", host, "memory.jsonl")
    text = _read_text(path)
    if text is None:
        path = os.path.join(run["path"], "hosts", host, "logs", "memory.jsonl")
        text = _read_text(path)
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
    server = ((run["hosts"].get(host) or {}).get("server.json")) or _read_json(
        os.path.join(run["path"], "hosts", host, "server.json")) or {}
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
            resp = _read_json(os.path.join(run["path"], rel)) or {}
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
    for fmt in ("%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"):
        try:
            parsed = time.strptime(("1972-" + stamp) if fmt == "%m-%d %H:%M:%S" else stamp[:19],
                                   ("%Y-" + fmt) if fmt == "%m-%d %H:%M:%S" else fmt)
        except ValueError:
            continue
        return calendar.timegm(parsed)
    return None


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


def _read_json(path):
    text = _read_text(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _resample(points, limit=MAX_MEMORY_POINTS):
    if len(points) <= limit:
        return points
    step = (len(points) - 1) / float(limit - 1)
    return [points[int(round(i * step))] for i in range(limit)]


def memory_mermaid(title, series):
    """A Mermaid xychart (GitHub renders ``xychart-beta``): each series resampled to at most 60 points."""
    usable = [s for s in series if s["points"]]
    if not usable:
        return None
    base = _resample(usable[0]["points"])
    xs = [p[0] for p in base]
    out = ["xychart-beta", '  title "%s"' % _mermaid_label(title),
           '  x-axis "seconds since start" [%s]' % ", ".join('"%s"' % int(round(x)) for x in xs),
           '  y-axis "MiB"']
    for s in usable:
        pts = s["points"]
        vals = []
        for x in xs:  # nearest sample of this series to each x of the first one
            best = min(pts, key=lambda p, x=x: abs(p[0] - x))
            vals.append("%.1f" % best[1])
        out.append("  line [%s]" % ", ".join(vals))
    return "\n".join(out)


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


# ------------------------------------------------------------------------------------------------ summary.md
def _item_md(key, item):
    """Markdown body of one of the 13 items."""
    if item.get("value") == "unknown" and key != "command":
        return "**unknown** - how to get it: %s" % item.get("how")
    if item.get("value") in ("not applicable", "none", "not tried") and key not in ("command",):
        text = "**%s** - %s" % (item["value"], item.get("note") or item.get("how"))
        return text if item["value"] != "not tried" else "Reproduced by a second clean run: " + text
    lines = []
    hosts = item.get("hosts")
    if key == "host_driver":
        lines.append(_md_table(["host", "driver", "kernel module", "CUDA (driver)", "OS", "kernel", "source"],
                               [[h, v.get("driver") or "unknown", v.get("kernel_module") or "unknown",
                                 v.get("cuda_driver") or "unknown", v.get("os") or "unknown", v.get("kernel") or "unknown",
                                 v.get("source")] for h, v in sorted(hosts.items())]))
    elif key == "image":
        lines.append(_md_table(["host", "image", "digest", "run by digest", "source"],
                               [[h, v.get("image"), v.get("digest") or "unknown (no container)", v.get("by_digest"),
                                 v.get("source")] for h, v in sorted(hosts.items())]))
    elif key == "versions":
        rows = []
        for h, v in sorted(hosts.items()):
            for name in sorted(v):
                rows.append([h, name, v[name]["value"], v[name]["source"]])
            for name in ("vllm", "torch"):
                if name not in v:
                    rows.append([h, name, "unknown - run `python -m vllm.collect_env` in the serving environment (or "
                                 "keep repro_vllm_collect_env on: reproduce.yml embeds it)", "-"])
        lines.append(_md_table(["host", "component", "version", "source"], rows))
        ce = item.get("collect_env") or {}
        if ce.get("value") == "unknown":
            lines.append("vLLM's `collect_env` output: **unknown** - how to get it: %s" % ce.get("how"))
        elif ce.get("value"):
            lines.append(_details("vLLM's `collect_env` output on %s (%s)" % (ce.get("host"), ce.get("source")),
                                  _fence(ce["value"])))
    elif key == "gpus":
        lines.append(_md_table(["host", "count", "names", "CUDA_VISIBLE_DEVICES", "compute capability",
                                "foreign processes", "source"],
                               [[h, v.get("count"), v.get("names") or "none", v.get("visible_devices") or "(not set)",
                                 v.get("compute_capability") or "-", len(v.get("foreign_processes") or []),
                                 v.get("source")] for h, v in sorted(hosts.items())]))
    elif key == "command":
        if item.get("value") == "unknown":
            lines.append("**unknown** - how to get it: %s" % item.get("how"))
        elif item.get("value") == "not applicable":
            lines.append("**not applicable** - %s" % item.get("note"))
        for h, v in sorted((hosts or {}).items()):
            what = "the command that failed, as started" if item.get("failed") else "the command as started"
            if v.get("vllm_argv"):
                what += " (the server in its container, by the image's digest)"
            lines.append("`%s`, %s (%s, `%s`):\n\n%s" % (h, what, v["run"], v["source"], _fence(v["shell"], "bash")))
        lines.append(_production_md(item.get("production") or {}))
    elif key == "environment":
        for h, v in sorted(hosts.items()):
            origin = {name: source for source, names in (v.get("from") or {}).items() for name in names}
            rows = [[k, val, ENV_SOURCES[origin.get(k, "run")]] for k, val in sorted((v.get("set_by_run") or {}).items())]
            rows += [[k, val, ENV_SOURCES[origin.get(k, "inherited")]] for k, val in sorted((v.get("inherited") or {}).items())
                     if k not in (v.get("set_by_run") or {})]
            lines.append("`%s` (`%s`):\n\n%s" % (h, v["source"], _md_table(["variable", "value", "from"], rows)))
    elif key == "model":
        lines.append(_md_table(["host", "model", "revision", "local weights", "source"],
                               [[h, v["model"], v["revision"] or "unknown", v["local"], v["source"]]
                                for h, v in sorted(hosts.items())]))
        if item.get("how"):
            lines.append("Revision **unknown** - how to get it: %s" % item["how"])
    elif key == "request":
        lines.append("`%s %s` through %s, timeout %s s, concurrency %s (`%s`):" % (
            "POST", item.get("route"), item.get("client"), item.get("timeout"), item.get("concurrency"), item["source"]))
        lines.append(_fence(json.dumps(item.get("body"), indent=2, sort_keys=True), "json"))
    elif key == "first_exception":
        if item.get("value") == "none":
            lines.append(item["note"])
        else:
            lines.append(_md_table(["run", "stage", "error class", "timestamp", "node", "process", "where"],
                                   [[item["run"], item["stage"], item["error_class"], item.get("timestamp") or "unknown",
                                     item.get("node"), item.get("process") or "-",
                                     "%s:%s" % (item.get("file"), item.get("lineno"))]]))
            lines.append(_fence(str(item.get("line") or ""), "text"))
            if item.get("how"):
                lines.append("Timestamp **unknown** - how to get it: %s" % item["how"])
    elif key == "stage":
        lines.append(_md_table(["run", "step", "stage", "error class", "result", "stages reached", "source"],
                               [[r["run"], r["step"], r["stage"], r["error_class"] or "-",
                                 "ok" if r["ok"] else "failed", " > ".join(r["stages_reached"]) or "-", r["source"]]
                                for r in item["runs"]]))
    elif key == "changes":
        lines.append(_md_table(["run", "step", "after", "the one variable changed", "what differs (record_diff)",
                                "one variable", "stage", "result"],
                               [[r["run"], r["step"], r["previous"] or "-",
                                 " ".join(str(c) for c in r["changed_variable"]) or "(baseline)",
                                 "; ".join(r["differences"]) or "nothing", _one_variable(r), r["stage"],
                                 "ok" if r["ok"] else "failed"]
                                for r in item["runs"]]))
    elif key == "rollback":
        lines.append("Rollback: **%s**" % item["value"].replace("_", " "))
        lines.append(_md_table(["run", "step", "stage", "error class", "result", "earlier state returned", "summary",
                                "source"],
                               [[r["run"], r["step"], r["stage"], r["error_class"] or "-",
                                 "ok" if r["ok"] else "failed", r.get("earlier_state_returned"), r["summary"],
                                 r["source"]] for r in item.get("runs") or []]))
    elif key == "repeat":
        lines.append("The failure of %s reproduced by a second clean run: **%s**" % (item.get("failed_run"), item["value"]))
        lines.append(_md_table(["run", "repeats", "stage", "error class", "same stage", "same error class", "source"],
                               [[r["run"], r["repeats"], r["stage"], r["error_class"] or "-", r["same_stage"],
                                 r["same_error_class"], r["source"]] for r in item.get("runs") or []]))
    return "\n\n".join(lines)


def _production_md(prod):
    """The production command beside the command that ran: its derivation (removed by category, unknown options)."""
    if prod.get("value") != "recorded":
        return "Production command: **%s** - %s" % (prod.get("value", "unknown"), prod.get("note") or prod.get("how"))
    out = ["Production command: derived into the minimal command in %s (`%s`)." % (prod["run"], prod["source"])]
    if prod.get("argv"):
        out.append(_fence(_quote_argv(prod["argv"]), "bash"))
    # one item a row, never quoted or followed by punctuation: a redaction marker stays a marker to the scan
    rows = [["kept", k, "-", "part of the minimal command"] for k in prod.get("kept") or []]
    for cat, entries in sorted((prod.get("removed") or {}).items()):
        rows += [["removed: " + cat, e["item"], e.get("layer") or "-", e.get("why") or "-"] for e in entries]
    out.append(_md_table(["derivation", "item", "ladder layer", "why"], rows))
    if prod.get("unknown"):
        out.append("Options this collection does not know (removed from the minimal command):")
        out.append("\n".join("- %s" % u for u in prod["unknown"]))
    for w in prod.get("warnings") or []:
        if not str(w).startswith("options this collection does not know"):  # listed above, one a line
            out.append("Warning: %s" % _MARKER_END_RE.sub(r"\1 ", str(w)))
    return "\n\n".join(out)


def _verdict_md(facts):
    """The verdict paragraph: the sentence, its detail, the boundary's violations first, earlier plays below."""
    d = facts.get("verdict_detail") or {}
    out = ["**Verdict: `%s`** - %s" % (facts.get("verdict"), facts.get("verdict_sentence")), ""]
    out.append(_md_table(["layer", "stage", "error class", "run", "rollback", "facts"],
                         [[d.get("layer") or "-", d.get("stage") or "-", d.get("error_class") or "-", d.get("run") or "-",
                           (d.get("rollback") or "unknown").replace("_", " "), ", ".join(d.get("facts") or []) or "-"]]))
    compat = facts.get("compatibility")
    if facts.get("verdict") == "boundary" and compat:
        out += ["", "### Compatibility boundary: profile `%s` (`%s`)" % (compat.get("profile"), compat.get("source")), ""]
        out.append(_md_table(["fact", "host", "required", "found", "fix"],
                             [[v.get("fact"), v.get("host") or "job", v.get("required"), v.get("found"), v.get("fix")]
                              for v in compat.get("violations") or []]))
        out += ["", "vLLM was not started: the method stops at a failed compatibility boundary."]
    elif compat:
        out += ["", "Compatibility: **%s** against profile `%s` (`%s`)"
                % (compat.get("verdict"), compat.get("profile"), compat.get("source"))]
    play = facts.get("play") or {}
    if play:
        out += ["", "Play `%s`: %s (%s)." % (play.get("play_id"), ", ".join(play.get("runs") or []), play.get("how"))]
    if facts.get("history"):
        out += ["", "Earlier plays of this case (history, newest first):", ""]
        out.append(_md_table(["play", "runs", "verdict", "sentence"],
                             [[h["play_id"], ", ".join(h["runs"]), h["verdict"], h["verdict_sentence"]]
                              for h in facts["history"]]))
    return "\n".join(out)


def _one_variable(row):
    if row.get("one_variable") is None:
        return "-"
    if row["one_variable"]:
        return "yes"
    return "NO (%s)" % ", ".join(str(u) for u in row.get("unexpected") or []) or "NO"


def _log_excerpt(runs, facts):
    """The first failing node's log around the first exception (or the head of the last run's log)."""
    first = facts["items"].get("first_exception") or {}
    for run in runs:
        if first.get("run") and run["run"] != first["run"]:
            continue
        for host in _evidence.run_hosts(run):
            for rel in _host_logs(run, host):
                if first.get("file") and os.path.basename(rel) != os.path.basename(str(first["file"])):
                    continue
                text = _evidence.read_log_tail(run, host, rel)
                lines = text.splitlines()
                if first.get("lineno"):
                    at = int(first["lineno"])
                    lo, hi = max(0, at - 40), min(len(lines), at + 40)
                else:
                    lo, hi = max(0, len(lines) - MAX_LOG_EXCERPT_LINES), len(lines)
                return _cite(run, host, rel), lo + 1, "\n".join(lines[lo:hi])
    return None


def render_markdown(facts, pics, runs, redactions):
    """summary.md: vLLM's bug report shape (environment in <details>, then the bug), every item answered."""
    items = facts["items"]
    out = ["# %s" % _title(facts), ""]
    out.append("Hand-off of case `%s` made by repro.vllm from %d frozen run(s), every one verified against its "
               "manifest. Secrets are redacted on the hosts before anything is fetched: `<redacted:KIND:HEX>` (equal markers "
               "mean equal values within this case) or a plain `<redacted>`. "
               "`summary.json` holds the same facts for machines." % (facts["case_id"], len(facts["runs"])))
    out += ["", _verdict_md(facts)]
    out += ["", "## Your current environment", ""]
    env_body = []
    for key in ("host_driver", "image", "versions", "gpus"):
        env_body.append("### %s\n\n%s" % (dict(ITEMS)[key], _item_md(key, items[key])))
    out.append(_details("Environment: driver, image, versions, GPUs", "\n\n".join(env_body)))
    out += ["", "## \U0001f41b Describe the bug", ""]
    out.append(_describe(facts))
    env_keys = ("host_driver", "image", "versions", "gpus")
    for n, (key, label) in enumerate(ITEMS, 1):
        body = ("In **Your current environment** above (printed once)." if key in env_keys else _item_md(key, items[key]))
        out += ["", "### %d. %s" % (n, label), "", body]
    out += ["", "## Pictures", "", "### Stage timeline per node", ""]
    out.append("![stage timeline](pictures/stage-timeline.svg)")
    if pics["timeline_rows"]:
        out += ["", "```mermaid", timeline_mermaid(pics["timeline_rows"]), "```"]
    else:
        out += ["", "unknown - no attempt run has a stages.json: run playbooks/reproduce.yml"]
    out += ["", "### Memory over each run", ""]
    if not pics["memory"]:
        out.append("unknown - no memory.jsonl in these runs: vllm_server samples memory when started by "
                   "playbooks/reproduce.yml (memory_interval > 0)")
    for mem in pics["memory"]:
        out += ["#### %s %s" % (mem["run"], mem["host"]), "", "![memory %s %s](%s)" % (mem["run"], mem["host"], mem["file"]), ""]
        if mem["mermaid"]:
            out += ["```mermaid", mem["mermaid"], "```", ""]
        out.append(_md_table(["mark", "seconds since start"], [[m["label"], m["seconds"]] for m in mem["marks"]]))
        out.append("")
        out.append("Peak: " + ", ".join("%s %.1f MiB" % (k, v) for k, v in sorted(mem["peak_mib"].items())))
    out += ["", "## Baseline score and isolation", ""]
    score = facts.get("score")
    if score and isinstance(score.get("items"), list) and isinstance(score.get("score"), int):
        out.append(score_markdown(score).replace("## Baseline score", "Baseline score", 1).rstrip("\n"))
        out.append("")
        out.append("(`%s`)" % score["source"])
    elif score:
        out.append("Baseline score: %s (`%s`)" % (score.get("score", "unknown"), score["source"]))
    else:
        out.append("Baseline score: unknown - how to get it: %s" % SUMMARY_RUN_HOW % "score.json")
    iso = facts.get("isolation")
    out.append("")
    if iso and isinstance(iso.get("reasons"), list):
        out.append("Isolation decision: **%s** (`%s`)" % (iso.get("decision"), iso["source"]))
        if iso["reasons"]:
            out.append("")
            out.append(_md_table(["condition", "host", "evidence"],
                                 [[r.get("condition"), r.get("host") or "job", r.get("evidence")]
                                  for r in iso["reasons"] if isinstance(r, dict)]))
        else:
            out.append("")
            out.append("No isolation condition holds.")
    else:
        out.append("Isolation decision: unknown - how to get it: %s" % SUMMARY_RUN_HOW % "isolation.json")
    out += ["", "## To run it again", ""]
    ran_in = sorted({(v.get("image"), v.get("image_id")) for v in
                     ((facts.get("items") or {}).get("image") or {}).get("hosts", {}).values()
                     if isinstance(v, dict) and v.get("image_id")})
    for ref, image_id in ran_in:
        out.append("The server ran in the image `%s` (id `%s`): playbooks/replay.yml runs that image by its id. Where the "
                   "receiving host does not hold it, bring it (`podman save -o image.tar %s` on a host that has it, "
                   "`podman load -i image.tar` on the receiver; `docker save`/`docker load` alike)."
                   % (ref, image_id, image_id))
        out.append("")
    names = facts.get("secret_variable_names") or []
    out.append("Secrets the command and request need (names only; set them yourself): %s"
               % (", ".join("`%s`" % n for n in names) if names else "none recorded"))
    prof = facts.get("profile_file")
    out.append("")
    out.append("Profile file: %s" % ("`%s` (in this package)" % prof if prof else "none used"))
    run_rows = [[r["run"], r.get("play") or "-", r["step"], r["created"], ", ".join(r["hosts"]), r["stage"] or "-",
                 r["error_class"] or "-", "-" if r["ok"] is None else ("ok" if r["ok"] else "failed"), r.get("status")]
                for r in facts["runs"]]
    out += ["", "## Runs", "", _md_table(["run", "play", "step", "created", "hosts", "stage", "error class", "result",
                                          "status"], run_rows)]
    excerpt = _log_excerpt(runs, facts)
    if excerpt:
        src, start, text = excerpt
        out += ["", _details("Log excerpt: %s from line %d" % (src, start), _fence(text, "text"))]
    out += ["", _details("What was redacted where (%d markers)" % sum(len(v) for v in redactions.values()),
                         _md_table(["file", "lines", "kinds"],
                                   [[f, _line_list(sorted({x[0] for x in v})),
                                     ", ".join(sorted({x[1] for x in v}))] for f, v in sorted(redactions.items())])
                         if redactions else "nothing was redacted")]
    return "\n".join(out) + "\n"


def _line_list(lines, limit=20):
    return ", ".join(str(n) for n in lines[:limit]) + (" ... (%d lines)" % len(lines) if len(lines) > limit else "")


def _title(facts):
    """summary.md's first line states the case's verdict (the same sentence as summary.json, the console and the
    workflow result)."""
    return _verdict.title(facts)


def _describe(facts):
    items = facts["items"]
    first = items.get("first_exception") or {}
    play = set((facts.get("play") or {}).get("runs") or [r["run"] for r in facts["runs"]])
    attempts = [r for r in facts["runs"] if r["attempt"] and r["run"] in play]
    bits = ["%s." % str(facts.get("verdict_sentence") or "").rstrip(".")]
    bits += ["%d attempt run(s) in this play: %s." % (len(attempts), ", ".join(
        "%s %s %s" % (r["run"], r["step"], "ok" if r["ok"] else "failed at %s (%s)" % (r["stage"], r["error_class"]))
        for r in attempts) or "none")]
    if first.get("value") == "found":
        bits.append("The first exception across all nodes and runs: `%s` on %s at %s (stage %s)."
                    % (_md_cell(first.get("line"))[:300], first.get("node"), first.get("timestamp") or "an unknown time",
                       first.get("stage")))
    bits.append("The failure reproduced by a second clean run: %s." % items["repeat"]["value"])
    return " ".join(bits)


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
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1024 * 1024), b""):
            h.update(chunk)
    return h.hexdigest()


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
    newest = max([_parse_created(r.get("created")) or 0 for r in read] + [0])
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
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1024 * 1024), b""):
            h.update(chunk)
    problems = []
    if h.hexdigest() != want:
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
    return {"ok": not problems, "problems": problems, "members": names, "sha256": h.hexdigest()}
