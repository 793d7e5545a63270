# -*- coding: utf-8 -*-
"""playbooks/fingerprint.yml on the embedded default inventory (localhost), as README command (a) runs it."""
from __future__ import annotations

import json
import os
import re
import subprocess

from conftest import COLLECTIONS, ROOT, check_frozen, replay_wrapper, run_playbook, task_results

INVENTORY = os.path.join(ROOT, "inventories", "localhost")
FAKE_TOKEN = "hf_" + "FAKE" * 9  # obviously fake


def _vars(tmp_path, **extra):
    v = {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": "lh",
         "repro_vllm_remote_root": str(tmp_path / "remote"),
         "repro_vllm_nvidia_smi_path": replay_wrapper(tmp_path, "h200", "h200-1gpu")}
    v.update(extra)
    return v


def _galaxy_version():
    import yaml
    with open(os.path.join(ROOT, "galaxy.yml")) as f:
        return str(yaml.safe_load(f)["version"])


def test_localhost_run_is_frozen_verified_and_redacted(tmp_path):
    r = run_playbook(tmp_path, "playbooks/fingerprint.yml", INVENTORY, _vars(tmp_path), ident="a",
                     envvars={"HF_TOKEN": FAKE_TOKEN})
    assert r.status == "successful", r.stdout.read()
    run = tmp_path / "records" / "lh" / "run-001"
    manifest = check_frozen(str(run))
    assert manifest["schema_version"] == 3 and manifest["collection_version"] == _galaxy_version()
    paths = {e["path"] for e in manifest["files"]}
    assert {"fleet.json", "notes.md", "hosts/localhost/fingerprint.json", "hosts/localhost/env.json",
            "hosts/localhost/container.json", "hosts/localhost/manifest.json"} <= paths
    # the host's own sub-record verifies too (it was checked on the controller after the fetch)
    host_manifest = check_frozen(str(run / "hosts" / "localhost"))
    assert (host_manifest["case_id"], host_manifest["run_id"]) == ("lh", "run-001")
    assert host_manifest["collection_version"] == _galaxy_version() and host_manifest["schema_version"] == 3
    assert not (tmp_path / "remote").exists()  # nothing is staged on the host for a fingerprint
    fp = json.loads((run / "hosts" / "localhost" / "fingerprint.json").read_text())
    gpu = fp["gpu"]
    assert gpu["present"] is True
    assert gpu["gpus"][0]["name"] == "NVIDIA H200"
    env_text = (run / "hosts" / "localhost" / "env.json").read_text()
    marker = json.loads(env_text)["HF_TOKEN"]
    assert FAKE_TOKEN not in env_text and re.match(r"^<redacted:[a-z0-9_]+:[0-9a-f]{8,}>$", marker), marker
    # the case's key stays on the controller beside the runs, never inside one
    key = tmp_path / "records" / "lh" / ".redact.key"
    assert key.is_file() and (key.stat().st_mode & 0o077) == 0
    assert not any(p.name == ".redact.key" for p in run.rglob("*"))
    assert key.read_text().strip() not in env_text
    # the same secret in a second run of the case gives the same marker (a reader sees the two values were equal)
    r2 = run_playbook(tmp_path, "playbooks/fingerprint.yml", INVENTORY, _vars(tmp_path), ident="a2",
                      envvars={"HF_TOKEN": FAKE_TOKEN})
    assert r2.status == "successful", r2.stdout.read()
    env2 = json.loads((tmp_path / "records" / "lh" / "run-002" / "hosts" / "localhost" / "env.json").read_text())
    assert env2["HF_TOKEN"] == marker
    fleet = json.loads((run / "fleet.json").read_text())
    assert [h["status"] for h in fleet["hosts"]] == ["ok"]
    assert fleet["hosts"][0]["driver"] == "580.159.04"
    # the play's own log is in the run, redacted, and runs past the host part's freeze up to the run's own
    log = (run / "terminal.log").read_text()
    assert "Fingerprint localhost into run-001" in log and "Close the run" in log
    assert log.rstrip().endswith("the run is being frozen; terminal.log ends here") and FAKE_TOKEN not in log
    # the summary line printed for the operator names driver and GPU (the close's console lines: the judge's, then one
    # per host, then where the record is)
    lines = [res.get("console") for _h, _e, res in task_results(r, "Close the run")]
    assert lines and lines[0][0].startswith("compatibility | profile cpu-smoke: ")
    hosts = [line for line in lines[0] if not line.startswith(("compatibility | ", "record | ", "result | "))]
    # without a records sink the close hands the result on itself: its last line is the result's
    assert lines[0][-1] == "result | fingerprint | case lh | 1 run(s), last %s" % run, lines
    assert len(hosts) == 1 and hosts[0].startswith("localhost: ok | driver 580.159.04 | 1 x NVIDIA H200"), lines


def test_second_run_gets_next_number_and_leaves_first_untouched(tmp_path):
    assert run_playbook(tmp_path, "playbooks/fingerprint.yml", INVENTORY, _vars(tmp_path), ident="a").status == "successful"
    first = check_frozen(str(tmp_path / "records" / "lh" / "run-001"))
    assert run_playbook(tmp_path, "playbooks/fingerprint.yml", INVENTORY, _vars(tmp_path), ident="b").status == "successful"
    check_frozen(str(tmp_path / "records" / "lh" / "run-002"))
    assert check_frozen(str(tmp_path / "records" / "lh" / "run-001")) == first


def test_check_mode_writes_nothing(tmp_path):
    r = run_playbook(tmp_path, "playbooks/fingerprint.yml", INVENTORY, _vars(tmp_path), ident="c", cmdline="--check")
    assert r.status == "successful", r.stdout.read()
    assert not (tmp_path / "records").exists() or not any((tmp_path / "records").rglob("*.json"))
    assert not (tmp_path / "remote").exists() or not any((tmp_path / "remote").rglob("*.json"))


def test_records_root_not_writable_fails_with_the_path(tmp_path):
    blocker = tmp_path / "records-is-a-file"
    blocker.write_text("not a directory\n")
    r = run_playbook(tmp_path, "playbooks/fingerprint.yml", INVENTORY,
                     _vars(tmp_path, repro_vllm_records_root=str(blocker)), ident="d")
    assert r.status == "failed"
    failures = [res.get("msg", "") for _h, ev, res in task_results(r, "") if ev == "runner_on_failed"]
    assert any(str(blocker) in m for m in failures), failures


def test_frozen_run_refuses_writes_and_verify_detects_tampering(tmp_path):
    assert run_playbook(tmp_path, "playbooks/fingerprint.yml", INVENTORY, _vars(tmp_path), ident="e").status == "successful"
    run = tmp_path / "records" / "lh" / "run-001"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))

    def adhoc(args):
        return subprocess.run(["ansible", "localhost", "-i", INVENTORY, "-m", "repro.vllm.run_record", "-a", args],
                              env=env, capture_output=True, text=True, timeout=120, check=False)

    w = adhoc("state=write path=%s part=extra.txt content=late" % run)
    assert w.returncode != 0 and "frozen" in w.stdout.lower(), w.stdout
    assert not (run / "extra.txt").exists()
    assert adhoc("state=verify path=%s" % run).returncode == 0
    target = run / "hosts" / "localhost" / "fingerprint.json"
    target.chmod(0o644)
    target.write_text(target.read_text().replace("NVIDIA H200", "NVIDIA H100"))
    v = adhoc("state=verify path=%s" % run)
    assert v.returncode != 0 and "hosts/localhost/fingerprint.json" in v.stdout, v.stdout


def test_a_profile_file_wins_over_the_inventorys_profile_name(tmp_path):
    """Issue 32 item 6: the shipped inventory's group_vars set repro_vllm_profile (cpu-smoke), so
    -e repro_vllm_profile_file=... was refused as "both given". The file is used now, and the console says why."""
    with open(os.path.join(ROOT, "profiles", "cpu-smoke.yml")) as f:
        text = f.read().replace("name: cpu-smoke", "name: my-cpu-profile")
    mine = tmp_path / "my-profile.yml"
    mine.write_text(text)
    r = run_playbook(tmp_path, "playbooks/fingerprint.yml", INVENTORY,
                     _vars(tmp_path, repro_vllm_profile_file=str(mine)), ident="pf")
    out = r.stdout.read()
    assert r.status == "successful", out
    # the line the console prints (the open's console lines, as the job events carry them)
    lines = [line for _h, _e, res in task_results(r, "") for line in res.get("console") or []]
    assert ("compatibility | profile file %s used (repro_vllm_profile_file); it wins over repro_vllm_profile=cpu-smoke "
            "(set in the inventory or on the command line), which is ignored" % mine) in lines, lines
    compat = json.loads((tmp_path / "records" / "lh" / "run-001" / "compatibility.json").read_text())
    assert compat["profile"] == "my-cpu-profile" and compat["verdict"] == "pass"
