# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host-wide run leases (<lease_dir>/<run_uid>.json) with real short-lived server processes: a run's servers are
leased in one folder every play on the host sees; the sweep before a start stops only what is abandoned and refuses
what a live run holds; a port anything holds is named before the start (no vLLM needed)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _judge
from ansible_collections.repro.vllm.plugins.module_utils.server import _lease, _server
from ansible_collections.repro.vllm.tests.unit.plugins.modules import test_vllm_server_unit as _unit
from ansible_collections.repro.vllm.tests.unit.plugins.modules.test_vllm_server_unit import (
    free_port, run_module, session_pids, start_args)

# the stand-in server program and the session cleanup of the vllm_server unit tests, as fixtures here too
prog = _unit.prog
cleanup = _unit.cleanup


def _started(tmp_path, prog, name, lease_dir, run_uid, node="node1", lease=60, **info):
    port = free_port()
    info.setdefault("port", port)  # the stand-in server takes its port as a plain argument: say it, as a role would
    args = start_args(tmp_path / name, prog, port, delay=0.2, lease=lease, node=node,
                      lease_file=os.path.join(lease_dir, "%s.json" % run_uid),
                      lease_info=dict({"run_uid": run_uid, "case_id": "case-%s" % name, "run_id": "run-002",
                                       "controller": "ctl-%s" % name, "started": time.time()}, **info))
    res = run_module("vllm_server", args)
    assert res["ready"] is True, res
    return res, port


def test_a_run_lease_holds_one_entry_per_node_and_is_released_with_its_last_server(tmp_path, prog, cleanup):
    leases = str(tmp_path / "leases")
    res, port = _started(tmp_path, prog, "a", leases, "aaaaaaaaaaaaaaaa")
    cleanup.append(res["sid"])
    data = json.load(open(os.path.join(leases, "aaaaaaaaaaaaaaaa.json")))
    entry = data["servers"]["node1"]
    assert data["run_uid"] == "aaaaaaaaaaaaaaaa" and data["case_id"] == "case-a" and data["controller"] == "ctl-a"
    assert entry["pid"] == res["pid"] and entry["port"] == port and entry["until"] > time.time() + 30 and entry["by"] == "vllm_server ready"
    # a second node of the same run on this machine: its own entry in the same file
    _lease.renew_node(os.path.join(leases, "aaaaaaaaaaaaaaaa.json"), "node2", 30, by="test", info={"port": 1})
    assert set(json.load(open(os.path.join(leases, "aaaaaaaaaaaaaaaa.json")))["servers"]) == {"node1", "node2"}
    stop = run_module("vllm_server", {"state": "stopped", "log_path": res["log_path"], "node": "node1",
                                      "lease_file": os.path.join(leases, "aaaaaaaaaaaaaaaa.json")})
    assert stop["outcome"] == "stopped" and stop["remaining_pids"] == []
    assert set(json.load(open(os.path.join(leases, "aaaaaaaaaaaaaaaa.json")))["servers"]) == {"node2"}
    _lease.release_node(os.path.join(leases, "aaaaaaaaaaaaaaaa.json"), "node2")
    assert not os.path.exists(os.path.join(leases, "aaaaaaaaaaaaaaaa.json"))


def test_the_sweep_stops_only_the_abandoned_and_refuses_what_a_live_run_holds(tmp_path, prog, cleanup):
    leases = str(tmp_path / "leases")
    live, live_port = _started(tmp_path, prog, "live", leases, "1111111111111111")
    gone = _started(tmp_path, prog, "gone", leases, "2222222222222222")[0]
    cleanup.extend([live["sid"], gone["sid"]])
    # the second run's play is gone: its lease is moved into the past (as if nobody renewed it), its server still runs
    path = os.path.join(leases, "2222222222222222.json")
    data = json.load(open(path))
    data["servers"]["node1"]["until"] = time.time() - 5
    _lease.write_json_atomic(path, data)
    mine = ["vllm", "serve", "/models/x", "--port", str(live_port)]
    res = run_module("vllm_server", {"state": "swept", "lease_dir": leases, "run_uid": "3333333333333333",
                                     "argv": mine, "stop_grace": 2})
    assert [c["run_uid"] for c in res["cleaned"]] == ["2222222222222222"]
    assert res["cleaned"][0]["outcome"] in ("stopped", "not_running") and session_pids(gone["sid"]) == []
    assert not os.path.exists(path)
    assert [c["run_uid"] for c in res["conflicts"]] == ["1111111111111111"] and res["outcome"] == "conflict"
    line = res["conflicts"][0]["line"]
    assert "case-live/run-002" in line and "ctl-live" in line and "port %d" % live_port in line
    assert "repro_vllm_stop_run_uid=1111111111111111" in line and res["_rc"] != 0
    # the attempt's refusal is the message that names what the live run holds
    assert res["refusal"] == res["msg"] == "vllm_server: refused: " + line
    # the attempt's progress lines: what was cleaned, then the refusal
    assert res["lines"] == ["cleaned: " + res["cleaned"][0]["line"], res["refusal"]]
    assert len(session_pids(live["sid"])) >= 1, "a live server of another run is never touched"
    # another port: the live run is listed, not a conflict, and still not touched
    other = run_module("vllm_server", {"state": "swept", "lease_dir": leases, "run_uid": "3333333333333333",
                                       "argv": ["vllm", "serve", "/m", "--port", str(free_port())]})
    assert other["conflicts"] == [] and [x["run_uid"] for x in other["live"]] == ["1111111111111111"]
    assert other["refusal"] is None and other["lines"] == []
    assert other["_rc"] == 0 and len(session_pids(live["sid"])) >= 1
    # stop.yml's way: that run by its uid, live or not
    stop = run_module("vllm_server", {"state": "swept", "lease_dir": leases, "only_run_uid": "1111111111111111",
                                      "stop_grace": 2})
    assert [c["outcome"] for c in stop["cleaned"]] == ["stopped"] and session_pids(live["sid"]) == []
    assert os.listdir(leases) == [".lock"]


def test_the_sweep_leaves_a_stop_in_progress_to_its_supervisor(tmp_path, prog, cleanup):
    """A play's heartbeat ended its server's lease a moment ago (expire_now: the play was interrupted) and the
    server's supervisor is stopping it: another play's sweep at that moment waits for that stop instead of taking it
    over, so the supervisor's record says why the server ended and the interrupted play hears "stopped", not that
    no server of it was running (seen on a loaded CI machine)."""
    leases = str(tmp_path / "leases")
    res = _started(tmp_path, prog, "stopping", leases, "4444444444444444", ignore_term=True)[0]
    cleanup.append(res["sid"])
    path = os.path.join(leases, "4444444444444444.json")
    now = round(time.time(), 3)
    assert _lease.update_node(path, "node1", until=now, stop_requested_at=now, stop_reason="the play was terminated")
    swept = run_module("vllm_server", {"state": "swept", "lease_dir": leases, "run_uid": "5555555555555555",
                                       "argv": ["vllm", "serve", "/m", "--port", str(free_port())], "stop_grace": 2})
    assert [c["run_uid"] for c in swept["cleaned"]] == ["4444444444444444"], swept
    cleaned = swept["cleaned"][0]
    # its supervisor stopped it (SIGKILL after its 2 s grace: the stand-in ignores SIGTERM), the sweep stopped nothing
    assert cleaned["outcome"] == "not_running" and cleaned["lease_expired"] is not None, cleaned
    assert "its supervisor had stopped it at" in cleaned["line"] and "(the play was terminated)" in cleaned["line"]
    record = _lease.read_json(res["state_file"] + ".lease-expired")
    assert record["reason"] == "the play was terminated" and record["stop"]["remaining"] == []
    assert session_pids(res["sid"]) == [] and not os.path.exists(path)


def test_a_port_anything_holds_is_named_before_the_start(tmp_path):
    port = free_port()
    holder = subprocess.Popen([sys.executable, "-c", "import socket,time;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,"
                               "socket.SO_REUSEADDR,1);s.bind(('127.0.0.1',%d));s.listen();time.sleep(60)" % port])
    try:
        deadline = time.monotonic() + 10
        while _server.port_in_use("127.0.0.1", port) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        res = run_module("vllm_server", {"argv": [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--port",
                                                  str(port), "--host", "127.0.0.1"],
                                         "log_path": str(tmp_path / "run" / "server.log"), "ready_timeout": 5})
        assert res["outcome"] == "port_in_use" and res["stage"] == "environment"
        assert res["error_class"] == "port_in_use" and res["pid"] is None and res["_rc"] != 0
        assert [h["pid"] for h in res["port_in_use"]["holders"]] == [holder.pid]
        assert "port %d on 127.0.0.1 is already in use" % port in res["msg"] and "repro_vllm_port" in res["msg"]
    finally:
        holder.kill()
        holder.wait()
    assert _server.listen_port(["vllm", "serve", "m", "--headless"]) is None
    assert _server.listen_port(["vllm", "serve", "m"]) == ("0.0.0.0", 8000)
    assert _server.listen_port(["/usr/bin/python3", "prog.py", "8011"]) is None


@pytest.mark.parametrize("outcome", ["port_in_use"])
def test_the_verdict_of_a_refused_and_of_a_port_in_use_attempt(outcome):
    step = {"name": "minimal", "nodes": ["n1"], "run": "run-002"}
    refused = _judge.attempt_verdict(step, {}, {"n1": {"refusal": "run x/run-001 holds port 8011"}})
    assert refused["refused"] is True and refused["status"] == "refused" and refused["stage"] is None
    assert refused["ok"] is False and "REFUSED" in refused["summary"] and "port 8011" in refused["summary"]
    busy = _judge.attempt_verdict(step, {"stage": "none"}, {"n1": {"started": {"outcome": outcome, "msg": "port 8011"}}})
    assert (busy["stage"], busy["error_class"], busy["status"]) == ("environment", "port_in_use", "failed")
    assert busy["first_error"]["line"] == "port 8011"
    assert socket  # noqa


def test_gpus_are_a_conflict_only_on_a_host_with_gpu_device_nodes(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "nvidiactl").write_text("")
    assert _server.host_gpu_devices(str(dev)) == []           # a driver's control node alone is no GPU
    (dev / "nvidia0").write_text("")
    (dev / "nvidia1").write_text("")
    assert _server.host_gpu_devices(str(dev)) == ["nvidia0", "nvidia1"]
    assert _server._gpus_overlap(None, ["0"], host_has_gpus=True)            # pylint: disable=protected-access
    assert not _server._gpus_overlap(["1"], ["0"], host_has_gpus=True)       # pylint: disable=protected-access
    assert not _server._gpus_overlap(None, None, host_has_gpus=False)        # pylint: disable=protected-access
