"""Round 65 of issue 35 (after the fresh batch issue35bb was frozen and scored; from vLLM's platforms and Intel's
oneCCL): the platform refusing the attention backend asked for is a config error of the model being built; oneCCL is a
collective library."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


def test_a_refused_attention_backend_is_a_config_error_of_the_model_being_built():
    ans = classify_text("ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this "
                        "configuration. Reason: ['head_size not supported']\n")
    assert (ans["stage"], ans["error_class"]) == ("weight_loading", "config_error")


def test_oneccl_is_a_collective_library():
    ans = classify_text("RuntimeError: oneCCL: exec.cpp:122 start_workers: EXCEPTION: failed to start worker # 0\n")
    assert (ans["stage"], ans["error_class"]) == ("distributed_init", "nccl_error")


@pytest.mark.parametrize("prefix, want", [
    ("c2377", ("weight_loading", "config_error", "medium", 2)),
    ("c2390", ("distributed_init", "nccl_error", "medium", 1)),
])
def test_round_65_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
