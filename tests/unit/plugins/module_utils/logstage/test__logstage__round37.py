"""Round 37 of issue 35 (after the fresh batch issue35ae was frozen and scored; each row from its tool's source): the
checks of a quantized layer's weights run while the model is built (FP8 block shapes, a compressed-tensors scheme).
Numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("line, cls", [
    ("ValueError: Weight output_partition_size = 96 is not divisible by weight quantization block_n = 128.",
     "config_error"),
    ("NotImplementedError: No compressed-tensors compatible scheme was found.", "other"),
])
def test_a_quantized_layers_weight_checks_are_weight_loading(line, cls):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("weight_loading", cls, "high")


@pytest.mark.parametrize("prefix, want", [
    ("c1586", ("weight_loading", "other", "high", 3)),    # no compressed-tensors scheme (was request at low)
])
def test_round_37_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
