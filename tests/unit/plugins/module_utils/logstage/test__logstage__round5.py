# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 35, fifth round: the class and stage of excerpts from what vLLM prints around a failure - the worker method
an executor's call names, the KV cache sized to nothing before an error, a dead engine's error that quotes the
original one, Ray's memory monitor, the engine core's start-up header cut before its exception, a frame line the
paste cut, a probe answered 200.  Inputs written here are named ``CONSTRUCTED_*`` and built from the source strings
and formats cited beside them; the dev cases named are real pastes (tests/fixtures/public-corpus)."""

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import _source_stage, classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import case as _case, short as _short


# V0 executors (vllm/executor/ray_distributed_executor.py 0.6-0.10): _run_workers("init_device"), then Ray's get
CONSTRUCTED_RAY_INIT_DEVICE = (
    'ERROR 01-01 00:00:00 [core.py:1]     self._run_workers("init_device")\n'
    'ERROR 01-01 00:00:00 [core.py:1]   File "/x/vllm/executor/ray_distributed_executor.py", line 522, in _run_workers\n'
    'ERROR 01-01 00:00:00 [core.py:1]     ray_worker_outputs = ray.get(ray_worker_outputs)\n'
    'ERROR 01-01 00:00:00 [core.py:1] ray.exceptions.RayTaskError(RuntimeError): boom\n')


def test_an_executor_call_names_the_worker_method_that_ran():
    assert _source_stage('self._run_workers("init_device")') == "cuda_init"
    assert _source_stage('self._run_workers("load_model", max_concurrent_workers=2)') == "weight_loading"
    assert _source_stage("self.collective_rpc('determine_available_memory')") == "engine_init"
    assert _source_stage('self.collective_rpc("no_such_method")') is None
    ans = classify_text(CONSTRUCTED_RAY_INIT_DEVICE)
    assert (ans["stage"], ans["stage_basis"]) == ("cuda_init", "frames")
    # dev c377: the same call site, the Ray task error's class name cut by the paste
    ans = classify_text(_case("c377"))
    assert _short(ans) == ("cuda_init", "other", 12)


def test_a_kv_cache_sized_to_nothing_makes_the_next_error_of_no_class_oom():
    # vLLM 0.1 llm_engine.py _init_cache: "# GPU blocks: %d, # CPU blocks: %d", then a tensor of negative size
    tail = ("Traceback (most recent call last):\n  File \"/x/vllm/worker/cache_engine.py\", line 9, in allocate\n"
            "    t = torch.empty(size=shape)\n"
            "RuntimeError: Trying to create tensor with negative dimension -1: [-1, 32, 16, 16, 8]\n")
    ans = classify_text("INFO 06-21 10:00:18 llm_engine.py:128] # GPU blocks: -1, # CPU blocks: 512\n" + tail)
    assert (ans["stage"], ans["error_class"]) == ("engine_init", "oom")
    ans = classify_text("INFO 06-21 10:00:18 llm_engine.py:128] # GPU blocks: 0, # CPU blocks: 512\n" + tail)
    assert ans["error_class"] == "oom"
    # a cache of some size says nothing about the error
    ans = classify_text("INFO 06-21 10:00:18 llm_engine.py:128] # GPU blocks: 2048, # CPU blocks: 512\n" + tail)
    assert ans["error_class"] == "other"
    # V1 gpu_worker.py determine_available_memory: "Available KV cache memory: %.2f GiB" (negative)
    ans = classify_text("INFO 01-01 00:00:00 [gpu_worker.py:255] Available KV cache memory: -1.52 GiB\n"
                        "ERROR 01-01 00:00:01 [core.py:1] AssertionError\n")
    assert ans["error_class"] == "oom"
    # dev c366: the real paste (the notebook's RuntimeError type line after "# GPU blocks: -1")
    assert _short(classify_text(_case("c366"))) == ("engine_init", "oom", 3)


def test_a_dead_engine_error_is_classed_by_the_original_error_it_quotes():
    # V0 engine/multiprocessing/client.py: MQEngineDeadError("Engine loop is not running. Inspect the stacktrace to
    # find the original error: %r.")
    head = "vllm.engine.multiprocessing.MQEngineDeadError: Engine loop is not running. Inspect the stacktrace to find"
    ans = classify_text(head + " the original error: RuntimeError('CUDA error: an illegal memory access was "
                        "encountered').\n")
    assert ans["error_class"] == "illegal_memory_access"
    ans = classify_text(head + " the original error: AssertionError('Error in model execution: ').\n")
    assert ans["error_class"] == "other"
    # without a quote the engine is dead, nothing more
    assert classify_text("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
                         "trace (above) for the root cause.\n")["error_class"] == "engine_dead"


def test_rays_memory_monitor_killing_a_worker_is_host_memory():
    # ray's memory monitor (raylet): the node's RAM above the threshold, the most recently scheduled task killed
    ans = classify_text(_case("c383"))
    assert (ans["error_class"], ans["first_error"]["lineno"]) == ("oom", 1)
    assert "host memory" in ans["first_error"]["hint"]


def test_the_engine_core_start_up_header_cut_before_its_exception_is_no_dead_engine():
    # v1/engine/core.py run_engine_core: logger.exception("EngineCore failed to start.") - the engine never ran
    ans = classify_text(_case("c359"))
    assert _short(ans) == ("unknown", "other", 1)
    # with its exception in the paste, the exception gives the class (H200 capture c270: the KV-cache check)
    assert classify_text(_case("c270"))["error_class"] == "oom"


def test_a_frame_line_the_paste_cut_is_not_the_exception():
    tb = ("Traceback (most recent call last):\n  File \"/x/vllm/worker/worker.py\", line 3, in load_model\n"
          "    self.model_runner.load_model()\n  File \"/usr/lo\n")
    ans = classify_text(tb)
    assert (ans["first_error"] or {}).get("line") != 'File "/usr/lo'
    ipy = ("RuntimeError                              Traceback (most recent call last)\nCell In[3], line 2\n"
           "----> 2 llm = LLM(model=\"m\")\n\nFile /opt/conda/lib/python3.10/site-package\n")
    assert classify_text(ipy)["first_error"]["lineno"] == 1


def test_a_probe_answered_200_shows_the_server_up():
    # the OpenAI server answers /health 200 only once it listens and while the engine is alive: a failure after it
    # is the serving server's (dev c375: a worker died after the probe)
    ans = classify_text('INFO:     127.0.0.1:4000 - "GET /health HTTP/1.1" 200 OK\n'
                        "ERROR 11-08 11:01:29 [multiproc_executor.py:135] Worker proc VllmWorker-3 died unexpectedly, "
                        "shutting down executor.\n")
    assert (ans["stage"], ans["stage_basis"]) == ("request", "markers")
    # a probe that failed proves nothing
    ans = classify_text('INFO:     127.0.0.1:4000 - "GET /health HTTP/1.1" 503 Service Unavailable\n'
                        "ERROR 11-08 11:01:29 [multiproc_executor.py:135] Worker proc VllmWorker-3 died unexpectedly, "
                        "shutting down executor.\n")
    assert ans["stage"] == "unknown"
