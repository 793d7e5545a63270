# -*- coding: utf-8 -*-
"""host_record's module side as Ansible runs it on a node: one process gathers, caps, redacts and stages; a second
call removes only what it is told after the controller verified its copy."""
from __future__ import annotations

import base64
import hashlib
import os

from ansible_collections.repro.vllm.plugins.modules import host_record
from ansible_collections.repro.vllm.tests.unit.plugins.modules import module_process

FAKE = "hf_" + "FAKE" * 9  # obviously fake


def run_module(tmp_path, check_mode=False, **args):
    args.setdefault("run_path", str(tmp_path / "run"))
    return module_process.run_module(host_record, tmp_path, check_mode, **args)


def test_one_call_brings_basics_and_capped_redacted_files(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("token HF_TOKEN=%s\n" % FAKE + "".join("line %05d\n" % i for i in range(20000)))
    small = tmp_path / "memory.jsonl"
    small.write_text('{"t": 1, "used_mib": 512}\n')
    stage_root = tmp_path / "stage"
    stage_root.mkdir()
    res = run_module(tmp_path, gather=["basics"], log_max_bytes=8192, inline_max_bytes=4096,
                     staging_root=str(stage_root), staging_label="case-run-001-node01",
                     files=[{"src": str(log), "part": "logs/server.log", "required": True},
                            {"src": str(small), "part": "memory.jsonl"},
                            {"src": str(tmp_path / "absent.log"), "part": "logs/absent.log"}])
    assert not res.get("failed"), res
    assert res["basics"]["python"]["major"] == 3 and "env" in res["basics"]
    big, mem, absent = res["files"]
    assert absent["status"] == "missing"
    assert mem["transfer"] == "inline" and base64.b64decode(mem["content_b64"]) == small.read_bytes()
    assert big["transfer"] == "staged" and big["cut"]["length"] > 0 and big["redacted"]
    assert os.path.dirname(big["staged_path"]) == res["staging_dir"]
    assert os.path.basename(res["staging_dir"]).startswith("repro-vllm-stage-case-run-001-node01-")
    with open(big["staged_path"], "rb") as f:
        sent = f.read()
    assert hashlib.sha256(sent).hexdigest() == big["sha256"] and FAKE.encode() not in sent
    cleaned = run_module(tmp_path, cleanup=[res["staging_dir"]])
    assert cleaned["removed"] == [res["staging_dir"]] and not os.path.exists(res["staging_dir"])
    assert os.path.exists(str(log))  # the source is never touched unless named


def test_check_mode_stages_nothing(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("x\n" * 10000)
    res = run_module(tmp_path, check_mode=True, files=[{"src": str(log), "part": "logs/server.log"}],
                     inline_max_bytes=10, staging_root=str(tmp_path))
    assert res["files"][0]["transfer"] == "planned" and res["staging_dir"] is None


def test_bad_arguments_are_refused(tmp_path):
    assert "positive" in run_module(tmp_path, command_timeout=0)["msg"]
    assert "too small" in run_module(tmp_path, log_max_bytes=10)["msg"]
