"""Round 44 of issue 35 (after the fresh batch issue35aj was frozen and scored; each row from vLLM's source): checks
that run only on a request's own inputs - parse_and_batch_prompt's empty prompt, map_input's --limit-mm-per-prompt
count (0.5) and the chat handler's tool choice against the server's flags."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("line, want", [
    ("ValueError: please provide at least one prompt", ("request", "other", None)),
    ("ValueError: You set image=1 (or defaulted to 1) in `--limit-mm-per-prompt`, but found 3 items in the same "
     "prompt.", ("request", "other", None)),
    ('{"object":"error","message":"\\"auto\\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to '
     'be set","type":"BadRequestError","param":null,"code":400}', ("request", "other", "config")),
    ('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
     ("request", "config_error", "config")),
])
def test_a_requests_own_inputs_refused(line, want):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"], ans["cause_stage"]) == want


def test_the_cli_flag_check_at_start_up_stays_config():
    # cli_args.py validate_parsed_serve_args: the server's own arguments, before it starts
    ans = classify_text("TypeError: Error: --enable-auto-tool-choice requires --tool-call-parser\n")
    assert ans["stage"] == "config"


@pytest.mark.parametrize("prefix, want", [
    ("c1751", ("request", "config_error", "high", 1)),   # the tool-choice refusal as a line of its own
    ("c1757", ("request", "other", "high", 1)),          # an empty prompt
    ("c1771", ("request", "other", "high", 1)),          # more video items than --limit-mm-per-prompt
])
def test_round_44_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
