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

``compatibility`` of ``state=create`` (the gate before any host is contacted, in the open's one task): the
compatibility profile loaded and validated (what ``repro.vllm.compatibility state=profile`` did); the run is recorded
as judged against it. The job's variables are checked before, by the playbook's first task
(``ansible.builtin.validate_argument_spec`` over the ``repro.vllm._argument_spec`` filter).  ``inputs.judge`` of
``state=close kind=fleet``: the compatibility judge of the run's hosts, done by the close itself when the run's open
judged it (compatibility.json is one of the close's parts; a judge that cannot read a host's part leaves the run
frozen without it and fails the task after the freeze).

Where the task's connection is local and nothing is become (the controller-side steps of every run: create,
write fleet.json and notes.md, freeze, verify, all ``delegate_to: localhost``), the action does the state in this
process with the module's own argument spec and code (``_runtask.run_task``) instead of shipping the module and
starting a Python for it: the same files, results and errors, without a module execution per step.  Any other
connection (a managed node, or ``become``) runs the module there as before.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail, AnsibleError, AnsibleFilterError
from ansible.inventory.manager import InventoryManager
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase

from ansible_collections.repro.vllm.plugins.action.compatibility import PART as COMPAT_PART
from ansible_collections.repro.vllm.plugins.action.compatibility import (
    check_mode_unjudged, console_lines, judge_run, load_matrix, load_profile)
from ansible_collections.repro.vllm.plugins.action.job_result import hand_on
from ansible_collections.repro.vllm.plugins.filter.decisions import decision_report, fleet_audit
from ansible_collections.repro.vllm.plugins.plugin_utils.close import _closing, _exitrule, _runclose
from ansible_collections.repro.vllm.plugins.module_utils.compat import _compat
from ansible_collections.repro.vllm.plugins.module_utils.record import _record, _runtask
from ansible_collections.repro.vllm.plugins.plugin_utils.play import _targets


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        if args.get("collection_version") in (None, "", "unknown"):
            args["collection_version"] = _record.read_collection_version()
        gate_console = []
        nodes = None
        if args.get("state") == "create":
            # the kind of run (_runtask.OPEN_KINDS) shapes the open: its purpose, its hosts, whether it lives on them
            try:
                args = _runtask.open_args(args)
            except _record.RecordError as exc:
                result.update(failed=True, msg=str(exc))
                return result
            nodes = args.pop("nodes", None)
        if args.get("state") == "create" and "targets" in args:
            if args.get("hosts") is not None or args.get("hosts_pattern") is not None:
                result.update(failed=True, msg="run_record: give targets, or hosts and hosts_pattern, not both")
                return result
            try:
                args["hosts_pattern"], args["hosts"] = self._target_hosts(args.pop("targets"), task_vars or {})
            except AnsibleError as exc:
                result.update(failed=True, msg="run_record: the targets %r: %s" % (self._task.args.get("targets"), exc))
                return result
        if args.get("state") == "create" and args.get("compatibility") is not None:
            # the gate before anything is created or any host contacted: the profile
            gated = self._gate(args)
            if gated.get("failed"):
                result.update(gated)
                return result
            gate_console = gated["console"]
        if args.get("state") == "create" and args.get("hosts_pattern") is not None:
            # before anything is created, anywhere; only the controller knows the inventory and the --limit
            refused = self._targets_refused(args, task_vars or {})
            if refused:
                result.update(refused)
                return result
        if nodes is not None:
            # an attempt or a collective checkpoint: the targets checked, the run's hosts are its nodes
            args["hosts"] = nodes
            args.pop("hosts_pattern", None)
        if args.get("state") in ("create", "prunable", "interrupted") and args.get("root") in (None, ""):
            # the one default of the records root (no role carries it): records, under the working directory
            args["root"] = _record.DEFAULT_ROOT
        root = args.get("root")
        if args.get("state") in ("create", "prunable", "interrupted") and isinstance(root, str) and root \
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
        if args.get("state") == "create" and args.get("hosts_pattern") is not None and not result.get("failed"):
            result["hosts_pattern"] = args["hosts_pattern"]
        if args.get("state") == "create" and args.get("kind") and not result.get("failed"):
            result["kind"] = args["kind"]
        if args.get("state") == "create" and isinstance(root, str):
            result["root"] = args["root"]
            result["cwd"] = os.getcwd()
            if result.get("root_given") and result.get("console"):
                result["console"] = [line.replace("; records root %s;" % args["root"], "; records root %s, given as %s and "
                                                  "resolved against the working directory %s;"
                                                  % (args["root"], root, result["cwd"]))
                                     for line in result["console"]]
        if gate_console:
            result["console"] = gate_console + list(result.get("console") or [])
        result.setdefault("collection_version", args["collection_version"])
        return _closing.shown(result)

    def _gate(self, args):
        """``compatibility`` of a create: ``{console}`` (the profile's line; ``args`` then carries the judged profile
        as ``profile``), or a failed result naming what was refused."""
        checked, failed = self._validated(dict(args))
        if failed:
            return failed
        compat = checked.get("compatibility")
        if compat is None:
            return {"console": []}
        # repro_vllm_compatibility; left unset, the run is judged when a profile (a name or a file) is given
        enabled = compat["enabled"] if compat["enabled"] is not None else (
            compat["profile"] is not None or compat["profile_file"] is not None)
        if not enabled:
            args["profile"] = _record.judged_profile(None)
            return {"console": []}
        try:
            load_matrix()
            profile = load_profile(compat["profile"], compat["profile_file"])
        except _compat.ProfileError as exc:
            return dict(failed=True, msg="compatibility profile refused before any host is touched: %s" % exc)
        args["profile"] = _record.judged_profile(profile)
        chosen = _compat.choice_line(compat["profile"], compat["profile_file"])
        return {"console": ([chosen] if chosen else []) + [
            "compatibility | profile %s (%s) is valid" % (profile["name"], profile["origin"])]}

    @staticmethod
    def _judge(run_path, opened, judge, hosts, check_mode):
        """The compatibility judge of a fleet close (``inputs.judge``): ``(result, part, error)`` - the result the
        compatibility action hands back (run_path, verdict, lines, compatibility), compatibility.json as a part of
        the close, or the error that leaves the run frozen without it. Nothing when the open did not judge the run."""
        if check_mode:
            return check_mode_unjudged(run_path), None, None
        if (opened.get("profile_source") or _record.PROFILE_NOT_JUDGED) == _record.PROFILE_NOT_JUDGED:
            return {"run_path": run_path, "verdict": "unchecked", "lines": [], "compatibility": {},
                    "msg": "not judged (the run's open judged no profile)"}, None, None
        try:
            profile = load_profile(judge.get("profile"), judge.get("profile_file"))
            doc = judge_run(profile, load_matrix(), run_path, hosts, bool(judge.get("allow_foreign")))
        except _compat.ProfileError as exc:
            return None, None, "compatibility profile: %s" % exc
        except AnsibleActionFail as exc:
            return None, None, exc.message
        lines = _compat.console_lines(doc)
        return ({"run_path": run_path, "verdict": doc["verdict"], "lines": lines, "compatibility": doc},
                {"part": COMPAT_PART, "json": doc}, None)

    def _target_hosts(self, targets, task_vars):
        """``(hosts_pattern, hosts)`` of ``targets`` (``repro_vllm_targets``): its host-pattern terms comma-joined (the
        one string Ansible reads as exactly these terms, _targets.target_patterns) and the inventory's hosts they
        match, in the order Ansible's pattern gives them, that are in this play (what ``query('inventory_hostnames', pattern)`` then
        ``select('in', ansible_play_hosts_all)`` gave in the open's Jinja)."""
        terms = _targets.target_patterns(targets)
        groups = task_vars.get("groups") or {}
        known = set(groups) | set(_targets.LOCALHOST)
        for names in groups.values():
            known.update(names or [])
        # a plain name that is no host or group of the inventory is left out of the match (the targets check names
        # it and refuses the run; Ansible would only warn, or stop with its own words under host_pattern_mismatch)
        match = [t for t in terms if _targets.term_kind(t.lstrip("!&")) != "name" or t.lstrip("!&") in known]
        if not [t for t in match if not t.startswith(("!", "&"))]:
            return ",".join(terms), []  # nothing left to match: Ansible would read the exclusions alone as "all but"
        manager = InventoryManager(self._loader, parse=False)
        for group, names in groups.items():
            manager.add_group(group)
            for name in names:
                manager.add_host(name, group=group)
        in_play = set(task_vars.get("ansible_play_hosts_all") or [])
        return ",".join(terms), [h.name for h in manager.get_hosts(pattern=",".join(match)) if h.name in in_play]

    @staticmethod
    def _targets_refused(args, task_vars):
        """The failed result of a create whose targets name a host that matches nothing (_targets.not_matched: not
        in the inventory, or left out by --limit), or that match no host at all; None when the run may open."""
        limit = task_vars.get("ansible_limit")
        missed = _targets.not_matched(args["hosts_pattern"], task_vars.get("groups") or {},
                                      play_hosts=task_vars.get("ansible_play_hosts_all"), limit=limit)
        if not args.get("hosts"):
            msg = _runtask.no_hosts_message(args["hosts_pattern"], limit)
            if missed:
                msg += "; named there and matching nothing: " + _targets.missed_names(missed, limit)
            return dict(failed=True, msg=msg, not_matched=missed, hosts=[])
        if missed:
            return dict(failed=True, msg=_targets.not_matched_message(missed, args["hosts_pattern"], limit),
                        not_matched=missed, hosts=list(args["hosts"]))
        return None

    def _validated(self, args):
        """``(params, None)`` checked against the module's argument spec, or ``(None, failed result)``."""
        validator = ArgumentSpecValidator(_runtask.ARGUMENT_SPEC, required_if=_runtask.REQUIRED_IF,
                                          mutually_exclusive=_runtask.MUTUALLY_EXCLUSIVE)
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
        """state=close: decide (plugin_utils/close/_runclose.py, by kind, with the declared inputs), write the
        parts, freeze, verify; fail after the freeze when the kind says the play must stop."""
        p, failed = self._validated(args)
        if failed:
            return failed
        check_mode = bool(self._task.check_mode)
        # the declared inputs the task gave (an input left out is null in the validated spec)
        inputs = dict((k, v) for k, v in (p["inputs"] or {}).items() if v is not None)
        fleet = _runclose.CLOSE_OF.get(p["kind"], p["kind"]) == "fleet"
        judged, judge_part, judge_console = None, [], []
        if fleet and inputs.get("judge") is not None:
            opened = (_record.read_open(p["path"]) or {}).get("run") or {}
            hosts = inputs.get("hosts") if inputs.get("hosts") is not None else opened.get("hosts") or []
            judged, part, error = self._judge(p["path"], opened, inputs["judge"], hosts, check_mode)
            if error:
                # the run is still frozen (without compatibility.json); the task fails after the freeze with it
                inputs["error"] = inputs.get("error") or error
            elif part:
                judge_part = [part]
                judge_console = console_lines(judged["lines"])
        inputs.pop("judge", None)
        # fleet: the audit decided by the close itself after its judge (audit.yml): audit.json, audit.md and
        # isolation.json are parts of the close, repro_vllm_decision its fact
        audit_in = inputs.pop("audit", None) if fleet else None
        decision, audit_parts, audit_console = None, [], []
        if audit_in is not None:
            decision, audit_parts, audit_console, error = self._audit(p["path"], audit_in, judged, inputs, check_mode)
            if error:
                return dict(failed=True, msg="run_record close (fleet) of %s: %s; the run is still open" % (p["path"], error))
        # fleet: the job's result for the next workflow node, handed on by this task once the run is closed and the
        # close did not fail (what repro.vllm.job_result does: set_stats, the result line); not with a records sink
        # (the result role copies the run there first) and not in check mode
        handed = inputs.pop("result", None) if fleet else None
        if handed and (check_mode or handed.get("sink")):
            handed = None
        if fleet:
            # the job's exit rule (plugin_utils/close/_exitrule.py): repro_vllm_record_only as the task gives it
            inputs["variables"] = {_exitrule.RECORD_ONLY: inputs.pop("record_only", None)}
            if judged is not None and judged.get("compatibility"):
                inputs["compatibility"] = judged["compatibility"]
        try:
            closing = _runclose.decide(p["kind"], p["path"], inputs, check_mode=check_mode)
        except _runclose.CloseError as exc:
            return dict(failed=True, msg="run_record close (%s) of %s: %s; the run is still open"
                        % (p["kind"], p["path"], exc))
        if decision is None:  # decisions: the decide role's repro_vllm_decision, this run in it
            decision = closing.result.pop("decision", None)
        out = dict(closing.result, changed=False, path=p["path"], status=closing.status, kind=p["kind"])
        if judged is not None:
            out["compatibility"] = judged
        if decision is not None:
            out["ansible_facts"] = {"repro_vllm_decision": decision}
        judge_console = judge_console + audit_console
        if check_mode:
            out["record"] = "record %s (check mode: nothing written)" % p["path"]
            out["console"] = judge_console + closing.console + ["record | %s (check mode: nothing written)" % p["path"]]
            if closing.fail and p["kind"] == "incomplete":
                # the play stops with the real error in check mode too; only a run's close after a freeze says more
                out.update(failed=True, msg=closing.fail)
            return out
        metadata = dict(p["metadata"] or {})
        metadata.update(closing.metadata)
        frozen, error = _runtask.run_task(dict(p, state="freeze", parts=list(p["parts"] or []) + judge_part + audit_parts + closing.parts,
                                               status=closing.status, metadata=metadata, verify=True))
        out.update(frozen)
        if error:
            return dict(out, failed=True, msg=error)
        out["record"] = "record %s frozen, %s files verified" % (p["path"], frozen.get("checked"))
        out["console"] = judge_console + closing.console + [
            "record | %s frozen (%s), %s files verified" % (p["path"], closing.status, frozen.get("checked"))]
        if closing.fail:
            out.update(failed=True, msg=closing.fail)
        elif handed:
            handed_out = self._hand_on(handed, p["path"])
            out["console"] = out["console"] + handed_out.pop("console", [])
            out.update(handed_out)
        return _closing.shown(out)

    @staticmethod
    def _audit(run_path, audit_in, judged, inputs, check_mode):
        """The audit of a fleet close (``inputs.audit``: baseline, previous, must_keep_serving, records_root,
        case_id), decided after the close's judge with its compatibility document (the decisions filter's
        fleet_audit): ``(repro_vllm_decision, parts, console, error)``; close_fleet reads the drifted hosts from it."""
        case_id = os.path.basename(os.path.dirname(os.path.abspath(run_path)))
        if check_mode:
            return ({"case_id": case_id, "purpose": "audit", "run": run_path, "verdict": "not run (check mode)",
                     "drifted": [], "violations": 0, "decision": None, "conditions": []}, [], [], None)
        compat = (judged or {}).get("compatibility") or None
        hosts = inputs.get("hosts")
        if hosts is None:
            hosts = ((_record.read_open(run_path) or {}).get("run") or {}).get("hosts") or []
        try:
            decided = fleet_audit(run_path, compatibility=compat, hosts=hosts, **audit_in)
            report, isolation = decision_report(decided, "audit"), decision_report(decided["isolation"], "isolation")
        except (AnsibleFilterError, TypeError) as exc:
            return None, [], [], "the audit: %s" % exc
        audit, iso = decided["audit"], decided["isolation"]
        inputs["audit"] = audit
        conditions = []
        for reason in iso.get("reasons") or []:
            if reason.get("condition") not in conditions:
                conditions.append(reason.get("condition"))
        decision = {"case_id": case_id, "purpose": "audit", "run": run_path, "verdict": audit.get("verdict"),
                    "drifted": audit.get("drifted") or [], "violations": audit.get("violations") or 0,
                    "decision": iso.get("decision"), "conditions": conditions}
        parts = [{"part": "audit.json", "json": audit}, {"part": "audit.md", "content": report["markdown"]},
                 {"part": "isolation.json", "json": iso}]
        # the console as the decide role's tasks showed it: the audit's lines and one per isolation reason (the
        # decision's own first line is in isolation.json and audit.md)
        return decision, parts, list(report["lines"]) + list(isolation["lines"])[1:], None

    @staticmethod
    def _hand_on(handed, path):
        """The close's ``inputs.result`` handed on (``handed_on`` true): the run's case and records root are the
        run's own, the job's earlier runs its ``job_runs`` (the controller's fact, as job_result reads them).
        Nothing when it cannot be built, so the playbook's job_result task runs and fails with the reason, as
        without ``inputs.result``."""
        case_dir = os.path.dirname(os.path.abspath(path))
        try:
            res = hand_on(handed.get("purpose") or "", os.path.basename(case_dir), runs=[path],
                          job_runs=handed.get("job_runs") or [],
                          fields=handed.get("fields"), package=handed.get("package") or "",
                          records_root=os.path.dirname(case_dir))
        except AnsibleActionFail:
            return {}
        return dict(res, handed_on=True)

    def _in_process(self):
        """True where the module would run as this very user on this machine: a local connection, no become."""
        return self._connection.transport == "local" and not self._play_context.become

    def _run_here(self, args):
        """The module's work in this process: its argument checks, its dispatch, its result and error."""
        params, failed = self._validated(args)
        if failed:
            return failed
        out, error = _runtask.run_task(params, check_mode=bool(self._task.check_mode))
        if error:
            out = dict(out, failed=True, msg=error)
        return out
