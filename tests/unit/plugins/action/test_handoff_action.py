# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The handoff and replay actions resolve the records root in the controller's process, as run_record's open does:
a module on the local connection runs in the playbook's folder, so a relative root resolved there would be another."""
from __future__ import annotations

import os
import types

from ansible_collections.repro.vllm.plugins.action import handoff, replay


def _action(cls, args, transport="local"):
    act = cls.ActionModule.__new__(cls.ActionModule)
    act._task = types.SimpleNamespace(args=dict(args))
    act._connection = types.SimpleNamespace(transport=transport)
    return act


def test_the_root_is_resolved_against_the_controllers_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(str(tmp_path))
    monkeypatch.setenv("PWD", "/somewhere/else")
    for cls in (handoff, replay):
        assert _action(cls, {}).records_root() == os.path.join(str(tmp_path), "records")
        assert _action(cls, {"records_root": ""}).records_root() == os.path.join(str(tmp_path), "records")
        assert _action(cls, {"records_root": "out/rec"}).records_root() == os.path.join(str(tmp_path), "out", "rec")
        assert _action(cls, {"records_root": "/srv/records/"}).records_root() == "/srv/records"
        # another machine's path is that machine's to resolve (the module does, with the same function)
        assert _action(cls, {"records_root": "rel"}, transport="ssh").records_root() == "rel"
        assert _action(cls, {}, transport="ssh").records_root() == "records"
