# -*- coding: utf-8 -*-
"""Multi-node orchestration of playbooks/reproduce.yml over real sshd hosts on loopback, each node a real
`vllm serve` of the CPU build with vLLM's own multi-process launcher (--nnodes/--node-rank/--master-addr, --headless
on the workers). The "nodes" share this machine, so the CPU build's tensor parallelism over gloo really spans them:
the head starts first, the pair serves the fixed request, every node's log and memory series is collected into the
run. A worker that fails first (another command on the worker) stopping the head and being found as the root cause
when the logs are classified together is shown by the multi_node ladder layer's worker fault
(test_ladder_multinode_gateway.py, play C: the same failure plus its rollback, on the same two sshd hosts)."""
from __future__ import annotations

import json
import os

import yaml

from conftest import check_frozen, free_port, run_playbook, vllm_cache

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CASE = "two-nodes"


def _inventory(hosts, tmp_path, group_vars, node_vars):
    """The harness inventory with the run's settings as variables of group all (the controller's implicit localhost
    reads them too, and host variables can still differ per node; extra vars would override them)."""
    with open(hosts.inventory) as f:
        inv = yaml.safe_load(f)
    inv["all"] = {"vars": group_vars}
    for name, hv in node_vars.items():
        inv["sshhosts"]["hosts"][name].update(hv)
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inv))
    return path


def _settings(tmp_path, vllm, port):
    cache = vllm_cache()
    return {
        "repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": CASE,
        "repro_vllm_remote_root": str(tmp_path / "remote"), "repro_vllm_fingerprint": False,
        "repro_vllm_vllm_bin": vllm, "repro_vllm_model": os.path.join(cache, "models", "tiny"),
        "repro_vllm_served_model_name": "tiny", "repro_vllm_host": "127.0.0.1", "repro_vllm_port": port,
        "repro_vllm_tensor_parallel_size": 2, "repro_vllm_nnodes": 2, "repro_vllm_master_addr": "127.0.0.1",
        # a free port, not vLLM's default: another test module may run a multi-node start at the same time (xdist)
        "repro_vllm_master_port": free_port(),
        "repro_vllm_platform_args": ["--max-model-len", "512", "--enforce-eager"],
        "repro_vllm_server_env": {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind",
                                  "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"},
        "repro_vllm_request_body": {"model": "tiny", "prompt": "Hello, my name is", "max_tokens": 8, "temperature": 0},
        "repro_vllm_ready_timeout": 300, "repro_vllm_wait_round_s": 6, "repro_vllm_request_timeout": 120,
    }


def _first_sample_t(run, node):
    with open(str(run / "hosts" / node / "memory.jsonl")) as f:
        return json.loads(f.readline())["t"]


def _json(path):
    with open(str(path)) as f:
        return json.load(f)


def _session_leftovers(port):
    left = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/cmdline" % name, "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if "vllm" in cmd and " serve " in cmd and "--port %d " % port in cmd + " ":
                left.append(cmd)
    return left


def test_two_nodes_serve_together_and_are_classified_together(tmp_path, ssh_hosts, real_vllm):
    """Tensor parallel 2 over two loopback "nodes": the CPU build runs it over gloo, so the whole path is real."""
    hosts = ssh_hosts(2)
    port = free_port()
    inv = _inventory(hosts, tmp_path, _settings(tmp_path, real_vllm, port), {})
    r = run_playbook(tmp_path, "playbooks/reproduce.yml", inv, {}, ident="mn-ok", envvars={"ANSIBLE_PIPELINING": "1"})
    out = r.stdout.read()
    assert r.status == "successful", out[-5000:]
    run = tmp_path / "records" / CASE / "run-001"
    check_frozen(str(run))
    for node in ("node01", "node02"):
        check_frozen(str(run / "hosts" / node))
    head = _json(run / "hosts" / "node01" / "command.json")
    worker = _json(run / "hosts" / "node02" / "command.json")
    assert head["role"] == "head" and worker["role"] == "worker"
    mp = head["argv"][head["argv"].index("--master-port") + 1]  # a free port, passed to both nodes
    assert head["argv"][-8:] == ["--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1", "--master-port", mp]
    assert worker["argv"][-9:] == ["--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1", "--master-port", mp,
                                   "--headless"]
    # ordered start: the head's server session existed before the worker's
    assert _first_sample_t(run, "node01") < _first_sample_t(run, "node02")
    outcome = _json(run / "outcome.json")
    assert outcome["ok"] is True and outcome["statuses"] == [200]
    assert set(outcome["start_outcomes"].values()) == {"ready"}
    stages = _json(run / "stages.json")
    assert [t["node"] for t in stages["timeline"]] == ["node01", "node02"]
    worker_log = (run / "hosts" / "node02" / "logs" / "server.log").read_text()
    assert "world_size=2 rank=1" in worker_log and "Starting to load model" in worker_log
    assert _session_leftovers(port) == []
