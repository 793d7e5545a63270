# -*- coding: utf-8 -*-
"""A cancelled play leaves no server behind, on the REAL CPU vLLM: ansible-playbook gets SIGINT (Ctrl-C, an AWX job
cancel) or SIGKILL while reproduce.yml runs with its server up; no `always:` runs then. The server's supervisor stops
the whole group once the lease runs out, and the next play of the case finds what an earlier play left, stops what
is still there and reports it (a progress line and its first run's server.json)."""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

from conftest import COLLECTIONS, ROOT, free_port

from test_reproduce_localhost import _live_servers

INVENTORY = os.path.join(ROOT, "inventories", "localhost")
LEASE = 20
REQUEST_TIMEOUT = 10


def _start(work, port, case, lease=LEASE):
    extra = {"repro_vllm_records_root": str(work / "records"), "repro_vllm_remote_root": str(work / "remote"),
             "repro_vllm_case_id": case, "repro_vllm_port": port, "repro_vllm_fingerprint": False,
             "repro_vllm_ladder_until": "", "repro_vllm_server_lease": lease,
             "repro_vllm_request_timeout": REQUEST_TIMEOUT}
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
               ANSIBLE_NOCOLOR="1", PYTHONUNBUFFERED="1")
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY,
           os.path.join(ROOT, "playbooks", "reproduce.yml"), "-e", json.dumps(extra)]
    # its own session, like a terminal's foreground job: Ctrl-C reaches ansible-playbook and its workers
    proc = subprocess.Popen(cmd, cwd=str(work), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    lines = queue.Queue()

    def pump():
        for raw in proc.stdout:
            lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return proc, lines


def _wait_for(lines, needle, timeout, seen):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        if line is None:
            break
        seen.append(line)
        if needle in line:
            return line
    raise AssertionError("no line with %r within %ss:\n%s" % (needle, timeout, "\n".join(seen[-40:])))


def _drain(proc, lines, seen, timeout=300):
    proc.wait(timeout=timeout)
    while True:
        line = lines.get(timeout=5)
        if line is None:
            return
        seen.append(line)


def _cancel_with_server_up(work, port, case, sig, lease=LEASE):
    proc, lines = _start(work, port, case, lease)
    seen = []
    try:
        _wait_for(lines, "minimal | server ready", 400, seen)
        os.killpg(proc.pid, sig)
        _drain(proc, lines, seen, timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    # nothing of the play stopped the server: it is still up right after the cancel
    assert _live_servers(port), "\n".join(seen[-30:])
    return seen


def _gone_within(port, seconds):
    deadline = time.monotonic() + seconds
    while _live_servers(port) and time.monotonic() < deadline:
        time.sleep(1)
    return _live_servers(port)


def test_sigint_then_the_lease_stops_the_server(real_vllm, tmp_path):
    port = free_port()
    _cancel_with_server_up(tmp_path, port, "cancel-int", signal.SIGINT)
    # the lease (LEASE s after its last renewal, which adds a request's timeout) runs out, the supervisor stops
    # the API server, the engine core and the worker, without any controller
    assert _gone_within(port, LEASE + REQUEST_TIMEOUT + 40) == []
    # the supervisor writes its record once the stop is complete, so a moment after the last process is gone (on
    # a loaded CI machine that moment was seen to be later than this check)
    deadline = time.monotonic() + 60
    expired = []
    while not expired and time.monotonic() < deadline:
        expired = list((tmp_path / "remote").rglob("vllm_server.state.json.lease-expired"))
        if not expired:
            time.sleep(1)
    assert len(expired) == 1, sorted(str(p) for p in (tmp_path / "remote").rglob("*"))
    record = json.loads(expired[0].read_text())
    assert record["stop"]["remaining"] == [] and len(record["processes"]) >= 2
    assert record["expired_at"] >= record["lease_until"]


def test_sigkill_then_the_next_play_cleans_and_reports(real_vllm, tmp_path):
    port = free_port()
    # a lease longer than this test: the next play, not the lease, is what stops the server here
    seen = _cancel_with_server_up(tmp_path, port, "cancel-kill", signal.SIGKILL, lease=600)
    left_run = [line for line in seen if "minimal | server ready" in line][0].split(" | ")[2].split()[0]
    # the next play of the case, before the lease ran out: it stops what is left and says so
    proc, lines = _start(tmp_path, port, "cancel-kill")
    out = []
    _drain(proc, lines, out, timeout=600)
    text = "\n".join(out)
    assert proc.returncode == 0, text
    cleaned = [line for line in out if "| cleaned: server of %s" % left_run in line]
    assert cleaned and "stopped now:" in cleaned[0], text
    assert _live_servers(port) == []
    # the next play's attempt (its summary run, made last, holds no server)
    runs = sorted((p for p in (tmp_path / "records" / "cancel-kill").iterdir()
                   if p.name.startswith("run-") and (p / "hosts" / "localhost" / "server.json").is_file()),
                  key=lambda p: int(p.name[4:]))
    server = json.loads((runs[-1] / "hosts" / "localhost" / "server.json").read_text())
    left = server["leftovers_cleaned"]
    assert [item["run"] for item in left] == [left_run] and left[0]["outcome"] == "stopped"
    assert len(left[0]["stopped_now"]) >= 2 and left[0]["remaining_pids"] == []
    # the earlier run's state is gone from the node, its log stays
    assert not (tmp_path / "remote" / "cancel-kill" / ".state" / left_run / "localhost").exists()
    assert (tmp_path / "remote" / "cancel-kill" / left_run / "hosts" / "localhost" / "logs" / "server.log").exists()
