# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: console
type: stdout
short_description: The operator's console of repro.vllm - one line per host and step, a closing table
version_added: 0.1.0
description:
  - At the default verbosity it prints only what an operator at 3 a.m. needs - one line per play, the progress
    lines the collection's roles write (C(reproduce | host | run-NNN step | ...), C(fingerprint | ...)), every
    failure with its host, task and message, and at the end a table with one row per host (host, status, stage,
    error class, record path), the play's classification, and last the one verdict of the case
    (C(verdict | <verdict> | <sentence>), from P(repro.vllm.case_verdict#filter), the sentence the hand-off's title
    and the workflow result say), followed by the usual recap.
  - With C(-v) or more it prints the full task stream exactly like the C(default) callback, and the table at the end.
  - Plain text, no cursor movement and no color codes unless Ansible's color is on, so an AWX job log reads the
    same as a terminal.
  - Interrupts (the servers stopped on SIGINT and SIGTERM, a lost SIGINT honoured, the end after
    O(interrupt_grace)) are handled as P(repro.vllm.record_log#callback) does, with the same code, also when that
    callback is not enabled.
  - Enable it with C(stdout_callback = repro.vllm.console) in C(ansible.cfg) (this repository's C(ansible.cfg) does),
    or C(ANSIBLE_STDOUT_CALLBACK=repro.vllm.console) in the environment. AWX never reads the C(ansible.cfg) setting
    (ansible-runner sets its own C(awx_display) callback, over Ansible's C(default)); the collection's actions hand
    their lines and the closing table back as the task's C(msg), which any display shows, and this callback prints
    them once, without the result. AWX's Settings -> Jobs -> Extra Environment Variables
    C(ANSIBLE_STDOUT_CALLBACK=repro.vllm.console) makes C(awx_display) build on this callback.
extends_documentation_fragment:
  - ansible.builtin.default_callback
  - ansible.builtin.result_format_callback
  - repro.vllm._interrupt_grace
requirements:
  - set as the stdout callback
"""

import re

from ansible.plugins.callback.default import CallbackModule as DefaultCallback

from ansible_collections.repro.vllm.plugins.plugin_utils.play._callbacks import (
    InterruptStop, install_interrupt_watch, opened_run, preload_plugins)
from ansible_collections.repro.vllm.plugins.plugin_utils.close import _closing

_LOCALHOST = ("localhost", "127.0.0.1", "::1")
_CREATE_ACTIONS = ("repro.vllm.run_record", "run_record")
_COMPAT_ACTIONS = ("repro.vllm.compatibility", "compatibility")

_PROGRESS_RX = re.compile(r"^(WARNING: |[a-z][a-z_]* \| )")
_DEBUG_ACTIONS = ("debug", "ansible.builtin.debug", "ansible.legacy.debug")
_MAX_MSG = 1500


def _controller_task(result):
    """True for a task that works for the whole job on the controller (delegated to localhost, or run once): its
    failure is the controller's, never the host's Ansible happened to run it for."""
    delegated = (result._result.get("_ansible_delegated_vars") or {}).get("ansible_delegated_host")
    if delegated in _LOCALHOST or getattr(result._task, "delegate_to", None) in _LOCALHOST:
        return True
    return getattr(result._task, "run_once", False) is True


def _rescued(task):
    """True when a block around the task has a rescue: its failure is handled by the play, not the job's end."""
    parent = getattr(task, "_parent", None)
    while parent is not None:
        if getattr(parent, "rescue", None):
            return True
        parent = getattr(parent, "_parent", None)
    return False


def _short(text, limit=_MAX_MSG):
    text = str(text)
    return text if len(text) <= limit else text[:limit] + " ... (%d more characters; run with -v for all)" % (
        len(text) - limit)


class CallbackModule(InterruptStop, DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "repro.vllm.console"

    def __init__(self):
        super().__init__()
        self._attempts = []        # every judged attempt (the _repro_vllm_attempt facts), in order
        self._verdict = None       # the play's closing classification (_repro_vllm_verdict)
        self._case_verdict = None  # the one verdict of the case (_repro_vllm_case_verdict, module_utils/decide/_verdict.py)
        self._records = {}         # host -> last run path seen in a repro_vllm_run fact
        # the closing table's evidence (_closing.closing_rows)
        self._targets = []         # the hosts of every opened run, in order
        self._not_matched = []     # [{name, reason}] of a refused open
        self._fleet = {}           # host -> its fleet.json entry (the record's status)
        self._compat = None        # the compatibility judge's document
        self._drifted = []         # the audit's drifted hosts
        self._unreachable = set()  # hosts a connection was lost to (ignore_unreachable too)
        self._host_failed = {}     # host -> the first of its own tasks that failed (not rescued, not ignored)
        self._ran = []             # hosts whose own tasks ran
        self._controller_errors = []  # [{task, msg}] of the controller's failed tasks

    def v2_playbook_on_start(self, playbook):
        # the collection's plugins imported once before the first worker forks (plugin_utils/play/_callbacks.py preload_plugins)
        preload_plugins(self._display)
        self._sigint_at_start = install_interrupt_watch(self.get_option("interrupt_grace"))
        super().v2_playbook_on_start(playbook)

    # --- helpers -------------------------------------------------------------------------------------------------
    def _quiet(self):
        return self._display.verbosity < 1

    def _collect(self, result):
        facts = result._result.get("ansible_facts") or {}
        attempt = facts.get("_repro_vllm_attempt")
        if isinstance(attempt, dict) and attempt.get("step"):
            key = (attempt.get("run"), attempt.get("step"), attempt.get("refused"))
            if not any((a.get("run"), a.get("step"), a.get("refused")) == key for a in self._attempts):
                self._attempts.append(attempt)
        verdict = facts.get("_repro_vllm_verdict")
        if isinstance(verdict, dict):
            self._verdict = verdict
        case = facts.get("_repro_vllm_case_verdict")
        if isinstance(case, dict) and case.get("line"):
            self._case_verdict = case
        run = opened_run(result)
        if run:
            self._records[result._host.get_name()] = run
        self._collect_status(result, facts)

    def _collect_status(self, result, facts):
        """What the closing table needs from one result: the run's hosts, the record's statuses, the verdicts."""
        res = result._result
        action = result._task.action
        if action in _CREATE_ACTIONS and isinstance(res.get("hosts"), list):
            for host in res["hosts"]:
                if host not in self._targets:
                    self._targets.append(host)
                if res.get("path") and not res.get("failed") and result._task.check_mode is not True:
                    self._records[host] = res["path"]
            if isinstance(res.get("not_matched"), list):
                self._not_matched = res["not_matched"]
        # fleet.json's hosts: from a fleet run's close (repro.vllm.run_record state=close kind=fleet)
        fleet = res.get("fleet") if action in _CREATE_ACTIONS and res.get("kind") == "fleet" else facts.get("_repro_vllm_fleet")
        if isinstance(fleet, list):
            for entry in fleet:
                if isinstance(entry, dict) and entry.get("host"):
                    self._fleet[entry["host"]] = entry
        if action in _COMPAT_ACTIONS and isinstance(res.get("compatibility"), dict) and res["compatibility"]:
            self._compat = res["compatibility"]
        # the judge of a fleet run's close (fingerprint.yml judges there): the same document, one level down
        judged = res.get("compatibility") if action in _CREATE_ACTIONS else None
        if isinstance(judged, dict) and isinstance(judged.get("compatibility"), dict) and judged["compatibility"]:
            self._compat = judged["compatibility"]
        decision = facts.get("repro_vllm_decision")
        if isinstance(decision, dict) and decision.get("purpose") == "audit":
            self._drifted = list(decision.get("drifted") or [])
        host = result._host.get_name()
        if not _controller_task(result) and host not in self._ran:
            self._ran.append(host)

    def _progress_lines(self, result):
        if result._task.action not in _DEBUG_ACTIONS:
            # this collection's actions that say what they did on the console hand back ``console`` (a list of
            # lines: repro.vllm.run_record's open and close), so no debug task has to repeat their result
            lines = result._result.get("console") if str(result._task.action).startswith("repro.vllm.") else None
            return [str(m) for m in lines if m is not None] if isinstance(lines, list) else []
        if "results" in result._result:
            return []  # a loop: its items were shown one by one
        msg = result._result.get("msg")
        lines = msg if isinstance(msg, list) else [msg]
        lines = [str(m) for m in lines if m is not None]
        name = result._task.get_name()
        if name.startswith("Summary |") or "progress" in name.lower():
            return lines
        return [m for m in lines if _PROGRESS_RX.match(m)]

    # --- the quiet stream ----------------------------------------------------------------------------------------
    def v2_playbook_on_play_start(self, play):
        if not self._quiet():
            return super().v2_playbook_on_play_start(play)
        name = play.get_name().strip()
        self._display.display("== %s" % (name or "play"))
        return None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._stop_if_interrupt_lost()
        if not self._quiet():
            return super().v2_playbook_on_task_start(task, is_conditional)
        return None

    def v2_playbook_on_handler_task_start(self, task):
        self._stop_if_interrupt_lost()
        if not self._quiet():
            return super().v2_playbook_on_handler_task_start(task)
        return None

    def v2_playbook_on_include(self, included_file):
        if not self._quiet():
            return super().v2_playbook_on_include(included_file)
        return None

    def v2_playbook_on_no_hosts_matched(self):
        self._display.display("skipping: no hosts matched", color=None)

    def v2_runner_on_start(self, host, task):
        self._stop_if_interrupt_lost()
        if not self._quiet():
            return super().v2_runner_on_start(host, task)
        return None

    def v2_runner_on_ok(self, result):
        self._collect(result)
        if not self._quiet():
            return super().v2_runner_on_ok(result)
        closing = ((self._verdict or {}).get("line"), (self._case_verdict or {}).get("line"))
        for line in self._progress_lines(result):
            if line not in closing:  # the closing classification and the case verdict are printed once, under the table
                self._display.display(line)
        return None

    def v2_runner_on_skipped(self, result):
        if not self._quiet():
            return super().v2_runner_on_skipped(result)
        return None

    def v2_runner_item_on_ok(self, result):
        self._collect(result)
        if not self._quiet():
            return super().v2_runner_item_on_ok(result)
        for line in self._progress_lines(result):
            self._display.display(line)
        return None

    def v2_runner_item_on_skipped(self, result):
        if not self._quiet():
            return super().v2_runner_item_on_skipped(result)
        return None

    def _failure(self, result, what, ignore_errors=False):
        if ignore_errors:
            return
        res = result._result
        msg = res.get("msg") or res.get("stderr") or res.get("reason") or ""
        if not msg and res.get("results"):
            msg = "; ".join(str(r.get("msg")) for r in res["results"] if isinstance(r, dict) and r.get("failed"))
        # the controller's own task (run once, or delegated to localhost) names the controller, not the host Ansible ran it for
        who = "controller" if _controller_task(result) else result._host.get_name()
        self._display.display("%s | %s | %s | %s" % (who, what, result._task.get_name(),
                                                     _short(msg or "(no message; run with -v)")), stderr=True)

    def _failed(self, result, ignore_errors):
        if ignore_errors or _rescued(result._task):
            return
        if result._result.get("exit_rule") is True:
            return  # the job fails by the exit rule on what the run holds (the table's rows say it), not by an error
        if _controller_task(result):
            self._controller_errors.append({"task": result._task.get_name(),
                                            "msg": result._result.get("msg") or "(no message)"})
        else:
            self._host_failed.setdefault(result._host.get_name(), result._task.get_name())

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._collect(result)
        self._failed(result, ignore_errors)
        if not self._quiet():
            return super().v2_runner_on_failed(result, ignore_errors)
        for line in self._progress_lines(result):  # what a close said before it failed the play after its freeze
            self._display.display(line)
        self._failure(result, "FAILED", ignore_errors)
        return None

    def v2_runner_item_on_failed(self, result):
        if not self._quiet():
            return super().v2_runner_item_on_failed(result)
        return None  # the task's own failure line follows with every failed item's message

    def v2_runner_on_unreachable(self, result):
        self._unreachable.add(result._host.get_name())
        if not self._quiet():
            return super().v2_runner_on_unreachable(result)
        self._failure(result, "UNREACHABLE")
        return None

    def v2_runner_retry(self, result):
        if not self._quiet():
            return super().v2_runner_retry(result)
        return None

    # --- the closing table ---------------------------------------------------------------------------------------
    def _rows(self, stats):
        """One row per targeted host with its status from the record (_closing.closing_rows)."""
        unreachable = set(self._unreachable)
        for host in stats.processed:
            if stats.summarize(host).get("unreachable"):
                unreachable.add(host)
        # a host's own failure counts when the play did not rescue it (stats.failures leaves rescued tasks out)
        failed = {h: t for h, t in self._host_failed.items() if stats.summarize(h).get("failures")}
        return _closing.closing_rows(
            targets=self._targets, not_matched=self._not_matched, fleet=list(self._fleet.values()),
            compatibility=self._compat, drifted=self._drifted, attempts=self._attempts, unreachable=unreachable,
            failed=failed, ran=self._ran, records=self._records, controller_errors=self._controller_errors)

    def _table(self, stats):
        lines = _closing.table_lines(self._rows(stats))
        if not lines:
            if self._case_verdict:
                self._display.display(str(self._case_verdict["line"]))
            return
        for line in lines:
            self._display.display(line)
        if self._verdict and self._verdict.get("line"):
            self._display.display(str(self._verdict["line"]))
        # the closing line: the one verdict of the case, the same sentence as the hand-off's title and the result
        if self._case_verdict:
            self._display.display(str(self._case_verdict["line"]))

    def v2_playbook_on_stats(self, stats):
        self._table(stats)
        if not self._quiet():
            return super().v2_playbook_on_stats(stats)
        for host in sorted(stats.processed.keys()):
            s = stats.summarize(host)
            self._display.display("recap %s: ok=%d changed=%d failed=%d unreachable=%d skipped=%d rescued=%d "
                                  "ignored=%d" % (host, s["ok"], s["changed"], s["failures"], s["unreachable"],
                                                  s["skipped"], s["rescued"], s["ignored"]))
        return None
