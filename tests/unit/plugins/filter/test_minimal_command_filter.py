# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller fronts of the command reader give the module_utils answer and turn its errors into filter errors."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter.minimal_command import (
    FilterModule, command_apply, command_refused, ladder_apply, minimal_command)
from ansible_collections.repro.vllm.plugins.module_utils import _command

ARGV = ["vllm", "serve", "/m", "--port", "8011", "--enable-prefix-caching", "--tool-call-parser", "hermes"]


def test_minimal_command_is_the_module_utils_answer():
    assert minimal_command(ARGV, env={"APP": "1"}) == _command.derive_minimal(ARGV, env={"APP": "1"})


def test_command_apply_and_refused():
    assert command_apply(["vllm", "serve", "/m"], ["--port", "1"]) == ["vllm", "serve", "/m", "--port", "1"]
    r = command_refused(ARGV, env={"NCCL_IB_HCA": "mlx5"})
    assert r["count"] == 3 and [o["layer"] for o in r["options"]] == ["prefix_caching", "tool_calling"]


def test_ladder_apply():
    base = {"argv": ["vllm", "serve", "/m"], "env": {}, "request": {"route": "/v1/completions", "concurrency": 1,
                                                                    "body": {"model": "m"}}}
    r = ladder_apply(base, [{"name": "concurrency_2", "concurrency": 2}], ["concurrency_2"])
    assert r["request"]["concurrency"] == 2 and r["allowed"] == ["request:concurrency"]


@pytest.mark.parametrize("call", [
    lambda: minimal_command("vllm serve /m"),
    lambda: minimal_command(["python", "x.py"]),
    lambda: command_apply(["vllm", "serve", "/m"], ["stray"]),
    lambda: command_refused(["vllm", "serve"]),
    lambda: ladder_apply({"argv": ["vllm", "serve", "/m"]}, [], ["nope"]),
    lambda: ladder_apply("not a dict", [], []),
])
def test_errors_are_filter_errors(call):
    with pytest.raises(AnsibleFilterError):
        call()


def test_filters_registered():
    assert set(FilterModule().filters()) == {"minimal_command", "_command_apply", "_command_refused", "_ladder_apply",
                                             "_derivation_lines", "_unknown_refusal"}
