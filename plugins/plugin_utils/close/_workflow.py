"""The result a playbook hands to the next node of an AWX workflow (``set_stats``).

In an AWX workflow the ``set_stats`` data of one job become the extra variables of the next one (AWX passes each
node's data on to every later node), where they outrank every other variable.  So the data are a closed contract:
exactly ``repro_vllm_result`` (a dict), ``repro_vllm_case_id`` (the deliberate chaining key: the next job works on
the same case) and, from the hand-off, ``repro_vllm_package``.  The hand-off does not hand the case id on: the node
after it replays the package (replay.yml makes a case of its own and ignores a case id among its extra variables,
which an earlier node such as reproduce.yml may still hand on) or uploads it; ``repro_vllm_result.case_id`` still
names the case.  A role variable such as ``repro_vllm_run_path`` must never be among them: the next job would write
into a run that is frozen.

The result names the case, every run the job made (controller paths, and their copies on the records sink when
there is one), the purpose, and what was decided where the job decided something.  Decisions come from the
playbook itself (``fields``) and from the decision files at the root of the runs (architecture.md, "Decision
outputs"); the playbook's own value wins.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import json
import os
import posixpath
import re

from ansible_collections.repro.vllm.plugins.module_utils.common._redact import redact_data
from ansible_collections.repro.vllm.plugins.module_utils.decide._verdict import VerdictError, case_verdict
from ansible_collections.repro.vllm.plugins.module_utils.record import _record

SCHEMA_VERSION = 1

# What a playbook may add from its own judgement (closed: a typo must fail, not vanish).
FIELDS = ("verdict", "score", "band", "decision", "classification", "finding", "refused", "ladder_stopped",
          "repeat", "hosts", "drift", "diff", "package", "replay")

# Decision files a run may hold at its root, in the order a later one refines an earlier one.
DECISION_FILES = ("compatibility.json", "score.json", "isolation.json", "audit.json", "diff.json")

# The only keys ever passed on to the next job.
STATS_KEYS = ("repro_vllm_result", "repro_vllm_case_id", "repro_vllm_package")

# Purposes whose next node works on a case of its own (replay.yml after handoff.yml): no repro_vllm_case_id.
CASE_NOT_HANDED_ON = ("handoff",)

# A run's folder on the records sink (its listing also holds copies in transit, .incoming-run-NNN-*).
RUN_NAME = re.compile(r"^run-[0-9]+$")


class WorkflowResultError(ValueError):
    """The playbook asked for a result this contract does not allow."""


def merge_runs(earlier, new):
    """The runs of the whole job, in the order they were made, each once."""
    out = []
    for path in list(earlier or []) + list(new or []):
        if not isinstance(path, str) or not path:
            raise WorkflowResultError("a run must be given as its controller path, got %r" % (path,))
        path = path.rstrip("/")
        if path not in out:
            out.append(path)
    return out


def parse_sink(sink):
    """``"<inventory host>:<absolute path>"`` -> (host, path); ("", "") when no sink is set."""
    if not sink:
        return "", ""
    if not isinstance(sink, str) or ":" not in sink:
        raise WorkflowResultError("repro_vllm_records_sink must be '<inventory host>:<absolute path>', got %r" % (sink,))
    host, path = sink.split(":", 1)
    host = host.strip()
    path = path.strip()
    if not host or not path.startswith("/"):
        raise WorkflowResultError("repro_vllm_records_sink must be '<inventory host>:<absolute path>' (an absolute "
                                  "path on that host), got %r" % (sink,))
    path = posixpath.normpath(path)
    if path == "/":
        raise WorkflowResultError("repro_vllm_records_sink may not be the root folder of %s: give "
                                  "'<inventory host>:<absolute path>' with a folder of its own" % host)
    return host, path


def sink_path(sink, run):
    """Where a controller run ``<root>/<case>/<run-NNN>`` is kept on the sink: ``<sink path>/<case>/<run-NNN>``."""
    _host, path = parse_sink(sink)
    run = run.rstrip("/")
    return posixpath.join(path, posixpath.basename(posixpath.dirname(run)), posixpath.basename(run))


def sink_copies(sink, push=None, case_id=None, listing=None, fetch=None, records_root=None):
    """What the sink role copies, each copy one frozen run ``from`` one host ``to`` another (roles/sink/tasks/copy.yml).

    ``push``: controller runs -> ``<sink path>/<case>/<run-NNN>``.  With ``case_id``: the case's folder on the sink
    (``case_path``) and the read back of the runs ``fetch`` names (none: every ``run-NNN`` of the sink's ``listing``)
    -> ``<records root>/<case>/<run-NNN>`` on the controller (``case_dir``), the root resolved as a run's open
    resolves it; ``fetched`` are those controller paths, ``missing`` the runs asked for that the sink lacks
    (``refused`` says so).  ``refusal`` is the message of a different run under the name, with ``%(there)s`` and
    ``%(here)s`` for the manifests' sha256 (a ``%`` of a path doubled)."""
    host, path = parse_sink(sink)
    out = {"host": host, "path": path, "copies": []}
    for run in push or []:
        run = run.rstrip("/")
        name, dest = posixpath.basename(run), sink_path(sink, run)
        out["copies"].append({
            "id": name, "from": "localhost", "src": run, "to": host, "dest": dest, "fetch": False,
            "line": "sink | %s -> %s:%s" % (name, host, dest), "done": "copied", "verified": "files verified there",
            "refusal": ("%s:%s already holds a different %s (its manifest sha256 %%(there)s is not this run's"
                        " %%(here)s); nothing was copied and nothing on the sink was touched. This job's records root"
                        " started without the sink's runs: read them back first (repro.vllm.sink, tasks_from fetch.yml)"
                        " or give AWX a persistent records root (docs/awx.md); the run stays at %s."
                        % (host, dest.replace("%", "%%"), name, run.replace("%", "%%")))})
    if case_id is None:
        return out
    on_sink = [n for n in listing or [] if RUN_NAME.match(n)]
    root = _record.resolve_root(records_root or _record.DEFAULT_ROOT)
    out.update(case_path=posixpath.join(path, case_id), case_dir=os.path.join(root, case_id),
               missing=[r for r in fetch or [] if r not in on_sink])
    out["refused"] = ("%s has no %s of case %s (it has %s)" % (sink, ", ".join(out["missing"]), case_id,
                                                               ", ".join(on_sink) or "none")) if out["missing"] else ""
    for name in fetch or on_sink:
        src, dest = posixpath.join(path, case_id, name), os.path.join(root, case_id, name)
        out["copies"].append({
            "id": name, "from": host, "src": src, "to": "localhost", "dest": dest, "fetch": True,
            "line": "sink | %s:%s -> %s" % (host, src, dest), "done": "read back", "verified": "files verified",
            "refusal": ("%s is a different %s than the sink's %s:%s (manifest sha256 differs); nothing was read"
                        " back over it. Read the sink into an empty records root."
                        % (dest, name, host, src)).replace("%", "%%")})
    out["fetched"] = [c["dest"] for c in out["copies"]]
    return out


def read_decisions(runs):
    """The decision files at the root of the job's runs on the controller: ``{name: {path, data}}``.

    For each name of DECISION_FILES the last run (in the job's order) that holds it wins.  A file that is there
    but is not a JSON object stops the result with its path: a decision the next workflow node would key on is
    never passed on half-read."""
    out = {}
    for run in runs or []:
        for name in DECISION_FILES:
            path = os.path.join(run, name)
            if not os.path.isfile(path):
                continue
            try:
                with open(path, "r") as fh:
                    data = json.load(fh)
            except (OSError, ValueError) as exc:
                raise WorkflowResultError("decision file %s cannot be read as JSON (%s): the run is not what "
                                          "repro.vllm wrote; verify it (repro.vllm.run_record state=verify)"
                                          % (path, exc))
            if not isinstance(data, dict):
                raise WorkflowResultError("decision file %s holds %s, not a JSON object" % (path, type(data).__name__))
            out[name] = {"path": path, "data": data}
    return out


def _from_decisions(decisions):
    """What the decision files say, in the result's words; ``files`` lists where each one is."""
    out = {}
    files = {}
    for name in DECISION_FILES:
        entry = (decisions or {}).get(name)
        if not entry:
            continue
        doc = entry.get("data") or {}
        if entry.get("path"):
            files[name] = entry["path"]
        if name == "compatibility.json":
            out["verdict"] = doc.get("verdict")
            out["compatibility"] = {"profile": doc.get("profile"), "verdict": doc.get("verdict"),
                                    "violations": len(doc.get("violations") or [])}
        elif name == "score.json":
            out["score"] = doc.get("score")
            out["band"] = doc.get("band")
        elif name == "isolation.json":
            out["decision"] = doc.get("decision")
            out["decision_reasons"] = sorted({r.get("condition") for r in doc.get("reasons") or []
                                              if isinstance(r, dict) and r.get("condition")})
        elif name == "audit.json":
            hosts = doc.get("hosts") or {}
            out["drift"] = {h: len((v or {}).get("drift") or []) for h, v in sorted(hosts.items())
                            if (v or {}).get("drift")}
    if files:
        out["files"] = files
    return out


def _case_verdict(runs):
    """The one verdict of the case of the job's last run (module_utils/decide/_verdict.py): ``case_verdict`` (the
    vocabulary), ``verdict_detail``, ``verdict_sentence`` - the sentence the hand-off's title and the console's
    closing line say.  Nothing when the case folder is not on this controller (check mode, a run elsewhere)."""
    if not runs:
        return {}
    case_dir = os.path.dirname(runs[-1])
    if not os.path.isdir(case_dir):
        return {}
    try:
        ans = case_verdict(case_dir)
    except VerdictError as exc:
        return {"case_verdict": None, "verdict_detail": None, "verdict_sentence": "unknown: %s" % exc}
    return {"case_verdict": ans["verdict"], "verdict_detail": ans["verdict_detail"],
            "verdict_sentence": ans["verdict_sentence"]}


def build_result(purpose, case_id, runs, fields=None, package="", decisions=None, sink="", records_root="",
                 sink_error=""):
    """The ``set_stats`` data of a playbook: ``{repro_vllm_result[, repro_vllm_case_id][, repro_vllm_package]}``
    (no case id for CASE_NOT_HANDED_ON). ``records_root`` is the controller folder of all cases (the result role
    always gives it, so a job that made no run, such as the hand-off, names it too); without it, the folder above
    the last run's case."""
    if not purpose or not isinstance(purpose, str):
        raise WorkflowResultError("the result needs the playbook's purpose (fingerprint, reproduce, audit, diff, handoff)")
    if not case_id or not isinstance(case_id, str):
        raise WorkflowResultError("the result needs the case id")
    fields = dict(fields or {})
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise WorkflowResultError("result fields %s are not part of the workflow contract (allowed: %s)"
                                  % (", ".join(unknown), ", ".join(FIELDS)))
    runs = merge_runs([], runs)
    result = {
        "schema_version": SCHEMA_VERSION,
        "purpose": purpose,
        "case_id": case_id,
        "records_root": records_root or (posixpath.dirname(posixpath.dirname(runs[-1])) if runs else None),
        "runs": runs,
        "last_run": runs[-1] if runs else None,
    }
    result.update(_from_decisions(decisions))
    result.update(_case_verdict(runs))
    # the playbook's own judgement wins over what a file says; an empty value never hides one found in a file
    result.update({k: v for k, v in fields.items() if v is not None and v != ""})
    if sink:
        host, _path = parse_sink(sink)
        # verified: every run was copied and verified on the sink; otherwise error says why (the runs are still
        # frozen on the controller)
        result["sink"] = {"host": host, "runs": [sink_path(sink, r) for r in runs], "verified": not sink_error,
                          "error": sink_error or None}
    if package:
        result["package"] = package
    stats = {"repro_vllm_result": redact_data(result)}
    if purpose not in CASE_NOT_HANDED_ON:
        stats["repro_vllm_case_id"] = case_id
    if package:
        stats["repro_vllm_package"] = package
    return stats
