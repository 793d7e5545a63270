"""Round 58 of issue 35 (after the fresh batch issue35au was frozen and scored; from vLLM's source): the V1 input
processor's checks of a request (v1/engine/processor.py 0.8 -> 0.11, input_processor.py 0.12 -> current: the
``_validate*`` functions process_inputs runs for each request) are the request's, at low confidence, as the message
table's other rows outside config."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_messages import message_stage
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("line", [
    "ValueError: vLLM V1 does not yet support best_of.",
    "ValueError: Requested sample logprobs of 50, which is greater than max allowed: 20",
    "ValueError: allowed_token_ids contains out-of-vocab token id!",
    "ValueError: Request-level structured output backend selection is no longer supported.",
])
def test_the_v1_input_processors_checks_of_a_request_are_the_requests(line):
    assert message_stage(line) == ("request", "other", "low")
    assert classify_text(line + "\n")["stage"] == "request"


def test_round_58_on_the_real_paste():
    assert brief(classify_text(case("c2174")))[:3] == ("request", "config_error", "low")
