# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_record as Ansible runs it: the module file in its own Python process, arguments in a JSON file."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.repro.vllm.plugins.modules import run_record
from ansible_collections.repro.vllm.tests.unit.plugins.modules import module_process


def run_module(tmp_path, check_mode=False, **args):
    return module_process.run_module(run_record, tmp_path, check_mode, **args)


@pytest.fixture
def root(tmp_path):
    return str(tmp_path / "records")


def test_full_cycle(tmp_path, root):
    plan = run_module(tmp_path, check_mode=True, state="create", root=root, case_id="kimi")
    assert plan["changed"] and plan["run_id"] == "run-001" and not os.path.exists(root)
    made = run_module(tmp_path, state="create", root=root, case_id="kimi")
    assert made["changed"] and made["run_id"] == "run-001" and made["number"] == 1 and made["case_id"] == "kimi"
    run = made["path"]
    assert run == os.path.join(root, "kimi", "run-001") and os.path.isdir(run)
    assert stat.S_IMODE(os.stat(run).st_mode) == 0o700

    w = run_module(tmp_path, state="write", path=run, part="hosts/node1/fingerprint.json",
                   json={"driver": "580.159.04", "gpus": [{"name": "NVIDIA H200"}]})
    assert w["changed"] and w["dest"] == os.path.join(run, "hosts", "node1", "fingerprint.json")
    assert json.load(open(w["dest"])) == {"driver": "580.159.04", "gpus": [{"name": "NVIDIA H200"}]}
    again = run_module(tmp_path, state="write", path=run, part="hosts/node1/fingerprint.json",
                       json={"gpus": [{"name": "NVIDIA H200"}], "driver": "580.159.04"})
    assert again["changed"] is False and again["sha256"] == w["sha256"]

    src = tmp_path / "server.log"
    src.write_text("INFO Started server process\n")
    c = run_module(tmp_path, state="write", path=run, part="hosts/node1/logs/server.log", src=str(src))
    assert c["changed"] and open(c["dest"]).read() == "INFO Started server process\n"
    n = run_module(tmp_path, state="write", path=run, part="notes.md", content="expected: ready\n")
    assert n["size"] == len("expected: ready\n")

    planned = run_module(tmp_path, check_mode=True, state="freeze", path=run, collection_version="0.1.0")
    assert planned["changed"] and not os.path.exists(os.path.join(run, "manifest.json"))
    fr = run_module(tmp_path, state="freeze", path=run, collection_version="0.1.0", metadata={"play": "reproduce"})
    assert fr["changed"] and fr["manifest"]["collection_version"] == "0.1.0"
    meta = fr["manifest"]["metadata"]
    assert meta["play"] == "reproduce" and meta["run_uid"] == fr["manifest"]["run_uid"]
    assert set(meta) == {"play", "run_uid", "opened", "owner", "profile", "profile_source"}
    # opened with no profile: the manifest says it was not judged, never a default profile's name
    assert meta["profile"] is None and meta["profile_source"] == "not judged"
    assert [f["path"] for f in fr["manifest"]["files"]] == [
        "hosts/node1/fingerprint.json", "hosts/node1/logs/server.log", "notes.md"]
    assert json.load(open(fr["manifest_path"])) == fr["manifest"]
    fr2 = run_module(tmp_path, state="freeze", path=run, collection_version="0.1.0")
    assert fr2["changed"] is False

    v = run_module(tmp_path, state="verify", path=run)
    assert v["ok"] and v["checked"] == 3 and not v.get("failed") and v["changed"] is False
    # a copy checked against the run it was made from (the records sink): its manifest must be that run's
    same = run_module(tmp_path, state="verify", path=run, manifest_sha256=v["manifest_sha256"])
    assert same["ok"] and not same.get("failed")
    other = run_module(tmp_path, state="verify", path=run, manifest_sha256="0" * 64)
    assert other["failed"] and other["ok"] is True and "another run of the same name" in other["msg"]
    assert v["manifest_sha256"] in other["msg"] and run in other["msg"]

    refused = run_module(tmp_path, state="write", path=run, part="notes.md", content="later\n", overwrite=True)
    assert refused["failed"] and "frozen" in refused["msg"] and run in refused["msg"]
    assert "start a new run" in refused["msg"]

    nxt = run_module(tmp_path, state="create", root=root, case_id="kimi")
    assert nxt["run_id"] == "run-002"


def test_verify_tampered(tmp_path, root):
    run = run_module(tmp_path, state="create", root=root)["path"]
    run_module(tmp_path, state="write", path=run, part="stages.json", json={"stage": "engine_init"})
    run_module(tmp_path, state="write", path=run, part="request.json", json={"prompt": "hi"})
    run_module(tmp_path, state="freeze", path=run)
    p = os.path.join(run, "stages.json")
    os.chmod(p, 0o644)
    with open(p, "w") as f:
        f.write('{"stage": "request"}\n')
    os.chmod(run, 0o755)
    os.unlink(os.path.join(run, "request.json"))
    with open(os.path.join(run, "extra.txt"), "w") as f:
        f.write("x")
    bad = run_module(tmp_path, state="verify", path=run)
    assert bad["failed"] and bad["ok"] is False
    assert "changed: stages.json" in bad["msg"] and "missing: request.json" in bad["msg"]
    assert "not in the manifest: extra.txt" in bad["msg"] and run in bad["msg"]
    assert [m["path"] for m in bad["mismatched"]] == ["stages.json"]
    report = run_module(tmp_path, state="verify", path=run, fail_on_mismatch=False)
    assert not report.get("failed") and report["ok"] is False and report["unexpected"] == ["extra.txt"]


def test_errors_are_clear(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    res = run_module(tmp_path, state="create", root=str(afile))
    assert res["failed"] and str(afile) in res["msg"] and "not a directory" in res["msg"]
    res = run_module(tmp_path, state="create", root=str(tmp_path / "no" / "such"))
    assert res["failed"] and "does not exist" in res["msg"]
    res = run_module(tmp_path, state="create", root=str(tmp_path / "r"), case_id="../etc")
    assert res["failed"] and "case_id" in res["msg"]
    run = run_module(tmp_path, state="create", root=str(tmp_path / "r"))["path"]
    res = run_module(tmp_path, state="write", path=run, part="../../escape", content="x")
    assert res["failed"] and "inside the run" in res["msg"]
    res = run_module(tmp_path, state="write", path=run, part="a.txt", content="x", json={"a": 1})
    assert res["failed"] and "mutually exclusive" in res["msg"]
    res = run_module(tmp_path, state="write", path=run, part="a.txt")
    assert res["failed"] and "content" in res["msg"]
    res = run_module(tmp_path, state="verify", path=run)
    assert res["failed"] and "not a frozen record" in res["msg"]
    res = run_module(tmp_path, state="create")
    assert res["failed"] and "root" in res["msg"]
