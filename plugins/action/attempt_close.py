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

from ansible_collections.repro.vllm.plugins.module_utils import _attempt, _record, _runclose
from ansible_collections.repro.vllm.plugins.module_utils._logstage import LogStageError

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


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _valid, args = self.validate_argument_spec(argument_spec=ARGSPEC)
        opened = (_record.read_open(args["run_path"]) or {}).get("run") or {}
        try:
            out = _attempt.close(args["step"], args["run_id"], args["run_path"], args["case_id"],
                                 _runclose.host_reader((task_vars or {}).get("hostvars")),
                                 identity=args["identity"], diff=args["diff"], debug=args["debug"],
                                 debug_env=args["debug_env"], profile=_attempt.profile_text(opened),
                                 check_mode=bool(self._task.check_mode))
        except _attempt.AttemptCloseError as exc:
            raise AnsibleActionFail("attempt_close: %s" % exc)
        except LogStageError as exc:
            raise AnsibleActionFail("attempt_close: log_stage of %s: %s" % (", ".join(args["step"].get("nodes") or []), exc))
        result.update(changed=False, **out)
        return result
