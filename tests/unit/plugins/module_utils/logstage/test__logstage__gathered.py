# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Two real H200 server logs as real tools printed them (tests/fixtures/2026-12-07-gathered-h200-kv-cache): Ansible's
default and YAML results, Ansible's ad hoc output of two hosts, grep -n, grep -rn, cat -n. Each must give the answer
of the logs read apart, at the line where the failing line is in it."""

from __future__ import annotations

import os

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
RUNS = os.path.join(FIX, "2026-12-04-580.159.04-h200-vllm-0.26.0", "runs")
FAILING = os.path.join(RUNS, "gpu-kv-cache-too-small", "run-002", "hosts", "h200", "logs", "server.log")
HEALTHY = os.path.join(RUNS, "h200-ladder", "run-002", "hosts", "h200", "logs", "server.log")
GATHERED = os.path.join(FIX, "2026-12-07-gathered-h200-kv-cache")


def _lines(name):
    with open(os.path.join(GATHERED, name), encoding="utf-8", errors="replace") as fh:
        return fh.read().split("\n")


def _number(name, starts):
    """The 1-based number of the first line of the capture ``name`` that starts with ``starts``."""
    return next(n for n, ln in enumerate(_lines(name), 1) if ln.startswith(starts))


# capture -> (where the failing log's line 52 is in it, the node the answer names or None for the pasted file's;
# grep -r's files and pdsh's hosts are streams of their own within the pasted file, Ansible's ad hoc hosts are nodes)
WHERE = {
    "playbook-default.out": (lambda: _number("playbook-default.out", "fatal: [gpu-a01]"), None),
    "playbook-yaml.out": (lambda: _number("playbook-yaml.out", "    stdout: |") + 52, None),
    "adhoc.out": (lambda: _number("adhoc.out", "gpu-a01 | FAILED") + 52, "gpu-a01"),
    "grep-n.out": (lambda: _number("grep-n.out", "52:"), None),
    "grep-rn.out": (lambda: _number("grep-rn.out", "logs/gpu-a01/server.log:52:"), None),
    "cat-n.out": (lambda: 52, None),
}


@pytest.mark.parametrize("name", sorted(WHERE))
def test_a_gathered_log_answers_as_the_logs_read_apart(name):
    apart = classify_files([FAILING, HEALTHY])
    assert apart["first_error"]["lineno"] == 52 and apart["first_error"]["file"] == FAILING
    got = classify_files([os.path.join(GATHERED, name)])
    assert (got["stage"], got["error_class"]) == (apart["stage"], apart["error_class"]) == ("engine_init", "oom")
    assert got["first_error"]["line"] == apart["first_error"]["line"]
    lineno, node = WHERE[name]
    assert got["first_error"]["lineno"] == lineno()
    if node is not None:
        assert got["first_error"]["node"] == node
