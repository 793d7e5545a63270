# -*- coding: utf-8 -*-
"""playbooks/audit.yml over five real sshd hosts on loopback replaying real H200 captures; one host (node04)
replays the EDITED capture tests/fixtures/edited-2026-11-29-570.195.03-h200 (another driver branch, see its README)."""
from __future__ import annotations

import json

import yaml

from conftest import check_frozen, replay_wrapper, run_playbook, task_results

REAL = "2026-11-29-580.159.04-h200"
EDITED = "edited-2026-11-29-570.195.03-h200"


def _inventory(hosts, tmp_path, captures, name):
    with open(hosts.inventory) as f:
        inv = yaml.safe_load(f)
    for host, capture in captures.items():
        inv["sshhosts"]["hosts"][host]["repro_vllm_nvidia_smi_path"] = replay_wrapper(tmp_path, host + name, capture)
    path = tmp_path / ("inventory-%s.yml" % name)
    path.write_text(yaml.safe_dump(inv))
    return path


def _json(path):
    return json.loads(path.read_text())


def _lines(runner, task):
    out = []
    for _h, _e, res in task_results(runner, task):
        msg = res.get("msg")
        out += msg if isinstance(msg, list) else [msg]
    return out


def test_audit_finds_the_drifted_host_then_says_move_when_its_driver_changed(tmp_path, ssh_hosts):
    hosts = ssh_hosts(5)
    captures = {n: REAL for n in hosts.names}
    captures["node04"] = EDITED
    common = {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": "fleet",
              "repro_vllm_remote_root": str(tmp_path / "remote")}

    # first audit: no baseline, not strict -> reports the drift and succeeds
    r = run_playbook(tmp_path, "playbooks/audit.yml", _inventory(hosts, tmp_path, captures, "a"), common, ident="a1")
    assert r.status == "successful", r.stdout.read()[-5000:]
    run = tmp_path / "records" / "fleet" / "run-001"
    manifest = check_frozen(str(run))
    assert manifest["metadata"]["purpose"] == "audit"
    for name in hosts.names:
        check_frozen(str(run / "hosts" / name))
    audit = _json(run / "audit.json")
    assert sorted(audit["hosts"]) == hosts.names
    assert audit["drifted"] == ["node04"]
    assert [h for h, e in audit["hosts"].items() if e["drift"]] == ["node04"]
    drift = {d["fact"]: d for d in audit["hosts"]["node04"]["drift"]}
    assert drift["driver"] == {"fact": "driver", "found": "570.195.03", "majority": "580.159.04"}
    assert drift["cuda_driver"]["found"] == "12.8" and drift["cuda_driver"]["majority"] == "13.0"
    assert not any("baseline" in d for d in drift.values())  # no baseline given: that comparison was not made
    assert "node04" in (run / "audit.md").read_text()
    isolation = _json(run / "isolation.json")
    assert isolation["decision"] == "stay" and isolation["reasons"] == []  # no earlier run of the case
    lines = _lines(r, "one line per drifted host")
    assert len(lines) == 1 and "node04" in lines[0] and "driver 570.195.03" in lines[0], lines

    # the driver of node04 changed (back to the fleet's branch); second audit against the first as baseline, strict
    captures["node04"] = REAL
    strict = dict(common, repro_vllm_audit_baseline="run-001", repro_vllm_audit_strict=True)
    r2 = run_playbook(tmp_path, "playbooks/audit.yml", _inventory(hosts, tmp_path, captures, "b"), strict, ident="a2")
    assert r2.status == "failed"  # strict: drift against the baseline fails the job ...
    run2 = tmp_path / "records" / "fleet" / "run-002"
    check_frozen(str(run2))  # ... after the run is frozen
    audit2 = _json(run2 / "audit.json")
    assert audit2["drifted"] == ["node04"] and audit2["baseline_run"] == "fleet/run-001"
    d2 = {d["fact"]: d for d in audit2["hosts"]["node04"]["drift"]}
    assert d2["driver"] == {"fact": "driver", "found": "580.159.04", "majority": "580.159.04", "baseline": "570.195.03"}
    iso2 = _json(run2 / "isolation.json")
    assert iso2["decision"] == "move"
    assert [(x["condition"], x["host"]) for x in iso2["reasons"]] == [("driver_changed", "node04")]
    assert "run-001/hosts/node04/fingerprint.json" in iso2["reasons"][0]["evidence"]
    assert "run-002/hosts/node04/fingerprint.json" in iso2["reasons"][0]["evidence"]
    assert iso2["hosts"]["node04"] == {"decision": "move", "previous_run": "fleet/run-001"}
    assert iso2["hosts"]["node01"]["decision"] == "stay"
