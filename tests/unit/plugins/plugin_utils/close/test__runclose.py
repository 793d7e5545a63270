# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/close/_runclose.py: the collective's close (the verdict over every node's real collective_run result,
and what a failed checkpoint stops the play with: the exit rule) and the decisions' (the decide role's fact)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.decide import _verdict
from ansible_collections.repro.vllm.plugins.plugin_utils.close import _runclose
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.gpu.test__collective import _result

RUN = "/records/case/run-005"
FROZEN = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "frozen-runs")


def _close(case, **inputs):
    return _runclose.close_collective(RUN, {}, ["gpu-a01"], reports={"gpu-a01": _result(case)}, backend="nccl",
                                      master="10.0.0.5:29511", check_mode=True, **inputs)


def test_a_failed_checkpoint_stops_the_play_unless_the_job_only_records():
    closing = _close("nccl_bad_socket_ifname")
    verdict = closing.result["collective"]
    assert closing.status == "failed" and verdict["ok"] is False and closing.fail is None
    stop = closing.result["exit"]
    assert stop["fails"] is True and stop["why"] == ["a failure was found: %s" % verdict["summary"]]
    first = verdict["first_error"] or {}
    assert stop["msg"] == (
        "%s. First error: %s: %s. Fix the fabric or network (NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME, NCCL_IB_HCA, "
        "firewall on port 29511, GPU visibility) and run again; the logs are in %s/hosts. Set "
        "repro_vllm_collective_fail=false to go on regardless." % (
            verdict["summary"], first.get("node", "-"), first.get("line", "none in the logs"), RUN))
    only = _close("nccl_bad_socket_ifname", record_only=True).result["exit"]
    assert only["fails"] is False and only["lines"] == [
        "collective | the method stops here; frozen record: %s" % RUN,
        "exit | record only (repro_vllm_record_only): the job does not fail on a failure was found: %s"
        % verdict["summary"]]
    with pytest.raises(_runclose.CloseError, match="repro_vllm_record_only must be a boolean"):
        _close("nccl_bad_socket_ifname", record_only="maybe")


def test_a_checkpoint_that_passed_has_no_exit():
    closing = _close("nccl_1rank")
    assert closing.status == "ok" and closing.result["collective"]["ok"] is True and "exit" not in closing.result


def test_a_decisions_close_hands_the_decision_back_with_its_run():
    closing = _runclose.decide("replay", RUN, {"decision": {"purpose": "replay", "run": None, "score": 3}})
    assert closing.status == "ok" and closing.result == {"decision": {"purpose": "replay", "run": RUN, "score": 3}}
    assert _runclose.decide("replay", RUN, {}).result == {}


def _case_with_open_run(tmp_path, purpose):
    """A copy of the real frozen case cpu-ok with the next run opened (open.json as run_record's open writes it)."""
    case = tmp_path / "cpu-ok"
    shutil.copytree(os.path.join(FROZEN, "cpu-ok"), str(case))
    run = case / "run-099"
    run.mkdir()
    (run / "open.json").write_text(json.dumps({"run": {"purpose": purpose, "profile": None,
                                                       "profile_source": "not judged"}}))
    return str(run)


def test_the_run_sheet_of_a_decisions_run_is_the_close_s(tmp_path):
    run = _case_with_open_run(tmp_path, "diff")
    case = _verdict.case_verdict(os.path.dirname(run), exclude=["run-099"])
    closing = _runclose.decide("diff", run, {"made_from": ["cpu-ok/run-002", "cpu-ok/run-004"],
                                             "sections": ["## A\n\ntext a", "## B\n\ntext b"]})
    assert closing.metadata == {"case_id": "cpu-ok", "made_from": ["cpu-ok/run-002", "cpu-ok/run-004"]}
    assert closing.parts == [{"part": "notes.md", "content": (
        "# Run sheet: cpu-ok / run-099\n\n- purpose: diff\n- profile: none (not judged)\n"
        "- made from: cpu-ok/run-002, cpu-ok/run-004\n"
        "- this run only holds decisions; the evidence stays in the frozen runs above.\n"
        "- case verdict: `%s` - %s\n\n## A\n\ntext a\n## B\n\ntext b\n" % (case["verdict"], case["verdict_sentence"]))}]
    # a replay run's sheet names no case verdict (its case is the replay's own, still being made)
    replay = _runclose.decide("replay", _case_with_open_run(tmp_path / "r", "replay"), {"made_from": ["a"]})
    assert replay.parts[0]["content"].endswith("- made from: a\n"
                                               "- this run only holds decisions; the evidence stays in the frozen runs above.\n\n")
