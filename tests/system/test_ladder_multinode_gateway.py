# -*- coding: utf-8 -*-
"""The last two ladder layers on real parts: multi_node and gateway, over two sshd hosts on loopback, each node a
real `vllm serve` of the CPU build, and a real nginx (the OS package, started by this test under its tmp dir, bound
to 127.0.0.1) in front of the head.

Three plays of one case share the hosts and the gateway, so every server start counts:
A. minimal (node01) -> multi_node (the command on node01 + node02, the layer's transport GLOO_SOCKET_IFNAME and
   VLLM_HOST_IP and its layout --tensor-parallel-size 2: the CPU build binds one local worker per NUMA node, so
   this machine cannot hold tensor parallel 2 on one node) -> gateway (--api-key, the fixed request through
   nginx with the key, nginx's logs recorded beside the server's): all ok.
B. from A's multi_node run: gateway with two probes in the same run - the request without the key (vLLM's 401
   passed through nginx: the server's) and through a second nginx whose proxy_read_timeout is 1 ms (nginx's own
   504: the gateway's) - fails at the request stage and rolls back to the two nodes; the earlier state comes back.
C. from A's minimal run: multi_node with the worker started with another command (its host variable gives it
   --tensor-parallel-size 3 where the head has 2): the worker fails first in config, the head's errors are
   consequences; rolled back to one node, which comes back."""
from __future__ import annotations

import json
import os

import pytest
import yaml

from conftest import check_frozen, free_port, missing, run_playbook, task_results, vllm_cache
from nginx_gateway import NginxGateway, nginx_binary
from test_reproduce_multinode import _first_sample_t, _session_leftovers

CASE = "ladder-two-nodes"
# an obviously fake key: it must never reach a record
KEY = "fake-test-key-0000-not-a-secret"
OTHER_LAYERS = ["prefix_caching", "long_context", "output_limit", "concurrency_2", "concurrency_n", "tool_calling"]


def _json(path):
    with open(str(path)) as f:
        return json.load(f)


def _inventory(hosts, path, group_vars, node_vars=None):
    with open(hosts.inventory) as f:
        inv = yaml.safe_load(f)
    inv["all"] = {"vars": group_vars}
    for name, hv in (node_vars or {}).items():
        inv["sshhosts"]["hosts"][name].update(hv)
    path.write_text(yaml.safe_dump(inv))
    return path


def _settings(tmp_path, vllm, port, gateway):
    cache = vllm_cache()
    return {
        "repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": CASE,
        "repro_vllm_remote_root": str(tmp_path / "remote"), "repro_vllm_fingerprint": False,
        "repro_vllm_vllm_bin": vllm, "repro_vllm_model": os.path.join(cache, "models", "tiny"),
        "repro_vllm_served_model_name": "tiny", "repro_vllm_host": "127.0.0.1", "repro_vllm_port": port,
        "repro_vllm_master_addr": "127.0.0.1",
        "repro_vllm_platform_args": ["--max-model-len", "512", "--enforce-eager"],
        "repro_vllm_server_env": {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind",
                                  "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"},
        "repro_vllm_request_body": {"model": "tiny", "prompt": "Hello, my name is", "max_tokens": 8, "temperature": 0},
        "repro_vllm_ready_timeout": 300, "repro_vllm_wait_round_s": 6, "repro_vllm_request_timeout": 120,
        "repro_vllm_ladder_until": "gateway", "repro_vllm_ladder_skip": OTHER_LAYERS,
        "repro_vllm_multi_node_env": {"GLOO_SOCKET_IFNAME": "lo", "VLLM_HOST_IP": "127.0.0.1"},
        "repro_vllm_multi_node_args": ["--tensor-parallel-size", "2"],
        "repro_vllm_gateway_url": gateway.url, "repro_vllm_gateway_api_key": KEY,
        "repro_vllm_gateway_logs": [gateway.access_log, gateway.error_log],
    }


def _runs(case_dir):
    """{step or purpose: [run folder, ...]} of the case's runs that have an outcome (the summary runs have none)."""
    out = {}
    for name in sorted(os.listdir(str(case_dir))):
        path = case_dir / name
        if name.startswith("run-") and (path / "outcome.json").is_file():
            out.setdefault(_json(path / "outcome.json")["step"], []).append(path)
    return out


def _all_text(root):
    for base, _dirs, files in os.walk(str(root)):
        for name in files:
            with open(os.path.join(base, name), "rb") as f:
                yield os.path.join(base, name), f.read().decode("utf-8", "replace")


@pytest.fixture
def gateways(tmp_path):
    if not nginx_binary():
        missing("nginx", "no nginx on PATH or in /usr/sbin")
    made = []

    def start(name, upstream, read_timeout="60s"):
        made.append(NginxGateway(tmp_path / name, upstream, read_timeout))
        return made[-1]

    yield start
    for g in made:
        g.stop()


def test_multi_node_and_gateway_layers_healthy_and_with_a_fault_each(tmp_path, ssh_hosts, real_vllm, gateways):
    hosts = ssh_hosts(2)
    port = free_port()
    gw = gateways("nginx", "127.0.0.1:%d" % port)
    base = _settings(tmp_path, real_vllm, port, gw)
    case = tmp_path / "records" / CASE
    env = {"ANSIBLE_PIPELINING": "1"}

    # --- A: minimal -> multi_node -> gateway, all healthy ------------------------------------------------------
    r = run_playbook(tmp_path, "playbooks/reproduce.yml", _inventory(hosts, tmp_path / "inv-a.yml", base), {},
                     ident="a", envvars=env)
    out = r.stdout.read()
    assert r.status == "successful", out[-6000:]
    runs = _runs(case)
    minimal, mn, gwr = runs["minimal"][0], runs["multi_node"][0], runs["gateway"][0]
    for run in (minimal, mn, gwr):
        check_frozen(str(run))
    assert _json(minimal / "outcome.json")["nodes"] == ["node01"]
    # multi_node: the known-good command on head + worker, the transport environment the one change
    o = _json(mn / "outcome.json")
    assert o["ok"] is True and o["nodes"] == ["node01", "node02"] and o["statuses"] == [200], o["summary"]
    ch = _json(mn / "changes.json")
    assert ch["diff"]["one_variable"] is True, ch["diff"]["summary"]
    assert "GLOO_SOCKET_IFNAME=lo" in ch["changed_variable"] and "VLLM_HOST_IP=127.0.0.1" in ch["changed_variable"]
    assert "--tensor-parallel-size 2" in ch["changed_variable"]
    head, worker = _json(mn / "hosts/node01/command.json"), _json(mn / "hosts/node02/command.json")
    assert head["env_set_by_run"]["GLOO_SOCKET_IFNAME"] == "lo" and worker["env_set_by_run"]["GLOO_SOCKET_IFNAME"] == "lo"
    assert worker["argv"][-7:] == ["--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1", "--headless"]
    assert "world_size=2 rank=1" in (mn / "hosts/node02/logs/server.log").read_text()
    assert _first_sample_t(mn, "node01") < _first_sample_t(mn, "node02")  # the head started first
    assert [t["node"] for t in _json(mn / "stages.json")["timeline"]] == ["node01", "node02"]
    # gateway: --api-key on the server, the request through nginx with the key, nginx's logs beside the server's
    o = _json(gwr / "outcome.json")
    assert o["ok"] is True and o["statuses"] == [200] and o["component"] == "gateway", o["summary"]
    assert [(a["status"], a["component"]) for a in o["answered_by"]] == [(200, "server")]
    assert _json(gwr / "request.json")["base_url"] == gw.url
    argv = _json(gwr / "hosts/node01/command.json")["argv"]
    assert "--api-key" in argv and argv[argv.index("--api-key") + 1] != KEY
    assert "--api-key" in " ".join(_json(gwr / "changes.json")["changed_variable"])
    access = (gwr / "hosts/node01/logs/gateway/1-access.log").read_text()
    assert '"POST /v1/completions HTTP/1.1" 200 upstream=200' in access
    assert (gwr / "hosts/node01/logs/gateway/2-error.log").is_file()
    assert not (mn / "hosts/node01/logs/gateway").exists()

    # --- B: from the multi_node run, the gateway with a keyless probe and a probe through a 1 ms read timeout ---
    short = gateways("nginx-short", "127.0.0.1:%d" % port, read_timeout="1ms")
    b = dict(base, repro_vllm_ladder_resume=str(mn),
             repro_vllm_gateway_probes=[{"label": "no_key", "send_key": False},
                                        {"label": "short_timeout", "base_url": short.url}],
             repro_vllm_gateway_logs=[gw.access_log, short.access_log, short.error_log])
    r = run_playbook(tmp_path, "playbooks/reproduce.yml", _inventory(hosts, tmp_path / "inv-b.yml", b), {},
                     ident="b", envvars=env)
    out = r.stdout.read()
    assert r.status == "failed", out[-6000:]  # the finding fails the play after every run is frozen
    runs = _runs(case)
    failed, back = runs["gateway"][1], runs["rollback"][0]
    o = _json(failed / "outcome.json")
    assert o["ok"] is False and (o["stage"], o["component"]) == ("request", "server"), o["summary"]
    assert o["statuses"] == [200, 401, 504]
    assert [(a["label"], a["status"], a["component"]) for a in o["answered_by"]] == [
        ("request", 200, "server"), ("no_key", 401, "server"), ("short_timeout", 504, "gateway")]
    assert _json(failed / "responses/no_key-01.json")["responses"][0]["body"] == {"error": "Unauthorized"}
    page = _json(failed / "responses/short_timeout-01.json")["responses"][0]
    assert page["headers"]["server"].startswith("nginx/") and "504 Gateway Time-out" in page["text"]
    assert "upstream timed out" in (failed / "hosts/node01/logs/gateway/3-error.log").read_text()
    assert '" 401 upstream=401' in (failed / "hosts/node01/logs/gateway/1-access.log").read_text()
    o = _json(back / "outcome.json")
    assert o["purpose"] == "rollback" and o["nodes"] == ["node01", "node02"]
    assert o["earlier_state_returned"] is True and o["ok"] is True, o["summary"]
    assert "--api-key" not in _json(back / "hosts/node01/command.json")["argv"]

    # --- C: from the minimal run, multi_node with the worker started with another command ----------------------
    # (its host variable differs from the head's: before issue 15's fix the ladder's include split per host and the
    # head ran the attempt alone - "'HostVarsVars' has no attribute '_repro_vllm_host_identity'" in record_diff)
    c = dict(base, repro_vllm_ladder_resume=str(minimal))
    r = run_playbook(tmp_path, "playbooks/reproduce.yml",
                     _inventory(hosts, tmp_path / "inv-c.yml", c,
                                {"node02": {"repro_vllm_multi_node_args": ["--tensor-parallel-size", "3"]}}),
                     {}, ident="c", envvars=env)
    out = r.stdout.read()
    assert r.status == "failed", out[-6000:]
    assert "HostVarsVars" not in out
    runs = _runs(case)
    failed, back = runs["multi_node"][1], runs["rollback"][1]
    assert "--tensor-parallel-size 3" in " ".join(_json(failed / "hosts/node02/command.json")["argv"])
    assert "--tensor-parallel-size 2" in " ".join(_json(failed / "hosts/node01/command.json")["argv"])
    o = _json(failed / "outcome.json")
    assert o["nodes"] == ["node01", "node02"], o["summary"]
    assert o["ok"] is False and (o["stage"], o["error_class"]) == ("config", "config_error"), o["summary"]
    assert o["first_error"]["node"] == "node02"  # the worker failed first; the head's errors are consequences
    stages = _json(failed / "stages.json")
    assert "must evenly divide the total world size (3)" in stages["first_error"]["line"]
    assert [t["node"] for t in stages["timeline"]] == ["node01", "node02"]  # the head started first
    for node in ("node01", "node02"):
        assert (failed / "hosts" / node / "logs" / "server.log").stat().st_size > 0
    # the play stopped the waiting head when the worker ended, long before its ready timeout
    assert _json(failed / "hosts/node01/server.json")["start"]["time_to_ready_s"] is None
    lines = [res.get("msg") for _h, _e, res in task_results(r, "progress")]
    assert any(isinstance(m, str) and m.startswith("reproduce | node01") and "node02 ended first" in m
               for m in lines), lines
    o = _json(back / "outcome.json")
    assert o["purpose"] == "rollback" and o["nodes"] == ["node01"]
    assert o["earlier_state_returned"] is True, o["summary"]

    # the key reached no record, no file left on the nodes, and no server is left
    leaked = [p for p, text in _all_text(tmp_path / "records") if KEY in text]
    assert leaked == []
    assert not [p for p, _t in _all_text(tmp_path / "remote") if "/hosts/" in p]
    assert _session_leftovers(port) == []
