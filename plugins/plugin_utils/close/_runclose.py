"""How every kind of run closes: what the close decides before the freeze (repro.vllm.run_record ``state=close``).

A run is opened by ``run_record state=create`` (its identity, the profile judged and the collection version kept in
its open.json) and closed by ``run_record state=close`` with a ``kind``; closing is always the same sequence, done by
the action: decide (one function here per kind: classify once, judge, say the parts, the status and the console
lines), write the parts, freeze, verify, and fail after the freeze when the kind says the play must stop.

Every function returns a :class:`Closing`; none writes anything. What the hosts reported reaches them as the close's
declared ``inputs.reports`` (host -> its report; run_record's argument spec, _runtask.INPUTS_SPEC), passed by the YAML that
closes the run: no function here reads a play variable by name.

Kinds (``KINDS``):

* ``fleet`` - fingerprint and audit runs: each expected host's ``repro.vllm.host_record`` result (its report)
  becomes fleet.json's ``hosts``; status ``ok`` when every host is ok, else ``failed``;
  the play fails after the freeze when the exit rule says so (plugin_utils/close/_exitrule.py: a host not complete, a
  compatibility violation, a drifted host, unless the job only records) or the compatibility judge itself failed
  (``error``).
* ``attempt`` - one step of the ladder: plugin_utils/close/_attempt.py's close (one classification of every node's log,
  the verdict, request/outcome/changes/responses and the run sheet).
* ``collective`` - the collective checkpoint: every rank's log of every node classified together, then
  module_utils/gpu/_collective.py's close.
* ``decisions`` - summary, diff and replay runs: the parts the decide role made and the run sheet, status ``ok``;
  the role's fact ``repro_vllm_decision`` with this run in it.
* ``incomplete`` - any run whose play failed after the open: ``incomplete.json`` with the real error (redacted);
  status ``incomplete``; the play stops after the freeze with that error.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import inspect
import os

from ansible_collections.repro.vllm.plugins.plugin_utils.close import _attempt, _closing, _exitrule, _fleet
from ansible_collections.repro.vllm.plugins.module_utils.gpu import _collective
from ansible_collections.repro.vllm.plugins.module_utils.record import _record
from ansible_collections.repro.vllm.plugins.module_utils.container import _runtime
from ansible_collections.repro.vllm.plugins.module_utils.decide import _verdict
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import LogStageError, classify_files
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import redact_text

KINDS = ("fleet", "attempt", "collective", "decisions", "incomplete")
# a run closes with the kind its open named (_runtask.OPEN_KINDS) or the kind of close that stands for it
CLOSE_OF = {"fingerprint": "fleet", "audit": "fleet", "summary": "decisions", "diff": "decisions",
            "replay": "decisions", "attempt": "attempt", "collective": "collective"}
ERROR_MAX = 2000


class CloseError(Exception):
    """The close cannot decide (a wrong input, a log that cannot be read): the run stays open, the message says why."""


class Closing:
    """What a close decided: ``status`` (manifest metadata.status), ``parts`` written before the freeze (as
    run_record's ``parts``), ``metadata`` for the manifest, ``console`` lines, ``fail`` (the message the task fails
    with after the freeze, or None) and ``result`` (kind-specific keys handed back to the play)."""

    def __init__(self, status, parts=None, metadata=None, console=None, fail=None, result=None):
        self.status, self.parts, self.metadata = status, list(parts or []), dict(metadata or {})
        self.console, self.fail, self.result = list(console or []), fail, dict(result or {})


# ------------------------------------------------------------------------------------------------------ fleet
def fleet_notes(case_id, run_id, opened, fleet):
    """notes.md of a fingerprint or audit run: purpose, the profile judged, the hosts, one row per host."""
    lines = ["# Run sheet: %s / %s" % (case_id, run_id), "",
             "- purpose: %s" % (opened.get("purpose") or "-"),
             "- profile: %s" % _attempt.profile_text(opened),
             "- hosts: %s" % ", ".join(str(h.get("host")) for h in fleet), "",
             "| host | status | detail |", "|---|---|---|"]
    for h in fleet:
        lines.append("| %s | %s | %s |" % (h.get("host"), h.get("status"), h.get("detail") or ""))
    return "\n".join(lines) + "\n"


def close_fleet(run_path, opened, hosts=None, reports=None, error=None, variables=None, violations_fail=True,
                compatibility=None, audit=None):
    """A fingerprint or audit run: fleet.json from each expected host's record result (``reports``), the run sheet,
    the status, and the job's exit (plugin_utils/close/_exitrule.py): a host not complete, a compatibility violation (the
    close's own judge, ``compatibility``, or compatibility.json the run holds; when ``violations_fail``: reproduce.yml
    stops at them itself) and a host audit.json (the close's own audit, ``audit``, or the run's) names drifted fail
    the play after the freeze unless ``variables`` (the job's repro_vllm_record_only) say record only; ``error`` (the
    judge itself failed) always.
    The result's ``closing`` is the closing table (_closing.py) of what the run holds."""
    hosts = list(hosts if hosts is not None else opened.get("hosts") or [])
    fleet = _fleet.fleet_summary(hosts, [(reports or {}).get(h) or {} for h in hosts])
    closing = _fleet.fleet_close(fleet, run_path)
    case_id, run_id = os.path.basename(os.path.dirname(run_path)), os.path.basename(run_path)
    fleet_doc = {"case_id": case_id, "run_id": run_id, "profile": opened.get("profile"),
                 "purpose": opened.get("purpose"), "hosts": fleet}
    parts = [{"part": "fleet.json", "json": fleet_doc},
             {"part": "notes.md", "content": fleet_notes(case_id, run_id, opened, fleet)}]
    if compatibility is None:  # a part the run already holds (written into it before the close)
        compatibility = _record.read_json_file(os.path.join(run_path, "compatibility.json"))
    if audit is None:
        audit = _record.read_json_file(os.path.join(run_path, "audit.json"))
    compat, audit = compatibility or {}, audit or {}
    drifted = list(audit.get("drifted") or [])
    try:
        rule = _exitrule.job_exit(variables, violations=len(compat.get("violations") or []) if violations_fail else 0,
                                  drifted=drifted, incomplete=closing["incomplete"],
                                  errors=["it has no compatibility.json: %s" % error] if error is not None else [])
    except _exitrule.ExitRuleError as exc:
        raise CloseError(str(exc)) from exc
    rule["why"] = [w if not w.startswith("not every host is complete") else
                   "%s (degraded, failed, unreachable or lost; see fleet.json and hosts/<host>/*.json in %s)"
                   % (w, run_path) for w in rule["why"]]
    fail = ("the run is frozen, but " + "; and ".join(rule["why"])) if rule["fails"] else None
    rows = _closing.closing_rows(targets=hosts, fleet=fleet, compatibility=compat, drifted=drifted,
                                 records=dict((h, run_path) for h in hosts))
    return Closing(closing["status"], parts, {"case_id": case_id, "hosts": hosts}, closing["lines"] + rule["lines"],
                   fail, {"fleet": fleet, "incomplete": closing["incomplete"], "complete": closing["complete"],
                          "why": rule["why"], "record_only": rule["record_only"], "recorded": rule["recorded"],
                          # the job fails by the exit rule on what it found, not by an error of the controller's
                          "exit_rule": bool(rule["fails"] and not rule["errors"]),
                          "closing": _closing.table_lines(rows)})


# ---------------------------------------------------------------------------------------------------- attempt
def close_attempt(run_path, opened, step, run_id, case_id, reports=None, identity=None, diff=None, debug=False,
                  debug_env=None, check_mode=False):
    """One attempt: plugin_utils/close/_attempt.py's close over what every node of the step reported (``reports``)."""
    try:
        out = _attempt.close(step, run_id, run_path, case_id, reports, identity=identity, diff=diff, debug=debug,
                             debug_env=debug_env, profile=_attempt.profile_text(opened), check_mode=check_mode)
    except (_attempt.AttemptCloseError, LogStageError) as exc:
        raise CloseError(str(exc)) from exc
    attempt = out["attempt"]
    # a container the runtime refused to start: the one hint that helps (docs/method.md), keyed on the run's exit code
    console = []
    for node in step.get("nodes") or []:
        hint = _runtime.refusal_hint((((reports or {}).get(node) or {}).get("started")))
        if hint:
            console.append("reproduce | %s | %s %s | %s" % (node, run_id, step.get("name"), hint))
    # steps: the step by run, which the play remembers for a second clean run (the attempt role's _repro_vllm_steps)
    return Closing(out["status"], out["parts"], out["metadata"], console, None,
                   {"attempt": attempt, "step": out["step"], "steps": {run_id: out["step"]}, "stages": out["stages"],
                    "refused": out["refused"]})


# ------------------------------------------------------------------------------------------------- collective
def close_collective(run_path, opened, nodes, reports=None, nproc_per_node=None, backend=None, master=None,
                     timeout_s=None, record_only=None, check_mode=False):
    """The collective checkpoint: every rank's log of every node (``reports``: node -> its collective_run result)
    classified together, then the verdict; a failed one's ``exit`` (the exit rule over it as a finding, with
    ``record_only``, ``msg``, what the play stops with, and ``lines``, what the console says when the job only
    records: the stop and the exit rule's lines)."""
    nodes = list(nodes or opened.get("hosts") or [])
    if not nodes:
        raise CloseError("the collective checkpoint names no node")
    parts = [(reports or {}).get(n) or {} for n in nodes]
    classification = None
    if not check_mode:
        logs = _collective.log_inputs(run_path, nodes, parts)
        try:
            classification = classify_files(logs["paths"], nodes=logs["labels"]) if logs["paths"] else None
        except LogStageError as exc:
            raise CloseError("log_stage of the collective's logs: %s" % exc) from exc
    out = _collective.close(nodes, parts, classification, run=os.path.basename(run_path),
                            nproc_per_node=nproc_per_node, backend=backend, master=master, timeout_s=timeout_s,
                            path=run_path)
    result = {k: v for k, v in out.items() if k not in ("parts", "status")}
    verdict = out["collective"]
    if verdict.get("ok") is False:
        try:
            rule = _exitrule.job_exit({_exitrule.RECORD_ONLY: record_only}, finding=verdict.get("summary"))
        except _exitrule.ExitRuleError as exc:
            raise CloseError(str(exc)) from exc
        first = verdict.get("first_error") or {}
        result["exit"] = dict(rule, msg="%s. First error: %s: %s. Fix the fabric or network (NCCL_SOCKET_IFNAME/"
                              "GLOO_SOCKET_IFNAME, NCCL_IB_HCA, firewall on port %s, GPU visibility) and run again; the "
                              "logs are in %s/hosts. Set repro_vllm_collective_fail=false to go on regardless." % (
                                  verdict.get("summary"), first.get("node", "-"), first.get("line", "none in the logs"),
                                  str(master).rsplit(":", 1)[-1], run_path))
        # what the console says when the job only records: the method stops here all the same
        result["exit"]["lines"] = ["collective | the method stops here; frozen record: %s" % run_path] + rule["lines"]
    return Closing(out["status"], out["parts"], {"case_id": os.path.basename(os.path.dirname(run_path)),
                                                 "step": "collective"}, [], None, result)


# ---------------------------------------------------------------------------------------------------- the rest
def decisions_notes(run_path, opened, made_from=(), sections=()):
    """notes.md of a summary, diff or replay run: purpose, the profile judged, the runs it was made from, for a summary
    or diff the case's verdict without this run (module_utils/decide/_verdict.py), then the decide role's sections."""
    case_dir, run_id = os.path.dirname(run_path), os.path.basename(run_path)
    lines = ["# Run sheet: %s / %s" % (os.path.basename(case_dir), run_id), "",
             "- purpose: %s" % (opened.get("purpose") or "-"), "- profile: %s" % _attempt.profile_text(opened),
             "- made from: %s" % ", ".join(made_from or []),
             "- this run only holds decisions; the evidence stays in the frozen runs above."]
    if opened.get("purpose") in ("summary", "diff"):
        try:
            case = _verdict.case_verdict(case_dir, exclude=[run_id])
        except _verdict.VerdictError as exc:
            raise CloseError("the case verdict for notes.md: %s" % exc) from exc
        lines.append("- case verdict: `%s` - %s" % (case["verdict"], case["verdict_sentence"]))
    return "\n".join(lines + [""] + list(sections or [])) + "\n"


def close_decisions(run_path, opened, decision=None, made_from=(), sections=()):
    """A summary, diff or replay run: the decide role's parts (run_record's own ``parts``) as they are and the run
    sheet (``made_from``: the runs it decides on, ``sections``: the decide role's), status ok; ``decision``
    (repro_vllm_decision but the run) comes back with this run as its ``run``."""
    notes = {"part": "notes.md", "content": decisions_notes(run_path, opened, made_from, sections)}
    meta = {"case_id": os.path.basename(os.path.dirname(run_path)), "made_from": list(made_from or [])}
    return Closing("ok", [notes], meta, result=None if decision is None else {"decision": dict(decision, run=run_path)})


def close_incomplete(run_path, opened, error, step=None, host=None, task=None, case_key=None, check_mode=False):
    """A run whose play failed after the open: incomplete.json with the real error (redacted, cut at ERROR_MAX),
    status ``incomplete``, and the play's failure message naming the run and where it is."""
    text = redact_text("%s" % (error if error is not None else "no message"), case_key or None)
    if len(text) > ERROR_MAX:
        text = text[:ERROR_MAX - 3] + "..."
    run_id = os.path.basename(run_path)
    reason = "%s failed on %s" % (task or "?", host or "?")
    part = {"part": "incomplete.json", "json": {"step": step, "host": host, "task": task, "error": text}}
    meta = {"case_id": os.path.basename(os.path.dirname(run_path)), "incomplete_reason": reason}
    if step:
        meta["step"] = step
    short = text if len(text) <= 600 else text[:597] + "..."
    where = ("check mode: nothing was written" if check_mode else
             "It is frozen as incomplete at %s (incomplete.json); hand-off, diff and score take it as such" % run_path)
    what = step or opened.get("purpose") or "run"
    fail = "%s (%s) could not be closed: %s: %s. %s." % (run_id, what, task or "?", short, where)
    console = [] if check_mode else ["record | %s frozen as incomplete: %s" % (run_path, reason)]
    return Closing("incomplete", [part], meta, console, fail)


def _call(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, refusing inputs the kind does not take (named) before anything is decided."""
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise CloseError("%s: %s (it takes %s)" % (fn.__name__, exc, ", ".join(
            n for n, prm in inspect.signature(fn).parameters.items()
            if prm.kind == prm.KEYWORD_ONLY or (prm.default is not prm.empty and n != "check_mode")))) from exc
    return fn(*args, **kwargs)


def decide(kind, run_path, inputs, check_mode=False):
    """The close of one run of ``kind`` (KINDS, or the open's kind CLOSE_OF names) with its ``inputs`` (run_record's
    declared ``inputs``; the keys each kind takes are the keyword arguments of its function here); raises CloseError
    for an unknown kind or input."""
    inputs = dict(inputs or {})
    kind = CLOSE_OF.get(kind, kind)
    identity = (_record.read_open(run_path) or {}).get("run") or {}
    case_id, run_id = os.path.basename(os.path.dirname(run_path)), os.path.basename(run_path)
    if kind == "fleet":
        return _call(close_fleet, run_path, identity, **inputs)
    if kind == "attempt":
        inputs.setdefault("run_id", run_id)
        inputs.setdefault("case_id", case_id)
        return _call(close_attempt, run_path, identity, check_mode=check_mode, **inputs)
    if kind == "collective":
        return _call(close_collective, run_path, identity, check_mode=check_mode, **inputs)
    if kind == "decisions":
        return _call(close_decisions, run_path, identity, **inputs)
    if kind == "incomplete":
        key = None
        if not check_mode:
            try:
                key = _attempt.case_key_of(run_path)
            except (OSError, ValueError):
                key = None  # the error is still redacted, with markers of no case key
        return _call(close_incomplete, run_path, identity, case_key=key, check_mode=check_mode, **inputs)
    raise CloseError("unknown kind %r (one of %s)" % (kind, ", ".join(KINDS)))
