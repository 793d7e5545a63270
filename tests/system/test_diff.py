# -*- coding: utf-8 -*-
"""playbooks/diff.yml through ansible-runner on copies of real frozen runs (tests/fixtures/frozen-runs): no change,
one change (the driver), two changes across cases (causal ambiguity); each comparison a frozen run of its own."""
from __future__ import annotations

import json
import os
import shutil

from conftest import FIXTURES, ROOT, check_frozen, run_playbook, task_results

INVENTORY = os.path.join(ROOT, "inventories", "localhost")


def _records(tmp_path):
    root = tmp_path / "records"
    for case, runs in (("cpu-ok", ("run-002", "run-004", "run-007")), ("cpu-fail", ("run-002",))):
        for run in runs:
            shutil.copytree(os.path.join(FIXTURES, "frozen-runs", case, run), str(root / case / run))
    return root


def _diff(tmp_path, root, a, b, case, ident):
    r = run_playbook(tmp_path, "playbooks/diff.yml", INVENTORY,
                     {"repro_vllm_records_root": str(root), "repro_vllm_case_id": case,
                      "repro_vllm_diff_a": a, "repro_vllm_diff_b": b}, ident=ident)
    assert r.status == "successful", r.stdout.read()[-4000:]
    lines = [res.get("msg") for _h, _e, res in task_results(r, "one table per host")][0]
    return r, lines


def test_diff_playbook_none_one_two(tmp_path):
    root = _records(tmp_path)

    _r, lines = _diff(tmp_path, root, "run-002", "run-004", "cpu-ok", "none")
    run = root / "cpu-ok" / "run-008"  # the next run of the case
    manifest = check_frozen(str(run))
    assert manifest["metadata"]["purpose"] == "diff"
    diff = json.loads((run / "diff.json").read_text())
    assert diff["hosts"] == {"localhost": []} and diff["ambiguous"] is False
    assert lines == [diff["summary"], "localhost | no change"]

    _r, lines = _diff(tmp_path, root, "run-004", "run-007", "cpu-ok", "one")
    diff = json.loads((root / "cpu-ok" / "run-009" / "diff.json").read_text())
    assert {"variable": "driver", "from": "580.159.04", "to": "570.172.08"} in diff["hosts"]["localhost"]
    assert diff["ambiguous"] is False
    assert "localhost | driver | 580.159.04 -> 570.172.08" in lines

    r, lines = _diff(tmp_path, root, "cpu-ok/run-007", "cpu-fail/run-002", "cpu-fail", "two")
    run = root / "cpu-fail" / "run-003"
    check_frozen(str(run))
    diff = json.loads((run / "diff.json").read_text())
    assert diff["a"] == "cpu-ok/run-007" and diff["b"] == "cpu-fail/run-002"
    assert diff["ambiguous"] is True
    assert "CAUSAL AMBIGUITY" in (run / "diff.md").read_text()
    assert "| command:--max-model-len | 512 | 99999 |" in (run / "notes.md").read_text()
    assert any("localhost | command:--max-model-len | 512 -> 99999" == line for line in lines)
    verdict = [res.get("msg") for _h, _e, res in task_results(r, "Diff | verdict")][0]
    assert "CAUSAL AMBIGUITY" in verdict and str(run) in verdict
    # the decision fact carries the run its close froze, and the job hands that run on (set_stats)
    handed = [res["result"]["repro_vllm_result"] for _h, _e, res in task_results(r, "hand it to the next workflow node")
              if "result" in res]
    assert handed and handed[0]["runs"] == [str(run)], handed
    assert handed[0]["diff"] == {"variables": diff["variables"], "ambiguous": True}, handed[0]


def test_diff_playbook_names_a_missing_run(tmp_path):
    root = _records(tmp_path)
    r = run_playbook(tmp_path, "playbooks/diff.yml", INVENTORY,
                     {"repro_vllm_records_root": str(root), "repro_vllm_case_id": "cpu-ok",
                      "repro_vllm_diff_a": "run-002", "repro_vllm_diff_b": "run-404"}, ident="missing")
    assert r.status == "failed"
    assert "run-404" in r.stdout.read()
    assert sorted(os.listdir(str(root / "cpu-ok"))) == ["run-002", "run-004", "run-007"]  # nothing opened


def test_diff_playbook_in_check_mode_compares_and_records_nothing(tmp_path):
    root = _records(tmp_path)
    r = run_playbook(tmp_path, "playbooks/diff.yml", INVENTORY,
                     {"repro_vllm_records_root": str(root), "repro_vllm_case_id": "cpu-ok",
                      "repro_vllm_diff_a": "run-004", "repro_vllm_diff_b": "run-007"}, ident="check", cmdline="--check")
    assert r.status == "successful", r.stdout.read()[-4000:]
    lines = [res.get("msg") for _h, _e, res in task_results(r, "one table per host")][0]
    assert "localhost | driver | 580.159.04 -> 570.172.08" in lines
    assert sorted(os.listdir(str(root / "cpu-ok"))) == ["run-002", "run-004", "run-007"]  # nothing opened
    # the decision is still handed on (its variables), with no run
    handed = [res["result"]["repro_vllm_result"] for _h, _e, res in task_results(r, "hand it to the next workflow node")
              if "result" in res]
    assert handed and handed[0]["runs"] == [] and handed[0]["diff"]["variables"] == ["driver", "cuda_driver"], handed
    verdict = [res.get("msg") for _h, _e, res in task_results(r, "Diff | verdict")][0]
    assert "check mode: not recorded" in verdict
