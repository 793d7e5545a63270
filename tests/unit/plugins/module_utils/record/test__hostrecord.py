# -*- coding: utf-8 -*-
"""The host side of repro.vllm.host_record: capped and redacted files, host basics, the ok/degraded verdict.

The verdict tests run the real gpu_facts gathering against the nvidia-smi replay of real H200 captures
(tests/fixtures/h200-1gpu), once answering and once hanging past the command timeout."""
from __future__ import annotations

import base64
import hashlib
import os
import stat
import sys

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.gpu import _gpu
from ansible_collections.repro.vllm.plugins.module_utils.record import _hostrecord as h

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
REPLAY = os.path.join(ROOT, "tests", "fixtures", "bin", "nvidia-smi-replay")
CAPTURE = os.path.join(ROOT, "tests", "fixtures", "h200-1gpu")
FAKE = "hf_" + "FAKE" * 9  # obviously fake


def _log(path, lines):
    with open(path, "w") as f:
        for i in range(lines):
            f.write("INFO line %06d of the server log\n" % i)
    return str(path)


def test_small_file_is_read_whole_and_not_cut(tmp_path):
    src = _log(tmp_path / "a.log", 10)
    data, original, cut = h.cap_bytes(src, 10_000)
    with open(src, "rb") as f:
        whole = f.read()
    assert data == whole and cut is None
    assert original == {"size": len(whole), "sha256": hashlib.sha256(whole).hexdigest()}


def test_large_file_keeps_head_and_tail_and_the_cut_hash_is_of_the_cut_bytes(tmp_path):
    src = _log(tmp_path / "big.log", 20_000)
    with open(src, "rb") as f:
        whole = f.read()
    data, original, cut = h.cap_bytes(src, 4096)
    assert original["size"] == len(whole) and cut["length"] > 0
    assert cut["kept_head"] + cut["length"] + cut["kept_tail"] == len(whole)
    assert cut["kept_head"] + cut["kept_tail"] <= 4096
    removed = whole[cut["offset"]:cut["offset"] + cut["length"]]
    assert hashlib.sha256(removed).hexdigest() == cut["sha256"]
    assert data.startswith(whole[:cut["kept_head"]]) and data.endswith(whole[-cut["kept_tail"]:])
    assert whole[:cut["kept_head"]].endswith(b"\n") and b"line 000000" in data and b"line 019999" in data
    assert b"%d bytes cut here" % cut["length"] in data and cut["sha256"].encode() in data


def test_file_is_redacted_on_the_host_and_sent_inline_with_its_own_hash(tmp_path):
    src = tmp_path / "server.log"
    src.write_text("start\nexport HF_TOKEN=%s\nAuthorization: Bearer abcdefgh12345678\nend\n" % FAKE)
    out = h.prepare_file({"src": str(src), "part": "logs/server.log"}, 1 << 20, 1 << 20, lambda: pytest.fail("staged"))
    sent = base64.b64decode(out["content_b64"])
    assert out["transfer"] == "inline" and out["redacted"] and FAKE.encode() not in sent
    assert sent.count(b"\n") == 4 and out["sha256"] == hashlib.sha256(sent).hexdigest() and out["size"] == len(sent)
    assert out["original"]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()


def test_large_result_goes_through_a_new_private_staging_folder(tmp_path):
    src = _log(tmp_path / "big.log", 5000)
    stage_root = tmp_path / "stage"
    stage_root.mkdir()
    existing = stage_root / ("%scase-run-001-node01-old" % h.STAGING_PREFIX)
    existing.mkdir()
    made = []

    def factory():
        if not made:
            made.append(h.new_staging_dir(str(stage_root), "case-run-001-node01"))
        return made[0]

    out = h.prepare_file({"src": src, "part": "logs/server.log"}, 1 << 20, 1000, factory)
    assert out["transfer"] == "staged" and os.path.dirname(out["staged_path"]) == made[0]
    assert made[0] != str(existing) and os.listdir(str(existing)) == []  # never an existing folder
    assert stat.S_IMODE(os.stat(made[0]).st_mode) == 0o700
    with open(out["staged_path"], "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == out["sha256"]


def test_missing_files(tmp_path):
    def never():
        pytest.fail("staged")

    assert h.prepare_file({"src": str(tmp_path / "x"), "part": "x"}, 4096, 4096, never)["status"] == "missing"
    req = h.prepare_file({"src": str(tmp_path / "x"), "part": "x", "required": True}, 4096, 4096, never)
    assert req["status"] == "error" and "does not exist" in req["msg"]
    assert h.prepare_file({"src": str(tmp_path), "part": "x"}, 4096, 4096, never)["status"] == "error"


def test_basics_redact_the_environment():
    b = h.basics(environ={"HF_TOKEN": FAKE, "PATH": "/usr/bin", "VLLM_MAX_NUM_BATCHED_TOKENS": "8192"})
    assert b["env"]["HF_TOKEN"] == "<redacted>" and b["env"]["PATH"] == "/usr/bin"
    assert b["env"]["VLLM_MAX_NUM_BATCHED_TOKENS"] == "8192"
    assert b["kernel"] and b["python"]["major"] == 3 and b["collected_at"].endswith("Z")


def _gather(monkeypatch, sleep, timeout):
    monkeypatch.setenv("REPRO_VLLM_REPLAY_DIR", CAPTURE)
    monkeypatch.setenv("REPRO_VLLM_REPLAY_SLEEP", str(sleep))
    return _gpu.gather({"nvidia_smi_path": REPLAY, "command_timeout": timeout})


def test_answering_nvidia_smi_is_ok(monkeypatch):
    facts = _gather(monkeypatch, 0, 10)
    assert facts["present"] and h.host_status(facts, {}) == ("ok", [])


def test_hung_nvidia_smi_is_degraded_with_the_reason(monkeypatch):
    facts = _gather(monkeypatch, 5, 0.5)
    status, reasons = h.host_status(facts, {})
    assert status == "degraded"
    assert "timed out after 0.5s" in reasons[0] and "--version" in reasons[0]
    assert any("not run after the hang" in r for r in reasons)


def test_no_nvidia_smi_at_all_is_a_cpu_host_not_degraded(tmp_path):
    facts = _gpu.gather({"nvidia_smi_path": str(tmp_path / "absent"), "command_timeout": 2,
                         "proc_root": str(tmp_path)})
    assert facts["present"] is False and h.host_status(facts, {})[0] == "ok"


def test_failing_query_and_hung_runtime_are_degraded():
    gpu = {"commands": [{"cmd": ["nvidia-smi", "--version"], "status": "failed", "rc": 9}],
           "gpu_query": {"status": "failed", "fallback_used": True, "fallback_reason": "rc 2"}}
    status, reasons = h.host_status(gpu, {"timed_out": [["docker", "image", "inspect", "x"]]})
    assert status == "degraded" and len(reasons) == 2 and "after the fallback (rc 2)" in reasons[0]
    assert "docker image inspect x" in reasons[1]


def test_refused_version_flag_alone_is_not_degraded(monkeypatch):
    # the busy capture has no --version answer (the replay refuses it, as an older nvidia-smi does); the GPU
    # query still answers, so the facts are complete
    monkeypatch.setenv("REPRO_VLLM_REPLAY_DIR", os.path.join(ROOT, "tests", "fixtures", "h200-1gpu-busy"))
    facts = _gpu.gather({"nvidia_smi_path": REPLAY, "command_timeout": 10})
    assert facts["gpu_query"]["status"] == "ok" and h.host_status(facts, {}) == ("ok", [])


# ------------------------------------------------------------------ vLLM's collect_env in the serving environment
# vLLM's CLI (vllm/entrypoints/cli/main.py) dispatches subcommands with argparse; 'collect-env' runs
# vllm.collect_env's main, and a CLI without it fails argparse's way: usage on stderr, "invalid choice", rc 2.
_CLI = """import runpy, sys
SUBCOMMANDS = %r
if len(sys.argv) > 1 and sys.argv[1] in SUBCOMMANDS:
    sys.argv = sys.argv[:1]
    runpy.run_module("vllm.collect_env", run_name="__main__")
else:
    sys.stderr.write("usage: vllm [-h] [-v] {%%s} ...\\n" %% ",".join(SUBCOMMANDS))
    sys.stderr.write("vllm: error: argument subparser: invalid choice: %%r\\n" %% sys.argv[1:2])
    sys.exit(2)
"""


def _fake_vllm(tmp_path, body, subcommands=("serve", "collect-env")):
    """A real 'vllm' CLI script whose #! line names this interpreter (with or without the collect-env subcommand),
    and a real package vllm.collect_env beside it."""
    pkg = tmp_path / "site" / "vllm"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "collect_env.py").write_text(body)
    script = tmp_path / "bin" / "vllm"
    script.parent.mkdir()
    script.write_text("#!%s\n%s" % (sys.executable, _CLI % (tuple(subcommands),)))
    script.chmod(0o755)
    return str(script), str(tmp_path / "site")


def test_collect_env_runs_the_clis_own_subcommand_first(tmp_path, monkeypatch):
    script, site = _fake_vllm(tmp_path, "print('vLLM Version : 9.9.9')\nprint('HF_TOKEN=hf_' + 'a' * 34)\n")
    monkeypatch.setenv("PYTHONPATH", site)
    res = h.collect_env([script, "serve", "/m", "--port", "8011"], timeout=60)
    assert res["status"] == "ok" and res["via"] == "vllm collect-env" and res["rc"] == 0 and res["tried"] == []
    assert res["command"] == script + " collect-env" and res["python"] is None
    assert "vLLM Version : 9.9.9" in res["output"] and "hf_" + "a" * 34 not in res["output"]
    # found on PATH when the command names it bare
    monkeypatch.setenv("PATH", os.path.dirname(script) + os.pathsep + os.environ["PATH"])
    assert h.serving_python(["vllm", "serve", "m"]) == (sys.executable, None)
    assert [v for v, _c in h.collect_env_commands(["vllm", "serve", "m"])[0]] == [
        "vllm collect-env", "python -m vllm.collect_env"]


def test_collect_env_falls_back_to_the_interpreter_when_the_cli_has_no_subcommand(tmp_path, monkeypatch):
    script, site = _fake_vllm(tmp_path, "print('vLLM Version : 0.6.3')\n", subcommands=("serve",))
    monkeypatch.setenv("PYTHONPATH", site)
    res = h.collect_env([script, "serve", "/m"], timeout=60)
    assert res["status"] == "ok" and res["via"] == "python -m vllm.collect_env" and res["python"] == sys.executable
    assert "vLLM Version : 0.6.3" in res["output"]
    assert res["tried"] == [{"via": "vllm collect-env", "rc": 2, "msg": "this vllm has no collect-env subcommand"}]


def test_collect_env_through_a_sites_shell_wrapper(tmp_path, monkeypatch):
    """A 'vllm' that is a /bin/sh wrapper (module loads, site wrappers, the lent H200's payload): its #! line names
    no Python, so only the CLI's subcommand can run the report (was: '/bin/sh -m vllm.collect_env', rc 2)."""
    real, site = _fake_vllm(tmp_path / "real", "print('vLLM Version : 0.26.0')\n")
    wrapper = tmp_path / "wrap" / "vllm"
    wrapper.parent.mkdir()
    wrapper.write_text('#!/bin/sh\nexport PYTHONPATH=%s\nexec %s "$@"\n' % (site, real))
    wrapper.chmod(0o755)
    python, why = h.serving_python([str(wrapper), "serve", "m"])
    assert python is None and "/bin/sh script" in why
    res = h.collect_env([str(wrapper), "serve", "m"], timeout=60)
    assert res["status"] == "ok" and res["via"] == "vllm collect-env" and "0.26.0" in res["output"]
    # a wrapper that is not named vllm and is not Python: nothing can be told, and the answer says why
    other = tmp_path / "wrap" / "serve-llm"
    other.write_text("#!/bin/sh\nexit 0\n")
    other.chmod(0o755)
    none = h.collect_env([str(other), "serve", "m"], timeout=5)
    assert none["status"] == "skipped" and "/bin/sh script" in none["msg"]


def test_collect_env_says_why_when_it_cannot_or_does_not_run(tmp_path, monkeypatch):
    script, site = _fake_vllm(tmp_path, "import sys\nsys.stderr.write('boom\\n')\nsys.exit(3)\n")
    monkeypatch.setenv("PYTHONPATH", site)
    failed = h.collect_env([script, "serve", "m"], timeout=60)
    assert failed["status"] == "failed" and failed["rc"] == 3 and "boom" in failed["stderr_tail"]
    assert failed["via"] == "vllm collect-env" and failed["tried"] == []  # a real failure is not retried
    image = h.collect_env(["docker", "run", "--gpus", "all", "vllm/vllm-openai:v0.32.0"], timeout=5)
    assert image["status"] == "skipped" and "inside that image" in image["msg"]
    missing = h.collect_env(["no-such-vllm-here", "serve"], timeout=5)
    assert missing["status"] == "skipped" and "PATH" in missing["msg"]
    slow, _site = _fake_vllm(tmp_path / "slow", "import time\ntime.sleep(30)\n")
    monkeypatch.setenv("PYTHONPATH", _site)
    assert h.collect_env([slow, "serve"], timeout=1)["status"] == "timed_out"
