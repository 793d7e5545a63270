# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fast tests of vllm_server and api_request with real short-lived processes (no vLLM needed).

The modules run as separate processes (``python -m ...modules.vllm_server ARGS_JSON``), exactly one module
process per task as under Ansible, so that the detached supervisor and the server really outlive the module.
The "servers" are small ``python3 -c`` programs: they listen, exit 0 after being ready, ignore SIGTERM, spawn
children that survive their leader, print their environment: each is a real process on a real port.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.server import _http, _server
from ansible_collections.repro.vllm.plugins.modules import vllm_server as vllm_server_module

COLL_PARENT = os.path.abspath(os.path.join(os.path.dirname(vllm_server_module.__file__), "..", "..", "..", "..", ".."))
PY = sys.executable


# ----------------------------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------------------------

def run_module(name, args, check=False, extra_env=None):
    payload = {"ANSIBLE_MODULE_ARGS": dict(args)}
    if check:
        payload["ANSIBLE_MODULE_ARGS"]["_ansible_check_mode"] = True
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([COLL_PARENT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra_env or {})
    proc = subprocess.run([PY, "-m", "ansible_collections.repro.vllm.plugins.modules.%s" % name, json.dumps(payload)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120, check=False)
    out = proc.stdout.decode()
    try:
        res = json.loads(out[out.index("{"):])
    except ValueError:
        raise AssertionError("module %s printed no JSON (rc %s): %s %s" % (name, proc.returncode, out,
                                                                           proc.stderr.decode()))
    res["_rc"] = proc.returncode
    return res


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def session_pids(sid):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rfind(")") + 2:].split()
        if fields[0] not in ("Z", "X") and int(fields[3]) == sid:
            out.append(int(name))
    return out


def kill_session(sid):
    for pid in session_pids(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# A tiny HTTP "server" program: optional delay, then /health and /v1/models answer 200; optional exit after
# ready; optional children that ignore SIGTERM; prints its environment as JSON first.
SERVER_PROG = textwrap.dedent("""
    import http.server, json, os, signal, subprocess, sys, threading, time
    port, delay, exit_after, children, ignore_term = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), \\
        int(sys.argv[4]), sys.argv[5] == "1"
    print("ENV " + json.dumps(dict(os.environ), sort_keys=True), flush=True)
    if ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kids = [subprocess.Popen([sys.executable, "-c",
            "import signal, time\\n" + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n" if ignore_term else "")
            + "time.sleep(600)"]) for _ in range(children)]
    print("CHILDREN " + " ".join(str(k.pid) for k in kids), flush=True)
    time.sleep(delay)
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            code = 200 if self.path in ("/health", "/v1/models") else 404
            self.send_response(code); self.end_headers(); self.wfile.write(b"{}")
        def log_message(self, fmt, *args):
            sys.stdout.write("GET %s\\n" % self.path); sys.stdout.flush()
    srv = http.server.HTTPServer(("127.0.0.1", port), H)
    if exit_after >= 0:
        threading.Timer(exit_after, lambda: os._exit(0)).start()
    srv.serve_forever()
""")


@pytest.fixture
def prog(tmp_path):
    path = tmp_path / "fake_server.py"
    path.write_text(SERVER_PROG)
    return str(path)


def start_args(tmp_path, prog, port, delay=0.2, exit_after=-1, children=0, ignore_term=False, **kw):
    args = {"argv": [PY, prog, str(port), str(delay), str(exit_after), str(children), "1" if ignore_term else "0"],
            "log_path": str(tmp_path / "run" / "server.log"), "base_url": "http://127.0.0.1:%d" % port,
            "ready_timeout": 20, "stop_grace": 2, "memory_interval": 0.5}
    args.update(kw)
    return args


@pytest.fixture
def cleanup():
    sids = []
    yield sids
    for sid in sids:
        kill_session(sid)


# ----------------------------------------------------------------------------------------------------------------
# vllm_server
# ----------------------------------------------------------------------------------------------------------------

def test_ready_checked_stopped_cycle(tmp_path, prog, cleanup):
    port = free_port()
    res = run_module("vllm_server", start_args(tmp_path, prog, port, delay=0.5, children=2))
    cleanup.append(res["sid"])
    assert res["_rc"] == 0 and res["outcome"] == "ready" and res["ready"] is True and res["changed"] is True
    assert res["pid"] == res["pgid"] == res["sid"] and res["pid"] != os.getpid()
    assert 0.4 < res["time_to_ready_s"] < 15
    # the attempt's progress line (kept out of server.json)
    assert res["line"] == "server ready in %s s" % res["time_to_ready_s"]
    # the server outlived the module process, in its own session, with its two children
    assert len(session_pids(res["sid"])) == 3
    assert os.getsid(res["pid"]) == res["pid"] != os.getsid(0)
    state = json.loads((tmp_path / "run" / "vllm_server.state.json").read_text())
    assert state["pid"] == res["pid"] and state["ready"] is True and state["log_path"] == res["log_path"]

    time.sleep(1.6)  # a few memory samples at 0.5 s
    chk = run_module("vllm_server", {"state": "checked", "log_path": res["log_path"]})
    assert chk["_rc"] == 0 and chk["outcome"] == "running" and chk["health_status"] == 200
    assert chk["failed_after_ready"] is False and sorted(chk["remaining_pids"]) == sorted(session_pids(res["sid"]))
    samples = [json.loads(line) for line in open(res["memory_path"])]
    assert len(samples) >= 3 and samples[-1]["pids"] == 3 and samples[-1]["rss_bytes"] > 3 * 1024 * 1024
    assert chk["memory"]["samples"] >= 3 and chk["memory"]["peak_rss_bytes"] >= samples[-1]["rss_bytes"]
    # the log's size at the liveness check: the cutoff the play gives the classifier
    with open(res["log_path"], "rb") as f:
        data = f.read()
    assert chk["log_bytes"] == len(data) > 0 and chk["log_lines"] == len(data.splitlines())
    quiet = run_module("vllm_server", {"state": "checked", "log_path": res["log_path"], "classify": False})
    assert quiet["classification"] is None and quiet["stage"] is None and "classify=false" in quiet["classification_error"]
    assert quiet["log_lines"] >= chk["log_lines"] and quiet["ready"] is True

    stop = run_module("vllm_server", {"state": "stopped", "log_path": res["log_path"]})
    assert stop["_rc"] == 0 and stop["changed"] is True and stop["outcome"] == "stopped"
    # the API server (session leader) first, then the group for the children that outlived it; no SIGKILL
    assert stop["stop"]["signalled"] == ["SIGTERM (API server)", "SIGTERM"] and len(stop["stop"]["initial"]) == 3
    assert stop["stop"]["leader_exited_on_term"] is True
    assert stop["remaining_pids"] == [] and session_pids(res["sid"]) == []
    assert stop["exit_code"] == -15 and stop["exit_signal"] == "SIGTERM"
    # the supervisor stops sampling by itself once the session is empty
    time.sleep(1.2)
    n = len(open(res["memory_path"]).readlines())
    time.sleep(1.2)
    assert len(open(res["memory_path"]).readlines()) == n
    assert not _server.pid_alive(res["supervisor_pid"])

    again = run_module("vllm_server", {"state": "stopped", "log_path": res["log_path"]})
    assert again["_rc"] == 0 and again["changed"] is False and again["outcome"] == "not_running"


def test_exit_code_0_after_ready_is_a_failure(tmp_path, prog, cleanup):
    port = free_port()
    res = run_module("vllm_server", start_args(tmp_path, prog, port, delay=0.1, exit_after=1.5))
    cleanup.append(res["sid"])
    assert res["outcome"] == "ready"
    time.sleep(2.5)
    chk = run_module("vllm_server", {"state": "checked", "log_path": res["log_path"]})
    assert chk["_rc"] != 0 and chk["failed"] is True
    assert chk["outcome"] == "exited" and chk["exit_code"] == 0 and chk["failed_after_ready"] is True
    assert "exit code 0" in chk["msg"] and "is a failure" in chk["msg"]
    soft = run_module("vllm_server", {"state": "checked", "log_path": res["log_path"], "fail_on_error": False})
    assert soft["_rc"] == 0 and soft["failed_after_ready"] is True


def test_exit_before_ready_reports_code_and_log(tmp_path, cleanup):
    log = tmp_path / "run" / "server.log"
    res = run_module("vllm_server", {"argv": [PY, "-c", "import sys; print('boom: bad flag'); sys.exit(3)"],
                                     "log_path": str(log), "base_url": "http://127.0.0.1:%d" % free_port(),
                                     "ready_timeout": 20})
    cleanup.append(res["sid"])
    assert res["_rc"] != 0 and res["failed"] is True
    assert res["outcome"] == "exited" and res["exit_code"] == 3 and res["ready"] is False
    assert res["line"] == "server exited (exit 3) (the stage is judged when the run closes)"
    assert str(log) in res["msg"] and "exited with code 3" in res["msg"]
    assert "boom: bad flag" in log.read_text()
    assert res["remaining_pids"] == []


def test_timeout_stops_the_whole_group_even_when_it_ignores_sigterm(tmp_path, prog, cleanup):
    port = free_port()
    args = start_args(tmp_path, prog, port, delay=60, children=2, ignore_term=True, ready_timeout=2, stop_grace=0.5,
                      fail_on_error=False)
    res = run_module("vllm_server", args)
    cleanup.append(res["sid"])
    assert res["_rc"] == 0 and res["outcome"] == "timeout" and res["ready"] is False
    assert res["stop"]["signalled"] == ["SIGTERM (API server)", "SIGTERM", "SIGKILL"]
    assert res["stop"]["leader_exited_on_term"] is False
    assert len(res["stop"]["initial"]) == 3
    assert res["remaining_pids"] == [] and session_pids(res["sid"]) == []
    assert res["exit_code"] == -9 and res["exit_signal"] == "SIGKILL"


def test_orphans_of_a_killed_leader_are_found_and_stopped(tmp_path, prog, cleanup):
    port = free_port()
    res = run_module("vllm_server", start_args(tmp_path, prog, port, children=2))
    cleanup.append(res["sid"])
    assert res["outcome"] == "ready"
    os.kill(res["pid"], signal.SIGKILL)  # like kill -9 of vLLM's API server: the children stay behind
    time.sleep(0.5)
    orphans = session_pids(res["sid"])
    assert len(orphans) == 2 and res["pid"] not in orphans
    chk = run_module("vllm_server", {"state": "checked", "log_path": res["log_path"], "fail_on_error": False})
    assert chk["outcome"] == "exited" and chk["exit_code"] == -9 and sorted(chk["remaining_pids"]) == sorted(orphans)
    stop = run_module("vllm_server", {"state": "stopped", "log_path": res["log_path"]})
    assert stop["changed"] is True and sorted(p["pid"] for p in stop["stop"]["initial"]) == sorted(orphans)
    assert stop["remaining_pids"] == [] and session_pids(res["sid"]) == []


def test_explicit_environment_and_redaction(tmp_path, prog, cleanup):
    port = free_port()
    fake_token = "hf_FAKEFAKEFAKEFAKEFAKEFAKEFAKE"
    args = start_args(tmp_path, prog, port, env={"VLLM_CPU_KVCACHE_SPACE": 1, "PLAIN": "visible"},
                      secret_env={"HF_TOKEN": fake_token}, inherit_env=["PATH", "HOME", "NOT_SET_ANYWHERE"])
    args["argv"] = args["argv"] + ["--api-key", "sk-FAKEFAKEFAKEFAKEFAKEFAKE"]
    res = run_module("vllm_server", args, extra_env={"LEAKY_CONTROLLER_VAR": "must-not-pass"})
    cleanup.append(res["sid"])
    assert res["outcome"] == "ready"
    assert res["inherited_env_names"] == ["PATH", "HOME"]
    assert res["env"]["HF_TOKEN"] == "<redacted>" and res["env"]["PLAIN"] == "visible"
    assert res["env"]["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert res["argv"][-2:] == ["--api-key", "<redacted>"]
    dumped = json.dumps(res)
    assert fake_token not in dumped and "sk-FAKEFAKE" not in dumped
    state_text = (tmp_path / "run" / "vllm_server.state.json").read_text()
    assert fake_token not in state_text and "sk-FAKEFAKE" not in state_text
    # what the process really got: exactly the allow-list plus env and secret_env
    env_line = [line for line in open(res["log_path"]) if line.startswith("ENV ")][0]
    got = json.loads(env_line[4:])
    assert got.pop("HF_TOKEN") == fake_token
    assert "LEAKY_CONTROLLER_VAR" not in got and "PYTHONPATH" not in got
    assert set(got) <= {"PATH", "HOME", "VLLM_CPU_KVCACHE_SPACE", "PLAIN", "LC_CTYPE"}
    run_module("vllm_server", {"state": "stopped", "log_path": res["log_path"]})


def test_secret_env_file_reaches_the_server_and_no_result_is_masked(tmp_path, prog, cleanup):
    # issue 32 item 4: a secret "1" given as a no_log parameter makes Ansible mask every "1" of the result (the
    # recorded server.json); given as the run's file it reaches the server, the file is gone, the result is intact
    port = free_port()
    secrets = {"ONE_CHAR": "1", "CORP_CREDS": "corp-FAKE-creds-value", "DIGITS": str(port)}
    masked_args = start_args(tmp_path / "param", prog, port, secret_env=dict(secrets))
    masked = run_module("vllm_server", masked_args)
    # the masked result's own values (log_path, sid) may be starred: stop it by what the test gave
    stopped = run_module("vllm_server", {"state": "stopped", "log_path": masked_args["log_path"]})
    assert not stopped.get("remaining_pids"), stopped
    assert "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in json.dumps(masked) or "********" in json.dumps(masked)

    secret_file = tmp_path / "run" / ".state" / "secret-env.json"
    secret_file.parent.mkdir(parents=True)
    secret_file.write_text(json.dumps(secrets))
    secret_file.chmod(0o600)
    args = start_args(tmp_path, prog, port, secret_env_file=str(secret_file))
    res = run_module("vllm_server", args)
    cleanup.append(res["sid"])
    assert res["outcome"] == "ready" and not secret_file.exists()
    dumped = json.dumps(res)
    assert "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" not in dumped and "*****" not in dumped
    assert "corp-FAKE-creds-value" not in dumped
    assert res["env"]["ONE_CHAR"] == res["env"]["CORP_CREDS"] == res["env"]["DIGITS"] == "<redacted>"
    assert str(port) in res["base_url"] and isinstance(res["pid"], int)
    # the supervisor copies the server's output into the log on its own: ready can come before the line is there
    deadline = time.time() + 10
    while time.time() < deadline:
        env_lines = [line for line in open(res["log_path"]) if line.startswith("ENV ")]
        if env_lines:
            break
        time.sleep(0.1)
    got = json.loads(env_lines[0][4:])
    assert {k: got[k] for k in secrets} == secrets
    run_module("vllm_server", {"state": "stopped", "log_path": res["log_path"]})
    missing = run_module("vllm_server", dict(args, log_path=str(tmp_path / "again" / "server.log")))
    assert missing["failed"] and "cannot read secret_env_file" in missing["msg"]


def test_check_mode_plans_and_starts_nothing(tmp_path, prog):
    port = free_port()
    res = run_module("vllm_server", start_args(tmp_path, prog, port), check=True)
    assert res["_rc"] == 0 and res["outcome"] == "planned" and res["changed"] is True
    assert res["pid"] is None and res["argv"][1] == prog
    assert res["line"] == "server planned (the stage is judged when the run closes)"
    assert not (tmp_path / "run").exists()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()


def test_already_running_is_unchanged_and_a_different_argv_is_refused(tmp_path, prog, cleanup):
    port = free_port()
    args = start_args(tmp_path, prog, port)
    res = run_module("vllm_server", args)
    cleanup.append(res["sid"])
    again = run_module("vllm_server", args)
    assert again["_rc"] == 0 and again["changed"] is False and again["outcome"] == "running"
    assert again["pid"] == res["pid"]
    other = dict(args, argv=args["argv"] + ["extra"])
    refused = run_module("vllm_server", other)
    assert refused["failed"] is True and "a different server" in refused["msg"]
    run_module("vllm_server", {"state": "stopped", "log_path": res["log_path"]})


def test_missing_executable_is_a_clear_error(tmp_path):
    res = run_module("vllm_server", {"argv": ["no-such-vllm-binary", "serve"], "log_path": str(tmp_path / "s.log")})
    assert res["failed"] is True and "no-such-vllm-binary not found in the server's PATH" in res["msg"]


def test_stale_state_file_is_not_running(tmp_path):
    # the state of a server that has ended: a real process in its own session, started and reaped here
    proc = subprocess.Popen([PY, "-c", "pass"], start_new_session=True)
    st = _server.proc_stat(proc.pid)
    proc.wait()
    state = tmp_path / "vllm_server.state.json"
    state.write_text(json.dumps({"pid": proc.pid, "pgid": proc.pid, "sid": proc.pid,
                                 "start_ticks": st["start_ticks"] if st else 0, "log_path": str(tmp_path / "s.log")}))
    res = run_module("vllm_server", {"state": "stopped", "state_file": str(state)})
    assert res["_rc"] == 0 and res["changed"] is False and res["outcome"] == "not_running"
    chk = run_module("vllm_server", {"state": "checked", "state_file": str(state)})
    assert chk["_rc"] == 0 and chk["outcome"] == "exited" and chk["alive"] is False
    assert chk["failed_after_ready"] is False  # it never was ready


def test_derive_base_url_and_build_env():
    assert _server.derive_base_url(["vllm", "serve", "m"]) == "http://127.0.0.1:8000"
    assert _server.derive_base_url(["vllm", "serve", "m", "--host", "0.0.0.0", "--port=9001"]) == "http://127.0.0.1:9001"
    assert _server.derive_base_url(["vllm", "serve", "m", "--host", "::1", "--port", "8011"]) == "http://[::1]:8011"
    env, names = _server.build_env({"A": 1}, ["PATH", "ABSENT"], source={"PATH": "/bin", "OTHER": "x"})
    assert env == {"PATH": "/bin", "A": "1"} and names == ["PATH"]


# ----------------------------------------------------------------------------------------------------------------
# api_request against a real local HTTP server (threads, real sockets)
# ----------------------------------------------------------------------------------------------------------------

class _Handler(BaseHTTPRequestHandler):
    log_file = None

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/slow":
            time.sleep(2)
        if self.path == "/bad":
            payload, code = {"error": {"message": "too long", "code": 400}}, 400
        elif self.path == "/text":
            payload, code = None, 200
        else:
            payload, code = {"echo": json.loads(body.decode()), "auth": self.headers.get("Authorization")}, 200
        data = b"plain text answer" if payload is None else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        if self.log_file:
            with open(self.log_file, "a") as f:
                f.write('"POST %s HTTP/1.1" %d\n' % (self.path, code))

    def log_message(self, *args):
        pass


@pytest.fixture
def http_server(tmp_path):
    _Handler.log_file = str(tmp_path / "srv.log")
    with open(_Handler.log_file, "w") as f:
        f.write("earlier line\n")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield "http://127.0.0.1:%d" % srv.server_address[1], _Handler.log_file
    srv.shutdown()
    srv.server_close()


def test_api_request_ok_dest_and_log_slice(tmp_path, http_server):
    url, log = http_server
    body = tmp_path / "req.json"
    body.write_text(json.dumps({"model": "tiny", "prompt": "hi", "max_tokens": 8}))
    res = run_module("api_request", {"base_url": url, "route": "/v1/completions", "body_file": str(body),
                                     "server_log": log, "dest": str(tmp_path / "out"), "api_key": "sk-FAKEFAKEFAKEFAKEFAKE1"})
    assert res["_rc"] == 0 and res["ok"] is True and res["statuses"] == [200]
    echo = res["responses"][0]["body"]
    assert echo["echo"]["max_tokens"] == 8  # counts named *_tokens are not secrets
    assert echo["auth"] == "Bearer <redacted>"
    assert res["log_slice"]["text"] == '"POST /v1/completions HTTP/1.1" 200\n'
    assert res["log_slice"]["start_offset"] == len("earlier line\n")
    assert sorted(os.listdir(tmp_path / "out")) == ["request.json", "response-001.json"]
    assert "sk-FAKE" not in json.dumps(res)


def test_api_request_non_2xx_is_data_unless_fail_on_status(http_server):
    url, _log = http_server
    res = run_module("api_request", {"base_url": url, "route": "/bad", "body": {"x": 1}})
    assert res["_rc"] == 0 and res["ok"] is False and res["statuses"] == [400]
    assert res["responses"][0]["body"]["error"]["message"] == "too long"
    strict = run_module("api_request", {"base_url": url, "route": "/bad", "body": {"x": 1}, "fail_on_status": True})
    assert strict["failed"] is True and "1 of 1 copies" in strict["msg"]


def test_api_request_concurrency_timeout_and_text(http_server):
    url, _log = http_server
    res = run_module("api_request", {"base_url": url, "route": "/slow", "body": {"x": 1}, "concurrency": 3,
                                     "timeout": 0.5})
    assert res["statuses"] == [None, None, None]
    assert all(e == "timed out after 0.5s" for e in res["errors"])
    assert all(0.4 < lat < 2 for lat in res["latencies"])
    starts = [r["started_at"] for r in res["responses"]]
    assert max(starts) - min(starts) < 0.3
    ok = run_module("api_request", {"base_url": url, "route": "/slow", "body": {"x": 1}, "concurrency": 3,
                                    "timeout": 10})
    assert ok["statuses"] == [200, 200, 200]
    assert ok["wall_s"] < 5  # in parallel, not 3 x 2 s
    text = run_module("api_request", {"base_url": url, "route": "/text", "body": "raw"})
    assert text["responses"][0]["body"] is None and text["responses"][0]["text"] == "plain text answer"


def test_api_request_connection_refused_and_check_mode(tmp_path):
    url = "http://127.0.0.1:%d" % free_port()
    res = run_module("api_request", {"base_url": url, "body": {"x": 1}, "timeout": 2})
    assert res["_rc"] == 0 and res["statuses"] == [None] and "connection error" in res["errors"][0]
    plan = run_module("api_request", {"base_url": url, "body": {"x": 1}, "dest": str(tmp_path / "d")}, check=True)
    assert plan["_rc"] == 0 and plan["statuses"] == [] and "would send 1 x POST" in plan["msg"]
    assert not (tmp_path / "d").exists()


def test_read_slice_keeps_the_end_and_survives_rotation(tmp_path):
    log = tmp_path / "l.log"
    log.write_bytes(b"0123456789")
    sl = _http.read_slice(str(log), 2, 10, 4)
    assert sl["text"] == "6789" and sl["truncated"] is True
    shrunk = _http.read_slice(str(log), 50, 10, 100)
    assert shrunk["text"] == "0123456789" and "shrank" in shrunk["error"]


def test_lease_stops_the_whole_group_without_the_play(tmp_path, prog, cleanup):
    """The play that started the server is gone (nobody renews the lease): the supervisor stops every process."""
    port = free_port()
    res = run_module("vllm_server", start_args(tmp_path, prog, port, delay=0.2, children=2, lease=3, stop_grace=2))
    cleanup.append(res["sid"])
    assert res["ready"] is True and res["lease_until"] > time.time()
    assert len(session_pids(res["sid"])) == 3
    # a renewal by a check keeps it
    time.sleep(2)
    chk = run_module("vllm_server", {"state": "checked", "log_path": res["log_path"], "lease": 3, "classify": False})
    assert chk["ready"] is True and chk["lease_expired"] is None and chk["lease_until"] > res["lease_until"]
    time.sleep(2)
    assert len(session_pids(res["sid"])) == 3, "the renewed lease must not have run out yet"
    # then nobody comes back
    deadline = time.monotonic() + 20
    while session_pids(res["sid"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert session_pids(res["sid"]) == []
    stop = run_module("vllm_server", {"state": "stopped", "log_path": res["log_path"]})
    assert stop["outcome"] == "not_running"
    expired = stop["lease_expired"]
    assert expired["renewed_by"] == "vllm_server check" and len(expired["processes"]) == 3
    assert expired["stop"]["signalled"][0] == "SIGTERM (API server)" and expired["stop"]["remaining"] == []
    assert expired["expired_at"] >= expired["lease_until"]


def test_api_request_renews_the_lease(tmp_path, prog, cleanup):
    port = free_port()
    res = run_module("vllm_server", start_args(tmp_path, prog, port, delay=0.2, lease=30))
    cleanup.append(res["sid"])
    lease_file = str(tmp_path / "run" / "vllm_server.state.json") + ".lease"
    before = json.loads(open(lease_file).read())["until"]
    r = run_module("api_request", {"base_url": "http://127.0.0.1:%d" % port, "route": "/health", "method": "GET",
                                   "timeout": 5, "lease_file": lease_file, "lease": 100})
    after = json.loads(open(lease_file).read())
    assert r["lease_until"] == after["until"] > before + 60 and after["by"] == "api_request"
    run_module("vllm_server", {"state": "stopped", "log_path": res["log_path"]})
