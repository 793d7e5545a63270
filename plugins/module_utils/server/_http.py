"""The one fixed client path for requests to a server under test (used by ``api_request``).

Standard library ``urllib`` only. N identical copies of one request are released at the same moment (a
barrier), each timed from just before it is sent until its body is read. A non-2xx answer is data, never an
exception: every outcome becomes a record with status, latency, body (JSON when it parses, bounded) and error.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import hashlib
import json
import os
import socket
import ssl
import threading
import time

from http.client import HTTPException
from urllib.error import HTTPError, URLError
from urllib.request import HTTPSHandler, ProxyHandler, Request, build_opener

DEFAULT_MAX_BODY = 64 * 1024


def make_opener(use_proxy=False, validate_certs=True):
    handlers = []
    if not use_proxy:
        handlers.append(ProxyHandler({}))
    if not validate_certs:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        handlers.append(HTTPSHandler(context=ctx))
    return build_opener(*handlers)


def _read_bounded(resp, max_body):
    data = resp.read(max_body + 1)
    truncated = len(data) > max_body
    if truncated:
        # drain the rest so the latency covers the whole answer, without keeping it
        while resp.read(65536):
            pass
    return data[:max_body], truncated


def decode_body(raw, truncated):
    """Return ``(json or None, text or None)``: parsed JSON when the (complete) body parses, else its text."""
    text = raw.decode("utf-8", "replace")
    if not truncated:
        try:
            return json.loads(text), None
        except ValueError:
            pass
    return None, text


# The answer's headers that say who wrote it (a proxy's Server header and its own text/html error page against the
# server's JSON); nothing else is kept (cookies and the like never enter a record).
ANSWER_HEADERS = ("server", "content-type", "via")


def answer_headers(headers):
    """The ANSWER_HEADERS of an answer, lower-case names; {} when there are none."""
    out = {}
    for name in ANSWER_HEADERS:
        value = headers.get(name) if headers is not None else None
        if value:
            out[name] = str(value)
    return out


def one_request(opener, url, method, data, headers, timeout, max_body, index=0):
    """Send one request; never raises. Returns a record dict."""
    rec = {"index": index, "status": None, "ok": False, "latency_s": None, "body": None, "text": None,
           "bytes": 0, "truncated": False, "error": None, "started_at": None, "headers": {}}
    req = Request(url, data=data, headers=dict(headers or {}), method=method)
    rec["started_at"] = round(time.time(), 6)
    t0 = time.monotonic()
    raw = b""
    try:
        resp = opener.open(req, timeout=timeout)
        try:
            rec["status"] = resp.status if hasattr(resp, "status") else resp.getcode()
            rec["headers"] = answer_headers(resp.headers)
            raw, rec["truncated"] = _read_bounded(resp, max_body)
        finally:
            resp.close()
    except HTTPError as exc:
        rec["status"] = exc.code
        rec["headers"] = answer_headers(exc.headers)
        try:
            raw, rec["truncated"] = _read_bounded(exc, max_body)
        except (OSError, HTTPException):
            raw = b""
        finally:
            exc.close()
    except URLError as exc:
        reason = exc.reason
        if isinstance(reason, socket.timeout) or "timed out" in str(reason):
            rec["error"] = "timed out after %ss" % timeout
        else:
            rec["error"] = "connection error: %s" % (reason,)
    except socket.timeout:
        rec["error"] = "timed out after %ss" % timeout
    except (OSError, HTTPException, ValueError) as exc:
        rec["error"] = "%s: %s" % (type(exc).__name__, exc)
    rec["latency_s"] = round(time.monotonic() - t0, 6)
    rec["bytes"] = len(raw)
    if raw:
        rec["body"], rec["text"] = decode_body(raw, rec["truncated"])
    rec["ok"] = rec["status"] is not None and 200 <= rec["status"] < 300
    return rec


def send_many(url, method="POST", data=None, headers=None, timeout=60.0, concurrency=1, max_body=DEFAULT_MAX_BODY,
              use_proxy=False, validate_certs=True):
    """Send ``concurrency`` identical requests at once (threads + barrier); records ordered by index."""
    opener = make_opener(use_proxy=use_proxy, validate_certs=validate_certs)
    if concurrency <= 1:
        return [one_request(opener, url, method, data, headers, timeout, max_body, 0)]
    records = [None] * concurrency
    barrier = threading.Barrier(concurrency)

    def worker(i):
        try:
            barrier.wait(timeout=30)
        except threading.BrokenBarrierError:
            pass
        records[i] = one_request(opener, url, method, data, headers, timeout, max_body, i)

    threads = [threading.Thread(target=worker, args=(i,), name="api_request-%d" % i) for i in range(concurrency)]
    for t in threads:
        t.daemon = True
        t.start()
    for t in threads:
        t.join(timeout + 60)
    for i, rec in enumerate(records):
        if rec is None:
            records[i] = {"index": i, "status": None, "ok": False, "latency_s": None, "body": None, "text": None,
                          "bytes": 0, "truncated": False, "error": "the request thread did not finish", "started_at": None}
    return records


def body_digest(data):
    return hashlib.sha256(data or b"").hexdigest()


def file_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def read_slice(path, start, end, max_bytes):
    """Bytes ``start``..``end`` of ``path`` (what the server wrote during the request window), bounded.

    When the window is larger than ``max_bytes``, its LAST ``max_bytes`` are kept (the end of a failure holds
    the exception) and ``truncated`` says so. A file that shrank (rotated, truncated) restarts at offset 0.
    """
    out = {"path": path, "start_offset": start, "end_offset": end, "text": "", "truncated": False, "error": None}
    if start is None or end is None:
        out["error"] = "the log file %s could not be read" % path
        return out
    if end < start:
        start = 0
        out["start_offset"] = 0
        out["error"] = "the log file shrank during the request window (rotated or truncated); read from offset 0"
    length = end - start
    if length > max_bytes:
        start = end - max_bytes
        out["truncated"] = True
        length = max_bytes
    try:
        with open(path, "rb") as f:
            f.seek(start)
            out["text"] = f.read(length).decode("utf-8", "replace")
    except (OSError, IOError) as exc:
        out["error"] = "cannot read %s: %s" % (path, exc)
    return out
