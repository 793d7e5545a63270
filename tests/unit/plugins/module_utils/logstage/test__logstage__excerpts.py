# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 35: excerpts pasted without start-up lines are placed by what they do show - a source line only one vLLM
function prints (on the real dev paste c183), IPython/Jupyter tracebacks, Ray's task-error header, the exception's
own meaning (a structured-output spec the backend rejects: request; a tokenizer that cannot be loaded: config), and
the frames read from vLLM's source 0.2 -> current.  Inputs written here are named ``CONSTRUCTED_*`` and built from
the source strings and formats cited beside them."""

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import (
    _frames_stage, _method_stage, classify_text, frame_stage)
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_frames import DEVICE_QUERY
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import case as _case


def test_load_weights_source_line_places_a_cut_traceback():
    # dev c183: the paste starts at "param = params_dict[name]" (every model's load_weights), its frame line cut
    ans = classify_text(_case("c183"))
    assert (ans["stage"], ans["stage_basis"], ans["error_class"], ans["first_error"]["lineno"]) == (
        "weight_loading", "frames", "other", 3)


def test_a_source_line_alone_is_not_an_error():
    ans = classify_text("    param = params_dict[name]\n")
    assert ans["stage"] == "none"


# IPython 8's traceback layout (IPython/core/ultratb.py): the type first, cells and frames "File <path>:<line>, in
# <qualname>(<args>)", numbered source lines with an arrow, the exception last; vLLM's V0 profiling frames
CONSTRUCTED_IPYTHON = (
    "---------------------------------------------------------------------------\n"
    "OutOfMemoryError                          Traceback (most recent call last)\n"
    "Cell In[3], line 1\n"
    "----> 1 llm = LLM(model=\"facebook/opt-125m\")\n"
    "\n"
    "File /opt/conda/lib/python3.11/site-packages/vllm/worker/worker.py:223, in Worker.determine_num_available_blocks(self)\n"
    "    219 torch.cuda.empty_cache()\n"
    "--> 223 self.model_runner.profile_run()\n"
    "\n"
    "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")


def test_ipython_traceback_is_followed():
    ans = classify_text(CONSTRUCTED_IPYTHON)
    assert (ans["stage"], ans["stage_basis"], ans["error_class"], ans["first_error"]["lineno"]) == (
        "engine_init", "frames", "oom", 10)


def test_ipython_traceback_cut_before_its_exception_reports_the_type_line():
    cut = "\n".join(CONSTRUCTED_IPYTHON.splitlines()[:8]) + "\n"
    ans = classify_text(cut)
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("engine_init", "oom", 2)


def test_ipython_vscode_links_are_frames():
    # VS Code's notebook output links the file and the line numbers ("File [<path>:<n>](<url>), in ...")
    CONSTRUCTED_VSCODE = (
        "KeyError                                  Traceback (most recent call last)\n"
        "----> [6](vscode-notebook-cell:/x.ipynb#W4sZmlsZQ%3D%3D?line=5) model = LLM(name)\n"
        "File [/usr/lib/python3/dist-packages/vllm/model_executor/models/llama.py:400](http://h/x#line=399), "
        "in LlamaForCausalLM.load_weights(self, weights)\n"
        "    399 for name, loaded_weight in weights:\n"
        "--> 400     param = params_dict[name]\n")
    ans = classify_text(CONSTRUCTED_VSCODE)
    assert (ans["stage"], ans["stage_basis"], ans["first_error"]["lineno"]) == ("weight_loading", "frames", 1)


def test_ray_task_error_header_names_the_method():
    # ray/exceptions.py RayTaskError: "ray::<Actor>.<method>() (pid=%d, ip=%s)"
    assert _method_stage("ray.exceptions.RayTaskError(RuntimeError): ray::RayWorkerWrapper.load_model() "
                         "(pid=12, ip=10.0.0.1)") == "weight_loading"
    assert _method_stage("ray.exceptions.RayTaskError(RuntimeError): ray::RayWorkerWrapper.execute_method() "
                         "(pid=12, ip=10.0.0.1)") is None


def test_structured_output_rejection_is_a_request():
    # vllm/v1/structured_output/backend_xgrammar.py validate_xgrammar_grammar
    ans = classify_text("ValueError: The provided JSON schema contains features not supported by xgrammar.\n")
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "message", "high")


def test_tokenizer_that_cannot_load_is_config():
    # transformers tokenization_utils_base.py: "Can't load tokenizer for '%s'. If you were trying to load it ..."
    ans = classify_text("OSError: Can't load tokenizer for '/models/x'. If you were trying to load it from "
                        "'https://huggingface.co/models', make sure you don't have a local directory with the same "
                        "name.\n")
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("config", "missing_file", "medium")


def test_frames_read_from_older_and_newer_vllm():
    assert frame_stage("hf_model_weights_iterator", "/x/vllm/model_executor/weight_utils.py") == "weight_loading"
    assert frame_stage("_allocate_kv_cache", "/x/vllm/worker/cache_engine.py") == "engine_init"
    assert frame_stage("schedule", "/x/vllm/v1/core/sched/scheduler.py") == "request"
    assert frame_stage("schedule", "/x/myapp/scheduler.py") is None
    assert frame_stage("generate", "/x/vllm/entrypoints/llm.py") == "request"
    assert frame_stage("get_tokenizer", "/x/vllm/transformers_utils/tokenizer.py") == "config"
    assert frame_stage("__init__", "/x/vllm/distributed/parallel_state.py") == "distributed_init"


def test_config_checks_and_loader_files_place_a_traceback():
    # vllm/config.py (0.4 -> 0.10) ModelConfig._verify_quantization; a model loader file's own helper (FRAME_FILES)
    assert frame_stage("_verify_quantization", "/x/vllm/config.py") == "config"
    assert frame_stage("_xla_weights_iterator", "/x/vllm/model_executor/model_loader/loader.py") == "weight_loading"
    assert frame_stage("anything", "/x/vllm/engine/arg_utils.py") == "config"
    assert frame_stage("anything", "/x/vllm/model_executor/model_loader/utils.py") is None


def test_logger_file_of_a_start_up_module_places_an_error_record():
    # model_loader/default_loader.py logs only while the weights load (constructed record of that logger)
    ans = classify_text("ERROR 12-01 10:00:00 [default_loader.py:100] boom\n")
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("weight_loading", "inferred", "medium")


def test_client_side_error_status_is_a_request():
    # openai-python _exceptions.py: "Error code: %d - %s" (the server answered the request)
    ans = classify_text("openai.InternalServerError: Error code: 500 - {'object': 'error', 'message': 'boom', "
                        "'type': 'InternalServerError', 'param': None, 'code': 500}\n")
    # the body quoted in it is vLLM's ErrorResponse: placed by its meaning (request unless markers prove otherwise)
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "message", "medium")
    # a connection error says nothing about the server's stage
    ans = classify_text("openai.APIConnectionError: Connection error.\n")
    assert ans["stage"] == "unknown"


def test_frames_of_the_libraries_vllm_calls_place_a_cut_traceback():
    # uvicorn/fastapi/starlette run these only for a request; transformers' from_pretrained while the config and
    # tokenizer are built; the safetensors loaders while the weights load
    assert frame_stage("run_asgi", "/x/uvicorn/protocols/http/httptools_impl.py") == "request"
    assert frame_stage("run_endpoint_function", "/x/fastapi/routing.py") == "request"
    assert frame_stage("from_pretrained", "/x/transformers/models/auto/tokenization_auto.py") == "config"
    assert frame_stage("load_file", "/x/safetensors/torch.py") == "weight_loading"
    # constructed from xgrammar's package layout: a request's grammar compiled by the structured-output backend
    ans = classify_text('Traceback (most recent call last):\n'
                        '  File "/x/xgrammar/compiler.py", line 1, in compile_json_schema\n'
                        'RuntimeError: boom\n')
    assert (ans["stage"], ans["stage_basis"]) == ("request", "inferred")


def test_default_weight_loader_shape_check_is_weight_loading():
    # model_loader/weight_utils.py default_weight_loader's assertion message (class other since round 61: the
    # checkpoint's tensor does not fit the model as built, no setting is refused)
    ans = classify_text("AssertionError: Attempted to load weight (torch.Size([4096])) into parameter "
                        "(torch.Size([2048]))\n")
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("weight_loading", "other", "high")


def test_the_servers_error_body_alone_is_a_request():
    # vllm/entrypoints/openai/protocol.py ErrorResponse, as curl prints it; openai-python's exception named for a 5xx
    ans = classify_text('{"object":"error","message":"Internal error","type":"InternalServerError","param":null,'
                        '"code":500}\n')
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("request", "message", "medium")
    ans = classify_text("openai.InternalServerError: Internal Server Error\n")
    assert (ans["stage"], ans["confidence"]) == ("request", "medium")
    # a refused request's body (a 400) alone (round 10): the request stage, placed as the body above
    ans = classify_text('{"object":"error","message":"This model\'s maximum context length is 4096 tokens.",'
                        '"type":"BadRequestError","param":null,"code":400}\n')
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("request", "other", "medium")


def test_a_failed_device_query_outranks_the_config_frames_above_it():
    # dev c273, frozen on the lent H200 (CUDA_VISIBLE_DEVICES=1 on a one-GPU host): ModelConfig's dtype check asks
    # vllm/platforms/cuda.py get_device_capability -> pynvml.nvmlDeviceGetHandleByIndex -> NVMLError_InvalidArgument
    ans = classify_text(_case("c273"))
    assert (ans["stage"], ans["stage_basis"], ans["confidence"], ans["error_class"]) == (
        "cuda_init", "frames", "high", "cuda_error")
    assert ans["first_error"]["line"].endswith("NVMLError_InvalidArgument: Invalid Argument")


def test_a_device_query_yields_to_later_stages_frames():
    assert frame_stage("get_device_capability", "/x/vllm/platforms/cuda.py") == "cuda_init"
    assert frame_stage("nvmlDeviceGetHandleByIndex", "/x/vllm/third_party/pynvml.py") == "cuda_init"
    assert frame_stage("get_device_capability", "/x/myapp/gpu.py") is None
    assert _frames_stage({"config", DEVICE_QUERY}) == "cuda_init"
    assert _frames_stage({DEVICE_QUERY}) == "cuda_init"
    # the device was found before: the custom all-reduce's NVLink query is distributed init, a query while the
    # weights load is weight loading
    assert _frames_stage({"config", "distributed_init", DEVICE_QUERY}) == "distributed_init"
    assert _frames_stage({"weight_loading", DEVICE_QUERY}) == "weight_loading"
    # without a device query the earliest stage still wins
    assert _frames_stage({"config", "cuda_init"}) == "config"


# CONSTRUCTED from vLLM 0.6's vllm/config.py (ModelConfig._verify_quantization asks current_platform) and
# vllm/platforms/cuda.py (get_physical_device_capability under with_nvml_context); pynvml's NVMLError_DriverNotLoaded
CONSTRUCTED_NVML_UNDER_CONFIG = """\
  File "/usr/lib/python3/site-packages/vllm/config.py", line 225, in __init__
    self._verify_quantization()
  File "/usr/lib/python3/site-packages/vllm/config.py", line 290, in _verify_quantization
    capability_tuple = current_platform.get_device_capability()
  File "/usr/lib/python3/site-packages/vllm/platforms/cuda.py", line 41, in wrapper
    pynvml.nvmlInit()
  File "/usr/lib/python3/site-packages/pynvml.py", line 1947, in nvmlInit
    _nvmlCheckReturn(ret)
pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded
"""


def test_an_nvml_error_under_the_config_is_device_discovery():
    ans = classify_text(CONSTRUCTED_NVML_UNDER_CONFIG)
    assert (ans["stage"], ans["stage_basis"], ans["error_class"]) == ("cuda_init", "frames", "cuda_error")
    # the exception line alone: NVML's usual stage, medium
    ans = classify_text("pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded\n")
    assert (ans["stage"], ans["confidence"], ans["error_class"]) == ("cuda_init", "medium", "cuda_error")


# issue 35, round 2: a one-line paste whose exception type and message place it (the sources are cited beside each
# row in _logstage_rules.py); a usual stage is ``medium``, a meaning that fixes the stage ``high``
@pytest.mark.parametrize("line,stage,cls,conf", [
    ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ChatCompletionRequest", "request",
     "other", "high"),
    ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig", "config", "config_error",
     "high"),
    ("jinja2.exceptions.UndefinedError: 'dict object' has no attribute 'content'", "request", "other", "medium"),
    ("ValueError: As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat "
     "template if the tokenizer does not define one.", "request", "other", "medium"),
    ("ValueError: The quantization method awq is not supported for the current GPU. Minimum capability: 75. Current "
     "capability: 70.", "config", "config_error", "medium"),
    ("ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (4096).", "config", "config_error",
     "high"),
    ("ValueError: Unrecognized configuration class <class 'X'> for this kind of AutoModel: AutoModelForCausalLM.",
     "config", "config_error", "medium"),
    ("FileNotFoundError: [Errno 2] No such file or directory: '/models/m/config.json'", "config", "missing_file",
     "medium"),
    ("FileNotFoundError: [Errno 2] No such file or directory: '/models/m/pytorch_model.bin'", "weight_loading",
     "missing_file", "medium"),
    ("KeyError: 'model.layers.0.mlp.experts.w2_weight_scale'", "weight_loading", "other", "medium"),
    ("RuntimeError: Error(s) in loading state_dict for Linear:", "weight_loading", "other", "medium"),
    ("RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.", "cuda_init", "cuda_error",
     "medium"),
    ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
     "distributed_init", "timeout", "medium"),
    # the V1 executor's RPC names the worker method, looked up like a worker-method logger line
    ("TimeoutError: RPC call to execute_model timed out.", "request", "timeout", "high"),
    ("RuntimeError: Triton Error [CUDA]: invalid device context", "unknown", "cuda_error", None),
    ("RuntimeError: Failed to find C compiler. Please specify via CC environment variable.", "engine_init", "other",
     "medium"),
    ("AssertionError: Torch not compiled with CUDA enabled", "cuda_init", "driver_mismatch", "medium"),
    ("OSError: Incorrect path_or_model_id: '/models/x'. Please provide either the path to a local folder or the "
     "repo_id of a model on the Hub.", "config", "missing_file", "medium"),
    ("TypeError: Error: --enable-auto-tool-choice requires --tool-call-parser", "config", "config_error", "high"),
    ("RuntimeError: [enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: can't allocate memory: you "
     "tried to allocate 1073741824 bytes.", "unknown", "oom", None),
    ("ValueError: Weight input_size_per_partition = 1792 is not divisible by min_thread_k = 128. Consider reducing "
     "tensor_parallel_size or running with --quantization gptq.", "weight_loading", "config_error", "medium"),
    ("ValueError: No supported config format found in /models/x", "config", "missing_file", "medium"),
    # what stays unplaced: a bare OOM, a missing file that names no reader, a KeyError that is no parameter
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "unknown", "oom", None),
    ("FileNotFoundError: [Errno 2] No such file or directory: '/data/prompts.txt'", "unknown", "missing_file", None),
    ("KeyError: 'choices'", "unknown", "other", None),
])
def test_a_one_line_error_is_placed_by_its_meaning(line, stage, cls, conf):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == (stage, cls, conf)


def test_more_of_vllms_functions_are_mapped():
    # the V1 runner's per-batch steps and the engine taking a request are request; the runner's KV-cache tensors and
    # graph capture engine_init; the per-architecture config fix-ups config (not a model's forward pass)
    assert frame_stage("_prepare_inputs", "/x/vllm/v1/worker/gpu_model_runner.py") == "request"
    assert frame_stage("preprocess_add_request", "/x/vllm/v1/engine/core.py") == "request"
    assert frame_stage("execute_model_ray", "/x/vllm/v1/executor/ray_utils.py") == "request"
    assert frame_stage("_allocate_kv_cache_tensors", "/x/vllm/v1/worker/gpu_model_runner.py") == "engine_init"
    assert frame_stage("graph_capture", "/x/vllm/distributed/parallel_state.py") == "engine_init"
    assert frame_stage("verify_and_update_config", "/x/vllm/model_executor/models/config.py") == "config"
    # a per-batch step inside the profiling run is the profiling run's (the earliest stage wins)
    ans = classify_text(CONSTRUCTED_PREPARE_INPUTS_IN_PROFILE)
    assert (ans["stage"], ans["stage_basis"]) == ("engine_init", "frames")
    ans = classify_text(CONSTRUCTED_PREPARE_INPUTS_IN_PROFILE.split("\n", 2)[2])
    assert (ans["stage"], ans["stage_basis"]) == ("request", "frames")


# CONSTRUCTED from vllm/v1/worker/gpu_model_runner.py (profile_run -> _dummy_run; execute_model -> _prepare_inputs)
CONSTRUCTED_PREPARE_INPUTS_IN_PROFILE = """\
  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 2900, in profile_run
    self.execute_model(dummy_scheduler_output)
  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 1500, in _prepare_inputs
    self.input_batch.block_table.commit_block_table(num_reqs)
IndexError: index 513 is out of bounds for dimension 0 with size 512
"""


def test_a_wrapper_line_alone_is_classed_by_the_failure_it_quotes():
    # vllm/v1/executor/multiproc_executor.py (and V0's worker wrappers): "Worker failed with error '%s', please check
    # the stack trace above for the root cause" - without the worker's traceback in the paste
    ans = classify_text("RuntimeError: Worker failed with error 'CUDA error: an illegal memory access was "
                        "encountered', please check the stack trace above for the root cause\n")
    assert (ans["error_class"], ans["first_error"]["kind"]) == ("illegal_memory_access", "consequence")
    # a wrapper that quotes nothing known is the worker's answered failure (the worker lives on): other
    ans = classify_text("RuntimeError: Worker failed with error 'boom', please check the stack trace above for the "
                        "root cause\n")
    assert ans["error_class"] == "other"


def test_a_method_name_whose_frames_disagree_names_no_stage():
    # Ray's actor-died error names the creation task ("ray::RayWorkerWrapper.__init__()"); __init__ is a config
    # class's and a communicator's in FRAMES: it says nothing about the stage (it was read as config, high)
    assert _method_stage("ray::RayWorkerWrapper.__init__() (pid=1, ip=10.0.0.1, actor_id=a)") is None
    assert _method_stage("ray::RayWorkerWrapper.load_model() (pid=1, ip=10.0.0.1)") == "weight_loading"
    ans = classify_text("ray.exceptions.ActorDiedError: The actor died because of an error raised in its creation "
                        "task, ray::RayWorkerWrapper.__init__() (pid=1234, ip=10.0.0.1, actor_id=abc)\n")
    assert (ans["stage"], ans["confidence"]) == ("unknown", None)


def test_a_quantized_shape_check_names_the_tensor_parallel_size_as_its_cause():
    # layers/quantization/gptq.py, awq.py create_weights, under load_model
    ans = classify_text("ValueError: The input size is not aligned with the quantized weight shape. This can be "
                        "caused by too large tensor parallel size.\n")
    assert (ans["stage"], ans["cause_stage"], ans["error_class"]) == ("weight_loading", "config", "config_error")


def test_a_4xx_access_line_before_a_traceback_shows_the_server_serving():
    # uvicorn's access line of a non-probe request (rule 3): the server was serving, whatever its status; a health
    # probe is no request, but one answered 200 shows the server up (issue 35, fifth round: a ready marker, like
    # "Application startup complete"), so what fails after it is the serving server's
    tb = ("Traceback (most recent call last):\n  File \"/app/x.py\", line 3, in f\n    g()\n"
          "ValueError: something odd\n")
    ans = classify_text('INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n' + tb)
    assert (ans["stage"], ans["stage_basis"]) == ("request", "markers")
    ans = classify_text('INFO:     10.0.0.1:5000 - "GET /health HTTP/1.1" 200 OK\n' + tb)
    assert (ans["stage"], ans["stage_basis"]) == ("request", "markers")
    ans = classify_text('INFO:     10.0.0.1:5000 - "GET /health HTTP/1.1" 503 Service Unavailable\n' + tb)
    assert ans["stage"] == "unknown"


# two Ray actors of one job (the same actor class, two pids), vLLM's V1 log prefix inside Ray's; the wrapper is
# v1/engine/utils.py wait_for_engine_startup's, the progress line gpu_model_runner.py's load_model
CONSTRUCTED_SIBLING = (
    '(Engine pid=101)   File "/x/vllm/v1/engine/utils.py", line 759, in wait_for_engine_startup\n'
    '(Engine pid=101)     raise RuntimeError("Engine core initialization failed. "\n'
    "(Engine pid=101) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
    "(Engine pid=102) (EngineCore_0 pid=202) INFO 09-10 23:09:11 [gpu_model_runner.py:1953] Starting to load model "
    "/m...\n")


def test_progress_of_another_process_after_a_traceback_does_not_place_it():
    # the traceback's last line was printed before the sibling's progress line: that progress proves nothing of it
    ans = classify_text(CONSTRUCTED_SIBLING)
    assert ans["stage"] == "unknown" and ans["first_error"]["lineno"] == 3
    # the same progress printed BEFORE the traceback is how far the log had got when it failed
    lines = CONSTRUCTED_SIBLING.splitlines(True)
    ans = classify_text(lines[3] + "".join(lines[:3]))
    assert (ans["stage"], ans["stage_basis"]) == ("weight_loading", "markers")
