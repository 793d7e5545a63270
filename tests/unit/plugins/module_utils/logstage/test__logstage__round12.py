"""Round 12 of issue 35: more of vLLM's own functions mapped to stages, read from vLLM's source (0.6.3, 0.8.3, 0.10.2,
0.13.0, 0.26.0, 0.34.0) and PyTorch's distributed_c10d.py / rendezvous.py: the KV-cache sizing helpers, the process
groups' construction, the Ray placement checks, the model loaders and the LoRA wrapping at load, a request's media
fetch, the V1 front end's request checks, the schedulers and block managers.  Each sample is a traceback cut to one
frame of that function (the paste's usual shape) over an exception no row knows; the paths are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text

VL = "/opt/venv/lib/python3.12/site-packages/vllm"
TD = "/opt/venv/lib/python3.12/site-packages/torch"
EXC = "RuntimeError: something went wrong here\n"


def frame(path, func):
    return '  File "%s", line 10, in %s\n    x = f()\n' % (path, func)


@pytest.mark.parametrize("path, func, stage", [
    (VL + "/config/model.py", "_get_and_verify_dtype", "config"),
    (VL + "/tokenizers/registry.py", "get_tokenizer", "config"),
    (VL + "/tokenizers/mistral.py", "from_pretrained", "config"),
    (TD.replace("torch", "transformers") + "/tokenization_utils_base.py", "_from_pretrained", "config"),
    (TD.replace("torch", "transformers") + "/models/auto/configuration_auto.py", "__getitem__", "config"),
    ("/opt/venv/lib/python3.12/site-packages/sentencepiece/__init__.py", "LoadFromFile", "config"),
    (VL + "/executor/ray_utils.py", "_wait_until_pg_ready", "cuda_init"),
    (VL + "/v1/executor/ray_utils.py", "_verify_bundles", "cuda_init"),
    (TD + "/distributed/distributed_c10d.py", "new_group", "distributed_init"),
    (TD + "/distributed/distributed_c10d.py", "_store_based_barrier", "distributed_init"),
    (TD + "/distributed/rendezvous.py", "_env_rendezvous_handler", "distributed_init"),
    (VL + "/distributed/device_communicators/pynccl_wrapper.py", "ncclGetUniqueId", "distributed_init"),
    (VL + "/distributed/device_communicators/cuda_communicator.py", "__init__", "distributed_init"),
    (VL + "/distributed/device_communicators/custom_all_reduce_utils.py", "gpu_p2p_access_check", "distributed_init"),
    (VL + "/distributed/device_communicators/shm_broadcast.py", "create_from_process_group", "distributed_init"),
    (VL + "/distributed/utils.py", "stateless_init_torch_distributed_process_group", "distributed_init"),
    (VL + "/config/parallel.py", "stateless_init_dp_group", "distributed_init"),
    (VL + "/model_executor/model_loader/tensorizer_loader.py", "_verify_config", "weight_loading"),
    (VL + "/model_executor/model_loader/sharded_state_loader.py", "iterate_over_files", "weight_loading"),
    (VL + "/model_executor/model_loader/utils.py", "configure_quant_config", "weight_loading"),
    (VL + "/lora/model_manager.py", "create_lora_manager", "weight_loading"),
    (VL + "/v1/worker/lora_model_runner_mixin.py", "load_lora_model", "weight_loading"),
    (VL + "/v1/core/kv_cache_utils.py", "unify_hybrid_kv_cache_specs", "engine_init"),
    (VL + "/v1/core/kv_cache_utils.py", "get_kv_cache_groups", "engine_init"),
    (VL + "/worker/model_runner.py", "capture", "engine_init"),
    (VL + "/utils/mem_utils.py", "memory_profiling", "engine_init"),
    (VL + "/v1/worker/gpu_model_runner.py", "profile_cudagraph_memory", "engine_init"),
    (VL + "/v1/worker/gpu_model_runner.py", "initialize_metadata_builders", "engine_init"),
    (VL + "/v1/worker/worker_base.py", "init_worker", "cuda_init"),
    (VL + "/v1/engine/core.py", "_process_input_queue", "request"),
    (VL + "/multimodal/media/connector.py", "load_from_url_async", "request"),
    (VL + "/multimodal/utils.py", "fetch_image", "request"),
])
def test_a_cut_traceback_in_a_mapped_function_names_its_stage(path, func, stage):
    ans = classify_text(frame(path, func) + EXC)
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == (stage, "frames", "high")
    assert ans["first_error"]["lineno"] == 3


@pytest.mark.parametrize("path, func", [
    (VL + "/v1/engine/processor.py", "_validate_structured_output"),
    (VL + "/v1/engine/input_processor.py", "_validate_lora"),
    (VL + "/v1/core/sched/scheduler.py", "_try_schedule_encoder_inputs"),
    (VL + "/v1/core/single_type_kv_cache_manager.py", "allocate_new_blocks"),
    (VL + "/core/block_manager.py", "can_allocate"),
])
def test_request_only_files_say_request_with_medium_confidence(path, func):
    ans = classify_text(frame(path, func) + EXC)
    assert (ans["stage"], ans["confidence"]) == ("request", "medium")


def test_the_schedulers_construction_is_no_request():
    text = (frame(VL + "/v1/engine/core.py", "__init__") + frame(VL + "/v1/core/sched/scheduler.py", "__init__")
            + frame(VL + "/v1/core/kv_cache_manager.py", "__init__") + EXC)
    assert classify_text(text)["stage"] != "request"


def test_the_kv_cache_helpers_hashing_stays_unmapped():
    ans = classify_text(frame(VL + "/v1/core/kv_cache_utils.py", "hash_block_tokens") + EXC)
    assert ans["stage"] == "unknown"


def test_a_collective_of_torch_distributed_is_no_group_construction():
    ans = classify_text(frame(TD + "/distributed/distributed_c10d.py", "all_reduce") + EXC)
    assert ans["stage"] != "distributed_init"


@pytest.mark.parametrize("line, stage", [
    # custom_all_reduce_utils.py / all_reduce_utils.py gpu_p2p_access_check (CustomAllreduce.__init__)
    ("RuntimeError: Error happened when batch testing peer-to-peer access from (0, 1) to (0, 1):", "distributed_init"),
    # kv_cache_utils.py unify_hybrid_kv_cache_specs (get_kv_cache_config(s), at start-up)
    ("ValueError: Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one unified type.",
     "engine_init"),
])
def test_messages_raised_in_the_new_frames_functions_are_rows(line, stage):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == (stage, "inferred", "low")


def chain(root, wrapper, link="The above exception was the direct cause of the following exception:",
          first=(VL + "/v1/worker/gpu_worker.py", "load_model")):
    return ("Traceback (most recent call last):\n" + frame(*first) + root + "\n\n" + link + "\n\n"
            "Traceback (most recent call last):\n" + frame(VL + "/v1/engine/core.py", "run_engine_core") + wrapper + "\n")


@pytest.mark.parametrize("link", ["The above exception was the direct cause of the following exception:",
                                  "During handling of the above exception, another exception occurred:"])
def test_a_chain_no_row_knows_is_reported_from_its_root_cause(link):
    # CPython's traceback prints a chain from its earliest exception (__cause__ / __context__) to the last: the first
    # printed is the root cause, the last the wrapper (vLLM's own: "... See root cause above.")
    ans = classify_text(chain("FooError: the loader could not read the shard", "RuntimeError: wrapper failed", link))
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("weight_loading", 4)


def test_the_chains_words_still_class_it():
    ans = classify_text(chain("FooError: the loader could not read the shard", "RuntimeError: CUDA out of memory."))
    assert ans["error_class"] == "oom"


def test_a_value_error_at_the_root_of_a_chain_placed_at_config_is_a_config_error():
    text = chain("ValueError: the frobnication level must be positive", "RuntimeError: wrapper failed",
                 first=(VL + "/engine/arg_utils.py", "create_engine_config"))
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("config", "config_error", 4)


@pytest.mark.parametrize("path, func", [
    (VL + "/multimodal/processing.py", "_apply_hf_processor_main"),
    (VL + "/multimodal/processing/processor.py", "apply"),
    (VL + "/lora/punica_wrapper/punica_gpu.py", "add_lora_linear"),
    (VL + "/v1/spec_decode/eagle.py", "prepare_inputs"),
    (VL + "/spec_decode/top1_proposer.py", "get_spec_proposals"),
])
def test_serving_code_the_start_up_passes_also_run_says_request_only_low_when_cut(path, func):
    ans = classify_text(frame(path, func) + EXC)
    assert (ans["stage"], ans["confidence"]) == ("request", "low")


def test_the_same_code_under_the_profiling_run_is_engine_init():
    text = frame(VL + "/v1/worker/gpu_model_runner.py", "profile_run") + \
        frame(VL + "/multimodal/processing.py", "apply") + EXC
    assert classify_text(text)["stage"] == "engine_init"


def test_the_guidance_backend_compiles_a_requests_grammar():
    ans = classify_text(frame("/opt/venv/lib/python3.12/site-packages/llguidance/gbnf_to_lark.py", "convert") + EXC)
    assert (ans["stage"], ans["confidence"]) == ("request", "medium")


@pytest.mark.parametrize("path, func", [
    (VL + "/v1/engine/detokenizer.py", "update"),
    (VL + "/v1/engine/logprobs.py", "_update_sample_logprobs"),
    (VL + "/transformers_utils/detokenizer_utils.py", "detokenize_incrementally"),
    (VL + "/tokenizers/detokenizer_utils.py", "convert_ids_list_to_tokens"),
    (VL + "/engine/output_processor/stop_checker.py", "maybe_stop_sequence"),
])
def test_a_requests_outputs_are_request_only_code(path, func):
    ans = classify_text(frame(path, func) + EXC)
    assert (ans["stage"], ans["confidence"]) == ("request", "medium")


def test_a_chat_template_rendered_alone_is_request_at_low():
    ans = classify_text(frame("/opt/venv/lib/python3.12/site-packages/jinja2/environment.py", "render") + EXC)
    assert (ans["stage"], ans["confidence"]) == ("request", "low")
