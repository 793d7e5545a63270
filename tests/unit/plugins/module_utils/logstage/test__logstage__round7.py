# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 35, seventh round: a record cut at its start begins at its first pasted line (a source or caret line), the Ray
executors' worker start yields to the step it runs, torch.compile frames are start-up's, an async request's and an
HTTP middleware's frames are a request's, podman's and docker's CDI injection is the container runtime's, and the API
server's ``Engine core initialization failed`` is no dead engine (the engine never ran).  Inputs written here are named
``CONSTRUCTED_*`` and built from the source strings and formats cited beside them; the dev cases named are real pastes
(tests/fixtures/public-corpus)."""

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import case as _case, short as _short

_W = "(Worker_TP0 pid=7) ERROR 01-01 00:00:00 [multiproc_executor.py:1] "

# a V1 worker's error record (v1/executor/multiproc_executor.py logs the worker's traceback) whose paste starts at a
# caret line and a source line of gpu_worker.load_model (vllm/v1/worker/gpu_worker.py: self.model_runner.load_model())
CONSTRUCTED_CUT_AT_CARETS = (
    _W + "                   ^^^^^^^^^^^^^^^^\n"
    + _W + "    self.model_runner.load_model()\n"
    + _W + '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 1, in load_model\n'
    + _W + "    self.model = model_loader.load_model(\n")

# the same record after an unrelated indented line of another stream (no run of code lines of its own stream)
CONSTRUCTED_OTHER_STREAM_BEFORE = (
    "(APIServer pid=1) INFO 01-01 00:00:00 [api_server.py:1]     indented text\n"
    + _W + '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 1, in load_model\n'
    + _W + "    self.model = model_loader.load_model(\n")

# executor/ray_distributed_executor.py _init_workers_ray runs _run_workers("init_device"), then ("load_model"): a
# frame of the step under it wins; alone it is the workers' start (cuda_init)
CONSTRUCTED_RAY_INIT_THEN_LOAD = (
    "Traceback (most recent call last):\n"
    '  File "/x/vllm/executor/ray_distributed_executor.py", line 1, in _init_workers_ray\n'
    '    self._run_workers("load_model",\n'
    '  File "/x/vllm/worker/worker.py", line 1, in load_model\n'
    "    self.model_runner.load_model()\n"
    "RuntimeError: boom\n")
CONSTRUCTED_RAY_INIT_ALONE = (
    "Traceback (most recent call last):\n"
    '  File "/x/vllm/executor/ray_distributed_executor.py", line 1, in _init_workers_ray\n'
    "    self._init_workers()\n"
    "RuntimeError: boom\n")

# vllm/compilation/backends.py (VllmBackend.__call__ -> PiecewiseCompileInterpreter) and torch/_inductor/compile_fx.py:
# the model is compiled in the start-up's profiling run
CONSTRUCTED_COMPILE = (
    _W + '  File "/x/vllm/compilation/backends.py", line 1, in __call__\n'
    + _W + "    PiecewiseCompileInterpreter(self.split_gm, submod_names_to_compile,\n"
    + _W + '  File "/x/torch/_inductor/compile_fx.py", line 1, in compile_fx\n'
    + _W + "    return aot_autograd(\n")

# V0 vllm/engine/async_llm_engine.py AsyncLLMEngine.generate -> add_request: a request's stream
CONSTRUCTED_ASYNC_GENERATE = (
    '  File "/x/vllm/engine/async_llm_engine.py", line 1, in generate\n'
    "    async for output in await self.add_request(\n"
    '  File "/x/vllm/engine/async_llm_engine.py", line 1, in add_request\n'
    "    self.start_background_loop()\n")

# starlette/_exception_handler.py wrap_app_handling_exceptions (ExceptionMiddleware: HTTP and websocket scopes only)
CONSTRUCTED_STARLETTE = (
    '  File "/x/starlette/_exception_handler.py", line 1, in wrapped_app\n'
    "    raise exc\n"
    '  File "/x/starlette/_exception_handler.py", line 1, in wrapped_app\n'
    "    await app(scope, receive, sender)\n")

# podman (libpod: "setting up CDI devices: %w" with the CDI library's "unresolvable CDI devices %s") and docker 25+
# (daemon: "CDI device injection failed: %w")
CONSTRUCTED_PODMAN_CDI = "Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all\n"
CONSTRUCTED_DOCKER_CDI = "docker: Error response from daemon: CDI device injection failed: unresolvable CDI devices nvidia.com/gpu=all\n"

# v1/engine/utils.py wait_for_engine_startup: an engine core process exited before its READY handshake
CONSTRUCTED_CORE_INIT_FAILED = (
    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. "
    "Failed core proc(s): {'EngineCore_DP0': 1}\n")

# an old-format vLLM record (0.3 -> 0.7: "ERROR 03-01 07:34:52 multiproc_worker_utils.py:242] ...") cut by the
# paste's end inside its file name: no message, so no error of its own
CONSTRUCTED_OLD_PREFIX_CUT = (
    "(VllmWorkerProcess pid=2) ERROR 03-01 07:34:52 multiproc_worker_utils.py:242]   "
    'File "/x/vllm/worker/model_runner.py", line 1, in profile_run\n'
    "(VllmWorkerProcess pid=2) ERROR 03-01 07:34:52 multiproc_worker_utils.py:242]     self.execute_model(\n"
    "(VllmWorkerProcess pid=2) ERROR 03-01 07:34:52 multiproc_\n")


def test_a_record_cut_at_a_caret_or_source_line_begins_there():
    assert _short(classify_text(CONSTRUCTED_CUT_AT_CARETS)) == ("weight_loading", "other", 1)
    assert _short(classify_text(CONSTRUCTED_OTHER_STREAM_BEFORE))[2] == 2
    # dev c410 (a source line first), c412 and c457 (a source line, then carets), c450 (the API server's start-up path)
    for name in ("c410", "c412", "c450", "c457"):
        assert _short(classify_text(_case(name)))[2] == 1, name


def test_the_ray_workers_start_yields_to_the_step_it_runs():
    assert _short(classify_text(CONSTRUCTED_RAY_INIT_THEN_LOAD)) == ("weight_loading", "other", 6)
    assert classify_text(CONSTRUCTED_RAY_INIT_ALONE)["stage"] == "cuda_init"
    assert classify_text(_case("c447"))["stage"] == "weight_loading"
    assert classify_text(_case("c446"))["stage"] == "cuda_init"


def test_torch_compile_frames_are_start_up():
    ans = classify_text(CONSTRUCTED_COMPILE)
    assert _short(ans) == ("engine_init", "other", 1) and ans["stage_basis"] == "frames"
    for name in ("c455", "c456", "c457"):
        assert _short(classify_text(_case(name)))[:2] == ("engine_init", "other"), name


def test_an_async_request_and_an_http_middleware_are_a_request():
    assert classify_text(CONSTRUCTED_ASYNC_GENERATE)["stage"] == "request"
    assert classify_text(CONSTRUCTED_STARLETTE)["stage"] == "request"
    assert classify_text(_case("c449"))["stage"] == "request"
    assert classify_text(_case("c451"))["stage"] == "request"


def test_cdi_injection_is_the_container_runtime():
    for text in (CONSTRUCTED_PODMAN_CDI, CONSTRUCTED_DOCKER_CDI):
        assert _short(classify_text(text)) == ("environment", "container_error", 1)
    assert _short(classify_text(_case("c453"))) == ("environment", "container_error", 3)


def test_engine_core_initialization_failed_is_no_dead_engine():
    ans = classify_text(CONSTRUCTED_CORE_INIT_FAILED)
    assert (ans["stage"], ans["error_class"]) == ("unknown", "other")
    assert classify_text(_case("c13"))["error_class"] == "other"


def test_an_old_format_record_cut_in_its_file_name_is_no_error():
    assert _short(classify_text(CONSTRUCTED_OLD_PREFIX_CUT)) == ("engine_init", "other", 1)
    assert _short(classify_text(_case("c455")))[2] == 1
