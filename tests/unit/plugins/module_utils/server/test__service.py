# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""service.json of the production server: a real podman capture, systemd and kubectl output composed from their
documentation (tests/fixtures/service/documented/README.md), a real /proc of a process started here, the real
/proc/<pid>/maps of a CUDA process on an H200, and the isolation decision reading the record."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _isolation
from ansible_collections.repro.vllm.plugins.module_utils.server import _service
from ansible_collections.repro.vllm.plugins.module_utils.record._evidence import case_runs

from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import FIXTURES, case

SERVICE = os.path.join(FIXTURES, "service")
CUDA_PROCESS = os.path.join(FIXTURES, "2026-12-01-580.159.04-h200-cuda-process")
FAKE_HF = "hf_FAKEFAKEFAKEFAKEFAKEFAKE"
FAKE_SK = "sk-FAKEFAKEFAKEFAKEFAKE"


def _read(*parts):
    with open(os.path.join(SERVICE, *parts)) as f:
        return f.read()


def _result(argv, out="", err="", rc=0):
    return {"cmd": list(argv), "rc": rc, "status": "ok" if rc == 0 else "failed", "stdout": out, "stderr": err,
            "msg": None if rc == 0 else "exit %d" % rc}


class Replay:
    """Answers commands from captures by the end of their argv (like tests/fixtures/containers/replay.py)."""

    def __init__(self, table):
        self.table = table
        self.calls = []

    def __call__(self, argv, timeout=None, **_kw):
        assert timeout and timeout > 0
        self.calls.append(argv[1:])
        for tail, (out, err, rc) in self.table:
            if argv[-len(tail):] == list(tail):
                return _result(argv, out, err, rc)
        return _result(argv, "", "unmapped command", 99)


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """Executables named like the real tools so find_binary finds them; the replay answers instead of them."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("systemctl", "journalctl", "podman", "docker", "kubectl"):
        path = bindir / name
        path.write_text("#!/bin/sh\nexit 99\n")
        path.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    return bindir


def test_cap_text_keeps_head_and_tail_and_counts_the_cut():
    text = "line %05d\n" + "".join("line %05d\n" % i for i in range(20000))
    kept, info = _service.cap_text(text, 4096)
    assert info["bytes"] == len(text.encode()) and info["kept_bytes"] == 4096
    assert info["cut_bytes"] == info["bytes"] - 4096
    assert kept.startswith("line %05d\nline 00000") and kept.endswith("line 19999\n")
    assert "%d bytes cut" % info["cut_bytes"] in kept
    small, info = _service.cap_text("short\n", 4096)
    assert small == "short\n" and info["cut_bytes"] == 0


def test_podman_real_capture_restarts_exit_code_image_and_redaction(tools):
    del tools
    inspect = _read("podman-4.3.1", "container_inspect.out")
    logs_out = _read("podman-4.3.1", "container_logs.out")
    logs_err = _read("podman-4.3.1", "container_logs.err")
    replay = Replay([(("container", "inspect", "repro-i11s-svc"), (inspect, "", 0)),
                     (("logs", "repro-i11s-svc"), (logs_out, logs_err, 0))])
    rec, logs = _service.gather({"kind": "podman", "name": "repro-i11s-svc"}, run=replay)
    assert rec["status"] == "ok", rec
    assert rec["restart_count"] == 2 and rec["exit_codes"] == [3]
    assert rec["restart_policy"] == "on-failure"
    assert rec["image"]["digest"] == json.loads(inspect)[0]["ImageDigest"]
    assert rec["cmdline"][0] == "python3" and rec["state"]["Status"] == "exited"
    assert FAKE_HF in inspect and FAKE_HF not in json.dumps(rec)
    assert rec["env"]["HF_TOKEN"] != FAKE_HF
    assert logs["current"].count("starting server") == 3 and logs["current"].count("engine core died") == 3
    assert rec["logs"]["current"]["path"] == "logs/service-current.log"
    assert "previous" not in logs  # the engine keeps one log across restarts


def test_podman_unknown_container_is_not_found(tools):
    del tools
    replay = Replay([(("container", "inspect", "gone"), ("[]", "Error: no such container gone\n", 125))])
    rec, logs = _service.gather({"kind": "podman", "name": "gone"}, run=replay)
    assert rec["status"] == "not_found" and "gone" in rec["msg"] and logs == {}


def test_systemd_composed_from_docs(tools):
    del tools
    journal = _read("documented", "journal_unit.out")
    replay = Replay([(("--", "vllm.service"), (_read("documented", "systemctl_show.out"), "", 0)),
                     (("-b",), (journal, "", 0)),
                     (("_SYSTEMD_INVOCATION_ID=4c1ab0b3f1b54f0e9d1bd3b6c2a0e7a1",), (journal.splitlines()[-1], "", 0))])
    rec, logs = _service.gather({"kind": "systemd", "name": "vllm.service"}, run=replay)
    assert rec["status"] == "ok", rec
    assert rec["restart_count"] == 3 and rec["exit_codes"] == [1] and rec["signals"] == []
    assert rec["state"]["SubState"] == "auto-restart"
    assert "Scheduled restart job, restart counter is at 3." in logs["previous"]
    assert "Started vllm.service" in logs["current"]
    show = replay.calls[0]
    assert show[0] == "show" and "NRestarts" in show[2] and "ExecMainStatus" in show[2]


def test_systemd_unknown_unit(tools):
    del tools
    replay = Replay([(("--", "nosuch.service"), (_read("documented", "systemctl_show_absent.out"), "", 0))])
    rec, _logs = _service.gather({"kind": "systemd", "name": "nosuch.service"}, run=replay)
    assert rec["status"] == "not_found" and "nosuch.service" in rec["msg"]


def test_systemd_killed_by_signal_is_a_signal_not_an_exit_code():
    props = _service.parse_systemctl_show(_read("documented", "systemctl_show.out").replace(
        "ExecMainCode=1", "ExecMainCode=2").replace("ExecMainStatus=1", "ExecMainStatus=9"))
    view = _service.systemd_state(props)
    assert view["exit_codes"] == [] and view["signals"] == [9]


def test_kubectl_composed_from_docs(tools):
    del tools
    pod = _read("documented", "kubectl_pod.json")
    replay = Replay([(("get", "pod", "vllm-0", "-n", "inference", "-o", "json"), (pod, "", 0)),
                     (("--previous", "-n", "inference", "-c", "vllm"), ("previous instance: CUDA out of memory\n", "", 0)),
                     (("logs", "vllm-0", "-n", "inference", "-c", "vllm"), ("current instance starting\n", "", 0))])
    rec, logs = _service.gather({"kind": "kubectl", "name": "vllm-0", "namespace": "inference"}, run=replay)
    assert rec["status"] == "ok", rec
    assert rec["container"] == "vllm"  # the first container of the spec, not the first status
    assert rec["restart_count"] == 4 and rec["exit_codes"] == [137]
    assert rec["state"]["terminated_reasons"] == ["OOMKilled"] and rec["state"]["current"] == ["waiting"]
    assert rec["image"]["digest"] == "sha256:" + "2" * 64
    dumped = json.dumps(rec)
    assert FAKE_HF not in dumped and FAKE_SK not in dumped
    assert rec["env"]["POD_IP"] == "<from valueFrom>" and rec["env"]["API_SECRET"] != "<from valueFrom>" and rec["env"]["VLLM_LOGGING_LEVEL"] == "DEBUG"
    assert logs == {"current": "current instance starting\n", "previous": "previous instance: CUDA out of memory\n"}


def test_missing_tool_is_an_error_naming_the_fix(tmp_path):
    missing = str(tmp_path / "kubectl")
    rec, _logs = _service.gather({"kind": "kubectl", "name": "vllm-0"}, run=Replay([]), binary=missing)
    assert rec["status"] == "error" and "kubectl not found on this host at " + missing in rec["msg"]


@pytest.mark.parametrize("spec,word", [({"kind": "nope"}, "kind"), ({"kind": "pid"}, "pid"),
                                       ({"kind": "match", "pattern": "("}, "regular expression"),
                                       ({"kind": "systemd"}, "name"), ("vllm", "dict")])
def test_invalid_specs(spec, word):
    with pytest.raises(_service.ServiceError, match=word):
        _service.validate_spec(spec)


@pytest.fixture
def sleeper():
    marker = "repro-i11s-sleeper-%d" % os.getpid()
    env = dict(os.environ, HF_TOKEN=FAKE_HF, REPRO_PLAIN="visible")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker, "--api-key", FAKE_SK],
                            env=env)
    time.sleep(0.2)
    yield proc, marker
    proc.kill()
    proc.wait()


def test_real_proc_by_pid_and_by_match(sleeper, tmp_path):
    proc, marker = sleeper
    log = tmp_path / "server.log"
    log.write_text("x" * 10000 + "END\n")
    rec, logs = _service.gather({"kind": "pid", "pid": proc.pid, "restart_count": 2, "log_current": str(log)},
                                max_log_bytes=2048)
    assert rec["status"] == "ok" and rec["pid"] == proc.pid
    assert rec["cmdline"][:2] == [sys.executable, "-c"] and marker in rec["cmdline"]
    assert rec["env"]["REPRO_PLAIN"] == "visible"
    dumped = json.dumps(rec)
    assert FAKE_HF not in dumped and FAKE_SK not in dumped
    assert os.path.realpath(rec["exe"]) == os.path.realpath(sys.executable)
    assert rec["restart_count"] == 2
    assert rec["logs"]["current"]["cut_bytes"] == 10004 - 2048 and logs["current"].endswith("END\n")
    rec2, _logs = _service.gather({"kind": "match", "pattern": marker})
    assert rec2["status"] == "ok" and rec2["matched_pids"] == [proc.pid]


def test_the_parts_and_line_of_a_real_server(sleeper, tmp_path):
    proc, _marker = sleeper
    log = tmp_path / "server.log"
    log.write_text("INFO started\nexport HF_TOKEN=%s\n" % FAKE_HF)
    rec, logs = _service.gather({"kind": "pid", "pid": proc.pid, "restart_count": 3, "log_current": str(log),
                                 "log_previous": str(tmp_path / "gone.log")})
    parts = _service.record_parts(rec, logs)
    # service.json first, then the one log the server had (the previous one could not be read: no part for it)
    assert [p["part"] for p in parts] == ["service.json", "logs/service-current.log"]
    assert parts[0]["json"] is rec and rec["logs"]["previous"]["status"] == "error"
    assert parts[1]["content"].startswith("INFO started\n") and FAKE_HF not in parts[1]["content"]
    # an empty log is no part
    assert [p["part"] for p in _service.record_parts(rec, dict(logs, current=""))] == ["service.json"]
    line = _service.progress_line("node01", rec)
    assert line == "service | node01 | pid ok | pid %d | restarts 3 | last exit codes []" % proc.pid
    missing, _none = _service.gather({"kind": "pid", "pid": 2 ** 22 + 7})
    assert _service.progress_line("node02", missing).endswith("| last exit codes [] | process %d is not running"
                                                              % (2 ** 22 + 7))


def test_match_never_picks_itself_and_reports_nothing_found():
    rec, _logs = _service.gather({"kind": "match", "pattern": "repro-i11s-no-such-process-%d" % os.getpid()})
    assert rec["status"] == "not_found" and rec["matched_pids"] == []


def test_dead_pid_is_not_found(sleeper):
    proc, _marker = sleeper
    proc.kill()
    proc.wait()
    rec, _logs = _service.gather({"kind": "pid", "pid": proc.pid})
    assert rec["status"] == "not_found"


def test_libcuda_from_the_real_h200_process_maps(tmp_path):
    """A copy of the real /proc/<pid>/maps and cmdline of a CUDA process on an H200 under a /proc-like folder."""
    pdir = tmp_path / "proc" / "510"
    pdir.mkdir(parents=True)
    shutil.copy(os.path.join(CUDA_PROCESS, "proc_maps.txt"), str(pdir / "maps"))
    (pdir / "cmdline").write_bytes(b"python3\0-c\0import torch\0")
    (pdir / "environ").write_bytes(b"PATH=/usr/bin\0")
    rec = _service.read_process(510, str(tmp_path / "proc"))
    assert [(x["path"], x["version"]) for x in rec["libcuda"]] == [
        ("/usr/local/nvidia/lib64/libcuda.so.580.159.04", "580.159.04")]


def test_isolation_restarts_fires_from_service_json(tmp_path):
    """A real frozen fingerprint run plus the service.json the podman capture gives: `restarts` holds."""
    path = case(tmp_path, "cpu-ok", ["run-001", "run-002"])
    inspect = _read("podman-4.3.1", "container_inspect.out")
    replay = Replay([(("container", "inspect", "repro-i11s-svc"), (inspect, "", 0)),
                     (("logs", "repro-i11s-svc"), ("", "", 0))])
    old = os.environ["PATH"]
    try:
        bindir = tmp_path / "bin"
        bindir.mkdir()
        (bindir / "podman").write_text("#!/bin/sh\nexit 99\n")
        (bindir / "podman").chmod(0o755)
        os.environ["PATH"] = str(bindir)
        rec, _logs = _service.gather({"kind": "podman", "name": "repro-i11s-svc"}, run=replay)
    finally:
        os.environ["PATH"] = old
    before = _isolation.decide(case_runs(path))
    assert not [r for r in before["reasons"] if r["condition"] == "restarts"]
    host = sorted(os.listdir(os.path.join(path, "run-001", "hosts")))[0]
    with open(os.path.join(path, "run-001", "hosts", host, "service.json"), "w") as f:
        json.dump(rec, f)
    after = _isolation.decide(case_runs(path))
    restarts = [r for r in after["reasons"] if r["condition"] == "restarts"]
    assert after["decision"] == "move" and restarts and restarts[0]["host"] == host
    assert "restarted 2 time(s)" in restarts[0]["evidence"] and "[3]" in restarts[0]["evidence"]
    assert "service.json" in restarts[0]["evidence"]
