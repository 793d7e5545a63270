# -*- coding: utf-8 -*-
"""The compatibility stage over real sshd hosts on loopback, each replaying an H200 capture through its nvidia-smi.

node01 replays the real H200 (driver 580.159.04, CUDA 13.0); node02 the EDITED copy on r570 (570.195.03,
CUDA 12.8; tests/fixtures/edited-2026-11-29-570.195.03-h200/README.md). Against a CUDA 13.0 profile, node02 alone is
refused for its driver branch; reproduce.yml freezes the fingerprint run with compatibility.json and stops
before vLLM is started."""
from __future__ import annotations

import json
import os

import yaml

from conftest import check_frozen, replay_wrapper, run_playbook, task_results

PROFILE = """\
name: my-h200-cu130
gpu_models: [H200]
gpu_count_min: 2
gpus_per_host: 1
image_cuda: "13.0"
fabric: optional
"""


def _inventory(hosts, tmp_path):
    with open(hosts.inventory) as f:
        inv = yaml.safe_load(f)
    inv["sshhosts"]["hosts"]["node01"]["repro_vllm_nvidia_smi_path"] = replay_wrapper(
        tmp_path, "580", "2026-11-29-580.159.04-h200")
    inv["sshhosts"]["hosts"]["node02"]["repro_vllm_nvidia_smi_path"] = replay_wrapper(
        tmp_path, "570", "edited-2026-11-29-570.195.03-h200")
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inv))
    return path


def test_another_driver_branch_stops_reproduce_after_the_frozen_run(tmp_path, ssh_hosts):
    hosts = ssh_hosts(2)
    inv = _inventory(hosts, tmp_path)
    profile = tmp_path / "my-h200-cu130.yml"
    profile.write_text(PROFILE)
    base = {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_remote_root": str(tmp_path / "remote"),
            "repro_vllm_case_id": "compat"}

    # a profile that does not exist: refused before any host is touched, naming the key; no run is opened
    r = run_playbook(tmp_path, "playbooks/fingerprint.yml", inv, dict(base, repro_vllm_profile="no-such-profile"),
                     ident="unknown")
    assert r.status == "failed"
    refused = [res for _h, ev, res in task_results(r, "Open the next run of case") if ev == "runner_on_failed"]
    assert refused and "'repro_vllm_profile'" in refused[0]["msg"] and "no-such-profile" in refused[0]["msg"]
    assert refused[0]["msg"].startswith("compatibility profile refused before any host is touched")
    assert not (tmp_path / "records").exists() and not (tmp_path / "remote").exists()
    # no host is contacted: the variable check and the open's gate (the profile) run once on the controller for the
    # targets' play (so --limit without localhost still judges); events may name a node only for that play's
    # controller-side tasks
    on_nodes = [e["event_data"] for e in r.events if e.get("event_data", {}).get("host") in ("node01", "node02")]
    assert {d.get("play") for d in on_nodes} <= {
        "Fingerprint | check every variable and the profile, open the run on the controller"}
    # (validate_argument_spec, an action of the controller alone; the records sink's listing, skipped without a sink;
    # and the open)
    assert {d.get("task_action") for d in on_nodes} <= {
        "ansible.builtin.validate_argument_spec", "ansible.builtin.include_role", "repro.vllm.run_record"}
    # the one task that decides and refuses ran once; it is a controller-side action (no connection is opened)
    assert len([d for d in on_nodes if d.get("task_action") == "repro.vllm.run_record" and "duration" in d]) == 1

    # the reproduction: node02's r570 driver is refused, the run is frozen with compatibility.json, vLLM never starts
    r = run_playbook(tmp_path, "playbooks/reproduce.yml", inv,
                     dict(base, repro_vllm_profile_file=str(profile), repro_vllm_vllm_bin="/nonexistent/vllm"),
                     ident="reproduce")
    out = r.stdout.read()
    assert r.status == "failed" and r.rc != 0
    run = tmp_path / "records" / "compat" / "run-001"
    manifest = check_frozen(str(run))
    assert "compatibility.json" in [f["path"] for f in manifest["files"]]
    doc = json.loads((run / "compatibility.json").read_text())
    assert doc["profile"] == "my-h200-cu130" and doc["verdict"] == "fail"
    # the manifest and fleet.json name the profile file that was judged, not the roles' default profile
    assert (manifest["metadata"]["profile"], manifest["metadata"]["profile_source"]) == ("my-h200-cu130", "file")
    assert json.loads((run / "fleet.json").read_text())["profile"] == "my-h200-cu130"
    assert [(v["host"], v["fact"]) for v in doc["violations"]] == [("node02", "driver_branch")]
    v = doc["violations"][0]
    assert v["found"] == "r570 (570.195.03, userspace)" and v["required"].startswith(">= r580")
    assert "VIOLATION node02 | driver_branch | required: >= r580" in out and "fix: install an r580" in out
    # the method stopped there: no other run, no play of the ladder, nothing started on a host
    # (the case folder also holds the case's redaction key, .redact.key, which is never part of a run)
    assert sorted(n for n in os.listdir(tmp_path / "records" / "compat") if not n.startswith(".")) == ["run-001"]
    tasks = set(e.get("event_data", {}).get("task", "") for e in r.events)
    assert not [t for t in tasks if "Minimal startup" in t or "All-reduce" in t], tasks
    stop = [res for _h, ev, res in task_results(r, "Stop at a failed compatibility boundary") if ev == "runner_on_failed"]
    assert stop and any("VIOLATION node02 | driver_branch" in line for line in stop[0]["msg"])

    # the same boundary when the job only records (docs/method.md, "Exit status"): the method stops there all the
    # same - a new fingerprint run, frozen, vLLM never started, every later play on no host - and the job succeeds
    r = run_playbook(tmp_path, "playbooks/reproduce.yml", inv,
                     dict(base, repro_vllm_profile_file=str(profile), repro_vllm_vllm_bin="/nonexistent/vllm",
                          repro_vllm_record_only=True), ident="record-only")
    out = r.stdout.read()
    assert r.status == "successful" and r.rc == 0, out[-3000:]
    assert sorted(n for n in os.listdir(tmp_path / "records" / "compat") if not n.startswith(".")) == [
        "run-001", "run-002"]
    check_frozen(str(tmp_path / "records" / "compat" / "run-002"))
    assert "exit | record only (repro_vllm_record_only): the job does not fail on 1 compatibility violation(s)" in out
    assert "compatibility | the method stops here; frozen record: " in out
    tasks = set(e.get("event_data", {}).get("task", "") for e in r.events)
    assert not [t for t in tasks if "Minimal startup" in t or "All-reduce" in t or "Score" in t], tasks
