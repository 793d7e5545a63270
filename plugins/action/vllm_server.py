# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""repro.vllm.vllm_server on the controller: start the server's heartbeat (plugin_utils/server/_heartbeat.py), then run the
module as Ansible's normal action does. The heartbeat renews the server's short lease while the play lives and stops
the server when the play is interrupted or its process is gone."""

from __future__ import annotations

from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.utils.display import Display

from ansible_collections.repro.vllm.plugins.plugin_utils.server import _heartbeat

display = Display()


class ActionModule(NormalAction):

    def _heartbeat_for(self, task_vars):
        """Start this server's heartbeat when the task leases a server on a node; True once one beats for it."""
        args = self._task.args
        if args.get("state", "started") not in ("started", "checked") or self._play_context.check_mode:
            return False
        try:
            seconds = float(args.get("lease") or 0)
        except (TypeError, ValueError):
            return False
        if seconds <= 0 or not args.get("lease_file") or not args.get("state_file"):
            return False
        if _heartbeat.beating(args["lease_file"], args.get("node") or "", args["state_file"]):
            return True  # a check of a server this play's heartbeat already keeps
        # the node's Python, as the module will run it (the interpreter discovery and templating of a module run)
        built = self._configure_module(self._task.action, dict(args), task_vars)[0]
        interpreter = (built.shebang or "#!/usr/bin/python3")[2:].strip().split()[0]

        def execute(cmd):
            res = self._low_level_execute_command(cmd, sudoable=False)
            return res.get("rc"), res.get("stdout", ""), res.get("stderr", "")

        def detach():
            # Ansible's display in a worker sends its lines to the play's results queue; the heartbeat must not
            display._final_q = None  # pylint: disable=protected-access

        try:
            _heartbeat.start(execute, interpreter, args["lease_file"], args.get("node") or "", args["state_file"],
                             seconds, float(args.get("stop_grace") or 10), detach=detach)
        except Exception as exc:  # pylint: disable=broad-except
            display.warning("repro.vllm.vllm_server: no controller heartbeat for %s (%s): the start keeps the lease "
                            "for its ready timeout plus the lease" % (args.get("node") or "the server", exc))
            return False
        return True

    def run(self, tmp=None, task_vars=None):
        if self._heartbeat_for(task_vars or {}):
            self._task.args = dict(self._task.args, heartbeat=True)
        return super().run(tmp, task_vars)
