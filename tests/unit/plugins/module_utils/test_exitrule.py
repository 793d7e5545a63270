# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one exit rule (module_utils/_exitrule.py): what fails a job, record only, the deprecated names' mapping."""

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils import _exitrule


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
                                        "errors": [], "deprecations": [], "lines": []}
    out = _exitrule.job_exit({"repro_vllm_record_only": True}, violations=1, errors=["the judge could not read n1"])
    assert out["fails"] is True and out["why"] == ["the judge could not read n1"]
    assert out["recorded"] == ["1 compatibility violation(s)"]


def test_the_reasons_say_what_was_found():
    out = _exitrule.job_exit({}, violations=10, drifted=["n1", "n2"], incomplete=["n3"])
    assert out["why"] == ["10 compatibility violation(s)", "drift: n1, n2", "not every host is complete in it: n3"]


@pytest.mark.parametrize("name", _exitrule.DEPRECATED)
@pytest.mark.parametrize("value,record_only", [(True, False), ("yes", False), (False, True), ("false", True)])
def test_each_old_name_maps_to_record_only_with_a_deprecation(name, value, record_only):
    only, deprecations = _exitrule.record_only({name: value})
    assert only is record_only
    assert deprecations == ["%s is deprecated and is removed in 0.3.0: use repro_vllm_record_only (%s=%s is read as "
                            "repro_vllm_record_only=%s)" % (name, name, str(not record_only).lower(),
                                                            str(record_only).lower())]


def test_the_new_name_wins_and_old_names_that_disagree_record_only():
    only, deprecations = _exitrule.record_only({"repro_vllm_record_only": False, "repro_vllm_fail_on_finding": False})
    assert only is False and deprecations[0].endswith("; ignored, repro_vllm_record_only is given)")
    assert _exitrule.record_only({"repro_vllm_audit_strict": True, "repro_vllm_fail_on_finding": False})[0] is True
    # not given: None, or "" (a survey left empty)
    assert _exitrule.record_only({"repro_vllm_record_only": None, "repro_vllm_audit_strict": ""}) == (False, [])


def test_a_value_that_is_no_boolean_is_refused_naming_it():
    with pytest.raises(_exitrule.ExitRuleError, match="repro_vllm_audit_strict must be a boolean, not 'maybe'"):
        _exitrule.record_only({"repro_vllm_audit_strict": "maybe"})
