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
