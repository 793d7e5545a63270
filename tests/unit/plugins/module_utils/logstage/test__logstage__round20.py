"""Round 20 of issue 35: families read from their tools' sources after issue35o's freeze (a paste that ends right
after "Traceback", a module's import frames, a vLLM function called by its bare name, a traceback run onto one line,
vLLM's C++ CUDA wrappers, the multi-modal placeholder check, openai-harmony's parser).
The samples are written from each tool's format; paths, ids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief


def _answer(text):
    return brief(classify_text(text))


def test_a_paste_that_ends_right_after_traceback_is_an_error_where_the_log_was():
    text = ("INFO 07-27 13:06:47 llm_engine.py:176] Initializing an LLM engine (v0.5.3) with config: model='m'\n"
            "INFO 07-27 13:06:51 model_runner.py:680] Starting to load model m...\n"
            "[rank0]: Traceback (most recent call last):\n")
    assert _answer(text) == ("weight_loading", "other", "medium", 3)
    # without it the log shows no failure
    assert classify_text(text.rsplit("[rank0]", 1)[0])["stage"] == "none"


def test_an_import_chain_is_not_the_stage_of_the_files_it_imports():
    text = ("INFO 08-29 17:41:42 [__init__.py:241] Automatically detected platform cuda.\n"
            "Traceback (most recent call last):\n"
            '  File "/venv/bin/vllm", line 4, in <module>\n'
            "    from vllm.entrypoints.cli.main import main\n"
            '  File "/src/vllm/vllm/engine/arg_utils.py", line 24, in <module>\n'
            "    from vllm.config import (BlockSize, CacheConfig,\n")
    assert _answer(text)[:3] == ("environment", "other", "medium")
    # a function of the same file still places it
    called = text.replace("line 24, in <module>", "line 1300, in create_engine_config")
    assert _answer(called)[0] == "config"


def test_a_vllm_function_called_by_its_bare_name_in_the_last_frame():
    text = ('  File "/venv/lib/python3.10/site-packages/vllm/v1/worker/gpu_worker.py", line 135, in init_device\n'
            "    init_worker_distributed_environment(self.vllm_config, self.rank,\n")
    assert _answer(text)[:3] == ("distributed_init", "other", "high")


def test_a_traceback_run_onto_one_line_is_read_frame_by_frame():
    text = ('Traceback (most recent call last):  File "/venv/lib/python3.12/site-packages/uvicorn/protocols/http/'
            'httptools_impl.py", line 409, in run_asgi    result = await app(  # type: ignore[func-returns-value]  '
            '  File "/venv/lib/python3.12/site-packages/starlette/routing.py", line 714, in __call__    await '
            'self.middleware_stack(scope, receive, send)\n')
    assert _answer(text)[:3] == ("request", "other", "high")


def test_vllm_s_cuda_driver_wrappers_report_out_of_memory():
    text = ("CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:56\n"
            "CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:57\n")
    assert _answer(text) == ("unknown", "oom", None, 1)


def test_the_multi_modal_placeholder_check_is_a_request_s_prompt_at_low():
    text = "Expected there to be 1 prompt updates corresponding to 1 image items, but instead found 0 prompt updates!\n"
    assert _answer(text) == ("request", "other", "low", 1)


def test_openai_harmony_s_parser_runs_on_a_request_s_output():
    text = "openai_harmony.HarmonyError: Unexpected token 200002 while expecting start token 200006\n"
    assert _answer(text) == ("request", "other", "medium", 1)
