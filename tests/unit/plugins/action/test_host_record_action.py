# -*- coding: utf-8 -*-
"""Controller-side decisions of the host_record action that need no connection: the secret scan refuses a part
that still holds a secret shape (naming file, line and kind, never the value), and a clean part passes."""
from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.action import host_record as action
from ansible_collections.repro.vllm.plugins.module_utils import _redact

FAKE = "hf_" + "FAKE" * 9  # obviously fake


def _bare():
    return action.ActionModule.__new__(action.ActionModule)


def test_the_scan_is_the_redactors_own(monkeypatch):
    seen = []
    monkeypatch.setattr(_redact, "scan_secrets", lambda text: seen.append(text) or [(7, "probe")])
    with pytest.raises(action._PartRefused) as err:
        _bare()._scan({"host": "node01"}, {"a.log": b"anything\n"})
    assert seen == ["anything\n"] and "a.log (lines 7: probe)" in str(err.value)


def test_part_with_a_secret_shape_is_refused_without_the_value():
    parts = {"logs/server.log": b"ok line\nexport HF_TOKEN=%s\n" % FAKE.encode(), "command.json": b"{}\n"}
    with pytest.raises(action._PartRefused) as err:
        _bare()._scan({"host": "node01"}, parts)
    text = str(err.value)
    assert "logs/server.log (lines 2:" in text and FAKE not in text and "command.json" not in text


def test_clean_part_passes_the_scan():
    parts = {"fingerprint.json": b'{"driver": "580.159.04"}\n',
             "env.json": _redact.redact_text("HF_TOKEN=%s\n" % FAKE).encode()}
    _bare()._scan({"host": "node01"}, parts)
