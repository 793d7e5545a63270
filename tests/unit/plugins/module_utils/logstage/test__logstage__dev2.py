# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules written from the second dev batch of the public corpus (c154-c204, issue 24): each rule on the real
dev paste that showed the miss (tests/fixtures/public-corpus/cases, unchanged), and on what it must not catch.
Inputs written here are named ``CONSTRUCTED_*`` and built from the source strings cited beside them."""

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import (
    classify_text, frame_stage, match_signature)
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_parse import EXC_RX, Line, cut_record, strip_wrappers
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import case as _case


def _answer(prefix):
    ans = classify_text(_case(prefix))
    fe = ans["first_error"] or {}
    return ans["stage"], ans["stage_basis"], ans["error_class"], fe.get("lineno"), ans["cause_stage"]


# (dev case, stage, stage_basis, error_class, first error line, cause_stage), grouped by the rule that answers it
CASES = [
    # a paste that ends inside the logger prefix of a traceback's next line: that stub is not the exception
    ("c154", "request", "markers", "other", 2, None),
    # (round 12: the request's media fetch, MediaConnector.load_from_url_async, is a frame of its own now)
    ("c188", "request", "frames", "other", 1, None),
    # an ERROR record that is a traceback cut before its exception is an error of its own, placed by its frames
    ("c156", "request", "inferred", "other", 1, None),
    # ... and a log viewer's copied line numbers ("3597<TAB>") are a wrapper; the chat handler's warm-up runs in
    # init_app_state before the server is up (frame ``warmup`` under vllm/entrypoints: api_ready)
    ("c201", "api_ready", "frames", "other", 3, None),
    # a record glued after a progress bar whose rate is not "it/s" (toks/s]); "EngineCore encountered a fatal error."
    # is logged only once the engine core was built
    # round 8: the cut frame's source line "engine_core.run_busy_loop()" names the busy loop (FRAMES: request);
    # round 23: the fatal error's traceback is cut before its exception, so no class shows (other, not engine_dead)
    ("c193", "request", "frames", "other", 3, None),
    # new frames: the V1 busy loop / V0 engine loop, the async output copy, SamplingParams' checks, the registry
    ("c179", "request", "frames", "oom", 1, None),
    ("c164", "request", "frames", "cuda_error", 3, None),
    ("c173", "request", "frames", "other", 6, None),
    # serving-only frames: the flash-attention wrappers (vllm/vllm_flash_attn/), here inside an exception group
    ("c162", "request", "inferred", "cuda_error", 13, None),
    # the error's words: the output handler, V0's execute_model wrapper, a config class
    ("c157", "request", "inferred", "engine_dead", 7, None),
    ("c163", "request", "inferred", "cuda_error", 2, None),
    ("c185", "config", "inferred", "other", 1, None),
    # signatures from vLLM's source: the compiled ops' import warning, the scheduler budget check, the dtype check
    # at device init (its fix is --dtype: cause_stage config)
    ("c170", "environment", "message", "import_error", 2, None),
    ("c186", "config", "message", "config_error", 1, None),
    ("c166", "cuda_init", "message", "config_error", 1, "config"),
    ("c168", "cuda_init", "message", "config_error", 1, "config"),
    # signatures of native crashes and CUDA's device-side assertions: no stage without markers
    ("c203", "unknown", None, "other", 2, None),
    ("c204", "unknown", None, "other", 1, None),
    ("c165", "unknown", None, "cuda_error", 1, None),
    # a header that quotes the failure (V0 "... while processing method init_device: Cannot re-initialize CUDA ...")
    ("c169", "cuda_init", "message", "cuda_error", 2, None),
    # pytest's report: the "E" line is the exception, the ">" line the source that raised it
    ("c158", "request", "message", "engine_dead", 6, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_dev_case_answer(case):
    assert _answer(case[0]) == case[1:]


def test_a_cut_logger_prefix_is_recognised_and_nothing_else():
    for stub in ("ERROR 11-05 03:3", "ERROR 10-25 11:17:2", "ERROR 10-09 09:39:54 [hermes_tool_parser.py:", "ERRO",
                 "WARNING 06-01 1", "INFO"):
        assert cut_record(stub), stub
    for line in ("KeyError: 'language_model.embed_tokens.weight'", "AssertionError", "ERROR: boom",
                 "RuntimeError: NCCL error: unhandled syst", "ERRORS 11-05", "E 11-05"):
        assert not cut_record(line), line


def test_wrappers_of_viewers_and_pytest_are_narrow():
    # a line number needs its tab; a timestamp or a number in the text stays
    line = Line()
    assert strip_wrappers("3597\t(APIServer pid=1) ERROR 03-01 13:30:11 [serving.py:214] x", line).startswith("(APIServer")
    line = Line()
    assert strip_wrappers("3597 items done", line) == "3597 items done"
    # pytest's "E" needs three spaces; an ordinary word starting with E is not touched
    ans = classify_text("Error rate is fine\nE           RuntimeError: CONSTRUCTED boom\n")  # constructed
    assert ans["first_error"]["line"] == "RuntimeError: CONSTRUCTED boom"


def test_exception_groups_are_exception_lines():
    # Python 3.11 (and the exceptiongroup backport) name them ExceptionGroup / BaseExceptionGroup
    assert EXC_RX.match("exceptiongroup.ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)")
    assert EXC_RX.match("BaseExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)")
    assert not EXC_RX.match("TaskGroup: started")


def test_new_frames_are_vllm_files_only():
    assert frame_stage("run_busy_loop", "/x/site-packages/vllm/v1/engine/core.py") == "request"
    assert frame_stage("run_engine_loop", "/x/vllm/engine/multiprocessing/engine.py") == "request"
    assert frame_stage("get_output", "/x/vllm/v1/worker/gpu_model_runner.py") == "request"
    assert frame_stage("_verify_args", "/x/vllm/sampling_params.py") == "request"
    assert frame_stage("_try_inspect_model_cls", "/x/vllm/model_executor/models/registry.py") == "config"
    assert frame_stage("warmup", "/x/vllm/entrypoints/openai/chat_completion/serving.py") == "api_ready"
    # a user's own functions of the same names are not vLLM's
    assert frame_stage("get_output", "/home/me/app.py") is None
    assert frame_stage("warmup", "/home/me/vllm_client.py") is None


def test_signatures_keep_their_levels():
    # vllm/_custom_ops.py logs the import failure at WARNING
    text = "Failed to import from vllm._C with ImportError('CONSTRUCTED: undefined symbol: x')"  # constructed
    assert match_signature(text, "W").cls == "import_error"
    # the dtype check is cuda_init wherever it is printed, and names --dtype as the fix
    ans = classify_text("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
                        "Your Tesla T4 GPU has compute capability 7.5.\n")  # constructed from platforms/cuda.py
    assert (ans["stage"], ans["cause_stage"]) == ("cuda_init", "config")


def test_words_of_the_engine_core_after_start_up_do_not_beat_markers():
    # "EngineCore failed to start." is the start-up one: not placed at request by the fatal-error words
    ans = classify_text(_case("c194"))
    assert ans["stage"] == "engine_init"
