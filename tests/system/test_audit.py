# -*- coding: utf-8 -*-
"""playbooks/audit.yml over three real sshd hosts on loopback replaying real H200 captures; two hosts (node02, node03)
first replay the EDITED capture tests/fixtures/edited-2026-11-29-570.195.03-h200 (another driver branch, see its README)."""
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


def _console(runner):
    """Every line the audit's tasks showed (the decide role's lines, the close's console and closing table)."""
    return _lines(runner, "one line per drifted host") + _lines(runner, "Close the run (fleet.json and notes.md")


def test_audit_names_no_majority_drift_then_fails_on_drift_from_the_baseline(tmp_path, ssh_hosts):
    """Issue 32, observation 2: after 2 of 3 nodes dropped to another driver branch the audit named the healthy node
    DRIFT (against the majority). Without a baseline it now names nobody drifted and reports the spread; against a
    baseline the hosts that changed are drift, and the job fails (rc 2) after the freeze unless it only records."""
    hosts = ssh_hosts(3)
    captures = {n: REAL for n in hosts.names}
    captures["node02"] = captures["node03"] = EDITED
    common = {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": "fleet",
              "repro_vllm_remote_root": str(tmp_path / "remote")}

    # first audit: no baseline -> no host drifted, the spread says which hosts hold which driver; nothing fails
    r = run_playbook(tmp_path, "playbooks/audit.yml", _inventory(hosts, tmp_path, captures, "a"), common, ident="a1")
    run = tmp_path / "records" / "fleet" / "run-001"
    manifest = check_frozen(str(run))
    assert manifest["metadata"]["purpose"] == "audit"
    for name in hosts.names:
        check_frozen(str(run / "hosts" / name))
    audit = _json(run / "audit.json")
    assert sorted(audit["hosts"]) == hosts.names
    assert audit["drifted"] == [] and [h for h, e in audit["hosts"].items() if e["drift"]] == []
    assert audit["spread"]["driver"] == [{"value": "580.159.04", "hosts": ["node01"]},
                                         {"value": "570.195.03", "hosts": ["node02", "node03"]}]
    assert audit["majority"]["driver"] == "570.195.03"  # information only: it names nobody
    lines = _console(r)
    assert not [ln for ln in lines if "DRIFT" in str(ln)], lines
    assert "audit | spread | driver: 580.159.04 on node01; 570.195.03 on node02, node03 (" in "\n".join(map(str, lines))
    verdict = [ln for ln in lines if str(ln).startswith("audit | verdict ")]
    assert len(verdict) == 1 and verdict[0].startswith("audit | verdict %s | " % audit["verdict"]), lines
    # the profile judged (the inventory's, cpu-smoke) has no violation and no host drifted: clean, the job succeeds
    assert (audit["verdict"], audit["reference"], audit["violations"]) == ("clean", "profile", 0)
    assert r.status == "successful" and r.rc == 0, r.stdout.read()[-5000:]
    assert "node01" in (run / "audit.md").read_text() and "No baseline run: no host is named drifted" in (
        run / "audit.md").read_text()

    # the two nodes come back to the fleet's branch; the second audit against the first as baseline
    captures["node02"] = captures["node03"] = REAL
    based = dict(common, repro_vllm_audit_baseline="run-001")
    r2 = run_playbook(tmp_path, "playbooks/audit.yml", _inventory(hosts, tmp_path, captures, "b"), based, ident="a2")
    assert r2.status == "failed" and r2.rc == 2  # drift against the baseline fails the job ...
    run2 = tmp_path / "records" / "fleet" / "run-002"
    check_frozen(str(run2))  # ... after the run is frozen
    audit2 = _json(run2 / "audit.json")
    assert audit2["drifted"] == ["node02", "node03"] and audit2["baseline_run"] == "fleet/run-001"
    assert audit2["verdict"] == "drift" and audit2["reference"] == "baseline" and "driver" not in audit2["spread"]
    d2 = {d["fact"]: d for d in audit2["hosts"]["node02"]["drift"]}
    assert d2["driver"] == {"fact": "driver", "found": "580.159.04", "baseline": "570.195.03"}
    assert audit2["hosts"]["node01"]["drift"] == []
    closed = [c for c in task_results(r2, "Close the run") if c[2].get("kind") == "fleet"]  # not the include's
    assert closed and closed[0][1] == "runner_on_failed" and "drift: node02, node03" in closed[0][2]["msg"], closed
    # the closing table the close hands back: the drifted hosts are not ok
    table = {ln.split()[0]: ln.split()[1] for ln in closed[0][2]["closing"][2:]}
    assert table == {"node01": "ok", "node02": "DRIFT", "node03": "DRIFT"}, table
    iso2 = _json(run2 / "isolation.json")
    assert iso2["decision"] == "move"
    reasons = [(x["condition"], x["host"]) for x in iso2["reasons"]]
    assert reasons == [("driver_changed", "node02"), ("driver_changed", "node03")]
    assert "run-001/hosts/node02/fingerprint.json" in iso2["reasons"][0]["evidence"]
    assert iso2["hosts"]["node02"] == {"decision": "move", "previous_run": "fleet/run-001"}
    assert iso2["hosts"]["node01"]["decision"] == "stay"

    # the same audit, told to record only: it succeeds and says what it did not fail on
    r3 = run_playbook(tmp_path, "playbooks/audit.yml", _inventory(hosts, tmp_path, captures, "b"),
                      dict(based, repro_vllm_record_only=True), ident="a3")
    assert r3.status == "successful", r3.stdout.read()[-5000:]
    said = _lines(r3, "Close the run (fleet.json and notes.md")
    assert any(str(ln).startswith("exit | record only (repro_vllm_record_only): the job does not fail on ")
               and "drift: node02, node03" in str(ln) for ln in said), said
