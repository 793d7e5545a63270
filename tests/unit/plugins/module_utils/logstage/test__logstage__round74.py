"""Round 74 of issue 35 (after the real vLLM 0.32 refusals of batch issue35bc were frozen and scored; from vLLM's
get_quant_config and transformers' config loading): a quantization method whose config the checkpoint lacks is a
config error, placed by its caller's frames (VllmConfig's validation since 0.7, the loader before); a config file
that is not JSON is a config error."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


def test_a_quantization_config_the_checkpoint_lacks_under_the_old_loader_is_weight_loading():
    # vLLM 0.2-0.6 looked the config up while the loader built the model; the line alone keeps that stage (a real
    # one-line paste of that era; the 0.32 refusal, placed by its config frames, is test__logstage__misconfigured.py's)
    assert brief(classify_text(case("c1422"))) == ("weight_loading", "config_error", "medium", 1)


@pytest.mark.parametrize("prefix, want", [
    ("c1407", ("config", "config_error", "medium", 2)),
    ("c1424", ("weight_loading", "config_error", "high", 10)),
])
def test_round_74_on_real_pastes_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
