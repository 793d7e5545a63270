"""Round 25 of issue 35 (after the fresh batch issue35t was frozen and scored; rules from the tools' sources and
formats, each shown on the real paste that showed its family): vLLM's own modules being imported, the Marlin weight
repack, a KV connector's scheduler side, a call whose result a tuple unpacks, control characters in caret notation,
the blank line a chained traceback logs, and faulthandler's dump of a crashed process.  Paths, pids and numbers in
the samples are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/venv/lib/python3.12/site-packages"


def _frame(path, func, src):
    return '  File "%s", line 7, in %s\n    %s\n' % (path, func, src)


def test_a_traceback_inside_vllm_s_own_imports_is_the_environment():
    # the CLI imports vllm.config, which imports vllm.platforms: the paste ends before the exception
    text = ("Traceback (most recent call last):\n" + _frame("/venv/bin/vllm", "<module>", "from vllm.entrypoints.cli.main import main")
            + _frame(_SP + "/vllm/entrypoints/cli/__init__.py", "<module>", "from vllm.config import VllmConfig")
            + _frame(_SP + "/vllm/config/__init__.py", "<module>", "from vllm.platforms import current_platform"))
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("environment", "inferred", "medium")


def test_a_user_s_script_at_its_top_level_is_no_import_of_vllm():
    # the script's own <module> frame (the first one) under a folder named vllm, then a call into vLLM's loader
    text = ("Traceback (most recent call last):\n" + _frame("/home/me/vllm/run.py", "<module>", "llm = LLM('m')")
            + _frame(_SP + "/vllm/model_executor/model_loader/loader.py", "load_model", "model.load_weights(w)"))
    assert classify_text(text)["stage"] == "weight_loading"
    alone = "Traceback (most recent call last):\n" + _frame("/home/me/vllm/run.py", "<module>", "llm = LLM('m')")
    assert classify_text(alone)["stage"] != "environment"


def test_the_marlin_repack_runs_while_the_weights_are_processed_after_loading():
    text = ("ERROR 05-05 07:35:19 [core.py:1136] Traceback (most recent call last):\n"
            + "".join("ERROR 05-05 07:35:19 [core.py:1136] " + line + "\n" for line in
                      _frame(_SP + "/vllm/_custom_ops.py", "gptq_marlin_repack", "return torch.ops._C.gptq_marlin_repack(")
                      .splitlines())
            + "ERROR 05-05 07:35:19 [core.py:1136] RuntimeError: CUDA driver error: out of memory\n")
    assert brief(classify_text(text))[:3] == ("weight_loading", "oom", "high")


def test_a_kv_connector_s_scheduler_side_runs_for_scheduled_requests():
    path = _SP + "/vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py"
    text = _frame(path, "update_state_after_alloc", "assert num_locally_computed_tokens") + "AssertionError\n"
    assert classify_text(text)["stage"] == "request"


def test_a_call_whose_result_a_tuple_unpacks_names_its_stage():
    text = ("Traceback (most recent call last):\n"
            + _frame(_SP + "/vllm/v1/engine/core.py", "__init__",
                     "num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches("))
    assert classify_text(text)["stage"] == "engine_init"


def test_control_characters_in_caret_notation_are_read_as_the_characters():
    # `cat -v` / less: ESC as ^[ and CR as ^M around a vLLM record
    line = ("^[[1;36m(EngineCore_DP0 pid=7)^[[0;0m ERROR 01-04 04:31:09 [core.py:844] RuntimeError: CUDA error: "
            "an illegal memory access was encountered^M\n")
    ans = classify_text(line)
    assert (ans["first_error"]["process"], ans["first_error"]["timestamp"]) == ("EngineCore_DP0", "01-04 04:31:09")
    assert ans["first_error"]["line"].endswith("encountered")


def test_an_empty_record_before_python_s_chain_line_is_a_blank_line_of_the_traceback():
    rec = "(EngineCore_DP0 pid=7) ERROR 02-13 17:19:01 [core.py:900] "
    text = "".join(rec + line + "\n" for line in (
        "", "The above exception was the direct cause of the following exception:", "",
        "Traceback (most recent call last):",
        '  File "%s/vllm/v1/engine/core.py", line 112, in __init__' % _SP,
        "    num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches("))
    ans = classify_text(text)
    # (round 42: the empty record after the chain line is the chain's blank line too - the cut traceback's first line
    # is its "Traceback" line, 4, as the corpus convention places a cut traceback)
    assert ans["stage"] == "engine_init" and ans["first_error"]["lineno"] == 4


def test_faulthandler_s_dump_places_the_crash_by_its_frames():
    # CPython's faulthandler: 'File "x", line N in f' (no comma), most recent call first
    text = ("Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f0000000000 (most recent call first):\n"
            '  File "%s/vllm/v1/worker/gpu_model_runner.py", line 9 in execute_model\n' % _SP)
    ans = classify_text(text)
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("request", 1)


@pytest.mark.parametrize("prefix, want", [
    ("c1164", ("environment", "other", "medium", 1)),       # the CLI's import chain, cut before its ImportError
    ("c1139", ("weight_loading", "oom", "high", 7)),      # the Marlin repack out of memory
    ("c1138", ("request", "other", "high", 3)),           # the offloading connector's scheduler asserts
    ("c1150", ("engine_init", "other", "high", 4)),       # a chained traceback logged line by line, cut at the call (its Traceback line: round 42)
    ("c1155", ("request", "cuda_error", "medium", 2)),    # caret notation
    ("c1169", ("request", "other", "medium", 1)),         # faulthandler's dump in flashinfer's decode
])
def test_round_25_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
