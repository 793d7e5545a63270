# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter fronts of the judgement: argument errors are clear, the latest run is found by number."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter import judge


def test_latest_run_is_numeric_not_text_order(tmp_path):
    for name in ("run-999", "run-1000", "run-002", "notes", "run-abc"):
        (tmp_path / "c" / name).mkdir(parents=True)
    (tmp_path / "c" / "run-999" / "changes.json").write_text("{}")
    (tmp_path / "c" / "run-002" / "changes.json").write_text("{}")
    assert judge.latest_run("c", records_root=str(tmp_path))["run"] == "run-1000"
    found = judge.latest_run("c", "changes.json", records_root=str(tmp_path))
    assert found == {"run": "run-999", "path": str(tmp_path / "c" / "run-999"), "number": 999}
    assert judge.latest_run("missing", "changes.json", records_root=str(tmp_path)) is None


def test_latest_run_of_a_case_under_the_records_root_resolved_as_the_open_resolves_it(tmp_path, monkeypatch):
    # a relative root (or none: records) against the working directory
    monkeypatch.chdir(tmp_path)
    (tmp_path / "records" / "c" / "run-002").mkdir(parents=True)
    (tmp_path / "records" / "c" / "run-002" / "changes.json").write_text("{}")
    (tmp_path / "other" / "c" / "run-007").mkdir(parents=True)
    (tmp_path / "other" / "c" / "run-007" / "changes.json").write_text("{}")
    assert judge.latest_run("c", "changes.json", records_root=None)["path"] == str(tmp_path / "records" / "c" / "run-002")
    assert judge.latest_run("c", "changes.json", records_root="other")["path"] == str(tmp_path / "other" / "c" / "run-007")
    assert judge.latest_run("nocase", "changes.json", records_root="other") is None


def test_filters_refuse_wrong_types():
    with pytest.raises(AnsibleFilterError, match="attempt_verdict: nodes must be a dict"):
        judge.attempt_verdict({"name": "x"}, {}, nodes=["a"])
    with pytest.raises(AnsibleFilterError, match="block_size must be at least 1"):
        judge.prefix_cache_evidence([], 0)
    assert set(judge.FilterModule().filters()) == {
        "attempt_verdict", "_layer_observation", "_prefix_cache_evidence", "_latest_run", "_ladder_layers",
        "_repeat_target", "_reproduction_summary", "_reproduction_result"}
    with pytest.raises(AnsibleFilterError, match="repeat_target: the input"):
        judge.repeat_target({"run": "run-002"})


def test_ladder_layers_take_the_one_order():
    data = {"gateway": {"checks": []}, "prefix_caching": {"args": ["--enable-prefix-caching"]},
            "concurrency_2": {"concurrency": 2}}
    assert [layer["name"] for layer in judge.ladder_layers(data)] == ["prefix_caching", "concurrency_2", "gateway"]
    assert judge.ladder_layers(data)[0]["args"] == ["--enable-prefix-caching"]
    with pytest.raises(AnsibleFilterError, match="speculative is no ladder layer"):
        judge.ladder_layers({"speculative": {}})
