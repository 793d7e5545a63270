# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Deaths of the REAL vllm serve while it serves: the engine core killed mid-request, the API server killed with its
engine core and worker left behind (split from test_vllm_server_real.py so the gate's two xdist workers share the
starts)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from conftest import (assert_classified, assert_no_leftovers, find_in_session, free_port, kill_session, load_request,
                      server_args, session_pids, wait_until)


def _background_request(ansible, base_url, body_path, out_path):
    """api_request in a background ansible-playbook, so the test can kill the engine while it runs."""
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"repro.vllm.api_request": {"base_url": base_url, "body_file": body_path, "timeout": 60},
         "register": "r", "ignore_errors": True},
        {"ansible.builtin.copy": {"content": "{{ r | to_json }}", "dest": out_path}}]}]
    play_path = os.path.join(ansible.workdir, "bg-play.yml")
    with open(play_path, "w") as f:
        json.dump(play, f)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=ansible.collections,
               ANSIBLE_CONFIG=os.path.join(ansible.workdir, "ansible.cfg"))
    exe = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return subprocess.Popen([exe, "-i", os.path.join(ansible.workdir, "inventory.ini"), play_path],
                            cwd=ansible.workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_engine_core_killed_while_serving(ansible, vllm_env, tmp_path):
    args = server_args(vllm_env, tmp_path, free_port(), extra=["--enable-log-requests"])
    start = ansible.run("vllm_server", args)
    sid = start.get("sid")
    try:
        assert start["ready"] is True, start.get("msg")
        engine = find_in_session(sid, "VLLM::EngineCore")
        assert len(engine) == 1, engine
        # a long generation (500 tokens, EOS ignored) so that the kill lands while the request is in flight
        body = tmp_path / "long_generation.json"
        body.write_bytes(load_request("long_generation.json"))
        out = tmp_path / "bg.json"
        bg = _background_request(ansible, start["base_url"], str(body), str(out))
        log_path = start["log_path"]
        assert wait_until(lambda: "Received request" in open(log_path).read(), 60, step=0.02), \
            "the request never reached the server"
        os.kill(engine[0], signal.SIGKILL)
        bg_out = bg.communicate(timeout=120)[0].decode("utf-8", "replace")
        req = json.loads(out.read_text()) if out.exists() else None
        assert req is not None, bg_out[-3000:]
        assert req["statuses"] == [500], req["responses"]
        # vLLM's API server then shuts itself down with exit code 0 ...
        assert wait_until(lambda: not os.path.exists("/proc/%d" % start["pid"])
                          or open("/proc/%d/stat" % start["pid"]).read().split(") ")[1][0] == "Z", 30)
        chk = ansible.run("vllm_server", {"state": "checked", "log_path": log_path})
        # ... which the module reports as a FAILURE after readiness, never as success
        assert chk["failed"] is True
        assert chk["outcome"] == "exited" and chk["exit_code"] == 0
        assert chk["failed_after_ready"] is True
        assert "exit code 0" in chk["msg"]
        assert "EngineDeadError" in open(log_path).read()
        stop = ansible.run("vllm_server", {"state": "stopped", "log_path": log_path})
        assert stop["remaining_pids"] == [] and session_pids(sid) == []
        assert_classified(chk, "request", "engine_dead")
    finally:
        if sid:
            kill_session(sid)


def test_api_server_killed_leaves_orphans_that_stop_removes(ansible, vllm_env, tmp_path):
    args = server_args(vllm_env, tmp_path, free_port())
    start = ansible.run("vllm_server", args)
    sid = start.get("sid")
    try:
        assert start["ready"] is True, start.get("msg")
        os.kill(start["pid"], signal.SIGKILL)
        # the real failure: EngineCore and Worker outlive their API server (they stay in its session)
        time.sleep(2)
        orphans = [p for p in session_pids(sid) if p != start["pid"]]
        assert find_in_session(sid, "VLLM::EngineCore"), orphans
        chk = ansible.run("vllm_server", {"state": "checked", "log_path": start["log_path"], "exit_wait": 0})
        assert chk["failed"] is True and chk["outcome"] == "exited"
        assert chk["exit_code"] == -9 and chk["exit_signal"] == "SIGKILL"
        assert set(orphans) <= set(chk["remaining_pids"])
        stop = ansible.run("vllm_server", {"state": "stopped", "log_path": start["log_path"], "stop_grace": 5})
        assert stop["changed"] is True and stop["outcome"] == "stopped"
        assert {p["pid"] for p in stop["stop"]["initial"]} >= set(orphans)
        assert_no_leftovers(stop)
        again = ansible.run("vllm_server", {"state": "stopped", "log_path": start["log_path"]})
        assert again["changed"] is False and again["outcome"] == "not_running"
    finally:
        if sid:
            kill_session(sid)
