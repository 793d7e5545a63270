# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet audit's comparisons on a fleet assembled from real host parts: the fingerprint of run-001 of cpu-ok
(580.159.04) copied as n1..n3, the one of run-006 (the edited R570 capture) as n4, and an unreachable n5."""
from __future__ import annotations

import os
import shutil

import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _audit
from ansible_collections.repro.vllm.plugins.module_utils.record._evidence import read_run

from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import (
    case, save)


def _fleet(tmp_path, hosts, name="run-020"):
    src = case(tmp_path, "cpu-ok", ["run-001", "run-006"], as_name="src-" + name)
    run = os.path.join(str(tmp_path), "records", "fleet", name)
    os.makedirs(os.path.join(run, "hosts"))
    for host, origin in hosts.items():
        if origin is None:
            save(os.path.join(run, "hosts", host, "unreachable.json"), {"host": host, "status": "unreachable"})
        else:
            shutil.copytree(os.path.join(src, origin, "hosts", "localhost"), os.path.join(run, "hosts", host))
    return read_run(run)


def test_without_a_baseline_the_spread_names_nobody_drifted(tmp_path):
    """Issue 32: after 2 of 3 nodes dropped to another driver the majority named the healthy node drifted. Without a
    baseline the audit reports which hosts hold which value and names nobody."""
    run = _fleet(tmp_path, {"n1": "run-001", "n2": "run-001", "n3": "run-001", "n4": "run-006", "n5": None})
    result = _audit.audit(run)
    assert result["drifted"] == [] and result["unreachable"] == ["n5"] and result["verdict"] == "clean"
    assert result["reference"] == "none" and result["majority"]["driver"] == "580.159.04"  # information only
    assert result["spread"]["driver"] == [{"value": "580.159.04", "hosts": ["n1", "n2", "n3"]},
                                          {"value": "570.172.08", "hosts": ["n4"]}]
    assert set(result["spread"]) == {"driver", "cuda_driver"}
    assert all(e["drift"] == [] for e in result["hosts"].values())
    lines = _audit.drift_lines(result)
    assert lines[0].startswith("audit | spread | cuda_driver: ") and lines[0].endswith(
        " on n4 (no baseline and no profile: which value is right is not said; give repro_vllm_audit_baseline)")
    assert lines[1].startswith("audit | spread | driver: 580.159.04 on n1, n2, n3; 570.172.08 on n4 (no baseline")
    # the unreachable host is said to be not audited, never counted as matching
    assert lines[2].startswith("audit | n5 | NOT AUDITED | unreachable: no fingerprint of it in the run")
    assert not [ln for ln in lines if "DRIFT" in ln]
    assert lines[-1] == ("audit | verdict clean | 0 compatibility violation(s), 0 host(s) drifted, 2 fact(s) spread, 1 "
                         "host(s) not audited (no baseline and no profile)")
    md = _audit.audit_markdown(result)
    assert "| driver | 580.159.04 on n1, n2, n3; 570.172.08 on n4 |" in md and "No baseline run: no host is named" in md
    # two of three dropped: still nobody is named, the healthy node least of all
    two = _audit.audit(_fleet(tmp_path, {"n1": "run-001", "n2": "run-006", "n3": "run-006"}, "run-025"))
    assert two["drifted"] == [] and two["spread"]["driver"][0] == {"value": "580.159.04", "hosts": ["n1"]}


def test_drift_is_measured_against_the_baseline(tmp_path):
    base = _fleet(tmp_path, {"n1": "run-001", "n2": "run-006", "n3": "run-001"}, "run-021")
    now = _fleet(tmp_path, {"n1": "run-001", "n2": "run-001", "n3": "run-001", "n4": "run-001"}, "run-022")
    result = _audit.audit(now, baseline=base)
    assert result["drifted"] == ["n2", "n4"] and result["verdict"] == "drift" and result["reference"] == "baseline"
    n2 = {d["fact"]: d for d in result["hosts"]["n2"]["drift"]}
    assert n2["driver"] == {"fact": "driver", "found": "580.159.04", "baseline": "570.172.08"}
    assert result["hosts"]["n4"]["drift"] == [{"fact": "host", "found": "present", "baseline": "absent"}]
    assert result["baseline_run"] == "fleet/run-021"
    assert _audit.drift_lines(result)[0].startswith("audit | n2 | DRIFT | driver 580.159.04 (baseline 570.172.08)")


def test_no_strict_majority_no_majority_key(tmp_path):
    run = _fleet(tmp_path, {"n1": "run-001", "n2": "run-006"})
    result = _audit.audit(run)
    assert "driver" not in result["majority"] and result["drifted"] == []


def test_violations_per_host_make_the_verdict(tmp_path):
    run = _fleet(tmp_path, {"n1": "run-001", "n2": "run-001", "n3": "run-001"})
    compat = {"profile": "kimi-k3-gb300", "verdict": "fail", "violations": [
        {"host": "n2", "fact": "gpu_model", "required": "NVIDIA GB300", "found": "NVIDIA H200", "fix": "use GB300 nodes"}]}
    result = _audit.audit(run, compatibility=compat)
    # a violation is its own verdict: no host drifted
    assert result["verdict"] == "violation" and result["drifted"] == [] and result["violations"] == 1
    assert result["reference"] == "profile"
    assert result["hosts"]["n2"]["violations"][0]["fact"] == "gpu_model"
    assert _audit.drift_lines(result)[0].startswith("audit | n2 | VIOLATION | violation gpu_model")
    assert "| n2 | gpu_model | NVIDIA GB300 | NVIDIA H200 | use GB300 nodes |" in _audit.audit_markdown(result)


def test_host_isolation_against_each_hosts_previous_run(tmp_path):
    before = _fleet(tmp_path, {"n1": "run-001", "n2": "run-006"}, "run-023")
    now = _fleet(tmp_path, {"n1": "run-001", "n2": "run-001", "n3": "run-001"}, "run-024")
    iso = _audit.host_isolation(now, [before])
    assert iso["decision"] == "move"
    assert [(r["condition"], r["host"]) for r in iso["reasons"]] == [("driver_changed", "n2")]
    assert iso["hosts"]["n3"] == {"decision": "stay", "previous_run": None}
    assert iso["hosts"]["n2"]["previous_run"] == "fleet/run-023"


def test_bad_input():
    with pytest.raises(_audit.AuditError):
        _audit.audit(None)
