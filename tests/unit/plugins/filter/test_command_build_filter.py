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
