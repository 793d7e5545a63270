# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller fronts of the command reader give the module_utils answer and turn its errors into filter errors."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter.minimal_command import FilterModule, minimal_command
from ansible_collections.repro.vllm.plugins.module_utils.ladder import _command

ARGV = ["vllm", "serve", "/m", "--port", "8011", "--enable-prefix-caching", "--tool-call-parser", "hermes"]


def test_minimal_command_is_the_module_utils_answer():
    assert minimal_command(ARGV, env={"APP": "1"}) == _command.derive_minimal(ARGV, env={"APP": "1"})


@pytest.mark.parametrize("call", [
    lambda: minimal_command("vllm serve /m"),
    lambda: minimal_command(["python", "x.py"]),
])
def test_errors_are_filter_errors(call):
    with pytest.raises(AnsibleFilterError):
        call()


def test_filters_registered():
    assert set(FilterModule().filters()) == {"minimal_command"}
