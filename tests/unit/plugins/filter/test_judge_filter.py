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
    # what the next run is compared with: the run's current identity
    (tmp_path / "c" / "run-999" / "changes.json").write_text('{"current": {"driver": "580"}, "previous": null}')
    assert judge.latest_run("c", "changes.json", records_root=str(tmp_path), current=True) == {
        "run": "run-999", "path": str(tmp_path / "c" / "run-999"), "identity": {"driver": "580"}}
    (tmp_path / "c" / "run-999" / "changes.json").write_text("not json")
    with pytest.raises(AnsibleFilterError, match="latest_run: changes.json of .*run-999 cannot be read"):
        judge.latest_run("c", "changes.json", records_root=str(tmp_path), current=True)


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
    assert set(judge.FilterModule().filters()) == {
        "attempt_verdict", "_latest_run", "_repeat_plan",
        "_reproduction_summary", "_reproduction_result"}
    with pytest.raises(AnsibleFilterError, match="repeat_plan: the input"):
        judge.repeat_plan({"run": "run-002"})


def _attempt(run, step, ok, host="0.0.0.0"):
    return {"run": run, "path": "/r/" + run, "step": step, "ok": ok, "stage": "none" if ok else "config",
            "error_class": None if ok else "config_error", "purpose": "minimal_startup" if step == "minimal" else "x",
            "refused": False}


def test_repeat_plan_is_the_target_its_step_again_and_where_its_port_is_probed():
    steps = {"run-002": {"name": "minimal", "purpose": "minimal_startup", "nodes": ["localhost"], "host": "0.0.0.0",
                         "port": 8473, "argv": ["vllm", "serve", "m"], "env": {}, "request": {"route": "/v1/completions"},
                         "expected": "x", "rollback": "none", "input": "x"},
             "run-003": {"name": "prefix_caching", "purpose": "feature_layer", "nodes": ["localhost"], "host": "10.1.2.3",
                         "port": 8473, "argv": ["vllm", "serve", "m", "--enable-prefix-caching"], "env": {},
                         "request": {"route": "/v1/completions"}, "expected": "x", "rollback": "x", "input": "x"}}
    plan = judge.repeat_plan([_attempt("run-002", "minimal", True), _attempt("run-003", "prefix_caching", True)], steps)
    assert plan["target"]["run"] == "run-002" and plan["target"]["reason"] == "the minimal attempt (nothing failed)"
    assert plan["step"]["name"] == "repeat" and plan["step"]["repeat_of"]["run"] == "run-002"
    assert plan["step"]["argv"] == steps["run-002"]["argv"] and plan["step"]["debug_as"] == "minimal"
    # a wildcard host is probed on 127.0.0.1, another as it is
    assert plan["probe_host"] == "127.0.0.1"
    failed = judge.repeat_plan([_attempt("run-002", "minimal", True), _attempt("run-003", "prefix_caching", False)], steps)
    assert failed["target"]["run"] == "run-003" and failed["probe_host"] == "10.1.2.3"
    # the host's progress line, whether it probes the port (a node of the step) and the message when it is busy
    here = judge.repeat_plan([_attempt("run-002", "minimal", False)], steps, host="localhost", port_timeout=60)
    assert here["runs"] and here["probe"] and here["line"] == (
        "reproduce | localhost | repeat of run-002 (minimal): the attempt that failed (stage config, config_error); a "
        "new process with the same command, environment and request")
    assert here["busy"] == (
        "repeat of run-002 on localhost: port 8473 of 0.0.0.0 still answers 60 s after the server of the play was "
        "stopped, so a clean start is not possible; find what listens there (ss -ltnp 'sport = :8473'), stop it and "
        "run reproduce.yml again")
    assert not judge.repeat_plan([_attempt("run-002", "minimal", False)], steps, host="gpu9")["probe"]
    # no attempt ran: nothing to repeat
    assert judge.repeat_plan([], steps, host="gpu1") == {
        "target": None, "step": None, "probe_host": None, "runs": False, "probe": False, "busy": None,
        "line": "reproduce | gpu1 | repeat: no attempt of this play ran (every step was refused or none was made), so "
                "there is nothing to repeat"}
    with pytest.raises(AnsibleFilterError, match="repeat_plan: original"):
        judge.repeat_plan([_attempt("run-004", "minimal", True)], steps)
