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
  - Enable it with C(stdout_callback = repro.vllm.console) in C(ansible.cfg) (this repository's C(ansible.cfg) does),
    or C(ANSIBLE_STDOUT_CALLBACK=repro.vllm.console) in the environment; in AWX set that variable in the job
    template's or the organization's environment, or keep the project's C(ansible.cfg) at its root.
extends_documentation_fragment:
  - ansible.builtin.default_callback
  - ansible.builtin.result_format_callback
requirements:
  - set as the stdout callback
"""

import re

from ansible.plugins.callback.default import CallbackModule as DefaultCallback

from ansible_collections.repro.vllm.plugins.callback.record_log import opened_run, preload_plugins

_PROGRESS_RX = re.compile(r"^(WARNING: |[a-z][a-z_]* \| )")
_DEBUG_ACTIONS = ("debug", "ansible.builtin.debug", "ansible.legacy.debug")
_MAX_MSG = 1500


def _short(text, limit=_MAX_MSG):
    text = str(text)
    return text if len(text) <= limit else text[:limit] + " ... (%d more characters; run with -v for all)" % (
        len(text) - limit)


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "repro.vllm.console"

    def __init__(self):
        super().__init__()
        self._attempts = []        # every judged attempt (the _repro_vllm_attempt facts), in order
        self._verdict = None       # the play's closing classification (_repro_vllm_verdict)
        self._case_verdict = None  # the one verdict of the case (_repro_vllm_case_verdict, module_utils/_verdict.py)
        self._records = {}         # host -> last run path seen in a repro_vllm_run fact

    def v2_playbook_on_start(self, playbook):
        # the collection's plugins imported once before the first worker forks (record_log.preload_plugins)
        preload_plugins(self._display)
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

    def _progress_lines(self, result):
        if result._task.action not in _DEBUG_ACTIONS:
            return []
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
        if not self._quiet():
            return super().v2_playbook_on_task_start(task, is_conditional)
        return None

    def v2_playbook_on_handler_task_start(self, task):
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
        self._display.display("%s | %s | %s | %s" % (result._host.get_name(), what, result._task.get_name(),
                                                     _short(msg or "(no message; run with -v)")), stderr=True)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._collect(result)
        if not self._quiet():
            return super().v2_runner_on_failed(result, ignore_errors)
        self._failure(result, "FAILED", ignore_errors)
        return None

    def v2_runner_item_on_failed(self, result):
        if not self._quiet():
            return super().v2_runner_item_on_failed(result)
        return None  # the task's own failure line follows with every failed item's message

    def v2_runner_on_unreachable(self, result):
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
        hosts = sorted(stats.processed.keys())
        rows = []
        for host in hosts:
            mine = [a for a in self._attempts if host in (a.get("nodes") or [])]
            summary = stats.summarize(host)
            failed = [a for a in mine if not a.get("refused") and not a.get("ok") and a.get("purpose") != "rollback"]
            refused = [a for a in mine if a.get("refused")]
            rollbacks = [a for a in mine if a.get("purpose") == "rollback"]
            recorded = [a for a in mine if a.get("path")]
            if failed:
                a = failed[0]
                status = "FAILED at %s" % a.get("step")
                if rollbacks:
                    status += ", rollback %s" % ("came back" if rollbacks[-1].get("earlier_state_returned")
                                                 else "did NOT come back")
                stage, error_class, record = a.get("stage"), a.get("error_class"), a.get("path")
                if a.get("component") and error_class:
                    error_class = "%s (%s)" % (error_class, a["component"])
            elif refused:
                status, stage, error_class = "REFUSED at %s" % refused[-1].get("step"), "-", "-"
                record = recorded[-1].get("path") if recorded else self._records.get(host, "-")
            elif mine:
                status = "ok through %s" % mine[-1].get("step")
                unmet = [a.get("step") for a in mine if a.get("expectation_met") is False]
                if unmet:
                    status += ", expectation NOT met at %s" % ", ".join(unmet)
                stage, error_class = "none", "-"
                record = recorded[-1].get("path") if recorded else "-"
            else:
                status = "unreachable" if summary.get("unreachable") else (
                    "task failed" if summary.get("failures") else "ok")
                stage, error_class, record = "-", "-", self._records.get(host, "-")
            if summary.get("unreachable") and mine:
                status += " (then unreachable)"
            rows.append((host, status, stage or "-", error_class or "-", record or "-"))
        return rows

    def _table(self, stats):
        rows = self._rows(stats)
        if not rows:
            if self._case_verdict:
                self._display.display(str(self._case_verdict["line"]))
            return
        head = ("host", "status", "stage", "error class", "record")
        widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(4)]
        fmt = "  ".join("%%-%ds" % w for w in widths) + "  %s"
        self._display.display("")
        self._display.display(fmt % head)
        for row in rows:
            self._display.display(fmt % row)
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
