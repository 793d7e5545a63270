# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter fronts of the ladder (module_utils/ladder/_ladder.py): the one step builder (``_step``) and the ladder's
decisions - the window, the last good run, the skip rule, a layer's judgement, the rollback's row and whether a
finding fails the job (the exit rule)."""

from __future__ import annotations

import base64
import json

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter.judge import _mapping
from ansible_collections.repro.vllm.plugins.plugin_utils.close import _exitrule
from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _diff
from ansible_collections.repro.vllm.plugins.module_utils.ladder import _ladder
from ansible_collections.repro.vllm.plugins.module_utils.ladder._command import CommandError


def step(kind, **inputs):
    """The step of ``kind`` (minimal, layer, rollback, repeat, replay) from its inputs; see _ladder.build_step."""
    try:
        return _ladder.build_step(kind, **inputs)
    except (_ladder.LadderError, CommandError) as exc:
        raise AnsibleFilterError("_step: %s" % exc)


def ladder_window(names, until=None, applied=None):
    """The layers this play climbs; see _ladder.window."""
    try:
        return _ladder.window(names, until, applied)
    except _ladder.LadderError as exc:
        raise AnsibleFilterError("feature_layer: %s" % exc)


def last_good(attempt, resumed_from=None, changes=None):
    """The attempt when it is a good run, else none; a resumed run (``resumed_from``) must be good."""
    try:
        return _ladder.last_good(attempt, resumed_from=resumed_from or None, changes=changes)
    except _ladder.LadderError as exc:
        raise AnsibleFilterError("feature_layer: %s" % exc)


def layer_skip(layer, skip=None, production=None, production_given=False, values=None, play_hosts=0,
               last_good_nodes=0, derived=None):
    return _ladder.layer_skip(_mapping(layer, "the input (the layer)", "layer_skip"), skip=skip or [],
                              production=production or {}, production_given=bool(production_given),
                              values=values or {}, play_hosts=int(play_hosts), last_good_nodes=int(last_good_nodes),
                              derived=_mapping(derived, "derived", "layer_skip") or None)


def layer_status(attempt, last_good=None):
    return _ladder.judge_layer(_mapping(attempt, "the attempt", "layer_status"),
                               _mapping(last_good, "last_good", "layer_status"))


def rollback_row(attempt):
    return _ladder.rollback_status(_mapping(attempt, "the input (the rollback attempt)", "rollback_row"))


def job_exit(verdict, variables=None, violations=0):
    """The exit rule (plugin_utils/close/_exitrule.py) on reproduce.yml's verdict: ``{fails, why, ...}`` - a failed run (the
    finding), a refusal or ``violations`` (a compatibility boundary, before any attempt: the verdict is none) fails
    the job unless ``variables`` (repro_vllm_record_only) say record only."""
    if verdict is not None and not isinstance(verdict, dict):
        raise AnsibleFilterError("job_exit: the input must be the play's verdict (a dict) or none")
    verdict = verdict or {}
    line = verdict.get("line") or "see the run"
    try:
        out = _exitrule.job_exit(variables, violations=int(violations or 0),
                                 finding=line if verdict.get("finding") is not None else None,
                                 refused=line if verdict.get("refused") else None)
    except _exitrule.ExitRuleError as exc:
        raise AnsibleFilterError("job_exit: %s" % exc) from exc
    return out


def one_variable_gate(step, identities, case_id=None):
    """The run's identity (``identities``: each node's part, in the order of the step's nodes, with the step's request
    but its ``repeat``), its diff against the last good run (``step.previous``; _diff.record_diff) and whether the
    attempt may start (_ladder.one_variable_gate): ``{identity, diff, refused, attempt, line}``."""
    step = _mapping(step, "the input (the step)", "one_variable_gate")
    previous = step.get("previous") or {}
    identity = {"hosts": dict(zip(step.get("nodes") or [], identities or [])),
                "request": dict((k, v) for k, v in (step.get("request") or {}).items() if k != "repeat")}
    try:
        diff = _diff.record_diff(identity, previous.get("identity"), allowed=step.get("allowed", []),
                                 previous_run=previous.get("run"))
    except _diff.DiffError as exc:
        raise AnsibleFilterError("one_variable_gate: %s" % exc)
    return dict(_ladder.one_variable_gate(step, diff, case_id), identity=identity, diff=diff)


def minimal_plan(nodes, model_ref, model_config_raw=None, host_name=None, **inputs):
    """The base of every attempt (_ladder.minimal_plan) with the model's config.json as the slurp on the head read it
    (``model_config_raw``: its registered result; not read - no ``content``); ``host_name`` prefixes the console
    lines (``reproduce | <host> | ...``)."""
    config = {}
    content = (model_config_raw or {}).get("content") if isinstance(model_config_raw, dict) else None
    if content:
        try:
            config = json.loads(base64.b64decode(content).decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise AnsibleFilterError("minimal_startup: the model's config.json (%s/config.json on the head) is not JSON: "
                                     "%s; fix the file, or set repro_vllm_trust_remote_code to true or false"
                                     % (model_ref, exc))
    try:
        plan = _ladder.minimal_plan(list(nodes or []), model_ref, model_config=config, **inputs)
    except _ladder.LadderError as exc:
        raise AnsibleFilterError("minimal_startup: %s" % exc)
    if host_name:
        plan["lines"] = ["reproduce | %s | %s" % (host_name, line) for line in plan["lines"]]
    return plan


class FilterModule:
    """repro.vllm ladder: its steps and its decisions."""

    def filters(self):
        return {"_step": step, "_ladder_window": ladder_window, "_last_good": last_good, "_layer_skip": layer_skip,
                "_layer_status": layer_status, "_rollback_row": rollback_row, "_job_exit": job_exit,
                "_one_variable_gate": one_variable_gate, "_minimal_plan": minimal_plan}
