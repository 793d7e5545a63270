# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collective verdict filter on the real device run's per-node results (controller side: ansible-test runs filter
tests where ansible itself can be imported, unlike module_utils tests)."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter import collective_verdict as F

FIX = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))
COLL = os.path.join(FIX, "2026-12-01-580.159.04-h200-driver-and-collective", "collective")


def _result(case):
    with open(os.path.join(COLL, case, "result.json")) as fh:
        return json.load(fh)


def test_the_verdict_filter():
    assert F.collective_verdict({"gpu-a01": _result("nccl_1rank")}, {"stage": "none"})["ok"] is True
    with pytest.raises(AnsibleFilterError):
        F.collective_verdict({}, None)
    with pytest.raises(AnsibleFilterError):
        F.collective_verdict({"gpu-a01": _result("nccl_1rank")}, "none")
