# -*- coding: utf-8 -*-
"""The console's closing table (_closing.closing_rows, row_cells): every targeted host with its real status from
the record; a host not looked at is never ok; the controller's failures on a row of their own."""
from __future__ import annotations

from ansible_collections.repro.vllm.plugins.plugin_utils.close import _closing

RUN = "/records/fleet/run-001"


def _status(rows):
    return {r["host"]: r["status"] for r in rows}


def test_the_audit_of_issue_22_every_host_with_its_real_status():
    # -e repro_vllm_targets=ok1,ok2,old: "old" is not in the inventory, the open was refused before any host's own
    # task ran (the plays before it run once, on the controller)
    rows = _closing.closing_rows(targets=["ok1", "ok2"], not_matched=[{"name": "old", "reason": "not_in_inventory"}],
                                 controller_errors=[{"task": "Open the next run", "msg": "names 1 host(s)"}])
    assert [(r["host"], r["status"]) for r in rows] == [
        ("ok1", "not recorded"), ("ok2", "not recorded"), ("old", "not matched"), ("controller", "failed")]
    assert rows[2]["error_class"] == "not_in_inventory"
    assert _closing.row_cells(rows[2]) == ("old", "NOT MATCHED", "-", "not_in_inventory", "-")
    assert _closing.row_cells(rows[3]) == ("controller", "FAILED", "-", "task: Open the next run", "-")


def test_record_statuses_win_over_what_ansible_counted():
    fleet = [{"host": "ok1", "status": "ok"}, {"host": "dark", "status": "unreachable", "detail": "ssh: refused"},
             {"host": "hung", "status": "degraded", "detail": "nvidia-smi timed out"},
             {"host": "broke", "status": "failed", "detail": "python missing"},
             {"host": "gone", "status": "lost", "detail": "no result came back"}]
    hosts = ["ok1", "dark", "hung", "broke", "gone"]
    # ignore_unreachable counts the unreachable host "ok" in Ansible's stats, and the close's run_once failure
    # lands on ok1: neither changes a row
    rows = _closing.closing_rows(targets=hosts, fleet=fleet, ran=hosts, records=dict.fromkeys(hosts, RUN),
                                 controller_errors=[{"task": "Fail the play when a host is not complete", "msg": "x"}])
    assert _status(rows) == {"ok1": "ok", "dark": "unreachable", "hung": "degraded", "broke": "failed",
                             "gone": "failed", "controller": "failed"}
    assert rows[1]["detail"] == "ssh: refused" and rows[0]["record"] == RUN
    assert _closing.row_cells(rows[1]) == ("dark", "UNREACHABLE", "-", "-", RUN)


def test_violation_and_drift_from_the_judge_and_the_audit():
    fleet = [{"host": h, "status": "ok"} for h in ("a", "b", "c", "d")] + [{"host": "e", "status": "unreachable"}]
    compat = {"verdict": "fail", "violations": [
        {"host": "b", "fact": "driver_branch"}, {"host": "b", "fact": "gpu_model"},
        {"host": None, "fact": "fabric"}, {"host": "e", "fact": "gpu_count"}]}
    rows = _closing.closing_rows(targets=["a", "b", "c", "d", "e"], fleet=fleet, compatibility=compat, drifted=["b", "c"])
    assert _status(rows) == {"a": "ok", "b": "violation", "c": "drift", "d": "ok", "e": "unreachable", "job": "violation"}
    assert rows[1]["error_class"] == "driver_branch, gpu_model" and rows[-1]["error_class"] == "fabric"


def test_a_host_not_looked_at_is_never_ok():
    # targeted (the run names it), no record entry, nothing of its own ran
    rows = _closing.closing_rows(targets=["n1", "n2"], fleet=[{"host": "n1", "status": "ok"}])
    assert _status(rows) == {"n1": "ok", "n2": "not recorded"}
    # a host whose own tasks ran and passed, in a playbook without a record of it (no run named hosts): ok
    assert _status(_closing.closing_rows(ran=["n1"])) == {"n1": "ok"}
    # the controller that only ran its own tasks is no row when a run named the targets
    assert _status(_closing.closing_rows(targets=["n1"], fleet=[{"host": "n1", "status": "ok"}],
                                         ran=["n1", "localhost"])) == {"n1": "ok"}


def test_own_failures_and_lost_connections_after_the_record():
    fleet = [{"host": h, "status": "ok"} for h in ("a", "b", "c")]
    rows = _closing.closing_rows(targets=["a", "b", "c"], fleet=fleet, unreachable=["b"], failed={"c": "Start vLLM"})
    assert _status(rows) == {"a": "ok", "b": "unreachable", "c": "failed"}
    assert rows[2]["error_class"] == "task: Start vLLM"
    # no record at all: what its own tasks did
    rows = _closing.closing_rows(ran=["x", "y"], unreachable=["z"], failed={"y": "All-reduce"})
    assert _status(rows) == {"x": "ok", "y": "failed", "z": "unreachable"}


def test_attempts_of_a_reproduction():
    attempts = [
        {"step": "minimal", "nodes": ["n1", "n2"], "ok": True, "path": "/r/c/run-002"},
        {"step": "long_context", "nodes": ["n1", "n2"], "ok": False, "purpose": "feature_layer", "stage": "config",
         "error_class": "config_error", "component": "server", "path": "/r/c/run-003"},
        {"step": "long_context", "nodes": ["n1", "n2"], "ok": True, "purpose": "rollback", "earlier_state_returned": True,
         "path": "/r/c/run-004"},
        {"step": "minimal", "nodes": ["n3"], "ok": True, "path": "/r/c/run-005", "expectation_met": False},
        {"step": "minimal", "nodes": ["n4"], "refused": True},
    ]
    fleet = [{"host": h, "status": "ok"} for h in ("n1", "n2", "n3", "n4")]
    rows = _closing.closing_rows(targets=["n1", "n2", "n3", "n4"], fleet=fleet, attempts=attempts, unreachable=["n2"],
                                 records={"n4": "/r/c/run-001"})
    cells = [_closing.row_cells(r) for r in rows]
    assert cells[0] == ("n1", "FAILED at long_context, rollback came back", "config", "config_error (server)", "/r/c/run-003")
    assert cells[1][1] == "FAILED at long_context, rollback came back (then unreachable)"
    assert cells[2] == ("n3", "ok through minimal, expectation NOT met at minimal", "none", "-", "/r/c/run-005")
    assert cells[3] == ("n4", "REFUSED at minimal", "-", "-", "/r/c/run-001")


def test_the_console_play_of_a_single_attempt():
    # no run named hosts (the attempt role opens its runs): the attempt's node is the row
    attempt = {"step": "long_context", "run": "run-001", "path": "/r/console/run-001", "nodes": ["localhost"], "ok": False,
               "refused": False, "purpose": "feature_layer", "stage": "config", "error_class": "config_error",
               "component": "server"}
    rows = _closing.closing_rows(attempts=[attempt], ran=["localhost"])
    assert [_closing.row_cells(r) for r in rows] == [
        ("localhost", "FAILED at long_context", "config", "config_error (server)", "/r/console/run-001")]


def test_every_status_is_of_the_vocabulary_and_controller_errors_are_counted():
    rows = _closing.closing_rows(targets=["a"], fleet=[{"host": "a", "status": "weird", "detail": "?"}],
                                 controller_errors=[{"task": "t1", "msg": "m1"}, {"task": "t2", "msg": "m2"}])
    assert all(r["status"] in _closing.STATUSES for r in rows)
    assert rows[0]["status"] == "failed" and rows[0]["detail"] == "weird: ?"
    assert _closing.row_cells(rows[-1]) == ("controller", "FAILED (+1 more)", "-", "task: t1", "-")
    assert rows[-1]["detail"] == "m1"


def test_table_lines_are_the_consoles_table_and_shown_puts_them_in_msg():
    rows = _closing.closing_rows(targets=["node01", "node02"], fleet=[
        {"host": "node01", "status": "ok"}, {"host": "node02", "status": "ok"}],
        compatibility={"violations": [{"host": "node02", "fact": "gpu_model"}, {"host": None, "fact": "gpu_count"}]},
        records={"node01": "/r/c/run-001", "node02": "/r/c/run-001"})
    lines = _closing.table_lines(rows)
    assert lines[0] == "" and lines[1].split() == ["host", "status", "stage", "error", "class", "record"]
    assert [ln.split()[:2] for ln in lines[2:]] == [["node01", "ok"], ["node02", "VIOLATION"], ["job", "VIOLATION"]]
    assert _closing.table_lines([]) == []
    # any display shows an ok result's console lines and table as its msg (the table only there); a failed result
    # keeps its reason and is shown indented
    ok = _closing.shown({"console": ["record | /r/c/run-001 frozen (ok)"], "closing": lines})
    assert ok["msg"] == ["record | /r/c/run-001 frozen (ok)"] + lines and "closing" not in ok
    assert ok["_ansible_verbose_always"] is True
    failed = _closing.shown({"failed": True, "msg": "the run is frozen, but 1 compatibility violation(s)",
                             "console": ["x"], "closing": lines})
    assert failed["msg"].startswith("the run is frozen") and failed["closing"] == lines
    assert failed["_ansible_verbose_always"] is True
    assert _closing.shown({"changed": False}) == {"changed": False}
