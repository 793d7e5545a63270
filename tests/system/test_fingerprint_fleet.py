# -*- coding: utf-8 -*-
"""playbooks/fingerprint.yml over real sshd hosts on loopback (one inventory host each)."""
from __future__ import annotations

import json
import os
import time

import yaml

from conftest import check_frozen, replay_wrapper, run_playbook


def _inventory_with(hosts, tmp_path, per_host, extra_hosts=None):
    """Copy the harness inventory, adding host variables (e.g. which nvidia-smi replay each host uses)."""
    with open(hosts.inventory) as f:
        inv = yaml.safe_load(f)
    for name, hv in per_host.items():
        inv["sshhosts"]["hosts"][name].update(hv)
    for name, hv in (extra_hosts or {}).items():
        inv["sshhosts"]["hosts"][name] = hv
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inv))
    return path


def test_five_hosts_each_frozen_fetched_and_verified(tmp_path, ssh_hosts):
    hosts = ssh_hosts(5)
    per_host = {
        "node01": {"repro_vllm_nvidia_smi_path": replay_wrapper(tmp_path, "a", "h200-1gpu")},
        "node02": {"repro_vllm_nvidia_smi_path": replay_wrapper(tmp_path, "b", "h200-1gpu-busy")},
        "node03": {"repro_vllm_nvidia_smi_path": "/nonexistent/nvidia-smi"},
        "node04": {"repro_vllm_nvidia_smi_path": replay_wrapper(tmp_path, "d", "h200-1gpu", sleep=30),
                   "repro_vllm_command_timeout": 2},
        "node05": {"repro_vllm_nvidia_smi_path": replay_wrapper(tmp_path, "e", "h200-1gpu")},
    }
    inv = _inventory_with(hosts, tmp_path, per_host)
    t0 = time.monotonic()
    r = run_playbook(tmp_path, "playbooks/fingerprint.yml", inv,
                     {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": "fleet",
                      "repro_vllm_remote_root": str(tmp_path / "remote")}, ident="fleet")
    # node04's nvidia-smi hangs: recorded as degraded, so the play fails after the run is frozen
    assert r.status == "failed", r.stdout.read()
    assert time.monotonic() - t0 < 240
    run = tmp_path / "records" / "fleet" / "run-001"
    check_frozen(str(run))
    for name in hosts.names:
        check_frozen(str(run / "hosts" / name))
    fleet = {h["host"]: h for h in json.loads((run / "fleet.json").read_text())["hosts"]}
    assert {n: h["status"] for n, h in fleet.items()} == {
        "node01": "ok", "node02": "ok", "node03": "ok", "node04": "degraded", "node05": "ok"}
    assert fleet["node01"]["gpu_names"] == ["NVIDIA H200"]
    assert [p["pid"] for p in fleet["node02"]["foreign_processes"]] == [420]
    assert fleet["node03"]["gpu_present"] is False
    assert fleet["node04"]["timed_out"] and "timed out after 2.0s" in fleet["node04"]["detail"], fleet["node04"]
    manifest = check_frozen(str(run / "hosts" / "node04"))
    assert manifest["metadata"]["status"] == "degraded" and manifest["metadata"]["reasons"]
    assert (manifest["case_id"], manifest["run_id"]) == ("fleet", "run-001")


def test_unreachable_and_lost_hosts_do_not_lose_the_others(tmp_path, ssh_hosts):
    hosts = ssh_hosts(3)
    marker = tmp_path / "node02-started"
    per_host = {
        "node01": {"repro_vllm_nvidia_smi_path": replay_wrapper(tmp_path, "a", "h200-1gpu")},
        # node02 hangs inside nvidia-smi; the test then takes its sshd away mid-run
        "node02": {"repro_vllm_nvidia_smi_path": replay_wrapper(tmp_path, "b", "h200-1gpu", sleep=60, marker=marker),
                   "repro_vllm_command_timeout": 90},
        "node03": {"repro_vllm_nvidia_smi_path": replay_wrapper(tmp_path, "c", "h200-1gpu-busy")},
    }
    closed = {"node09": {"ansible_host": "127.0.0.1", "ansible_port": hosts.base + 99}}  # nothing listens there
    inv = _inventory_with(hosts, tmp_path, per_host, extra_hosts=closed)
    _thread, r = run_playbook(tmp_path, "playbooks/fingerprint.yml", inv,
                              {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": "lossy",
                               "repro_vllm_remote_root": str(tmp_path / "remote")}, ident="lossy", block=False)
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert time.monotonic() < deadline, "node02 never reached nvidia-smi"
        time.sleep(0.2)
    hosts.kill("node02")
    _thread.join(timeout=300)
    assert r.status == "failed" and r.rc != 0  # unreachable hosts make the play report failure ...
    run = tmp_path / "records" / "lossy" / "run-001"
    check_frozen(str(run))  # ... but the run is complete, frozen and verifies
    for name in ("node01", "node03"):
        check_frozen(str(run / "hosts" / name))
    fleet = {h["host"]: h for h in json.loads((run / "fleet.json").read_text())["hosts"]}
    assert fleet["node01"]["status"] == fleet["node03"]["status"] == "ok"
    assert fleet["node02"]["status"] in ("lost", "unreachable")
    assert fleet["node09"]["status"] == "unreachable"
    # Ansible reports a refused connection before the record task's own code runs: fleet.json keeps its message
    assert "Connection refused" in fleet["node09"]["detail"], fleet["node09"]
    assert os.path.isdir(run / "hosts" / "node01")
