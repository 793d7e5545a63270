"""Round 35 of issue 35 (after the fresh batch issue35ac was frozen and scored; each row from its tool's source): a
vLLM plugin package's module code being imported is the environment, a wrapper reporting the engine's death places
the crash flushed after it, Starlette's HTTP-only task-group path and the engine core's client calls are a running
server's, and a traceback logged behind a bare ``[file.py:N]`` prefix keeps its frames.  Paths, pids and numbers are
invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/venv/lib/python3.12/site-packages"


@pytest.mark.parametrize("plugin", ["vllm_omni", "vllm_ascend"])
def test_a_vllm_plugins_module_being_imported_is_the_environment(plugin):
    text = ("Traceback (most recent call last):\n"
            '  File "%s/vllm/entrypoints/cli/main.py", line 52, in main\n'
            "    from %s.entrypoints.cli.main import main\n"
            '  File "%s/%s/entrypoints/cli/serve.py", line 21, in <module>\n'
            "    from %s.entrypoints.openai.api_server import run_server\n" % (_SP, plugin, _SP, plugin, plugin))
    ans = classify_text(text)
    assert (ans["stage"], ans["confidence"]) == ("environment", "medium")


def test_a_package_merely_named_like_vllm_is_not_a_plugin():
    text = ("Traceback (most recent call last):\n"
            '  File "/home/u/app.py", line 3, in <module>\n'
            "    import myvllmtools.x\n"
            '  File "/home/u/myvllmtools/x.py", line 1, in <module>\n'
            "    import foo\n")
    assert classify_text(text)["stage"] == "unknown"


def test_an_engine_dead_wrapper_places_the_crash_flushed_after_it():
    text = ("(APIServer pid=1)   File \"%s/vllm/v1/engine/async_llm.py\", line 503, in output_handler\n"
            "(APIServer pid=1)     outputs = await engine_core.get_output_async()\n"
            "(APIServer pid=1) vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
            "trace (above) for the root cause.\n"
            "terminate called after throwing an instance of 'c10::AcceleratorError'\n"
            "  what():  CUDA error: an illegal memory access was encountered\n" % _SP)
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("request", "illegal_memory_access", "medium")


def test_a_wrapper_of_another_kind_before_the_error_places_nothing():
    text = ("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
            "terminate called after throwing an instance of 'c10::AcceleratorError'\n"
            "  what():  CUDA error: an illegal memory access was encountered\n")
    assert classify_text(text)["stage"] == "unknown"


def test_starlettes_http_only_task_group_is_a_request():
    text = ('  File "%s/starlette/middleware/base.py", line 185, in __call__\n'
            "    with collapse_excgroups():\n"
            '  File "/usr/lib/python3.11/contextlib.py", line 155, in __exit__\n' % _SP)
    assert classify_text(text)["stage"] == "request"


def test_the_engine_cores_client_call_is_a_running_engines():
    text = ("(EngineCore_0 pid=7) ERROR 01-12 17:24:20 [core.py:769] Invocation of collective_rpc method failed\n"
            "(EngineCore_0 pid=7) ERROR 01-12 17:24:20 [core.py:769] Traceback (most recent call last):\n"
            "(EngineCore_0 pid=7) ERROR 01-12 17:24:20 [core.py:769]   File \"%s/vllm/v1/engine/core.py\", line 766, in "
            "_handle_client_request\n"
            "(EngineCore_0 pid=7) ERROR 01-12 17:24:20 [core.py:769]     result = method(*args)\n" % _SP)
    assert classify_text(text)["stage"] == "request"


def test_a_traceback_behind_a_bare_file_prefix_keeps_its_frames():
    text = ("Traceback (most recent call last):\n"
            '[multiproc_executor.py:559]   File "%s/vllm/v1/worker/gpu_worker.py", line 211, in load_model\n'
            "[multiproc_executor.py:559]     self.model_runner.load_model()\n" % _SP)
    assert classify_text(text)["stage"] == "weight_loading"


@pytest.mark.parametrize("prefix, want", [
    ("c1490", ("environment", "other", "medium", 7)),          # vllm_omni's CLI import chain
    ("c1488", ("request", "illegal_memory_access", "medium", 8)),  # EngineDeadError, then the C++ abort
    ("c1497", ("request", "other", "high", 1)),                # Starlette's collapse_excgroups
    ("c1502", ("request", "other", "high", 1)),                # collective_rpc through _handle_client_request
    ("c1511", ("weight_loading", "other", "high", 1)),         # [multiproc_executor.py:559]-prefixed frames
])
def test_round_35_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want


def test_an_engine_dead_wrapper_places_a_bare_line_that_borrowed_its_second():
    # round 35b: the custom all-reduce's CUDACHECK line has no time of its own; it borrows the records' second
    text = ("(APIServer pid=368) ERROR 09-08 00:45:43 [async_llm.py:430]   File \"%s/vllm/v1/engine/async_llm.py\", "
            "line 420, in output_handler\n"
            "(APIServer pid=368) ERROR 09-08 00:45:43 [async_llm.py:430] vllm.v1.engine.exceptions.EngineDeadError: "
            "EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
            "(VllmWorker TP0 pid=767) INFO 09-08 00:45:43 [multiproc_executor.py:520] Parent process exited, "
            "terminating worker\n"
            "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:594 'an illegal memory access was encountered'\n"
            % _SP)
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("request", "illegal_memory_access", 4)


def test_a_bare_line_a_minute_after_the_wrapper_is_another_story():
    text = ("(APIServer pid=368) ERROR 09-08 00:45:43 [async_llm.py:430]   File \"%s/vllm/v1/engine/async_llm.py\", "
            "line 420, in output_handler\n"
            "(APIServer pid=368) ERROR 09-08 00:45:43 [async_llm.py:430] vllm.v1.engine.exceptions.EngineDeadError: "
            "EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
            "(VllmWorker TP0 pid=767) INFO 09-08 00:46:50 [multiproc_executor.py:520] Parent process exited\n"
            "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:594 'an illegal memory access was encountered'\n"
            % _SP)
    assert classify_text(text)["stage"] == "unknown"
