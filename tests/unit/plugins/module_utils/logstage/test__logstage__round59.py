"""Round 59 of issue 35 (after the fresh batch issue35av was frozen and scored; from vLLM's, HIP's and Intel's Unified
Runtime's source): the tensor-parallel split of a layer's size is the model being built; HIP's and the XPU back
end's runtime errors are accelerator errors (cuda_error, oom); a capitalised "Timed out" is a timeout."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


def test_the_tensor_parallel_split_of_a_layer_is_the_model_being_built():
    ans = classify_text("AssertionError: 151936 is not divisible by 6\n")
    assert (ans["stage"], ans["error_class"]) == ("weight_loading", "config_error")


@pytest.mark.parametrize("line, cls", [
    ("RuntimeError: level_zero backend failed with error: 20 (UR_RESULT_ERROR_DEVICE_LOST)", "cuda_error"),
    ("RuntimeError: HIP failure: hipErrorNoBinaryForGpu", "cuda_error"),
    ("RuntimeError: level_zero backend failed with error: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)", "oom"),
    ("RuntimeError: hipErrorOutOfMemory", "oom"),
    ("RuntimeError: [gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation", "timeout"),
])
def test_accelerator_runtime_errors_and_timeouts_are_classed(line, cls):
    assert classify_text(line + "\n")["error_class"] == cls


@pytest.mark.parametrize("prefix, want", [
    ("c2189", ("weight_loading", "config_error", "medium", 1)),
    ("c2193", ("engine_init", "cuda_error", "high", 1)),
    ("c2207", ("distributed_init", "timeout", "medium", 1)),
])
def test_round_59_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
