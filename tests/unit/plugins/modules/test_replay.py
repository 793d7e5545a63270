# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The replay module as Ansible runs it (a process of its own): the records root is its own to resolve - records
when not given, a relative one against the working directory, as a run's open resolves it."""
from __future__ import annotations

import os

from ansible_collections.repro.vllm.plugins.modules import replay
from ansible_collections.repro.vllm.plugins.module_utils.handoff import _handoff
from ansible_collections.repro.vllm.tests.unit.plugins.modules import module_process
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import case as copy_case


def test_the_check_resolves_the_default_root_and_the_unpack_uses_it(tmp_path, monkeypatch):
    case_dir = copy_case(tmp_path / "sender", "cpu-fail")
    pkg = _handoff.build_package(os.path.dirname(case_dir), "cpu-fail", stamp="20261201T010101Z")["path"]
    work = tmp_path / "receiver"
    work.mkdir()
    monkeypatch.chdir(str(work))
    monkeypatch.setenv("PWD", "/somewhere/else")
    (tmp_path / "args").mkdir()
    res = module_process.run_module(replay, tmp_path / "args", package=pkg, state="checked", stamp="20261201T020202Z")
    root = os.path.join(str(work), "records")
    assert not res.get("failed"), res
    assert res["records_root"] == root
    assert res["case_dir"] == os.path.join(root, "cpu-fail-replay-20261201T020202Z")
    assert os.listdir(str(work)) == []  # checked: nothing unpacked
    done = module_process.run_module(replay, tmp_path / "args", package=pkg, records_root=res["records_root"],
                                     stamp=res["stamp"])
    assert done["case_dir"] == res["case_dir"] and os.path.isdir(done["case_dir"])


def test_the_verdict_state_runs_as_a_module_and_refuses_what_no_unpack_returned(tmp_path):
    case_dir = copy_case(tmp_path / "sender", "cpu-fail")
    pkg = _handoff.build_package(os.path.dirname(case_dir), "cpu-fail", stamp="20261201T010101Z")["path"]
    (tmp_path / "args").mkdir()
    unpacked = module_process.run_module(replay, tmp_path / "args", package=pkg, records_root=str(tmp_path / "r"))
    here = {"run": "run-009", "ok": False, "stage": "config", "error_class": "config_error", "first_error": None}
    res = module_process.run_module(replay, tmp_path / "args", state="judged", unpacked=unpacked, replayed=here,
                                    case_id=unpacked["case_id"])
    assert not res.get("failed"), res
    assert res["replay"]["verdict"] == "reproduced" and res["changed"] is False
    assert res["line"].startswith("replay | case %s | reproduced | " % unpacked["case_id"])
    nothing = module_process.run_module(replay, tmp_path / "args", check_mode=True, state="judged", unpacked=unpacked,
                                        replayed=None, case_id=unpacked["case_id"])
    assert nothing["replay"] is None and nothing["classification"] is None
    bad = module_process.run_module(replay, tmp_path / "args", state="judged", unpacked={"case_id": "x"})
    assert bad["failed"] and "has no attempt" in bad["msg"]
    assert module_process.run_module(replay, tmp_path / "args", state="checked")["failed"]  # no package
