# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: record_log
type: notification
short_description: Write the play's own log into the repro.vllm run record (terminal.log)
version_added: 0.1.0
description:
  - Once a play opens a run with the C(repro.vllm.record) role (the fact C(repro_vllm_run) appears), every play,
    task and per-host result line that follows is appended to C(terminal.log) in that run, redacted with the
    same rules as the C(repro.vllm.redact) filter, so the record shows how it was made.
  - Redaction uses the case's key (C(<records_root>/<case_id>/.redact.key)), so a secret gets the same keyed
    marker C(<redacted:KIND:HEX8>) here as in the run's other files. A value that a module already redacted before
    this callback saw it (a module's own result, such as C(repro.vllm.vllm_server)'s argv) stays the plain
    C(<redacted>) the module wrote.
  - Writing stops when the task that freezes the run starts (run_record state=freeze or state=close; a frozen
    run is never written to); the lines before the run was opened are kept in memory and written first.
  - Enable it with C(callbacks_enabled = repro.vllm.record_log) in C(ansible.cfg), or
    C(ANSIBLE_CALLBACKS_ENABLED=repro.vllm.record_log) (for example in an AWX job template's environment).
  - It also guards the play against interrupts, whatever the stdout callback (AWX replaces the stdout callback with
    its own; this one it loads from the project's or the execution environment's C(ansible.cfg), docs/awx.md).
    On SIGINT (Ctrl-C, an AWX job cancel) or SIGTERM every server this play started is stopped before the play
    ends - each server's controller heartbeat ends its lease and waits for its supervisor's stop, at most the
    stop grace plus 15 s (plugin_utils/server/_heartbeat.py) - with a line per server saying how it was stopped.
  - An interrupt (SIGINT) that ansible-core received but lost is honoured before the next task starts, with a
    warning saying so (ansible-core raises its C(KeyboardInterrupt) from the signal handler; when that handler runs
    inside a fork hook while the controller forks a task's worker, Python ignores the exception and the play would
    go on).
  - After an interrupt, ansible-playbook is ended (exit code 99, ansible-core's own for an interrupt) when it has not
    ended by itself within O(interrupt_grace) seconds, with a line saying so. ansible-core's shutdown waits for ever
    when a worker it stopped on the interrupt was writing to the results queue at that moment (the dead worker holds
    the queue's lock).
extends_documentation_fragment:
  - repro.vllm._interrupt_grace
requirements:
  - enabled in the callbacks list
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase

from ansible_collections.repro.vllm.plugins.plugin_utils.play._callbacks import (
    InterruptStop, install_interrupt_watch, opened_run, preload_plugins, say_raw)
from ansible_collections.repro.vllm.plugins.plugin_utils.server import _heartbeat
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import load_case_key, redact_data, redact_text

_MAX_RESULT_CHARS = 4000
_MAX_EARLY_LINES = 2000


class CallbackModule(InterruptStop, CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "repro.vllm.record_log"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super().__init__(display=display)
        self._run = None
        self._fh = None
        self._early = []
        self._closed = False
        self._key = None  # the case's redaction key, once the run (and so its case) is known

    # --- writing ---------------------------------------------------------------------------------------
    def _line(self, text):
        if self._closed:
            return
        if self._fh is None:
            # kept unredacted in memory only until the run (and its case key) is known, redacted when written
            if len(self._early) < _MAX_EARLY_LINES:
                self._early.append((time.strftime("%Y-%m-%dT%H:%M:%S"), text))
            return
        line = "%s %s" % (time.strftime("%Y-%m-%dT%H:%M:%S"), redact_text(text, key=self._key))
        if os.path.exists(os.path.join(self._run, "manifest.json")):
            self._close("the run was frozen")  # a backstop: never write into a frozen run
            return
        self._fh.write(line + "\n")
        self._fh.flush()

    def _open(self, run_path):
        if not run_path or run_path == self._run:
            return
        if self._fh is not None:
            self._close("the play moved on to %s" % os.path.basename(run_path.rstrip("/")))
        self._run = run_path
        self._closed = False
        target = os.path.join(run_path, "terminal.log")
        if not os.path.isdir(run_path):
            return  # check mode: the run was only planned
        if os.path.exists(os.path.join(run_path, "manifest.json")):
            self._closed = True  # frozen already: never touch it
            return
        try:
            self._fh = open(target, "a", encoding="utf-8")
        except OSError as exc:
            self._display.warning("repro.vllm.record_log: cannot write %s: %s" % (target, exc))
            self._closed = True
            return
        try:
            self._key = load_case_key(os.path.dirname(os.path.normpath(run_path)))
        except (OSError, ValueError) as exc:
            self._key = None  # plain markers, said once
            self._display.warning("repro.vllm.record_log: no case redaction key for %s (%s): terminal.log gets plain "
                                  "<redacted> markers" % (run_path, exc))
        for stamp, text in self._early:
            self._fh.write("%s %s\n" % (stamp, redact_text(text, key=self._key)))
        self._early = []
        self._fh.flush()

    def _close(self, why):
        if self._fh is not None:
            if not os.path.exists(os.path.join(self._run, "manifest.json")):
                self._fh.write("%s [record_log] %s; terminal.log ends here\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), why))
            self._fh.close()
            self._fh = None
        self._closed = True

    # --- events --------------------------------------------------------------------------------------
    def say(self, line):
        """A line from a signal handler: on the console and in terminal.log, never raising."""
        try:
            self._display.display(line)
        except Exception:  # pylint: disable=broad-except
            say_raw(line)
        try:
            self._line(line)
        except Exception:  # pylint: disable=broad-except
            pass

    def mark(self, signame):
        """The open run notes when and how its play was interrupted (what stop.yml compares the hosts' files with)."""
        if self._run and self._fh is not None and not os.path.exists(os.path.join(self._run, "manifest.json")):
            with open(os.path.join(self._run, "interrupted.json"), "w", encoding="utf-8") as fh:
                json.dump({"signal": signame, "at": round(time.time(), 3)}, fh, sort_keys=True)
                fh.write("\n")

    def v2_playbook_on_start(self, playbook):
        preload_plugins(self._display)
        self._sigint_at_start = install_interrupt_watch(self.get_option("interrupt_grace"), listener=self)

    def v2_playbook_on_handler_task_start(self, task):
        self._stop_if_interrupt_lost()

    def v2_runner_on_start(self, host, task):
        self._stop_if_interrupt_lost()

    def v2_playbook_on_play_start(self, play):
        self._line("PLAY [%s]" % play.get_name().strip())

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._stop_if_interrupt_lost()
        args = task.args or {}
        # close on the freeze of THIS run only: a node's own part (hosts/<host>/, the roles' _repro_vllm_host_dir)
        # is frozen too. Arguments are not templated yet at this point, so a templated path counts as the run's
        # unless it names a host part; a literal path must be the run's.
        path = str(args.get("path", ""))
        if "{{" in path:
            ours = "host_dir" not in path
        else:
            ours = not path or os.path.normpath(path) == os.path.normpath(self._run or "")
        if task.action in ("repro.vllm.run_record", "run_record") and args.get("state") in ("freeze", "close") \
                and self._fh is not None and ours:
            self._line("TASK [%s]" % task.get_name().strip())
            self._close("the run is being frozen")
            return
        self._line("TASK [%s]" % task.get_name().strip())

    def _result(self, status, result):
        host = result._host.get_name()
        res = dict(result._result)
        run = opened_run(result)
        if run:
            self._open(run)
        for key in ("invocation", "_ansible_no_log", "_ansible_verbose_always", "ansible_facts"):
            res.pop(key, None)
        if result._result.get("_ansible_no_log"):
            body = "(output hidden: no_log)"
        else:
            body = json.dumps(redact_data(res, key=self._key), sort_keys=True, default=str)
            if len(body) > _MAX_RESULT_CHARS:
                body = body[:_MAX_RESULT_CHARS] + "...(truncated)"
        self._line("%s: [%s] %s" % (status, host, body))

    def v2_runner_on_ok(self, result):
        self._result("ok", result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result("failed (ignored)" if ignore_errors else "failed", result)

    def v2_runner_on_unreachable(self, result):
        self._result("unreachable", result)

    def v2_runner_on_skipped(self, result):
        self._line("skipped: [%s]" % result._host.get_name())

    def v2_runner_item_on_ok(self, result):
        self._result("ok (item)", result)

    def v2_runner_item_on_failed(self, result):
        self._result("failed (item)", result)

    def v2_playbook_on_stats(self, stats):
        hosts = sorted(stats.processed.keys())
        for h in hosts:
            s = stats.summarize(h)
            self._line("RECAP %s ok=%d changed=%d unreachable=%d failed=%d skipped=%d" % (
                h, s["ok"], s["changed"], s["unreachable"], s["failures"], s["skipped"]))
        if not self._closed:
            self._close("the playbook ended")
        try:
            os.rmdir(_heartbeat.registry_dir(os.getpid()))  # the heartbeats of an ended play removed their files
        except OSError:
            pass
