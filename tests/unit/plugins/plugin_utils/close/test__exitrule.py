# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one exit rule (plugin_utils/close/_exitrule.py): what fails a job, record only."""

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.close import _exitrule


@pytest.mark.parametrize("found", [dict(violations=3), dict(drifted=["node02"]), dict(incomplete=["node03"]),
                                   dict(finding="run-004 failed at config"), dict(refused="layer refused")])
def test_each_finding_fails_the_job_unless_it_only_records(found):
    failed = _exitrule.job_exit({}, **found)
    assert failed["fails"] is True and len(failed["why"]) == 1 and failed["recorded"] == [] and not failed["lines"]
    recorded = _exitrule.job_exit({"repro_vllm_record_only": True}, **found)
    assert recorded["fails"] is False and recorded["why"] == [] and recorded["recorded"] == failed["why"]
    assert recorded["lines"] == ["exit | record only (repro_vllm_record_only): the job does not fail on %s"
                                 % failed["why"][0]]


def test_nothing_found_passes_and_an_error_of_the_job_fails_even_when_it_only_records():
    assert _exitrule.job_exit(None) == {"fails": False, "record_only": False, "why": [], "recorded": [],
                                        "errors": [], "lines": []}
    out = _exitrule.job_exit({"repro_vllm_record_only": True}, violations=1, errors=["the judge could not read n1"])
    assert out["fails"] is True and out["why"] == ["the judge could not read n1"]
    assert out["recorded"] == ["1 compatibility violation(s)"]


def test_the_reasons_say_what_was_found():
    out = _exitrule.job_exit({}, violations=10, drifted=["n1", "n2"], incomplete=["n3"])
    assert out["why"] == ["10 compatibility violation(s)", "drift: n1, n2", "not every host is complete in it: n3"]


@pytest.mark.parametrize("value,record_only", [(True, True), ("yes", True), (False, False), ("false", False),
                                               (None, False), ("", False)])
def test_record_only_is_the_one_name(value, record_only):
    # None or "" (a survey left empty, a variable defaulted to none in Jinja): not given, the job fails on findings
    assert _exitrule.record_only({"repro_vllm_record_only": value}) is record_only


def test_the_names_removed_in_0_2_0_are_not_read():
    for name in ("repro_vllm_audit_strict", "repro_vllm_fail_on_incomplete", "repro_vllm_fail_on_finding"):
        assert _exitrule.record_only({name: False}) is False
        out = _exitrule.job_exit({name: False}, violations=1)
        assert out["fails"] is True and out["lines"] == []


def test_a_value_that_is_no_boolean_is_refused_naming_it():
    with pytest.raises(_exitrule.ExitRuleError, match="repro_vllm_record_only must be a boolean, not 'maybe'"):
        _exitrule.record_only({"repro_vllm_record_only": "maybe"})
