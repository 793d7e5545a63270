# -*- coding: utf-8 -*-
"""The fleet_audit filter on an open audit run (controller side: the filter plugin, so not among the module_utils
tests, which ansible-test runs without ansible's controller packages)."""
from __future__ import annotations

from ansible_collections.repro.vllm.plugins.filter.decisions import fleet_audit
from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _audit
from ansible_collections.repro.vllm.tests.unit.plugins.plugin_utils.decide.test__audit import _fleet


def test_a_host_the_open_run_expects_but_that_left_no_folder_is_audited_as_missing(tmp_path):
    run = _fleet(tmp_path, {"n1": "run-001", "n2": "run-001"}, "run-023")
    # unreachable before its record task wrote a folder; the open run is not frozen, its manifest names no hosts yet
    without = fleet_audit(run["path"])["audit"]
    assert sorted(without["hosts"]) == ["n1", "n2"] and without["unreachable"] == []
    result = fleet_audit(run["path"], hosts=["n1", "n2", "n9"])["audit"]
    assert sorted(result["hosts"]) == ["n1", "n2", "n9"] and result["unreachable"] == ["n9"]
    assert result["hosts"]["n9"]["status"] == "missing" and result["hosts"]["n9"]["facts"] is None
    assert _audit.drift_lines(result) == [
        "audit | n9 | NOT AUDITED | missing: no fingerprint of it in the run, so neither drift nor a match can be said",
        "audit | verdict clean | 0 compatibility violation(s), 0 host(s) drifted, 0 fact(s) spread, 1 host(s) not "
        "audited (no baseline and no profile)"]
