"""Round 40 of issue 35 (each row from vLLM's source): the fused-MoE layers' parameter names (w13_weight,
w2_weight_scale_inv, ...) in a load_weights KeyError, and the start-up memory check's message hard-wrapped after
"desired".  Paths and names are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("line", [
    # model_executor/layers/fused_moe/layer.py and quantization/fp8.py register these on the experts' module
    "KeyError: 'model.layers.7.mlp.experts.w13_weight'",
    "KeyError: 'layers.2.block_sparse_moe.experts.w2_weight'",
    "KeyError: 'model.layers.11.mlp.experts.w13_weight_scale_inv'",
    "KeyError: 'model.layers.3.mlp.experts.w2_input_scale'",
    # the rows before this round still hold
    "KeyError: 'model.layers.0.self_attn.qkv_proj.weight'",
    "KeyError: 'model.layers.0.mlp.down_proj.weight_scale'",
])
def test_a_keyerror_naming_a_parameter_is_weight_loading(line):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == ("weight_loading", "other")


@pytest.mark.parametrize("line", [
    "KeyError: 'model.layers.0.mlp.router_logits_mode'",    # a dotted name that is no tensor
    "KeyError: 'weight'",                                   # no module path: a dict lookup of anything
    "KeyError: 'hidden_states.weight_loader'",
])
def test_a_keyerror_naming_no_parameter_stays_unplaced(line):
    assert classify_text(line + "\n")["stage"] != "weight_loading"


@pytest.mark.parametrize("text", [
    # v1/worker/gpu_worker.py init_device (0.10+), and the same check wrapped as a terminal or an issue form wraps it
    "ValueError: Free memory on device (7.5/79.1 GiB) on startup is less than desired GPU memory utilization (0.9, "
    "71.2 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n",
    "ValueError: Free memory on device (7.5/79.1 GiB) on startup is less than desired\n"
    "GPU memory utilization (0.9, 71.2 GiB). Decrease GPU memory utilization or\n"
    "reduce GPU memory used by other processes.\n",
])
def test_the_startup_memory_check_is_cuda_init_oom_wrapped_or_not(text):
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("cuda_init", "oom", 1)


def test_the_words_alone_in_another_sentence_are_not_the_check():
    ans = classify_text("WARNING the queue on startup is less than desired by the operator, waiting\n")
    assert ans["stage"] != "cuda_init"


@pytest.mark.parametrize("prefix, want", [
    ("c1307", ("weight_loading", "other", "medium", 1)),   # w2_weight_scale_inv
    ("c1652", ("weight_loading", "other", "medium", 1)),   # w13_weight
    ("c1649", ("cuda_init", "oom", "high", 1)),            # hard-wrapped after "desired"
])
def test_round_40_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
