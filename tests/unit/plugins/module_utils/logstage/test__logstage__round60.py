"""Round 60 of issue 35 (after the fresh batch issue35aw was frozen and scored; from vLLM's, vLLM-Omni's and the
kernels' source): a disaggregated worker's refused pairing with a remote engine is the request's handshake; the
paged-attention kernels' block-size check is a config error never placed at the config; vLLM's custom-op wrapper's
"not implemented or built" is a kernel missing for this GPU; vLLM-Omni's stage engine core logs as vLLM's does."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("line", [
    "AssertionError: Local block size 16 is not divisible by remote block size 64 or vice versa.",
    "AssertionError: Local tensor parallel size 4 is not divisible by remote tensor parallel size 8.",
    "AssertionError: Remote tensor parallel size 8 is not divisible by local tensor parallel size 3.",
])
def test_a_refused_pairing_with_a_remote_engine_is_the_requests_handshake(line):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == ("request", "config_error")


def test_the_attention_kernels_block_size_check_is_never_the_config():
    alone = classify_text("RuntimeError: Unsupported block size: 256\n")
    assert (alone["stage"], alone["error_class"]) == ("unknown", "config_error")
    loaded = classify_text(
        "INFO 01-02 03:04:05 [gpu_model_runner.py:1] Model loading took 7.78 GiB memory and 9.2 seconds\n"
        "RuntimeError: Unsupported block size: 256\n")
    assert (loaded["stage"], loaded["error_class"]) == ("engine_init", "config_error")


def test_a_custom_op_not_built_for_this_gpu_is_a_kernel_error_caused_by_the_install():
    ans = classify_text(
        "NotImplementedError: Error in calling custom op rms_norm: Could not run '_C::rms_norm' with arguments from "
        "the 'CUDA' backend.\nNot implemented or built, mostly likely because the current current device does not "
        "support this kernel (less likely TORCH_CUDA_ARCH_LIST was set incorrectly while building)\n")
    assert (ans["error_class"], ans["cause_stage"]) == ("cuda_error", "environment")


@pytest.mark.parametrize("prefix, want", [
    ("c2226", ("request", "config_error", "medium", 2)),
    ("c2227", ("request", "other", "medium", 7)),
    ("c2231", ("unknown", "cuda_error", None, 1)),
])
def test_round_60_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
