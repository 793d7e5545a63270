"""Round 57 of issue 35 (after the fresh batch issue35at was frozen and scored; from vLLM's, msgspec's, requests' and
huggingface_hub's source): a msgspec struct refusing a keyword is a request's parameters (low); the Hub refusing a
model file is config for the config and tokenizer files, weight loading for the checkpoint's; a traceback through
EngineArgs(...) is config and a keyword the constructor refuses there is a config error; IPython's numbered context
lines around its arrow line are not the call."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


def test_a_msgspec_struct_refusing_a_keyword_is_a_requests_parameters_at_low():
    ans = classify_text("TypeError: Unexpected keyword argument 'best_of'\n")
    assert (ans["stage"], ans["confidence"]) == ("request", "low")


def test_pythons_own_keyword_refusal_is_not_msgspecs():
    ans = classify_text("TypeError: __init__() got an unexpected keyword argument 'best_of'\n")
    assert ans["stage"] != "request"


@pytest.mark.parametrize("status, url, stage", [
    ("403 Client Error: Forbidden", "https://huggingface.co/org/model/resolve/main/config.json", "config"),
    ("403 Client Error: Forbidden", "https://hf-mirror.example/org/model/resolve/abc123/tokenizer_config.json", "config"),
    ("401 Client Error: Unauthorized", "https://huggingface.co/org/model/resolve/main/model-00001-of-00004.safetensors",
     "weight_loading"),
    ("404 Client Error: Not Found", "https://hf-mirror.example/org/model/resolve/main/model.safetensors",
     "weight_loading"),
    # ahead of the older row that reads any 404 of huggingface.co as the config's
    ("404 Client Error: Not Found", "https://huggingface.co/org/model/resolve/main/model.safetensors", "weight_loading"),
    ("404 Client Error: Not Found", "https://huggingface.co/org/model/resolve/main/tokenizer.json", "config"),
])
def test_the_hub_refusing_a_model_file_is_placed_by_the_file(status, url, stage):
    ans = classify_text("requests.exceptions.HTTPError: %s for url: %s\n" % (status, url))
    assert ans["stage"] == stage


ENGINE_ARGS_TB = (
    'Traceback (most recent call last):\n'
    '  File "run.py", line 5, in <module>\n'
    '    llm = LLM(model="m", swap_gb=4)\n'
    '  File "/usr/lib/python3.10/site-packages/vllm/entrypoints/llm.py", line 60, in __init__\n'
    '    engine_args = EngineArgs(\n'
    "TypeError: __init__() got an unexpected keyword argument 'swap_gb'\n")


@pytest.mark.parametrize("refusal", [
    "TypeError: __init__() got an unexpected keyword argument 'swap_gb'",
    "TypeError: __init__() missing 1 required positional argument: 'model'",
])
def test_a_keyword_engineargs_refuses_or_misses_is_a_config_error(refusal):
    ans = classify_text(ENGINE_ARGS_TB.replace("TypeError: __init__() got an unexpected keyword argument 'swap_gb'",
                                               refusal))
    assert (ans["stage"], ans["error_class"], ans["stage_basis"]) == ("config", "config_error", "frames")


def test_ipythons_numbered_context_line_is_not_the_call():
    # IPython prints the lines around its arrow line; only the arrow line is the call
    text = ("KeyError                                  Traceback (most recent call last)\n"
            "File ~/env/lib/python3.10/site-packages/vllm/entrypoints/llm.py:120, in LLM.__init__(self, model)\n"
            "    103 engine_args = EngineArgs(\n"
            "--> 120 self.llm_engine = LLMEngine.from_engine_args(\n"
            "KeyError: 'model.layers.0.block_sparse_moe.gate.g_idx'\n")
    assert classify_text(text)["stage"] != "config"


@pytest.mark.parametrize("prefix, want", [
    ("c2115", ("config", "config_error", "high", 10)),
    ("c2116", ("request", "other", "low", 12)),
    ("c2121", ("request", "other", "low", 1)),
    ("c2129", ("config", "other", "medium", 1)),
    ("c1225", ("config", "config_error", "high", 2)),
])
def test_round_57_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
