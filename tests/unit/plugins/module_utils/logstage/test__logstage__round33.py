"""Round 33 of issue 35 (after the fresh batch issue35aa was frozen and scored; each row from its tool's source):
asyncio's report of an exception in a done callback names the callback (V0's engine loop: the requests' stage), the
platform that was not detected in its older and newer words (class other: no CUDA call failed), V1's model runner
moving a scheduled step's sampled tokens to the host; and a plain line that reads as an error, in a paste with no
other error and no stage marker, is the failure at an unknown stage (`none` is for a log that shows no failure).
Paths, pids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text, classify_texts
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/venv/lib/python3.10/site-packages"
_OOM = ("ERROR 03-31 15:19:44 [async_llm_engine.py:68] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "318.00 MiB.\n")


@pytest.mark.parametrize("callback", [
    "_log_task_completion(error_callback=<bound method...0x7f00>>)(<Task finishe...')>) at %s/vllm/engine/"
    "async_llm_engine.py:48" % _SP,
    "functools.partial(<function _log_task_completion at 0x7f0012345678>, error_callback=<bound method "
    "AsyncLLMEngine._error_callback of <vllm.engine.async_llm_engine.AsyncLLMEngine object at 0x7f00>>)",
    "functools.partial(<function _raise_exception_on_finish at 0x7f0012345678>, request_tracker=<vllm.engine."
    "async_llm_engine.RequestTracker object at 0x7f00>)",
])
def test_asyncio_naming_the_engine_loops_callback_places_the_error_before_it_at_request(callback):
    text = _OOM + "Exception in callback %s\nhandle: <Handle %s>\nTraceback (most recent call last):\n" % (
        callback, callback)
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("request", "oom", 1)


def test_a_callback_no_row_maps_places_nothing():
    text = _OOM + ("Exception in callback functools.partial(<function _on_done at 0x7f00>)\n"
                   "handle: <Handle functools.partial(<function _on_done at 0x7f00>)>\nTraceback (most recent call last):\n")
    assert classify_text(text)["stage"] == "unknown"


@pytest.mark.parametrize("line, want", [
    ("RuntimeError: Failed to infer device type", ("config", "other", "high", "environment")),
    ("RuntimeError: No supported device detected.", ("config", "other", "high", "environment")),
    # PyTorch's torch.device(""): the empty device type of an undetected platform, wherever it is built (low)
    ("RuntimeError: [address=0.0.0.0:38231, pid=2088] Device string must not be empty",
     ("config", "other", "low", "environment")),
])
def test_no_platform_detected_is_class_other_with_an_environment_cause(line, want):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"], ans["confidence"], ans["cause_stage"]) == want


def test_the_model_runner_moving_a_steps_sampled_tokens_is_a_request():
    text = ("(VllmWorker TP1 pid=443) ERROR 09-02 08:04:02 [multiproc_executor.py:596]     valid_sampled_token_ids = "
            "sampled_token_ids.tolist()\n"
            "(VllmWorker TP1 pid=443) ERROR 09-02 08:04:02 [multiproc_executor.py:596] RuntimeError: CUDA error: an "
            "illegal memory access was encountered\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"]) == ("request", "illegal_memory_access")


@pytest.mark.parametrize("prefix, want", [
    ("c1447", ("request", "oom", "medium", 1)),                     # asyncio's callback report after the OOM record
    ("c1418", ("config", "other", "low", 3)),                       # the empty device string (label: environment)
    ("c872", ("request", "illegal_memory_access", "high", 3)),      # the sampled tokens' .tolist()
])
def test_round_33_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want


@pytest.mark.parametrize("line, cls", [
    ("error: creating server: Internal - failed to load all models", "other"),
    ("/usr/bin/ld: cannot find -lcuda: No such file or directory", "missing_file"),
    ("worker exited with exit code 137", "other"),
    ("panic: runtime error: invalid memory address or nil pointer dereference", "other"),
    ("python: /src/lib/Analysis/Allocation.cpp:47: void f(): Assertion `x' failed.", "other"),
])
def test_a_plain_line_that_reads_as_an_error_is_the_failure_at_an_unknown_stage(line, cls):
    ans = classify_text("some caller output\n" + line + "\n")
    assert (ans["stage"], ans["error_class"], ans["confidence"], ans["first_error"]["lineno"]) == (
        "unknown", cls, None, 2)
    assert ans["first_error"]["kind"] == "error_line" and "reads as an error" in ans["first_error"]["hint"]


@pytest.mark.parametrize("text", [
    "PLAY RECAP: h200 ok=12 changed=3 unreachable=0 failed=0 skipped=1\n",     # a count of none
    "gpu_facts: present=True timed out: none errors: {}\n",
    'vllm:request_success_total{finished_reason="error"} 0.0\n',             # a label's value
    "Clang version: Could not collect\n",                                     # collect_env: a tool not installed
    '{"level": "INFO", "message": "the upload failed once and was retried"}\n',  # a record of its own level
    "Job started. Streaming logs... (Ctrl-C to exit log streaming; job will not be killed)\n",
])
def test_words_that_are_no_failure_stay_none(text):
    assert classify_text(text)["stage"] == "none"


def test_a_log_with_a_stage_marker_keeps_its_words_quiet():
    # a server that got somewhere shows its failure in its own records; a library's plain line is no failure
    text = ("INFO 12-01 10:00:00 [api_server.py:1000] vLLM API server version 0.11.0\n"
            "upload of the usage stats failed, retrying\n")
    assert classify_text(text)["stage"] == "none"


def test_an_error_of_a_known_shape_in_another_file_wins():
    ans = classify_texts(["error: creating server: failed\n", "RuntimeError: CUDA error: an illegal memory access "
                          "was encountered\n"], nodes=["a", "b"])
    assert (ans["first_error"]["node"], ans["error_class"]) == ("b", "illegal_memory_access")


@pytest.mark.parametrize("prefix, want", [
    ("c560", ("unknown", "other", None, 9)),     # Triton's "error: creating server: ... failed to load all models"
    ("c116", ("unknown", "missing_file", None, 1)),  # the linker's "cannot find -lcuda" (label: other)
    ("c969", ("unknown", "other", None, 1)),     # a caller's "vLLM failed to start."
])
def test_round_33_error_words_on_real_pastes(prefix, want):
    assert brief(classify_text(case(prefix))) == want
