# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of repro.vllm.attempt_close (documentation: plugins/modules/attempt_close.py).

On the controller, once per attempt: reads what each node of the step reported (the play's host variables
``_repro_vllm_node_report``, ``_repro_vllm_refusal``; the head node's ``_repro_vllm_exchanges``,
``_repro_vllm_checkpoint``, ``_repro_vllm_api_url``, ``_repro_vllm_node_argv``), classifies every node's log together (the one classification,
module_utils/_logstage.py, as the log_stage module does), and hands everything to module_utils/_attempt.py, which
decides the verdict, the parts (the run sheet notes.md too) and the freeze. It writes nothing: the role writes, freezes and verifies.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.repro.vllm.plugins.module_utils import _attempt, _record
from ansible_collections.repro.vllm.plugins.module_utils._logstage import LogStageError, classify_files

ARGSPEC = {
    "step": {"type": "dict", "required": True},
    "run_id": {"type": "str", "required": True},
    "run_path": {"type": "path", "required": True},
    "case_id": {"type": "str", "required": True},
    "identity": {"type": "raw"},
    "diff": {"type": "raw"},
    "debug": {"type": "bool", "default": False},
    "debug_env": {"type": "dict"},
}


def _host_var(hostvars, node, name, default=None):
    """One host variable of a node of the step, ``default`` where the node or the variable is not there."""
    try:
        host = hostvars[node]
    except KeyError:
        return default
    try:
        value = host[name]
    except KeyError:
        return default
    return default if value is None and default is not None else value


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _valid, args = self.validate_argument_spec(argument_spec=ARGSPEC)
        task_vars = task_vars or {}
        hostvars = task_vars.get("hostvars") or {}
        check_mode = bool(self._task.check_mode)
        step = args["step"]
        nodes = list(step.get("nodes") or [])
        if not nodes:
            raise AnsibleActionFail("attempt_close: the step %r names no node" % (step.get("name"),))
        head = nodes[0]
        reports = {node: _host_var(hostvars, node, "_repro_vllm_node_report") for node in nodes}
        refusals = {node: _host_var(hostvars, node, "_repro_vllm_refusal") for node in nodes}
        exchanges = _host_var(hostvars, head, "_repro_vllm_exchanges", [])
        checkpoint = _host_var(hostvars, head, "_repro_vllm_checkpoint")
        was_refused = _attempt.refused(nodes, refusals)
        stages = {}
        if not (check_mode or was_refused):
            try:
                stages = classify_files(_attempt.log_paths(args["run_path"], nodes), nodes=nodes,
                                        until=_attempt.log_until(nodes, reports))
            except LogStageError as exc:
                raise AnsibleActionFail("attempt_close: log_stage of %s: %s" % (", ".join(nodes), exc))
        try:
            attempt = _attempt.judge(step, args["run_id"], args["run_path"], args["case_id"], stages, reports,
                                     exchanges, checkpoint, identity=args["identity"], diff=args["diff"],
                                     debug=args["debug"], check_mode=check_mode)
            result["parts"] = []
            if not check_mode:
                try:
                    key = _attempt.case_key_of(args["run_path"])
                except (OSError, ValueError) as exc:
                    raise AnsibleActionFail("attempt_close: the case key of %s cannot be read: %s"
                                            % (args["run_path"], exc))
                result["parts"] = _attempt.parts(step, attempt, args["run_path"], stages, exchanges,
                                                 api_url=_host_var(hostvars, head, "_repro_vllm_api_url"),
                                                 identity=args["identity"], diff=args["diff"],
                                                 was_refused=was_refused, case_key=key)
                # the profile judged, as the run's open recorded it (repro.vllm.run_record state=create)
                opened = (_record.read_open(args["run_path"]) or {}).get("run") or {}
                result["parts"].append({"part": "notes.md", "content": _attempt.notes(
                    step, attempt, args["case_id"], _attempt.profile_text(opened), diff=args["diff"], debug_on=args["debug"],
                    debug_env=args["debug_env"], argv=_host_var(hostvars, head, "_repro_vllm_node_argv"), case_key=key)})
        except _attempt.AttemptCloseError as exc:
            raise AnsibleActionFail("attempt_close: %s" % exc)
        result.update(changed=False, refused=was_refused, stages=stages, attempt=attempt,
                      step=_attempt.kept_step(step), **_attempt.freeze_args(step, attempt, args["case_id"]))
        return result
