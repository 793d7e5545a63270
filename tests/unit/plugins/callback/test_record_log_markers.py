# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""terminal.log gets the case's keyed markers (docs/handoff.md): the record_log callback redacts with the key of the
run's case, lines from before the run was opened included; the filter ``redact(case_dir=...)`` gives the same
markers without the key ever being a variable."""
from __future__ import annotations

import os
import re

from ansible_collections.repro.vllm.plugins.callback.record_log import CallbackModule
from ansible_collections.repro.vllm.plugins.filter.redact import redact
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import load_case_key, redact_text

FAKE_HF = "hf_" + "FAKE" * 8


def test_terminal_log_has_the_case_keyed_marker(tmp_path):
    run = tmp_path / "records" / "case-a" / "run-001"
    run.mkdir(parents=True)
    cb = CallbackModule()
    cb._line("TASK [before the run is open] HF_TOKEN=%s" % FAKE_HF)
    cb._open(str(run))
    cb._line("TASK [after] --hf-token %s" % FAKE_HF)
    cb._close("test")
    text = (run / "terminal.log").read_text()
    key = load_case_key(str(run.parent))
    want = redact_text(FAKE_HF, key=key)
    assert re.match(r"^<redacted:hf_token:[0-9a-f]{8}>$", want)
    assert FAKE_HF not in text and text.count(want) == 2
    # the filter with case_dir: the same marker, from the same key file
    assert redact(["--hf-token", FAKE_HF], case_dir=str(run.parent))[1] == want
    assert oct(os.stat(str(run.parent / ".redact.key")).st_mode & 0o777) == "0o600"
