# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter fronts of the decisions over frozen runs (controller side): baseline_score, run_diff,
isolation_decision, fleet_audit, and _decision_plan (what the decide role records and says for a summary or a diff, with
decision_report's console lines and Markdown).

The logic lives in plugins/module_utils/decide/_score.py and plugins/plugin_utils/decide/ (_diff.py,
_isolation.py, _audit.py); runs are read with module_utils/record/_evidence.py. Every filter takes folders on the controller and never writes."""

from __future__ import annotations

import os

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _audit, _diff, _isolation
from ansible_collections.repro.vllm.plugins.module_utils.record import _record
from ansible_collections.repro.vllm.plugins.module_utils.decide import _score
from ansible_collections.repro.vllm.plugins.module_utils.record._evidence import (
    EvidenceError, case_runs, read_run, resolve_run)

_ERRORS = (EvidenceError, _diff.DiffError, _score.ScoreError, _isolation.IsolationError, _audit.AuditError)


def _runs_of(value, what):
    """A case folder, one run folder, or a list of run folders -> runs, oldest first."""
    if isinstance(value, (list, tuple)):
        return [read_run(str(p)) for p in value]
    if isinstance(value, str) and value:
        if os.path.isfile(os.path.join(value, "manifest.json")) or os.path.isdir(os.path.join(value, "hosts")):
            return [read_run(value)]
        return case_runs(value)
    raise AnsibleFilterError("%s: give a case folder (<records_root>/<case_id>) or a list of run folders, got %r"
                             % (what, value))


def _front(what, func):
    try:
        return func()
    except _ERRORS as exc:
        raise AnsibleFilterError("%s: %s" % (what, exc))


def _profile_document(profile, profile_file):
    """The validated profile, loaded as the compatibility stage loads it and chosen as it chooses
    (``_compat.choose_profile``: the file wins; neither given means the documented default profile, cpu-smoke)."""
    # the compatibility action plugin is the collection's one profile loader
    from ansible_collections.repro.vllm.plugins.action.compatibility import load_profile
    from ansible_collections.repro.vllm.plugins.module_utils.compat._compat import ProfileError, choose_profile
    kind, chosen = choose_profile(profile, profile_file)
    try:
        return load_profile(None, str(chosen)) if kind == "file" else load_profile(str(chosen), None)
    except ProfileError as exc:
        raise AnsibleFilterError("baseline_score: %s" % exc)


def baseline_score(runs, profile=None, memory_in_use_mib=_score.DEFAULT_MEMORY_IN_USE_MIB, profile_file=None):
    """score.json of a case: ``runs`` is the case folder or its run folders (oldest first); the profile (a shipped
    name, or ``profile_file``) decides which items can apply."""
    doc = _profile_document(profile, profile_file)
    return _front("baseline_score", lambda: _score.score_runs(_runs_of(runs, "baseline_score"), profile=doc,
                                                              memory_in_use_mib=int(memory_in_use_mib)))


def run_diff(run_a, run_b, host_map=None, records_root=None, case_id=None, facts=None):
    """diff.json of two runs; each a run folder, ``<case>/run-NNN`` or ``run-NNN`` (under records_root/case_id);
    ``facts`` restricts the comparison to those facts (plugin_utils/decide/_diff.py host_diff). The records root (None:
    ``records``) is resolved as the run's open resolves it (_record.resolve_root)."""
    records_root = _record.resolve_root(records_root or _record.DEFAULT_ROOT)
    return _front("run_diff", lambda: _diff.run_diff(
        read_run(resolve_run(run_a, records_root, case_id)), read_run(resolve_run(run_b, records_root, case_id)),
        host_map=host_map, facts=list(facts) if facts else None))


def isolation_decision(runs, must_keep_serving=False, memory_in_use_mib=_isolation.DEFAULT_MEMORY_IN_USE_MIB):
    """isolation.json over a case folder or a list of run folders (oldest first)."""
    return _front("isolation_decision", lambda: _isolation.decide(
        _runs_of(runs, "isolation_decision"), must_keep_serving=bool(must_keep_serving),
        memory_in_use_mib=int(memory_in_use_mib)))


def fleet_audit(run, baseline=None, compatibility=None, previous=None, must_keep_serving=False, records_root=None,
                case_id=None, hosts=None):
    """``{"audit": audit.json, "isolation": isolation.json}`` of an audit run folder.

    ``baseline`` is a run folder (or empty), ``compatibility`` the compatibility.json content (or empty),
    ``previous`` the case folder whose earlier runs each host is compared with for the isolation decision.
    Without ``compatibility`` the run's own compatibility.json is used when the compatibility role wrote one.
    ``hosts``: the hosts the open run expects (its manifest names them only once it is frozen), so a host that left
    no folder (unreachable before its record task could write one) is audited as missing, never left out.
    """
    def go():
        current = read_run(str(run))
        if hosts and not current["metadata"].get("hosts"):
            current["metadata"] = dict(current["metadata"], hosts=[str(h) for h in hosts])
        base = read_run(resolve_run(baseline, records_root, case_id)) if baseline else None
        compat = compatibility or current["parts"].get("compatibility.json")
        earlier = case_runs(previous) if previous else []
        here = [i for i, r in enumerate(earlier) if r["path"] == current["path"]]
        earlier = [r for r in (earlier[:here[0]] if here else earlier) if r["purpose"] not in ("summary", "diff")]
        result = _audit.audit(current, baseline=base, compatibility=compat)
        isolation = _audit.host_isolation(current, earlier, must_keep_serving=bool(must_keep_serving))
        return {"audit": result, "isolation": isolation}
    return _front("fleet_audit", go)


def decision_report(value, kind):
    """``{"lines": [...], "markdown": "..."}`` for a decision of ``kind`` score, diff, isolation or audit."""
    if not isinstance(value, dict):
        raise AnsibleFilterError("decision_report: the input must be a decision dict, got %s" % type(value).__name__)
    if kind == "score":
        lines = _score.score_lines(value)
        md = _score.score_markdown(value)
    elif kind == "diff":
        lines = _diff.diff_table_lines(value)
        md = _diff.diff_markdown(value)
    elif kind == "isolation":
        lines = _isolation.decision_lines(value)
        md = "\n".join(["## Isolation: %s" % value["decision"], ""] + (["- %s" % line for line in lines[1:]] or [
            "No condition of the isolation vocabulary holds in these runs: reproduce where it failed."])) + "\n"
    elif kind == "audit":
        lines = _audit.drift_lines(value.get("audit", value))
        md = _audit.audit_markdown(value.get("audit", value), value.get("isolation"))
    else:
        raise AnsibleFilterError("decision_report: kind must be score, diff, isolation or audit, got %r" % kind)
    return {"lines": lines, "markdown": md}


def decision_plan(value, purpose, run_b=None, case_id=None, profile=None, profile_file=None,
                  memory_in_use_mib=_score.DEFAULT_MEMORY_IN_USE_MIB, must_keep_serving=False, host_map=None,
                  records_root=None, facts=None):
    """What the decide role records and says for a ``summary`` (``value``: the case folder; score.json and
    isolation.json) or a ``diff`` (``value`` and ``run_b``: the two runs; diff.json and diff.md): ``parts`` and
    ``sections`` of the decisions run, ``made_from`` (the runs they read), the console's lines (a summary's
    ``score_lines`` and ``isolation_lines``, a diff's ``lines`` and the ``diff`` itself, what replay.yml reads) and
    closing ``line``, and ``decision`` -
    repro_vllm_decision with ``run`` none (the run the open makes after this)."""
    if purpose == "summary":
        score = baseline_score(value, profile=profile, memory_in_use_mib=memory_in_use_mib, profile_file=profile_file)
        isolation = isolation_decision(value, must_keep_serving=must_keep_serving, memory_in_use_mib=memory_in_use_mib)
        reports = [decision_report(score, "score"), decision_report(isolation, "isolation")]
        return {"parts": [{"part": "score.json", "json": score}, {"part": "isolation.json", "json": isolation}],
                "sections": [r["markdown"] for r in reports], "made_from": isolation["runs"],
                "score_lines": reports[0]["lines"], "isolation_lines": reports[1]["lines"],
                "line": "summary | case %s | baseline score %s/%s (%s) | isolation %s" % (
                    case_id, score["score"], score["max"], score["band"], isolation["decision"]),
                "decision": {"case_id": case_id, "purpose": "summary", "run": None, "runs": isolation["runs"],
                             "score": score["score"], "max": score["max"], "band": score["band"],
                             "decision": isolation["decision"], "conditions": list(dict.fromkeys(
                                 r["condition"] for r in isolation["reasons"]))}}
    if purpose == "diff":
        diff = run_diff(value, run_b, host_map=host_map, records_root=records_root, case_id=case_id, facts=facts)
        report = decision_report(diff, "diff")
        return {"parts": [{"part": "diff.json", "json": diff}, {"part": "diff.md", "content": report["markdown"]}],
                "sections": [report["markdown"]], "made_from": [diff["a"], diff["b"]], "lines": report["lines"], "diff": diff,
                "line": "diff | %s" % diff["summary"],
                "decision": {"case_id": case_id, "purpose": "diff", "run": None, "runs": [diff["a"], diff["b"]],
                             "variables": diff["variables"], "ambiguous": diff["ambiguous"]}}
    raise AnsibleFilterError("decision_plan: purpose must be summary or diff, got %r" % (purpose,))


class FilterModule:
    """repro.vllm decisions from evidence."""

    def filters(self):
        return {"baseline_score": baseline_score, "run_diff": run_diff, "isolation_decision": isolation_decision,
                "fleet_audit": fleet_audit, "_decision_plan": decision_plan}
