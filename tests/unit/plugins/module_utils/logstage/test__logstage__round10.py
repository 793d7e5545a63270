"""Round 10 of issue 35: a refused request (the request checks' answer, as the server logs it or a client quotes it),
the rotary embedding built with the model, HIP runtime errors of PyTorch's ROCm build, compressed-tensors' scheme
check, the LoRA rank check and the Hub's access refusals.  Every sample is written from vLLM's (or the library's)
source, not a corpus case; the paths are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text, frame_stage
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import case

VL = "/opt/venv/lib/python3.12/site-packages/vllm"
ROPE = VL + "/model_executor/layers/rotary_embedding.py"


def _ans(text):
    ans = classify_text(text)
    return ans["stage"], ans["error_class"], ans["confidence"], ans["cause_stage"]


def test_a_quoted_refusal_alone_is_the_request_stage_at_low_confidence():
    # serving_engine.py _validate_input's message, pasted alone (by a client or from the server's record)
    text = ("ValueError: This model's maximum context length is 2048 tokens. However, you requested 2100 tokens "
            "(100 in the messages, 2000 in the completion). Please reduce the length of the messages or completion.\n")
    assert _ans(text)[:3] == ("request", "other", "low")


def test_the_openai_clients_400_alone_is_the_request_stage():
    text = ("Traceback (most recent call last):\n"
            '  File "/home/me/client.py", line 9, in <module>\n'
            "    r = client.chat.completions.create(model=m, messages=msgs)\n"
            "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': 'max_tokens must be at least 1, "
            "got -5.', 'type': 'BadRequestError', 'param': None, 'code': 400}\n")
    assert _ans(text)[:2] == ("request", "other")


def test_a_refusal_never_outranks_a_failure_of_the_server():
    # a request refused first, then the engine runs out of memory: the failure is the server's
    text = ("ValueError: This model's maximum context length is 2048 tokens. However, you requested 2100 tokens.\n"
            "ERROR 01-02 03:04:05 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    assert _ans(text)[1] == "oom"


def test_a_healthy_servers_400_access_lines_stay_no_failure():
    text = ('INFO 01-02 03:04:05 [launcher.py:37] Route: /v1/completions, Methods: POST\n'
            'INFO:     127.0.0.1:4242 - "POST /v1/completions HTTP/1.1" 400 Bad Request\n')
    assert _ans(text)[0] == "none"


@pytest.mark.parametrize("func", ["_compute_cos_sin_cache", "_compute_inv_freq"])
def test_the_rotary_embeddings_cache_is_built_with_the_model(func):
    assert frame_stage(func, ROPE) == "weight_loading"
    assert frame_stage(func, VL + "/model_executor/layers/rotary_embedding/base.py") == "weight_loading"
    assert frame_stage(func, "/home/me/mymodel/rope.py") is None


def test_a_hip_error_while_the_rope_cache_is_built_is_weight_loading_caused_by_the_install():
    text = ("Traceback (most recent call last):\n"
            '  File "%s", line 110, in _compute_cos_sin_cache\n' % ROPE +
            "    inv_freq = self._compute_inv_freq(self.base)\n"
            '  File "%s", line 99, in _compute_inv_freq\n' % ROPE +
            "    inv_freq = 1.0 / (base**(torch.arange(0, self.rotary_dim, 2, dtype=torch.float) / self.rotary_dim))\n"
            "RuntimeError: HIP error: invalid device function\n"
            "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
            "might be incorrect.\n")
    assert _ans(text) == ("weight_loading", "cuda_error", "high", "environment")


def test_a_hip_error_alone_is_a_cuda_error_of_unknown_stage():
    assert _ans("RuntimeError: HIP error: out of resources\n")[:2] == ("unknown", "cuda_error")


def test_the_compressed_tensors_scheme_check_is_a_config_error_while_the_model_is_built():
    # CompressedTensorsConfig._check_scheme_supported raises RuntimeError with three arguments (printed as a tuple)
    text = ("RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min capability: 89. ', "
            "'Current capability: 86.')\n")
    assert _ans(text)[:3] == ("weight_loading", "config_error", "high")


def test_the_lora_rank_check_is_a_config_error_of_the_request_that_loads_the_adapter():
    assert _ans("ValueError: LoRA rank 32 is greater than max_lora_rank 8.\n")[:3] == (
        "request", "config_error", "medium")


def test_the_lora_rank_check_after_start_up_markers_takes_the_logs_stage():
    # V1 loads --lora-modules adapters at start: with the log's markers (the model loaded: past weight loading) the
    # check is placed where the log stands
    text = ("INFO 01-02 03:04:05 [gpu_model_runner.py:1600] Model loading took 14.99 GiB and 5.1 seconds\n"
            "ERROR 01-02 03:04:09 [core.py:700] ValueError: LoRA rank 64 is greater than max_lora_rank 16.\n")
    assert _ans(text)[:2] == ("engine_init", "config_error")


@pytest.mark.parametrize("line", [
    "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-abc)",
    "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/o/m/resolve/main/x.json",
])
def test_the_hubs_access_refusal_is_class_other_not_a_config_error(line):
    assert _ans(line + "\n")[1] == "other"


@pytest.mark.parametrize("line,expected", [
    # layers/linear.py weight_loader's shape assertion: the weight-loader family (weight_loading; class other since
    # round 61, as default_weight_loader's)
    ("AssertionError: Tried to load weights of size torch.Size([512, 64])to a parameter of size torch.Size([64, 512])",
     ("weight_loading", "other", "high")),
    # model_loader/gguf_loader.py _get_gguf_weights_map
    ("RuntimeError: Failed to map GGUF parameters (2): ['model.layers.0.mlp.experts.w1', 'lm_head.bias']",
     ("weight_loading", "other", "high")),
    # the CUDA runtime's stream-capture errors: vLLM captures CUDA graphs at start-up only
    ("RuntimeError: CUDA error: operation not permitted. Search for `cudaErrorStreamCaptureInvalidated' in the docs",
     ("engine_init", "cuda_error", "high")),
    # huggingface_hub: a 404 for a Hub file
    ("requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://huggingface.co/o/m/resolve/main/"
     "config.json", ("config", "missing_file", "medium")),
    # transformers' config loader: not JSON (config_error since round 74)
    ("OSError: It looks like the config file at '/models/m/model.gguf' is not a valid JSON file.",
     ("config", "config_error", "medium")),
    # lora/utils.py parse_fine_tuned_lora_name, while an adapter is loaded
    ("ValueError: base_model.model.foo.weight is unsupported LoRA weight", ("request", "other", "medium")),
])
def test_messages_with_a_row_since_round_ten(line, expected):
    assert _ans(line + "\n")[:3] == expected


def test_a_404_of_another_host_is_not_the_hubs():
    assert _ans("requests.exceptions.HTTPError: 404 Client Error: Not Found for url: http://10.0.0.1:8000/v1/x\n")[1] \
        != "missing_file"


def test_rays_infeasible_demand_is_the_workers_placement_at_low_confidence():
    text = ("(autoscaler +2m3s) Error: No available node types can fulfill resource request {'node:10.0.0.9': 0.001, "
            "'GPU': 1.0}. Add suitable node types to this cluster to resolve this issue.\n")
    assert _ans(text)[:3] == ("cuda_init", "other", "low")


def test_podman_builds_device_lookup_is_a_container_runtime_refusal():
    text = ("Error: creating build executor: getting info of source device /dev/nvidia9: stat /dev/nvidia9: "
            "no such file or directory\n")
    assert _ans(text)[:2] == ("environment", "container_error")


COLAB = VL.replace("/opt/venv/lib/python3.12/site-packages", "/usr/local/lib/python3.11/dist-packages")
COLAB_TB = [
    "---------------------------------------------------------------------------",
    "ValueError                                Traceback (most recent call last)",
    "[<ipython-input-3-0a1b2c>](https://localhost:8080/#) in <cell line: 0>()",
    '----> 1 llm = LLM(model="m")',
    "",
    "[%s/entrypoints/llm.py](https://localhost:8080/#) in __init__(self, model, **kwargs)" % COLAB,
    "    242         self.llm_engine = LLMEngine.from_engine_args(",
    "--> 243             engine_args=engine_args, usage_context=UsageContext.LLM_CLASS)",
    "",
    "[%s/model_executor/model_loader/loader.py](https://localhost:8080/#) in load_model(self, vllm_config)" % COLAB,
    "--> 401         model = _initialize_model(vllm_config=vllm_config)",
    "",
    "ValueError: something broke",
]


def test_a_colab_traceback_is_read_by_its_link_frames():
    # IPython 7's ultratb as Colab renders it: "[/path/x.py](https://localhost:8080/#) in func(...)", the cell as
    # "[<ipython-input-N-hash>](...) in <cell line: 0>()" (the known limit of round 9)
    ans = classify_text("\n".join(COLAB_TB) + "\n")
    assert (ans["stage"], ans["stage_basis"]) == ("weight_loading", "frames")


def test_a_colab_cell_saved_as_a_temporary_file_is_a_frame_of_the_traceback():
    # newer Colab runs a cell from "/tmp/ipython-input-<n>.py", its top level named "<cell line: N>" by IPython:
    # a frame like any other, not the error line (issue 35, round 24; the real paste c418 ends in ModelConfig's words)
    tb = list(COLAB_TB)
    tb[2] = "[/tmp/ipython-input-3394727224.py](https://localhost:8080/#) in <cell line: 0>()"
    ans = classify_text("\n".join(tb) + "\n")
    want = ("weight_loading", "frames", "ValueError: something broke")
    assert (ans["stage"], ans["stage_basis"], ans["first_error"]["line"]) == want
    assert classify_text(case("c418"))["stage"] == "config"


def test_a_colab_traceback_cut_before_its_header_is_read_by_its_frames():
    ans = classify_text("\n".join(COLAB_TB[5:]) + "\n")
    assert (ans["stage"], ans["stage_basis"], ans["first_error"]["lineno"]) == ("weight_loading", "frames", 8)


def test_a_jupyter_link_frame_opens_a_traceback_cut_before_its_header():
    # JupyterLab / VS Code: "File [/path/x.py:N](link), in Class.func(...)" as the paste's first line
    text = ("File [%s/worker/model_runner.py:1021](https://host/lab/tree/x.py#line=1020), in "
            "GPUModelRunnerBase.load_model(self)\n" % VL +
            "   1020 with DeviceMemoryProfiler() as m:\n"
            "-> 1021     self.model = get_model(vllm_config=self.vllm_config)\n\n"
            "ValueError: something broke\n")
    assert classify_text(text)["stage"] == "weight_loading"


def test_a_k9s_border_is_unwrapped():
    # k9s's log view draws U+2502 at both ends of every line (the known limit of round 9)
    border = "\u2502"
    text = (border + " INFO:     Application startup complete.             " + border + "\n" +
            border + " ERROR 09-27 06:46:46 engine.py:157] RuntimeError: CUDA error: an illegal memory access was "
            "encountered      " + border + "\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"]) == ("request", "illegal_memory_access")
    assert ans["first_error"]["lineno"] == 2


def test_a_cut_traceback_under_multiprocessings_header_starts_at_the_header():
    # CPython multiprocessing BaseProcess._bootstrap: "Process %s:\n" to stderr, then traceback.print_exc(); a paste
    # that ends inside the traceback reports the record from its header line
    text = ("Process SpawnProcess-1:\n"
            "Traceback (most recent call last):\n"
            '  File "%s/engine/multiprocessing/engine.py", line 366, in run_mp_engine\n' % VL +
            "    engine = MQLLMEngine.from_engine_args(engine_args=engine_args,\n"
            '  File "%s/worker/worker.py", line 229, in determine_num_available_blocks\n' % VL +
            "    self.model_runner.profile_run()\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("engine_init", 1)
    # not when another line comes between them
    ans = classify_text("Process SpawnProcess-1:\nsomething else\n" + text.split("\n", 1)[1])
    assert ans["first_error"]["lineno"] == 3


@pytest.mark.parametrize("exc, cls", [
    # EngineArgs' checks raise ValueError for options that cannot go together: the configuration is wrong
    ("ValueError: Invalid data-parallel launch options: `--nnodes 2` must evenly divide the total world size (3).",
     "config_error"),
    # an error of another type in the same place is not a statement about the options: no class is made up for it
    ("RuntimeError: Error in inspecting model architecture 'LlamaForCausalLM'", "other"),
])
def test_an_exception_no_row_knows_at_config_is_a_config_error_only_when_it_is_a_valueerror(exc, cls):
    text = ("Traceback (most recent call last):\n"
            '  File "%s/entrypoints/openai/api_server.py", line 1, in run_server\n'
            "    await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)\n"
            '  File "%s/engine/arg_utils.py", line 1, in create_engine_config\n'
            "    raise ValueError(\n"
            "%s\n" % (VL, VL, exc))
    assert frame_stage("create_engine_config", "%s/engine/arg_utils.py" % VL) == "config"
    assert _ans(text)[:2] == ("config", cls)
