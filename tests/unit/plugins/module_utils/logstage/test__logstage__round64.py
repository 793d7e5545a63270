"""Round 64 of issue 35 (after the fresh batch issue35ba was frozen and scored; from vLLM's CUTLASS kernels and Ray's
task errors): a CUTLASS kernel missing for this GPU is an accelerator error of the first forward pass (of the weights'
processing for the 2:4 compression), caused by the install; caret lines between Ray's task error and its remote
frames are no message."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("line, stage", [
    ("NotImplementedError: No compiled cutlass_scaled_mm for a compute capability less than CUDA device capability: 75",
     "engine_init"),
    ("NotImplementedError: No compiled cutlass_fp4_group_mm kernel for CUDA device capability: 90", "engine_init"),
    ("NotImplementedError: No compiled cutlass_sparse_compress for a compute capability less than CUDA device "
     "capability: 80", "weight_loading"),
])
def test_a_cutlass_kernel_missing_for_this_gpu_is_the_first_pass_that_needs_it(line, stage):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"], ans["cause_stage"]) == (stage, "cuda_error", "environment")


@pytest.mark.parametrize("prefix, want", [
    ("c2347", ("engine_init", "cuda_error", "medium", 2)),
    ("c2359", ("request", "other", "high", 6)),
])
def test_round_64_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
