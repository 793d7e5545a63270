# -*- coding: utf-8 -*-
"""The one record path (repro.vllm.host_record) under playbooks/fingerprint.yml, over real sshd hosts on loopback:
fresh records roots and two controllers at once, --limit, no matching host, a hung nvidia-smi, a failed host's
real error, a frozen folder of the old staging layout, and a relative records root from another directory."""
from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml

from conftest import COLLECTIONS, ROOT, SshHosts, check_frozen, free_port, replay_wrapper, run_playbook, task_results

LOCAL_INVENTORY = os.path.join(ROOT, "inventories", "localhost")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Three real sshd hosts, shared by the tests of this file (each test uses its own records root)."""
    base = tmp_path_factory.mktemp("fp-record")
    hosts = SshHosts(base / "hosts", 3)
    smi = replay_wrapper(base, "ok", "h200-1gpu")
    with open(hosts.inventory) as f:
        inv = yaml.safe_load(f)
    for name in hosts.names:
        inv["sshhosts"]["hosts"][name]["repro_vllm_nvidia_smi_path"] = smi
    path = base / "inventory.yml"
    path.write_text(yaml.safe_dump(inv))
    hosts.inventory_ok = str(path)
    hosts.raw = inv
    hosts.base_dir = base
    yield hosts
    hosts.stop()


def _inventory(fleet, tmp_path, per_host):
    inv = json.loads(json.dumps(fleet.raw))
    for name, hv in per_host.items():
        inv["sshhosts"]["hosts"][name].update(hv)
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inv))
    return str(path)


def _fleet(run):
    return {h["host"]: h for h in json.loads((run / "fleet.json").read_text())["hosts"]}


def _failures(runner):
    return [str(res.get("msg", "")) for _h, ev, res in task_results(runner, "") if ev == "runner_on_failed"]


def test_same_case_from_two_controllers_at_once_into_fresh_roots(fleet, tmp_path):
    # the old layout's staging folder of this case is there on the hosts, frozen: it must stay untouched
    old = tmp_path / "remote" / "twice" / "run-001" / "hosts" / "node01"
    old.mkdir(parents=True)
    (old / "manifest.json").write_text('{"files": []}\n')
    old.chmod(0o555)
    before = (oct(old.stat().st_mode), old.stat().st_mtime_ns, sorted(os.listdir(old)))
    runners = []
    for ident in ("ctl-a", "ctl-b"):
        thread, r = run_playbook(tmp_path, "playbooks/fingerprint.yml", fleet.inventory_ok,
                                 {"repro_vllm_records_root": str(tmp_path / ("records-" + ident)),
                                  "repro_vllm_case_id": "twice", "repro_vllm_remote_root": str(tmp_path / "remote")},
                                 ident=ident, block=False)
        runners.append((thread, r, ident))
    for thread, r, ident in runners:
        thread.join(timeout=300)
        assert r.status == "successful", (ident, r.stdout.read())
        run = tmp_path / ("records-" + ident) / "twice" / "run-001"
        check_frozen(str(run))
        assert {n: h["status"] for n, h in _fleet(run).items()} == dict.fromkeys(fleet.names, "ok")
        for name in fleet.names:
            man = check_frozen(str(run / "hosts" / name))
            assert (man["case_id"], man["run_id"], man["schema_version"]) == ("twice", "run-001", 3)
            assert man["collection_version"] not in ("unknown", "") and man["metadata"]["host"] == name
    assert (oct(old.stat().st_mode), old.stat().st_mtime_ns, sorted(os.listdir(old))) == before
    old.chmod(0o755)
    # nothing new was created on the hosts: no staging folder is needed for a fingerprint
    assert sorted(p.name for p in (tmp_path / "remote" / "twice").iterdir()) == ["run-001"]


def test_limit_opens_the_run_and_expects_only_the_limited_host(fleet, tmp_path):
    # a judged run: the profile check and the compatibility play run on the controller although the limit leaves
    # localhost out
    r = run_playbook(tmp_path, "playbooks/fingerprint.yml", fleet.inventory_ok,
                     {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": "lim",
                      # the one-GPU capture violates the H200 profile (gpus_per_host): this test is about --limit, so
                      # the job only records (the exit rule: docs/method.md)
                      "repro_vllm_profile": "kimi-k3-h200", "repro_vllm_record_only": True},
                     ident="limit", cmdline="--limit node02")
    assert r.status == "successful", r.stdout.read()
    run = tmp_path / "records" / "lim" / "run-001"
    man = check_frozen(str(run))
    assert list(_fleet(run)) == ["node02"]
    assert sorted(os.listdir(run / "hosts")) == ["node02"]
    compat = json.loads((run / "compatibility.json").read_text())
    assert compat["profile"] == "kimi-k3-h200" and "compatibility.json" in [f["path"] for f in man["files"]]
    # the open's gate checked the profile once, for the play's one host (node02: the limit leaves localhost out)
    opened = [(host, res) for host, ev, res in task_results(r, "Open the next run of case") if ev == "runner_on_ok"]
    assert [host for host, _res in opened] == ["node02"]
    assert opened[0][1]["console"][0].startswith("compatibility | profile kimi-k3-h200 (profiles/kimi-k3-h200.yml)")


def test_no_matching_host_fails_naming_the_pattern_and_opens_nothing(fleet, tmp_path):
    r = run_playbook(tmp_path, "playbooks/fingerprint.yml", fleet.inventory_ok,
                     {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": "none",
                      "repro_vllm_targets": "gpu_nodes_typo"}, ident="nomatch")
    assert r.status == "failed"
    assert any("no host matches the target pattern 'gpu_nodes_typo'" in m for m in _failures(r)), _failures(r)
    assert not (tmp_path / "records").exists()


def test_hung_smi_is_degraded_and_a_failed_host_keeps_its_real_error(fleet, tmp_path):
    inv = _inventory(fleet, tmp_path, {
        "node02": {"repro_vllm_nvidia_smi_path": replay_wrapper(tmp_path, "hang", "h200-1gpu", sleep=30),
                   "repro_vllm_command_timeout": 2},
        "node03": {"ansible_python_interpreter": "/nonexistent/python3"},
    })
    r = run_playbook(tmp_path, "playbooks/fingerprint.yml", inv,
                     {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": "bad"}, ident="bad")
    assert r.status == "failed"  # after freezing: two hosts are not complete
    run = tmp_path / "records" / "bad" / "run-001"
    check_frozen(str(run))
    fl = _fleet(run)
    assert [fl[n]["status"] for n in fleet.names] == ["ok", "degraded", "failed"]
    assert "timed out after 2.0s" in fl["node02"]["detail"] and "--version" in fl["node02"]["detail"]
    check_frozen(str(run / "hosts" / "node03"))
    failed = json.loads((run / "hosts" / "node03" / "failed.json").read_text())
    assert failed["status"] == "failed" and failed["stage"] == "fingerprint"
    real = json.dumps(failed)
    assert "/nonexistent/python3" in real and "One or more items failed" not in real, failed


def test_relative_records_root_resolves_against_the_working_directory(tmp_path):
    work = tmp_path / "operator-dir"
    work.mkdir()
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               ANSIBLE_NOCOLOR="1")
    env.pop("PWD", None)  # the old default was built from $PWD
    proc = subprocess.run(
        ["ansible-playbook", "-i", LOCAL_INVENTORY, os.path.join(ROOT, "playbooks", "fingerprint.yml"),
         "-e", "repro_vllm_records_root=records", "-e", "repro_vllm_case_id=rel",
         "-e", "repro_vllm_nvidia_smi_path=%s" % replay_wrapper(tmp_path, "rel", "h200-1gpu")],
        cwd=str(work), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    check_frozen(str(work / "records" / "rel" / "run-001"))
    assert "records root %s" % (work / "records") in proc.stdout
    assert "resolved against the working directory %s" % work in proc.stdout
    assert not os.path.exists(os.path.join(ROOT, "playbooks", "records"))


def test_command_timeout_must_fit_inside_the_task_timeout(tmp_path):
    r = run_playbook(tmp_path, "playbooks/fingerprint.yml", LOCAL_INVENTORY,
                     {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": "tmo",
                      "repro_vllm_command_timeout": 60, "repro_vllm_task_timeout": 30,
                      "repro_vllm_nvidia_smi_path": replay_wrapper(tmp_path, "t", "h200-1gpu")}, ident="tmo")
    assert r.status == "failed"
    assert any("command_timeout 60.0s must be smaller than the task timeout 30s" in m for m in _failures(r)), _failures(r)
    assert _fleet(tmp_path / "records" / "tmo" / "run-001")["localhost"]["status"] == "failed"


def _per_host_tasks(runner):
    """{node: [(play, task, event, action, role)]} of the finished tasks of the sshd hosts."""
    per_host = {}
    for ev in runner.events:
        d = ev.get("event_data", {})
        if ev.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_skipped") and d.get("host", "").startswith("node"):
            per_host.setdefault(d["host"], []).append(
                (d.get("play"), d.get("task"), ev["event"], d.get("task_action"), d.get("role", "")))
    return per_host


def test_the_host_naming_a_production_server_freezes_it_in_its_one_task_and_no_host_pays_a_skipped_task(fleet, tmp_path):
    # node01 names a real process on this machine (the sshd hosts are loopback, so /proc is shared) as its
    # production server, in its host variables; node02 and node03 name none
    server = subprocess.Popen(["sleep", "300"])  # pylint: disable=consider-using-with
    try:
        inv = _inventory(fleet, tmp_path, {"node01": {"repro_vllm_service": {"kind": "pid", "pid": server.pid}}})
        r = run_playbook(tmp_path, "playbooks/fingerprint.yml", inv,
                         {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": "svc"}, ident="svc")
        # audit.yml fingerprints the same way (the same one task per host), here with --limit leaving node03 out
        a = run_playbook(tmp_path, "playbooks/audit.yml", inv,
                         {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": "svc-audit"},
                         ident="svc-audit", cmdline="--limit node01,node02,localhost")
    finally:
        server.kill()
        server.wait(timeout=10)
    out = r.stdout.read()
    assert r.status == "successful", out[-3000:]
    run = tmp_path / "records" / "svc" / "run-001"
    check_frozen(str(run))
    assert {h: s["status"] for h, s in _fleet(run).items()} == {"node01": "ok", "node02": "ok", "node03": "ok"}
    service = json.loads((run / "hosts" / "node01" / "service.json").read_text())
    assert service["pid"] == server.pid and service["kind"] == "pid" and service["status"] == "ok"
    assert service["cmdline"] == ["sleep", "300"]
    # the server's record is part of node01's own frozen part (its manifest lists it), not written beside it
    manifest = json.loads((run / "hosts" / "node01" / "manifest.json").read_text())
    assert "service.json" in [f["path"] for f in manifest["files"]], manifest["files"]
    assert not (run / "hosts" / "node02" / "service.json").exists()
    # the task's console lines (what repro.vllm.console prints) say what was read, naming the host and the process
    said = [ev["event_data"]["res"].get("console") for ev in r.events if ev.get("event") == "runner_on_ok"
            and ev["event_data"].get("task_action") == "repro.vllm.host_record"]
    line = "service | node01 | pid ok | pid %d | restarts None | last exit codes []" % server.pid
    assert sorted(map(str, said)) == sorted(["[]", "[]", str([line])]), said
    # every host, the one naming a server included, ran exactly one task in the fingerprint play: host_record (the
    # server read inside it); no skipped include, no argument check on a host (the first play checked the variables)
    for runner, hosts, play_word in ((r, ("node01", "node02", "node03"), "every host, independently"),
                                     (a, ("node01", "node02"), "fingerprint every host")):
        per_host = _per_host_tasks(runner)
        for host in hosts:
            mine = [t for t in per_host[host] if play_word in (t[0] or "")]
            assert [(t[2], t[3]) for t in mine] == [("runner_on_ok", "repro.vllm.host_record")], (host, mine)
        assert not [t for tasks in per_host.values() for t in tasks if t[3] == "repro.vllm.served_process"]
    # the audit: only the limited hosts expected and recorded, node03 never contacted, node01's server frozen
    assert a.status == "successful", a.stdout.read()[-3000:]
    audit_run = tmp_path / "records" / "svc-audit" / "run-001"
    check_frozen(str(audit_run))
    assert sorted(_fleet(audit_run)) == ["node01", "node02"]
    assert (audit_run / "hosts" / "node01" / "service.json").is_file()
    assert "node03" not in _per_host_tasks(a)


def _table(out):
    """{host: (status, error class, record)} of the console's closing table (repro.vllm.console)."""
    lines = out.splitlines()
    head = max(i for i, line in enumerate(lines) if line.split()[:2] == ["host", "status"])
    rows = {}
    for line in lines[head + 1:]:
        if not line.strip() or line.startswith("recap ") or line.startswith("result |"):
            break
        cells = [c for c in line.split("  ") if c.strip()]
        rows[cells[0].strip()] = tuple(c.strip() for c in cells[1:])
    return rows


def test_comma_list_targets_a_name_that_matches_nothing_and_an_unreachable_host(fleet, tmp_path):
    # node09 is a host of the inventory whose sshd is not there (nothing listens on its port): unreachable
    inv = json.loads(json.dumps(fleet.raw))
    inv["sshhosts"]["hosts"]["node09"] = dict(inv["sshhosts"]["hosts"]["node01"], ansible_port=free_port())
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inv))
    console = {"ANSIBLE_STDOUT_CALLBACK": "repro.vllm.console"}
    common = {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_remote_root": str(tmp_path / "remote")}

    # a comma list as an AWX survey hands it on; "old" is in no inventory: the job fails before the run opens,
    # naming it, and nothing is audited
    r = run_playbook(tmp_path, "playbooks/audit.yml", str(path),
                     dict(common, repro_vllm_case_id="named", repro_vllm_targets="node01,node02,old"),
                     ident="named", envvars=console)
    out = r.stdout.read()
    assert r.status == "failed", out[-3000:]
    assert any(m.startswith("repro_vllm_targets names 1 host(s) that match nothing: old (not a host or group of the "
                            "inventory); targets read as 'node01,node02,old'") for m in _failures(r)), _failures(r)
    assert not (tmp_path / "records").exists()
    assert not [h for h, _e, _res in task_results(r, "Fingerprint node") if h.startswith("node")]
    table = _table(out)
    assert table["old"][:2] == ("NOT MATCHED", "-") and table["old"][2] == "not_in_inventory", table
    assert table["node01"][0] == table["node02"][0] == "NOT RECORDED", table
    assert table["controller"][0] == "FAILED" and "Open the next run" in table["controller"][2], table

    # every name a host: the run opens with all three; node09 cannot be reached: its record and the table say
    # unreachable, the healthy hosts ok; the job fails by the exit rule (a host is not complete), which is no error of
    # the controller's (no controller row)
    r = run_playbook(tmp_path, "playbooks/audit.yml", str(path),
                     dict(common, repro_vllm_case_id="dark", repro_vllm_targets="node01, node02,node09"),
                     ident="dark", envvars=console)
    out = r.stdout.read()
    assert r.status == "failed", out[-3000:]  # after freezing: node09 is not complete
    run = tmp_path / "records" / "dark" / "run-001"
    check_frozen(str(run))
    assert {h: s["status"] for h, s in _fleet(run).items()} == {"node01": "ok", "node02": "ok", "node09": "unreachable"}
    audit = json.loads((run / "audit.json").read_text())
    assert audit["unreachable"] == ["node09"], audit
    table = _table(out)
    expected = {"node01": "ok", "node02": "ok", "node09": "UNREACHABLE"}
    assert {h: row[0] for h, row in table.items()} == expected, out[-3000:]
    assert table["node01"][-1] == str(run) and table["node09"][-1] == str(run)
    assert "not every host is complete in it: node09" in out
    # the audit says it could not look at node09, never that every host matches
    # (its part holds unreachable.json: the connection failed inside the record task, so the audit names why)
    assert "audit | node09 | NOT AUDITED | unreachable" in out and "every host matches the majority" not in out
    assert (run / "hosts" / "node09" / "unreachable.json").is_file()


def test_the_cli_console_says_violation_and_the_job_fails_unless_it_only_records(tmp_path):
    """Issue 32, observation 2: fingerprint.yml against a profile the hosts violate said FAIL, then a closing table
    with the hosts ``ok`` and rc 0 (the table read the compatibility action's result only, while fingerprint.yml
    judges in its close). Through the CLI console (the project's ansible.cfg): the hosts' rows say VIOLATION, each
    violation line is printed once (the close's ``msg`` is not printed again), the job ends rc 2 after the freeze;
    with repro_vllm_record_only it ends 0 and says so."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               ANSIBLE_NOCOLOR="1")
    smi = replay_wrapper(tmp_path, "gb", "h200-1gpu")

    def play(case, *extra):
        return subprocess.run(
            ["ansible-playbook", "-i", LOCAL_INVENTORY, os.path.join(ROOT, "playbooks", "fingerprint.yml"),
             "-e", "repro_vllm_records_root=%s" % (tmp_path / "records"), "-e", "repro_vllm_case_id=%s" % case,
             "-e", "repro_vllm_nvidia_smi_path=%s" % smi, "-e", "repro_vllm_profile=kimi-k3-gb300"] + list(extra),
            env=env, capture_output=True, text=True, timeout=300, check=False)

    proc = play("gb")
    out = proc.stdout
    assert proc.returncode == 2, out[-3000:] + proc.stderr[-2000:]
    check_frozen(str(tmp_path / "records" / "gb" / "run-001"))
    assert out.count("compatibility | VIOLATION localhost | gpu_model | ") == 1, out
    assert out.count("compatibility | profile kimi-k3-gb300: FAIL, 5 violation(s)") == 1, out
    assert "=> {" not in out and '"msg"' not in out, out  # no result dump on the console
    table = _table(out)
    assert {h: row[0] for h, row in table.items()} == {"localhost": "VIOLATION", "job": "VIOLATION"}, out[-3000:]
    assert table["localhost"][2] == "gpu_model, gpus_per_host, fabric, imex" and table["job"][2] == "gpu_count", table
    assert "the run is frozen, but 5 compatibility violation(s)" in proc.stdout + proc.stderr

    proc = play("gb-recorded", "-e", "repro_vllm_record_only=true")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "exit | record only (repro_vllm_record_only): the job does not fail on 5 compatibility violation(s)" \
        in proc.stdout
    assert {h: row[0] for h, row in _table(proc.stdout).items()} == {"localhost": "VIOLATION", "job": "VIOLATION"}
