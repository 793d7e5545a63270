# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's heartbeat (plugin_utils/server/_heartbeat.py) and its node side (module_utils/server/_lease.py beat and
expire_now), each remote call run as the real shell command a node runs (its own Python process)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from ansible_collections.repro.vllm.plugins.plugin_utils.server import _heartbeat
from ansible_collections.repro.vllm.plugins.module_utils.server import _lease


def _execute(cmd):
    proc = subprocess.run(["/bin/sh", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=60, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def _lease_with_server(tmp_path, seconds=30.0, state_file="/srv/a/state.json"):
    lease_file = str(tmp_path / "leases" / "0123456789abcdef.json")
    os.makedirs(os.path.dirname(lease_file))
    _lease.renew_node(lease_file, "node01", seconds, by="vllm_server start",
                      info={"run_uid": "0123456789abcdef", "state_file": state_file, "port": 8000})
    return lease_file


def _call(func, **kwargs):
    rc, out, err = _execute(_heartbeat.remote_command(sys.executable, func, kwargs))
    assert rc == 0, err
    return _heartbeat._answer(out)  # pylint: disable=protected-access


def test_a_beat_renews_only_its_own_server_and_never_shortens(tmp_path):
    lease_file = _lease_with_server(tmp_path, seconds=300)
    before = _lease.node_entry(lease_file, "node01")["until"]
    got = _call("beat", lease_file=lease_file, node="node01", state_file="/srv/a/state.json", seconds=20)
    # a request's longer lease stays; the beat is recorded
    assert got == {"state": "renewed", "until": before}
    entry = _lease.node_entry(lease_file, "node01")
    assert entry["heartbeat_by"] == "controller heartbeat" and entry["heartbeat_at"] >= entry["renewed_at"] - 1
    short = _lease_with_server(tmp_path / "b", seconds=1)
    got = _call("beat", lease_file=short, node="node01", state_file="/srv/a/state.json", seconds=20)
    assert got["state"] == "renewed" and got["until"] >= time.time() + 18
    # another attempt's server (another state file) or another node: not this heartbeat's
    assert _call("beat", lease_file=lease_file, node="node01", state_file="/srv/b/state.json", seconds=20)["state"] \
        == "absent"
    assert _call("beat", lease_file=lease_file, node="node02", state_file="/srv/a/state.json", seconds=20)["state"] \
        == "absent"
    _lease.update_node(lease_file, "node01", expired_at=time.time())
    assert _call("beat", lease_file=lease_file, node="node01", state_file="/srv/a/state.json", seconds=20)["state"] \
        == "expired"


def _supervisor(lease_file):
    """What _server._lease_check does once the lease has passed, in a thread: stop, then say so in the entry."""
    def run():
        deadline = time.time() + 30
        while time.time() < deadline:
            entry = _lease.node_entry(lease_file, "node01")
            if entry and time.time() > entry["until"]:
                time.sleep(0.5)
                _lease.update_node(lease_file, "node01", expired_at=round(time.time(), 3), stopped_by_supervisor=True)
                return
            time.sleep(0.1)
    threading.Thread(target=run, daemon=True).start()


def test_expire_now_ends_the_lease_and_waits_for_the_supervisor(tmp_path):
    lease_file = _lease_with_server(tmp_path, seconds=300)
    _supervisor(lease_file)
    got = _call("expire_now", lease_file=lease_file, node="node01", state_file="/srv/a/state.json",
                reason="the play was interrupted (SIGINT)", wait_s=20)
    assert got["state"] == "stopped" and 0.4 <= got["waited_s"] < 20, got
    entry = _lease.node_entry(lease_file, "node01")
    assert entry["stop_reason"] == "the play was interrupted (SIGINT)" and entry["stop_requested_at"] <= entry["until"] + 1


def test_expire_now_says_when_nothing_stopped_it(tmp_path):
    lease_file = _lease_with_server(tmp_path, seconds=300)
    got = _call("expire_now", lease_file=lease_file, node="node01", state_file="/srv/a/state.json", reason="x",
                wait_s=1)
    assert got["state"] == "still_running" and got["waited_s"] >= 1
    assert _call("expire_now", lease_file=lease_file, node="node09", state_file="", reason="x",
                 wait_s=1)["state"] == "absent"


def test_a_renewal_in_flight_does_not_revive_a_server_whose_stop_was_asked(tmp_path):
    """AWX's cancel kills the play's process group; Ansible's workers are groups of their own and finish their task:
    a request's renewal (lease + timeout from now) that lands after the heartbeat ended the lease must not revive
    the server for the whole lease."""
    lease_file = _lease_with_server(tmp_path, seconds=600)
    got = _call("expire_now", lease_file=lease_file, node="node01", state_file="/srv/a/state.json",
                reason="the play's controller process 1 is gone", wait_s=0)
    assert got["state"] == "still_running"
    ended = _lease.node_entry(lease_file, "node01")["until"]
    assert ended <= time.time()
    # api_request's renewal (no state file) and the start's own (the same state file) leave the end where it is
    assert _lease.renew_node(lease_file, "node01", 610, by="api_request") == ended
    assert _lease.renew_node(lease_file, "node01", 610, by="vllm_server ready",
                             info={"state_file": "/srv/a/state.json"}) == ended
    assert _lease.node_entry(lease_file, "node01")["until"] == ended
    assert _call("beat", lease_file=lease_file, node="node01", state_file="/srv/a/state.json", seconds=20)["state"] \
        == "expired"
    # another server of the node (a later attempt's state file) starts a fresh entry
    until = _lease.renew_node(lease_file, "node01", 60, by="vllm_server start", info={"state_file": "/srv/b/state.json"})
    entry = _lease.node_entry(lease_file, "node01")
    assert until > time.time() + 50 and entry["state_file"] == "/srv/b/state.json" and "stop_requested_at" not in entry


def test_expire_now_says_released_when_another_play_stopped_it_meanwhile(tmp_path):
    """The entry went away after the stop was asked, without a record of its supervisor: stop.yml or another play
    stopped the server and released it (an entry is released only once nothing of its server is left)."""
    lease_file = _lease_with_server(tmp_path, seconds=300, state_file=str(tmp_path / "state.json"))
    threading.Timer(0.5, lambda: _lease.release_node(lease_file, "node01")).start()
    got = _call("expire_now", lease_file=lease_file, node="node01", state_file=str(tmp_path / "state.json"),
                reason="x", wait_s=20)
    assert got["state"] == "released" and got["waited_s"] < 20, got
    line = _heartbeat.stop_line(dict(got, node="node01"))
    assert "server stopped before the play ended" in line and "another play or stop.yml" in line


def _beat(tmp_path, lease_file, main_pid, seconds=4.0):
    folder = str(tmp_path / "registry")
    os.makedirs(folder, exist_ok=True)
    return _heartbeat.Heartbeat(_execute, sys.executable, lease_file, "node01", "/srv/a/state.json", seconds, 1.0,
                                main_pid, _heartbeat.process_start(main_pid), folder, "k")


def test_the_heartbeat_keeps_a_short_lease_alive_and_ends_when_the_server_is_released(tmp_path):
    lease_file = _lease_with_server(tmp_path, seconds=4)
    beat = _beat(tmp_path, lease_file, os.getpid())
    threading.Timer(9.0, lambda: _lease.release_node(lease_file, "node01")).start()
    t0 = time.monotonic()
    why = beat.run()
    # the 4 s lease outlived 9 s: beaten every second (a quarter of it)
    assert why == "the server is released" and time.monotonic() - t0 >= 9, why


def test_the_heartbeat_stops_the_server_when_the_play_process_is_gone_or_asks(tmp_path):
    lease_file = _lease_with_server(tmp_path, seconds=300)
    main = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"])
    beat = _beat(tmp_path, lease_file, main.pid)
    t0 = time.monotonic()
    why = beat.run()  # no supervisor here: the stop is asked and not confirmed within the stop wait (1 + 10 s)
    main.wait()
    assert why == "stopped: still_running" and time.monotonic() - t0 < 30
    entry = _lease.node_entry(lease_file, "node01")
    assert entry["stop_reason"] == "the play's controller process %d is gone" % main.pid
    answer = _lease.read_json(str(tmp_path / "registry" / "k.stopped"))
    assert answer["node"] == "node01" and answer["state"] == "still_running"
    # asked by the play's SIGTERM handler, confirmed by the supervisor
    other = _lease_with_server(tmp_path / "b", seconds=300)
    beat = _beat(tmp_path, other, os.getpid())
    beat.asked = _heartbeat.STOP_SIGNALS["SIGTERM"]
    _supervisor(other)
    assert beat.run() == "stopped: stopped"
    assert _lease.node_entry(other, "node01")["stop_reason"] == "the play was terminated (SIGTERM)"


def test_stop_line_says_how_each_server_ended():
    assert "stopped before the play ended" in _heartbeat.stop_line(
        {"node": "n1", "state": "stopped", "processes": [1, 2, 3], "waited_s": 2.5})
    assert "may still be running" in _heartbeat.stop_line({"node": "n1", "state": "no answer"})
    assert _heartbeat.period_of(60) == 15 and _heartbeat.period_of(2) == 1


def test_a_hung_call_is_cut_at_its_time_limit(tmp_path):
    lease_file = _lease_with_server(tmp_path, seconds=300)
    beat = _beat(tmp_path, lease_file, os.getpid())
    beat.execute = lambda cmd: _execute("sleep 30")
    t0 = time.monotonic()
    got = beat.call("beat", timeout=1.0, seconds=4)
    assert got["state"] == "error" and "time limit" in got["error"] and time.monotonic() - t0 < 5
