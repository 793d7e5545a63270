# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 35, sixth round: a paste that ends inside a traceback (its exception cut away) is an error of its own, the
weakest one, placed by its frames, else by the last stage the log's progress lines reached before it (never more than
medium confidence), else unknown; the executor's start-up wrapper ``WorkerProc initialization failed`` is no dead
engine, a worker that died under a running executor is.  Inputs written here are named ``CONSTRUCTED_*`` and built
from the source strings and formats cited beside them; the dev cases named are real pastes
(tests/fixtures/public-corpus)."""

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import case as _case, short as _short


# V0 llm_engine.py _init_cache (0.1-0.3) prints "# GPU blocks: %d, # CPU blocks: %d" once the KV cache is sized; a
# script's traceback from LLM(...) follows and the paste stops before its exception
CONSTRUCTED_KV_THEN_CUT = (
    "INFO 01-01 00:00:00 llm_engine.py:275] # GPU blocks: 229, # CPU blocks: 512\n"
    "Traceback (most recent call last):\n"
    '  File "run.py", line 8, in <module>\n'
    "    llm = LLM(model='m')\n")

# the same traceback with no progress line before it
CONSTRUCTED_BARE_CUT = "Traceback (most recent call last):\n  File \"run.py\", line 8, in <module>\n    llm = LLM(model='m')\n"

# uvicorn's "Exception in ASGI application" (uvicorn/protocols/http/httptools_impl.py) heads the traceback it logs
CONSTRUCTED_ASGI_THEN_CUT = (
    'INFO:     10.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
    "ERROR:    Exception in ASGI application\n"
    "Traceback (most recent call last):\n"
    '  File "/x/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi\n'
    "    result = await app(\n")

# a WARNING record's traceback (logger.warning(..., exc_info=True)) cut at the end: not a failure
CONSTRUCTED_WARNING_CUT = (
    "WARNING 01-01 00:00:00 [utils.py:1] could not read the cache, rebuilding it\n"
    "WARNING 01-01 00:00:00 [utils.py:1] Traceback (most recent call last):\n"
    'WARNING 01-01 00:00:00 [utils.py:1]   File "/x/vllm/utils.py", line 1, in f\n')

# v1/executor/multiproc_executor.py WorkerProc.wait_for_ready: the executor's constructor, while EngineCore starts
CONSTRUCTED_WORKERPROC_WRAPPER = (
    "(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [core.py:708] Exception: WorkerProc initialization failed due to "
    "an exception in a background process. See stack trace for root cause.\n")

# v1/executor/multiproc_executor.py monitor_workers: a worker process exited under a running executor
CONSTRUCTED_WORKER_DIED = (
    "(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [multiproc_executor.py:149] Worker proc VllmWorker-2 died "
    "unexpectedly, shutting down executor.\n")


def test_a_paste_that_ends_inside_a_traceback_is_placed_by_the_last_progress_line_at_medium():
    ans = classify_text(CONSTRUCTED_KV_THEN_CUT)
    assert _short(ans) == ("engine_init", "other", 2)
    assert ans["stage_basis"] == "markers" and ans["confidence"] == "medium"


def test_without_progress_lines_a_cut_traceback_is_a_failure_of_unknown_stage_not_none():
    ans = classify_text(CONSTRUCTED_BARE_CUT)
    assert _short(ans) == ("unknown", "other", 1) and ans["confidence"] is None


def test_a_cut_traceback_is_the_weakest_error_its_header_is_taken_first():
    ans = classify_text(CONSTRUCTED_ASGI_THEN_CUT)
    assert (ans["first_error"] or {}).get("lineno") in (1, 2)
    assert ans["first_error"]["lineno"] != 3


def test_a_warning_traceback_cut_at_the_end_is_no_failure():
    assert classify_text(CONSTRUCTED_WARNING_CUT)["stage"] == "none"


def test_cut_tracebacks_of_the_dev_cases_are_placed_by_their_frames():
    # c409: V0 start-up cut in _initialize_kv_caches; c411: an engine-core record cut in load_weights
    ans = classify_text(_case("c409"))
    assert _short(ans) == ("engine_init", "other", 1) and ans["confidence"] == "high"
    ans = classify_text(_case("c411"))
    assert _short(ans)[:2] == ("weight_loading", "other") and ans["stage_basis"] == "frames"


def test_the_executor_start_up_wrapper_is_no_dead_engine_a_dead_worker_under_a_running_executor_is():
    assert classify_text(CONSTRUCTED_WORKERPROC_WRAPPER)["error_class"] == "other"
    assert classify_text(CONSTRUCTED_WORKER_DIED)["error_class"] == "engine_dead"
    assert classify_text(_case("c321"))["error_class"] == "other"
    assert classify_text(_case("c376"))["error_class"] == "engine_dead"
