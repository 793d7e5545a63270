# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The production-server freeze for real: the CPU vLLM runs as the "production" server under a small restarting
supervisor (tests/vllm/supervisor.py), is killed once, comes back, and then the repro.vllm.service role writes
hosts/<host>/service.json and the server's logs into an open run through ansible-playbook; the isolation filter
then says ``move`` for ``restarts`` from that record."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request

import pytest

# the collection as setup-dev links it (.cache/collections), or the runner's own path; pytest runs from the checkout
sys.path.insert(0, os.environ.get("REPRO_VLLM_COLLECTIONS_PATH") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), ".cache", "collections"))

from ansible_collections.repro.vllm.plugins.filter.decisions import isolation_decision  # noqa: E402 pylint: disable=wrong-import-position
from ansible_collections.repro.vllm.plugins.module_utils.record import _record  # noqa: E402 pylint: disable=wrong-import-position

from conftest import SERVER_ENV, _ansible_bin, free_port, kill_session, serve_argv, session_pids, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_HF = "hf_FAKEFAKEFAKEFAKEFAKEFAKEFAKE"
FAKE_KEY = "sk-FAKEFAKEFAKEFAKEFAKEFAKE"


def _healthy(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def _state(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


@pytest.fixture(scope="module")
def production(vllm_env, tmp_path_factory):
    """The supervised production server after one kill and one restart: (work dir, port, state file, logs)."""
    work = tmp_path_factory.mktemp("production")
    logs = work / "logs"
    logs.mkdir()
    state_file = str(work / "supervisor.json")
    port = free_port()
    env = dict(os.environ, **SERVER_ENV)
    env.update({"HF_TOKEN": FAKE_HF, "REPRO_PRODUCTION_MARK": "prod-%d" % port})
    argv = serve_argv(vllm_env, port, extra=["--api-key", FAKE_KEY])
    sup = subprocess.Popen([sys.executable, os.path.join(HERE, "supervisor.py"), state_file, str(logs), "--"] + argv,
                           env=env, start_new_session=True)
    try:
        assert wait_until(lambda: _healthy(port), 300, 1), "the production vLLM never became healthy: %s" % (
            (logs / "current.log").read_text()[-3000:] if (logs / "current.log").exists() else "no log")
        first = _state(state_file)["pid"]
        os.killpg(first, signal.SIGKILL)  # the "incident": the server dies and its supervisor restarts it
        assert wait_until(lambda: _state(state_file).get("restart_count") == 1 and _state(state_file).get("pid"),
                          60, 0.5), _state(state_file)
        assert wait_until(lambda: _healthy(port), 300, 1), "the restarted vLLM never became healthy"
        yield {"work": work, "port": port, "state_file": state_file, "logs": logs, "first": first,
               "pid": _state(state_file)["pid"]}
    finally:
        sup.terminate()
        try:
            sup.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        for sid in (sup.pid, _state(state_file).get("pid")):
            if sid:
                kill_session(sid)
        assert session_pids(sup.pid) == []


def _play(work, collections_path, run_path, service, ident):
    play = [{"hosts": "localhost", "gather_facts": False,
             "roles": [{"role": "repro.vllm.service", "vars": {"repro_vllm_service": service,
                                                               "repro_vllm_run_path": run_path}}]}]
    path = os.path.join(str(work), "play-%s.yml" % ident)
    with open(path, "w") as f:
        json.dump(play, f)
    inv = os.path.join(str(work), "inventory.ini")
    with open(inv, "w") as f:
        f.write("localhost ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=os.path.join(str(work), ".ansible-local"))
    proc = subprocess.run([_ansible_bin("ansible-playbook"), "-i", inv, path], cwd=str(work), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300, check=False)
    text = proc.stdout.decode("utf-8", "replace")
    assert proc.returncode == 0, text[-6000:]
    return text


def test_supervised_production_server_is_frozen_and_restarts_decide_move(production, collections_path):
    work = production["work"]
    state = _state(production["state_file"])
    assert state["restart_count"] == 1 and state["exit_codes"] == [128 + signal.SIGKILL]
    run = _record.create_run(str(work / "records"), "prod-incident")
    service = {"kind": "pid", "pid": production["pid"], "state_file": production["state_file"],
               "log_current": str(production["logs"] / "current.log"),
               "log_previous": str(production["logs"] / "previous.log")}
    out = _play(work, collections_path, run["path"], service, "pid")
    assert "service | localhost | pid ok | pid %d | restarts 1 | last exit codes [137]" % production["pid"] in out

    host = os.path.join(run["path"], "hosts", "localhost")
    with open(os.path.join(host, "service.json")) as f:
        rec = json.load(f)
    assert rec["status"] == "ok" and rec["pid"] == production["pid"] != production["first"]
    assert "serve" in rec["cmdline"] and "--port" in rec["cmdline"] and str(production["port"]) in rec["cmdline"]
    assert rec["env"]["REPRO_PRODUCTION_MARK"] == "prod-%d" % production["port"]
    assert rec["env"]["VLLM_CPU_KVCACHE_SPACE"] == "1" and "HF_TOKEN" in rec["env"]
    assert rec["restart_count"] == 1 and rec["exit_codes"] == [137]
    assert rec["libcuda"] == [] or rec["libcuda"] is None  # the CPU build maps no libcuda
    # both logs are in the run, redacted; the previous instance's log is the one that was killed
    with open(os.path.join(host, "logs", "service-previous.log")) as f:
        previous = f.read()
    with open(os.path.join(host, "logs", "service-current.log")) as f:
        current = f.read()
    started = "Starting vLLM server on http://127.0.0.1:%d" % production["port"]
    assert started in previous and started in current
    assert rec["logs"]["previous"]["bytes"] > 0 and rec["logs"]["current"]["path"] == "logs/service-current.log"
    for base, _dirs, names in os.walk(run["path"]):
        for name in names:
            with open(os.path.join(base, name), "rb") as f:
                data = f.read()
            assert FAKE_HF.encode() not in data and FAKE_KEY.encode() not in data, name

    # a command match finds the same process (never the supervisor, whose argv carries the same command)
    run2 = _record.create_run(str(work / "records"), "prod-match")
    _play(work, collections_path, run2["path"], {"kind": "match", "pattern": r"^\S*python\S* \S*/bin/vllm serve .*"
                                                 r"--port %d( |$)" % production["port"]}, "match")
    with open(os.path.join(run2["path"], "hosts", "localhost", "service.json")) as f:
        assert json.load(f)["pid"] == production["pid"]

    _record.freeze(run["path"], "0.1.0", metadata={"purpose": "fingerprint"})
    decision = isolation_decision(os.path.dirname(run["path"]))
    restarts = [r for r in decision["reasons"] if r["condition"] == "restarts"]
    assert decision["decision"] == "move" and restarts, decision
    assert restarts[0]["host"] == "localhost" and "restarted 1 time(s), last exit codes [137]" in restarts[0]["evidence"]
    assert "service.json" in restarts[0]["evidence"]
