# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The records' bookkeeping filters (filter/records.py): the prune's split, stop.yml's salvage and stop plans."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter import records
from ansible_collections.repro.vllm.plugins.module_utils.record import _record


def test_the_stop_plan_filter_is_the_records_own_and_names_what_is_wrong():
    assert set(records.FilterModule().filters()) == {"_prune_split", "_salvage_plan", "_stop_plan"}
    runs = [{"case_id": "c", "run": "run-001", "hosts": ["node01"]}]
    assert records.stop_plan(runs, ["node01"], "node01") == _record.stop_plan(runs, ["node01"], "node01")
    with pytest.raises(AnsibleFilterError, match="stop_plan: give the interrupted runs"):
        records.stop_plan({"runs": runs}, ["node01"], "node01")
    with pytest.raises(AnsibleFilterError, match="salvage_plan: give the find loop's results"):
        records.salvage_plan("found", [], "/r", "node01")
