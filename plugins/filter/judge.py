# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter fronts of the method's judgement (plugin_utils/decide/_judge.py): the attempt verdict, the closing finding
and the second clean run (which attempt it repeats, whether it repeated). The ladder's decisions are filter/ladder.py's."""

from __future__ import annotations

import json
import os

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter.case_verdict import case_verdict as _case_verdict
from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _judge
from ansible_collections.repro.vllm.plugins.module_utils.record import _record
from ansible_collections.repro.vllm.plugins.module_utils.ladder import _ladder
from ansible_collections.repro.vllm.plugins.module_utils.record._record import run_id_for, run_numbers


def _mapping(value, what, filter_name):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AnsibleFilterError("%s: %s must be a dict, got %s" % (filter_name, what, type(value).__name__))
    return value


def _listing(value, what, filter_name):
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise AnsibleFilterError("%s: %s must be a list, got %s" % (filter_name, what, type(value).__name__))
    return list(value)


def attempt_verdict(step, stages=None, nodes=None, exchanges=None, checkpoint=None, check_mode=False,
                    via_gateway=False):
    return _judge.attempt_verdict(_mapping(step, "the step", "attempt_verdict"),
                                  _mapping(stages, "stages", "attempt_verdict"),
                                  _mapping(nodes, "nodes", "attempt_verdict"),
                                  _listing(exchanges, "exchanges", "attempt_verdict"),
                                  checkpoint=checkpoint or None, check_mode=bool(check_mode),
                                  via_gateway=bool(via_gateway))


def reproduction_summary(runs, ladder=None, stop_reason="", case_verdict=False):
    """_judge.reproduction_summary with ``case``: with ``case_verdict``, the one verdict of the case the finding's
    record is (the case_verdict filter, its console ``line``) when that folder is there, else None."""
    out = _judge.reproduction_summary(_listing(runs, "the input (runs)", "reproduction_summary"),
                                      _listing(ladder, "ladder", "reproduction_summary"), stop_reason or "")
    record = out.get("record")
    out["case"] = _case_verdict(record) if case_verdict and record and os.path.isdir(record) else None
    return out


def reproduction_result(verdict):
    if verdict is not None and not isinstance(verdict, dict):
        raise AnsibleFilterError("reproduction_result: the input must be the play's verdict (a dict) or none")
    return _judge.reproduction_result(verdict)


def repeat_plan(runs, steps=None, host=None, port_timeout=None):
    """The second clean run: ``target`` (_judge.repeat_target; None when no attempt ran), ``step`` (its step in
    ``steps``, the attempt role's _repro_vllm_steps, again: _ladder.build_step "repeat"), ``probe_host`` (where
    its port must be free: a wildcard or empty host is 127.0.0.1), ``runs`` (there is one), and for the inventory
    host ``host``: ``line``
    (its progress line: what is repeated, or that nothing is), ``probe`` (it is a node of the step: its port is
    checked) and ``busy`` (the message when that port still answers ``port_timeout`` s after the play stopped its
    server)."""
    target = _judge.repeat_target(_listing(runs, "the input (runs)", "repeat_plan"))
    if target is None:
        return {"target": None, "step": None, "probe_host": None, "runs": False, "probe": False, "busy": None,
                "line": "reproduce | %s | repeat: no attempt of this play ran (every step was refused or none was "
                        "made), so there is nothing to repeat" % host}
    try:
        step = _ladder.build_step("repeat", original=_mapping(steps, "steps", "repeat_plan").get(target["run"]),
                                  target=target)
    except _ladder.LadderError as exc:
        raise AnsibleFilterError("repeat_plan: %s" % exc)
    where = step.get("host")
    busy = ("repeat of %s on %s: port %s of %s still answers %s s after the server of the play was stopped, so a clean "
            "start is not possible; find what listens there (ss -ltnp 'sport = :%s'), stop it and run reproduce.yml "
            "again" % (target["run"], host, step.get("port"), where, port_timeout, step.get("port")))
    return {"target": target, "step": step, "probe_host": "127.0.0.1" if where in ("0.0.0.0", "", None) else where,
            "runs": True, "probe": host in (step.get("nodes") or []), "busy": busy,
            "line": "reproduce | %s | repeat of %s (%s): %s; a new process with the same command, environment and "
                    "request" % (host, target["run"], target["step"], target["reason"])}


def latest_run(case_id, part=None, records_root=None, current=False):
    """The highest-numbered run of a case on the controller (numeric order: run-1000 after run-999) that holds
    ``part``; None when there is none. The case folder is under ``records_root`` (None: ``records``), resolved as the
    run's open resolves it (_record.resolve_root). With ``current``: ``{run, path, identity}``, the identity the
    run's ``part`` (its changes.json) names ``current`` - what the next run is compared with."""
    if not isinstance(case_id, str) or not case_id:
        raise AnsibleFilterError("latest_run: the input must be the case id")
    try:
        case_dir = os.path.join(_record.resolve_root(records_root or _record.DEFAULT_ROOT), case_id)
    except _record.RecordError as exc:
        raise AnsibleFilterError("latest_run: %s" % exc)
    for number in reversed(run_numbers(case_dir)):
        run = run_id_for(number)
        path = os.path.join(case_dir, run)
        if part is None or os.path.exists(os.path.join(path, part)):
            if not current:
                return {"run": run, "path": path, "number": number}
            try:
                with open(os.path.join(path, part)) as fh:
                    return {"run": run, "path": path, "identity": json.load(fh).get("current")}
            except (OSError, ValueError, AttributeError) as exc:
                raise AnsibleFilterError("latest_run: %s of %s cannot be read: %s" % (part, path, exc))
    return None


class FilterModule:
    """repro.vllm judgement of an attempt."""

    def filters(self):
        return {"attempt_verdict": attempt_verdict, "_reproduction_summary": reproduction_summary,
                "_reproduction_result": reproduction_result, "_latest_run": latest_run, "_repeat_plan": repeat_plan}
