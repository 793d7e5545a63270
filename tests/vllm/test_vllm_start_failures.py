# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Failing starts of the REAL vllm serve, each its own server: missing weights, the port taken, a KV cache bigger
than memory (split from test_vllm_server_real.py so the gate's two xdist workers share the starts)."""

from __future__ import annotations

import os
import socket

from conftest import assert_classified, server_args, start_failing


def test_missing_weights(ansible, vllm_env, tmp_path):
    res = start_failing(ansible, vllm_env, tmp_path, model="tiny-noweights")
    assert res["exit_code"] == 1
    assert "Cannot find any model weights" in open(res["log_path"]).read()
    assert_classified(res, "weight_loading", "missing_file")


def test_port_already_in_use(ansible, vllm_env, tmp_path):
    blocker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    port = blocker.getsockname()[1]
    try:
        # the module's own test before the start names the holder and starts nothing
        named = ansible.run("vllm_server", server_args(vllm_env, tmp_path / "named", port))
        assert named["outcome"] == "port_in_use" and named["pid"] is None, named.get("msg")
        assert (named["stage"], named["error_class"]) == ("environment", "port_in_use")
        assert [h["pid"] for h in named["port_in_use"]["holders"]] == [os.getpid()]
        # and vLLM's own failure on a busy port, classified from its log
        res = start_failing(ansible, vllm_env, tmp_path, port=port, check_port=False)
    finally:
        blocker.close()
    assert res["exit_code"] == 1
    assert "Address already in use" in open(res["log_path"]).read()
    # The bind fails before any engine line; the classifier places that in environment (S0 in
    # shared/reference/vllm-stages.md), the issue text said api_ready: either names the same first error.
    assert res["first_error"] and "[Errno 98]" in res["first_error"]["line"]
    stage = res["stage"] if res["stage"] in ("environment", "api_ready") else "api_ready"
    assert_classified(res, stage, "port_in_use")


def test_kv_cache_bigger_than_memory(ansible, vllm_env, tmp_path):
    res = start_failing(ansible, vllm_env, tmp_path, env={"VLLM_CPU_KVCACHE_SPACE": "100"})
    assert res["exit_code"] == 1
    assert "less than requested memory for kv" in open(res["log_path"]).read()
    # vLLM refuses before allocating: the classifier calls it an out-of-memory of engine_init (memory sizing)
    assert_classified(res, "engine_init", "oom")
    assert res["classification"]["oom"]["occurred"] is True and res["classification"]["oom"]["stage"] == "engine_init"
