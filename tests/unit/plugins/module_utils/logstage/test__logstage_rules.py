# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Focused tests, one rule kind at a time: the frame -> stage map, stage order, failures without a traceback
header, logger-line failures, headers without their traceback, wrappers quoting a failure, the rules data.

The texts are built from vLLM's and PyTorch's own format strings and function names (the citations are in
_logstage_frames.FRAMES); none is a capture, and no rule is keyed to one.  Real logs are in test__logstage.py and
the public corpus (test__logstage__corpus.py)."""

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import (
    STAGES, classify_text, frame_stage, match_signature)
from ansible_collections.repro.vllm.plugins.module_utils.logstage import (
    _logstage_frames as frames_data,
    _logstage_rules as rules,
)

SITE = "/opt/venv/lib/python3.12/site-packages/"


def _frame(path, func, code="x = y()"):
    return '  File "%s%s", line 10, in %s\n    %s\n' % (SITE, path, func, code)


# --- the rules data --------------------------------------------------------------------------------------------

def test_frames_rows_are_cited_and_in_the_vocabulary():
    for func, part, stage, source in frames_data.FRAMES:
        assert func and part and source, func
        assert stage in STAGES, func
        assert frame_stage(func, SITE + part + "/x.py") == stage, func


def test_a_frame_outside_vllm_is_not_vllm_s():
    # a user's own load_model / execute_model is not vLLM's stage
    assert frame_stage("load_model", "/home/me/app/web_demo.py") is None
    assert frame_stage("execute_model", "/srv/my_runner.py") is None
    assert frame_stage("load_model", SITE + "vllm/v1/worker/gpu_worker.py") == "weight_loading"
    assert frame_stage("load_model", "C:\\venv\\Lib\\site-packages\\vllm\\worker\\worker.py") == "weight_loading"


def test_signature_rows_use_the_named_vocabulary():
    kinds = (rules.FAILURE, rules.VICTIM, rules.CONSEQUENCE, rules.WEAK_CONSEQUENCE, rules.DIAGNOSTIC, rules.HEADER,
             rules.HANG_HINT, rules.WARNING_HINT)
    placements = (rules.FIXED, rules.FIXED_UNTIL_READY, rules.AT_LEAST, rules.AT_LEAST_OR_UNKNOWN, rules.WHERE_OR,
                  rules.WHERE)
    flags = (rules.GENERIC, rules.AT_WARNING, rules.AT_INFO, rules.AT_DEBUG)
    for kind, key, dummy_rx, cls, placement, stage, row_flags, dummy_hint in rules.SIGNATURES:
        assert kind in kinds and placement in placements and key, key
        assert (stage is None) == (placement == rules.WHERE), key
        assert all(f in flags for f in row_flags), key
    for stage, role, fmt, key, dummy_rx in rules.MARKERS:
        assert stage in STAGES and role in (rules.ENTRY, rules.EXIT, rules.READY)
        assert fmt in (rules.FMT_VLLM, rules.FMT_UVICORN, rules.FMT_RAW, rules.FMT_NCCL)


# --- frames: a cut traceback is placed by its frames ------------------------------------------------------------

@pytest.mark.parametrize("path,func,stage", [
    ("vllm/engine/arg_utils.py", "create_engine_config", "config"),
    ("vllm/v1/worker/gpu_worker.py", "init_device", "cuda_init"),
    ("vllm/distributed/parallel_state.py", "init_distributed_environment", "distributed_init"),
    ("vllm/model_executor/model_loader/weight_utils.py", "safetensors_weights_iterator", "weight_loading"),
    ("vllm/v1/worker/gpu_worker.py", "determine_available_memory", "engine_init"),
    ("vllm/v1/worker/gpu_model_runner.py", "capture_model", "engine_init"),
    ("vllm/entrypoints/openai/api_server.py", "init_app_state", "api_ready"),
    ("vllm/v1/engine/async_llm.py", "output_handler", "request"),
])
def test_cut_traceback_is_placed_by_its_frames(path, func, stage):
    # a pasted excerpt: no "Traceback" line, no stage marker, an exception without a signature
    text = _frame(path, func) + "RuntimeError: something went wrong\n"
    ans = classify_text(text)
    assert ans["stage"] == stage and ans["stage_basis"] == "frames", ans["summary"]
    assert ans["first_error"]["lineno"] == 3


def test_distributed_init_inside_init_device_is_distributed_init():
    text = ("Traceback (most recent call last):\n" + _frame("vllm/v1/worker/gpu_worker.py", "init_device")
            + _frame("vllm/v1/worker/gpu_worker.py", "init_worker_distributed_environment")
            + "RuntimeError: something went wrong\n")
    assert classify_text(text)["stage"] == "distributed_init"


def test_v0_profile_run_through_execute_model_is_engine_init():
    # V0's profile_run calls execute_model: the earlier stage wins
    text = ("Traceback (most recent call last):\n" + _frame("vllm/worker/model_runner.py", "profile_run")
            + _frame("vllm/worker/model_runner.py", "execute_model") + "RuntimeError: something went wrong\n")
    assert classify_text(text)["stage"] == "engine_init"


# --- stage order ------------------------------------------------------------------------------------------------

UVICORN_UP = "INFO:     Started server process [593]\nINFO:     Waiting for application startup.\n" \
             "INFO:     Application startup complete.\n"
BIND = "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use\n"


def test_the_api_bind_after_startup_is_api_ready():
    ans = classify_text(UVICORN_UP + BIND)
    assert ans["stage"] == "api_ready" and ans["error_class"] == "port_in_use" and ans["stage_basis"] == "markers"
    # the same message without the API server up is the host's port (bound before the engine since 0.6.4)
    ans = classify_text(BIND)
    assert ans["stage"] == "environment" and ans["stage_basis"] == "message"


def test_never_before_the_furthest_stage_reached():
    # an exception whose frames say weight loading, printed after the log reached the KV-cache stage
    text = ("INFO 05-12 08:31:00 [gpu_worker.py:298] Available KV cache memory: 16.23 GiB\n"
            + _frame("vllm/model_executor/models/llama.py", "load_weights") + "KeyError: 'layers.0.x'\n")
    ans = classify_text(text)
    assert ans["stage"] == "engine_init" and ans["stage_basis"] == "markers"


def test_cuda_runtime_driver_refusals_surface_where_the_first_cuda_call_is():
    # the CUDA runtime refuses the driver (errors 35, 802, 803, 804) at the first CUDA call of whichever process makes
    # it, like torch's own checks below: where the log shows how far it got, there it surfaced and the driver is the
    # cause; a bare paste is environment at medium (the corpus labels config, cuda_init or distributed_init by where)
    for msg in ("RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n",
                "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
                "calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was "
                "attempted on non supported HW\n",
                "RuntimeError: CUDA error: system not yet initialized\n"):
        ans = classify_text(msg)
        assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("environment", "message", "medium"), msg
    ans = classify_text(UVICORN_UP + "RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n")
    assert (ans["stage"], ans["error_class"], ans["stage_basis"], ans["cause_stage"]) == (
        "request", "driver_mismatch", "markers", "environment")


def test_torch_cuda_init_refusals_surface_where_the_first_cuda_call_is():
    # torch's _lazy_init / _check_driver raise at the first CUDA call of whichever process makes it: a bare paste
    # is environment, but only at medium (vLLM's engine core prints it at device init: the words cannot tell)
    for msg in ("RuntimeError: The NVIDIA driver on your system is too old (found version 12080).\n",
                "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU\n"):
        ans = classify_text(msg)
        assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("environment", "driver_mismatch", "medium")
    ans = classify_text("(EngineCore pid=546) ERROR 08-12 03:12:29 [core.py:1202] RuntimeError: The NVIDIA driver "
                        "on your system is too old (found version 12080).\n")
    assert ans["stage"] == "environment" and ans["confidence"] == "medium"
    # where the log shows how far it got, there it surfaced; the driver stays its cause
    ans = classify_text(UVICORN_UP + "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\n")
    assert ans["stage"] == "request" and ans["stage_basis"] == "markers" and ans["cause_stage"] == "environment"


def test_a_cpp_hosts_glog_record_after_vllm_progress_is_medium():
    # Triton's vLLM backend (glog records of its C++ core) failing after the engine sized its KV cache: vLLM's
    # progress places it, but the failing step is the host's own, so no more than medium
    text = ("INFO 11-15 02:58:48 llm_engine.py:205] # GPU blocks: 2361, # CPU blocks: 512\n"
            "E1115 02:58:51.162611 1 backend_model.cc:634] ERROR: Failed to create instance: TypeError: boom\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("engine_init", "markers", "medium")
    assert ans["first_error"]["lineno"] == 2
    # PyTorch brackets its own c10 records: those keep the progress' high
    text = text.replace("E1115 02:58:51.162611 1 backend_model.cc:634]", "[E1115 02:58:51.162611 1 ProcessGroup.cpp:634]")
    assert classify_text(text)["confidence"] == "high"


# --- failures without a Traceback header ---------------------------------------------------------------------------

def test_exception_line_first_and_after_a_process_prefix():
    ans = classify_text("KeyError: 'choices'\n")
    assert ans["stage"] == "unknown" and ans["first_error"]["lineno"] == 1
    # a KeyError naming a model parameter is a checkpoint the model's load_weights does not know (issue 35)
    ans = classify_text("KeyError: 'model.layers.0.weight'\n")
    assert (ans["stage"], ans["confidence"], ans["first_error"]["lineno"]) == ("weight_loading", "medium", 1)
    ans = classify_text("(EngineCore_DP0 pid=7) ValueError: No available memory for the cache blocks. Try increasing "
                        "`gpu_memory_utilization` when initializing the engine.\n")
    assert ans["stage"] == "engine_init" and ans["error_class"] == "oom" and ans["first_error"]["process"] == "EngineCore_DP0"


def test_a_warning_category_line_is_not_an_exception():
    assert classify_text("DeprecationWarning: this will go away\n")["stage"] == "none"


@pytest.mark.parametrize("method,stage", [("init_device", "cuda_init"), ("load_model", "weight_loading"),
                                          ("determine_num_available_blocks", "engine_init")])
def test_a_logger_line_naming_the_worker_method(method, stage):
    # vllm/executor/multiproc_worker_utils.py: "Exception in worker %s while processing method %s."
    text = ("(VllmWorkerProcess pid=25847) ERROR 03-06 01:17:36 multiproc_worker_utils.py:240] Exception in worker "
            "VllmWorkerProcess while processing method %s.\n" % method)
    ans = classify_text(text)
    assert ans["stage"] == stage and ans["stage_basis"] == "message", ans["summary"]


def test_a_debug_line_is_read_only_for_signatures_logged_at_debug():
    text = ("DEBUG 09-04 17:38:34 launcher.py:64] port 44319 is used by process psutil.Process(pid=1) launched with "
            "command:\nDEBUG 09-04 17:38:35 core.py:10] RuntimeError: not a failure at DEBUG\n")
    ans = classify_text(text)
    assert ans["stage"] == "none"
    assert [h["lineno"] for h in ans["timeline"][0]["hints"]] == [1]


def test_ray_placement_errors():
    for msg in ("ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement group.",
                "ValueError: Ray does not allocate any GPUs on the driver node. Consider adjusting the Ray placement group "
                "or running the driver on a GPU node."):
        ans = classify_text(msg + "\n")
        assert ans["stage"] == "cuda_init" and ans["first_error"]["lineno"] == 1, msg


def test_an_iteration_timeout_is_a_timeout_while_serving():
    ans = classify_text("ERROR 06-13 02:36:52 async_llm_engine.py:532] Engine iteration timed out. This should never happen!\n")
    assert ans["stage"] == "request" and ans["error_class"] == "timeout"


# --- wrappers ------------------------------------------------------------------------------------------------------

def test_a_header_without_its_traceback_is_a_wrapper():
    # the engine's death (a consequence) comes first; the ASGI header after it shows no exception of its own
    text = ("Traceback (most recent call last):\n" + _frame("vllm/engine/async_llm_engine.py", "_log_task_completion")
            + "vllm.engine.async_llm_engine.AsyncEngineDeadError: Task finished unexpectedly.\n"
            "INFO:     1.2.3.4:5 - \"POST /v1/chat/completions HTTP/1.1\" 500 Internal Server Error\n"
            "ERROR:    Exception in ASGI application\n")
    ans = classify_text(text)
    assert ans["error_class"] == "engine_dead" and ans["first_error"]["lineno"] == 4


def test_a_wrapper_quoting_a_failure_is_classed_by_the_failure():
    text = ("Traceback (most recent call last):\n" + _frame("vllm/v1/executor/multiproc_executor.py", "get_response")
            + "RuntimeError: Worker failed with error 'CUDA error: an illegal memory access was encountered\n"
            "Search for `cudaErrorIllegalAddress' in the CUDA runtime documentation for more information.\n")
    ans = classify_text(text)
    assert ans["error_class"] == "illegal_memory_access" and ans["first_error"]["lineno"] == 4


def test_an_empty_error_record_heads_its_traceback():
    # logger.exception(e) of an exception without text, glued to a progress bar whose CR was lost
    text = ("Loading safetensors checkpoint shards:   0% 0/1 [00:00<?, ?it/s]ERROR 09-24 02:53:53 [engine.py:467] \n"
            "Traceback (most recent call last):\n")
    ans = classify_text(text)
    assert ans["stage"] == "weight_loading" and ans["first_error"]["lineno"] == 1


def test_ci_viewer_column_and_bracketed_stamp_are_wrappers():
    text = "".join("  | [2024-09-05T00:38:34Z] " + line + "\n" for line in (UVICORN_UP + BIND).splitlines())
    ans = classify_text(text)
    assert ans["stage"] == "api_ready" and ans["error_class"] == "port_in_use"


def test_match_signature_levels_by_name_and_letter():
    assert match_signature("torch.OutOfMemoryError: CUDA out of memory.", "error").cls == "oom"
    assert match_signature("torch.OutOfMemoryError: CUDA out of memory.", "E").cls == "oom"
    assert match_signature("port 1 is used by process x launched with command:", "debug").kind == rules.WARNING_HINT
    assert match_signature("torch.OutOfMemoryError: CUDA out of memory.", "debug") is None


def test_a_config_validation_error_through_a_subprocess_failure_is_config_error():
    # the engine's RPC wrapper quotes the worker's pydantic validation error (vllm/v1/executor/multiproc_executor.py)
    text = ("Traceback (most recent call last):\n" + _frame("vllm/v1/executor/multiproc_executor.py", "get_response")
            + "RuntimeError: Worker failed with error '1 validation error for ParallelConfig', please check the "
            "stack trace above for the root cause\n")
    ans = classify_text(text)
    assert ans["stage"] == "config" and ans["error_class"] == "config_error" and ans["stage_basis"] == "message"
