"""Round 51 of issue 35 (read from earlier batches' unknown answers; each row from vLLM's source): LoRA refused by a
model class, DeepGEMM missing, the V2 runner's pooling task, the Mistral tokenizer's file, the Hub's safetensors
metadata read while the config is built."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("line", [
    "ValueError: Model OPTForCausalLM does not support LoRA, but LoRA is enabled. Support for this model may be added "
    "in the future.",
    "AssertionError: BloomForCausalLM does not support LoRA yet.",
])
def test_lora_refused_by_the_model_class_is_weight_loading(line):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == ("weight_loading", "config_error")


def test_a_worker_refusing_lora_is_not_that_row():
    # worker_base.py's "<class> does not support LoRA" (an add_lora call) names no model class's support
    ans = classify_text("ValueError: <class 'vllm.worker.Worker'> does not support LoRA\n")
    assert ans["stage"] != "weight_loading"


@pytest.mark.parametrize("line, stage", [
    ("RuntimeError: DeepGEMM backend is not available or outdated. Please install or update the `deep_gemm` to a "
     "newer version to enable FP8 kernels.", "engine_init"),
    ("RuntimeError: Sparse Attention Indexer CUDA op requires DeepGEMM to be installed.", "weight_loading"),
])
def test_deepgemm_missing_is_an_import_error(line, stage):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == (stage, "import_error")


def test_the_v2_runners_pooling_task_refusal_follows_the_loaded_model():
    ans = classify_text("ValueError: Model Runner V2 supports pooling tasks ['classify', 'embed'], but this model "
                        "selects 'token_embed' from ['token_embed'].\n")
    assert (ans["stage"], ans["error_class"]) == ("engine_init", "config_error")


@pytest.mark.parametrize("words, cls", [
    ("Make sure that a Mistral tokenizer is present in ['config.json', 'params.json'].", "missing_file"),
    ("Make sure only one Mistral tokenizer is present in ['tekken.json', 'tokenizer.model.v3'].", "config_error"),
])
def test_the_mistral_tokenizers_file_is_config(words, cls):
    ans = classify_text("OSError: Found 0 files matching the pattern: `^tekken\\.json$`. %s\n" % words)
    assert (ans["stage"], ans["error_class"]) == ("config", cls)


def test_the_hubs_safetensors_metadata_is_read_while_the_config_is_built():
    ans = classify_text("ERROR 12-24 13:41:28 [repo_utils.py:65] Error retrieving safetensors: 'org/model' is not a "
                        "safetensors repo., retrying 1 of 2\n")
    assert (ans["stage"], ans["confidence"]) == ("config", "medium")


@pytest.mark.parametrize("prefix, want", [
    ("c1783", ("weight_loading", "config_error", "medium", 1)),
    ("c1509", ("engine_init", "import_error", "medium", 1)),
    ("c1631", ("engine_init", "config_error", "medium", 1)),
    ("c1583", ("config", "missing_file", "medium", 1)),
    ("c1710", ("config", "other", "medium", 1)),
])
def test_round_51_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
