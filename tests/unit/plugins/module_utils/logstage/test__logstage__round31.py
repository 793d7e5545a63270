"""Round 31 of issue 35 (after the fresh batch issue35y was frozen and scored; each row from its tool's source or
format): Docker Desktop's copied time before each line, openai-python's status error as a caller prints it, the
guidance backend's matcher error, out-of-memory on Ascend NPUs and TPUs.  Paths, pids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/usr/local/lib/python3.10/dist-packages"


def test_docker_desktop_time_before_a_traceback_is_stripped():
    lines = ['  File "%s/vllm/engine/async_llm_engine.py", line 495, in engine_step' % _SP,
             "    request_outputs = await self.engine.step_async()",
             '  File "%s/vllm/worker/worker.py", line 272, in execute_model' % _SP]
    ans = classify_text("".join("2024-06-10 13:26:25 " + line + "\n" for line in lines))
    assert (ans["stage"], ans["stage_basis"]) == ("request", "frames")


def test_a_program_line_behind_a_date_keeps_its_words():
    # "date time message" of a program's own format is not a Desktop prefix: nothing of it is taken away
    ans = classify_text("2024-06-10 13:26:25 all requests served\n")
    assert ans["stage"] == "none"


@pytest.mark.parametrize("line, want", [
    ("Error code: 500 - {'message': 'Internal server error'}", ("request", "other")),
    ("WARNING 03-26 15:23:05 [backend_guidance.py:86] LLMatcher error: Parser Error: token \" null\" doesn't "
     "satisfy the grammar; byte 'n' fails parse", ("request", "other")),
    ("[ERROR] 2025-12-04-11:18:17 (PID:11, Device:0, RankID:0) ERR00006 PTA memory error", ("unknown", "oom")),
    ("[PID: 5] 2026-01-16-10:20:15.729.456 Memory_Allocation_Failure(EL0004): Failed to allocate memory.",
     ("unknown", "oom")),
    ("RuntimeError: NPU out of memory. NPUCachingAllocator tried to allocate 180.00 MiB", ("unknown", "oom")),
    ("RESOURCE_EXHAUSTED: Error loading program 'jit_f': Attempting to reserve 6.14G at the bottom of memory.",
     ("unknown", "oom")),
])
def test_messages_of_round_31(line, want):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == want


def test_an_npu_oom_is_placed_by_the_log():
    text = ("INFO 01-02 03:04:05 [gpu_worker.py:9] Available KV cache memory: 20.00 GiB\n"
            "INFO 01-02 03:04:06 [api_server.py:9] Starting vLLM API server on http://0.0.0.0:8000\n"
            "RuntimeError: NPU out of memory. NPUCachingAllocator tried to allocate 180.00 MiB\n")
    ans = classify_text(text)
    # the API server was starting (its line is the furthest the log proves): api_ready, as a CUDA OOM there
    assert (ans["stage"], ans["error_class"]) == ("api_ready", "oom")


@pytest.mark.parametrize("prefix, want", [
    ("c1350", ("request", "other", "high", 1)),      # Docker Desktop: V0's engine_step frames, cut
    ("c1347", ("request", "other", "medium", 2)),    # smolagents: Error code: 500 - {...}
    ("c1348", ("request", "other", "high", 2)),      # vLLM's LLMatcher warning (the label: llguidance's line 1)
    ("c1358", ("unknown", "oom", None, 3)),          # vllm-omni on Ascend: Memory_Allocation_Failure(EL0004)
    ("c1360", ("unknown", "oom", None, 1)),          # torch_npu: ERR00006 PTA memory error
])
def test_round_31_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want


def test_the_launchers_route_lines_mark_the_api_server():
    text = ("INFO 02-09 19:01:40 launcher.py:29] Route: /v1/models, Methods: GET\n"
            "INFO 02-09 19:01:40 launcher.py:29] Route: /v1/chat/completions, Methods: POST\n"
            "ERROR:    Traceback (most recent call last):\n")
    assert classify_text(text)["stage"] == "api_ready"


def test_flashinfer_jit_build_failing_is_engine_init():
    text = ("(EngineCore_DP0 pid=9) ERROR 12-20 20:13:01 [core.py:868] subprocess.CalledProcessError: Command '['ninja', "
            "'-v', '-C', '/home/u/.cache/flashinfer/0.5.3/121a/cached_ops', '-f', 'build.ninja']' returned non-zero "
            "exit status 1.\n")
    assert classify_text(text)["stage"] == "engine_init"


@pytest.mark.parametrize("prefix, want", [
    ("c875", ("api_ready", "other", "medium", 17)),      # routes listed, then uvicorn's ERROR: Traceback
    ("c1146", ("engine_init", "other", "medium", 2)),    # FlashInfer's ninja build chained into EngineCoreProc
])
def test_round_31b_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want


def test_building_the_openai_handlers_is_api_ready():
    text = ('Traceback (most recent call last):\n  File "/src/engine.py", line 128, in _initialize_engines\n'
            "    self.chat_engine = OpenAIServingChat(\n")
    assert classify_text(text)["stage"] == "api_ready"


def test_round_31c_on_the_real_paste():
    # RunPod's worker-vllm building its chat handler over an engine it built before; the paste ends there
    assert brief(classify_text(case("c837"))) == ("api_ready", "other", "high", 1)
