# -*- coding: utf-8 -*-
"""The case_verdict filter and the workflow result say the hand-off's sentence (controller side: a filter plugin, so
not among the module_utils tests, which ansible-test runs without ansible's controller packages)."""
from __future__ import annotations

from ansible_collections.repro.vllm.plugins.filter.case_verdict import case_verdict as case_verdict_filter
from ansible_collections.repro.vllm.plugins.plugin_utils.close._workflow import build_result
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decide.test__verdict import _copy, _pack


def test_workflow_result_and_filter_say_the_same_sentence(tmp_path):
    root = _copy(tmp_path, "cpu-layer")
    case = root / "cpu-layer"
    res, md, summary = _pack(root, "cpu-layer")
    stats = build_result("reproduce", "cpu-layer", [str(case / "run-006"), str(case / "run-007")])
    got = stats["repro_vllm_result"]
    assert got["case_verdict"] == "fails_at_layer" and got["verdict_detail"] == summary["verdict_detail"]
    assert got["verdict_sentence"] == summary["verdict_sentence"] == md.splitlines()[0][len("# [Configuration refused by vLLM]: "):]
    # the filter takes the case folder or a run in it; exclude leaves a run out (one still being written)
    answer = case_verdict_filter(str(case / "run-004"))
    assert answer["verdict_sentence"] == summary["verdict_sentence"]
    # the console's closing line (reproduce.yml, the compatibility boundary)
    assert answer["line"] == "verdict | fails_at_layer | " + summary["verdict_sentence"]
    assert case_verdict_filter(str(case), exclude=["run-004", "run-005", "run-006"])["verdict"] == "healthy"


def test_the_closing_summary_carries_the_case_verdict_of_its_record(tmp_path):
    from ansible_collections.repro.vllm.plugins.filter.judge import reproduction_summary
    case = _copy(tmp_path, "cpu-layer") / "cpu-layer"
    runs = [{"case_id": "cpu-layer", "run": "run-004", "path": str(case / "run-004"), "step": "minimal", "ok": True,
             "summary": "run-004 minimal: ok"}]
    # reproduce.yml's one call: the finding, and the case's verdict as the case_verdict filter gives it
    assert reproduction_summary(runs, case_verdict=True)["case"] == case_verdict_filter(str(case))
    # not asked (check mode), no record, or a record that is not there: none
    assert reproduction_summary(runs)["case"] is None
    assert reproduction_summary([dict(runs[0], path=None)], case_verdict=True)["case"] is None
    assert reproduction_summary([dict(runs[0], path=str(tmp_path / "gone" / "run-001"))], case_verdict=True)["case"] is None
