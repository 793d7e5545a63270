# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The replay filters replay.yml still templates (controller side): errors reach the play as AnsibleFilterError
naming the fix, and the fronts answer what module_utils/handoff/_replay.py answers. The choices before the unpack
are the action's (tests/unit/plugins/action/test_replay_action.py)."""

from __future__ import annotations

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter import replay as F

ATTEMPT = {"run": "run-002", "argv": ["vllm", "serve", "/m", "--port", "8391", "--api-key", "<redacted:api_key:0123abcd>"],
           "env": {}, "request": {"route": "/v1/completions", "body": {}}, "image_digest": None}


def test_filters_are_registered():
    assert set(F.FilterModule().filters()) == {"_records_root", "_replay_plan", "replay_verdict", "_replay_lines"}


def test_records_root_is_resolved_against_the_working_directory_never_pwd(tmp_path, monkeypatch):
    monkeypatch.chdir(str(tmp_path))
    monkeypatch.setenv("PWD", "/somewhere/else")
    assert F.records_root(None) == os.path.join(str(tmp_path), "records")
    assert F.records_root("") == os.path.join(str(tmp_path), "records")
    assert F.records_root("out/rec") == os.path.join(str(tmp_path), "out", "rec")
    assert F.records_root("/srv/records/") == "/srv/records"


def test_replay_plan_stops_on_too_few_hosts_naming_them():
    with pytest.raises(AnsibleFilterError, match="replay_plan: .* ran on 2 node.*but this play has 1 \\(node02\\)"):
        F.replay_plan({"attempt": dict(ATTEMPT, nodes=["n1", "n2"])}, ["node02"])
    plan = F.replay_plan({"attempt": dict(ATTEMPT, nodes=["n1"], ok=True)}, ["node02"], secret_args={"--api-key": "FAKE"})
    assert plan["step"]["nodes"] == ["node02"] and plan["step"]["expected"] == "the package's result: healthy"


def test_a_secret_in_the_command_not_supplied_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="repro_vllm_replay_secret_args"):
        F.replay_plan({"attempt": dict(ATTEMPT, nodes=["n1"], ok=True)}, ["node02"])
    plan = F.replay_plan({"attempt": dict(ATTEMPT, nodes=["n1"], ok=True)}, ["node02"], secret_args={"--api-key": "FAKE"},
                         port="")
    assert plan["step"]["port"] == 8391 and plan["step"]["argv"][-1] == "FAKE"


def test_verdict_and_lines():
    bad = {"ok": False, "stage": "config", "error_class": "config_error", "first_error": None}
    assert F.replay_verdict(bad, dict(bad))["verdict"] == "reproduced"
    with pytest.raises(AnsibleFilterError):
        F.replay_verdict(bad, None)
    diff = {"hosts": {"n1->n2": [{"variable": "driver", "from": "580.159.04", "to": "570.195.03"}]}}
    assert F.replay_lines(diff) == ["replay | what is not the same here | n1->n2 | driver | package: 580.159.04 | here: 570.195.03"]
    assert "nothing" in F.replay_lines({"hosts": {}})[0]
