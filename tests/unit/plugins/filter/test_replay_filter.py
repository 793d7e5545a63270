# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The replay filters (controller side): errors reach the play as AnsibleFilterError naming the fix, and the
fronts answer what module_utils/_replay.py answers."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter import replay as F

ATTEMPT = {"run": "run-002", "argv": ["vllm", "serve", "/m", "--port", "8391", "--api-key", "<redacted:api_key:0123abcd>"],
           "env": {}, "request": {"route": "/v1/completions", "body": {}}, "image_digest": None}


def test_filters_are_registered():
    assert set(F.FilterModule().filters()) == {"replay_step", "replay_verdict", "replay_lines"}


def test_a_secret_in_the_command_not_supplied_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="repro_vllm_replay_secret_args"):
        F.replay_step(ATTEMPT)
    step = F.replay_step(ATTEMPT, secret_args={"--api-key": "FAKE"}, port="")
    assert step["port"] == 8391 and step["argv"][-1] == "FAKE"


def test_verdict_and_lines():
    bad = {"ok": False, "stage": "config", "error_class": "config_error", "first_error": None}
    assert F.replay_verdict(bad, dict(bad))["verdict"] == "reproduced"
    with pytest.raises(AnsibleFilterError):
        F.replay_verdict(bad, None)
    diff = {"hosts": {"n1->n2": [{"variable": "driver", "from": "580.159.04", "to": "570.195.03"}]}}
    assert F.replay_lines(diff) == ["replay | what is not the same here | n1->n2 | driver | package: 580.159.04 | here: 570.195.03"]
    assert "nothing" in F.replay_lines({"hosts": {}})[0]
