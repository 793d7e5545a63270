# -*- coding: utf-8 -*-
"""A cancelled play leaves no server behind, on the REAL CPU vLLM: ansible-playbook gets SIGINT (Ctrl-C, an AWX job
cancel) or SIGKILL while reproduce.yml runs with its server up; no `always:` runs then. The server's supervisor stops
the whole group once the lease runs out, and the next play of the case finds what an earlier play left, stops what
is still there and reports it (a progress line and its first run's server.json)."""
from __future__ import annotations

import json
import os
import queue
import shutil
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


def _start(work, port, case, lease=LEASE, stdout_callback=None, **more):
    """reproduce.yml on the localhost inventory in its own session; ``more``: further extra variables.
    ``stdout_callback``: another than ansible.cfg's console (AWX replaces it with its own display callback; the
    project's ansible.cfg still enables record_log, docs/awx.md)."""
    extra = {"repro_vllm_records_root": str(work / "records"), "repro_vllm_remote_root": str(work / "remote"),
             "repro_vllm_case_id": case, "repro_vllm_port": port, "repro_vllm_fingerprint": False,
             "repro_vllm_ladder_until": "", "repro_vllm_server_lease": lease,
             "repro_vllm_request_timeout": REQUEST_TIMEOUT}
    extra.update(more)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
               ANSIBLE_NOCOLOR="1", PYTHONUNBUFFERED="1")
    if stdout_callback:
        env["ANSIBLE_STDOUT_CALLBACK"] = stdout_callback
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


def _cancel_with_server_up(work, port, case, sig, lease=LEASE, heartbeat_too=False):
    """``sig`` to the play's process group once its server is ready; ``heartbeat_too``: SIGKILL to the server's
    controller heartbeat as well (its own session): the controller is lost as a whole, as with a lost AWX node."""
    proc, lines = _start(work, port, case, lease)
    seen = []
    try:
        _wait_for(lines, "minimal | server ready", 400, seen)
        beats = _heartbeats_of(proc.pid)
        assert len(beats) == 1, beats
        if heartbeat_too:
            os.kill(beats[0]["pid"], signal.SIGKILL)
            # a lost node takes its temporary files with it; the test leaves none behind on this machine
            shutil.rmtree("/tmp/repro-vllm-heartbeat-%d-%d" % (os.getuid(), proc.pid), ignore_errors=True)
        os.killpg(proc.pid, sig)
        # the server is up right after the kill; that nothing of the controller stopped it afterwards is shown by
        # the supervisor's lease-expired record (it found the processes and stopped them) or by the next play
        assert _live_servers(port), "\n".join(seen[-30:])
        try:
            _drain(proc, lines, seen, timeout=90)
        except subprocess.TimeoutExpired:
            raise AssertionError("ansible-playbook still ran 90 s after %s:\n%s" % (sig, "\n".join(seen[-40:])))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    return seen


def _heartbeats_of(pid):
    """The heartbeat daemons the play with main process ``pid`` started (plugin_utils/server/_heartbeat.py registry)."""
    folder = "/tmp/repro-vllm-heartbeat-%d-%d" % (os.getuid(), pid)
    found = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as fh:
                found.append(json.load(fh))
    return found


def _expired_records(work, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        expired = list((work / "remote").rglob("vllm_server.state.json.lease-expired"))
        if expired or time.monotonic() >= deadline:
            return [json.loads(p.read_text()) for p in expired]
        time.sleep(1)


def _interrupt_with_server_up(work, port, case, sig, stdout_callback=None, lease=8):
    """``sig`` to the play's process group once its minimal server is ready; the play must have stopped the server
    before it ended. ``lease`` is shorter than the CPU server's start: only the controller's heartbeat kept it."""
    proc, lines = _start(work, port, case, lease, stdout_callback=stdout_callback)
    seen = []
    try:
        _wait_for(lines, "minimal | server ready", 400, seen)
        beats = _heartbeats_of(proc.pid)
        assert _live_servers(port), "\n".join(seen[-30:])
        os.killpg(proc.pid, sig)
        try:
            _drain(proc, lines, seen, timeout=90)
        except subprocess.TimeoutExpired:
            raise AssertionError("ansible-playbook still ran 90 s after %s:\n%s" % (sig, "\n".join(seen[-40:])))
        # the moment the play has ended: no process of its server is left
        left = _live_servers(port)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert left == [], "\n".join(seen[-40:])
    assert proc.returncode != 0 and len(beats) == 1, beats
    return seen, beats


def test_sigint_without_the_console_stops_the_server_before_the_play_ends(real_vllm, tmp_path):
    """AWX's case: its own display callback instead of repro.vllm.console (ansible.builtin.default here), the
    project's ansible.cfg enabling record_log. Seen before: 'User interrupted execution' and the server running on
    with 600 s left on its lease."""
    port = free_port()
    seen, _unused = _interrupt_with_server_up(tmp_path, port, "int-awx", signal.SIGINT,
                                              stdout_callback="ansible.builtin.default")
    text = "\n".join(seen)
    assert "User interrupted execution" in text
    line = [x for x in seen if x.startswith("interrupt | localhost | ")]
    assert line and "server stopped before the play ended" in line[0], text[-3000:]
    # the supervisor stopped it because the heartbeat ended its lease, and says why
    records = _expired_records(tmp_path)
    assert len(records) == 1 and records[0]["reason"].startswith("the play was interrupted (SIGINT")
    assert records[0]["heartbeat_at"] is not None and records[0]["stop"]["remaining"] == []
    # the server started although its start took longer than its 8 s lease: the heartbeat renewed it meanwhile
    server = json.loads(next((tmp_path / "remote").rglob("vllm_server.state.json")).read_text())
    assert server["time_to_ready_s"] > 8, server["time_to_ready_s"]
    # the play noted the interrupt in its open run; stop.yml, the next play that reaches the host, brings the host's
    # files into it, says which came after the interrupt and how the server ended, seals it and cleans the host
    case_dir = tmp_path / "records" / "int-awx"
    run = [p for p in case_dir.iterdir() if (p / "open.json").is_file()]
    assert len(run) == 1 and json.loads((run[0] / "interrupted.json").read_text())["signal"] == "SIGINT"
    uid = json.loads((run[0] / "open.json").read_text())["run_uid"]
    stop = _play(tmp_path, "stop.yml", {"repro_vllm_records_root": str(tmp_path / "records"),
                                        "repro_vllm_remote_root": str(tmp_path / "remote")})
    out = stop.stdout.decode()
    assert stop.returncode == 0, out
    line = [x for x in out.splitlines() if x.startswith("stop | localhost | int-awx/%s" % run[0].name)]
    assert line, out
    server_words = line[0].split(" | server: ")[1]
    if "its supervisor had stopped it at" in server_words:
        assert "(the play was interrupted (SIGINT" in server_words, line[0]
    else:
        # the lease folder is host-wide: another play on this host (a parallel test's attempt) may have swept the
        # expired entry first; the line then names the supervisor's record, which the run must hold with the reason
        assert server_words.startswith("not live: stopped before this play when its lease ended (the reason is in "
                                       "state/vllm_server.state.json.lease-expired)"), line[0]
        record = json.loads((run[0] / "hosts" / "localhost" / "state" / "vllm_server.state.json.lease-expired")
                            .read_text())
        assert record["reason"].startswith("the play was interrupted (SIGINT"), record
    marker = "; changed after the last write of the play (the interrupt): "
    brought, after = line[0].split("brought into the run: ")[1].split(marker)
    assert {"logs/server.log", "memory.jsonl", "state/vllm_server.state.json"} <= set(brought.split(", ")), line[0]
    assert "state/vllm_server.state.json.lease-expired" in after.split(", "), line[0]
    assert "stop | controller | sealed int-awx/%s as incomplete (interrupted)" % run[0].name in out
    manifest = json.loads((run[0] / "manifest.json").read_text())
    names = [f["path"] for f in manifest["files"]]
    assert {"hosts/localhost/logs/server.log", "hosts/localhost/memory.jsonl", "hosts/localhost/salvage.json",
            "interrupted.json"} <= set(names), names
    assert manifest["metadata"]["status"] == "incomplete" and manifest["metadata"]["sealed_by"] == {"play": "stop"}
    salvage = json.loads((run[0] / "hosts" / "localhost" / "salvage.json").read_text())
    assert "state/vllm_server.state.json.lease-expired" in salvage["after_interrupt"]
    # nothing of the run is left on the host, and its lease is released
    assert not (tmp_path / "remote" / "runs" / uid).exists()
    assert not os.path.exists("/var/tmp/repro-vllm/.leases/%s.json" % uid)


def test_sigterm_with_the_console_stops_the_server_before_the_play_ends(real_vllm, tmp_path):
    port = free_port()
    seen, _unused = _interrupt_with_server_up(tmp_path, port, "term-console", signal.SIGTERM)
    line = [x for x in seen if x.startswith("interrupt | localhost | ")]
    assert line and "server stopped before the play ended" in line[0], "\n".join(seen[-30:])
    records = _expired_records(tmp_path)
    assert len(records) == 1 and records[0]["reason"] == "the play was terminated (SIGTERM)"


def test_sigkill_to_the_play_alone_its_heartbeat_stops_the_server(real_vllm, tmp_path):
    """No callback runs on SIGKILL (nor without record_log and the console): the heartbeat sees the play's process
    gone and stops the server at once, not after its lease."""
    port = free_port()
    proc, lines = _start(tmp_path, port, "kill-play", lease=600)
    seen = []
    try:
        _wait_for(lines, "minimal | server ready", 400, seen)
        beats = _heartbeats_of(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert len(beats) == 1
    # the stop grace (15 s) and the heartbeat's poll, far below the 600 s lease
    assert _gone_within(port, 40) == [], _diagnose(tmp_path, port)
    records = _expired_records(tmp_path)
    assert len(records) == 1 and records[0]["reason"] == "the play's controller process %d is gone" % proc.pid
    # stop.yml finishes the killed run: its host files in, the run sealed, its lease entry released
    stop = _play(tmp_path, "stop.yml", {"repro_vllm_records_root": str(tmp_path / "records"),
                                        "repro_vllm_remote_root": str(tmp_path / "remote")})
    out = stop.stdout.decode()
    assert stop.returncode == 0 and "stop | controller | sealed kill-play/run-001 as incomplete" in out, out
    # how it was stopped: the sweep's line when its lease entry is still there, else the supervisor's record (the
    # heartbeat releases the entry once the server is down; which comes first depends on the machine's load)
    assert ("(the play's controller process %d is gone)" % proc.pid in out
            or "not live: stopped before this play when its lease ended (the reason is in "
               "state/vllm_server.state.json.lease-expired)" in out), out
    sealed = tmp_path / "records" / "kill-play" / "run-001" / "hosts" / "localhost" / "state"
    assert json.loads((sealed / "vllm_server.state.json.lease-expired").read_text())["reason"] == (
        "the play's controller process %d is gone" % proc.pid)
    manifest = json.loads((tmp_path / "records" / "kill-play" / "run-001" / "manifest.json").read_text())
    assert "hosts/localhost/logs/server.log" in [f["path"] for f in manifest["files"]]
    assert not os.path.exists("/var/tmp/repro-vllm/.leases/%s.json" % manifest["run_uid"])


def _diagnose(work, port):
    """What a failure needs to be explained: the host's lease entries of this port, the run's state files and
    supervisor records, and whether each supervisor still lives."""
    out = []
    lease_dir = "/var/tmp/repro-vllm/.leases"
    for name in sorted(os.listdir(lease_dir)) if os.path.isdir(lease_dir) else []:
        path = os.path.join(lease_dir, name)
        try:
            with open(path) as fh:
                text = fh.read()
        except OSError:
            continue
        if '"port": %d' % port in text:
            out.append("lease %s: %s" % (path, text))
    for state in sorted((work / "remote").rglob("vllm_server.state.json*")):
        text = state.read_text()
        out.append("%s: %s" % (state, text[:3000]))
        if state.name == "vllm_server.state.json":
            sup = json.loads(text).get("supervisor_pid")
            out.append("supervisor %s alive: %s" % (sup, bool(sup) and os.path.exists("/proc/%d" % sup)))
    return "\n".join(out)


def _gone_within(port, seconds):
    deadline = time.monotonic() + seconds
    while _live_servers(port) and time.monotonic() < deadline:
        time.sleep(1)
    return _live_servers(port)


def test_a_lost_controller_leaves_the_server_to_its_short_lease(real_vllm, tmp_path):
    """The play and its heartbeat are gone at once (SIGKILL to both: a lost AWX node): nothing on the controller
    stops the server, its lease (LEASE s after its last beat) runs out and the supervisor stops the API server, the
    engine core and the worker, without any controller."""
    port = free_port()
    _cancel_with_server_up(tmp_path, port, "cancel-int", signal.SIGKILL, heartbeat_too=True)
    assert _gone_within(port, LEASE + REQUEST_TIMEOUT + 40) == []
    # the supervisor writes its record once the stop is complete, so a moment after the last process is gone
    expired = _expired_records(tmp_path)
    assert len(expired) == 1, sorted(str(p) for p in (tmp_path / "remote").rglob("*"))
    record = expired[0]
    assert record["stop"]["remaining"] == [] and len(record["processes"]) >= 2
    assert record["expired_at"] >= record["lease_until"] and record["reason"] == "nobody renewed the lease"
    # the last renewal was the heartbeat's (the start's lease alone would have been LEASE s from the start)
    assert record["heartbeat_at"] is not None
    # the interrupted run is still open (nothing sealed it yet): the hand-off seals it, since its play is gone, and
    # packs the case naming it
    interrupted = [p for p in (tmp_path / "records" / "cancel-int").iterdir() if (p / "open.json").is_file()]
    assert len(interrupted) == 1, sorted(p.name for p in (tmp_path / "records" / "cancel-int").iterdir())
    hand = _play(tmp_path, "handoff.yml", {"repro_vllm_records_root": str(tmp_path / "records"),
                                           "repro_vllm_case_id": "cancel-int"})
    assert hand.returncode == 0, hand.stdout.decode()
    sealed = json.loads((interrupted[0] / "manifest.json").read_text())["metadata"]
    assert sealed["status"] == "incomplete" and sealed["seal_reason"] == "interrupted"
    assert sealed["sealed_by"] == {"play": "handoff"} and sealed["sealed_because"] == "its play's process is gone"
    # the hand-off says the run's host files were never fetched, where they are and how to get them
    never = [x for x in hand.stdout.decode().splitlines() if "host files never fetched: %s" % interrupted[0].name in x]
    assert never and "localhost" in never[0] and "stop.yml" in never[0], hand.stdout.decode()[-3000:]
    # sealed without its host's files: prune never removes their only copy unless the run is named
    uid = json.loads((interrupted[0] / "manifest.json").read_text())["run_uid"]
    host_dir = tmp_path / "remote" / "runs" / uid
    assert (host_dir / "hosts" / "localhost" / "logs" / "server.log").is_file()
    extra = {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_remote_root": str(tmp_path / "remote"),
             "repro_vllm_prune_older_than": 0}
    prune = _play(tmp_path, "prune.yml", extra)
    text = prune.stdout.decode()
    assert prune.returncode == 0 and host_dir.is_dir(), text
    kept = [x for x in text.splitlines() if x.startswith("prune | localhost | kept %s" % host_dir)]
    assert kept and "no files of localhost" in kept[0] and "hosts/localhost/logs/server.log" in kept[0], text
    assert "hosts/localhost/logs/memory.jsonl" in kept[0] and uid in kept[0]
    prune = _play(tmp_path, "prune.yml", dict(extra, repro_vllm_prune_without_host_files=[uid]))
    assert prune.returncode == 0 and not host_dir.exists(), prune.stdout.decode()


def _play(work, playbook, extra, timeout=300):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
               ANSIBLE_NOCOLOR="1")
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY,
           os.path.join(ROOT, "playbooks", playbook), "-e", json.dumps(extra)]
    return subprocess.run(cmd, cwd=str(work), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout, check=False)


def test_sigkill_a_live_lease_refuses_the_next_play_then_stop_then_handoff(real_vllm, tmp_path):
    """A play killed with its server up and its heartbeat (a lost controller; lease 600 s, so that it is still live
    here): the server's lease is still live, so the next play of the case on the same
    port does not stop it - its attempt is refused (a frozen run with status refused) naming the killed run and how
    to stop it; its open seals the killed run as incomplete (its play is gone); stop.yml stops the server by run_uid;
    handoff.yml packs the case and names the interrupted run."""
    port = free_port()
    case = "cancel-kill"
    seen = _cancel_with_server_up(tmp_path, port, case, signal.SIGKILL, lease=600, heartbeat_too=True)
    killed_run = [line for line in seen if "minimal | server ready" in line][0].split(" | ")[2].split()[0]
    killed_dir = tmp_path / "records" / case / killed_run
    opened = json.loads((killed_dir / "open.json").read_text())
    uid = opened["run_uid"]
    assert not (killed_dir / "manifest.json").exists() and len(uid) == 16
    # the next play of the case, on the same port, while the killed play's lease is live
    proc, lines = _start(tmp_path, port, case)
    out = []
    _drain(proc, lines, out, timeout=600)
    text = "\n".join(out)
    refused = [line for line in out if "REFUSED" in line or "refused:" in line]
    assert refused, text
    assert uid in refused[0] and "%s/%s" % (case, killed_run) in refused[0] and "stop.yml" in refused[0], text
    assert _live_servers(port), "a live server of another run is never stopped"
    runs = sorted((p for p in (tmp_path / "records" / case).iterdir() if p.name.startswith("run-")),
                  key=lambda p: int(p.name[4:]))
    metas = dict((p.name, json.loads((p / "manifest.json").read_text())) for p in runs)
    # the killed run: sealed by the next play's open, as it was
    sealed = metas[killed_run]["metadata"]
    assert sealed["status"] == "incomplete" and sealed["seal_reason"] == "interrupted", sealed
    assert metas[killed_run]["run_uid"] == uid and "is gone" in sealed["sealed_because"]
    assert "owner" in sealed and sealed["owner"]["records_root"] == str(tmp_path / "records")
    refused_runs = [name for name, m in metas.items() if m["metadata"].get("status") == "refused"]
    assert len(refused_runs) == 1, dict((n, m["metadata"].get("status")) for n, m in metas.items())
    outcome = json.loads((tmp_path / "records" / case / refused_runs[0] / "outcome.json").read_text())
    assert outcome["refused"] is True and outcome["stage"] is None and uid in " ".join(outcome["refusal"])
    # how to stop it, as the refusal says
    stop = _play(tmp_path, "stop.yml", {"repro_vllm_stop_run_uid": uid})
    assert stop.returncode == 0, stop.stdout.decode()
    assert uid in stop.stdout.decode() and "stopped now" in stop.stdout.decode()
    assert _gone_within(port, 30) == []
    # the hand-off of the case takes the interrupted run and says so
    hand = _play(tmp_path, "handoff.yml", {"repro_vllm_records_root": str(tmp_path / "records"),
                                           "repro_vllm_case_id": case})
    hand_text = hand.stdout.decode()
    assert hand.returncode == 0, hand_text
    packages = list((tmp_path / "records" / case / "handoff").glob("*.tar.gz"))
    assert len(packages) == 1, hand_text
    import tarfile
    with tarfile.open(str(packages[0])) as tar:
        summary = json.loads(tar.extractfile("%s-handoff/summary.json" % case).read())
        names = tar.getnames()
    listed = dict((r["run"], r) for r in summary["runs"])
    assert listed[killed_run]["status"] == "incomplete", summary["runs"]
    assert not any(n.endswith("open.json") for n in names)
    assert "owner" not in json.dumps(summary)


def test_an_awx_cancel_leaves_no_server(real_vllm, tmp_path, monkeypatch):
    """AWX's cancel, as ansible-runner does it (cancel_callback -> SIGKILL to the job's process group; no signal
    handler of the play runs, no stdout callback of ours is loaded) on a job laid out as AWX lays it out: the server's
    heartbeat, in a session of its own, sees the job's process gone and ends the lease; the server is gone long
    before its lease would have run out (600 s here)."""
    import ansible_runner
    import yaml
    from test_awx_project import AwxJob, ProjectUpdate, _clean_ansible_env

    _clean_ansible_env(monkeypatch)
    job = AwxJob(tmp_path / "pdd", ProjectUpdate(tmp_path / "scm"))
    port = free_port()
    os.makedirs(os.path.join(job.pdd, "env"))
    shutil.copytree(INVENTORY, os.path.join(job.pdd, "inventory"))
    with open(os.path.join(job.pdd, "env", "extravars"), "w") as fh:
        yaml.safe_dump({"repro_vllm_records_root": str(tmp_path / "records"),
                        "repro_vllm_remote_root": str(tmp_path / "remote"), "repro_vllm_case_id": "awx-cancel",
                        "repro_vllm_port": port, "repro_vllm_fingerprint": False, "repro_vllm_ladder_until": "",
                        "repro_vllm_server_lease": 600, "repro_vllm_request_timeout": REQUEST_TIMEOUT}, fh)
    with open(os.path.join(job.pdd, "env", "envvars"), "w") as fh:
        yaml.safe_dump({"ANSIBLE_COLLECTIONS_PATH": job.collections, "ANSIBLE_NOCOLOR": "1"}, fh)
    ready = []

    def on_event(event):
        if "minimal | server ready" in (event.get("stdout") or ""):
            ready.append(time.monotonic())
        return True

    runner = ansible_runner.run(private_data_dir=job.pdd, playbook="playbooks/reproduce.yml", ident="cancel",
                                quiet=True, event_handler=on_event, cancel_callback=lambda: bool(ready))
    assert runner.status == "canceled" and ready, runner.status
    assert _gone_within(port, 40) == [], "the server outlived the cancelled job:\n" + _diagnose(tmp_path, port)
    # gone within 40 s of a 600 s lease. Who stopped it: the heartbeat ended the lease and the supervisor stopped the
    # server and says why (its record) - or, when the cancel came while the play's own stop task ran, that task: an
    # ansible-core worker is a process group of its own, the cancel's SIGKILL does not reach it, and it finishes the
    # stop (the state file says stopped) - or, when the cancel came later still (on the 2-core CI ansible-runner polls
    # its cancel callback seconds after the event), the play's stop and collect had run: the node's folders of the run
    # are gone and the controller's verified copy says how the play stopped it (server.json's stop). On the 2-core CI
    # the first record was missing when a parallel play's sweep took the stop over, and the server outlived the job
    # when such a surviving worker renewed the lease afterwards.
    records = _expired_records(tmp_path, timeout=30)
    states = [json.loads(p.read_text()) for p in (tmp_path / "remote").rglob("vllm_server.state.json")]
    collected = [json.loads(p.read_text()) for p in (tmp_path / "records").rglob("hosts/localhost/server.json")]
    evidence = (records, states, [c.get("stop") for c in collected])
    if records:
        assert len(records) == 1 and records[0]["reason"].startswith("the play's controller process "), evidence
    elif states:
        assert len(states) == 1 and states[0].get("stopped") is True, evidence
    else:
        assert collected and all(c["stop"] and c["stop"]["alive"] is False for c in collected), evidence


SSH_PLAY = """
- hosts: node01
  gather_facts: false
  tasks:
    - name: A start that never gets ready, on a 4 s lease that only the controller's heartbeat keeps
      repro.vllm.vllm_server:
        state: started
        argv: ["/usr/bin/python3", "-c", "import time; time.sleep(300)", "--host", "127.0.0.1", "--port", "{port}"]
        log_path: "{work}/host/server.log"
        state_file: "{work}/host/state.json"
        chdir: "{work}/host"
        ready_timeout: 60
        stop_grace: 2
        lease: 4
        lease_file: "{work}/leases/0123456789abcdef.json"
        lease_info: {{run_uid: "0123456789abcdef"}}
        node: node01
        fail_on_error: false
"""


def _sleepers(port):
    return [pid for pid, cmd in _procs() if "time.sleep(300)" in cmd and "--port %d" % port in cmd]


def _procs():
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/cmdline" % name, "rb") as fh:
                    yield int(name), fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue


def test_over_ssh_the_heartbeat_keeps_a_long_start_alive_and_sigint_stops_it(tmp_path, ssh_hosts):
    """The heartbeat through a real SSH connection (loopback sshd, ControlPersist as in ansible.cfg): a start that
    takes longer than its 4 s lease lives while the play lives, and SIGINT to the play stops it before the play
    ends."""
    hosts = ssh_hosts(1)
    port = free_port()
    (tmp_path / "host").mkdir()
    (tmp_path / "play.yml").write_text(SSH_PLAY.format(port=port, work=tmp_path))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
               ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default")
    proc = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                             hosts.inventory, str(tmp_path / "play.yml")], cwd=str(tmp_path), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not _sleepers(port) and time.monotonic() < deadline:
            time.sleep(0.5)
        started = time.monotonic()
        assert _sleepers(port), "the server never started"
        time.sleep(14)  # more than three leases of 4 s
        assert _sleepers(port), "killed by its lease although the play lives"
        entry = json.loads((tmp_path / "leases" / "0123456789abcdef.json").read_text())["servers"]["node01"]
        assert entry["heartbeat_by"] == "controller heartbeat" and entry["heartbeat_at"] > started
        os.killpg(proc.pid, signal.SIGINT)
        out = proc.communicate(timeout=90)[0].decode()
        left = _sleepers(port)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in _sleepers(port):
            os.kill(pid, signal.SIGKILL)
    assert left == [], out[-3000:]
    assert "interrupt | node01 | server stopped before the play ended" in out, out[-3000:]
