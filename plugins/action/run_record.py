# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of repro.vllm.run_record (documentation: plugins/modules/run_record.py).

What only the controller can know, checked or filled in before the module runs:

* ``hosts_pattern`` of ``state=create``: every host the targets name is a host of the inventory the play has (not
  left out by ``--limit``), and the targets match a host at all (``_targets.not_matched``); else the task fails
  before any run is created, naming the hosts (result ``not_matched``: ``[{name, reason}]``) and the --limit.

* ``collection_version``: when the task leaves it out (or says ``unknown``), the version in this collection's
  galaxy.yml, its one source (a module on a node cannot read it).
* ``root`` of ``state=create`` on a local connection: a relative records root is resolved against this
  process's real working directory (``os.getcwd()``).  Ansible runs local modules from the playbook's folder,
  which put records inside the installed collection.

Where the task's connection is local and nothing is become (the controller-side steps of every run: create,
write fleet.json and notes.md, freeze, verify, all ``delegate_to: localhost``), the action does the state in this
process with the module's own argument spec and code (``_record.run_task``) instead of shipping the module and
starting a Python for it: the same files, results and errors, without a module execution per step.  Any other
connection (a managed node, or ``become``) runs the module there as before.
"""

from __future__ import annotations

import os

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase

from ansible_collections.repro.vllm.plugins.module_utils import _record, _runclose, _targets


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        if args.get("collection_version") in (None, "", "unknown"):
            args["collection_version"] = _record.read_collection_version()
        if args.get("state") == "create" and args.get("hosts_pattern") is not None:
            # before anything is created, anywhere; only the controller knows the inventory and the --limit
            refused = self._targets_refused(args, task_vars or {})
            if refused:
                result.update(refused)
                return result
        root = args.get("root")
        if args.get("state") in ("create", "prunable") and isinstance(root, str) and root \
                and self._connection.transport == "local":
            resolved = _record.resolve_root(root)
            args["root"] = resolved
            if resolved != root:
                result["root_given"] = root
        if args.get("state") == "create" and not args.get("owner"):
            # the run's owner is the play: ansible-playbook's own process (this action runs in one of its forked
            # workers, which ends with the task), named with this controller and the records root
            args["owner"] = _record.controller_owner(args.get("root"), pid=os.getppid())
        if args.get("state") == "close" and self._in_process():
            result.update(self._close(args, task_vars or {}))
            return result
        if self._in_process():
            result.update(self._run_here(args))
        else:
            result.update(self._execute_module(module_name="repro.vllm.run_record", module_args=args,
                                               task_vars=task_vars))
        if args.get("state") == "create" and isinstance(root, str):
            result["root"] = args["root"]
            result["cwd"] = os.getcwd()
            if result.get("root_given") and result.get("console"):
                result["console"] = [line.replace("; records root %s;" % args["root"], "; records root %s, given as %s and "
                                                  "resolved against the working directory %s;"
                                                  % (args["root"], root, result["cwd"]))
                                     for line in result["console"]]
        result.setdefault("collection_version", args["collection_version"])
        return result

    @staticmethod
    def _targets_refused(args, task_vars):
        """The failed result of a create whose targets name a host that matches nothing (_targets.not_matched: not
        in the inventory, or left out by --limit), or that match no host at all; None when the run may open."""
        limit = task_vars.get("ansible_limit")
        missed = _targets.not_matched(args["hosts_pattern"], task_vars.get("groups") or {},
                                      play_hosts=task_vars.get("ansible_play_hosts_all"), limit=limit)
        if not args.get("hosts"):
            msg = _record.no_hosts_message(args["hosts_pattern"], limit)
            if missed:
                msg += "; named there and matching nothing: " + _targets.missed_names(missed, limit)
            return dict(failed=True, msg=msg, not_matched=missed, hosts=[])
        if missed:
            return dict(failed=True, msg=_targets.not_matched_message(missed, args["hosts_pattern"], limit),
                        not_matched=missed, hosts=list(args["hosts"]))
        return None

    def _validated(self, args):
        """``(params, None)`` checked against the module's argument spec, or ``(None, failed result)``."""
        validator = ArgumentSpecValidator(_record.ARGUMENT_SPEC, required_if=_record.REQUIRED_IF,
                                          mutually_exclusive=_record.MUTUALLY_EXCLUSIVE)
        checked = validator.validate(args)
        if checked.errors.errors:
            # the first error, worded as AnsibleModule words it, naming this module
            err = checked.errors.errors[0]
            if isinstance(err, UnsupportedError):
                return None, dict(failed=True, msg="Unsupported parameters for (repro.vllm.run_record) module: %s"
                                  % err.msg)
            return None, dict(failed=True, msg=err.msg)
        return checked.validated_parameters, None

    def _close(self, args, task_vars):
        """state=close: decide (module_utils/_runclose.py, by kind, with the play's host variables), write the
        parts, freeze, verify; fail after the freeze when the kind says the play must stop."""
        p, failed = self._validated(args)
        if failed:
            return failed
        check_mode = bool(self._task.check_mode)
        try:
            closing = _runclose.decide(p["kind"], p["path"], p["inputs"], _runclose.host_reader(task_vars.get("hostvars")),
                                       check_mode=check_mode)
        except _runclose.CloseError as exc:
            return dict(failed=True, msg="run_record close (%s) of %s: %s; the run is still open"
                        % (p["kind"], p["path"], exc))
        out = dict(closing.result, changed=False, path=p["path"], status=closing.status, kind=p["kind"])
        if check_mode:
            out["console"] = closing.console + ["record | %s (check mode: nothing written)" % p["path"]]
            if closing.fail and p["kind"] == "incomplete":
                # the play stops with the real error in check mode too; only a run's close after a freeze says more
                out.update(failed=True, msg=closing.fail)
            return out
        metadata = dict(p["metadata"] or {})
        metadata.update(closing.metadata)
        frozen, error = _record.run_task(dict(p, state="freeze", parts=list(p["parts"] or []) + closing.parts,
                                              status=closing.status, metadata=metadata, verify=True))
        out.update(frozen)
        if error:
            return dict(out, failed=True, msg=error)
        out["console"] = closing.console + ["record | %s frozen (%s), %s files verified"
                                            % (p["path"], closing.status, frozen.get("checked"))]
        if closing.fail:
            out.update(failed=True, msg=closing.fail)
        return out

    def _in_process(self):
        """True where the module would run as this very user on this machine: a local connection, no become."""
        return self._connection.transport == "local" and not self._play_context.become

    def _run_here(self, args):
        """The module's work in this process: its argument checks, its dispatch, its result and error."""
        params, failed = self._validated(args)
        if failed:
            return failed
        out, error = _record.run_task(params, check_mode=bool(self._task.check_mode))
        if error:
            out = dict(out, failed=True, msg=error)
        return out
