# -*- coding: utf-8 -*-
"""Stopping a server never signals anything that is not the server's (real processes, no mocks).

Found the hard way: a state file naming the caller's own session made the stop send SIGTERM to the caller's
process group, which was the CI job running the tests.
"""
from __future__ import annotations

import os
import subprocess
import time

from ansible_collections.repro.vllm.plugins.module_utils.server import _server


def test_own_session_and_group_are_never_signalled():
    child = subprocess.Popen(["sleep", "30"])  # same session and group as this test, and younger than it
    try:
        me = _server.proc_stat(os.getpid())
        res = _server.stop_group(me["sid"], me["pgid"], me["start_ticks"], 0.5)
        assert res["signalled"] == [] and res["initial"] == []
        assert child.poll() is None, "a process of the caller's own session was signalled"
    finally:
        child.kill()
        child.wait()


def test_orphans_of_a_dead_leader_are_stopped_one_by_one():
    # a session leader that leaves a child behind and exits: the child keeps the dead leader's group and session
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!"], stdout=subprocess.PIPE, start_new_session=True)
    orphan = int(leader.stdout.readline())
    leader.wait()
    st = _server.proc_stat(orphan)
    assert st["sid"] == leader.pid and st["pgid"] == leader.pid
    res = _server.stop_group(leader.pid, leader.pid, st["start_ticks"], 2.0)
    assert res["signalled"][0] == "SIGTERM" and res["remaining"] == []
    deadline = time.monotonic() + 5
    while _server.pid_alive(orphan) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _server.pid_alive(orphan)
