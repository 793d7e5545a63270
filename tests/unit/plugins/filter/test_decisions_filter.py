# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter fronts of the decisions, on copies of real frozen runs."""
from __future__ import annotations

import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter.decisions import (
    FilterModule, baseline_score, decision_plan, decision_report, fleet_audit, isolation_decision, run_diff)
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import (
    case)


def test_registered():
    assert set(FilterModule().filters()) == {"baseline_score", "run_diff", "isolation_decision", "fleet_audit",
                                             "_decision_plan"}


def test_score_and_isolation_of_a_case_folder(tmp_path):
    path = case(tmp_path, "cpu-ok", ["run-001", "run-002", "run-003", "run-004"])
    # the shipped cpu-smoke profile asks for no GPU: host_driver (0 here) and gpu_visibility (2) leave the maximum
    score = baseline_score(path, profile="cpu-smoke")
    assert (score["score"], score["max"], score["band"]) == (8, 10, "collect")
    assert [i["item"] for i in score["items"] if i["points"] is None] == ["host_driver", "gpu_visibility"]
    # a GPU profile: every item applies, the same runs score 10/14
    gpu = baseline_score(path, profile="kimi-k3-h200")
    assert (gpu["score"], gpu["max"], gpu["band"]) == (10, 14, "collect")
    two = baseline_score([os.path.join(path, "run-001"), os.path.join(path, "run-002")], profile="kimi-k3-h200")
    assert (two["score"], two["max"]) == (8, 14)  # a GPU profile: every item applies; no second clean run here
    # no profile given: the judge's own default (cpu-smoke), as the decide role scored with it as its default
    assert baseline_score(path) == score
    assert isolation_decision(path)["decision"] == "stay"
    assert isolation_decision(path, must_keep_serving=True)["decision"] == "move"
    report = decision_report(score, "score")
    assert report["lines"][0] == ("summary | case cpu-ok | baseline score 8/10 (collect) | not applicable under the "
                                  "profile: host_driver, gpu_visibility | 2 point(s) lost: image")
    assert report["lines"][1].startswith("summary | case cpu-ok | lost image 0/2 | missing: localhost: no image ")
    assert "| how: set repro_vllm_image" in report["lines"][1]
    assert "## Baseline score: 8/10 (collect" in report["markdown"] and "| host_driver | n/a |" in report["markdown"]


def test_score_profile_file_and_bad_profile(tmp_path):
    path = case(tmp_path, "cpu-ok", ["run-001", "run-002"])
    own = tmp_path / "own.yml"
    own.write_text("name: own-gpu\ngpu_models: [H200]\ngpu_count_min: 1\nimage_cuda: null\n")
    # the file wins over the name (the name may be a role's default)
    score = baseline_score(path, profile="cpu-smoke", profile_file=str(own))
    assert score["max"] == 14 and all(i["points"] is not None for i in score["items"])
    with pytest.raises(AnsibleFilterError, match="unknown profile 'nope'"):
        baseline_score(path, profile="nope")


def test_run_diff_references(tmp_path):
    case(tmp_path, "cpu-ok", ["run-004", "run-007"])
    case(tmp_path, "cpu-fail", ["run-002"])
    root = os.path.join(str(tmp_path), "records")
    same_case = run_diff("run-004", "run-007", records_root=root, case_id="cpu-ok")
    assert same_case["causes"] == ["driver"]
    across = run_diff("cpu-ok/run-007", "cpu-fail/run-002", records_root=root, case_id="cpu-ok")
    assert across["ambiguous"] is True
    assert decision_report(across, "diff")["lines"][0] == across["summary"]
    with pytest.raises(AnsibleFilterError, match="run-404"):
        run_diff("run-404", "run-007", records_root=root, case_id="cpu-ok")


def test_decision_plan_of_a_summary_and_a_diff(tmp_path):
    path = case(tmp_path, "cpu-ok", ["run-001", "run-002", "run-003", "run-004"])
    plan = decision_plan(path, "summary", case_id="cpu-ok", profile="cpu-smoke", must_keep_serving=True)
    score, isolation = baseline_score(path, profile="cpu-smoke"), isolation_decision(path, must_keep_serving=True)
    assert plan["parts"] == [{"part": "score.json", "json": score}, {"part": "isolation.json", "json": isolation}]
    assert plan["sections"] == [decision_report(score, "score")["markdown"],
                                decision_report(isolation, "isolation")["markdown"]]
    assert plan["score_lines"] == decision_report(score, "score")["lines"]
    assert plan["isolation_lines"] == decision_report(isolation, "isolation")["lines"]
    assert plan["made_from"] == isolation["runs"] and len(plan["made_from"]) == 4
    assert plan["line"] == "summary | case cpu-ok | baseline score 8/10 (collect) | isolation move"
    conditions = [r["condition"] for r in isolation["reasons"]]
    assert plan["decision"] == {"case_id": "cpu-ok", "purpose": "summary", "run": None, "runs": isolation["runs"],
                                "score": 8, "max": 10, "band": "collect", "decision": "move",
                                "conditions": sorted(set(conditions), key=conditions.index)}
    root = os.path.join(str(tmp_path), "records")
    diff = run_diff("run-002", "run-004", records_root=root, case_id="cpu-ok")
    plan = decision_plan("run-002", "diff", run_b="run-004", records_root=root, case_id="cpu-ok")
    md = decision_report(diff, "diff")["markdown"]
    assert plan["parts"] == [{"part": "diff.json", "json": diff}, {"part": "diff.md", "content": md}]
    assert (plan["sections"], plan["lines"]) == ([md], decision_report(diff, "diff")["lines"])
    assert plan["made_from"] == [diff["a"], diff["b"]] == ["cpu-ok/run-002", "cpu-ok/run-004"]
    assert plan["line"] == "diff | " + diff["summary"]
    assert plan["diff"] == diff  # replay.yml reads what is not the same here from it
    assert plan["decision"] == {"case_id": "cpu-ok", "purpose": "diff", "run": None, "runs": plan["made_from"],
                                "variables": diff["variables"], "ambiguous": diff["ambiguous"]}
    with pytest.raises(AnsibleFilterError, match="summary or diff"):
        decision_plan(path, "audit")


def test_fleet_audit_of_a_fingerprint_run(tmp_path):
    path = case(tmp_path, "cpu-ok", ["run-001", "run-003", "run-006"])
    out = fleet_audit(os.path.join(path, "run-006"), baseline="run-003", previous=path,
                      records_root=os.path.join(str(tmp_path), "records"), case_id="cpu-ok")
    assert out["audit"]["drifted"] == ["localhost"]
    assert [d["fact"] for d in out["audit"]["hosts"]["localhost"]["drift"]] == ["driver", "cuda_driver"]
    assert out["isolation"]["hosts"]["localhost"]["previous_run"] == "cpu-ok/run-003"
    assert out["isolation"]["decision"] == "move"
    report = decision_report(out, "audit")
    assert report["lines"][0].startswith("audit | localhost | DRIFT")


def test_errors_name_the_fix():
    with pytest.raises(AnsibleFilterError, match="case folder"):
        baseline_score(None)
    with pytest.raises(AnsibleFilterError, match="not a case folder"):
        isolation_decision("/nonexistent/case")
    with pytest.raises(AnsibleFilterError, match="kind"):
        decision_report({}, "nope")
