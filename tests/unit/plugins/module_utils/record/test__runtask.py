# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_runtask: the run_record task's spec and dispatch, on real run folders (the action's own tests drive it through
the controller: tests/unit/plugins/action/test_run_record_action.py and test_run_close.py)."""

from __future__ import annotations

import json
import os

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.repro.vllm.plugins.module_utils.record import _record, _runtask


def test_a_run_status_outside_the_vocabulary_is_refused(tmp_path):
    run = _record.create_run(str(tmp_path / "records"), "case1")["path"]
    checked = ArgumentSpecValidator(_runtask.ARGUMENT_SPEC).validate({"state": "freeze", "path": run, "status": "passed"})
    assert "ok, failed, refused, incomplete" in " ".join(checked.error_messages)


def test_close_is_refused_by_the_module_on_a_node():
    out, error = _runtask.run_task({"state": "close", "path": "/x", "kind": "fleet"})
    assert out == {} and error.startswith("state=close runs on the controller only")


def _params(**given):
    """The task's parameters as AnsibleModule hands them over: every option, its default where it has one."""
    checked = ArgumentSpecValidator(_runtask.ARGUMENT_SPEC, required_if=_runtask.REQUIRED_IF,
                                    mutually_exclusive=_runtask.MUTUALLY_EXCLUSIVE).validate(given)
    assert not checked.error_messages, checked.error_messages
    return checked.validated_parameters


def test_create_write_freeze_verify_through_the_task(tmp_path):
    root = str(tmp_path / "records")
    opened, error = _runtask.run_task(_params(state="create", root=root, case_id="c1", hosts=["n1"], purpose="audit",
                                              announce=True, collection_version="9.9.9"))
    assert error is None and opened["run_id"] == "run-001" and opened["hosts"] == ["n1"]
    assert opened["console"] == ["record | audit run run-001 of case c1 for 1 host(s): %s (profile none, not judged; "
                                 "records root %s; repro.vllm 9.9.9)" % (opened["path"], root)]
    wrote, error = _runtask.run_task(_params(state="write", path=opened["path"], part="notes.md", content="x\n"))
    assert error is None and wrote["changed"] and wrote["size"] == 2 and "path" not in wrote
    frozen, error = _runtask.run_task(_params(state="freeze", path=opened["path"], status="ok", verify=True,
                                              parts=[{"part": "fleet.json", "json": {"hosts": []}}]))
    assert error is None and frozen["ok"] and frozen["checked"] == 2
    manifest = frozen["manifest"]
    assert manifest["metadata"]["status"] == "ok" and manifest["metadata"]["hosts"] == ["n1"]
    assert manifest["collection_version"] == "9.9.9" and manifest["run_uid"] == opened["run_uid"]
    with open(os.path.join(opened["path"], "fleet.json"), encoding="utf-8") as f:
        assert json.load(f) == {"hosts": []}
    checked, error = _runtask.run_task(_params(state="verify", path=opened["path"]))
    assert error is None and checked["ok"] and not checked["changed"]


def test_a_changed_frozen_run_fails_verify_unless_told_to_report_only(tmp_path):
    run = _record.create_run(str(tmp_path / "records"), "c1")["path"]
    _record.write_part(run, "notes.md", content="x\n")
    _record.freeze(run, "0.1.0")
    os.chmod(os.path.join(run, "notes.md"), 0o644)
    with open(os.path.join(run, "notes.md"), "w", encoding="utf-8") as f:
        f.write("changed\n")
    out, error = _runtask.run_task(_params(state="verify", path=run))
    assert not out["ok"] and out["mismatched"][0]["path"] == "notes.md" and "changed: notes.md" in error
    out, error = _runtask.run_task(_params(state="verify", path=run, fail_on_mismatch=False))
    assert error is None and not out["ok"]


@pytest.mark.parametrize("kind,hosts,on_hosts", [
    ("fingerprint", None, False), ("attempt", ["n1", "n2"], True), ("summary", None, False)])
def test_the_kind_shapes_the_open(kind, hosts, on_hosts):
    args = {"state": "create", "kind": kind, "targets": "all", "remote_root": "/srv/r", "lease_dir": "/srv/l"}
    if hosts:
        args["hosts"] = hosts
    shaped = _runtask.open_args(args)
    assert shaped["root"] == _record.DEFAULT_ROOT and shaped["purpose"] == kind
    assert shaped["announce"] is _runtask.OPEN_KINDS[kind]["announce"]
    assert ("remote_root" in shaped) is on_hosts and ("lease_dir" in shaped) is on_hosts
    assert shaped.get("nodes") == hosts and ("targets" in shaped) is (kind != "summary")


def test_an_unknown_kind_or_a_given_kind_without_hosts_is_refused():
    with pytest.raises(_record.RecordError, match="not a kind of run"):
        _runtask.open_args({"state": "create", "kind": "nosuch"})
    with pytest.raises(_record.RecordError, match="give hosts"):
        _runtask.open_args({"state": "create", "kind": "collective"})
