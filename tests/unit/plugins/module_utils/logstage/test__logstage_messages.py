# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 35, round three: the table of messages vLLM raises while one stage runs (_logstage_messages.py, listed
from vLLM's source by scripts/vllm_raise_messages.py) places an error nothing else places.

The inputs are single exception lines whose messages are vLLM's own strings (the table's prefixes, as vLLM 0.32.0
raises them), named CONSTRUCTED_* where a placeholder's value was filled in here."""

from __future__ import annotations

import os
import subprocess
import sys

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_messages import MESSAGES, message_stage
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_rules import ERROR_CLASSES, STAGES

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))


def test_the_table_is_consistent():
    seen = set()
    for prefix, stage, cls, where in MESSAGES:
        assert stage in STAGES and cls in ERROR_CLASSES, prefix
        assert 24 <= len(prefix) <= 64 and prefix not in seen, prefix
        assert where.split()[1].split(":")[0].endswith(".py"), where
        seen.add(prefix)


def test_a_config_check_s_message_is_config_medium():
    # vllm/config/speculative.py SpeculativeConfig._verify_args (0.32.0)
    ans = classify_text("ValueError: 'tensor_parallel_size' is not a valid argument in the speculative_config. "
                        "Please pass 'draft_tensor_parallel_size' instead.\n")
    assert (ans["stage"], ans["error_class"], ans["stage_basis"], ans["confidence"]) == (
        "config", "config_error", "inferred", "medium")


# constructed: default_loader.py __init__'s check of --model-loader-extra-config, the key filled in here
CONSTRUCTED_LOADER = "ValueError: Unexpected extra config keys for load format auto: {'x'}\n"


def test_a_loader_s_message_is_weight_loading_low():
    assert message_stage(CONSTRUCTED_LOADER) == ("weight_loading", "other", "low")
    ans = classify_text(CONSTRUCTED_LOADER)
    assert (ans["stage"], ans["error_class"], ans["stage_basis"], ans["confidence"]) == (
        "weight_loading", "other", "inferred", "low")


def test_markers_outrank_the_table_and_an_unlisted_message_stays_unknown():
    text = ("INFO 05-12 08:31:00 [gpu_worker.py:298] Available KV cache memory: 16.23 GiB\n" + CONSTRUCTED_LOADER)
    assert classify_text(text)["stage"] == "engine_init"
    ans = classify_text("ValueError: something vLLM never says in any check\n")
    assert ans["stage"] == "unknown"


def _lister_rows(tree):
    """The rows scripts/vllm_raise_messages.py prints for ``tree``, each split into its tab-separated fields."""
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "vllm_raise_messages.py"), str(tree)],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return [line.split("\t") for line in out.splitlines()]


def test_the_lister_reads_a_tree_and_drops_shared_helpers(tmp_path):
    # a two-module tree written here: a config check, and a helper the loader and the config both call
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "model.py").write_text(
        "def _verify_args(self):\n    raise ValueError(f'the foo setting must be positive, got {x}')\n"
        "def get_thing(c):\n    raise ValueError('a helper message long enough to be listed')\n")
    (tmp_path / "model_executor" / "model_loader").mkdir(parents=True)
    (tmp_path / "model_executor" / "model_loader" / "default_loader.py").write_text(
        "def load_model(self):\n    get_thing(self)\n")
    rows = _lister_rows(tmp_path)
    assert rows == [["config", "config_error", "ValueError", "the foo setting must be positive, got",
                     "config/model.py:_verify_args"]]


def test_the_lister_reads_the_v1_input_processors_request_checks_not_its_constructor(tmp_path):
    # round 58: the lister reads the V1 input processor's _validate* functions at request, not its constructor
    (tmp_path / "v1" / "engine").mkdir(parents=True)
    (tmp_path / "v1" / "engine" / "processor.py").write_text(
        "class Processor:\n"
        "    def __init__(self):\n        raise ValueError('a constructor message long enough to be listed')\n"
        "    def _validate_logprobs(self, p):\n        raise ValueError('a request check message long enough to list')\n")
    rows = _lister_rows(tmp_path)
    assert rows == [["request", "other", "ValueError", "a request check message long enough to list",
                     "v1/engine/processor.py:_validate_logprobs"]]


def test_a_message_of_a_mapped_worker_function_takes_its_stage_low():
    # vllm/v1/worker/gpu_model_runner.py initialize_kv_cache (0.8 -> 0.32): "Unknown KV cache spec type."
    ans = classify_text("RuntimeError: Unknown KV cache spec type.\n")
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("engine_init", "inferred", "low")
    # vllm/v1/engine/input_processor.py process_inputs: a request's own check
    ans = classify_text("ValueError: min_tokens must be less than or equal to max_tokens=16, got 32.\n")
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "inferred", "low")
