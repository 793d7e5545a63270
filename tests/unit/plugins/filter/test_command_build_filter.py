# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles build the minimal command and decide on --trust-remote-code through _command, not in Jinja."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter import command_build as cb


def test_minimal_build_like_the_cpu_runs():
    argv = cb.minimal_build(["/opt/vllm/bin/vllm", "serve"], "/models/tiny", host="127.0.0.1", port=8011,
                            served_model_name="tiny", platform_args=["--max-model-len", 512, "--enforce-eager"])
    assert argv == ["/opt/vllm/bin/vllm", "serve", "/models/tiny", "--host", "127.0.0.1", "--port", "8011",
                    "--served-model-name", "tiny", "--max-model-len", "512", "--enforce-eager"]
    argv = cb.minimal_build(["vllm", "serve"], "m", port=8000, tensor_parallel_size=8, trust_remote_code=True)
    assert argv == ["vllm", "serve", "m", "--port", "8000", "--tensor-parallel-size", "8", "--trust-remote-code"]
    with pytest.raises(AnsibleFilterError, match="not a 'vllm serve' command"):
        cb.minimal_build("vllm", "m")
    with pytest.raises(AnsibleFilterError, match="model is empty"):
        cb.minimal_build(["vllm", "serve"], "")


def test_needs_remote_code():
    assert cb.needs_remote_code({"auto_map": {"AutoConfig": "x.Config"}}) is True
    assert cb.needs_remote_code({"architectures": ["LlamaForCausalLM"]}) is False
    assert cb.needs_remote_code({}, "auto") is False
    assert cb.needs_remote_code({}, "true") is True and cb.needs_remote_code({"auto_map": {}}, False) is False
    with pytest.raises(AnsibleFilterError, match="use auto, true or false"):
        cb.needs_remote_code({}, "maybe")


def test_node_placement_filter_gives_each_node_its_rank_and_the_workers_headless():
    from ansible_collections.repro.vllm.plugins.filter.command_build import node_placement

    nodes = ["node01", "node02"]
    assert node_placement(nodes, "node01", "127.0.0.1") == ["--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1"]
    assert node_placement(nodes, "node02", "127.0.0.1", "") == [
        "--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1", "--headless"]
    assert node_placement(["node01"], "node01", "") == []
    with pytest.raises(AnsibleFilterError, match="not one of the step's nodes"):
        node_placement(nodes, "node03", "127.0.0.1")
