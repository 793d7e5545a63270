# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of repro.vllm.job_result (documentation: plugins/modules/job_result.py): the job's runs, the
workflow artifacts (plugin_utils/close/_workflow.py decides them) handed on as set_stats does, one console line."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.repro.vllm.plugins.module_utils.record import _record
from ansible_collections.repro.vllm.plugins.plugin_utils.close._workflow import (
    WorkflowResultError, build_result, merge_runs, read_decisions)

ARGSPEC = {
    "purpose": {"type": "str", "required": True},
    "case_id": {"type": "str", "required": True},
    "runs": {"type": "list", "elements": "str", "default": []},
    "job_runs": {"type": "list", "elements": "str", "default": []},
    "fields": {"type": "dict", "default": {}},
    "package": {"type": "str", "default": ""},
    "records_root": {"type": "str", "default": _record.DEFAULT_ROOT},
    "sink": {"type": "str", "default": ""},
    "sink_error": {"type": "str", "default": ""},
}


def console_line(purpose, case_id, runs, sink="", package=""):
    """What the console says of the result handed on."""
    return "result | %s | case %s | %d run(s), last %s%s%s" % (
        purpose, case_id, len(runs), runs[-1] if runs else "-", (" | sink %s" % sink) if sink else "",
        (" | package %s" % package) if package else "")


def hand_on(purpose, case_id, runs=(), job_runs=(), fields=None, package="", records_root="", sink="", sink_error=""):
    """What a task hands the next workflow node: ``{result, ansible_facts, ansible_stats, console}`` (and the
    failure when ``sink_error``). Used by this action and by run_record's fleet close (``inputs.result``), which
    hands the result on itself when no records sink is in the way. Raises AnsibleActionFail."""
    try:
        runs = merge_runs(list(job_runs or []), [r for r in runs or [] if r])
        # a relative records root against the controller's working directory, as the run's open resolved it
        root = _record.resolve_root(records_root) if records_root else ""
        data = build_result(purpose, case_id, runs, fields=fields or {}, package=package,
                            decisions=read_decisions(runs), sink=sink, records_root=root, sink_error=sink_error)
    except (WorkflowResultError, _record.RecordError) as exc:
        raise AnsibleActionFail("job_result: %s" % exc)
    out = dict(result=data, ansible_facts={"_repro_vllm_result_job_runs": runs},
               # as set_stats hands it on: for the whole job, the last call's value (not per host, not added up)
               ansible_stats={"data": data, "per_host": False, "aggregate": False},
               console=[console_line(purpose, case_id, runs, sink, package)])
    if sink_error:
        out.update(failed=True, msg="the runs are frozen on the controller but not all of them are verified on the "
                                    "records sink %s: %s" % (sink, sink_error))
    return out


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _valid, args = self.validate_argument_spec(argument_spec=ARGSPEC)
        result.update(hand_on(**args), changed=False)  # ARGSPEC is hand_on's own keyword arguments
        return result
