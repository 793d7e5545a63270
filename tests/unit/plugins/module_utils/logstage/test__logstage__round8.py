"""Round 8 of issue 35: the method that places an excerpt without start-up lines - the method a frame's source
line calls, the cut traceback right after an error record, V1's dump of a failed execution, a worker's answered
failure, a C++ terminate backtrace.  Every sample is written from vLLM's (or the library's) source, not a corpus
case; the paths are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import _source_stage, classify_text
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_frames import DEVICE_QUERY

V0 = "/opt/venv/lib/python3.10/site-packages/vllm"


def _ans(text):
    ans = classify_text(text)
    return ans["stage"], ans["stage_basis"], ans["confidence"], ans["error_class"]


@pytest.mark.parametrize("line,stage", [
    # vllm/engine/llm_engine.py (V0) LLMEngine.__init__
    ("self._initialize_kv_caches()", "engine_init"),
    # vllm/executor/gpu_executor.py (V0) determine_num_available_blocks
    ("return self.driver_worker.determine_num_available_blocks()", "engine_init"),
    # vllm/worker/worker.py load_model, vllm/model_executor/model_loader get_model
    ("self.model_runner.load_model()", "weight_loading"),
    ("loaded_weights = model.load_weights(", "weight_loading"),
    # vllm/v1/engine/core.py run_engine_core
    ("engine_core.run_busy_loop()", "request"),
    # init_device's torch.cuda.set_device: a called cuda_init yields to later frames below it (as a device query)
    ("torch.cuda.set_device(self.device)", DEVICE_QUERY),
])
def test_a_vllm_frame_source_line_names_the_method_it_calls(line, stage):
    assert _source_stage(line, calls=True) == stage


@pytest.mark.parametrize("line", [
    "completion = client.chat.completions.create(",   # a client's call: no underscore, not vLLM's name
    "super().__init__(vllm_config)",                   # __init__'s rows disagree
    "return func(*args, **kwargs)",                    # not an attribute call
])
def test_calls_that_name_no_stage(line):
    assert _source_stage(line, calls=True) is None


def test_a_call_outside_a_vllm_frame_is_not_read():
    # a user's own script calling a method of the same name says nothing about vLLM
    assert _source_stage("self.model_runner.load_model()") is None


def test_a_traceback_cut_below_the_call_is_placed_by_the_callee():
    text = ("[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "%s/engine/llm_engine.py", line 256, in __init__\n'
            "[rank0]:     self._initialize_kv_caches()\n"
            '[rank0]:   File "/opt/\n' % V0)
    assert _ans(text)[:3] == ("engine_init", "frames", "high")


def test_the_ray_executor_call_yields_to_the_load_below_it():
    # vllm/engine/llm_engine.py (<=0.3) LLMEngine.__init__ -> _init_workers_ray -> _run_workers("load_model")
    text = ("Traceback (most recent call last):\n"
            '  File "%s/engine/llm_engine.py", line 126, in __init__\n'
            "    self._init_workers_ray(placement_group)\n"
            '  File "%s/worker/worker.py", line 100, in load_model\n'
            "    self.model_runner.load_model()\n"
            "RuntimeError: boom\n" % (V0, V0))
    assert _ans(text)[0] == "weight_loading"


def test_an_error_record_takes_the_stage_of_its_cut_traceback_with_medium_confidence():
    # V0 async_llm_engine.py _log_task_completion: logger.error("Engine background task failed", exc_info=e), its
    # traceback printed after it and cut before the exception
    text = ("Mar 01 10:00:00 gpu1 vllm[123]: ERROR 03-01 10:00:00 async_llm_engine.py:60] Something failed\n"
            "Mar 01 10:00:00 gpu1 vllm[123]: Traceback (most recent call last):\n"
            'Mar 01 10:00:00 gpu1 vllm[123]:   File "%s/engine/async_llm_engine.py", line 50, in _log_task_completion\n'
            "Mar 01 10:00:00 gpu1 vllm[123]:     return_value = task.result()\n" % V0)
    assert _ans(text) == ("request", "frames", "medium", "other")


def test_a_traceback_far_below_an_error_does_not_place_it():
    text = ("ERROR 03-01 10:00:00 some_module.py:60] Something failed\n" + "INFO 03-01 10:00:01 x.py:1] a line\n" * 5
            + "Traceback (most recent call last):\n"
            '  File "%s/engine/async_llm_engine.py", line 50, in _log_task_completion\n' % V0)
    assert _ans(text)[0] == "unknown"


def test_the_background_task_words_are_serving():
    assert _ans("ERROR 06-13 11:11:23 async_llm_engine.py:44] Engine background task failed\n")[:3] == (
        "request", "inferred", "medium")


def test_the_dump_of_a_failed_execution_is_serving():
    # vllm/v1/engine/core.py execute_model_with_error_logging -> logging_utils/dump_input.py dump_engine_exception
    text = ("(EngineCore_DP0 pid=1) ERROR 07-07 02:22:12 [dump_input.py:76] Dumping scheduler output for model "
            "execution: SchedulerOutput(scheduled_new_reqs=[])\n")
    assert _ans(text) == ("request", "message", "high", "other")


def test_a_cxx_terminate_backtrace_is_a_failure_of_unknown_stage():
    text = ("(RayWorkerWrapper pid=1) /x/ray/_raylet.so(+0x101cf38) [0x7f] ray::TerminateHandler()\n"
            "(RayWorkerWrapper pid=1) /x/libstdc++.so.6(+0xb135a) [0x7f] __cxxabiv1::__terminate()\n")
    assert _ans(text)[0] == "unknown"


@pytest.mark.parametrize("func,path", [
    ("propose", V0 + "/v1/spec_decode/eagle.py"),
    ("propose_draft_token_ids", V0 + "/v1/worker/gpu_model_runner.py"),
    ("_run_speculative_decoding_step", V0 + "/spec_decode/spec_decode_worker.py"),
])
def test_speculative_decoding_steps_are_serving(func, path):
    text = ('Traceback (most recent call last):\n  File "%s", line 10, in %s\n    x = y\nAttributeError: boom\n'
            % (path, func))
    assert _ans(text)[:2] == ("request", "frames")


def test_nested_process_tags_are_stripped_to_the_innermost():
    # a child's tagged output relayed through a tagged parent: "(APIServer pid=4) (EngineCore_0 pid=5)   File ..."
    text = ('(APIServer pid=4) (EngineCore_0 pid=5)   File "%s/v1/engine/core.py", line 691, in run_engine_core\n'
            "(APIServer pid=4) (EngineCore_0 pid=5)     engine_core = EngineCoreProc(*args, **kwargs)\n" % V0)
    ans = classify_text(text)
    assert (ans["stage"], ans["first_error"]["lineno"], ans["first_error"]["process"]) == ("unknown", 1, "EngineCore_0")
