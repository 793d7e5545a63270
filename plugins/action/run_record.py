# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of repro.vllm.run_record (documentation: plugins/modules/run_record.py).

Two things only the controller can know, filled in before the module runs:

* ``collection_version``: when the task leaves it out (or says ``unknown``), the version in this collection's
  galaxy.yml, its one source (a module on a node cannot read it).
* ``root`` of ``state=create`` on a local connection: a relative records root is resolved against this
  process's real working directory (``os.getcwd()``).  Ansible runs local modules from the playbook's folder,
  which put records inside the installed collection.
"""

from __future__ import annotations

import os

from ansible.plugins.action import ActionBase

from ansible_collections.repro.vllm.plugins.module_utils import _record


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        if args.get("collection_version") in (None, "", "unknown"):
            args["collection_version"] = _record.read_collection_version()
        root = args.get("root")
        if args.get("state") == "create" and isinstance(root, str) and root and self._connection.transport == "local":
            resolved = _record.resolve_root(root)
            args["root"] = resolved
            if resolved != root:
                result["root_given"] = root
        result.update(self._execute_module(module_name="repro.vllm.run_record", module_args=args,
                                           task_vars=task_vars))
        if args.get("state") == "create" and isinstance(root, str):
            result["root"] = args["root"]
            result["cwd"] = os.getcwd()
        result.setdefault("collection_version", args["collection_version"])
        return result
