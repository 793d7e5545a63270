"""Round 9 of issue 35: building the model is weight loading (the model classes' and layers' ``__init__``, a
quantization config's ``get_quant_method`` / ``create_weights``), orchestrator and container-runtime lines without
a row (a pod's ``Unschedulable`` reason, NVML losing the container's GPUs), and V1's engine-core monitor.  Every
sample is written from vLLM's (or the library's) source and docs, not a corpus case; the paths are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text, frame_stage

VL = "/opt/venv/lib/python3.12/site-packages/vllm"
TAG = "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] "


def _ans(text):
    ans = classify_text(text)
    return ans["stage"], ans["stage_basis"], ans["confidence"], ans["error_class"]


@pytest.mark.parametrize("func,path", [
    ("__init__", VL + "/model_executor/models/llama.py"),
    ("__init__", VL + "/model_executor/layers/linear.py"),
    ("get_quant_method", VL + "/model_executor/layers/quantization/fp8.py"),
    ("get_scheme", VL + "/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py"),
    ("create_weights", VL + "/model_executor/layers/quantization/awq.py"),
])
def test_building_the_model_is_weight_loading(func, path):
    assert frame_stage(func, path) == "weight_loading"


@pytest.mark.parametrize("func,path", [
    ("__init__", "/app/mymodels/models/llama.py"),      # a user's own model class is not vLLM's
    ("__init__", VL + "/engine/llm_engine.py"),         # LLMEngine.__init__ runs every start-up step
    ("forward", VL + "/model_executor/models/llama.py"),  # the forward pass is not mapped (serving frames)
])
def test_frames_that_are_not_the_model_being_built(func, path):
    assert frame_stage(func, path) is None


def test_a_record_cut_inside_the_model_constructors_is_weight_loading():
    # V1 engine core: LlamaAttention.__init__ -> QKVParallelLinear.__init__, cut at both ends
    text = "".join(TAG + line + "\n" for line in (
        '  File "%s/model_executor/models/llama.py", line 276, in __init__' % VL,
        "    self.self_attn = LlamaAttention(",
        '  File "%s/model_executor/layers/linear.py", line 884, in __init__' % VL,
        "    super().__init__(input_size=input_size,",
        '  File "%s/model_executor' % VL))
    assert _ans(text)[:3] == ("weight_loading", "frames", "high")


def test_a_quantization_capability_check_is_placed_while_the_model_is_built():
    # compressed_tensors.py get_quant_method -> get_scheme -> _check_scheme_supported (the layers/ path alone
    # used to say 'request': the forward pass runs in the same files)
    q = VL + "/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py"
    text = ("Traceback (most recent call last):\n"
            '  File "%s", line 153, in get_quant_method\n'
            "    quant_scheme = self.get_scheme(layer=layer, layer_name=prefix)\n"
            '  File "%s", line 757, in get_scheme\n'
            "    self._check_scheme_supported(scheme.get_min_capability())\n"
            '  File "%s", line 354, in _check_scheme_supported\n'
            "    raise RuntimeError(\n"
            "RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min capability: 80. ', "
            "'Current capability: 75.')\n" % (q, q, q))
    # round 10: the message itself fixes the stage (it is raised only while the model is built), as its frames do
    assert _ans(text)[:3] == ("weight_loading", "message", "high")


def test_the_forward_pass_of_the_same_files_stays_a_request():
    text = ("Traceback (most recent call last):\n"
            '  File "%s/model_executor/models/llama.py", line 300, in forward\n'
            "    hidden_states = self.mlp(hidden_states)\n"
            '  File "%s/model_executor/layers/linear.py", line 400, in forward\n'
            "    output = self.quant_method.apply(self, x)\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n" % (VL, VL))
    assert _ans(text)[0] == "request"


@pytest.mark.parametrize("text", [
    # kubectl describe pod: the event of a scheduler that reports the pod condition's reason
    "  Warning  Unschedulable  2m (x9 over 20m)  my-gpu-scheduler  no node has 4 free GPUs",
    # the pod's condition
    "  PodScheduled   False   Unschedulable",
])
def test_an_unschedulable_pod_is_the_environment(text):
    assert _ans(text) == ("environment", "message", "high", "scheduling")


def test_the_word_in_another_sense_is_no_scheduling_failure():
    # lower case inside the default scheduler's message: placed by its own row ('nodes are available')
    text = "  Warning  FailedScheduling  1m  default-scheduler  0/2 nodes are available: 2 node(s) were unschedulable."
    assert _ans(text) == ("environment", "message", "high", "scheduling")
    assert classify_text("INFO 01-02 03:04:05 [core.py:1] the queue is unschedulable for now")["stage"] == "none"


@pytest.mark.parametrize("text", [
    "Failed to initialize NVML: Unknown Error",
    "E0627 10:12:47.588061       1 factory.go:68] Failed to initialize NVML: Unknown Error.",
])
def test_nvml_losing_the_containers_gpus_is_the_container_runtime(text):
    assert _ans(text) == ("environment", "message", "high", "container_error")


def test_the_engine_core_monitor_runs_only_after_start_up():
    line = ("(APIServer pid=1) ERROR 01-02 03:04:05 [core_client.py:564] Engine core proc EngineCore_DP0 died "
            "unexpectedly, shutting down client.\n")
    assert _ans(line)[0] == "request" and _ans(line)[2] == "medium" and _ans(line)[3] == "engine_dead"
    served = ('INFO:     127.0.0.1:40000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n' + line)
    assert _ans(served)[0] == "request"


@pytest.mark.parametrize("func,path,stage", [
    # Dynamo traces the compiled forward on its first call: vLLM's profiling / warm-up / capture passes
    ("_compile", "/opt/venv/lib/python3.12/site-packages/torch/_dynamo/convert_frame.py", "engine_init"),
    ("step", "/opt/venv/lib/python3.12/site-packages/torch/_dynamo/symbolic_convert.py", "engine_init"),
])
def test_dynamo_tracing_is_start_up(func, path, stage):
    assert frame_stage(func, path) == stage


def test_v0_guided_decoding_frames_are_a_request():
    # the OpenAI handler builds a request's logits processors (model_executor/guided_decoding, 0.4 -> 0.10)
    text = ("Traceback (most recent call last):\n"
            '  File "%s/model_executor/guided_decoding/__init__.py", line 20, in get_guided_decoding_logits_processor\n'
            "    return await get_outlines_guided_decoding_logits_processor(\n"
            '  File "%s/model_executor/guided_decoding/outlines_decoding.py", line 70, in get_outlines\n' % (VL, VL))
    assert _ans(text)[0] == "request"


def test_a_pydantic_config_detail_line_alone_is_the_config():
    # pydantic-core's line for a validator's ValueError in a pydantic dataclass (vLLM's config classes, 0.10+)
    line = ("Value error, torch.bfloat16 is not supported here. [type=value_error, input_value=ArgsKwargs((), "
            "{'model': 'm'}), input_type=ArgsKwargs]")
    assert _ans(line) == ("config", "message", "high", "config_error")
    # a request model's detail line (a BaseModel: its input is a dict) is not the config
    assert classify_text("  Value error, bad [type=value_error, input_value={'n': 0}, input_type=dict]")["stage"] != "config"


def test_an_ipython_traceback_cut_before_its_header_is_read_by_its_frames():
    # IPython.core.ultratb abbreviates the home directory: "File ~/...py:N, in Class.func(args)", numbered source
    text = ("File ~/venv/lib/python3.10/site-packages/vllm/worker/model_runner.py:722, in GPUModelRunnerBase.load_model(self)\n"
            '    720 logger.info("Starting to load model %s...", self.model_config.model)\n'
            "--> 722     self.model = get_model(model_config=self.model_config,\n"
            "\n"
            "File ~/venv/lib/python3.10/site-packages/vllm/model_executor/model_loader/__init__.py:21, in get_model(cfg)\n"
            "     14 def get_model(*, model_config: ModelConfig,\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"], ans["first_error"]["lineno"]) == ("weight_loading", "frames", 1)
    # prose that starts like it is no frame
    assert classify_text("File ~/notes.txt was not found, skipping")["stage"] == "none"


def test_v0_engine_process_death_is_seen_only_after_start_up():
    # engine/multiprocessing/client.py run_heartbeat_loop, started by setup() once the engine answered READY
    line = "ERROR 01-22 00:13:32 client.py:282] RuntimeError('Engine process (pid 77) died.')\n"
    assert _ans(line)[0] == "request" and _ans(line)[3] == "engine_dead"
