# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A second clean run (repro_vllm_repeat_clean): which attempt is repeated, repeat.json from two attempts, and the
score, the isolation decision and the hand-off reading it - over the real frozen runs of tests/fixtures/frozen-runs.

Those runs were made before repeat.json existed: where a test needs one, it writes the repeat.json the attempt role
writes (``repeat_comparison`` over the two runs' real outcome.json) into its copy and says so."""
from __future__ import annotations

import os

from ansible_collections.repro.vllm.plugins.module_utils.handoff import _handoff, _summary_md
from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _isolation, _judge
from ansible_collections.repro.vllm.plugins.module_utils.decide import _score
from ansible_collections.repro.vllm.plugins.module_utils.record._evidence import case_runs, declared_repeat, read_run

from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import (
    RECORDS, case, edit, load, save)


def _outcome(case_name, run):
    return load(os.path.join(RECORDS, case_name, run, "outcome.json"))


def _write_repeat(path, original, repeat):
    """The repeat.json the attempt role writes into the second clean run (computed from the real outcomes)."""
    rep = _judge.repeat_comparison(load(os.path.join(path, original, "outcome.json")),
                                   load(os.path.join(path, repeat, "outcome.json")))
    save(os.path.join(path, repeat, "repeat.json"), rep)
    return rep


def _item(score, name):
    return [i for i in score["items"] if i["item"] == name][0]


# --- which attempt is repeated --------------------------------------------------------------------------------

def _attempt(run, step, ok, stage="none", error_class=None, purpose="feature_layer", refused=False):
    return {"run": run, "path": "/r/" + run, "step": step, "ok": ok, "stage": stage, "error_class": error_class,
            "purpose": purpose, "refused": refused}


def test_the_attempt_that_failed_is_repeated_not_its_rollback():
    runs = [_attempt("run-002", "minimal", True, purpose="minimal_startup"),
            _attempt("run-003", "long_context", False, "config", "config_error"),
            _attempt("run-004", "rollback", True, purpose="rollback")]
    target = _judge.repeat_target(runs)
    assert target["run"] == "run-003" and target["attempt"] is runs[1]
    assert "failed (stage config, config_error)" in target["reason"]


def test_the_minimal_attempt_when_nothing_failed():
    runs = [_attempt("run-002", "minimal", True, purpose="minimal_startup"),
            _attempt("run-003", "prefix_caching", True)]
    assert _judge.repeat_target(runs)["run"] == "run-002"
    # a play continued from an earlier run has no minimal start: its first attempt
    assert _judge.repeat_target(runs[1:])["run"] == "run-003"


def test_nothing_to_repeat_when_every_step_was_refused():
    refused = dict(_attempt("run-003", "prefix_caching", False, refused=True), run=None, path=None)
    assert _judge.repeat_target([refused]) is None
    assert _judge.repeat_target([]) is None
    # a repeat or a rollback is never repeated itself
    assert _judge.repeat_target([_attempt("run-005", "repeat", False, "config", "config_error",
                                          purpose="repeat")]) is None


# --- repeat.json ----------------------------------------------------------------------------------------------

def test_the_same_failure_twice_repeats():
    """cpu-fail run-002 and run-005: the same --max-model-len 99999 start refused in config, twice (real)."""
    rep = _judge.repeat_comparison(_outcome("cpu-fail", "run-002"), _outcome("cpu-fail", "run-005"))
    assert rep["repeats"] == "run-002" and rep["run"] == "run-005" and rep["step"] == "minimal"
    assert rep["same_stage"] is True and rep["same_error_class"] is True and rep["repeated"] is True
    assert rep["same_first_error"] is True
    expected = {"stage": "config", "error_class": "config_error", "ok": False}
    assert {k: rep["a"][k] for k in ("stage", "error_class", "ok")} == expected
    assert "max_model_len" in rep["b"]["first_error"]["line"] and rep["b"]["first_error"]["lineno"]
    assert rep["summary"] == "run-005 failed at stage config (config_error) like run-002: the failure repeated"


def test_a_pass_then_a_failure_does_not_repeat():
    """cpu-ok run-007 passed; run-011 with the same command failed: another process held the port (real)."""
    rep = _judge.repeat_comparison(_outcome("cpu-ok", "run-007"), _outcome("cpu-ok", "run-011"))
    assert rep["repeated"] is False and rep["same_error_class"] is False
    assert rep["a"]["ok"] is True and rep["b"]["error_class"] == "port_in_use"
    assert rep["same_first_error"] is False  # one has no first error
    assert rep["summary"].endswith("the result did NOT repeat")
    both_passed = _judge.repeat_comparison(_outcome("cpu-ok", "run-002"), _outcome("cpu-ok", "run-004"))
    assert both_passed["repeated"] is True and both_passed["same_first_error"] is None
    assert both_passed["summary"].endswith("both passed")


def test_the_first_error_text_ignores_stamps_and_pids_but_not_the_message():
    a = dict(_outcome("cpu-fail", "run-002"))
    b = dict(a, run="run-009", first_error=dict(a["first_error"]))
    a["first_error"] = dict(a["first_error"], line="(EngineCore pid=4101) ERROR 12-01 15:22:17 [core.py:12] boom at 0x7f00aa")
    b["first_error"]["line"] = "(EngineCore pid=5120) ERROR 12-01 15:24:51 [core.py:12] boom at 0x7f11bb"
    assert _judge.repeat_comparison(a, b)["same_first_error"] is True
    b["first_error"]["line"] = "(EngineCore pid=5120) ERROR 12-01 15:24:51 [core.py:12] another error"
    rep = _judge.repeat_comparison(a, b)
    assert rep["same_first_error"] is False and rep["repeated"] is True  # stage and class decide; the text is told


def test_the_closing_line_names_the_second_clean_run():
    failed = dict(_outcome("cpu-fail", "run-002"), refused=False)
    repeat = dict(_outcome("cpu-fail", "run-005"), refused=False, purpose="repeat")
    repeat["repeat"] = _judge.repeat_comparison(failed, repeat)
    finding = _judge.reproduction_finding([failed, repeat])
    assert finding["finding"]["run"] == "run-002" and finding["repeat"]["run"] == "run-005"
    assert finding["classification"].endswith(
        "second clean run: run-005 failed at stage config (config_error) like run-002: the failure repeated")


# --- the decisions read it ------------------------------------------------------------------------------------

def test_score_cites_repeat_json(tmp_path):
    path = case(tmp_path, "cpu-fail")
    _write_repeat(path, "run-002", "run-005")
    assert declared_repeat(read_run(os.path.join(path, "run-005")))["repeats"] == "run-002"
    item = _item(_score.score_runs(case_runs(path), profile="cpu-smoke"), "repeatability")
    assert item["points"] == 2 and "run-005/repeat.json" in item["evidence"], item


def test_score_when_the_declared_repeat_did_not_keep_the_command(tmp_path):
    """Changed here: run-005's command.json gets another --max-model-len, as if the repeat had not kept it."""
    path = case(tmp_path, "cpu-fail")
    _write_repeat(path, "run-002", "run-005")

    def other_len(cmd):
        argv = cmd["argv"]
        argv[argv.index("--max-model-len") + 1] = "88888"
    edit(os.path.join(path, "run-005", "hosts", "localhost", "command.json"), other_len)
    item = _item(_score.score_runs(case_runs(path), profile="cpu-smoke"), "repeatability")
    assert item["points"] == 0 and "run-005 repeats run-002 but differs" in item["missing"], item
    assert "repro_vllm_repeat_clean" in item["how"]


def test_isolation_first_error_changed_cites_the_second_clean_run(tmp_path):
    """cpu-ok run-011 failed (port taken) where run-007, the same command, passed; here run-011 carries the
    repeat.json it would have as run-007's second clean run."""
    path = case(tmp_path, "cpu-ok", ["run-006", "run-007", "run-010", "run-011"])
    _write_repeat(path, "run-007", "run-011")
    decision = _isolation.decide(case_runs(path))
    assert [(r["condition"], r["host"]) for r in decision["reasons"]] == [("first_error_changed", "localhost")]
    evidence = decision["reasons"][0]["evidence"]
    assert "(its second clean run)" in evidence and "run-011/repeat.json" in evidence and "port_in_use" in evidence


def test_isolation_stays_when_the_repeat_repeated(tmp_path):
    path = case(tmp_path, "cpu-fail")
    _write_repeat(path, "run-002", "run-005")
    assert _isolation.decide(case_runs(path))["decision"] == "stay"


def test_handoff_names_the_second_clean_run(tmp_path):
    path = case(tmp_path, "cpu-fail")
    _write_repeat(path, "run-002", "run-005")
    facts = _handoff.collect_facts("cpu-fail", case_runs(path))
    item = facts["items"]["repeat"]
    # run-005 (the latest play's failing attempt) is the declared second clean run of run-002 and failed the same way
    assert facts["verdict"] == "fails_at_minimal" and facts["verdict_detail"]["run"] == "run-005"
    assert item["value"] == "yes" and item["failed_run"] == "run-005"
    assert item["runs"] == [{
        "run": "run-005", "repeats": "run-002", "same_stage": True, "same_error_class": True, "reproduced": True,
        "stage": "config", "error_class": "config_error", "declared": True,
        "summary": "run-005 failed at stage config (config_error) like run-002: the failure repeated",
        "source": "runs/run-005/repeat.json"}]
    md = _summary_md._item_md("repeat", item)
    assert "The failure of run-005 reproduced by a second clean run: **yes**" in md
    assert "| run-005 | run-002 | config | config_error | True | True | runs/run-005/repeat.json |" in md
