# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""repro.vllm.handoff (and repro.vllm.replay) on the controller: the records root resolved here, in the controller's
process, as run_record's open resolves it (records when not given; a relative one against the controller's working
directory - a module on the local connection runs in the playbook's folder), then the module as Ansible runs it."""

from __future__ import annotations

from ansible.plugins.action.normal import ActionModule as NormalAction

from ansible_collections.repro.vllm.plugins.module_utils.record import _record


class ActionModule(NormalAction):

    def records_root(self):
        """The task's records_root (records when not given), resolved when the module runs on this controller."""
        root = self._task.args.get("records_root") or _record.DEFAULT_ROOT
        return _record.resolve_root(root) if self._connection.transport == "local" else root

    def run(self, tmp=None, task_vars=None):
        self._task.args = dict(self._task.args, records_root=self.records_root())
        return super().run(tmp, task_vars)
