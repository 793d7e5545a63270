# -*- coding: utf-8 -*-
"""repro.vllm.run_record state=close (plugins/action/run_record.py over plugin_utils/close/_runclose.py): one close for
every kind of run - decide, write the parts, freeze, verify, fail after the freeze - on real runs made by the action's
own create, the real CPU vLLM captures of tests/fixtures/vllm-cpu-0.32 and host_record results of the H200 capture."""
from __future__ import annotations

import json
import os
import shutil
import types

import pytest

from ansible_collections.repro.vllm.plugins.action import job_result
from ansible_collections.repro.vllm.plugins.action import run_record as action
from ansible_collections.repro.vllm.plugins.plugin_utils.close import _attempt, _runclose
from ansible_collections.repro.vllm.plugins.module_utils.record import _record
from ansible_collections.repro.vllm.plugins.plugin_utils.close._fleet import host_summary
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import scan_secrets

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
CPU = os.path.join(FIX, "vllm-cpu-0.32")
FAKE_TOKEN = "hf_" + "abcdefghijklmnopqrstuvwxyz0123456789AB"  # obviously fake, shaped like a Hugging Face token


def _action(args, reports=None, check_mode=False, cls=action.ActionModule, name="repro.vllm.run_record", job_vars=None):
    """The action's run; ``reports`` (host -> its report) is the close's declared ``inputs.reports``, as the YAML that
    closes a run passes it."""
    args = dict(args)
    if reports is not None:
        args["inputs"] = dict(args.get("inputs") or {}, reports=reports)
    act = cls.__new__(cls)
    act._task = types.SimpleNamespace(args=args, check_mode=check_mode, async_val=0, action=name)
    act._connection = types.SimpleNamespace(transport="local", _shell=types.SimpleNamespace(tmpdir="/nonexistent"))
    act._play_context = types.SimpleNamespace(become=False)
    # the job's variables here are plain values: Ansible's templar would hand them back as they are
    act._templar = types.SimpleNamespace(template=lambda value: value)
    return act.run(task_vars=dict(job_vars or {}))


def _open(tmp_path, hosts, purpose="fingerprint", profile="kimi-k3-h200"):
    res = _action({"state": "create", "root": str(tmp_path / "records"), "case_id": "case", "hosts": hosts,
                   "purpose": purpose, "profile": profile})
    assert not res.get("failed"), res
    return res["path"]


def _h200_record(host):
    """What repro.vllm.host_record registers for a healthy host: its summary, from the real H200 fingerprint."""
    with open(os.path.join(FIX, "frozen-runs", "fp-h200", "run-001", "hosts", "localhost", "fingerprint.json")) as fh:
        fingerprint = json.load(fh)
    return {"summary": dict(host_summary(dict(fingerprint, host=host)), host=host), "changed": True}


def test_a_fleet_run_closes_with_every_expected_host_and_fails_after_the_freeze(tmp_path):
    path = _open(tmp_path, ["node01", "node02", "node03"])
    reports = {"node01": _h200_record("node01"),
               "node02": {"unreachable": True, "msg": "ssh: connect to host node02: refused"}}
    res = _action({"state": "close", "kind": "fleet", "path": path, "metadata": {"case_id": "case"}}, reports)
    # frozen first, then the play fails, naming the hosts that are not complete
    assert res["failed"] and res["msg"].startswith("the run is frozen, but not every host is complete in it: node02, node03")
    assert _record.is_frozen(path) and res["ok"] and res["status"] == "failed"
    with open(os.path.join(path, "manifest.json")) as fh:
        meta = json.load(fh)["metadata"]
    assert (meta["status"], meta["profile"], meta["profile_source"]) == ("failed", "kimi-k3-h200", "named")
    assert meta["hosts"] == ["node01", "node02", "node03"] and meta["purpose"] == "fingerprint"
    with open(os.path.join(path, "fleet.json")) as fh:
        fleet = json.load(fh)
    assert [(h["host"], h["status"]) for h in fleet["hosts"]] == [("node01", "ok"), ("node02", "unreachable"),
                                                                  ("node03", "lost")]
    assert fleet["profile"] == "kimi-k3-h200" and fleet["purpose"] == "fingerprint"
    # the console: one line per host, then where the record is
    assert res["console"][0].startswith("node01: ok | driver ") and "UNREACHABLE" in res["console"][1]
    assert res["console"][-1].startswith("record | %s frozen (failed), " % path)
    # where the record is, as an attempt's progress line says it
    assert res["record"] == "record %s frozen, %d files verified" % (path, res["checked"])
    with open(os.path.join(path, "notes.md")) as fh:
        notes = fh.read()
    assert "- profile: kimi-k3-h200 (named)" in notes and "| node03 | lost |" in notes
    # a close of a frozen run changes nothing and says why
    again = _action({"state": "close", "kind": "fleet", "path": path}, reports)
    assert again["failed"] and "frozen" in again["msg"]


def test_a_judge_error_fails_after_the_freeze_and_check_mode_writes_nothing(tmp_path):
    path = _open(tmp_path, ["node01"])
    reports = {"node01": _h200_record("node01")}
    planned = _action({"state": "close", "kind": "fleet", "path": path, "inputs": {"error": "cannot read node01"}},
                      reports, check_mode=True)
    assert not planned.get("failed") and not _record.is_frozen(path)
    assert planned["console"][-1].endswith("(check mode: nothing written)")
    assert planned["record"] == "record %s (check mode: nothing written)" % path
    res = _action({"state": "close", "kind": "fleet", "path": path, "inputs": {"error": "cannot read node01"}},
                  reports)
    assert res["failed"] and res["msg"] == "the run is frozen, but it has no compatibility.json: cannot read node01"
    assert res["status"] == "ok" and _record.is_frozen(path)


def test_an_attempt_closes_in_one_task_as_the_attempts_close_decides(tmp_path):
    path = _open(tmp_path, ["node1"], purpose="minimal_startup", profile=None)
    os.makedirs(os.path.join(path, "hosts", "node1", "logs"))
    shutil.copy(os.path.join(CPU, "fail_b_no_weights.log"), os.path.join(path, "hosts", "node1", "logs", "server.log"))
    step = {"name": "minimal", "purpose": "minimal_startup", "nodes": ["node1"], "expected": "ready",
            "argv": ["vllm", "serve", "/models/tiny", "--hf-token", FAKE_TOKEN], "env": {"HF_TOKEN": FAKE_TOKEN},
            "request": {"route": "/v1/completions", "timeout": 60, "body": {"prompt": "hi", "max_tokens": 8}}}
    reports = {"node1": {"started": {"ready": False, "outcome": "exited"}, "alive": None, "task_error": None,
                         "exchanges": [], "api_url": "http://127.0.0.1:8000"}}
    # what _attempt.close decides (it writes nothing), then the one task that decides the same, writes and freezes
    opened = (_record.read_open(path) or {}).get("run") or {}
    decided = _attempt.close(step, "run-001", path, "case", reports,
                             profile=_attempt.profile_text(opened))
    res = _action({"state": "close", "kind": "attempt", "path": path, "inputs": {"step": step}}, reports)
    assert not res.get("failed"), res
    assert res["status"] == decided["status"] == "failed" and res["attempt"] == decided["attempt"]
    assert res["attempt"]["stage"] == decided["stages"]["stage"] and res["stages"] == decided["stages"]
    # the step by run, which the play remembers for a second clean run
    assert res["steps"] == {"run-001": decided["step"]} and res["step"] == decided["step"]
    with open(os.path.join(path, "manifest.json")) as fh:
        manifest = json.load(fh)
    files = [f["path"] for f in manifest["files"]]
    assert [p["part"] for p in decided["parts"] if p["part"] not in files] == []
    assert manifest["metadata"]["profile_source"] == "not judged" and manifest["metadata"]["step"] == "minimal"
    for name in files:
        with open(os.path.join(path, name), "rb") as fh:
            assert FAKE_TOKEN.encode() not in fh.read(), name
    with open(os.path.join(path, "notes.md")) as fh:
        assert "| profile | none (not judged) |" in fh.read()


@pytest.mark.parametrize("runtime", ["podman", None])
def test_a_container_the_runtime_refused_gets_the_container_args_hint_on_the_console(tmp_path, runtime):
    # issue 32 item 6: podman's real answer on this project's VMs without the engine flags (tests/fixtures/containers,
    # podman-4.3.1/probe_rlimit: rc 126, "setrlimit RLIMIT_NOFILE: Operation not permitted") as the server's log
    path = _open(tmp_path, ["node1"], purpose="minimal_startup", profile=None)
    os.makedirs(os.path.join(path, "hosts", "node1", "logs"))
    capture = os.path.join(FIX, "containers", "podman-4.3.1", "probe_rlimit")
    shutil.copy(capture + ".err", os.path.join(path, "hosts", "node1", "logs", "server.log"))
    with open(capture + ".rc") as fh:
        rc = int(fh.read())
    step = {"name": "minimal", "purpose": "minimal_startup", "nodes": ["node1"], "expected": "ready",
            "argv": ["vllm", "serve", "/models/tiny"], "env": {},
            "request": {"route": "/v1/completions", "timeout": 60, "body": {"prompt": "hi", "max_tokens": 8}}}
    started = {"ready": False, "outcome": "exited", "exit_code": rc,
               "container": {"runtime": runtime, "name": "repro-vllm-x-node1"} if runtime else None}
    reports = {"node1": {"started": started, "alive": None, "task_error": None, "exchanges": [],
                         "api_url": "http://127.0.0.1:8000"}}
    res = _action({"state": "close", "kind": "attempt", "path": path, "inputs": {"step": step}}, reports)
    assert not res.get("failed"), res
    hints = [line for line in res["console"] if "repro_vllm_container_args" in line]
    if runtime is None:  # a process's exit status is vLLM's own: no runtime hint
        assert rc == 126 and hints == []
        return
    assert len(hints) == 1 and hints[0].startswith("reproduce | node1 | ")
    assert "podman refused to start the server's container (exit 126: the command in the container could not be " \
           "invoked;" in hints[0] and "REPRO_VLLM_CONTAINER_ARGS" in hints[0]


def test_an_incomplete_run_keeps_the_redacted_error_and_stops_the_play(tmp_path):
    path = _open(tmp_path, ["node1"], purpose="minimal_startup")
    error = "vllm_server: start failed with HF_TOKEN=%s in the environment; " % FAKE_TOKEN + "x" * 3000
    inputs = {"step": "minimal", "host": "node1", "task": "Attempt | start", "error": error}
    planned = _action({"state": "close", "kind": "incomplete", "path": path, "inputs": inputs}, check_mode=True)
    assert planned["failed"] and planned["msg"].endswith("check mode: nothing was written.")
    assert not _record.is_frozen(path)
    res = _action({"state": "close", "kind": "incomplete", "path": path, "inputs": inputs})
    assert res["failed"] and res["msg"].startswith("run-001 (minimal) could not be closed: Attempt | start: ")
    assert "It is frozen as incomplete at %s (incomplete.json)" % path in res["msg"]
    assert FAKE_TOKEN not in res["msg"] and FAKE_TOKEN not in json.dumps(res)
    with open(os.path.join(path, "incomplete.json")) as fh:
        doc = json.load(fh)
    assert len(doc["error"]) == _runclose.ERROR_MAX and not scan_secrets(doc["error"]) and doc["host"] == "node1"
    with open(os.path.join(path, "manifest.json")) as fh:
        meta = json.load(fh)["metadata"]
    assert meta["status"] == "incomplete" and meta["incomplete_reason"] == "Attempt | start failed on node1"


def test_inputs_a_kind_does_not_take_are_refused_naming_those_it_takes(tmp_path):
    path = _open(tmp_path, ["node1"])
    # an input no kind declares: refused by the declared spec, naming the inputs there are
    res = _action({"state": "close", "kind": "fleet", "path": path, "inputs": {"stp": "minimal"}})
    assert res["failed"] and "inputs.stp" in res["msg"] and "reports" in res["msg"]
    # a declared input this kind does not take: refused by the close, naming the ones it takes
    res = _action({"state": "close", "kind": "fleet", "path": path, "inputs": {"nodes": ["node1"]}})
    assert res["failed"] and "the run is still open" in res["msg"] and "violations_fail" in res["msg"]
    assert not _record.is_frozen(path)
    with pytest.raises(_runclose.CloseError):
        _runclose.decide("nosuch", path, {})


def test_decisions_runs_close_ok_with_their_parts(tmp_path):
    path = _open(tmp_path, [], purpose="summary")
    res = _action({"state": "close", "kind": "decisions", "path": path, "inputs": {"made_from": ["case/run-000"]},
                   "parts": [{"part": "score.json", "json": {"score": 3}}]})
    # score.json and the run sheet the close writes (plugin_utils/close/_runclose.py decisions_notes)
    assert not res.get("failed") and res["status"] == "ok" and res["checked"] == 2, res
    with open(os.path.join(path, "notes.md")) as f:
        assert "- purpose: summary\n" in f.read()
    with open(os.path.join(path, "manifest.json")) as f:
        assert json.load(f)["metadata"]["made_from"] == ["case/run-000"]
    assert "ansible_facts" not in res and "decision" not in res  # a close without a decision sets no fact
    # the decide role's result: the close sets repro_vllm_decision with its run (the decision was made before the open)
    path = _open(tmp_path, [], purpose="summary")
    decision = {"case_id": "case", "purpose": "summary", "run": None, "runs": ["case/run-001"], "score": 3}
    res = _action({"state": "close", "kind": "decisions", "path": path, "inputs": {"decision": decision},
                   "parts": [{"part": "score.json", "json": {"score": 3}}]})
    assert not res.get("failed") and res["ansible_facts"] == {"repro_vllm_decision": dict(decision, run=path)}
    assert list(res["ansible_facts"]["repro_vllm_decision"]) == list(decision) and "decision" not in res


def test_the_job_result_is_handed_on_as_set_stats_does(tmp_path):
    run = _open(tmp_path, ["node1"])
    _action({"state": "close", "kind": "decisions", "path": run})
    res = _action({"purpose": "fingerprint", "case_id": "case", "runs": [run], "job_runs": []},
                  cls=job_result.ActionModule, name="repro.vllm.job_result")
    assert res["ansible_stats"]["per_host"] is False and res["ansible_stats"]["aggregate"] is False
    data = res["ansible_stats"]["data"]["repro_vllm_result"]
    assert data["runs"] == [run] and data["last_run"] == run and data["purpose"] == "fingerprint"
    assert res["ansible_facts"] == {"_repro_vllm_result_job_runs": [run]}
    assert res["console"] == ["result | fingerprint | case case | 1 run(s), last %s" % run]
    failed = _action({"purpose": "fingerprint", "case_id": "case", "runs": [], "job_runs": [run],
                      "sink": "store:/srv/records", "sink_error": "push: refused"},
                     cls=job_result.ActionModule, name="repro.vllm.job_result")
    assert failed["failed"] and failed["msg"].endswith("records sink store:/srv/records: push: refused")
    assert failed["ansible_stats"]["data"]["repro_vllm_result"]["runs"] == [run]


def test_a_fleet_close_hands_the_result_on_itself_only_when_it_does_not_fail(tmp_path):
    handed = {"purpose": "fingerprint", "sink": ""}
    ok_run = _open(tmp_path, ["node01"])
    reports = {"node01": _h200_record("node01")}
    res = _action({"state": "close", "kind": "fleet", "path": ok_run, "inputs": {"result": handed}}, reports)
    assert not res.get("failed") and res["handed_on"] is True and _record.is_frozen(ok_run)
    # the same artifacts, facts and line as repro.vllm.job_result gives for this run
    alone = _action({"purpose": "fingerprint", "case_id": "case", "runs": [ok_run], "job_runs": [],
                     "records_root": str(tmp_path / "records")}, cls=job_result.ActionModule, name="repro.vllm.job_result")
    assert res["ansible_stats"] == alone["ansible_stats"] and res["result"] == alone["result"]
    assert res["ansible_facts"] == {"_repro_vllm_result_job_runs": [ok_run]}
    assert res["console"][-1] == alone["console"][0] and res["console"][-2].startswith("record | %s frozen (ok)" % ok_run)
    # a close that fails (a host is not complete) hands nothing on: the playbook's job_result task does, after it
    bad_run = _open(tmp_path, ["node01", "node02"])
    failed = _action({"state": "close", "kind": "fleet", "path": bad_run, "inputs": {"result": handed}}, reports)
    assert failed["failed"] and _record.is_frozen(bad_run)
    assert "handed_on" not in failed and "ansible_stats" not in failed and "ansible_facts" not in failed
    # check mode: nothing frozen, nothing handed on
    planned_run = _open(tmp_path, ["node01"])
    planned = _action({"state": "close", "kind": "fleet", "path": planned_run, "inputs": {"result": handed}}, reports,
                      check_mode=True)
    assert not planned.get("failed") and "handed_on" not in planned and not _record.is_frozen(planned_run)
    # a records sink: the result role copies the run there and hands the result on, not the close
    sunk_run = _open(tmp_path, ["node01"])
    sunk = _action({"state": "close", "kind": "fleet", "path": sunk_run,
                    "inputs": {"result": dict(handed, sink="store:/srv/records")}}, reports)
    assert not sunk.get("failed") and _record.is_frozen(sunk_run) and "handed_on" not in sunk
    # the job's earlier runs (the controller's fact, as job_result keeps it) come first in what is handed on
    later_run = _open(tmp_path, ["node01"])
    later = _action({"state": "close", "kind": "fleet", "path": later_run,
                     "inputs": {"result": dict(handed, job_runs=[ok_run])}}, reports)
    assert later["ansible_facts"] == {"_repro_vllm_result_job_runs": [ok_run, later_run]}
    assert later["result"]["repro_vllm_result"]["runs"] == [ok_run, later_run]


def test_the_open_says_where_the_run_lives_on_every_host(tmp_path):
    res = _action({"state": "create", "root": str(tmp_path / "records"), "case_id": "case", "hosts": ["node1"],
                   "purpose": "minimal_startup", "remote_root": "/var/tmp/repro-vllm/",
                   "lease_dir": "/var/tmp/repro-vllm/.leases"})
    uid = res["run_uid"]
    remote = res["remote"]
    assert remote["run_dir"] == "/var/tmp/repro-vllm/runs/%s" % uid and len(uid) == 16
    assert remote["lease_file"] == "/var/tmp/repro-vllm/.leases/%s.json" % uid
    assert {k: remote["lease"][k] for k in ("run_uid", "case_id", "run_id")} == {
        "run_uid": uid, "case_id": "case", "run_id": "run-001"}
    assert remote["labels"] == {"run_uid": uid, "case": "case", "run": "run-001",
                                "controller": res["owner"]["controller"]}
    # two opens of the same case and number in two records roots never share a place on a host
    other = _action({"state": "create", "root": str(tmp_path / "other"), "case_id": "case", "hosts": ["node1"],
                     "remote_root": "/var/tmp/repro-vllm", "lease_dir": "/var/tmp/repro-vllm/.leases"})
    assert other["run_id"] == "run-001" and other["remote"]["run_dir"] != remote["run_dir"]


def test_the_open_names_the_runs_it_sealed_and_where_the_new_one_is(tmp_path):
    import subprocess
    import sys
    # a play that opened run-001 and died: its pid is a real process that has exited
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True, timeout=60)
    owner = _record.controller_owner(str(tmp_path / "records"))
    owner.update(pid=int(gone.stdout), pid_start_ticks=1)
    first = _action({"state": "create", "root": str(tmp_path / "records"), "case_id": "case", "owner": owner})
    assert not first.get("failed") and first["console"] == []  # not announced, nothing sealed
    res = _action({"state": "create", "root": str(tmp_path / "records"), "case_id": "case", "hosts": ["node1"],
                   "purpose": "fingerprint", "seal_interrupted": True, "announce": True, "profile": None})
    assert res["run_id"] == "run-002" and [s["run"] for s in res["sealed"]] == ["run-001"]
    assert res["console"][0].startswith("record | sealed run-001 of case case as incomplete (interrupted): its play")
    assert res["console"][1].startswith("record | fingerprint run run-002 of case case for 1 host(s): %s (profile none, "
                                        "not judged; records root %s; repro.vllm " % (res["path"], res["records_root"]))
    with open(os.path.join(first["path"], "manifest.json")) as fh:
        assert json.load(fh)["metadata"]["seal_reason"] == "interrupted"


def test_a_relative_records_root_is_the_same_folder_at_the_open_and_at_the_prune(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    opened = _action({"state": "create", "root": "rec", "case_id": "case", "hosts": []})
    assert opened["records_root"] == str(tmp_path / "rec") and opened["root_given"] == "rec"
    _action({"state": "close", "kind": "decisions", "path": opened["path"]})
    found = _action({"state": "prunable", "root": "rec", "older_than": 0})
    assert not found.get("failed") and found["run_uids"] == [opened["run_uid"]], found


def _h200_part(path, host):
    """The real H200 fingerprint as host_record writes it into the open run, under ``host``."""
    folder = os.path.join(path, "hosts", host)
    os.makedirs(folder)
    shutil.copy(os.path.join(FIX, "frozen-runs", "fp-h200", "run-001", "hosts", "localhost", "fingerprint.json"),
                os.path.join(folder, "fingerprint.json"))


def test_the_open_checks_the_profile_before_anything_is_created(tmp_path):
    root = tmp_path / "records"
    base = {"state": "create", "root": str(root), "case_id": "case", "hosts": ["node01"], "purpose": "fingerprint"}
    # the variables are the playbook's first task's (validate_argument_spec), not an option of the open
    res = _action(dict(base, check_variables=["record"]))
    assert res["failed"] and "check_variables" in res["msg"] and not root.exists()
    # the profile: both variables (the file wins: here a folder, no profile), an unknown name - refused before any
    # host is touched, naming the key
    res = _action(dict(base, compatibility={"enabled": True, "profile": "kimi-k3-h200", "profile_file": str(tmp_path)}))
    assert res["failed"] and res["msg"].startswith("compatibility profile refused before any host is touched: "
                                                   "repro_vllm_profile_file: %s does not exist" % tmp_path)
    res = _action(dict(base, compatibility={"enabled": True, "profile": "kimi-k3-nope"}))
    assert res["failed"] and "kimi-k3-nope" in res["msg"] and "kimi-k3-h200" in res["msg"]
    assert not root.exists()
    # valid: the run opens, judged against the profile checked (whatever `profile` says), the console names it
    res = _action(dict(base, profile="cpu-smoke", compatibility={"enabled": True, "profile": "kimi-k3-h200"},
                       announce=True), job_vars={"repro_vllm_case_id": "case"})
    assert not res.get("failed"), res
    assert res["profile"] == {"name": "kimi-k3-h200", "source": "shipped"}
    assert res["console"][0] == "compatibility | profile kimi-k3-h200 (profiles/kimi-k3-h200.yml) is valid"
    assert "(profile kimi-k3-h200, shipped;" in res["console"][1]
    assert _record.read_open(res["path"])["run"]["profile_source"] == "shipped"
    # not enabled: not judged, nothing loaded (an unknown name is not even looked at)
    res = _action(dict(base, profile="cpu-smoke", compatibility={"enabled": False, "profile": "kimi-k3-nope"}))
    assert not res.get("failed") and res["profile"] == {"name": None, "source": "not judged"}
    # repro_vllm_compatibility left unset: judged when a profile is given, else not
    res = _action(dict(base, compatibility={"enabled": None, "profile": "cpu-smoke", "profile_file": None}))
    assert res["profile"] == {"name": "cpu-smoke", "source": "shipped"}
    res = _action(dict(base, profile="kimi-k3-h200", compatibility={"enabled": None, "profile": None}))
    assert res["profile"] == {"name": None, "source": "not judged"}


def test_the_fleet_close_judges_the_run_its_open_judged(tmp_path):
    from ansible_collections.repro.vllm.plugins.action import compatibility
    reports = {"node01": _h200_record("node01")}
    opened = _action({"state": "create", "root": str(tmp_path / "records"), "case_id": "case", "hosts": ["node01"],
                      "purpose": "fingerprint", "compatibility": {"enabled": True, "profile": "kimi-k3-h200"}})
    path = opened["path"]
    _h200_part(path, "node01")
    # what the compatibility action decides on the same open run (nothing written)
    alone = _action({"run_path": path, "hosts": ["node01"], "profile": "kimi-k3-h200"},
                    cls=compatibility.ActionModule, name="repro.vllm.compatibility")
    judge = {"profile": "kimi-k3-h200", "profile_file": None, "allow_foreign": False}
    planned = _action({"state": "close", "kind": "fleet", "path": path, "inputs": {"judge": judge}}, reports,
                      check_mode=True)
    assert planned["compatibility"]["verdict"] == "unchecked" and not _record.is_frozen(path)
    res = _action({"state": "close", "kind": "fleet", "path": path, "inputs": {"judge": judge}}, reports)
    assert _record.is_frozen(path)
    judged = res["compatibility"]
    assert (judged["verdict"], judged["lines"], judged["run_path"]) == (alone["verdict"], alone["lines"], path)
    with open(os.path.join(path, "compatibility.json")) as fh:
        assert json.load(fh) == judged["compatibility"] == alone["compatibility"]
    with open(os.path.join(path, "manifest.json")) as fh:
        assert "compatibility.json" in [f["path"] for f in json.load(fh)["files"]]
    # the console: the judge's lines first (as the compatibility action hands them), then the hosts, then the record
    assert res["console"][0] == alone["console"][0] and res["console"][len(alone["console"])].startswith("node01: ")
    # the exit rule: the violations fail the play after the freeze, unless the job only records
    assert judged["verdict"] == "fail" and len(judged["compatibility"]["violations"]) == 2
    assert res["failed"] and res["msg"] == "the run is frozen, but 2 compatibility violation(s)"
    # the closing table of what the run holds, for a display that has no table of its own (AWX's): node01 violates
    assert res["closing"][1].split() == ["host", "status", "stage", "error", "class", "record"]
    assert res["closing"][2].split()[:2] == ["node01", "VIOLATION"] and res["closing"][2].endswith(path)


def test_a_fleet_close_records_only_or_leaves_violations_to_the_play(tmp_path):
    """repro_vllm_record_only (the task's input): the same violations are recorded, said, and the close does not
    fail; violations_fail false (reproduce.yml) leaves them to enforce; a name it replaced in 0.1.0 is not read."""
    reports = {"node01": _h200_record("node01")}
    judge = {"profile": "kimi-k3-h200", "profile_file": None, "allow_foreign": False}
    for i, (inputs, task_vars, line) in enumerate((
            ({"record_only": True}, {}, "exit | record only (repro_vllm_record_only): the job does not fail on 2 "
                                        "compatibility violation(s)"),
            ({"violations_fail": False}, {}, None))):
        work = tmp_path / str(i)
        work.mkdir()
        opened = _action({"state": "create", "root": str(work / "records"), "case_id": "case", "hosts": ["node01"],
                          "purpose": "fingerprint", "compatibility": {"enabled": True, "profile": "kimi-k3-h200"}})
        assert not opened.get("failed"), opened
        _h200_part(opened["path"], "node01")
        res = _action({"state": "close", "kind": "fleet", "path": opened["path"], "inputs": dict(inputs, judge=judge)},
                      reports, job_vars=task_vars)
        assert not res.get("failed") and _record.is_frozen(opened["path"]), res.get("msg")
        assert (line in res["console"]) if line else not [c for c in res["console"] if c.startswith(("exit", "WARN"))]
        # shown by any display (AWX's default one): the console lines and the closing table are the task's msg
        assert res["_ansible_verbose_always"] is True and res["msg"][:len(res["console"])] == res["console"]
        assert res["msg"][len(res["console"]) + 2].split()[:2] == ["node01", "VIOLATION"] and "closing" not in res
    work = tmp_path / "old-name"
    work.mkdir()
    opened = _action({"state": "create", "root": str(work / "records"), "case_id": "case", "hosts": ["node01"],
                      "purpose": "fingerprint", "compatibility": {"enabled": True, "profile": "kimi-k3-h200"}})
    _h200_part(opened["path"], "node01")
    res = _action({"state": "close", "kind": "fleet", "path": opened["path"], "inputs": {"judge": judge}}, reports,
                  job_vars={"repro_vllm_fail_on_incomplete": False})
    assert res.get("failed") and "2 compatibility violation(s)" in res["msg"], res.get("msg")
    assert not [c for c in res["console"] if c.startswith("WARN")]


def test_the_fleet_close_of_a_run_not_judged_judges_nothing(tmp_path):
    reports = {"node01": _h200_record("node01")}
    path = _open(tmp_path, ["node01"], profile=None)
    _h200_part(path, "node01")
    res = _action({"state": "close", "kind": "fleet", "path": path, "inputs": {"judge": {"profile": "kimi-k3-h200"}}},
                  reports)
    assert not res.get("failed"), res
    assert res["compatibility"]["verdict"] == "unchecked" and not os.path.exists(os.path.join(path, "compatibility.json"))


def test_a_judge_that_cannot_read_a_host_part_freezes_the_run_without_it_then_fails(tmp_path):
    reports = {"node01": _h200_record("node01")}
    opened = _action({"state": "create", "root": str(tmp_path / "records"), "case_id": "case", "hosts": ["node01"],
                      "purpose": "fingerprint", "compatibility": {"enabled": True, "profile": "kimi-k3-h200"}})
    path = opened["path"]
    os.makedirs(os.path.join(path, "hosts", "node01"))
    with open(os.path.join(path, "hosts", "node01", "fingerprint.json"), "w") as fh:
        json.dump({"host": "node01", "gpu": {"gpus": "NVIDIA H200"}}, fh)
    res = _action({"state": "close", "kind": "fleet", "path": path, "inputs": {"judge": {"profile": "kimi-k3-h200"}}},
                  reports)
    assert res["failed"] and res["msg"].startswith("the run is frozen, but it has no compatibility.json: ")
    assert "host node01" in res["msg"] and "--limit node01" in res["msg"]
    assert _record.is_frozen(path) and not os.path.exists(os.path.join(path, "compatibility.json"))
    assert "compatibility" not in res


def test_the_audit_is_decided_by_the_fleet_close_after_its_judge(tmp_path):
    """audit.yml judges in its close as fingerprint.yml does: the close's judge, then the audit with the judge's
    document - the same audit.json and isolation.json as the old path (the compatibility action writing
    compatibility.json into the open run first, then the fleet_audit filter over that run)."""
    from ansible_collections.repro.vllm.plugins.action import compatibility
    from ansible_collections.repro.vllm.plugins.filter.decisions import fleet_audit
    hosts = ["node01", "node02"]
    hostvars = dict((h, {"_repro_vllm_host_record": _h200_record(h)}) for h in hosts)
    opened = _action({"state": "create", "root": str(tmp_path / "records"), "case_id": "case", "hosts": hosts,
                      "purpose": "audit", "compatibility": {"enabled": True, "profile": "kimi-k3-h200"}})
    path = opened["path"]
    for host in hosts:
        _h200_part(path, host)
    # the old path, on a copy of the open run
    old = str(tmp_path / "old" / "case" / os.path.basename(path))
    shutil.copytree(path, old)
    written = _action({"run_path": old, "hosts": hosts, "profile": "kimi-k3-h200", "write": True},
                      cls=compatibility.ActionModule, name="repro.vllm.compatibility")
    assert not written.get("failed"), written
    audit_in = {"baseline": "", "previous": os.path.dirname(path), "must_keep_serving": False,
                "records_root": str(tmp_path / "records"), "case_id": "case"}
    old_in = dict(audit_in, hosts=hosts)
    old_in["previous"] = os.path.dirname(old)
    expected = fleet_audit(old, **old_in)
    judge = {"profile": "kimi-k3-h200", "profile_file": None, "allow_foreign": False}
    planned = _action({"state": "close", "kind": "fleet", "path": path, "inputs": {"judge": judge, "audit": audit_in}},
                      hostvars, check_mode=True)
    assert planned["ansible_facts"]["repro_vllm_decision"]["verdict"] == "not run (check mode)"
    assert not _record.is_frozen(path) and not os.path.exists(os.path.join(path, "audit.json"))
    res = _action({"state": "close", "kind": "fleet", "path": path, "inputs": {"judge": judge, "audit": audit_in}},
                  hostvars)
    assert _record.is_frozen(path)
    for part, doc in (("audit.json", expected["audit"]), ("isolation.json", expected["isolation"])):
        with open(os.path.join(path, part)) as fh:
            got = json.load(fh)
        assert got == json.loads(json.dumps(doc).replace(old, path)), part
    assert res["ansible_facts"]["repro_vllm_decision"] == {
        "case_id": "case", "purpose": "audit", "run": path, "verdict": "violation", "drifted": [],
        "violations": expected["audit"]["violations"], "decision": expected["isolation"]["decision"],
        "conditions": []}
    # the console: the judge's lines, then the audit's (its verdict line), then the hosts and the record
    verdict = [i for i, ln in enumerate(res["console"]) if ln.startswith("audit | verdict violation | ")]
    assert len(verdict) == 1 and res["console"][0] == written["console"][0], res["console"]
    assert res["failed"] and "compatibility violation(s)" in res["msg"]
