# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The handoff module as Ansible runs it (a process of its own): the records root is its own to resolve - records
when not given, a relative one against the working directory, as a run's open resolves it - and a case that is not
there stops the pack, naming the case and the resolved root."""
from __future__ import annotations

import os

from ansible_collections.repro.vllm.plugins.modules import handoff
from ansible_collections.repro.vllm.tests.unit.plugins.modules import module_process
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import case as copy_case


def test_pack_resolves_the_default_root_against_the_working_directory(tmp_path, monkeypatch):
    work = tmp_path / "work"
    copy_case(work, "cpu-fail")
    monkeypatch.chdir(str(work))
    monkeypatch.setenv("PWD", "/somewhere/else")
    (tmp_path / "args").mkdir()
    res = module_process.run_module(handoff, tmp_path / "args", check_mode=True, case_id="cpu-fail",
                                    stamp="20261201T010101Z")
    assert not res.get("failed"), res
    assert res["package"] == os.path.join(str(work), "records", "cpu-fail", "handoff",
                                          "cpu-fail-handoff-20261201T010101Z.tar.gz")


def test_a_case_that_is_not_there_stops_the_pack_naming_the_resolved_root(tmp_path, monkeypatch):
    monkeypatch.chdir(str(tmp_path))
    res = module_process.run_module(handoff, tmp_path, records_root="rec", case_id="nowhere")
    root = os.path.join(str(tmp_path), "rec")
    assert res["failed"]
    assert res["msg"] == ("No case nowhere under %s: give -e repro_vllm_case_id=<case> and -e "
                          "repro_vllm_records_root=<dir> of an earlier playbooks/reproduce.yml." % root)
