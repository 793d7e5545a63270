"""The byte scanner of the log_stage classifier: which lines of a file the scan (``_logstage._Scan``) parses.

A file is read once, in binary blocks (:data:`BLOCK_SIZE`); memory holds one block and the unfinished line carried
into the next, never the log.  Outside an open traceback a prefilter skips the lines that cannot matter: only a
line holding one of the anchors (:data:`STATIC_ANCHORS`, plus :data:`MARK_ANCHORS` of stages not yet seen) is
decoded and handed to ``scan.segment``; on a long region all anchors are searched at once (``_CombinedFinds``),
else one substring search per anchor, in C.  Inside an open traceback, and in a log small enough to be a paste
(``scan.full``), every line is handed on.  The first and last timestamps of the file are read from the bytes, also
where the prefilter skipped them.

Standard library only; imports on Python 3.9.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import re

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_parse import TS_BYTES_RX, last_ts, match_tkey

BLOCK_SIZE = 8 * 1024 * 1024        # bytes read at once
MAX_SEGMENT = 64 * 1024             # a longer line is cut into pieces of this size

# prefilter: a line is parsed only when it contains one of these (or a marker anchor still needed)
# (vLLM and torch logger lines carry ".py:", C++ c10 lines ".cpp:", NCCL errors "WARN", Python tracebacks start
# with "Traceback", raw error prints say "error"/"Error"; every pass over a block costs, so the list is short)
STATIC_ANCHORS = (b".py:", b"Traceback", b"rror", b"WARN", b".cpp:", b"fault", b"\x1b", b" - Init ",
                  b"Destroy COMPLETE")
MARK_ANCHORS = {
    "distributed_init": (b"NCCL INFO", b"[Gloo]"),
    "weight_loading": (b"shards", b"Loading safetensors"),
    "engine_init": (b"Capturing",),
    "api_ready": (b"INFO:    ",),
    "request": (b"INFO:    ",),
}


def _ts_text(match):
    """A timestamp found by the byte scanner, as printed (without a glog level letter)."""
    txt = match.group(0).decode("ascii", "replace").strip()
    if txt[:1] in "IWEF" and txt[1:2].isdigit():
        txt = txt[1:]
    return txt.rstrip(".")


def scan_stream(scan, read):
    """Feed ``scan`` from ``read(n) -> bytes`` in blocks; memory stays at about two blocks.

    A block is processed up to its last line end; the unfinished line is carried into the next block and
    processed on its own, so a block is never copied.
    """
    carry = b""
    head = None
    tail = b""
    abs_off = 0

    def feed(buf, end, start=0):
        """Scan ``buf[start:end]``; keep the file's first and last 64 KiB (for timestamps) and the file offset."""
        nonlocal head, tail, abs_off
        if head is None:
            head = buf[start:start + 65536]
            scan.sniff(head)
        scan._abs = abs_off - start
        _scan_block(scan, buf, end, start)
        tail = (tail + buf[max(start, end - 65536):end])[-65536:]
        abs_off += end - start

    while True:
        data = read(BLOCK_SIZE)
        if not data:
            break
        start = 0
        if carry:
            e_n = data.find(b"\n")
            e_r = data.find(b"\r")
            e = min(x for x in (e_n, e_r, len(data) - 1) if x >= 0)
            if e_n < 0 and e_r < 0 and len(carry) + len(data) < MAX_SEGMENT * 4:
                carry += data
                continue
            piece = carry + data[:e + 1]
            feed(piece, len(piece))
            carry = b""
            start = e + 1
        end = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        if end <= start:
            if len(data) - start < MAX_SEGMENT * 4:
                carry = data[start:]
                continue
            end = len(data)
        feed(data, end, start)
        carry = data[end:]
    if carry:
        feed(carry, len(carry))
    scan._buf = None
    scan.finish()
    # lines in the file: line ends, plus an unterminated last line
    scan.lines = scan.lineno - 1 if (not tail or tail[-1:] == b"\n") else scan.lineno
    if scan.first_ts is None and head:
        m = TS_BYTES_RX.search(head)
        if m is not None:
            scan.first_ts = _ts_text(m)
    # the last timestamp of the file, also when the last lines were skipped by the prefilter
    tail_start = abs_off - len(tail)
    last = last_ts(tail, max(0, scan._slow_abs - tail_start))
    if last is not None:
        scan.last_ts = _ts_text(last)
    if scan.untimed:
        # no timestamped line was parsed after them (the prefilter skipped it): the file's last one bounds them
        key = match_tkey(last_ts(tail))
        if key is not None:
            scan._bound_untimed(key + scan.year_off)


def _scan_block(scan, buf, end, pos=0):
    scan._buf = buf
    scan._slow_end = pos
    anchors = None
    finder = None
    count = buf.count
    while pos < end:
        if scan.streams or scan.full:
            pos = _one_segment(scan, buf, pos, end)
            continue
        cur = scan.anchors()
        if cur is not anchors:
            anchors = cur
            finder = None                # free the previous translated copy first
            finder = _finder(buf, pos, end, anchors)
        start = finder.next_line(pos)
        if start < 0:
            scan.lineno += count(b"\n", pos, end)
            pos = end
            break
        scan.lineno += count(b"\n", pos, start)
        pos = _one_segment(scan, buf, start, end)


# The prefilter's question, for ``pos``: where does the segment start (after the last line end or carriage
# return before it, not before ``pos``) that holds the first anchor occurrence at or after ``pos``?  Two
# finders give the same answer: one substring search per anchor (cheap on a short region), or, on a long
# region, one search of all anchors at once (below), whose hits are checked against the anchors themselves.

_COMBINED_MIN = 512 * 1024       # a region at least this long gets the combined search
_SAMPLE = 16 * 1024              # bytes of each of the three samples that pick the key bytes
_KEY_SHARE_MAX = 0.2             # key bytes above this share of the sample: one search per anchor instead
_REJECT_MAX = 2048               # segments the combined search hit without an anchor, then one search per anchor
_RX_CACHE = {}


class _AnchorFinds(object):
    """One ``bytes.find`` per anchor; each anchor's next occurrence is kept until ``pos`` passes it."""

    __slots__ = ("buf", "end", "anchors", "nexts")

    def __init__(self, buf, pos, end, anchors):
        self.buf = buf
        self.end = end
        self.anchors = anchors
        self.nexts = [buf.find(a, pos, end) for a in anchors]

    def first(self, pos):
        """The first anchor occurrence at or after ``pos`` (-1: none)."""
        best = -1
        nexts = self.nexts
        for i, n in enumerate(nexts):
            if 0 <= n < pos:
                n = self.buf.find(self.anchors[i], pos, self.end)
                nexts[i] = n
            if n >= 0 and (best < 0 or n < best):
                best = n
        return best

    def next_line(self, pos):
        best = self.first(pos)
        if best < 0:
            return -1
        buf = self.buf
        start = max(buf.rfind(b"\n", pos, best), buf.rfind(b"\r", pos, best)) + 1
        return start if start > pos else pos


class _CombinedFinds(object):
    """All anchors in one pass.  Each anchor is searched from one of its bytes on (``key``: the one rarest in a
    sample of the region, at least three bytes before the anchor's end); the block is translated once so that
    every key byte reads as ``\\x01``, which gives the compiled alternation of those suffixes one literal first
    byte to look for (the regex engine's fast path).  A hit is a candidate only (a key byte stands for all of
    them), so its segment is searched for the anchors themselves; a segment without one is skipped whole.
    One-byte anchors are searched on their own."""

    __slots__ = ("buf", "end", "tb", "rx", "exact", "single", "rejected", "fallback", "anchors")

    def __init__(self, buf, pos, end, anchors, table, rx, exact, single):
        self.buf = buf
        self.end = end
        self.anchors = anchors
        self.tb = buf.translate(table)
        self.rx = rx
        self.exact = exact
        self.single = _AnchorFinds(buf, pos, end, single) if single else None
        self.rejected = 0
        self.fallback = None

    def next_line(self, pos):
        if self.fallback is not None:
            return self.fallback.next_line(pos)
        buf = self.buf
        end = self.end
        look = pos
        while True:
            m = self.rx.search(self.tb, look, end)
            cand = m.start() if m is not None else -1
            if self.single is not None:
                n = self.single.first(look)
                if n >= 0 and (cand < 0 or n < cand):
                    cand = n
            if cand < 0:
                return -1
            # the segment around the candidate (each search bounded by the line, never to the block's end)
            start = buf.rfind(b"\n", look, cand) + 1
            if start < look:
                start = look
            start = buf.rfind(b"\r", start, cand) + 1 or start
            stop = buf.find(b"\n", cand, end)
            if stop < 0:
                stop = end
            e_r = buf.find(b"\r", cand, stop)
            if e_r >= 0:
                stop = e_r
            if self.exact.search(buf, start, stop) is not None:
                return start
            # no anchor in this segment (and none before it, or the search would have hit earlier)
            if stop >= end:
                return -1
            self.rejected += 1
            if self.rejected > _REJECT_MAX:
                self.tb = None
                self.fallback = _AnchorFinds(buf, stop, end, self.anchors)
                return self.fallback.next_line(pos)
            look = stop


def _compiled(key, pattern):
    rx = _RX_CACHE.get(key)
    if rx is None:
        if len(_RX_CACHE) > 64:
            _RX_CACHE.clear()
        rx = _RX_CACHE[key] = re.compile(pattern)
    return rx


def _finder(buf, pos, end, anchors):
    """The finder for ``anchors`` over ``buf[pos:end]``."""
    size = end - pos
    if size < _COMBINED_MIN:
        return _AnchorFinds(buf, pos, end, anchors)
    step = max(0, (size - _SAMPLE) // 2)
    sample = b"".join(buf[pos + i * step:pos + i * step + _SAMPLE] for i in range(3))
    counts = {}
    keys = set()
    suffixes = []
    single = []
    for a in anchors:
        if len(a) < 2:
            single.append(a)
            continue
        for c in a:
            if c not in counts:
                counts[c] = sample.count(bytes((c,)))
        k = min(range(len(a) - min(3, len(a)) + 1), key=lambda i: (counts[a[i]], i))
        keys.add(a[k])
        suffixes.append(a[k:])
    if not suffixes or sum(counts[c] for c in keys) > _KEY_SHARE_MAX * len(sample):
        return _AnchorFinds(buf, pos, end, anchors)
    table = bytearray(range(256))
    table[1] = 2
    for c in keys:
        table[c] = 1
    table = bytes(table)
    alts = tuple(sorted(set(s.translate(table) for s in suffixes)))
    rx = _compiled(alts, b"|".join(re.escape(s) for s in alts))
    exact = _compiled(anchors, b"|".join(re.escape(a) for a in anchors))
    return _CombinedFinds(buf, pos, end, anchors, table, rx, exact, tuple(single))


def _one_segment(scan, buf, pos, end):
    """Process the segment that starts at ``pos``; return the position after its terminator."""
    e_n = buf.find(b"\n", pos, end)
    e_r = buf.find(b"\r", pos, end)
    if e_n < 0:
        e = e_r if e_r >= 0 else end
    elif e_r < 0:
        e = e_n
    else:
        e = min(e_n, e_r)
    if e - pos > MAX_SEGMENT:
        e = pos + MAX_SEGMENT
        nxt = e
        newline = False
    elif e < end and buf[e:e + 1] == b"\r" and buf[e + 1:e + 2] == b"\n":
        nxt = e + 2
        newline = True
    elif e < end:
        nxt = e + 1
        newline = buf[e:e + 1] == b"\n"
    else:
        nxt = end
        newline = False
    seg = buf[pos:e]
    if seg or newline:
        scan._buf_pos = pos
        scan.segment(seg, scan.lineno)
        scan._slow_end = nxt
        scan._slow_abs = scan._abs + nxt
    if newline:
        scan.lineno += 1
    return nxt
