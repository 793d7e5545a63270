# -*- coding: utf-8 -*-
"""Controller-side decisions of the host_record action: the secret scan refuses a part that still holds a secret
shape (naming file, line and kind, never the value), a clean part passes; the production server (option service) is
read first by the real served_process module and frozen in the host's part, or fails the host with its reason."""
from __future__ import annotations

import os
import pathlib
import tempfile

import pytest

from ansible_collections.repro.vllm.plugins.action import host_record as action
from ansible_collections.repro.vllm.plugins.module_utils.common import _redact

FAKE = "hf_" + "FAKE" * 9  # obviously fake


def _bare():
    return action.ActionModule.__new__(action.ActionModule)


def test_the_scan_is_the_redactors_own(monkeypatch):
    seen = []
    monkeypatch.setattr(_redact, "scan_secrets", lambda text: seen.append(text) or [(7, "probe")])
    with pytest.raises(action._PartRefused) as err:
        _bare()._scan({"host": "node01"}, {"a.log": b"anything\n"})
    assert seen == ["anything\n"] and "a.log (lines 7: probe)" in str(err.value)


def test_part_with_a_secret_shape_is_refused_without_the_value():
    parts = {"logs/server.log": b"ok line\nexport HF_TOKEN=%s\n" % FAKE.encode(), "command.json": b"{}\n"}
    with pytest.raises(action._PartRefused) as err:
        _bare()._scan({"host": "node01"}, parts)
    text = str(err.value)
    assert "logs/server.log (lines 2:" in text and FAKE not in text and "command.json" not in text


def test_clean_part_passes_the_scan():
    parts = {"fingerprint.json": b'{"driver": "580.159.04"}\n',
             "env.json": _redact.redact_text("HF_TOKEN=%s\n" % FAKE).encode()}
    _bare()._scan({"host": "node01"}, parts)


def _run_action(tmp_path, args, host="node01"):
    """The action as a task on ``host`` runs it, its modules run as Ansible runs them on a node (a separate Python
    process fed their arguments; tests/unit/plugins/modules/module_process.py) on this machine."""
    import types  # pylint: disable=import-outside-toplevel
    from ansible_collections.repro.vllm.plugins.modules import host_record as hr_module  # pylint: disable=import-outside-toplevel
    from ansible_collections.repro.vllm.plugins.modules import served_process  # pylint: disable=import-outside-toplevel
    from ansible_collections.repro.vllm.tests.unit.plugins.modules.module_process import run_module  # pylint: disable=import-outside-toplevel
    modules = {"repro.vllm.served_process": served_process, "repro.vllm.host_record": hr_module}
    act = action.ActionModule.__new__(action.ActionModule)
    act._task = types.SimpleNamespace(args=dict(args), check_mode=False, async_val=0, action="repro.vllm.host_record",
                                      timeout=180, get_name=lambda: "Fingerprint")
    act._play_context = types.SimpleNamespace(check_mode=False, become=False)
    act._connection = types.SimpleNamespace(transport="local", _shell=types.SimpleNamespace(tmpdir="/nonexistent"))
    act._display = types.SimpleNamespace(warning=lambda msg: None)
    calls = []

    def execute(module_name=None, module_args=None, task_vars=None):
        calls.append(module_name)
        work = tempfile.mkdtemp(prefix="module-", dir=str(tmp_path))
        return run_module(modules[module_name], pathlib.Path(work), **(module_args or {}))

    act._execute_module = execute
    return act.run(task_vars={"inventory_hostname": host}), calls


def test_the_production_server_is_read_first_and_frozen_in_the_hosts_part(tmp_path):
    import json  # pylint: disable=import-outside-toplevel
    import subprocess  # pylint: disable=import-outside-toplevel
    from ansible_collections.repro.vllm.plugins.module_utils.record import _record  # pylint: disable=import-outside-toplevel
    from ansible_collections.repro.vllm.tests.unit.plugins.action.test_run_close import _open  # pylint: disable=import-outside-toplevel
    run = _open(tmp_path, ["node01", "node02"])
    log = tmp_path / "server.log"
    log.write_text("INFO Started server process\n")
    server = subprocess.Popen(["sleep", "60"])  # pylint: disable=consider-using-with
    try:
        res, calls = _run_action(tmp_path, {"run_path": run, "stage": "fingerprint", "gather": [],
                                            "service": {"kind": "pid", "pid": server.pid, "log_current": str(log)}})
    finally:
        server.kill()
        server.wait()
    assert not res.get("failed") and calls == ["repro.vllm.served_process"], res
    part = os.path.join(run, "hosts", "node01")
    assert _record.is_frozen(part) and res["service_status"] == "ok"
    with open(os.path.join(part, "service.json")) as fh:
        assert json.load(fh)["pid"] == server.pid
    with open(os.path.join(part, "logs", "service-current.log")) as fh:
        assert fh.read() == "INFO Started server process\n"
    assert res["console"] == ["service | node01 | pid ok | pid %d | restarts None | last exit codes []" % server.pid]
    # a server that must be read and is gone: the host is recorded as failed with the reason, nothing else is read
    gone, calls = _run_action(tmp_path, {"run_path": run, "stage": "fingerprint", "gather": ["basics"],
                                         "service": {"kind": "pid", "pid": server.pid}, "service_required": True},
                              host="node02")
    assert gone["failed"] and calls == ["repro.vllm.served_process"], gone
    assert gone["msg"].startswith("node02: the production server (repro_vllm_service) was not read: production server "
                                  "pid"), gone["msg"]
    with open(os.path.join(run, "hosts", "node02", "failed.json")) as fh:
        assert json.load(fh)["msg"] == gone["msg"]
    # a command timeout the task timeout cannot hold is refused before anything is read
    refused, calls = _run_action(tmp_path, {"run_path": run, "stage": "other", "part_dir": "hosts/node03",
                                            "service": {"kind": "pid", "pid": 1}, "service_command_timeout": 600},
                                 host="node03")
    assert refused["failed"] and calls == [] and "repro_vllm_service_command_timeout 600" in refused["msg"]


def test_the_role_and_the_action_write_the_same_parts_of_a_real_server(tmp_path):
    import json  # pylint: disable=import-outside-toplevel
    import subprocess  # pylint: disable=import-outside-toplevel
    from ansible_collections.repro.vllm.plugins.filter.fleet_hosts import service_parts  # pylint: disable=import-outside-toplevel
    from ansible_collections.repro.vllm.plugins.module_utils.server import _service  # pylint: disable=import-outside-toplevel
    log = tmp_path / "server.log"
    log.write_text("INFO Started server process\n")
    server = subprocess.Popen(["sleep", "60"])  # pylint: disable=consider-using-with
    try:
        rec, logs = _service.gather({"kind": "pid", "pid": server.pid, "log_current": str(log)})
    finally:
        server.kill()
        server.wait()
    parts = _service.record_parts(rec, logs)
    # the service role's filter names the same parts under the host's folder
    named = service_parts({"record": rec, "logs": logs}, "hosts/node01/")
    assert [p["part"] for p in named] == ["hosts/node01/service.json", "hosts/node01/logs/service-current.log"]
    # the action renders the same bytes into the host's part
    ctx = {"host": "node01", "run_path": str(tmp_path / "run-001"), "part_dir": "hosts/node01"}
    got, _notes, _missing = _bare()._parts(ctx, {"data": {}}, {"service": {"record": rec, "logs": logs}})
    assert sorted(got) == ["logs/service-current.log", "service.json"]
    assert json.loads(got["service.json"]) == json.loads(json.dumps(rec))
    assert got["logs/service-current.log"] == parts[1]["content"].encode("utf-8")
