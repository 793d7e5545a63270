"""Round 56 of issue 35 (after the fresh batch issue35as was frozen and scored; from vLLM's, PyTorch's and ROCm's
source): the V1 oracle of the engine arguments refusing a feature under VLLM_USE_V1=1 is config; an architecture the
loader cannot resolve is weight loading; PyTorch's CUDA context asked for a device it does not count is a CUDA error;
ROCm's memory access fault is an illegal memory access; a forward pass under the engine's construction (and no other
start-up step) is the engine's profiling, warm-up or capture."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("feature", ["device type=cpu", "--preemption-mode", "Medusa"])
def test_the_v1_oracle_refusing_a_feature_is_config_even_after_platform_detection(feature):
    text = ("INFO 05-01 10:00:00 [__init__.py:243] Automatically detected platform cpu.\n"
            "NotImplementedError: VLLM_USE_V1=1 is not supported with %s.\n" % feature)
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"], ans["stage_basis"]) == ("config", "config_error", "message")


def test_an_architecture_the_loader_cannot_resolve_is_weight_loading():
    ans = classify_text("ValueError: FooForCausalLM has no vLLM implementation and the Transformers implementation is "
                        "not compatible with vLLM.\n")
    assert (ans["stage"], ans["error_class"]) == ("weight_loading", "other")


def test_torchs_cuda_context_asked_for_a_device_it_does_not_count_is_a_cuda_error():
    ans = classify_text('RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at '
                        '"../aten/src/ATen/cuda/CUDAContext.cpp":50, please report a bug to PyTorch. device=1, num_gpus=1\n')
    assert ans["error_class"] == "cuda_error"


def test_rocms_memory_access_fault_is_an_illegal_memory_access():
    ans = classify_text("Memory access fault by GPU node-2 (Agent handle: 0x55d0c8a0) on address 0x7f0000001000. "
                        "Reason: Page not present or supervisor privilege.\n")
    assert ans["error_class"] == "illegal_memory_access"


FORWARD_FRAMES = (
    '  File "/usr/lib/python3.12/site-packages/vllm/model_executor/models/llama.py", line 300, in forward\n'
    '    hidden_states = self.self_attn(positions, hidden_states)\n'
    '  File "/usr/lib/python3.12/site-packages/vllm/attention/layer.py", line 184, in forward\n'
    '    return torch.ops.vllm.unified_attention(\n'
    'RuntimeError: shape \'[10, -1, 128]\' is invalid for input of size 1000\n')


def test_a_forward_under_the_engines_construction_is_engine_init():
    text = ('Traceback (most recent call last):\n'
            '  File "/usr/lib/python3.12/site-packages/vllm/engine/multiprocessing/engine.py", line 133, in from_vllm_config\n'
            '    return cls(\n' + FORWARD_FRAMES)
    assert classify_text(text)["stage"] == "engine_init"


def test_a_forward_with_another_start_up_step_is_not_placed_by_the_construction():
    # the engine built, and a weight-loading step of the model runner under it: not only the construction
    text = ('Traceback (most recent call last):\n'
            '  File "/usr/lib/python3.12/site-packages/vllm/engine/llm_engine.py", line 300, in __init__\n'
            '    self._run_something()\n'
            '  File "/usr/lib/python3.12/site-packages/vllm/worker/model_runner.py", line 1000, in load_and_warm\n'
            '    self.model.warm()\n' + FORWARD_FRAMES)
    assert classify_text(text)["stage"] == "unknown"


@pytest.mark.parametrize("prefix, want", [
    ("c2087", ("config", "config_error", "high", 2)),
    ("c2092", ("weight_loading", "other", "medium", 4)),
    ("c2093", ("weight_loading", "other", "medium", 6)),
    ("c2086", ("cuda_init", "cuda_error", "high", 10)),
    ("c2076", ("distributed_init", "illegal_memory_access", "high", 4)),
    ("c2110", ("engine_init", "other", "medium", 1)),
])
def test_round_56_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
