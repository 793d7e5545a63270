"""The traceback-frame tables of the log_stage classifier: which vLLM (or library) function runs in which stage.

Data only, read by the scanner in ``_logstage.py``; split from ``_logstage_rules.py`` (issue 34's 1,200-line
limit) by responsibility: this file changes when a vLLM release moves or renames a function, the rules file when
a message changes.

* :data:`FRAMES`: (function, part of the file path, stage, source) - read from vLLM's source 0.2 -> current;
* :data:`FRAME_FILES`: files whose every function runs in one stage; :data:`DEVICE_QUERY_PATHS`: device discovery;
* :data:`SOURCE_LINES`: a source line only one vLLM function prints (a frame whose ``File`` line was cut);
* :data:`METHOD_MESSAGES`: logger lines that name the worker method that failed (looked up in FRAMES);
* :data:`SERVING_FRAMES`, :data:`STARTUP_FUNCS`, :data:`STARTUP_FUNC_WORDS`: serving-only code and its veto;
  :data:`SHARED_SERVING_FRAMES`: the part of it start-up runs too (confidence low when seen alone in a cut traceback).

Standard library only; imports on Python 3.9.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

# --------------------------------------------------------------------------------------------------------------
# traceback frames -> stage: (function, part of the frame's file path, stage, where it is in vLLM's source)
# A frame counts only when its file path contains the part given (a user's own ``load_model`` is not vLLM's).
# Read from vLLM's source 0.8 -> 0.33 (V0 files up to their removal in 0.11) and PyTorch's.  When several
# frames of a traceback map, the earliest stage wins (V0's ``profile_run`` calls ``execute_model``), except that
# distributed init inside ``init_device`` is distributed init.
# --------------------------------------------------------------------------------------------------------------
FRAMES = (
    # config: engine arguments -> VllmConfig, HF config loading, config classes' validation
    ("create_engine_config", "vllm/engine/arg_utils.py", "config", "EngineArgs.create_engine_config"),
    ("create_model_config", "vllm/engine/arg_utils.py", "config", "EngineArgs.create_model_config"),
    ("_get_and_verify_max_len", "vllm/config", "config", "vllm/config.py (<=0.10), vllm/config/model.py: _get_and_verify_max_len"),
    ("_get_and_verify_dtype", "vllm/config", "config", "vllm/config.py (<=0.10), vllm/config/model.py: _get_and_verify_dtype (0.2+)"),
    ("verify_with_parallel_config", "vllm/config", "config", "ModelConfig.verify_with_parallel_config"),
    ("__post_init__", "vllm/config", "config", "the config dataclasses' validation (vllm/config.py, vllm/config/*.py)"),
    # the config classes' checks (vllm/config.py 0.4 -> 0.10: ModelConfig.__init__ -> _verify_tokenizer_mode,
    # _verify_quantization, _verify_cuda_graph, _verify_embedding_mode; CacheConfig/ParallelConfig/SchedulerConfig/
    # SpeculativeConfig._verify_args, CacheConfig._verify_cache_dtype, LoadConfig._verify_load_format; LoRAConfig
    # verify_with_*; vllm/config/*.py keep the names)
    ("__init__", "vllm/config.py", "config", "vllm/config.py (<=0.10): the config classes' __init__ (they validate)"),
    ("_verify_args", "vllm/config", "config", "vllm/config.py, vllm/config/*.py: *Config._verify_args"),
    ("_verify_quantization", "vllm/config", "config", "ModelConfig._verify_quantization"),
    ("_verify_cuda_graph", "vllm/config", "config", "ModelConfig._verify_cuda_graph"),
    ("_verify_tokenizer_mode", "vllm/config", "config", "ModelConfig._verify_tokenizer_mode"),
    ("_verify_embedding_mode", "vllm/config", "config", "ModelConfig._verify_embedding_mode (0.4-0.6)"),
    ("_verify_cache_dtype", "vllm/config", "config", "CacheConfig._verify_cache_dtype"),
    ("_verify_prefix_caching", "vllm/config", "config", "CacheConfig._verify_prefix_caching"),
    ("_verify_load_format", "vllm/config", "config", "LoadConfig._verify_load_format"),
    ("verify_with_model_config", "vllm/config", "config", "LoRAConfig.verify_with_model_config"),
    ("verify_with_scheduler_config", "vllm/config", "config", "LoRAConfig.verify_with_scheduler_config"),
    ("maybe_create_spec_config", "vllm/config", "config", "SpeculativeConfig.maybe_create_spec_config (0.5)"),
    ("create_engine_configs", "vllm/engine/arg_utils.py", "config", "EngineArgs.create_engine_configs (<=0.3)"),
    ("from_cli_args", "vllm/engine/arg_utils.py", "config", "EngineArgs.from_cli_args"),
    # round 13: the command line's parser being built, before any argument is read (an argparse conflict, a plugin's
    # argument): entrypoints/openai/cli_args.py make_arg_parser (0.5+), EngineArgs/AsyncEngineArgs.add_cli_args,
    # the CLI's serve subcommand (entrypoints/cli/serve.py ServeSubcommand.subparser_init, 0.8+)
    ("make_arg_parser", "vllm/entrypoints", "config", "entrypoints/openai/cli_args.py make_arg_parser"),
    # round 32: the serve command's checks of its parsed arguments (entrypoints/openai/cli_args.py
    # validate_parsed_serve_args, 0.6+, and the chat template's check it calls, entrypoints/chat_utils.py
    # validate_chat_template), before any engine is built
    ("validate_parsed_serve_args", "vllm/entrypoints", "config", "entrypoints/openai/cli_args.py: the serve args' checks"),
    ("validate_chat_template", "vllm/entrypoints", "config", "entrypoints/chat_utils.py: validate_parsed_serve_args'"),
    ("add_cli_args", "vllm/engine/arg_utils.py", "config", "EngineArgs.add_cli_args, AsyncEngineArgs.add_cli_args"),
    ("subparser_init", "vllm/entrypoints/cli", "config", "entrypoints/cli/*.py subparser_init (the CLI's parsers)"),
    ("get_config", "vllm/transformers_utils/config.py", "config", "transformers_utils/config.py: get_config (HF config)"),
    # transformers' loading of a config, tokenizer or processor (configuration_utils.py get_config_dict,
    # the Auto* classes' from_pretrained): vLLM does it while the config and the tokenizer are built
    ("from_pretrained", "transformers/", "config", "transformers: AutoConfig/AutoTokenizer/AutoProcessor.from_pretrained"),
    ("get_config_dict", "transformers/", "config", "transformers/configuration_utils.py: get_config_dict"),
    ("get_tokenizer", "vllm/transformers_utils", "config", "transformers_utils/tokenizer.py: get_tokenizer (0.2 -> current)"),
    ("init_tokenizer_from_configs", "vllm/transformers_utils", "config", "transformers_utils/tokenizer_group: (0.4 -> 0.10)"),
    # round 12: the tokenizer loaders after their move (vllm/tokenizers/registry.py get_tokenizer, 0.13+; the
    # tokenizer classes' from_pretrained: hf.py, mistral.py, deepseek_v32.py; transformers_utils/tokenizers/mistral.py
    # before): a tokenizer that does not load is the config's (issue 35: "a missing tokenizer or config file is config")
    ("get_tokenizer", "vllm/tokenizers", "config", "vllm/tokenizers/registry.py: get_tokenizer (0.13+)"),
    ("from_pretrained", "vllm/tokenizers", "config", "vllm/tokenizers/*.py: the tokenizer classes' from_pretrained"),
    ("from_pretrained", "vllm/transformers_utils/tokenizers", "config", "transformers_utils/tokenizers/mistral.py (0.6+)"),
    # ... and the libraries under them, whose frames a cut paste may show alone: transformers' Auto* lookups and a
    # tokenizer's construction (tokenization_utils_base.py _from_pretrained -> the tokenizer class's __init__),
    # sentencepiece's model file, mistral_common's tokenizer file (transformers 4.3x -> 4.5x, sentencepiece 0.1 -> 0.2)
    ("_from_pretrained", "transformers/", "config", "transformers/tokenization_utils_base.py: _from_pretrained"),
    ("__init__", "transformers/tokenization_utils", "config", "transformers: the tokenizer classes built by _from_pretrained"),
    ("get_spm_processor", "transformers/models/", "config", "transformers: sentencepiece tokenizers' __init__ (llama, t5, ...)"),
    ("LoadFromFile", "sentencepiece", "config", "sentencepiece: SentencePieceProcessor.Load -> LoadFromFile"),
    ("from_file", "mistral_common/", "config", "mistral_common: MistralTokenizer.from_file (vLLM's Mistral tokenizer)"),
    ("_init_tokenizer", "vllm/engine", "config", "vllm/engine/llm_engine.py (V0): LLMEngine._init_tokenizer"),
    ("_try_inspect_model_cls", "vllm/model_executor/models/registry.py", "config",
     "models/registry.py: the model class is inspected (in a subprocess) while ModelConfig resolves the architecture"),
    ("inspect_model_cls", "vllm/model_executor/models/registry.py", "config", "models/registry.py: inspect_model_cls"),
    ("_run_in_subprocess", "vllm/model_executor/models/registry.py", "config", "models/registry.py: _run_in_subprocess"),
    # cuda_init: executor and worker processes, Ray placement, device and CUDA context
    ("init_device", "vllm", "cuda_init", "vllm/worker/worker.py (V0), vllm/v1/worker/gpu_worker.py: Worker.init_device"),
    ("_check_if_gpu_supports_dtype", "vllm", "cuda_init", "gpu_worker.py / worker.py: _check_if_gpu_supports_dtype"),
    ("request_memory", "vllm/v1/worker", "cuda_init", "vllm/v1/worker/utils.py: request_memory (init_device's free-memory check)"),
    ("initialize_ray_cluster", "vllm", "cuda_init", "vllm/executor/ray_utils.py, vllm/v1/executor/ray_utils.py: initialize_ray_cluster"),
    ("initialize_cluster", "vllm/engine/ray_utils.py", "cuda_init", "vllm/engine/ray_utils.py (<0.4): initialize_cluster"),
    ("_init_workers_ray", "vllm", "cuda_init", "ray_distributed_executor.py / v1 ray executor: _init_workers_ray"),
    ("init_worker", "vllm", "cuda_init",
     "worker_base.py WorkerWrapperBase.init_worker (0.6+): the executor builds the worker, before init_device"),
    # round 12: initialize_ray_cluster's placement-group checks (executor/ray_utils.py 0.5 -> 0.10, v1/executor/ray_utils.py)
    ("_wait_until_pg_ready", "vllm", "cuda_init", "ray_utils.py: _wait_until_pg_ready (initialize_ray_cluster)"),
    ("_verify_bundles", "vllm", "cuda_init", "ray_utils.py: _verify_bundles (initialize_ray_cluster, _init_workers_ray)"),
    ("_lazy_init", "torch/cuda/__init__.py", "cuda_init", "PyTorch torch/cuda/__init__.py: _lazy_init (CUDA context)"),
    ("set_device", "torch/cuda/__init__.py", "cuda_init", "PyTorch torch/cuda/__init__.py: set_device"),
    # device discovery: the platform asks the driver which GPUs there are and what they are (vllm/platforms/cuda.py
    # NvmlCudaPlatform / NonNvmlCudaPlatform, interface.py Platform, rocm.py; 0.6.1 -> current).  The config asks
    # lazily (ModelConfig's dtype and quantization checks call supported_dtypes / get_device_capability), so these
    # frames sit under config frames: a device query that fails is device discovery (DEVICE_QUERY_PATHS)
    ("get_device_capability", "vllm/platforms/", "cuda_init", "platforms/cuda.py, interface.py: get_device_capability"),
    ("has_device_capability", "vllm/platforms/", "cuda_init", "platforms/cuda.py, interface.py: has_device_capability"),
    ("is_device_capability", "vllm/platforms/", "cuda_init", "platforms/interface.py: is_device_capability"),
    ("get_device_name", "vllm/platforms/", "cuda_init", "platforms/cuda.py, rocm.py: get_device_name"),
    ("get_device_uuid", "vllm/platforms/", "cuda_init", "platforms/cuda.py: get_device_uuid"),
    ("get_device_total_memory", "vllm/platforms/", "cuda_init", "platforms/cuda.py: get_device_total_memory"),
    ("_get_physical_device_name", "vllm/platforms/", "cuda_init", "platforms/cuda.py: _get_physical_device_name"),
    ("get_physical_device_capability", "vllm/platforms/", "cuda_init", "platforms/cuda.py (0.6): module function"),
    ("get_physical_device_name", "vllm/platforms/", "cuda_init", "platforms/cuda.py (0.6): module function"),
    ("device_id_to_physical_device_id", "vllm/platforms/", "cuda_init", "platforms/interface.py, cuda.py"),
    ("log_warnings", "vllm/platforms/", "cuda_init", "platforms/cuda.py: NvmlCudaPlatform.log_warnings (at import)"),
    # distributed_init: torch.distributed, vLLM's parallel groups, NCCL communicators
    ("init_worker_distributed_environment", "vllm", "distributed_init", "gpu_worker.py / worker.py: init_worker_distributed_environment"),
    ("init_distributed_environment", "vllm/distributed", "distributed_init", "vllm/distributed/parallel_state.py: init_distributed_environment"),
    ("initialize_model_parallel", "vllm/distributed", "distributed_init", "parallel_state.py: initialize_model_parallel"),
    ("ensure_model_parallel_initialized", "vllm/distributed", "distributed_init", "parallel_state.py: ensure_model_parallel_initialized"),
    ("init_model_parallel_group", "vllm/distributed", "distributed_init", "parallel_state.py: init_model_parallel_group"),
    ("ncclCommInitRank", "vllm/distributed", "distributed_init", "device_communicators/pynccl_wrapper.py: NCCLLibrary.ncclCommInitRank"),
    ("__init__", "device_communicators/pynccl.py", "distributed_init", "device_communicators/pynccl.py: PyNcclCommunicator.__init__"),
    ("create", "vllm/distributed/utils.py", "distributed_init", "vllm/distributed/utils.py: StatelessProcessGroup.create (TCPStore)"),
    ("ensure_kv_transfer_initialized", "vllm/distributed", "distributed_init", "distributed/kv_transfer: ensure_kv_transfer_initialized"),
    ("init_distributed_environment", "vllm/worker", "distributed_init", "vllm/worker/worker.py (<=0.3): init_distributed_environment"),
    ("init_world_group", "vllm/distributed", "distributed_init", "parallel_state.py (0.5.1+): init_world_group"),
    ("__init__", "vllm/distributed/parallel_state.py", "distributed_init", "parallel_state.py (0.5.1+): GroupCoordinator.__init__"),
    ("__init__", "device_communicators/custom_all_reduce.py", "distributed_init",
     "distributed/device_communicators/custom_all_reduce.py: CustomAllreduce.__init__"),
    ("init_process_group", "torch/distributed", "distributed_init", "PyTorch distributed_c10d.py: init_process_group"),
    ("_create_c10d_store", "torch/distributed", "distributed_init", "PyTorch torch/distributed/rendezvous.py: _create_c10d_store"),
    ("_create_tcp_store", "torch/distributed", "distributed_init", "PyTorch elastic/rendezvous/c10d_rendezvous_backend.py: _create_tcp_store"),
    # round 12 (vLLM 0.6 -> 0.34, PyTorch 2.x): the groups' construction only - their collectives run while serving too
    ("new_group", "torch/distributed", "distributed_init", "PyTorch distributed_c10d.py: new_group (GroupCoordinator.__init__)"),
    ("_new_group_with_tag", "torch/distributed", "distributed_init", "PyTorch distributed_c10d.py: new_group's body"),
    ("_new_process_group_helper", "torch/distributed", "distributed_init", "PyTorch distributed_c10d.py: init_process_group, new_group"),
    ("_store_based_barrier", "torch/distributed", "distributed_init", "PyTorch distributed_c10d.py: init_process_group, new_group"),
    ("ncclGetUniqueId", "vllm/distributed/device_communicators", "distributed_init", "pynccl_wrapper.py: PyNcclCommunicator.__init__ only"),
    ("__init__", "device_communicators/cuda_communicator.py", "distributed_init", "cuda_communicator.py (0.8+): GroupCoordinator.__init__"),
    ("__init__", "device_communicators/base_device_communicator.py", "distributed_init", "base_device_communicator.py (0.8+)"),
    ("gpu_p2p_access_check", "vllm/distributed", "distributed_init", "custom_all_reduce_utils.py, all_reduce_utils.py: CustomAllreduce.__init__"),
    ("can_actually_p2p", "vllm/distributed", "distributed_init", "custom_all_reduce_utils.py, all_reduce_utils.py: gpu_p2p_access_check"),
    ("create_from_process_group", "vllm/distributed", "distributed_init", "shm_broadcast.py: MessageQueue, GroupCoordinator.__init__ only"),
    # round 36: the message queues a process group's members build over its shared memory and sockets
    # (distributed/parallel_state.py GroupCoordinator create_mq_broadcaster / create_single_reader_mq_broadcasters,
    # shm_broadcast.py create_from_process_group_single_reader, 0.10+): the group's init, and V1's WorkerProc
    # _init_message_queues right after it
    ("create_from_process_group_single_reader", "vllm/distributed", "distributed_init",
     "shm_broadcast.py: MessageQueue for one reader of a process group"),
    ("create_single_reader_mq_broadcasters", "vllm/distributed", "distributed_init", "parallel_state.py GroupCoordinator"),
    ("create_mq_broadcaster", "vllm/distributed", "distributed_init", "parallel_state.py GroupCoordinator"),
    ("init_gloo_process_group", "vllm/distributed", "distributed_init", "vllm/distributed/utils.py (0.10+)"),
    ("stateless_init_torch_distributed_process_group", "vllm/distributed", "distributed_init", "vllm/distributed/utils.py (0.7+)"),
    ("create_tcp_store", "vllm/distributed", "distributed_init", "vllm/distributed/utils.py (0.26+)"),
    ("stateless_init_dp_group", "vllm/config", "distributed_init", "config/parallel.py (0.8+): the data-parallel group"),
    ("_init_data_parallel", "vllm/v1/engine", "distributed_init", "v1/engine/core.py (0.10+): DPEngineCoreProc's DP group"),
    # weight_loading: building the model and reading its weights
    ("load_model", "vllm", "weight_loading", "Worker.load_model / model runners' load_model / model_loader *.load_model"),
    ("get_model", "vllm/model_executor/model_loader", "weight_loading", "model_executor/model_loader/__init__.py: get_model"),
    ("initialize_model", "vllm/model_executor/model_loader", "weight_loading", "model_loader/loader.py (<=0.9), utils.py: initialize_model"),
    ("load_weights", "vllm", "weight_loading", "model_executor/models/*.py and models/utils.py AutoWeightsLoader: load_weights"),
    ("_prepare_weights", "vllm/model_executor/model_loader", "weight_loading", "model_loader (DefaultModelLoader): _prepare_weights"),
    ("_get_weights_iterator", "vllm/model_executor/model_loader", "weight_loading", "DefaultModelLoader._get_weights_iterator"),
    ("get_all_weights", "vllm/model_executor/model_loader", "weight_loading", "DefaultModelLoader.get_all_weights"),
    ("safetensors_weights_iterator", "vllm/model_executor/model_loader", "weight_loading", "model_loader/weight_utils.py"),
    ("pt_weights_iterator", "vllm/model_executor/model_loader", "weight_loading", "model_loader/weight_utils.py"),
    ("download_weights_from_hf", "vllm/model_executor/model_loader", "weight_loading", "model_loader/weight_utils.py"),
    ("process_weights_after_loading", "vllm/model_executor", "weight_loading", "model_loader/utils.py, quantization methods"),
    # round 25: the Marlin kernels' weight repack, which only the quantization methods' process_weights_after_loading
    # calls (gptq_marlin.py, awq_marlin.py, marlin_utils*.py, the Marlin MoE methods; 0.5 -> current)
    ("gptq_marlin_repack", "vllm/_custom_ops.py", "weight_loading", "_custom_ops.py: Marlin repack at process_weights_after_loading"),
    ("awq_marlin_repack", "vllm/_custom_ops.py", "weight_loading", "_custom_ops.py: Marlin repack at process_weights_after_loading"),
    ("gptq_marlin_moe_repack", "vllm/_custom_ops.py", "weight_loading", "_custom_ops.py: Marlin MoE repack at load"),
    ("awq_marlin_moe_repack", "vllm/_custom_ops.py", "weight_loading", "_custom_ops.py: Marlin MoE repack at load"),
    # round 81: FlashInfer's weight-layout shuffles (flashinfer/utils.py get_shuffle_matrix_*_row_indices,
    # fp4_quantization.py shuffle_matrix_a / shuffle_matrix_sf_a): the NVFP4 / MXFP4 / FP8 MoE and linear methods call
    # them once, from process_weights_after_loading (prepare_static_weights_for_trtllm_*), to put the checkpoint's
    # weights and scales in the TRT-LLM kernels' layout; no forward pass calls them
    ("get_shuffle_matrix_a_row_indices", "flashinfer/", "weight_loading", "flashinfer/utils.py: weight layout at load"),
    ("get_shuffle_matrix_sf_a_row_indices", "flashinfer/", "weight_loading", "flashinfer/utils.py: scale layout at load"),
    ("shuffle_matrix_a", "flashinfer/", "weight_loading", "flashinfer fp4_quantization.py: weight layout at load"),
    ("shuffle_matrix_sf_a", "flashinfer/", "weight_loading", "flashinfer fp4_quantization.py: scale layout at load"),
    # issue 35, from vLLM 0.2 / 0.4 / 0.5.1 (neuralmagic/nm-vllm tags) and the current weight_utils.py
    ("hf_model_weights_iterator", "vllm/model_executor", "weight_loading", "vllm/model_executor/weight_utils.py (<=0.3)"),
    ("prepare_hf_model_weights", "vllm/model_executor", "weight_loading", "vllm/model_executor/weight_utils.py (<=0.3)"),
    ("np_cache_weights_iterator", "vllm/model_executor/model_loader", "weight_loading", "model_loader/weight_utils.py (0.4+)"),
    ("fastsafetensors_weights_iterator", "vllm/model_executor/model_loader", "weight_loading", "model_loader/weight_utils.py"),
    ("runai_safetensors_weights_iterator", "vllm/model_executor/model_loader", "weight_loading", "model_loader/weight_utils.py"),
    ("multi_thread_safetensors_weights_iterator", "vllm/model_executor/model_loader", "weight_loading",
     "model_loader/weight_utils.py"),
    ("download_safetensors_index_file_from_hf", "vllm/model_executor/model_loader", "weight_loading",
     "model_loader/weight_utils.py (0.5+)"),
    ("filter_duplicate_safetensors_files", "vllm/model_executor/model_loader", "weight_loading",
     "model_loader/weight_utils.py (0.5+)"),
    ("default_weight_loader", "vllm/model_executor", "weight_loading", "weight_utils.py: default_weight_loader (0.2+)"),
    ("weight_loader", "vllm/model_executor", "weight_loading", "layers (linear.py, vocab_parallel_embedding.py, fused_moe): weight_loader"),
    ("weight_loader_v2", "vllm/model_executor", "weight_loading", "layers/linear.py: weight_loader_v2 (0.6+)"),
    ("_load_module", "vllm/model_executor/models/utils.py", "weight_loading", "models/utils.py: AutoWeightsLoader._load_module"),
    ("initialize_dummy_weights", "vllm/model_executor", "weight_loading", "weight_utils.py: initialize_dummy_weights (load_format dummy)"),
    # round 12: the loader's quant-config hook, tensorizer, the LoRA wrapping of the model at load_model (0.4 -> 0.34)
    ("configure_quant_config", "vllm/model_executor/model_loader", "weight_loading", "model_loader/utils.py: initialize_model"),
    ("device_loading_context", "vllm/model_executor/model_loader", "weight_loading", "model_loader/utils.py: process_weights_after_loading"),
    ("deserialize_tensorizer_model", "model_loader/tensorizer", "weight_loading", "model_loader/tensorizer.py (0.9+)"),
    ("init_tensorizer_model", "model_loader/tensorizer", "weight_loading", "model_loader/tensorizer.py (0.9+)"),
    ("load_lora_model", "vllm/v1/worker", "weight_loading", "v1/worker/lora_model_runner_mixin.py: the runner's load_model"),
    ("create_lora_manager", "vllm/lora", "weight_loading", "lora/models.py, model_manager.py, worker_manager.py: load_model"),
    ("_create_lora_modules", "vllm/lora", "weight_loading", "LoRAModelManager.__init__: the model's layers wrapped"),
    # building the model (issue 35, round nine): the loader's initialize_model constructs the model class, whose
    # __init__ builds its layers; a layer's __init__ asks its quantization config for a method (get_quant_method:
    # LinearBase, FusedMoE, VocabParallelEmbedding, Attention; compressed-tensors picks a scheme there and checks the
    # GPU's capability) and lets it create the parameters (create_weights).  Nothing else calls them (0.2 -> current)
    ("__init__", "vllm/model_executor/models/", "weight_loading", "model_executor/models/*.py: the model classes' __init__"),
    # round 53: the Transformers backend swaps the model's modules for vLLM's layers from its __init__
    # (models/transformers.py replace_linear_class, 0.8 -> 0.11; models/transformers/base.py and moe.py
    # recursive_replace / _recursive_replace, utils.py recursive_replace_linear, 0.12 -> current)
    ("_recursive_replace", "vllm/model_executor/models/transformers", "weight_loading",
     "models/transformers/base.py, moe.py, utils.py: the module swap of the model's construction"),
    ("recursive_replace", "vllm/model_executor/models/transformers", "weight_loading",
     "models/transformers/base.py, moe.py: recursive_replace (0.12 -> current)"),
    ("replace_linear_class", "vllm/model_executor/models/transformers", "weight_loading",
     "models/transformers.py (0.8 -> 0.11), transformers/utils.py: replace_linear_class"),
    ("__init__", "vllm/model_executor/layers/", "weight_loading", "model_executor/layers/*.py: the layers' __init__"),
    ("get_quant_method", "vllm/model_executor/layers/quantization", "weight_loading",
     "layers/quantization/*.py: QuantizationConfig.get_quant_method (0.4 -> current)"),
    ("get_scheme", "quantization/compressed_tensors", "weight_loading", "compressed_tensors.py: get_scheme (0.5 -> current)"),
    ("create_weights", "vllm/model_executor/layers", "weight_loading", "layers: the quant methods' create_weights, called by the layer's __init__"),
    # round 28: the layers' factory the model classes' __init__ call (models/utils.py make_layers, 0.5 -> current,
    # with maybe_offload_to_cpu before 0.1x and the offloader's wrap_modules, model_executor/offloader/, after it):
    # nothing calls them once the model is built
    ("make_layers", "vllm/model_executor/models/utils.py", "weight_loading", "models/utils.py: make_layers (model __init__)"),
    ("maybe_offload_to_cpu", "vllm/model_executor/models/utils.py", "weight_loading", "models/utils.py: make_layers'"),
    ("wrap_modules", "vllm/model_executor/offloader", "weight_loading", "offloader/base.py: make_layers' wrap_modules"),
    # the rotary embedding (round ten): RotaryEmbedding.__init__ computes its cos/sin cache (rotary_embedding.py 0.2 ->
    # 0.10, rotary_embedding/base.py after), built by get_rope in the attention layers' __init__; nothing else calls them
    ("_compute_cos_sin_cache", "vllm/model_executor/layers/rotary_embedding", "weight_loading",
     "rotary_embedding: RotaryEmbedding.__init__ -> _compute_cos_sin_cache"),
    ("_compute_inv_freq", "vllm/model_executor/layers/rotary_embedding", "weight_loading",
     "rotary_embedding: _compute_cos_sin_cache -> _compute_inv_freq"),
    # engine_init: memory profiling, KV-cache sizing and allocation, compile/warm-up, CUDA graph capture
    ("determine_available_memory", "vllm", "engine_init", "vllm/v1/worker/gpu_worker.py: Worker.determine_available_memory"),
    ("determine_num_available_blocks", "vllm", "engine_init", "vllm/worker/worker.py (V0): determine_num_available_blocks"),
    ("memory_profiling", "vllm/utils", "engine_init",
     "vllm/utils.py (0.7+), utils/mem_utils.py (0.11+): only the two functions above call it (round 12)"),
    ("profile_run", "vllm", "engine_init", "gpu_model_runner.py / worker/model_runner.py: profile_run"),
    ("_dummy_run", "vllm", "engine_init", "vllm/v1/worker/gpu_model_runner.py: _dummy_run"),
    ("_dummy_sampler_run", "vllm", "engine_init", "vllm/v1/worker/gpu_model_runner.py: _dummy_sampler_run"),
    ("initialize_cache", "vllm", "engine_init", "vllm/worker/worker.py (V0): initialize_cache"),
    ("raise_if_cache_size_invalid", "vllm", "engine_init", "vllm/worker/worker.py (V0): raise_if_cache_size_invalid"),
    ("_init_cache_engine", "vllm", "engine_init", "vllm/worker/worker.py (V0): _init_cache_engine"),
    ("_initialize_kv_caches", "vllm", "engine_init", "vllm/v1/engine/core.py, vllm/engine/llm_engine.py: _initialize_kv_caches"),
    ("initialize_from_config", "vllm", "engine_init", "gpu_worker.py: initialize_from_config (KV-cache allocation)"),
    ("initialize_kv_cache", "vllm", "engine_init", "gpu_model_runner.py: initialize_kv_cache"),
    ("get_kv_cache_config", "vllm/v1/core", "engine_init", "vllm/v1/core/kv_cache_utils.py: get_kv_cache_config"),
    ("get_kv_cache_configs", "vllm/v1/core", "engine_init", "vllm/v1/core/kv_cache_utils.py: get_kv_cache_configs"),
    ("check_enough_kv_cache_memory", "vllm/v1/core", "engine_init", "kv_cache_utils.py: check_enough_kv_cache_memory"),
    ("_check_enough_kv_cache_memory", "vllm/v1/core", "engine_init", "kv_cache_utils.py / kv_cache_planning.py"),
    # round 12: kv_cache_utils.py's sizing and grouping (0.8 -> 0.34), called only by get_kv_cache_config(s) and the
    # engine core's _initialize_kv_caches (the hashing functions of the same file run per request: not listed)
    ("unify_hybrid_kv_cache_specs", "vllm/v1/core", "engine_init", "kv_cache_utils.py (0.8+)"),
    ("unify_kv_cache_spec_page_size", "vllm/v1/core", "engine_init", "kv_cache_utils.py (0.11+)"),
    ("unify_kv_cache_configs", "vllm/v1/core", "engine_init", "kv_cache_utils.py (0.8 -> 0.10)"),
    ("get_kv_cache_groups", "vllm/v1/core", "engine_init", "kv_cache_utils.py (0.11+)"),
    ("get_kv_cache_config_from_groups", "vllm/v1/core", "engine_init", "kv_cache_utils.py (0.11+)"),
    ("get_num_blocks", "vllm/v1/core", "engine_init", "kv_cache_utils.py"),
    ("may_override_num_blocks", "vllm/v1/core", "engine_init", "kv_cache_utils.py (0.11+)"),
    ("generate_scheduler_kv_cache_config", "vllm/v1/core", "engine_init", "kv_cache_utils.py (0.11+): EngineCore._initialize_kv_caches"),
    ("get_uniform_page_size", "vllm/v1/core", "engine_init", "kv_cache_utils.py"),
    ("create_kv_cache_group_specs", "vllm/v1/core", "engine_init", "kv_cache_utils.py"),
    ("estimate_max_model_len", "vllm/v1/core", "engine_init", "kv_cache_utils.py: check_enough_kv_cache_memory's hint"),
    ("_auto_fit_max_model_len", "vllm/v1/core", "engine_init", "kv_cache_utils.py (0.2x)"),
    ("_get_kv_cache_config_uniform_type", "vllm/v1/core", "engine_init", "kv_cache_utils.py (0.8 -> 0.10)"),
    ("_get_kv_cache_config_uniform_page_size", "vllm/v1/core", "engine_init", "kv_cache_utils.py (0.10)"),
    ("compile_or_warm_up_model", "vllm", "engine_init", "gpu_worker.py: compile_or_warm_up_model"),
    ("_warm_up_model", "vllm", "engine_init", "vllm/worker/worker.py (V0): _warm_up_model"),
    ("capture_model", "vllm", "engine_init", "model runners: capture_model (CUDA graphs)"),
    ("compile_all_ranges", "vllm/compilation/", "engine_init", "compilation/piecewise_backend.py: compile_all_ranges"),
    ("kernel_warmup", "vllm", "engine_init", "vllm/model_executor/warmup/kernel_warmup.py: kernel_warmup"),
    ("capture_begin", "torch/cuda/graphs.py", "engine_init", "PyTorch torch/cuda/graphs.py: CUDAGraph.capture_begin"),
    ("capture_end", "torch/cuda/graphs.py", "engine_init", "PyTorch torch/cuda/graphs.py: CUDAGraph.capture_end"),
    ("capture", "vllm/worker/", "engine_init", "vllm/worker/model_runner.py (V0): CUDAGraphRunner.capture"),
    # (round 43) the V2 model runner's graph managers, encoder runner and speculators (vllm/v1/worker/gpu/, 0.2x+):
    # every capture() is called from capture_model only
    ("capture", "vllm/v1/worker/gpu/", "engine_init", "v1/worker/gpu/ (model runner V2): CUDA graph capture"),
    ("capture_inner_cudagraphs", "vllm/v1/worker/gpu/", "engine_init", "v1/worker/gpu/model_states: capture_model"),
    ("profile_num_available_blocks", "vllm/worker", "engine_init", "vllm/worker/worker.py (<=0.3)"),
    ("init_cache_engine", "vllm/worker", "engine_init", "vllm/worker/worker.py (<=0.3)"),
    ("warm_up_model", "vllm/worker", "engine_init", "vllm/worker/worker.py (<=0.3)"),
    ("_allocate_kv_cache", "vllm/worker/cache_engine.py", "engine_init", "vllm/worker/cache_engine.py (V0): CacheEngine._allocate_kv_cache"),
    # api_ready: the API server's app and HTTP server
    ("init_app_state", "vllm/entrypoints", "api_ready", "entrypoints/openai/api_server.py: init_app_state"),
    # (round 48) the command line's parsing (FlexibleArgumentParser.parse_args, vllm/utils.py -> utils/argparse_utils.py)
    ("parse_args", "vllm/utils", "config", "FlexibleArgumentParser.parse_args: the command line"),
    # (round 43) the OpenAI front end's handler classes, built once by init_app_state (the "OpenAIServingChat(" source
    # rows below): their constructors - serving_*.py up to 0.14, <api>/serving.py from 0.20 (not responses/context.py
    # nor the tool parsers, built per request)
    ("__init__", "vllm/entrypoints/openai/serving_", "api_ready", "entrypoints/openai/serving_*.py (<=0.14): a handler"),
    ("__init__", "entrypoints/openai/chat_completion/serving.py", "api_ready", "0.20+: OpenAIServingChat"),
    ("__init__", "entrypoints/openai/completion/serving.py", "api_ready", "0.20+: OpenAIServingCompletion"),
    ("__init__", "entrypoints/openai/responses/serving.py", "api_ready", "0.20+: OpenAIServingResponses"),
    ("__init__", "entrypoints/openai/models/serving.py", "api_ready", "0.20+: OpenAIServingModels"),
    ("__init__", "entrypoints/openai/speech_to_text/serving.py", "api_ready", "0.20+: transcription, translation"),
    # (round 43) the OpenAI server's check of the model's kind before it builds the engine (api_server.py 0.5-0.6:
    # "return ModelConfig(model=model_name, ...).embedding_mode")
    ("model_is_embedding", "vllm/entrypoints", "config", "entrypoints/openai/api_server.py: ModelConfig(...)"),
    ("build_app", "vllm/entrypoints", "api_ready", "entrypoints/openai/api_server.py: build_app"),
    ("serve_http", "vllm/entrypoints", "api_ready", "entrypoints/launcher.py: serve_http (uvicorn start)"),
    ("warmup", "vllm/entrypoints", "api_ready",
     "entrypoints/openai/ chat handler: warmup (chat-template warm-up run by init_app_state before the server is up)"),
    # request: serving - the engine loop, the output handler, the OpenAI handlers
    ("execute_model", "vllm", "request", "gpu_worker.py, gpu_model_runner.py, executors: execute_model"),
    ("execute_model_async", "vllm", "request", "vllm/executor/*.py (V0): execute_model_async"),
    ("sample_tokens", "vllm", "request", "vllm/v1/worker/gpu_model_runner.py: sample_tokens"),
    ("step_async", "vllm/engine", "request", "vllm/engine/async_llm_engine.py (V0): step_async"),
    ("engine_step", "vllm/engine", "request", "vllm/engine/async_llm_engine.py (V0): engine_step"),
    ("_log_task_completion", "vllm/engine", "request", "async_llm_engine.py (V0): the engine loop's end"),
    ("_raise_exception_on_finish", "vllm/engine", "request", "async_llm_engine.py (<=0.3): the engine loop's end"),
    ("output_handler", "vllm/v1/engine", "request", "vllm/v1/engine/async_llm.py: AsyncLLM output_handler"),
    ("run_busy_loop", "vllm/v1/engine", "request", "vllm/v1/engine/core.py: EngineCoreProc.run_busy_loop (after start-up)"),
    ("_process_engine_step", "vllm/v1/engine", "request", "vllm/v1/engine/core.py: _process_engine_step"),
    ("run_engine_loop", "vllm/engine", "request",
     "vllm/engine/multiprocessing/engine.py (V0): MQLLMEngine.run_engine_loop (after start-up)"),
    ("start_worker_execution_loop", "vllm/worker", "request", "vllm/worker/worker_base.py (V0): the workers' execute loop"),
    ("_verify_args", "vllm/sampling_params.py", "request", "vllm/sampling_params.py: SamplingParams._verify_args (a request's)"),
    # round 25: a KV connector's scheduler side (kv_transfer/kv_connector/v1/base.py KVConnectorBase_V1, 0.9+; LMCache,
    # NIXL, offloading, P2P): only the V1 scheduler calls it, for requests it schedules or finishes (the worker side
    # also runs in the profiling pass's dummy runs: not listed)
    ("get_num_new_matched_tokens", "vllm/distributed/kv_transfer", "request", "KVConnectorBase_V1 scheduler side"),
    ("update_state_after_alloc", "vllm/distributed/kv_transfer", "request", "KVConnectorBase_V1 scheduler side"),
    ("build_connector_meta", "vllm/distributed/kv_transfer", "request", "KVConnectorBase_V1 scheduler side"),
    ("request_finished", "vllm/distributed/kv_transfer", "request", "KVConnectorBase_V1 scheduler side"),
    ("update_connector_output", "vllm/distributed/kv_transfer", "request", "KVConnectorBase_V1 scheduler side (0.10+)"),
    # round 41: V0's KV pipes and lookup buffers (distributed/kv_transfer/kv_pipe/, kv_lookup_buffer/, 0.7-0.10,
    # disaggregated prefill): their data path runs only for a scheduled request's KV (model_runner.execute_model ->
    # recv_/send_kv_caches_and_hidden_states; never for the profiling run); building them is distributed init (above)
    ("recv_kv_caches_and_hidden_states", "vllm/distributed/kv_transfer", "request", "V0 KV connector: a request's KV in"),
    ("send_kv_caches_and_hidden_states", "vllm/distributed/kv_transfer", "request", "V0 KV connector: a request's KV out"),
    ("drop_select", "kv_transfer/kv_lookup_buffer/", "request", "kv_lookup_buffer: SimpleBuffer.drop_select"),
    ("drop_select_handler", "kv_transfer/kv_lookup_buffer/", "request", "kv_lookup_buffer: the buffer's serving thread"),
    ("recv_tensor", "kv_transfer/kv_pipe/", "request", "kv_pipe: pynccl / mooncake pipe"),
    ("send_tensor", "kv_transfer/kv_pipe/", "request", "kv_pipe: pynccl / mooncake pipe"),
    ("_recv_impl", "kv_transfer/kv_pipe/", "request", "kv_pipe: the pipe's receive thread"),
    ("_send_impl", "kv_transfer/kv_pipe/", "request", "kv_pipe: the pipe's send thread"),
    ("recv_bytes", "kv_transfer/kv_pipe/", "request", "kv_pipe/mooncake_pipe.py: MooncakeTransferEngine"),
    ("send_bytes", "kv_transfer/kv_pipe/", "request", "kv_pipe/mooncake_pipe.py: MooncakeTransferEngine"),
    ("transfer_sync", "kv_transfer/kv_pipe/", "request", "kv_pipe/mooncake_pipe.py: MooncakeTransferEngine"),
    ("get_output", "vllm/v1/worker/gpu_model_runner.py", "request",
     "gpu_model_runner.py: AsyncGPUModelRunnerOutput.get_output (the output copy of a scheduled batch)"),
    ("get_output", "vllm/v1/worker/gpu/async_utils.py", "request",
     "the V2 model runner's AsyncOutput.get_output (vllm/v1/worker/gpu/, round 26): as above"),
    ("create_completion", "vllm/entrypoints", "request", "entrypoints/openai/serving_completion.py"),
    ("create_chat_completion", "vllm/entrypoints", "request", "entrypoints/openai/serving_chat.py"),
    ("completion_stream_generator", "vllm/entrypoints", "request", "entrypoints/openai/serving_completion.py"),
    ("completion_full_generator", "vllm/entrypoints", "request", "serving_completion.py, api_server.py (<=0.2)"),
    ("chat_completion_stream_generator", "vllm/entrypoints", "request", "entrypoints/openai/serving_chat.py"),
    ("chat_completion_full_generator", "vllm/entrypoints", "request", "entrypoints/openai/serving_chat.py"),
    ("render_completion_request", "vllm/entrypoints", "request", "entrypoints/openai/completion/serving.py"),
    # the HTTP server's request path (uvicorn/protocols/http/{h11,httptools}_impl.py RequestResponseCycle.run_asgi,
    # starlette/routing.py Route.handle, fastapi/routing.py run_endpoint_function): they run only for a request
    ("run_asgi", "uvicorn/protocols/http", "request", "uvicorn: RequestResponseCycle.run_asgi"),
    ("run_endpoint_function", "fastapi/routing.py", "request", "fastapi/routing.py: run_endpoint_function"),
    ("handle", "starlette/routing.py", "request", "starlette/routing.py: Route.handle"),
    # round 61: a streaming response's watch for the client going away (starlette/responses.py StreamingResponse
    # listen_for_disconnect, awaiting uvicorn's RequestResponseCycle.receive): only a response being streamed runs it
    ("listen_for_disconnect", "starlette/responses.py", "request", "starlette: StreamingResponse.listen_for_disconnect"),
    ("receive", "uvicorn/protocols/http", "request", "uvicorn: RequestResponseCycle.receive"),
    # the schedulers and engine steps, the offline LLM's generation calls (vLLM 0.2 -> current)
    ("schedule", "vllm/core/scheduler.py", "request", "vllm/core/scheduler.py (V0): Scheduler.schedule"),
    ("_schedule", "vllm/core/scheduler.py", "request", "vllm/core/scheduler.py (V0): Scheduler._schedule"),
    ("_schedule_prefills", "vllm/core/scheduler.py", "request", "vllm/core/scheduler.py (V0, 0.4+)"),
    ("_schedule_running", "vllm/core/scheduler.py", "request", "vllm/core/scheduler.py (V0, 0.4+)"),
    ("schedule", "vllm/v1/core/sched", "request", "vllm/v1/core/sched/scheduler.py: Scheduler.schedule"),
    ("update_from_output", "vllm/v1/core/sched", "request", "vllm/v1/core/sched/scheduler.py: Scheduler.update_from_output"),
    ("allocate_slots", "vllm/v1/core", "request", "vllm/v1/core/kv_cache_manager.py: allocate_slots (scheduling a request)"),
    ("step", "vllm/engine/llm_engine.py", "request", "vllm/engine/llm_engine.py (V0): LLMEngine.step"),
    ("_process_model_outputs", "vllm/engine/llm_engine.py", "request", "vllm/engine/llm_engine.py (V0)"),
    ("step", "vllm/v1/engine/core.py", "request", "vllm/v1/engine/core.py: EngineCore.step"),
    ("step_with_batch_queue", "vllm/v1/engine/core.py", "request", "vllm/v1/engine/core.py: EngineCore.step_with_batch_queue"),
    # round 35: the engine core's busy loop handing a client's utility call (collective_rpc, add_lora, sleep, ...) to
    # the engine (v1/engine/core.py EngineCoreProc._handle_client_request, 0.8+): the loop runs only after start-up's
    # READY handshake - a running engine's call (a deeper frame of another stage, load_model, still wins)
    ("_handle_client_request", "vllm/v1/engine/core.py", "request",
     "vllm/v1/engine/core.py: EngineCoreProc._handle_client_request (the busy loop, after start-up)"),
    ("execute_worker", "vllm/worker", "request", "vllm/worker/worker.py (V0, 0.5+): execute_worker"),
    ("generate", "vllm/entrypoints/llm.py", "request", "vllm/entrypoints/llm.py: LLM.generate"),
    ("generate", "vllm/engine/async_llm_engine.py", "request", "async_llm_engine.py (V0): AsyncLLMEngine.generate"),
    ("add_request", "vllm/engine/async_llm_engine.py", "request", "async_llm_engine.py (V0): AsyncLLMEngine.add_request"),
    ("generate", "vllm/v1/engine/async_llm.py", "request", "vllm/v1/engine/async_llm.py: AsyncLLM.generate"),
    ("wrapped_app", "starlette/_exception_handler.py", "request",
     "starlette: wrap_app_handling_exceptions (ExceptionMiddleware, HTTP and websocket scopes only)"),
    ("call_next", "starlette/middleware/base.py", "request", "starlette: BaseHTTPMiddleware.call_next (an HTTP request)"),
    ("chat", "vllm/entrypoints/llm.py", "request", "vllm/entrypoints/llm.py: LLM.chat"),
    ("encode", "vllm/entrypoints/llm.py", "request", "vllm/entrypoints/llm.py: LLM.encode"),
    ("_run_engine", "vllm/entrypoints/llm.py", "request", "vllm/entrypoints/llm.py: LLM._run_engine"),
    ("_validate_and_add_requests", "vllm/entrypoints/llm.py", "request", "vllm/entrypoints/llm.py (0.5+)"),
    # issue 35, round 2: the V1 model runner's per-batch steps (vllm/v1/worker/gpu_model_runner.py, also the other
    # runners under vllm/v1/worker/; the profiling and capture passes show their own engine_init frames, which win)
    ("_update_states", "vllm/v1/worker", "request", "gpu_model_runner.py: _update_states (a batch's requests)"),
    ("_prepare_inputs", "vllm/v1/worker", "request", "gpu_model_runner.py: _prepare_inputs"),
    ("_sample", "vllm/v1/worker", "request", "gpu_model_runner.py: _sample"),
    ("_model_forward", "vllm/v1/worker", "request", "gpu_model_runner.py: _model_forward"),
    ("_bookkeeping_sync", "vllm/v1/worker", "request", "gpu_model_runner.py: _bookkeeping_sync"),
    ("_execute_mm_encoder", "vllm/v1/worker", "request", "gpu_model_runner.py: _execute_mm_encoder"),
    ("_gather_mm_embeddings", "vllm/v1/worker", "request", "gpu_model_runner.py: _gather_mm_embeddings"),
    ("_calc_spec_decode_metadata", "vllm/v1/worker", "request", "gpu_model_runner.py: _calc_spec_decode_metadata"),
    # speculative decoding's per-step work (round 8): V1's drafters propose for every scheduled step (start-up runs
    # their dummy_run instead), V0's SpecDecodeWorker steps (vllm/spec_decode/spec_decode_worker.py 0.4 -> 0.10)
    ("propose", "vllm/v1/spec_decode", "request", "v1/spec_decode/eagle.py, ngram_proposer.py, medusa.py: propose"),
    ("propose_draft_token_ids", "vllm/v1/worker", "request", "gpu_model_runner.py: propose_draft_token_ids"),
    # round 81: the sampled tokens of a scheduled step copied to the host (gpu_model_runner.py _to_list, 0.10+, called by
    # _bookkeeping_sync on execute_model's path) and a request's prompt logprobs (_get_prompt_logprobs_dict, 0.8+): the
    # start-up passes (_dummy_run, _dummy_sampler_run, capture) call neither
    ("_to_list", "vllm/v1/worker/gpu_model_runner.py", "request", "gpu_model_runner.py: _to_list (a step's tokens)"),
    ("_get_prompt_logprobs_dict", "vllm/v1/worker", "request", "gpu_model_runner.py: a request's prompt logprobs"),
    ("_run_speculative_decoding_step", "vllm/spec_decode", "request", "spec_decode_worker.py (V0)"),
    ("_run_no_spec", "vllm/spec_decode", "request", "spec_decode_worker.py (V0): a step without speculation"),
    ("prepare_model_input", "vllm/worker", "request", "vllm/worker/model_runner.py (V0): prepare_model_input"),
    # ... the engine core and the front end taking a request (vllm/v1/engine/core.py, async_llm.py, processor.py /
    # input_processor.py, output_processor.py, core_client.py) and the KV-cache manager serving it
    ("add_request", "vllm/v1/engine", "request", "v1/engine/core.py EngineCore.add_request, async_llm.py AsyncLLM.add_request"),
    ("preprocess_add_request", "vllm/v1/engine", "request", "vllm/v1/engine/core.py: EngineCore.preprocess_add_request"),
    ("process_input_sockets", "vllm/v1/engine", "request", "vllm/v1/engine/core.py: EngineCoreProc.process_input_sockets"),
    ("process_output_sockets", "vllm/v1/engine", "request", "vllm/v1/engine/core.py: EngineCoreProc.process_output_sockets"),
    ("process_inputs", "vllm/v1/engine", "request", "v1/engine/processor.py, input_processor.py: process_inputs"),
    ("_validate_params", "vllm/v1/engine", "request", "v1/engine/processor.py: _validate_params"),
    ("_validate_model_inputs", "vllm/v1/engine", "request", "v1/engine/processor.py: _validate_model_inputs"),
    ("_validate_model_input", "vllm/v1/engine", "request",
     "v1/engine/processor.py, input_processor.py: _validate_model_input (a request's prompt against max_model_len)"),
    # V0's request intake (vllm/engine/llm_engine.py 0.6+, async_llm_engine.py): run only for an added request
    ("_validate_model_inputs", "vllm/engine", "request", "vllm/engine/llm_engine.py (V0): _validate_model_inputs"),
    ("_validate_model_input", "vllm/engine", "request", "vllm/engine/llm_engine.py (V0): _validate_model_input"),
    ("_add_processed_request", "vllm/engine", "request", "vllm/engine/llm_engine.py (V0): _add_processed_request"),
    ("add_request_async", "vllm/engine", "request", "vllm/engine/async_llm_engine.py (V0): add_request_async"),
    ("process_outputs", "vllm/v1/engine/output_processor.py", "request", "v1/engine/output_processor.py: process_outputs"),
    ("get_output_async", "vllm/v1/engine/core_client.py", "request", "v1/engine/core_client.py: get_output_async"),
    ("get_computed_blocks", "vllm/v1/core", "request", "vllm/v1/core/kv_cache_manager.py: get_computed_blocks"),
    ("get_new_blocks", "vllm/v1/core", "request", "vllm/v1/core/block_pool.py: BlockPool.get_new_blocks"),
    ("hash_request_tokens", "vllm/v1/core", "request", "vllm/v1/core/kv_cache_utils.py: hash_request_tokens"),
    # Ray Serve's replica (ray/serve/_private/replica.py, 2.7 -> 2.4x): its request handlers run the deployment's
    # method for one request (its constructor runs under initialize_and_get_metadata instead), round 13
    ("handle_request", "ray/serve/_private/replica.py", "request", "Ray Serve ReplicaActor.handle_request"),
    ("handle_request_streaming", "ray/serve/_private/replica.py", "request",
     "Ray Serve ReplicaActor.handle_request_streaming"),
    ("handle_request_with_rejection", "ray/serve/_private/replica.py", "request",
     "Ray Serve ReplicaActor.handle_request_with_rejection"),
    ("_process_input_queue", "vllm/v1/engine", "request", "v1/engine/core.py: EngineCoreProc.run_busy_loop's input step"),
    # round 23: Ray Serve LLM's server (ray/llm/_internal/serve/deployments/llm/llm_server.py): a request's
    # prediction and its error handler
    ("_predict", "ray/llm/_internal/serve/deployments/llm/", "request", "ray.llm LLMServer._predict (one request)"),
    ("handle_failure", "ray/llm/_internal/serve/deployments/utils/", "request",
     "ray.llm error_handling_utils.py: a request's stream"),
    # round 23: FastChat's vLLM model worker (fastchat/serve/vllm_worker.py): its HTTP handlers and the worker's
    # generate / generate_stream run one request each (the engine is built at the module's start, not here)
    ("api_generate", "fastchat/serve/vllm_worker.py", "request", "FastChat vllm_worker.py: api_generate"),
    ("api_generate_stream", "fastchat/serve/vllm_worker.py", "request", "FastChat vllm_worker.py: api_generate_stream"),
    ("generate", "fastchat/serve/vllm_worker.py", "request", "FastChat vllm_worker.py: VLLMWorker.generate"),
    ("generate_stream", "fastchat/serve/vllm_worker.py", "request", "FastChat vllm_worker.py: VLLMWorker.generate_stream"),
    # round 12: a request's media fetched from its URL (multimodal/utils.py 0.6 -> 0.2x, media/connector.py after)
    ("fetch_image", "vllm/multimodal", "request", "multimodal/utils.py: fetch_image (0.5+), MediaConnector.fetch_image"),
    ("load_from_url", "vllm/multimodal", "request", "MediaConnector.load_from_url (0.8+): every fetch_* of a request"),
    ("load_from_url_async", "vllm/multimodal", "request", "MediaConnector.load_from_url_async (0.8+)"),
    ("execute_model_spmd", "vllm/executor", "request", "vllm/executor/ray_utils.py (V0): RayWorkerWrapper.execute_model_spmd"),
    ("execute_model_ray", "vllm/v1/executor", "request", "vllm/v1/executor/ray_utils.py: RayWorkerWrapper.execute_model_ray"),
    # ... and the V1 model runner's KV-cache allocation and graph capture (gpu_model_runner.py, parallel_state.py)
    ("_allocate_kv_cache_tensors", "vllm/v1/worker", "engine_init", "gpu_model_runner.py: _allocate_kv_cache_tensors"),
    ("_reshape_kv_cache_tensors", "vllm/v1/worker", "engine_init", "gpu_model_runner.py: _reshape_kv_cache_tensors"),
    ("initialize_kv_cache_tensors", "vllm/v1/worker", "engine_init", "gpu_model_runner.py: initialize_kv_cache_tensors"),
    ("initialize_attn_backend", "vllm/v1/worker", "engine_init", "gpu_model_runner.py: initialize_attn_backend"),
    ("may_reinitialize_input_batch", "vllm/v1/worker", "engine_init", "gpu_model_runner.py: may_reinitialize_input_batch"),
    ("_capture_cudagraphs", "vllm/v1/worker", "engine_init", "gpu_model_runner.py: _capture_cudagraphs"),
    ("graph_capture", "vllm/distributed/parallel_state.py", "engine_init", "parallel_state.py: graph_capture (CUDA graphs)"),
    # round 12 (gpu_model_runner.py 0.10 -> 0.26): the attention backends' set-up and the CUDA-graph passes
    ("initialize_metadata_builders", "vllm/v1/worker", "engine_init", "gpu_model_runner.py: initialize_kv_cache"),
    ("_check_and_update_cudagraph_mode", "vllm/v1/worker", "engine_init", "gpu_model_runner.py: initialize_attn_backend"),
    ("initialize_cudagraph_capture", "vllm/v1/worker", "engine_init", "gpu_model_runner.py (0.10)"),
    ("profile_cudagraph_memory", "vllm/v1/worker", "engine_init", "gpu_model_runner.py: determine_available_memory"),
    ("_init_minimal_kv_cache_for_profiling", "vllm/v1/worker", "engine_init", "gpu_model_runner.py (0.2x): profiling"),
    ("_warmup_and_capture", "vllm/v1/worker", "engine_init", "gpu_model_runner.py (0.2x): capture_model"),
    # round 21: the Ray executors' future of a scheduled batch (v1/executor/ray_distributed_executor.py, ray_utils.py
    # FutureWrapper "a wrapper around a Ray output reference to meet the interface of .execute_model()"): its
    # result() is a model step's output, awaited by the engine core's batch-queue step (pipeline parallelism)
    ("result", "vllm/v1/executor/ray_", "request", "v1 Ray executor: FutureWrapper.result (execute_model's output)"),
    # round 19: the multi-modal sizing done once at start-up from dummy inputs - the registry's maximum tokens per
    # item and its dummy data (multimodal/registry.py 0.6 -> 0.2x: get_max_multimodal_tokens, get_max_tokens_*,
    # get_dummy_mm_inputs, get_decoder_dummy_data / get_encoder_dummy_data; multimodal/profiling.py's profiler),
    # the encoder budget (v1/core/encoder_cache_manager.py compute_encoder_budget / compute_mm_encoder_budget, and
    # multimodal/encoder_budget.py get_mm_max_toks_per_item / MultiModalBudget, 0.2x), which the model runner, the
    # scheduler and the front end build before serving (its reset_cache, run later, is not listed)
    ("get_max_multimodal_tokens", "vllm/multimodal", "engine_init", "multimodal/registry.py (0.6 -> 0.10)"),
    ("get_max_tokens_by_modality", "vllm/multimodal", "engine_init", "multimodal/registry.py"),
    ("get_max_tokens_per_item_by_modality", "vllm/multimodal", "engine_init", "multimodal/registry.py"),
    ("get_max_tokens_per_item_by_nonzero_modality", "vllm/multimodal", "engine_init", "multimodal/registry.py"),
    ("get_dummy_mm_inputs", "vllm/multimodal", "engine_init", "multimodal/registry.py (0.2x): dummy inputs"),
    ("get_decoder_dummy_data", "vllm/multimodal", "engine_init", "multimodal/registry.py: the profiling run's data"),
    ("get_encoder_dummy_data", "vllm/multimodal", "engine_init", "multimodal/registry.py: the profiling run's data"),
    ("get_mm_max_toks_per_item", "vllm/multimodal", "engine_init", "multimodal/encoder_budget.py (0.2x)"),
    ("__init__", "vllm/multimodal/encoder_budget.py", "engine_init", "multimodal/encoder_budget.py: MultiModalBudget"),
    ("compute_encoder_budget", "vllm/v1/core/encoder_cache_manager.py", "engine_init", "encoder_cache_manager.py"),
    ("compute_mm_encoder_budget", "vllm/v1/core/encoder_cache_manager.py", "engine_init", "encoder_cache_manager.py"),
    ("get_dummy_data", "vllm/multimodal/profiling.py", "engine_init", "multimodal/profiling.py: MultiModalProfiler"),
    ("get_mm_max_tokens", "vllm/multimodal/profiling.py", "engine_init", "multimodal/profiling.py: MultiModalProfiler"),
    # round 19: the tokenizer wrapped once it is loaded (transformers_utils/tokenizer.py get_cached_tokenizer, 0.4 ->
    # 0.12; vllm/tokenizers/ after the move), called only by get_tokenizer (above): a tokenizer vLLM cannot wrap is
    # the config's, as one that does not load
    ("get_cached_tokenizer", "vllm/transformers_utils", "config", "transformers_utils/tokenizer.py: get_tokenizer's"),
    ("get_cached_tokenizer", "vllm/tokenizers", "config", "vllm/tokenizers/ (0.13+): get_tokenizer's"),
    # round 19: callers that generate with an engine they built before (the engine exists, a batch is being
    # generated): verl's rollout (ActorRolloutRefWorker / the rollouts' generate_sequences; its fused Ray actor
    # WorkerDict binds each worker method as "<role>_<method>", verl/single_controller/ray/base.py), lm-eval's vLLM
    # models (lm_eval/models/vllm_causallms.py, vllm_vlms.py: generate_until, loglikelihood, _model_generate,
    # _loglikelihood_tokens, _parse_logprobs - the LM is built in simple_evaluate before evaluate runs requests)
    ("generate_sequences", "verl/", "request", "verl: the rollout's generate_sequences"),
    ("actor_rollout_generate_sequences", "verl/", "request", "verl WorkerDict: actor_rollout + generate_sequences"),
    ("rollout_generate_sequences", "verl/", "request", "verl WorkerDict: rollout + generate_sequences"),
    ("_model_generate", "lm_eval/models/vllm", "request", "lm_eval/models/vllm_causallms.py: VLLM._model_generate"),
    ("_multimodal_model_generate", "lm_eval/models/vllm", "request", "lm_eval/models/vllm_vlms.py"),
    ("generate_until", "lm_eval/models/vllm", "request", "lm_eval/models/vllm_causallms.py, vllm_vlms.py"),
    ("_loglikelihood_tokens", "lm_eval/models/vllm", "request", "lm_eval/models/vllm_causallms.py"),
    ("_parse_logprobs", "lm_eval/models/vllm", "request", "lm_eval/models/vllm_causallms.py: a request's logprobs"),
    # round 22: sleep mode (0.7.3+: LLM.sleep/wake_up, LLMEngine/AsyncLLM/EngineCore, the executors' and workers'
    # sleep/wake_up, device_allocator/cumem.py CuMemAllocator): only an engine that had started can be put to sleep
    # and woken - an RL trainer's rollout between two generation phases; and verl's rollout servers that call them
    ("wake_up", "vllm/", "request", "sleep mode: LLM / engines / executors / workers / CuMemAllocator.wake_up"),
    ("sleep", "vllm/", "request", "sleep mode: LLM / engines / executors / workers / CuMemAllocator.sleep"),
    ("wake_up", "verl/workers/rollout", "request", "verl: the vLLM rollout woken for a generation phase"),
    ("sleep", "verl/workers/rollout", "request", "verl: the vLLM rollout put to sleep after a generation phase"),
)

# files whose every function belongs to one stage: a frame of one of them places the traceback even when its
# function is not in FRAMES (the model loaders and weight_utils.py run only while the weights load; EngineArgs and the
# HF config helpers only while the config is built): (part of the frame's file path, stage, source)
FRAME_FILES = (
    ("vllm/model_executor/model_loader/weight_utils.py", "weight_loading", "model_loader/weight_utils.py (0.4+)"),
    ("vllm/model_executor/weight_utils.py", "weight_loading", "vllm/model_executor/weight_utils.py (<=0.3)"),
    ("vllm/model_executor/model_loader/loader.py", "weight_loading", "model_loader/loader.py (0.4 -> 0.9)"),
    ("vllm/model_executor/model_loader/default_loader.py", "weight_loading", "model_loader/default_loader.py (0.9+)"),
    ("vllm/model_executor/model_loader/base_loader.py", "weight_loading", "model_loader/base_loader.py (0.9+)"),
    ("vllm/model_executor/model_loader/bitsandbytes_loader.py", "weight_loading", "model_loader (0.9+)"),
    ("vllm/model_executor/model_loader/gguf_loader.py", "weight_loading", "model_loader (0.9+)"),
    ("vllm/model_executor/model_loader/dummy_loader.py", "weight_loading", "model_loader (0.9+)"),
    ("vllm/model_executor/model_loader/sharded_state_loader.py", "weight_loading", "model_loader (0.9+)"),
    ("vllm/model_executor/model_loader/runai_streamer_loader.py", "weight_loading", "model_loader (0.9+)"),
    ("vllm/model_executor/model_loader/tensorizer_loader.py", "weight_loading", "model_loader (0.9+)"),
    # round 61: vLLM's parameter classes (model_executor/parameter.py, 0.5.4 -> current): made while the model is
    # built (the layers' create_weights), filled by the layers' weight loaders (_assert_and_load, load_*_weight)
    ("vllm/model_executor/parameter.py", "weight_loading", "model_executor/parameter.py: BasevLLMParameter & co."),
    ("vllm/engine/arg_utils.py", "config", "vllm/engine/arg_utils.py: EngineArgs"),
    ("vllm/transformers_utils/config.py", "config", "transformers_utils/config.py: the HF config helpers"),
    ("transformers/models/auto/configuration_auto.py", "config", "transformers: AutoConfig, CONFIG_MAPPING (round 12)"),
    ("transformers/models/auto/tokenization_auto.py", "config", "transformers: AutoTokenizer, get_tokenizer_config"),
    ("safetensors/torch.py", "weight_loading", "the safetensors package's torch loaders (load_file, load)"),
    ("torch/distributed/rendezvous.py", "distributed_init", "PyTorch: init_process_group's rendezvous handlers (TCPStore)"),
    # the per-architecture config fix-ups (VerifyAndUpdateConfig classes), run while VllmConfig is built
    ("vllm/model_executor/models/config.py", "config", "model_executor/models/config.py (0.10+): verify_and_update_config"),
    # NVML's Python bindings (vllm/third_party/pynvml.py since 0.8, nvidia-ml-py's pynvml.py before): every call is
    # a device query; the custom all-reduce's NVLink check (is_fully_connected) shows its distributed_init frames
    ("pynvml", "cuda_init", "vllm/third_party/pynvml.py, nvidia-ml-py pynvml.py: nvmlInit, nvmlDeviceGet*"),
    # torch.compile of the model: vLLM compiles in the start-up's profiling / warm-up / capture passes (0.6 ->
    # 0.33), never for a request (the CUDA-graph and dispatch wrappers that also run per batch are not listed)
    ("vllm/compilation/backends.py", "engine_init", "compilation/backends.py: VllmBackend, PiecewiseCompileInterpreter"),
    ("vllm/compilation/compiler_interface.py", "engine_init", "compilation/compiler_interface.py: InductorAdaptor.compile"),
    ("torch/_inductor/compile_fx.py", "engine_init", "PyTorch: inductor's compile_fx, called by vLLM's compile above"),
    # round 38: inductor's code generation (torch/_inductor/codegen/*.py: the Triton and C++ kernels' source, written
    # while compile_fx lowers the graph); its runtime (torch/_inductor/runtime/, a kernel's launch) is not listed
    ("torch/_inductor/codegen/", "engine_init", "PyTorch: inductor's codegen, run by compile_fx"),
    # round 28: the multi-modal profiler and dummy-input builders (multimodal/profiling.py 0.7 -> current:
    # MultiModalProfiler, BaseDummyInputsBuilder get_dummy_processor_inputs, _get_dummy_mm_inputs): the start-up's
    # memory profiling and encoder-budget sizing; a request's inputs never pass through them
    ("vllm/multimodal/profiling.py", "engine_init", "multimodal/profiling.py: dummy inputs of the start-up's profiling"),
    # ... and Dynamo's tracing of the compiled forward on its first call (round nine: the same start-up passes)
    ("torch/_dynamo/convert_frame.py", "engine_init", "PyTorch: Dynamo's convert_frame (_compile, compile_inner)"),
    ("torch/_dynamo/symbolic_convert.py", "engine_init", "PyTorch: Dynamo's InstructionTranslator tracing the bytecode"),
)

# frames of device discovery (mapped to cuda_init above): a failure inside one outranks the config (and environment)
# frames above it - vLLM's config asks the platform lazily, so "no such device" surfaces while the config is built,
# but what failed is the device query - and stays below any later stage's frames (a device query while loading the
# weights is that stage's); "device_query" stands for them among a traceback's frame stages
# The Ray executors' ``_init_workers_ray`` (executor/ray_gpu_executor.py 0.4-0.6, ray_distributed_executor.py
# 0.7-0.10, v1/executor/ray_executor.py 0.11+) starts the workers, then runs init_device and load_model on them
# (``_run_workers`` / ``collective_rpc``; LLMEngine's own in 0.2-0.3): the same rule - cuda_init unless a later step's frame shows under it.
# PyTorch's torch/cuda/__init__.py (_lazy_init, set_device: round 28) initialises CUDA at the first call of whichever
# step makes it - the device query's rule: a model being built when CUDA is first asked for is weight loading
DEVICE_QUERY = "device_query"
# (round 39) ... but a frame of ``_init_workers_ray`` with no later step's frame under it says only that one of the
# steps it runs failed - placement, device init, distributed init or the weights: cuda_init, the earliest, at medium
WORKER_STEPS = "worker_steps"
# (round 61) vLLM's RPC to its workers (collective_rpc / _run_workers -> run_method, V0's execute_method) running a
# method that is not vLLM's - a caller's worker extension (TRL's update_named_param, OpenRLHF's update_weight): vLLM
# runs only its own worker methods while it starts, so the engine was up and serving its caller; every frame under it
# is that call's (load_weights of a weight sync is not the start-up's weight loading): request.  A caller whose
# extension lives in a "vllm_*" folder (verl's vllm_rollout/) reads as a platform plugin's worker and is not marked
CALLER_RPC = "caller_rpc"
RPC_FUNCS = ("run_method", "execute_method")
DEVICE_QUERY_PATHS = ("vllm/platforms/", "pynvml", "ray_gpu_executor.py", "ray_distributed_executor.py",
                      "executor/ray_executor.py", "vllm/engine/llm_engine.py", "torch/cuda/__init__.py")

# the source line printed under a frame whose ``File`` line was cut from a paste: (substring, stage, where in vLLM)
SOURCE_LINES = (
    # round 62: the engine's scheduler, built once the KV cache is sized (V0 LLMEngine.__init__ after
    # _initialize_kv_caches, 0.2 -> 0.10; V1 EngineCore.__init__ after _initialize_kv_caches; V0's Scheduler.__init__
    # building its block manager; vllm/env_override.py's copy of inductor's Scheduler runs in torch.compile at start-up)
    ("self.scheduler = Scheduler(", "engine_init", "engine/llm_engine.py, v1/engine/core.py: the engine's scheduler"),
    ("self.scheduler: SchedulerInterface = Scheduler(", "engine_init", "v1/engine/core.py EngineCore.__init__"),
    ("self.block_manager = BlockSpaceManagerImpl(", "engine_init", "core/scheduler.py (V0) Scheduler.__init__"),
    # every model's load_weights (vllm/model_executor/models/*.py, 0.2 -> current): "param = params_dict[name]"
    ("params_dict[name]", "weight_loading", "models/*.py load_weights: param = params_dict[name]"),
    # the weight loaders' calls ("weight_loader(param, loaded_weight", models/*.py load_weights)
    ("weight_loader(param, loaded_weight", "weight_loading", "models/*.py load_weights: weight_loader(param, ...)"),
    # round 19: lm-eval's evaluate (lm_eval/evaluator.py, 0.4 -> current) runs every request type through the model
    # it was given, built before (simple_evaluate): "resps = getattr(lm, reqtype)(cloned_reqs)"
    ("getattr(lm, reqtype)(cloned_reqs)", "request", "lm_eval/evaluator.py evaluate: the model's requests"),
    # ... and verl's trainers calling their rollout worker group for a batch (verl/trainer/ppo/ray_trainer.py fit,
    # _validate: "self.actor_rollout_wg.generate_sequences(gen_batch)", async_rollout_manager's the same)
    (".generate_sequences", "request", "verl trainers: the rollout's generate_sequences(_loop, _async) for a batch"),
    # round 31: the OpenAI front end's handlers being built (entrypoints/openai/serving_*.py: OpenAIServingChat,
    # OpenAIServingCompletion, OpenAIServingEmbedding, OpenAIServingModels, 0.4 -> current), which vLLM's
    # init_app_state and the wrappers that embed the front end (RunPod's worker-vllm, ...) do once, before serving
    ("OpenAIServingChat(", "api_ready", "entrypoints/openai/serving_chat.py: the chat handler's construction"),
    ("OpenAIServingCompletion(", "api_ready", "entrypoints/openai/serving_completion.py: its construction"),
    ("OpenAIServingEmbedding(", "api_ready", "entrypoints/openai/serving_embedding.py: its construction"),
    ("OpenAIServingModels(", "api_ready", "entrypoints/openai/serving_models.py (0.7+): its construction"),
    # round 30: the model registry's inspection of an architecture (models/registry.py _LazyRegisteredModel
    # inspect_model_cls, 0.7 -> current: "_run_in_subprocess(lambda: _ModelInfo.from_model_cls(self.load_model_cls()))"),
    # run while ModelConfig resolves the architecture
    ("_ModelInfo.from_model_cls(self.load_model_cls())", "config", "models/registry.py: inspect_model_cls's lambda"),
    # round 33: V1's GPU model runner moving a scheduled step's sampled tokens to the host (v1/worker/gpu_model_runner.py
    # execute_model 0.8 -> 0.9, _bookkeeping_sync 0.10+: "valid_sampled_token_ids = sampled_token_ids.tolist()"); the
    # start-up's profiling and graph capture run _dummy_run / _dummy_sampler_run, never this: a step of requests
    ("valid_sampled_token_ids = sampled_token_ids.tolist()", "request",
     "v1/worker/gpu_model_runner.py execute_model / _bookkeeping_sync: a scheduled step's sampled tokens"),
    # round 57: the engine arguments built from keywords (entrypoints/llm.py LLM.__init__ "engine_args =
    # EngineArgs(", 0.1 -> current; a caller's or the API server's AsyncEngineArgs(...)): the config is being made
    ("EngineArgs(", "config", "entrypoints/llm.py LLM.__init__ and callers: EngineArgs / AsyncEngineArgs(...)"),
    # round 35: Starlette's HTTP-only paths that gather a task group's errors (starlette/middleware/base.py
    # BaseHTTPMiddleware.__call__ after its "scope['type'] != 'http'" return, responses.py StreamingResponse.__call__,
    # 0.28+): a request was being answered (vLLM's API server adds HTTP middlewares)
    ("with collapse_excgroups():", "request", "starlette BaseHTTPMiddleware / StreamingResponse: an HTTP request"),
    # round 43: the RPC front's bind (entrypoints/openai/rpc/server.py AsyncEngineRPCServer.__init__, 0.5.4-0.5.5:
    # 'self.socket.bind(f"tcp://127.0.0.1:{port}")'), right after the engine it serves was built
    ('self.socket.bind(f"tcp://127.0.0.1:{port}")', "api_ready", "entrypoints/openai/rpc/server.py: the RPC front's bind"),
    # round 36: the engine core building its structured-output manager (v1/engine/core.py EngineCore.__init__, 0.8+),
    # right after _initialize_kv_caches: the last step of the engine's init (the backend's tokenizer info)
    ("self.structured_output_manager = StructuredOutputManager(vllm_config)", "engine_init",
     "v1/engine/core.py EngineCore.__init__: after the KV caches"),
)

# a frame's source line that names the worker method the executor runs on every worker: V0's executors
# (vllm/executor/*_executor.py 0.4 -> 0.10: ``self._run_workers("init_device")``, ``_run_workers("load_model", ...)``,
# ``_run_workers_async``; vllm/engine/llm_engine.py 0.2 -> 0.3 ``self._run_workers("init_model")``) and the V1
# executors' ``collective_rpc("init_device")`` / ``collective_rpc("determine_available_memory")``
# (v1/executor/abstract.py, multiproc_executor.py, ray_distributed_executor.py, uniproc_executor.py).  The paste
# may cut the frames of the worker that raised (a Ray task error, a worker process): the call site still names the
# step; the method is looked up in FRAMES by name, like the logger lines below
EXECUTOR_CALLS = r"""\b(?:_run_workers(?:_async)?|collective_rpc)\(\s*["'](\w+)["']"""
# the source line of a vLLM frame (round 8) names the method it calls - the frame below it, which a cut paste may
# lack: ``self._initialize_kv_caches()`` (V0 llm_engine.py LLMEngine.__init__), ``return
# self.driver_worker.determine_num_available_blocks()`` (V0 executors), ``self.model_runner.load_model()``
# (worker.py / gpu_worker.py), ``loaded_weights = model.load_weights(`` (model_loader), ``torch.cuda.set_device(``
# (init_device), 0.2 -> current; round 20: a module function called by its bare name too
# (``init_worker_distributed_environment(self.vllm_config, ...`` in init_device).  A call of a name with an
# underscore (vLLM's own names; ``create``, ``step``, ``generate`` and a client's ``completions.create(`` are left
# out), looked up in FRAMES by name like a worker method: only when every row of that name agrees; round 25: an
# assignment that unpacks a tuple (``num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(``,
# V1 core.py EngineCore.__init__); round 43: a call a condition opens (``if (model_is_embedding(args.model, ...``,
# api_server.py 0.5-0.6 build_async_engine_client)
CALLS = (r"^(?:[\w.\[\]]+(?:\s*,\s*[\w.\[\]]+)*\s*(?::\s*[\w.\[\], ]+)?=\s*)?"
         r"(?:return |await |yield from |(?:el)?if \(?|not )*"
         r"(?:\w+\.)*(\w+_\w+)\(")

# logger lines that name the worker method that failed; the method is looked up in FRAMES by name
METHOD_MESSAGES = (
    # vllm/executor/multiproc_worker_utils.py (V0): "Exception in worker %s while processing method %s."
    r"while processing method '?(\w+)'?",
    # vllm/worker/worker_base.py execute_method: "Error executing method %r. This might cause deadlock ..."
    r"Error executing method '?(\w+)'?",
    # Ray's task error header (ray/exceptions.py RayTaskError: "ray::<Actor>.<method>() (pid=..., ip=...)")
    r"ray::[\w:.-]*?\.(\w+)\(\) \(pid=",
    # the V1 executor's collective_rpc (v1/executor/multiproc_executor.py): "RPC call to %s timed out."
    r"RPC call to '?(\w+)'? timed out",
    # round 22: the V1 engine core's utility calls (v1/engine/core.py _handle_client_request / _invoke_utility_method:
    # logger.exception "Invocation of %s method failed"; the client's "Call to %s method failed: ...")
    r"Invocation of '?(\w+)'? method failed",
    r"Call to '?(\w+)'? method failed",
)

# Serving-only frames: (part of the frame's file path, stage, where it is in vLLM's source).  This code runs for
# every batch or every request; at start-up it runs only inside the profiling / warm-up / capture passes, whose
# own frames (``profile_run``, ``_dummy_run``, ``determine_available_memory``, ``capture_model``, ... in FRAMES)
# then show and win (the earliest mapped stage wins, and mapped frames win over these).  A traceback that also
# shows a start-up function of STARTUP_FUNCS (building the model, starting the server) is not placed by these.
SERVING_FRAMES = (
    ("vllm/model_executor/models/", "request", "the models' forward passes (vllm/model_executor/models/*.py; not "
     "registry.py, NOT_SERVING_FILES)"),
    ("vllm/model_executor/layers/", "request",
     "layers run by the forward pass: attention, linear, fused MoE, logits processor, V0 sampler"),
    ("vllm/attention/", "request", "attention backends and ops (vllm/attention/, <=0.11)"),
    ("vllm/v1/attention/", "request", "V1 attention backends and their metadata builders (vllm/v1/attention/)"),
    ("vllm/v1/sample/", "request", "the V1 sampler and its logits processors (vllm/v1/sample/)"),
    ("vllm/v1/structured_output/", "request", "per-request grammar compilation (vllm/v1/structured_output/)"),
    ("vllm/model_executor/guided_decoding/", "request",
     "V0's guided decoding: a request's logits processors (get_guided_decoding_logits_processor, 0.4 -> 0.10)"),
    ("vllm/entrypoints/", "request",
     "the OpenAI server's request handlers, chat-template rendering and (<=0.11) tool parsers (vllm/entrypoints/)"),
    ("vllm/tool_parsers/", "request", "tool-call parsers (vllm/tool_parsers/, >=0.12)"),
    ("vllm/reasoning/", "request", "reasoning parsers (vllm/reasoning/)"),
    ("vllm/vllm_flash_attn/", "request", "the flash-attention kernels' Python wrappers (vllm/vllm_flash_attn/)"),
    ("vllm/sampling_params.py", "request", "SamplingParams built and checked for each request (vllm/sampling_params.py)"),
    ("vllm/outputs.py", "request", "a request's outputs built from its state (RequestOutput.from_seq_group, "
     "PoolingRequestOutput; vllm/outputs.py, round 13): the start-up passes build none"),
    # the structured-output backends vLLM calls for each request's grammar (xgrammar, outlines, lm-format-enforcer)
    ("xgrammar/", "request", "xgrammar: compiling a request's grammar"),
    ("outlines/", "request", "outlines: compiling a request's guide"),
    ("lmformatenforcer/", "request", "lm-format-enforcer: a request's token filter"),
    ("jinja2/", "request", "jinja2: a chat template rendered (shared: the chat-template warm-up)"),
    ("transformers/utils/chat_template_utils.py", "request", "transformers' chat-template rendering (as jinja2)"),
    # round 12 (0.8 -> 0.34): the V1 front end's request checks (processor.py, input_processor.py: process_inputs and
    # its _validate_* helpers), the V1 scheduler and KV-cache manager, V0's scheduler and block managers (vllm/core/);
    # their __init__ runs at start-up (the veto below)
    ("vllm/v1/engine/processor.py", "request", "V1 Processor: a request's inputs and parameters checked"),
    ("vllm/v1/engine/input_processor.py", "request", "V1 InputProcessor (0.11+): as processor.py"),
    ("vllm/v1/core/sched/", "request", "the V1 scheduler (sched/scheduler.py, async_scheduler.py, utils.py)"),
    ("vllm/v1/core/kv_cache_manager.py", "request", "KVCacheManager: a request's blocks"),
    ("vllm/v1/core/block_pool.py", "request", "BlockPool: a request's blocks"),
    ("vllm/v1/core/single_type_kv_cache_manager.py", "request", "the per-group KV-cache managers: a request's blocks"),
    ("vllm/v1/core/kv_cache_coordinator.py", "request", "KVCacheCoordinator (0.10+): a request's blocks"),
    ("vllm/core/", "request", "V0's scheduler and block managers (vllm/core/, <=0.10)"),
    ("llguidance/", "request", "llguidance: the guidance backend compiling a request's grammar (V1, 0.8+)"),
    # a request's outputs detokenized and their logprobs built (V1 output_processor's helpers; V0's output processors)
    ("vllm/v1/engine/detokenizer.py", "request", "V1 IncrementalDetokenizer (0.8+)"),
    ("vllm/v1/engine/logprobs.py", "request", "V1 LogprobsProcessor (0.8+)"),
    ("vllm/transformers_utils/detokenizer", "request", "detokenizer.py, detokenizer_utils.py (0.4 -> 0.12)"),
    ("vllm/tokenizers/detokenizer_utils.py", "request", "vllm/tokenizers/detokenizer_utils.py (0.13+)"),
    ("vllm/engine/output_processor/", "request", "V0's output processors: stop checks, single / multi step (0.4 -> 0.10)"),
    # ... and code that serves requests but also runs in the start-up passes (shared, below): the multi-modal
    # processors (a request's media, and the profiling run's dummy inputs), LoRA's layers and Punica kernels (the
    # profiling run with dummy adapters), the drafters of speculative decoding (their dummy_run)
    ("vllm/multimodal/processing", "request", "multimodal/processing.py, processing/ (0.6 -> 0.34)"),
    ("vllm/lora/", "request", "lora/layers, punica_wrapper, ops, worker_manager (0.4 -> 0.34)"),
    ("vllm/v1/spec_decode/", "request", "V1 drafters: eagle.py, medusa.py, ngram_proposer.py"),
    ("vllm/spec_decode/", "request", "V0 speculative decoding (0.4 -> 0.10)"),
)
# files under a serving path that hold no serving code (round 21): the model registry resolves and inspects
# architectures while the config is built and the model class is chosen for loading (models/registry.py 0.6 ->
# current), never in a forward pass
NOT_SERVING_FILES = ("vllm/model_executor/models/registry.py",)
# serving code that start-up runs too (issue 35, round three): the forward pass, attention, the V1 sampler and the
# flash-attention wrappers run in the profiling pass (V0 ``profile_run`` -> ``execute_model``; V1 ``profile_run``,
# ``_dummy_run``, ``_dummy_sampler_run``), in torch.compile's warm-up and in CUDA-graph capture (0.5 -> 0.33);
# chat-template rendering (``entrypoints/chat_utils.py``, ``_preprocess_chat``, ``vllm/renderers/``) runs in the
# API server's chat-template warm-up before it listens (vLLM PR 30700, 0.14 on: "Warming up chat template
# processing...").  Seen alone in a traceback whose start the paste cut (so a start-up caller may be missing), they
# say "request" only with confidence low; a whole traceback without a start-up function, or a request-only frame
# (the handlers, parsers, structured output, SamplingParams), keeps medium.  (path part or ``func:`` name, source)
SHARED_SERVING_FRAMES = (
    ("vllm/model_executor/models/", "forward passes: also the profiling run, compile warm-up, CUDA-graph capture"),
    ("vllm/model_executor/layers/", "layers of the forward pass: as above"),
    ("vllm/attention/", "attention backends (<=0.11): as above"),
    ("vllm/v1/attention/", "V1 attention backends and metadata builders: as above"),
    ("vllm/v1/sample/", "the V1 sampler: _dummy_sampler_run of the profiling run"),
    ("vllm/vllm_flash_attn/", "flash-attention wrappers: as above"),
    ("vllm/entrypoints/chat_utils.py", "chat-template rendering: also the API server's chat-template warm-up (0.14+)"),
    ("vllm/renderers/", "the renderers (>=0.16): their warmup renders a chat at API-server start"),
    ("vllm/multimodal/processing", "the processors: also the profiling run's dummy multi-modal inputs (round 12)"),
    ("vllm/lora/", "LoRA layers and kernels: also the profiling run with dummy adapters, V1's --lora-modules"),
    ("vllm/v1/spec_decode/", "V1 drafters: also their dummy_run in the profiling run and CUDA-graph capture"),
    ("vllm/spec_decode/", "V0 speculative decoding: also its profiling run"),
    ("jinja2/", "a chat template rendered: a request's, or the API server's chat-template warm-up (0.14+)"),
    ("transformers/utils/chat_template_utils.py", "transformers' apply_chat_template rendering: as jinja2"),
    ("func:_preprocess_chat", "serving_engine.py _preprocess_chat: called by the first chat-template warm-up (0.14)"),
)
# start-up functions that pass through the same files (building the model, starting the API server, CLI
# validation, warm-ups): with one of these in the traceback, serving-only frames place nothing
STARTUP_FUNCS = frozenset((
    "__init__", "load_weights", "run_server", "run_server_worker", "build_async_engine_client",
    "build_async_engine_client_from_engine_args", "setup_server", "validate_parsed_serve_args", "main", "<module>",
    "cmd", "from_engine_args", "from_vllm_config", "make_arg_parser", "create_engine_config", "warmup",
    "_warmup", "kernel_warmup", "_dummy_run", "profile_run", "capture_model",
))
# ... and the words of vLLM's start-up function names (weight_loader, create_weights, load_model, _dummy_run,
# profile_run, capture_model, kernel_warmup, init_device, initialize_kv_cache, ...): the same veto
STARTUP_FUNC_WORDS = r"weight|load|warm_?up|capture|profile|dummy|init"
