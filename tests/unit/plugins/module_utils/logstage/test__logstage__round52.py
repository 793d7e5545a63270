"""Round 52 of issue 35 (after the fresh batch issue35ao was frozen and scored; each row from its tool's source): the
model registry's records are config, also around a lazy import or a cut traceback; TorchServe's relay of a worker's
output; bitsandbytes' quant-state tensor names; attention sinks without FlashAttention 3; vLLM 0.5's bitsandbytes
adapter key."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_REC = "ERROR 07-31 21:40:09 [%s:396] "
_IMPORT = ['  File "/venv/site-packages/vllm/model_executor/models/qwen2.py", line 13, in <module>',
           '    from vllm.model_executor.layers.fused_moe import FusedMoE',
           '  File "/venv/site-packages/vllm/model_executor/layers/fused_moe/layer.py", line 9, in <module>',
           '    from vllm.model_executor.layers.quantization.utils import fp8_utils']


def test_an_import_chain_the_model_registry_logs_is_config():
    # models/registry.py imports a model's module to inspect it while ModelConfig resolves the architecture
    ans = classify_text("".join(_REC % "registry.py" + line + "\n" for line in _IMPORT))
    assert (ans["stage"], ans["confidence"]) == ("config", "medium")


def test_the_same_import_chain_without_a_vllm_record_is_still_vllms_import():
    ans = classify_text("".join(line + "\n" for line in _IMPORT))
    assert ans["stage"] == "environment"


def test_a_cut_traceback_of_the_model_registry_is_config():
    text = "".join(_REC % "registry.py" + line + "\n" for line in [
        '  File "/venv/site-packages/torch/__init__.py", line 2536, in fn',
        '    return compile(model)'])
    ans = classify_text(text)
    assert ans["stage"] == "config"


def test_torchserves_relay_of_a_worker_is_read():
    lines = ['  File "/venv/site-packages/vllm/engine/async_llm_engine.py", line 661, in engine_step',
             '    await self.engine.add_request_async(**new_request)',
             'TypeError: an error no table knows']
    text = "".join("2024-10-03T17:37:44,150 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - %s\n" % line for line in lines)
    ans = classify_text(text)
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("request", 3)


@pytest.mark.parametrize("key", ["layers.10.mlp.down_proj.weight.absmax", "model.layers.0.self_attn.q_proj.weight.quant_map",
                                 "lm_head.weight.quant_state.bitsandbytes__nf4"])
def test_a_bitsandbytes_quant_state_the_model_does_not_know_is_weight_loading(key):
    ans = classify_text("KeyError: '%s'\n" % key)
    assert ans["stage"] == "weight_loading"


def test_attention_sinks_without_flashattention_3_are_refused_while_the_model_is_built():
    ans = classify_text("AssertionError: Sinks are only supported in FlashAttention 3\n")
    assert (ans["stage"], ans["confidence"]) == ("weight_loading", "medium")


def test_vllm_05s_bitsandbytes_adapter_key_is_weight_loading_and_other_keys_have_no_stage():
    ans = classify_text("ValueError: Cannot find any of ['adapter_name_or_path'] in the model's quantization config\n")
    assert (ans["stage"], ans["error_class"]) == ("weight_loading", "config_error")
    # get_quant_config runs while VllmConfig is built since 0.6: another key names no stage by itself
    ans = classify_text("ValueError: Cannot find any of ['bits'] in the model's quantization config\n")
    assert ans["stage"] != "weight_loading"


@pytest.mark.parametrize("prefix, want", [
    ("c1943", ("config", "other", "medium", 1)),
    ("c1547", ("config", "other", "medium", 1)),
    ("c1941", ("request", "other", "high", 1)),
    ("c1968", ("weight_loading", "other", "medium", 1)),
    ("c1936", ("weight_loading", "other", "medium", 1)),
    ("c1969", ("weight_loading", "config_error", "medium", 1)),
])
def test_round_52_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want


# round 52b: an attention impl's constructor, vllm._C without an op, a class's usual stage never below a row's floor

def test_an_attention_impls_constructor_refusing_its_arguments_is_the_model_being_built():
    ans = classify_text("TypeError: FlashAttentionImpl.__init__() got an unexpected keyword argument 'sinks'\n")
    assert (ans["stage"], ans["confidence"]) == ("weight_loading", "medium")


def test_vllms_compiled_extension_without_an_op_is_an_import_error_of_no_stage_by_itself():
    ans = classify_text("AttributeError: '_OpNamespace' '_C' object has no attribute 'gelu_quick'\n")
    # at least weight_loading (an op is first called when the weights are processed or the model runs): never the
    # import_error class's usual environment below that
    assert (ans["stage"], ans["error_class"]) == ("unknown", "import_error")


def test_the_op_placed_by_the_log_it_is_in():
    text = ("INFO 08-31 15:52:40 [model_runner.py:1100] Loading model weights took 1.2 GB\n"
            "AttributeError: '_OpNamespace' '_moe_C' object has no attribute 'topk_softmax'\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"]) == ("engine_init", "import_error")


@pytest.mark.parametrize("prefix, want", [
    ("c1276", ("weight_loading", "other", "medium", 1)),
    ("c1220", ("unknown", "import_error", None, 4)),
])
def test_round_52b_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
