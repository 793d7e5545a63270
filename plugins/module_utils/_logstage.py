# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The collection's one classifier of vLLM logs: the first failing stage.

Every front (the ``log_stage`` module, the ``log_stage`` filter, the roles that capture a server log) calls
:func:`classify_files` or :func:`classify_text` here, so they all give the same answer.

How it reads a log (details and the rule list are in ``docs/classifier.md``):

* **Streaming.** A file is read once, in binary blocks; memory holds one block, the bounded context of the
  tracebacks that are open and a bounded list of candidate errors, never the log.  A cheap prefilter (a few
  substring searches over the whole block, in C) skips the lines that cannot matter; only the lines it hits
  are decoded (``errors="replace"``) and parsed.  Inside an open traceback every line is read.
* **Wrappers** are stripped first: ANSI colours, CR/CRLF and tqdm carriage-return bars, ``docker compose``
  service prefixes, ``kubectl logs --timestamps`` RFC 3339 prefixes, journald prefixes, Ray's
  ``[repeated Nx across cluster]``, torchrun's ``--tee`` prefix (``[default0]:``; each worker is a stream
  of its own).
* **Formats** recognised: the vLLM formatter with or without the process tag (``(EngineCore_DP0 pid=1)``,
  ``(Worker_TP3 pid=1)``, ``(VllmWorker rank=1 pid=1)``, ``(RayWorkerWrapper pid=1, ip=...)``), untagged
  Python tracebacks, PyTorch c10/glog lines with or without ``[rankN]:``, NCCL ``host:pid:tid [dev] NCCL
  INFO/WARN``, uvicorn, Python-logging style lines of other libraries.
* **Rules.** Stage progress comes from vLLM's own marker lines; failures from signatures built from vLLM,
  PyTorch, NCCL, CUDA and container-runtime source strings.  The root cause is the earliest failure in time;
  wrapper errors (``Engine core initialization failed``, ``EngineDeadError`` after an earlier error, torchrun's
  ``ChildFailedError``, NCCL watchdog timeouts on surviving ranks) are consequences; torchrun stopping its
  workers, or being stopped by a signal from outside, is never a root cause.  An error after which the same
  log shows progress into a later stage did not stop the run and is reported as recovered.
* **NCCL communicators** are followed by their ``Init START`` / ``Init COMPLETE`` / ``Destroy COMPLETE`` lines
  (``NCCL_DEBUG=INFO``): without a failure, the summary names the nodes whose init never completed (a hang in
  distributed init), or says that every communicator was set up and destroyed again (the run ended).

Standard library only; imports on Python 3.9.
"""

from __future__ import annotations

import gzip
import os
import re

STAGES = ("environment", "config", "cuda_init", "distributed_init", "weight_loading", "engine_init",
          "api_ready", "request")
ANSWER_STAGES = STAGES + ("none", "unknown")
ERROR_CLASSES = ("oom", "cuda_error", "nccl_error", "driver_mismatch", "config_error", "timeout", "missing_file",
                 "import_error", "port_in_use", "illegal_memory_access", "engine_dead", "other")
_RANK = dict((s, i) for i, s in enumerate(STAGES))

BLOCK_SIZE = 8 * 1024 * 1024        # bytes read at once
MAX_SEGMENT = 64 * 1024             # a longer line is cut into pieces of this size
_MAX_CANDIDATES = 200               # per file, active candidate errors kept
_MAX_RECOVERED = 10
_MAX_CONSEQUENCES = 30
_MAX_HINTS = 10
_MAX_MSG_LINES = 20                 # message lines kept after an exception line
_MAX_CONTEXT = 12                   # lines of context returned with an error
_TB_IDLE_CLOSE = 60                 # foreign lines after which a quiet traceback is closed
_TB_FRAMES_CLOSE = 400              # foreign lines after which an unfinished traceback is closed
_MAX_STREAMS = 64
_MAX_LINE_CHARS = 2000              # a reported line is cut to this many characters
_TIE_SECONDS = 2.0                  # vLLM timestamps have one-second resolution
_MAX_AFTER_STOP = 30                # errors kept per answer from after a file's ``until`` cutoff

# --------------------------------------------------------------------------------------------------------------
# signatures
# --------------------------------------------------------------------------------------------------------------
# kind: F failure, V victim (a failure that usually follows another rank's death), C consequence (wrapper; can
# stand in for the root cause when nothing else is found), c weak consequence (never the root cause), H header
# (the real error is in the traceback that follows), h hang hint, W warning (kept as a hint), X client error
# (not a server failure; ignored).
# stage: "=S" the stage is S wherever it happened; ">S" the stage where it happened, at least S (S when the
# log shows no progress); "^S" the same, but "unknown" when the log shows no progress; "~S" the stage where it
# happened (S when the log shows no progress); "" the stage where it happened ("unknown" when the log shows no
# progress).
# flags: g generic (a more specific line of the same error wins), w also matched on WARNING lines, i also on
# INFO lines.


class _Sig(object):
    __slots__ = ("kind", "key", "rx", "cls", "mode", "stage", "flags", "hint", "sid")

    def __init__(self, sid, kind, key, rx, cls, stage, flags, hint):
        self.sid = sid
        self.kind = kind
        self.key = key
        self.rx = re.compile(rx) if rx else None
        self.cls = cls
        if stage and stage[0] in "=>~^":
            self.mode, self.stage = stage[0], stage[1:]
        else:
            self.mode, self.stage = "", None
        self.flags = flags
        self.hint = hint

    def match(self, text):
        if self.key not in text:
            return False
        return self.rx is None or self.rx.search(text) is not None


_SIG_TABLE = (
    # --- client errors (the server is healthy) --------------------------------------------------------------
    ("X", "maximum context length is", None, None, "", "w", None),
    # --- consequences: wrappers that report an earlier failure ---------------------------------------------
    ("C", "Engine core initialization failed", None, "engine_dead", "", "", "a wrapper: the root cause is the first error above it"),
    ("C", "WorkerProc initialization failed due to an exception in a background process", None, "engine_dead", "", "", None),
    ("C", "Frontend process failed during engine core initialization", None, "engine_dead", "", "", None),
    ("C", "Worker failed with error", r"Worker failed with error '", "engine_dead", "", "", None),
    ("C", "One or more workers failed", None, "engine_dead", "", "", None),
    ("C", "EngineDeadError", None, "engine_dead", "~request", "w", "the engine core died; look for the first error of the engine or a worker"),
    ("C", "AsyncEngineDeadError", None, "engine_dead", "~request", "w", None),
    ("C", "Engine loop has died", None, "engine_dead", "~request", "w", None),
    ("C", "is already dead, terminating server process", None, "engine_dead", "~request", "w", None),
    ("C", "Engine process (pid", r"Engine process \(pid \d+\) died", "engine_dead", "", "w", None),
    ("C", "Engine process failed to start", None, "engine_dead", "", "w", None),
    ("C", "died unexpectedly, shutting down client", r"Engine core proc \S+ died unexpectedly", "engine_dead", "", "w", None),
    ("C", "ChildFailedError", None, "other", "", "", "torchrun's summary; the failing rank's own error comes first"),
    ("C", "failed (exitcode:", r"failed \(exitcode: -?\d+\) local_rank: \d+", "other", "", "w", None),
    ("C", "The actor died", None, "engine_dead", "", "w", None),
    ("C", "RayActorError", None, "engine_dead", "", "w", None),
    ("C", "ActorDiedError", None, "engine_dead", "", "w", None),
    ("c", "engine core exited unexpectedly", None, "engine_dead", "", "w", None),
    ("c", "failed (engine dead)", None, "engine_dead", "", "w", None),
    ("c", "died, exit code:", r"Worker \S+ pid \d+ died, exit code: -?\d+", "engine_dead", "", "w", None),
    ("c", "The server had an error while processing your request", None, "engine_dead", "", "w", None),
    ("c", "Dumping input data for V1 LLM engine", None, "other", "", "", None),
    ("c", "Dumping scheduler output", None, "other", "", "", None),
    ("c", "Dumping scheduler stats", None, "other", "", "", None),
    ("c", "Root Cause (first observed failure)", None, "other", "", "", None),
    # torchrun (torch.distributed.elastic): stopping the other workers, and being stopped itself
    ("c", " closing signal SIG", None, "other", "", "w",
     "torchrun stops the other workers once one has failed or torchrun itself was stopped"),
    ("c", " death signal, shutting down workers", None, "other", "", "w",
     "torchrun was stopped from outside (a timeout wrapper, the scheduler or a user): see last_stage"),
    ("c", "SignalException: Process ", None, "other", "", "", None),
    ("c", "Executor failed.", r"Executor failed\.$", "engine_dead", "", "", None),
    # --- victims: what surviving ranks report after one rank died ------------------------------------------
    ("V", "remote process exited or there was a network error", None, "nccl_error", ">distributed_init", "w",
     "the victim side; look for the rank or node that failed first"),
    ("V", "ncclRemoteError", None, "nccl_error", ">distributed_init", "w", None),
    ("V", "Watchdog caught collective operation timeout", None, "timeout", ">distributed_init", "w",
     "NCCL watchdog on a surviving rank; look for the rank or node that failed first"),
    ("V", "Some NCCL operations have failed or timed out", None, "timeout", ">distributed_init", "w", None),
    ("V", "watchdog thread terminated with exception", None, "timeout", ">distributed_init", "w", None),
    ("V", "detected by watchdog", None, "timeout", ">distributed_init", "w", None),
    ("V", "Timeout at NCCL work", None, "timeout", ">distributed_init", "w", None),
    ("c", "we are taking the entire process down", None, "timeout", "", "w", None),
    ("V", "peer", r"Connection (?:reset|closed) by (?:remote )?peer", "nccl_error", ">distributed_init", "w", None),
    # --- headers: the real error is in the traceback that follows ------------------------------------------
    ("H", "WorkerProc failed to start", None, "other", "", "", None),
    ("H", "WorkerProc hit an exception", None, "other", "", "", None),
    ("H", "EngineCore failed to start", None, "engine_dead", "", "", None),
    ("H", "EngineCore encountered a fatal error", None, "engine_dead", "", "", None),
    ("H", "AsyncLLM output_handler failed", None, "engine_dead", "", "", None),
    ("H", "Exception in ASGI application", None, "other", "~request", "", None),
    ("H", "terminate called after throwing an instance of", None, "other", "", "", None),
    ("H", "Error executing method", r"Error executing method '?\w+'?\. This might cause deadlock", "other", "", "w", None),
    # --- environment: host, container runtime, driver, libraries, imports ----------------------------------
    ("F", "nvidia-container-cli", r"nvidia-container-cli: (?:initialization|requirement|detection) error", "driver_mismatch", "=environment", "w",
     "container runtime could not use the host driver (driver not loaded, or older than the image's CUDA requires)"),
    ("F", "nvidia-container-cli", r"nvidia-container-cli: \w+ error", "other", "=environment", "w", "NVIDIA container runtime error"),
    ("F", "could not select device driver", None, "other", "=environment", "w", "the NVIDIA container runtime is not configured for this engine"),
    ("F", "CUDA driver version is insufficient for CUDA runtime version", None, "driver_mismatch", "=environment", "w",
     "the host driver is older than the CUDA runtime in the image"),
    ("F", "driver on your system is too old", None, "driver_mismatch", "=environment", "w",
     "PyTorch was built for a newer CUDA than the host driver supports"),
    ("F", "Found no NVIDIA driver on your system", None, "driver_mismatch", "=environment", "w", "no usable NVIDIA driver in this container/host"),
    ("F", "unsupported display driver / cuda driver combination", None, "driver_mismatch", "=environment", "w",
     "CUDA error 803: user-mode driver and kernel module do not match"),
    ("F", "forward compatibility was attempted on non supported HW", None, "driver_mismatch", "=environment", "w",
     "CUDA error 804: forward-compatibility libraries on a GPU that does not support them"),
    ("F", "system not yet initialized", None, "cuda_error", "=environment", "w",
     "CUDA error 802: on NVSwitch/NVLink systems the Fabric Manager (and IMEX on GB200/GB300) is not running"),
    ("F", "cannot open shared object file", r"lib(?:cuda|nvidia-ml)\.so[.\d]*: cannot open shared object file", "driver_mismatch", "=environment", "w",
     "the driver libraries are not visible in this container"),
    ("F", "cannot open shared object file", None, "import_error", "~environment", "w", "a shared library of the install is missing"),
    ("F", "undefined symbol", None, "import_error", "~environment", "", "binary built against another torch/CUDA (ABI mismatch)"),
    ("F", "PackageNotFoundError", None, "import_error", "~environment", "", None),
    ("F", "ModuleNotFoundError", None, "import_error", "~environment", "", None),
    ("F", "No module named", None, "import_error", "~environment", "", None),
    ("F", "ImportError", None, "import_error", "~environment", "g", None),
    ("F", "Could not load logging config. File does not exist", None, "config_error", "=environment", "", None),
    ("F", "Only one platform plugin can be activated", None, "config_error", "=environment", "", None),
    ("F", "Too many open files", r"(?:^|Error: )\[Errno 24\] Too many open files", "other", "", "", "raise the open-files limit (ulimit -n)"),
    # --- ports ------------------------------------------------------------------------------------------------
    ("F", "failed to listen on any local network address", None, "port_in_use", "=distributed_init", "",
     "the torch.distributed master port is taken (a stale run?)"),
    ("F", "EADDRINUSE", None, "port_in_use", "=distributed_init", "", "the torch.distributed master port is taken (a stale run?)"),
    ("F", "errno: 98 - Address already in use", None, "port_in_use", "=distributed_init", "", None),
    ("F", "error while attempting to bind on address", None, "port_in_use", "=environment", "", None),
    ("F", "Address already in use", None, "port_in_use", "=environment", "", "the API port is taken by another process"),
    # --- config: arguments, model/tokenizer config, parallel config ------------------------------------------
    ("F", "error: unrecognized arguments", None, "config_error", "=config", "", "a flag this vLLM version does not know"),
    ("F", "error: argument ", r"error: argument -", "config_error", "=config", "", "a flag value this vLLM version rejects"),
    ("F", "error: the following arguments are required", None, "config_error", "=config", "", None),
    ("F", "cannot be used with --headless", None, "config_error", "=config", "", None),
    ("F", "Cannot use more than one data parallel load balancing mode", None, "config_error", "=config", "", None),
    ("F", "Failed to load the model config", None, "config_error", "=config", "", None),
    ("F", "contains custom code which must be executed", None, "config_error", "=config", "", "add --trust-remote-code if the model's code is trusted"),
    ("F", "trust_remote_code=True` to allow custom code", None, "config_error", "=config", "", "add --trust-remote-code if the model's code is trusted"),
    ("F", "requires you to execute the configuration file in that repo", None, "config_error", "=config", "", None),
    ("F", "is greater than the derived max_model_len", None, "config_error", "=config", "", None),
    ("F", "max_model_len must be a positive integer", None, "config_error", "=config", "", None),
    ("F", "are not supported for now", r"Model architectures \[.*\] are not supported", "config_error", "=config", "", None),
    ("F", "failed to be inspected", r"Model architectures \[.*\] failed to be inspected", "config_error", "=config", "",
     "usually an import failure of the model's dependencies"),
    ("F", "Cannot find model module", None, "config_error", "=config", "", None),
    ("F", "Unknown quantization method", None, "config_error", "=config", "", None),
    ("F", "does not match the quantization method specified in the `quantization` argument", None, "config_error", "=config", "", None),
    ("F", "must be divisible by tensor parallel size", None, "config_error", "=config", "", None),
    ("F", "must be divisible by pipeline parallel size", None, "config_error", "=config", "", None),
    ("F", "Pipeline parallelism is not supported for this model", None, "config_error", "=config", "", None),
    ("F", "is larger than the number of available GPUs", r"World size \(\d+\) is larger than the number of available GPUs", "config_error", "=config", "",
     "more ranks than GPUs on this node: use --nnodes/Ray or fewer ranks"),
    ("F", "Bfloat16 is only supported on GPUs with compute capability", None, "config_error", "=config", "", "use --dtype half on this GPU"),
    ("F", "Configuration mismatch detected for engine", None, "config_error", "=config", "", None),
    ("F", "Could not detect config format", None, "missing_file", "=config", "", None),
    ("F", "Failed to load mistral '", None, "config_error", "=config", "", None),
    ("F", "GatedRepoError", None, "config_error", "~config", "", "a gated model: the token lacks access"),
    ("F", "401 Client Error", None, "config_error", "~config", "", "the Hugging Face token is missing or wrong"),
    ("F", "RepositoryNotFoundError", None, "missing_file", "~config", "", "the model path does not exist and is not a Hub repository"),
    ("F", "LocalEntryNotFoundError", None, "missing_file", "~config", "", "the model files are not in the local cache and the Hub cannot be used"),
    ("F", "HFValidationError", None, "missing_file", "~config", "", "the model path does not exist, so it was taken as a Hub repository id"),
    ("F", "We couldn't connect to 'https://huggingface.co'", None, "missing_file", "~config", "", None),
    ("F", "does not appear to have a file named", None, "missing_file", "~config", "", None),
    ("F", "is not a local folder and is not a valid model identifier", None, "missing_file", "~config", "", None),
    ("F", "validation error for", r"\d+ validation errors? for \w+", "config_error", "=config", "g", None),
    # --- cuda_init: platform, device discovery, CUDA context, memory pre-check ----------------------------------
    ("F", "Failed to infer device type", None, "cuda_error", "=cuda_init", "",
     "NVML is not usable here: no /dev/nvidia*, driver libraries not mounted or NVIDIA_VISIBLE_DEVICES empty"),
    ("F", "No CUDA GPUs are available", None, "cuda_error", "=cuda_init", "w", "no GPU visible to the process (CUDA_VISIBLE_DEVICES?)"),
    ("F", "invalid device ordinal", None, "cuda_error", "=cuda_init", "", "a device index outside the visible GPUs"),
    ("F", "busy or unavailable", None, "cuda_error", "=cuda_init", "", "a GPU in exclusive-process mode is held by another process"),
    ("F", "no CUDA-capable device is detected", None, "cuda_error", "=cuda_init", "w", None),
    ("F", "is out of bounds for", r"DP adjusted local rank \d+ is out of bounds", "cuda_error", "=cuda_init", "", "CUDA_VISIBLE_DEVICES narrower than TP x DP"),
    ("F", "Cannot re-initialize CUDA in forked subprocess", None, "cuda_error", "=cuda_init", "", None),
    ("F", "Unsupported device type", None, "config_error", "=cuda_init", "", None),
    ("F", "on startup is less than desired", r"on startup is less than desired (?:GPU|CPU|XPU)? ?memory utilization", "oom", "=cuda_init", "",
     "memory is held by other processes before vLLM starts: not a sizing problem"),
    ("F", "Insufficient space in", r"Insufficient space in \S+ for", "other", "=cuda_init", "",
     "the container /dev/shm is too small (--shm-size or --ipc=host)"),
    ("F", "Cannot provide a placement group", None, "config_error", "=cuda_init", "", None),
    ("F", "Timed out waiting for engine core processes to start", None, "timeout", "", "", "raise VLLM_ENGINE_READY_TIMEOUT_S or find the slow stage"),
    ("F", "Did not receive response from front-end process within", None, "timeout", "", "", None),
    ("F", "KeyboardInterrupt: terminated", None, "timeout", "", "", "SIGTERM during start-up (a Kubernetes probe killed a slow start?)"),
    ("F", "died unexpectedly (exit code:", r"died unexpectedly \(exit code: -?\d+\)", "engine_dead", "", "",
     "a worker process died; exit code -9 is SIGKILL (host OOM killer?), -11 a segfault, -6 an abort"),
    ("F", "RayWorkerProc rank=", r"RayWorkerProc rank=\S+ died unexpectedly", "engine_dead", "", "", None),
    ("F", "died with exit code", r"Process \S+ \(PID: \d+\) died with exit code", "engine_dead", "", "", None),
    # --- distributed_init: torch.distributed, NCCL, Gloo, custom all-reduce -------------------------------------
    ("F", "Failed to load NCCL library from", None, "import_error", "=distributed_init", "", "set VLLM_NCCL_SO_PATH or fix the NCCL install"),
    ("F", "VLLM_NCCL_SO_PATH", r"please set the environment variable VLLM_NCCL_SO_PATH", "import_error", "=distributed_init", "", None),
    ("F", "DeepEPv2 requires NCCL GIN", None, "config_error", "=distributed_init", "", None),
    ("F", "The client socket has timed out after", None, "timeout", "=distributed_init", "",
     "the rendezvous (TCPStore) is unreachable: master address, firewall, or the other node not started"),
    ("F", "Gloo connectFullMesh failed", None, "nccl_error", "=distributed_init", "", "Gloo picked the wrong interface: set GLOO_SOCKET_IFNAME"),
    ("F", "DistNetworkError", None, "other", "=distributed_init", "g", None),
    ("F", "'out of memory'", r"Cuda failure (?:\d+ )?'out of memory'", "oom", ">distributed_init", "w", None),
    ("F", "unhandled cuda error", None, "nccl_error", ">distributed_init", "", None),
    ("F", "unhandled system error", None, "nccl_error", ">distributed_init", "",
     "sockets, InfiniBand, /dev/shm or the IPC_LOCK capability"),
    ("F", "internal error - please report this issue to the NCCL developers", None, "nccl_error", ">distributed_init", "", None),
    ("F", "invalid usage (run with NCCL_DEBUG", None, "nccl_error", ">distributed_init", "", None),
    ("F", "invalid argument (run with NCCL_DEBUG", None, "nccl_error", ">distributed_init", "", None),
    ("F", "ncclInvalidUsage", None, "nccl_error", ">distributed_init", "", None),
    ("F", "ncclSystemError", None, "nccl_error", ">distributed_init", "", None),
    ("F", "ncclUnhandledCudaError", None, "nccl_error", ">distributed_init", "", None),
    ("F", "ncclInternalError", None, "nccl_error", ">distributed_init", "", None),
    ("F", "NCCL error", r"NCCL error(?: in)?:", "nccl_error", ">distributed_init", "g", None),
    ("F", "Failed: Cuda error", r"Failed: Cuda error \S+:\d+", "cuda_error", ">distributed_init", "g",
     "custom all-reduce CUDACHECK; the process exits without a Python traceback"),
    ("F", "Failed to bind NVLink SHARP", None, "nccl_error", ">distributed_init", "w", "try NCCL_NVLS_ENABLE=0"),
    # --- weight_loading ---------------------------------------------------------------------------------------
    ("F", "Failed to load model - not enough GPU memory", None, "oom", "=weight_loading", "",
     "the weights do not fit: more tensor parallelism, quantization, or less memory held elsewhere"),
    ("F", "Cannot find any model weights", None, "missing_file", "=weight_loading", "", None),
    ("F", "Weight files referenced in index but missing", None, "missing_file", "=weight_loading", "", None),
    ("F", "Following weights were not initialized from checkpoint", None, "config_error", "=weight_loading", "",
     "checkpoint and model architecture do not match"),
    ("F", "Unknown load_format", None, "config_error", "=weight_loading", "", None),
    ("F", "is not supported", r"Load format `\S+` is not supported", "config_error", "=weight_loading", "", None),
    ("F", "SafetensorError", None, "missing_file", "=weight_loading", "", "a truncated or corrupt shard, or a git-lfs pointer instead of the file"),
    ("F", "HeaderTooLarge", None, "missing_file", "=weight_loading", "", None),
    ("F", "Cannot find the config file for", None, "missing_file", "=weight_loading", "", None),
    ("F", "Found multiple config files for", None, "config_error", "=weight_loading", "", None),
    ("F", "Unsupported quantization config found", None, "config_error", "=weight_loading", "", None),
    ("F", "param_data.shape == loaded_weight.shape", None, "config_error", "=weight_loading", "", "checkpoint shapes do not fit this model or TP size"),
    # --- engine_init: compile, memory profiling, KV cache, CUDA graphs ------------------------------------------
    ("F", "No available memory for the cache blocks", None, "oom", "=engine_init", "", "raise --gpu-memory-utilization or free memory"),
    ("F", "KV cache is needed, which is larger than the available KV cache memory", None, "oom", "=engine_init", "",
     "lower --max-model-len or raise --gpu-memory-utilization"),
    ("F", "To serve at least one request with the model", None, "oom", "=engine_init", "",
     "lower --max-model-len or raise --gpu-memory-utilization"),
    ("F", "is larger than the maximum number of tokens that can be stored in KV cache", None, "oom", "=engine_init", "", None),
    ("F", "Cannot auto-fit max_model_len", None, "oom", "=engine_init", "", None),
    ("F", "on kv cache allocation is less than requested memory", None, "oom", "=engine_init", "", None),
    ("F", "Error in memory profiling", None, "other", "=engine_init", "", "another process changed GPU memory during profiling"),
    ("F", "cannot express this model's mixed page sizes", None, "other", "=engine_init", "", None),
    ("F", "Failed to promote local KV cache specs", None, "other", "=engine_init", "", None),
    ("F", "backend compilation occurred during the initial profiling run", None, "other", "=engine_init", "", None),
    ("F", "VLLM_USE_MEGA_AOT_ARTIFACT is enabled but PyTorch version does not support", None, "config_error", "=engine_init", "", None),
    ("F", "operation not permitted when stream is capturing", None, "cuda_error", "=engine_init", "",
     "a non-capturable operation inside a CUDA graph; --enforce-eager isolates it"),
    ("F", "operation failed due to a previous error during capture", None, "cuda_error", "=engine_init", "", None),
    ("F", "torch._dynamo.exc.", r"torch\._dynamo\.exc\.\w+", "other", ">engine_init", "", "torch.compile failed; --enforce-eager isolates it"),
    ("F", "InductorError", None, "other", ">engine_init", "", "Inductor failed (missing compiler or Python headers, or a custom triton)"),
    ("F", "LoweringException", None, "other", ">engine_init", "", None),
    ("F", "CppCompileError", None, "other", ">engine_init", "", None),
    ("F", "CalledProcessError", r"CalledProcessError: Command '\['\S*(?:gcc|cc|clang)", "other", ">engine_init", "", "no working C compiler in the image"),
    ("F", "OutOfResources", r"OutOfResources: out of resource", "cuda_error", ">engine_init", "", None),
    ("F", "ptxas fatal", None, "cuda_error", ">engine_init", "", "the bundled ptxas does not know this GPU"),
    ("F", "PTXASError", None, "cuda_error", ">engine_init", "", None),
    ("F", "RPC call to", r"RPC call to \S+ timed out", "timeout", "", "", None),
    # --- any stage: CUDA runtime and memory ---------------------------------------------------------------------
    ("F", "illegal memory access", None, "illegal_memory_access", "^cuda_init", "w", None),
    ("F", "CUDA_ERROR_ILLEGAL_ADDRESS", None, "illegal_memory_access", "^cuda_init", "w", None),
    ("F", "cudaErrorIllegalAddress", None, "illegal_memory_access", "^cuda_init", "w", None),
    ("F", "no kernel image is available for execution on the device", None, "cuda_error", "^cuda_init", "w",
     "the binary has no kernels for this GPU architecture"),
    ("F", "the provided PTX was compiled with an unsupported toolchain", None, "driver_mismatch", "^cuda_init", "w",
     "the driver is older than the PTX"),
    ("F", "device-side assert triggered", None, "cuda_error", "^cuda_init", "w", None),
    ("F", "unspecified launch failure", None, "cuda_error", "^cuda_init", "w", None),
    ("F", "uncorrectable ECC error encountered", None, "cuda_error", "^cuda_init", "w", "a hardware memory error: check the GPU (nvidia-smi -q -d ECC)"),
    ("F", "misaligned address", None, "cuda_error", "^cuda_init", "w", None),
    ("F", "an illegal instruction was encountered", None, "cuda_error", "^cuda_init", "w", None),
    ("F", "NVRM: Xid", None, "cuda_error", "^cuda_init", "w", "a GPU fault reported by the kernel driver"),
    ("F", "OutOfMemoryError", None, "oom", "^cuda_init", "w", None),
    ("F", "CUDA out of memory", None, "oom", "^cuda_init", "w", None),
    ("F", "CUDA error: out of memory", None, "oom", "^cuda_init", "w", None),
    ("F", "cudaErrorMemoryAllocation", None, "oom", "^cuda_init", "w", None),
    ("F", "Out of memory: Killed process", None, "oom", "", "w", "the host kernel OOM killer (host RAM, not GPU memory)"),
    ("F", "running low on memory", None, "oom", "", "w", "host RAM exhausted (Ray memory monitor)"),
    ("F", "CUDA error", r"CUDA error: \S", "cuda_error", "^cuda_init", "gw", None),
    ("F", "CUDADriverError", None, "cuda_error", "^cuda_init", "g", None),
    ("F", "Fatal Python error", None, "other", "", "", None),
    ("F", "Segmentation fault", None, "other", "", "", "a crash in native code"),
    # --- api_ready / request --------------------------------------------------------------------------------
    ("F", "Application startup failed", None, "other", "=api_ready", "w", None),
    ("F", "Exception occurred while running API servers", None, "other", "=api_ready", "", None),
    # --- hang hints and warnings kept as hints ------------------------------------------------------------------
    ("h", "No available shared memory broadcast block found in", None, None, "", "wi", "a worker is stuck (NCCL hang, slow compile)"),
    ("h", "workers still running after", None, None, "", "wi", "a worker did not exit (often stuck in a collective)"),
    ("h", "Waiting for", r"Waiting for \d+ local, \d+ remote core engine proc", None, "", "i", None),
    ("W", "Failed to import from vllm._C", None, None, "", "w", "wheel/torch ABI mismatch; missing ops fail later"),
    ("W", "Free memory grew by", None, None, "", "w", None),
    ("W", "Compiling model again due to a load failure", None, None, "", "w", None),
    ("W", "is used by process", r"port \d+ is used by process", None, "", "w", None),
)

_SIGS = tuple(_Sig(i, *row) for i, row in enumerate(_SIG_TABLE))
_KIND_ORDER = {"X": 0, "C": 1, "c": 1, "V": 2, "H": 3, "F": 4, "h": 5, "W": 6}


def _sigs_for(level_flag):
    picked = []
    for s in _SIGS:
        if level_flag == "E" or (level_flag == "W" and "w" in s.flags) or (level_flag == "I" and "i" in s.flags):
            picked.append(s)
    picked.sort(key=lambda s: (_KIND_ORDER[s.kind], "g" in s.flags, s.sid))
    return tuple(picked)


_SIGS_BY_LEVEL = {"E": _sigs_for("E"), "W": _sigs_for("W"), "I": _sigs_for("I"), "D": ()}


def match_signature(text, level="E"):
    """The first signature that matches ``text`` at ``level`` (E, W, I), or None.  Exposed for tests."""
    for s in _SIGS_BY_LEVEL.get(level, ()):
        if s.match(text):
            return s
    return None


# --------------------------------------------------------------------------------------------------------------
# stage markers (progress)
# --------------------------------------------------------------------------------------------------------------
# fmt: v vLLM logger message, u uvicorn message, r raw line (tqdm bar, Gloo, untagged print), n NCCL INFO message
# role: e entry, x exit (the next stage begins; the log may have no marker for it, e.g. profiling with
# --enforce-eager), r ready (API server up)

class _Mark(object):
    __slots__ = ("stage", "rank", "key", "rx", "fmt", "role")

    def __init__(self, stage, role, fmt, key, rx=None):
        self.stage = stage
        self.rank = _RANK[stage]
        self.role = role
        self.fmt = fmt
        self.key = key
        self.rx = re.compile(rx) if rx else None


_MARK_TABLE = (
    ("environment", "e", "v", "version", r"█\s+version\s+\S+"),
    ("environment", "e", "v", "vLLM server version", None),
    ("environment", "e", "v", "vLLM API server version", None),
    ("environment", "e", "v", "Available plugins for group", None),
    ("environment", "e", "v", "Platform plugin", r"Platform plugin \S+ is activated"),
    ("environment", "e", "v", "Automatically detected platform", None),
    ("environment", "e", "v", "headless multiproc executor", None),
    ("environment", "e", "v", "in headless mode, with head node address", None),
    ("config", "e", "v", "non-default args:", None),
    ("config", "e", "v", "args: Namespace(", None),
    ("config", "e", "v", "Resolved architecture:", None),
    ("config", "e", "v", "Using max model len", None),
    ("config", "e", "v", "Chunked prefill is enabled with", None),
    ("config", "e", "v", "Defaulting api_server_count", None),
    ("config", "e", "v", "HF_HUB_OFFLINE is True", None),
    ("config", "e", "v", "Using ray distributed inference", None),
    ("config", "e", "v", "for distributed inference", r"Defaulting to use \w+ for distributed inference"),
    ("cuda_init", "e", "v", "Initializing a V1 LLM engine", None),
    ("cuda_init", "e", "v", "Initializing an LLM engine", None),
    ("cuda_init", "e", "v", "DP group leader:", None),
    ("cuda_init", "e", "v", "Started engine process with PID", None),
    ("cuda_init", "e", "v", "Started DP Coordinator process", None),
    ("cuda_init", "e", "v", "Waiting for READY message from DP Coordinator", None),
    ("cuda_init", "e", "v", "vLLM message queue communication handle", None),
    ("cuda_init", "e", "v", "Reducing Torch parallelism from", None),
    ("cuda_init", "e", "v", "placement group",
     r"(?:Waiting for creating a placement group|No current placement group found|Using the existing placement group)"),
    ("cuda_init", "e", "v", "Using V2 Model Runner", None),
    ("cuda_init", "e", "v", "worker init memory snapshot", None),
    ("distributed_init", "e", "v", "distributed_init_method=", r"world_size=\d+ rank=\d+ local_rank=\d+ distributed_init_method="),
    ("distributed_init", "e", "v", "Adjusting world_size=", None),
    ("distributed_init", "e", "v", "falling back to gloo", None),
    ("distributed_init", "e", "v", "Found nccl from library", None),
    ("distributed_init", "e", "v", "vLLM is using nccl==", None),
    ("distributed_init", "e", "v", "reading GPU P2P access cache from", None),
    ("distributed_init", "e", "v", "Custom allreduce is disabled", None),
    ("distributed_init", "e", "v", "Custom collectives are disabled", None),
    ("distributed_init", "e", "v", "SymmMemCommunicator", None),
    ("distributed_init", "e", "v", "all-reduce backends (in dispatch order)", None),
    ("distributed_init", "e", "v", "all2all manager", None),
    ("distributed_init", "e", "v", "is assigned as DP rank", None),
    ("distributed_init", "e", "r", "[Gloo] Rank", None),
    ("distributed_init", "e", "n", "", None),
    ("weight_loading", "e", "v", "Starting to load model", None),
    ("weight_loading", "e", "v", "Loading model from scratch", None),
    ("weight_loading", "e", "v", "Initializing model took", None),
    ("weight_loading", "e", "v", "Using model weights format", None),
    ("weight_loading", "e", "v", "Filesystem type for checkpoints", None),
    ("weight_loading", "e", "v", "Prefetching checkpoint files", None),
    ("weight_loading", "e", "v", "Auto-prefetch is disabled", None),
    ("weight_loading", "e", "v", "Time spent downloading weights", None),
    ("weight_loading", "e", "v", "EP weight filter:", None),
    ("weight_loading", "e", "v", "Loading drafter model", None),
    ("weight_loading", "e", "v", "attention backend", r"Using \w+ attention backend out of potential backends"),
    ("weight_loading", "e", "v", "backend on V1 engine", r"Using [\w ]+ backend on V1 engine"),
    ("weight_loading", "e", "r", " shards", r"Loading (?:safetensors|pt) checkpoint shards|Multi-thread loading shards"),
    ("weight_loading", "e", "r", "Loading safetensors using", None),
    ("weight_loading", "x", "v", "Loading weights took", None),
    ("weight_loading", "x", "v", "Model loading took", None),
    ("weight_loading", "x", "v", "Loading model weights took", None),
    ("engine_init", "e", "v", "torch.compile",
     r"Starting torch\.compile|for vLLM's torch\.compile|torch\.compile cache is disabled|torch\.compile (?:takes|took)"),
    ("engine_init", "e", "v", "Dynamo bytecode transform time", None),
    ("engine_init", "e", "v", "Directly load", r"Directly load (?:AOT compilation|the compiled graph)"),
    ("engine_init", "e", "v", "Cache the graph", None),
    ("engine_init", "e", "v", "Compiling a graph for", None),
    ("engine_init", "e", "v", "saved AOT compiled function", None),
    ("engine_init", "e", "v", "Initial profiling/warmup run took", None),
    ("engine_init", "e", "v", "Warming up model", None),
    ("engine_init", "e", "v", "Encoder cache will be initialized", None),
    ("engine_init", "e", "v", "Memory profiling takes", None),
    ("engine_init", "e", "v", "CUDA graph memory", r"(?:Profiling|Estimated) CUDA graph memory|CUDA graph memory profiling is"),
    ("engine_init", "e", "v", "Available KV cache memory", None),
    ("engine_init", "e", "v", "KV cache size:", None),
    ("engine_init", "e", "v", "Maximum concurrency for", None),
    ("engine_init", "e", "v", "# GPU blocks:", None),
    ("engine_init", "e", "v", "for KV cache on node", None),
    ("engine_init", "e", "v", "Compile and warming up model for size", None),
    ("engine_init", "e", "v", "Capturing", r"Capturing (?:CUDA graph|cudagraph|prefill CUDA graph|the model for CUDA graphs)"),
    ("engine_init", "e", "r", "Capturing", r"Capturing (?:CUDA graph|cudagraph|prefill CUDA graph)"),
    ("engine_init", "e", "v", "Graph capturing finished", None),
    ("engine_init", "e", "v", "CUDA graph pool memory", None),
    ("engine_init", "e", "v", "Kernel JIT monitor activated", None),
    ("engine_init", "e", "v", "Autotuning process", None),
    ("engine_init", "x", "v", "init engine (profile, create kv cache, warmup model) took", None),
    ("api_ready", "e", "v", "Supported tasks:", None),
    ("api_ready", "e", "v", "Supported_tasks:", None),
    ("api_ready", "e", "v", "Starting vLLM", r"Starting vLLM (?:API )?server"),
    ("api_ready", "e", "v", "Available routes are:", None),
    ("api_ready", "e", "v", "Detected the chat template content format", None),
    ("api_ready", "e", "v", "tool choice has been enabled", None),
    ("api_ready", "e", "v", "warmup completed in", None),
    ("api_ready", "e", "u", "Started server process", None),
    ("api_ready", "e", "u", "Waiting for application startup", None),
    ("api_ready", "r", "u", "Application startup complete", None),
    ("api_ready", "r", "u", "Uvicorn running on", None),
    ("request", "e", "u", " HTTP/", r'"(?:POST|PUT|PATCH|DELETE|GET) (?!/(?:health|metrics|ping|version|load|v1/models|docs|openapi)\b)\S+ HTTP/'),
    ("request", "e", "v", "Received request", None),
    ("request", "e", "v", "Added request", None),
    ("request", "e", "v", "Avg prompt throughput", None),
    ("request", "e", "v", "Finished request", None),
    ("request", "e", "v", "SpecDecoding metrics", None),
)

_MARKS = tuple(_Mark(*row) for row in _MARK_TABLE)

# traceback frame functions -> the stage that function is part of (vLLM worker and engine methods, torch)
_FRAME_STAGE = {
    "create_engine_config": "config", "create_model_config": "config", "get_config": "config",
    "init_device": "cuda_init", "_lazy_init": "cuda_init", "request_memory": "cuda_init",
    "init_worker_distributed_environment": "distributed_init", "init_distributed_environment": "distributed_init",
    "initialize_model_parallel": "distributed_init", "ensure_model_parallel_initialized": "distributed_init",
    "init_process_group": "distributed_init",
    "load_model": "weight_loading", "load_weights": "weight_loading",
    "determine_available_memory": "engine_init", "profile_run": "engine_init",
    "compile_or_warm_up_model": "engine_init", "capture_model": "engine_init",
    "initialize_from_config": "engine_init", "_initialize_kv_caches": "engine_init",
    "determine_num_available_blocks": "engine_init", "initialize_cache": "engine_init",
    "kernel_warmup": "engine_init", "capture_begin": "engine_init", "capture_end": "engine_init",
    "execute_model": "request", "sample_tokens": "request",
}

# a generic exception is classed by keywords (first hit wins)
_CLASS_RULES = (
    ("oom", ("OutOfMemoryError", "out of memory", "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation")),
    ("illegal_memory_access", ("illegal memory access", "CUDA_ERROR_ILLEGAL_ADDRESS", "cudaErrorIllegalAddress")),
    ("driver_mismatch", ("driver version is insufficient", "driver on your system is too old",
                         "unsupported display driver")),
    ("port_in_use", ("Address already in use", "EADDRINUSE")),
    ("nccl_error", ("NCCL", "nccl", "Gloo", "DistBackendError", "ProcessGroupNCCL")),
    ("cuda_error", ("CUDA error", "CUDA_ERROR_", "cudaError", "CUDADriverError", "AcceleratorError")),
    ("timeout", ("TimeoutError", "timed out", "Timeout")),
    ("import_error", ("ModuleNotFoundError", "ImportError", "No module named", "PackageNotFoundError",
                      "undefined symbol", "cannot open shared object file")),
    ("missing_file", ("FileNotFoundError", "No such file or directory")),
    ("engine_dead", ("EngineDeadError", "died unexpectedly")),
)
_CLASS_MIN = {"oom": "cuda_init", "cuda_error": "cuda_init", "illegal_memory_access": "cuda_init",
              "nccl_error": "distributed_init"}
_CLASS_DEFAULT = {"import_error": "environment", "driver_mismatch": "environment", "port_in_use": "environment",
                  "nccl_error": "distributed_init", "config_error": "config"}

# --------------------------------------------------------------------------------------------------------------
# line formats and wrappers
# --------------------------------------------------------------------------------------------------------------
_ANSI_RX = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_ORPHAN_ANSI_RX = re.compile(r"\[[0-9;]{1,8}m(?=\S)")
_K8S_RX = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)((?:[.,]\d+)?)(Z|[+-]\d\d:?\d\d)?(?:\s|$)")
_JOURNAL_RX = re.compile(
    r"^(?:([A-Z][a-z]{2}) ([ \d]\d) (\d\d):(\d\d):(\d\d) [\w.-]+ [\w.@/-]+(?:\[\d+\])?:(?: |$)|"
    r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\S* [\w.-]+ [\w.@/-]+\[\d+\]:(?: |$))")
_JOURNAL_ANY_RX = re.compile(r"^\S{1,6} ?[ \d]?\d \d\d:\d\d:\d\d [\w.-]+ [\w.@/-]+\[\d+\]: ")
_COMPOSE_RX = re.compile(r"^([A-Za-z0-9][\w.-]*)\s+\| ?")
_RAY_REPEAT_RX = re.compile(r"\s*\[repeated \d+x across cluster\]")
_VLLM_RX = re.compile(
    r"\((?P<proc>[A-Za-z][\w\-]*(?: (?:rank=\d+|TP\d+))?) pid=(?P<pid>\d+)(?:, ip=(?P<ip>[^)]+))?\) "
    r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)? "
    r"\[?(?P<file>[^\]\s:]+):(?P<lineno>\d+)\] ?(?P<msg>.*)$")
_VLLM_NOTAG_RX = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)? "
    r"\[?(?P<file>[^\]\s:]+):(?P<lineno>\d+)\] ?(?P<msg>.*)$")
_TAGONLY_RX = re.compile(
    r"^\((?P<proc>[A-Za-z][\w\-]*(?: (?:rank=\d+|TP\d+))?) pid=(?P<pid>\d+)(?:, ip=(?P<ip>[^)]+))?\) ?(?P<rest>.*)$")
_NCCL_RX = re.compile(
    r"^(?:\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[^\]]*\] )?(?P<host>[^:\s\[\]]+):(?P<pid>\d+):(?P<tid>\d+) "
    r"\[(?P<dev>\d+)\] (?:[\d.]+ )?(?:\S+:\d+(?: \([^)]*\))? )?NCCL (?P<lvl>INFO|WARN|TRACE|CALL|ABORT) ?(?P<msg>.*)$")
_RANK_RX = re.compile(r"^\[rank(\d+)\]: ?")
# torchrun --tee: every line of a worker copied to torchrun's own output behind "[<role><local_rank>]:"
# (torch/distributed/elastic/multiprocessing/tail_log.py, role "default" unless --role); "[rankN]:" is
# PyTorch's own rank prefix and stays with _RANK_RX
_TEE_RX = re.compile(r"^\[(?!rank\d)([A-Za-z_][\w-]{0,39}?\d+)\]:")
# NCCL communicator life cycle (init.cc: "... comm %p rank %d nranks %d ... - Init START" / "- Init COMPLETE",
# "comm %p rank %d nranks %d cudaDev %d busId %lx - Destroy COMPLETE")
_NCCL_COMM_RX = re.compile(r"\bcomm (0x[0-9a-fA-F]+) .*- (Init START|Init COMPLETE|Destroy COMPLETE)\s*$")
# a launcher line about one worker: torchrun "failed (exitcode: 1) local_rank: 1 (pid: 690) of binary: ..."
_SUBJECT_RX = re.compile(r"\blocal_rank: (\d+) \(pid: (\d+)\)")
# torchrun itself stopped by a signal from outside
_STOP_RX = re.compile(r"Received (\d+) death signal|SignalException: Process \d+ got signal: (\d+)")
_MAX_COMMS = 1024
_C10_RX = re.compile(
    r"^\[(?P<lvl>[IWEF])(?:(?P<ts>\d{4} \d\d:\d\d:\d\d)(?P<frac>\.\d+)?)? (?:\d+ )?(?P<file>[^\]\s:]+):\d+\] ?(?P<msg>.*)$")
_GLOG_RX = re.compile(
    r"^(?P<lvl>[VIWEFC])(?P<ts>\d{4} \d\d:\d\d:\d\d)(?P<frac>\.\d+)? +\d+ [^\]\s:]+:\d+\](?: \[[^\]]*\])? ?(?P<msg>.*)$")
_UVICORN_RX = re.compile(r"^(?P<level>INFO|WARNING|ERROR|DEBUG|CRITICAL|TRACE):\s+(?P<msg>.*)$")
_PYLOG_RX = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[.,]\d+)?\s*(?:-\s*)?(?:\[\s*)?"
    r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b\]?[\s:-]*(?P<msg>.*)$")
_PYWARN_RX = re.compile(r"^\S+\.py:\d+: \w*Warning: ")
_FRAME_RX = re.compile(r'^\s*File "[^"]*", line \d+, in (\S+)')
_PROCESS_HDR_RX = re.compile(r"^Process (\S+):$")
_EXC_RX = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Iteration|Warning|Failure|Failed)(?:\([\w.]*\))?(?::|$)")
_CARETS_RX = re.compile(r"^[\^~ ]+$")
_TB_START = "Traceback (most recent call last)"
_CODE_STARTS = ('File "', "raise ", "^^^", "~~~")
_CHAIN = ("The above exception was the direct cause", "During handling of the above exception")

_MONTHS = {"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6, "Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10,
           "Nov": 11, "Dec": 12}
_CUM_DAYS = (0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335)   # a leap year: Feb 29 exists

# byte-level timestamp finder for lines the prefilter skipped
_TS_BYTES_RX = re.compile(
    rb"(?:(?<!\d)\d{4}-)?(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)|(?<![\w])[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.")

# prefilter: a line is parsed only when it contains one of these (or a marker anchor still needed)
# (vLLM and torch logger lines carry ".py:", C++ c10 lines ".cpp:", NCCL errors "WARN", Python tracebacks start
# with "Traceback", raw error prints say "error"/"Error"; every pass over a block costs, so the list is short)
_STATIC_ANCHORS = (b".py:", b"Traceback", b"rror", b"WARN", b".cpp:", b"fault", b"\x1b", b" - Init ",
                   b"Destroy COMPLETE")
_MARK_ANCHORS = {
    "distributed_init": (b"NCCL INFO", b"[Gloo]"),
    "weight_loading": (b"shards", b"Loading safetensors"),
    "engine_init": (b"Capturing",),
    "api_ready": (b"INFO:    ",),
    "request": (b"INFO:    ",),
}


def _tkey(month, day, hh, mm, ss, frac=0.0):
    try:
        month = int(month)
        day = int(day)
        if not 1 <= month <= 12 or not 1 <= day <= 31:
            return None
        return (_CUM_DAYS[month - 1] + day - 1) * 86400.0 + int(hh) * 3600 + int(mm) * 60 + int(ss) + frac
    except (TypeError, ValueError, IndexError):
        return None


def _frac(text):
    if not text:
        return 0.0
    try:
        return float("0" + text.replace(",", "."))
    except ValueError:
        return 0.0


def _cut(text, limit=_MAX_LINE_CHARS):
    return text if len(text) <= limit else text[:limit] + "..."


def _clean(text):
    if "\x1b" in text:
        text = _ANSI_RX.sub("", text)
    return text.replace("\x00", "")


class _Line(object):
    """One parsed line (after wrappers): format, stream, level, timestamp and message."""

    __slots__ = ("fmt", "stream", "proc", "pid", "ip", "level", "ts", "tkey", "msg", "rec", "service",
                 "outer_tkey", "outer_src", "pywarn", "tee")

    def __init__(self):
        self.fmt = "r"
        self.stream = ""
        self.proc = None
        self.pid = None
        self.ip = None
        self.level = "R"
        self.ts = None
        self.tkey = None
        self.msg = ""
        self.rec = None
        self.service = None
        self.outer_tkey = None
        self.outer_src = None
        self.pywarn = False
        self.tee = None


_LEVEL = {"DEBUG": "D", "TRACE": "D", "INFO": "I", "WARNING": "W", "WARN": "W", "ERROR": "E", "CRITICAL": "E",
          "FATAL": "E", "V": "D", "I": "I", "W": "W", "E": "E", "F": "E", "C": "E"}


def _strip_wrappers(text, line):
    """Remove container/journal/kubectl/Ray wrappers; remember the outer timestamp and service."""
    for dummy in range(3):
        changed = False
        c0 = text[:1]
        if c0.isdigit() and text[4:5] == "-" and text[10:11] == "T":
            m = _JOURNAL_RX.match(text)
            if m:
                if line.outer_tkey is None:
                    line.outer_tkey = _tkey(m.group(7), m.group(8), m.group(9), m.group(10), m.group(11))
                    line.outer_src = "journald"
                text = text[m.end():]
                changed = True
            else:
                m = _K8S_RX.match(text)
                if m:
                    if line.outer_tkey is None:
                        line.outer_tkey = _tkey(m.group(2), m.group(3), m.group(4), m.group(5), m.group(6),
                                                _frac(m.group(7)))
                        line.outer_src = "rfc3339" + (m.group(8) or "")[:1]
                    text = text[m.end():]
                    changed = True
        elif c0 in _MONTH_INITIALS and text[3:4] == " ":
            m = _JOURNAL_RX.match(text)
            if m:
                if line.outer_tkey is None:
                    line.outer_tkey = _tkey(_MONTHS.get(m.group(1), 0), m.group(2).strip() or 0, m.group(3),
                                            m.group(4), m.group(5))
                    line.outer_src = "journald"
                text = text[m.end():]
                changed = True
        if not changed and "]: " in text[:120] and text[:1] not in "([":
            m = _JOURNAL_ANY_RX.match(text)
            if m:
                text = text[m.end():]
                changed = True
        if not changed and "|" in text[:80]:
            m = _COMPOSE_RX.match(text)
            if m:
                if line.service is None:
                    line.service = m.group(1)
                text = text[m.end():]
                changed = True
        if not changed:
            break
    if "[repeated " in text:
        text = _RAY_REPEAT_RX.sub("", text)
    return text


_MONTH_INITIALS = frozenset(m[0] for m in _MONTHS)


def _parse(text, line):
    """Fill ``line`` from ``text`` (wrappers already removed)."""
    if " pid=" in text:
        m = _VLLM_RX.search(text)
        if m:
            line.fmt = "v"
            line.proc = m.group("proc")
            line.pid = m.group("pid")
            line.ip = m.group("ip")
            line.stream = line.proc + "#" + line.pid
            line.level = _LEVEL.get(m.group("level"), "I")
            line.ts = m.group("ts")
            line.tkey = _tkey(line.ts[0:2], line.ts[3:5], line.ts[6:8], line.ts[9:11], line.ts[12:14])
            line.msg = m.group("msg")
            line.rec = (m.group("level"), line.ts, m.group("file"), m.group("lineno"))
            return
        m = _TAGONLY_RX.match(text)
        if m:
            line.proc = m.group("proc")
            line.pid = m.group("pid")
            line.ip = m.group("ip")
            line.stream = line.proc + "#" + line.pid
            text = m.group("rest")
    c0 = text[:1]
    if c0 in "DIWEC":
        m = _VLLM_NOTAG_RX.match(text)
        if m:
            line.fmt = "v"
            if not line.stream:
                line.stream = "vllm"
            line.level = _LEVEL.get(m.group("level"), "I")
            line.ts = m.group("ts")
            line.tkey = _tkey(line.ts[0:2], line.ts[3:5], line.ts[6:8], line.ts[9:11], line.ts[12:14])
            line.msg = m.group("msg")
            line.rec = (m.group("level"), line.ts, m.group("file"), m.group("lineno"))
            return
    if " NCCL " in text:
        m = _NCCL_RX.match(text)
        if m:
            line.fmt = "n"
            line.pid = m.group("pid")
            line.stream = "nccl#" + line.pid
            line.level = "E" if m.group("lvl") in ("WARN", "ABORT") else "D"
            if m.group("ts"):
                line.ts = m.group("ts")
                t = line.ts
                line.tkey = _tkey(t[5:7], t[8:10], t[11:13], t[14:16], t[17:19])
            line.msg = m.group("msg")
            line.rec = ("nccl", m.group("lvl"))
            return
    if c0 == "[":
        m = _RANK_RX.match(text)
        if m:
            line.proc = "rank" + m.group(1)
            line.stream = line.proc
            text = text[m.end():]
            c0 = text[:1]
        if c0 == "[":
            m = _C10_RX.match(text)
            if m:
                line.fmt = "c"
                line.level = _LEVEL.get(m.group("lvl"), "I")
                t = m.group("ts")
                if t:
                    line.ts = t + (m.group("frac") or "")
                    line.tkey = _tkey(t[0:2], t[2:4], t[5:7], t[8:10], t[11:13], _frac(m.group("frac")))
                line.msg = m.group("msg")
                line.rec = ("c10", m.group("file"))
                if not line.stream:
                    line.stream = "c10"
                return
    if c0 in "VIWEFC" and text[1:2].isdigit():
        m = _GLOG_RX.match(text)
        if m:
            line.fmt = "c"
            line.level = _LEVEL.get(m.group("lvl"), "I")
            t = m.group("ts")
            line.ts = t + (m.group("frac") or "")
            line.tkey = _tkey(t[0:2], t[2:4], t[5:7], t[8:10], t[11:13], _frac(m.group("frac")))
            line.msg = m.group("msg")
            if not line.stream:
                line.stream = "glog"
            return
    if c0 in "IWEDCT":
        m = _UVICORN_RX.match(text)
        if m:
            line.fmt = "u"
            line.level = _LEVEL.get(m.group("level"), "I")
            line.msg = m.group("msg")
            if not line.stream:
                line.stream = "uvicorn"
            return
    if c0.isdigit() and text[4:5] == "-":
        m = _PYLOG_RX.match(text)
        if m:
            line.fmt = "p"
            line.level = _LEVEL.get(m.group("level"), "I")
            t = m.group("ts")
            line.ts = t
            line.tkey = _tkey(t[5:7], t[8:10], t[11:13], t[14:16], t[17:19])
            line.msg = m.group("msg")
            if not line.stream:
                line.stream = "pylog"
            return
    line.fmt = "r"
    line.level = "R"
    line.msg = text
    if text[:1] not in (" ", "\t") and _PYWARN_RX.match(text):
        line.pywarn = True


# --------------------------------------------------------------------------------------------------------------
# per-file scanner
# --------------------------------------------------------------------------------------------------------------

class _TB(object):
    """An open traceback (or an error header waiting for its traceback) in one stream."""

    __slots__ = ("state", "stream", "proc", "pid", "rec", "header", "entries", "frames", "lineno", "ts", "tkey",
                 "tkey_own", "idle", "warn_only", "context", "chained")

    def __init__(self, stream, proc, pid, rec, lineno, ts, tkey, tkey_own, warn_only):
        self.state = "frames"
        self.stream = stream
        self.proc = proc
        self.pid = pid
        self.rec = rec
        self.header = None
        self.entries = []
        self.frames = set()
        self.lineno = lineno
        self.ts = ts
        self.tkey = tkey
        self.tkey_own = tkey_own
        self.idle = 0
        self.warn_only = warn_only
        self.context = []
        self.chained = False


class _Scan(object):
    """Reads one log and keeps what the answer needs, nothing more."""

    def __init__(self, name, node, index, until=None):
        self.file = name
        self.node = node
        self.index = index
        self.until = until               # lines 1..until were written before the server was stopped
        self.after_stop = []             # errors of later lines (shutdown noise), never the failure
        self.lineno = 1
        self.lines = 0
        self.first_ts = None
        self.last_ts = None
        self.last_tkey = None
        self.year_off = 0.0
        self.prev_tkey = None
        self.ts_sources = set()
        self.ctx = -1                    # rank of the stage the log is in
        self.ctx_since = None
        self.reached = set()
        self.marked = set()
        self.stage_marks = []
        self.ready = False
        self.ready_ts = None
        self.streams = {}
        self.cands = []
        self.recovered = []
        self.dropped = 0
        self.hints = []
        self.pid2proc = {}
        self.rec_cand = {}
        self.proc_hdr = None
        self.comms = {}                  # (pid, NCCL comm pointer) -> "started" | "complete" | "destroyed"
        self._anchors = None
        self._buf = None
        self._buf_pos = 0
        self._slow_end = 0
        self._abs = 0
        self._slow_abs = 0

    # -- time -------------------------------------------------------------------------------------------------
    def _adj(self, tkey):
        """Order year-less timestamps within the file (a year roll-over moves later keys on)."""
        if tkey is None:
            return None
        tkey += self.year_off
        if self.prev_tkey is not None and tkey < self.prev_tkey - 180 * 86400.0:
            self.year_off += 366 * 86400.0
            tkey += 366 * 86400.0
        self.prev_tkey = tkey
        return tkey

    def _see_ts(self, ts, tkey):
        if ts is None or tkey is None:
            return
        if self.first_ts is None:
            self.first_ts = ts
        self.last_ts = ts
        self.last_tkey = tkey

    def _approx_tkey(self):
        """The time of a line without its own timestamp: the last one seen before it (maybe in skipped bytes)."""
        buf = self._buf
        if buf is not None and self._buf_pos > self._slow_end:
            lo = max(self._slow_end, self._buf_pos - 65536)
            last = None
            for m in _TS_BYTES_RX.finditer(buf, lo, self._buf_pos):
                last = m
            if last is not None:
                g = last.groups()
                if g[0] is not None:
                    k = _tkey(g[0], g[1], g[2], g[3], g[4])
                else:
                    k = _tkey(g[5], g[6], g[7], g[8], g[9])
                if k is not None:
                    return k + self.year_off
        return self.last_tkey

    # -- anchors ---------------------------------------------------------------------------------------------
    def anchors(self):
        if self._anchors is None:
            extra = []
            for stage, anchors in _MARK_ANCHORS.items():
                if stage == "api_ready" and self.ready:
                    continue
                if stage not in self.marked or (stage in ("api_ready", "request") and not self.ready):
                    for a in anchors:
                        if a not in extra:
                            extra.append(a)
            self._anchors = _STATIC_ANCHORS + tuple(a for a in extra if a not in _STATIC_ANCHORS)
        return self._anchors

    # -- progress ---------------------------------------------------------------------------------------------
    def _progress(self, mark, line, lineno):
        stage = mark.stage
        rank = mark.rank
        if stage not in self.marked:
            self.marked.add(stage)
            self.reached.add(rank)
            self.stage_marks.append({"stage": stage, "timestamp": line.ts or self.last_ts, "lineno": lineno})
            self._anchors = None
            # progress beyond what had been reached when an error happened: that error did not stop the run
            if self.cands:
                keep = []
                for c in self.cands:
                    if rank > max(c["srank"], c["ctx_at"]):
                        if len(self.recovered) < _MAX_RECOVERED:
                            self.recovered.append(c)
                    else:
                        keep.append(c)
                self.cands = keep
        new_ctx = rank
        if mark.role in ("x", "r") and rank + 1 < len(STAGES):
            new_ctx = rank + 1
        when = line.ts or self.last_ts
        if mark.role == "r" and not self.ready:
            self.ready = True
            self.ready_ts = when
            self._anchors = None
        if new_ctx > self.ctx:
            self.ctx = new_ctx
            self.ctx_since = when
            self.reached.add(new_ctx)

    def _markers(self, line, lineno):
        fmt = line.fmt
        msg = line.msg
        if fmt == "v":
            if line.level == "E":
                return
        elif fmt == "n":
            if line.level != "E" and ("- Init " in msg or "Destroy COMPLETE" in msg):
                self._comm(line, msg)
            if "distributed_init" in self.marked or line.level == "E":
                return
            self._progress(_MARKS_NCCL, line, lineno)
            return
        elif fmt not in ("u", "r"):
            return
        for mk in _MARKS_BY_FMT.get(fmt, ()):
            if mk.role == "e" and mk.stage in self.marked and mk.rank <= self.ctx:
                continue
            if mk.role == "r" and self.ready:
                continue
            if mk.role == "x" and mk.rank < self.ctx:
                continue
            if mk.key in msg and (mk.rx is None or mk.rx.search(msg)):
                self._progress(mk, line, lineno)

    def _comm(self, line, msg):
        m = _NCCL_COMM_RX.search(msg)
        if m is None:
            return
        key = (line.pid, m.group(1))
        event = m.group(2)
        if event == "Init START":
            if key in self.comms or len(self.comms) < _MAX_COMMS:
                self.comms[key] = "started"
        elif key in self.comms or len(self.comms) < _MAX_COMMS:
            self.comms[key] = "complete" if event == "Init COMPLETE" else "destroyed"

    # -- candidates -------------------------------------------------------------------------------------------
    def _stage_for(self, sig_mode, sig_stage, cls, frames):
        if sig_mode == "=":
            return sig_stage
        fstage = None
        if frames:
            fs = set(frames)
            if "distributed_init" in fs:
                fs.discard("cuda_init")
            fstage = min(fs, key=lambda s: _RANK[s])
            if fstage == "request" and 0 <= self.ctx < _RANK["api_ready"]:
                fstage = "engine_init"
        if fstage is not None:
            rank = _RANK[fstage]
        elif self.ctx >= 0:
            rank = self.ctx
        else:
            rank = None
        floor = None
        if sig_mode in (">", "^"):
            floor = sig_stage
        elif not sig_mode:
            floor = _CLASS_MIN.get(cls)
        if rank is None:
            if sig_mode in (">", "~"):
                return sig_stage
            return _CLASS_DEFAULT.get(cls, "unknown")
        if floor is not None and rank < _RANK[floor]:
            rank = _RANK[floor]
        return STAGES[rank]

    def _add(self, kind, cls, stage, text, lineno, line_ts, tkey, tkey_own, proc, pid, hint, context, rec_key,
             oom_seen=False, origin=None):
        if kind in ("F", "E") and cls == "other" and stage == "config":
            cls = "config_error"
        if self.until is not None and (origin or lineno) > self.until:
            # printed after the server was stopped (the record, or its traceback, began after the cutoff):
            # shutdown noise, reported apart and never the failure
            if len(self.after_stop) < _MAX_AFTER_STOP:
                self.after_stop.append({
                    "file": self.file, "node": self.node, "lineno": lineno, "line": _cut(text.strip()),
                    "timestamp": line_ts, "process": proc, "error_class": cls,
                    "kind": _KIND_NAME.get(kind, kind), "tkey": tkey, "index": self.index})
            return
        srank = _RANK.get(stage, -1)
        cand = {
            "kind": kind, "cls": cls, "stage": stage, "srank": srank, "ctx_at": self.ctx,
            "line": _cut(text.strip()), "lineno": lineno, "timestamp": line_ts, "tkey": tkey,
            "tkey_own": tkey_own, "process": proc, "pid": pid, "hint": hint, "context": context[:_MAX_CONTEXT],
            "file": self.file, "node": self.node, "index": self.index, "oom": oom_seen or cls == "oom",
        }
        if rec_key is not None:
            prev = self.rec_cand.get(rec_key)
            if prev is not None:
                if _TIER[prev["kind"]] <= _TIER[kind] and not (prev["kind"] == "E" and kind == "F"):
                    return
                prev.update(cand)
                return
            if len(self.rec_cand) > 256:
                self.rec_cand.clear()
            self.rec_cand[rec_key] = cand
        if len(self.cands) >= _MAX_CANDIDATES:
            self.dropped += 1
            return
        self.cands.append(cand)

    def _hint(self, sig, line, lineno):
        if self.until is not None and lineno > self.until:
            return
        if len(self.hints) < _MAX_HINTS:
            self.hints.append({"line": _cut(line.msg.strip(), 300), "lineno": lineno, "timestamp": line.ts,
                               "hint": sig.hint})

    def _proc_name(self, line):
        if line.proc:
            return line.proc
        if line.fmt == "n" and line.pid:
            return self.pid2proc.get(line.pid, "pid " + line.pid)
        if line.stream == "" and self.proc_hdr:
            return self.proc_hdr
        return None

    def _line_tkey(self, line):
        if line.outer_tkey is not None:
            return line.outer_tkey, True
        if line.tkey is not None:
            return line.tkey, True
        return None, False

    def _sig_candidate(self, sig, line, lineno, text, context=None, frames=None, rec_key=None):
        if sig.kind in ("h", "W"):
            self._hint(sig, line, lineno)
            return
        if sig.kind == "X":
            return
        stage = self._stage_for(sig.mode, sig.stage, sig.cls, frames)
        tkey, own = self._line_tkey(line)
        if tkey is None:
            tkey = self._approx_tkey()
        kind = "E" if sig.kind == "H" else sig.kind   # a header whose traceback never came
        proc, pid = self._proc_name(line), line.pid
        if proc is None:
            m = _SUBJECT_RX.search(text)
            if m is not None:
                proc, pid = "local_rank " + m.group(1), m.group(2)
        self._add(kind, sig.cls, stage, text, lineno, line.ts, tkey, own, proc, pid,
                  sig.hint, context or [text.strip()], rec_key)

    # -- tracebacks -------------------------------------------------------------------------------------------
    def _open_tb(self, line, lineno, text, header=None):
        tkey, own = self._line_tkey(line)
        if tkey is None:
            tkey = self._approx_tkey()
        warn_only = line.fmt in ("v", "c", "u", "p") and line.level in ("W", "I", "D")
        tb = _TB(line.stream, self._proc_name(line), line.pid, line.rec, lineno, line.ts, tkey, own, warn_only)
        if header is not None:
            tb.state = "header"
            tb.header = (header, text.strip(), lineno, line)
            tb.context.append(text.strip())
        else:
            tb.entries.append([None, None, []])
            tb.context.append(text.strip())
        if len(self.streams) >= _MAX_STREAMS:
            oldest = next(iter(self.streams))
            self._finish_tb(self.streams.pop(oldest))
        self.streams[line.stream] = tb

    def _tb_line(self, tb, line, lineno, body):
        """Feed one line of tb's stream; False when the line is not part of the traceback."""
        if tb.rec is not None and line.rec is not None and line.rec != tb.rec and tb.state != "header":
            return False
        st = tb.state
        stripped = body.strip()
        if st == "header":
            if stripped.startswith(_TB_START):
                tb.state = "frames"
                tb.entries.append([None, None, []])
                tb.rec = line.rec
                tb.context.append(stripped)
                return True
            if tb.header[0].key == "terminate called after throwing an instance of" and "what():" in body:
                tb.entries.append([stripped.split("what():", 1)[1].strip(), lineno, []])
                tb.state = "message"
                tb.context.append(stripped)
                return True
            return False
        if st == "frames":
            after_file = tb.chained == "file"
            tb.chained = False
            if stripped.startswith("File \""):
                m = _FRAME_RX.match(body)
                if m:
                    fs = _FRAME_STAGE.get(m.group(1))
                    if fs:
                        tb.frames.add(fs)
                tb.chained = "file"
                return True
            if body[:1] in (" ", "\t") or not stripped or _CARETS_RX.match(stripped):
                return True
            if stripped.startswith(_TB_START):
                return True
            if after_file and not _EXC_RX.match(stripped):
                # the source line of a frame whose indentation was lost (pasted logs)
                return True
            tb.entries[-1][0] = stripped
            tb.entries[-1][1] = lineno
            tb.state = "message"
            if len(tb.context) < _MAX_CONTEXT:
                tb.context.append(stripped)
            return True
        if st == "message":
            if not stripped:
                tb.state = "between"
                return True
            if stripped.startswith(_TB_START):
                return False
            if stripped.startswith(_CHAIN):
                tb.state = "between"
                tb.chained = "chain"
                return True
            msgs = tb.entries[-1][2]
            if len(msgs) < _MAX_MSG_LINES:
                msgs.append((stripped, lineno))
                if len(tb.context) < _MAX_CONTEXT:
                    tb.context.append(stripped)
                return True
            return False
        # between
        if not stripped:
            return True
        if stripped.startswith(_CHAIN):
            tb.chained = "chain"
            return True
        if stripped.startswith(_TB_START) and tb.chained == "chain":
            tb.entries.append([None, None, []])
            tb.state = "frames"
            tb.chained = False
            return True
        return False

    def _finish_tb(self, tb):
        if tb.state == "header" and not tb.entries:
            sig, text, lineno, line = tb.header
            self._sig_candidate(sig, line, lineno, text, rec_key=(tb.stream, tb.rec) if tb.rec else None)
            return
        frames = tb.frames
        chosen = None
        chosen_generic = None
        consequence = None
        oom_seen = False
        last_exc = None
        for exc, exc_lineno, msgs in tb.entries:
            if exc is None:
                continue
            last_exc = (exc, exc_lineno)
            level = "W" if tb.warn_only else "E"
            head = match_signature(exc, level)
            if head is not None and head.kind in ("C", "c"):
                if consequence is None:
                    consequence = (head, exc, exc_lineno)
                continue
            for text, ln in [(exc, exc_lineno)] + msgs:
                s = head if ln == exc_lineno else match_signature(text, level)
                if s is None:
                    continue
                if s.cls == "oom":
                    oom_seen = True
                if s.kind in ("F", "V", "H") and s.kind != "H":
                    if "g" in s.flags:
                        if chosen_generic is None:
                            chosen_generic = (s, text, ln)
                    elif chosen is None:
                        chosen = (s, text, ln)
                elif s.kind == "X":
                    return
        pick = chosen or chosen_generic
        proc = tb.proc
        rec_key = (tb.stream, tb.rec) if tb.rec else None
        if pick is not None:
            s, text, ln = pick
            cls = s.cls
            if oom_seen and cls in ("nccl_error", "cuda_error"):
                cls = "oom"
            stage = self._stage_for(s.mode, s.stage, cls, frames)
            self._add(s.kind, cls, stage, text, ln, tb.ts, tb.tkey, tb.tkey_own, proc, tb.pid, s.hint, tb.context,
                      rec_key, oom_seen, origin=tb.lineno)
            return
        if consequence is not None:
            s, text, ln = consequence
            stage = self._stage_for(s.mode, s.stage, s.cls, frames)
            self._add(s.kind, s.cls, stage, text, ln, tb.ts, tb.tkey, tb.tkey_own, proc, tb.pid, s.hint,
                      tb.context, rec_key, origin=tb.lineno)
            return
        if tb.warn_only:
            return
        if last_exc is not None:
            text, ln = last_exc
            cls = _classify_text(" ".join([text] + [m[0] for m in tb.entries[-1][2][:3]]))
            stage = self._stage_for("", None, cls, frames)
            self._add("F", cls, stage, text, ln, tb.ts, tb.tkey, tb.tkey_own, proc, tb.pid, None, tb.context,
                      rec_key, origin=tb.lineno)
            return
        if tb.header is not None:
            sig, text, lineno, line = tb.header
            self._sig_candidate(sig, line, lineno, text, context=tb.context, frames=frames, rec_key=rec_key)

    # -- one line ---------------------------------------------------------------------------------------------
    def segment(self, raw, lineno):
        text = raw.decode("utf-8", "replace")
        if "\x1b" in text or "\x00" in text:
            text = _clean(text)
        text = text.rstrip()
        if text[:1] == "[" and text[1:2].isdigit() and "m" in text[2:9]:
            text = _ORPHAN_ANSI_RX.sub("", text)
        line = _Line()
        c0 = text[:1]
        if c0.isdigit() or c0 in _MONTH_INITIALS or "|" in text[:80] or "]: " in text[:120]:
            text = _strip_wrappers(text, line)
        elif "[repeated " in text:
            text = _RAY_REPEAT_RX.sub("", text)
        if text[:1] == "[":
            m = _TEE_RX.match(text)
            if m:
                line.tee = m.group(1)
                text = text[m.end():]
        _parse(text, line)
        if line.tee is not None:
            # each worker copied by torchrun is a stream of its own, apart from torchrun's own lines
            line.stream = line.tee + "/" + line.stream
            if not line.proc:
                line.proc = line.tee
        tkey = line.tkey
        if line.outer_tkey is not None:
            line.outer_tkey = self._adj(line.outer_tkey)
            self.ts_sources.add(line.outer_src)
            if tkey is not None:
                line.tkey = tkey + self.year_off
            self._see_ts(line.ts or "", line.outer_tkey)
            if line.ts is None:
                self.last_ts = None
        elif tkey is not None:
            line.tkey = self._adj(tkey)
            self.ts_sources.add(line.fmt)
            self._see_ts(line.ts, line.tkey)
        if line.fmt == "v" and line.pid and len(self.pid2proc) < 512:
            self.pid2proc[line.pid] = line.proc
        self._line(line, lineno, text)

    def _line(self, line, lineno, text):
        stream = line.stream
        body = line.msg
        # open tracebacks: feed this line to its stream's, age the others
        if self.streams:
            tb = self.streams.get(stream)
            consumed = False
            if tb is not None:
                if self._tb_line(tb, line, lineno, body):
                    tb.idle = 0
                    consumed = True
                else:
                    del self.streams[stream]
                    self._finish_tb(tb)
            for key in list(self.streams):
                if key == stream:
                    continue
                other = self.streams[key]
                other.idle += 1
                limit = _TB_FRAMES_CLOSE if other.state == "frames" else _TB_IDLE_CLOSE
                if other.rec is not None and other.rec[0] != "nccl" and other.state in ("message", "between"):
                    limit = 0
                if other.idle > limit:
                    del self.streams[key]
                    self._finish_tb(other)
            if consumed:
                return
        stripped = body.strip()
        if not stripped:
            return
        if line.fmt in ("r", "v", "c", "u", "p") and stripped.startswith(_TB_START):
            if line.fmt == "r" and not line.proc and self.proc_hdr is None:
                pass
            self._open_tb(line, lineno, stripped)
            return
        if line.fmt == "r" and stream == "":
            m = _PROCESS_HDR_RX.match(stripped)
            if m:
                self.proc_hdr = m.group(1)
                return
        self._markers(line, lineno)
        lvl = line.level
        if lvl == "R":
            lvl = "W" if line.pywarn else "E"
        elif lvl == "D":
            return
        if line.fmt in ("r", "v") and (body.startswith("    ") or stripped.startswith(_CODE_STARTS)):
            # a frame or source line of a traceback whose start is not in this log (a cut or pasted excerpt):
            # the source text of a raise statement is not the error
            return
        sig = match_signature(body, lvl)
        rec_key = (stream, line.rec) if (line.rec is not None and line.fmt == "v") else None
        shown = "NCCL WARN " + body if line.fmt == "n" else body
        if sig is not None:
            if sig.kind == "H":
                self._open_tb(line, lineno, body, header=sig)
                return
            self._sig_candidate(sig, line, lineno, shown, rec_key=rec_key)
            return
        if line.fmt == "n" and line.level == "E":
            self._sig_candidate(_NCCL_WARN_SIG, line, lineno, shown)
            return
        if line.level == "E" and line.fmt in ("v", "c", "u", "p"):
            if rec_key is not None and rec_key in self.rec_cand:
                return
            cls = _classify_text(body)
            stage = self._stage_for("", None, cls, None)
            tkey, own = self._line_tkey(line)
            kind = "E"
            if line.fmt == "c" and line.rec and line.rec[1] == "ProcessGroupNCCL.cpp":
                kind = "c"
            self._add(kind, cls, stage, body, lineno, line.ts, tkey, own, self._proc_name(line), line.pid, None,
                      [stripped], rec_key)

    def finish(self):
        for key in list(self.streams):
            self._finish_tb(self.streams.pop(key))


_MARKS_BY_FMT = {}
for _mk in _MARKS:
    if _mk.fmt != "n":
        _MARKS_BY_FMT.setdefault(_mk.fmt, []).append(_mk)
_MARKS_NCCL = [mk for mk in _MARKS if mk.fmt == "n"][0]
_NCCL_WARN_SIG = _Sig(-1, "F", "", None, "nccl_error", ">distributed_init", "", None)
_TIER = {"F": 0, "E": 1, "V": 2, "C": 3, "c": 4, "H": 5}


def _classify_text(text):
    for cls, keys in _CLASS_RULES:
        for k in keys:
            if k in text:
                return cls
    return "other"


# --------------------------------------------------------------------------------------------------------------
# the byte scanner (prefilter + line mode inside tracebacks)
# --------------------------------------------------------------------------------------------------------------

def _ts_text(match):
    """A timestamp found by the byte scanner, as printed (without a glog level letter)."""
    txt = match.group(0).decode("ascii", "replace").strip()
    if txt[:1] in "IWEF" and txt[1:2].isdigit():
        txt = txt[1:]
    return txt.rstrip(".")


def _scan_stream(scan, read):
    """Feed ``scan`` from ``read(n) -> bytes`` in blocks; memory stays at about two blocks.

    A block is processed up to its last line end; the unfinished line is carried into the next block and
    processed on its own, so a block is never copied.
    """
    carry = b""
    head = None
    tail = b""
    abs_off = 0
    while True:
        data = read(BLOCK_SIZE)
        if not data:
            break
        start = 0
        if carry:
            e_n = data.find(b"\n")
            e_r = data.find(b"\r")
            e = min(x for x in (e_n, e_r, len(data) - 1) if x >= 0)
            if e_n < 0 and e_r < 0 and len(carry) + len(data) < MAX_SEGMENT * 4:
                carry += data
                continue
            piece = carry + data[:e + 1]
            if head is None:
                head = piece[:65536]
            scan._abs = abs_off
            _scan_block(scan, piece, len(piece))
            tail = (tail + piece)[-65536:]
            abs_off += len(piece)
            carry = b""
            start = e + 1
        cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        if cut <= start:
            if len(data) - start < MAX_SEGMENT * 4:
                carry = data[start:]
                continue
            cut = len(data)
        if head is None:
            head = data[start:start + 65536]
        scan._abs = abs_off - start
        _scan_block(scan, data, cut, start)
        tail = (tail + data[max(start, cut - 65536):cut])[-65536:]
        abs_off += cut - start
        carry = data[cut:]
    if carry:
        if head is None:
            head = carry[:65536]
        scan._abs = abs_off
        _scan_block(scan, carry, len(carry))
        tail = (tail + carry)[-65536:]
        abs_off += len(carry)
    scan._buf = None
    scan.finish()
    # lines in the file: line ends, plus an unterminated last line
    scan.lines = scan.lineno - 1 if (not tail or tail[-1:] == b"\n") else scan.lineno
    if scan.first_ts is None and head:
        m = _TS_BYTES_RX.search(head)
        if m is not None:
            scan.first_ts = _ts_text(m)
    # the last timestamp of the file, also when the last lines were skipped by the prefilter
    tail_start = abs_off - len(tail)
    last = None
    for m in _TS_BYTES_RX.finditer(tail, max(0, scan._slow_abs - tail_start)):
        last = m
    if last is not None:
        scan.last_ts = _ts_text(last)


def _scan_block(scan, buf, end, pos=0):
    scan._buf = buf
    scan._slow_end = pos
    anchors = None
    nexts = None
    find = buf.find
    count = buf.count
    while pos < end:
        if scan.streams:
            pos = _one_segment(scan, buf, pos, end)
            continue
        cur = scan.anchors()
        if cur is not anchors:
            anchors = cur
            nexts = [find(a, pos, end) for a in anchors]
        best = -1
        for i, n in enumerate(nexts):
            if 0 <= n < pos:
                n = find(anchors[i], pos, end)
                nexts[i] = n
            if n >= 0 and (best < 0 or n < best):
                best = n
        if best < 0:
            scan.lineno += count(b"\n", pos, end)
            pos = end
            break
        start = max(buf.rfind(b"\n", pos, best), buf.rfind(b"\r", pos, best)) + 1
        if start < pos:
            start = pos
        scan.lineno += count(b"\n", pos, start)
        pos = _one_segment(scan, buf, start, end)


def _one_segment(scan, buf, pos, end):
    """Process the segment that starts at ``pos``; return the position after its terminator."""
    e_n = buf.find(b"\n", pos, end)
    e_r = buf.find(b"\r", pos, end)
    if e_n < 0:
        e = e_r if e_r >= 0 else end
    elif e_r < 0:
        e = e_n
    else:
        e = min(e_n, e_r)
    if e - pos > MAX_SEGMENT:
        e = pos + MAX_SEGMENT
        nxt = e
        newline = False
    elif e < end and buf[e:e + 1] == b"\r" and buf[e + 1:e + 2] == b"\n":
        nxt = e + 2
        newline = True
    elif e < end:
        nxt = e + 1
        newline = buf[e:e + 1] == b"\n"
    else:
        nxt = end
        newline = False
    seg = buf[pos:e]
    if seg or newline:
        scan._buf_pos = pos
        scan.segment(seg, scan.lineno)
        scan._slow_end = nxt
        scan._slow_abs = scan._abs + nxt
    if newline:
        scan.lineno += 1
    return nxt


# --------------------------------------------------------------------------------------------------------------
# the answer
# --------------------------------------------------------------------------------------------------------------

class LogStageError(Exception):
    """A log that cannot be read (the message names the path and the fix)."""


def expand_paths(paths):
    """Files to read for ``paths``: files as given, directories expanded (sorted, recursively, no hidden)."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            found = []
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for f in sorted(files):
                    if not f.startswith("."):
                        full = os.path.join(root, f)
                        if os.path.isfile(full):
                            found.append(full)
            if not found:
                raise LogStageError("log directory %s holds no files; point paths at the captured logs" % p)
            out.extend((p, f) for f in found)
        else:
            out.append((p, p))
    return out


def _open_log(path):
    if not os.path.exists(path):
        raise LogStageError("log file %s does not exist; check the path (or fetch the log from the node first)" % path)
    if not os.path.isfile(path):
        raise LogStageError("log path %s is not a regular file" % path)
    try:
        fh = open(path, "rb")
    except (IOError, OSError) as exc:
        raise LogStageError("cannot read log file %s: %s; fix its permissions or run as a user that can read it"
                            % (path, exc.strerror or exc))
    if path.endswith(".gz"):
        return gzip.GzipFile(fileobj=fh, mode="rb")
    return fh


def _public_error(c):
    if c is None:
        return None
    out = {
        "line": c["line"], "file": c["file"], "lineno": c["lineno"], "timestamp": c["timestamp"],
        "process": c["process"], "node": c["node"], "stage": c["stage"], "error_class": c["cls"],
        "kind": _KIND_NAME.get(c["kind"], c["kind"]),
    }
    if c.get("pid"):
        out["pid"] = int(c["pid"]) if str(c["pid"]).isdigit() else c["pid"]
    if c.get("hint"):
        out["hint"] = c["hint"]
    if c.get("context") and len(c["context"]) > 1:
        out["context"] = list(c["context"])
    return out


_KIND_NAME = {"F": "failure", "E": "error_line", "V": "victim", "C": "consequence", "c": "consequence",
              "H": "failure"}


def _sort_key(c):
    t = c["tkey"]
    return (0 if t is not None else 1, t if t is not None else 0.0, c["index"], c["lineno"])


def _build_answer(scans):
    tiers = (("F",), ("E",), ("V",), ("C",))
    root = None
    firsts = []
    for kinds in tiers:
        firsts = []
        for sc in scans:
            mine = [c for c in sc.cands if c["kind"] in kinds]
            if mine:
                firsts.append(min(mine, key=lambda c: c["lineno"]))
        if firsts:
            root = min(firsts, key=_sort_key)
            break
    all_cands = []
    for sc in scans:
        all_cands.extend(sc.cands)
    all_cands.sort(key=_sort_key)

    # uncertainty of the cross-file order
    why = []
    if root is not None and len([sc for sc in scans if sc.cands]) > 1:
        rivals = [c for c in firsts if c is not root and c["index"] != root["index"]]
        if root["tkey"] is None:
            why.append("the first error has no timestamp; files were taken in the order given")
        elif not root["tkey_own"]:
            why.append("the first error line has no timestamp of its own; the last timestamp before it was used")
        for c in rivals:
            if c["tkey"] is None:
                why.append("%s: its first error has no timestamp" % c["node"])
            elif root["tkey"] is not None and abs(c["tkey"] - root["tkey"]) <= _TIE_SECONDS:
                why.append("%s failed within %.0f s of %s (log timestamps have one-second resolution)"
                           % (c["node"], _TIE_SECONDS, root["node"]))
        sources = set()
        for sc in scans:
            if sc.cands:
                sources.update(sc.ts_sources)
        if len(set(s[:7] for s in sources if s)) > 1:
            why.append("the files carry timestamps of different kinds (%s); clocks or time zones may differ"
                       % ", ".join(sorted(s for s in sources if s)))
    uncertain = bool(why)

    reached = set()
    for sc in scans:
        reached.update(sc.reached)
    if root is not None and root["srank"] >= 0:
        reached.add(root["srank"])
    stages_reached = [STAGES[r] for r in sorted(reached) if r >= 0]
    last_rank = max([sc.ctx for sc in scans] + [-1])
    last_stage = STAGES[last_rank] if last_rank >= 0 else None

    oom_c = None
    for c in all_cands:
        if c["oom"]:
            oom_c = c
            break
    oom = {"occurred": oom_c is not None, "stage": oom_c["stage"] if oom_c else None}
    if oom_c is not None:
        oom["line"] = oom_c["line"]
        oom["memory_sizing"] = oom_c["stage"] in ("engine_init", "request")
        if oom_c["stage"] in ("environment", "config", "cuda_init", "distributed_init"):
            oom["note"] = "out of memory before the weights were loaded: memory is held elsewhere, not a sizing problem"
        elif oom_c["stage"] == "weight_loading":
            oom["note"] = "the weights do not fit in the memory left for them"
        elif oom_c["stage"] in ("engine_init", "request"):
            oom["note"] = "weights fit; profiling, KV cache, CUDA graphs or a batch did not (a memory-sizing problem)"
        else:
            oom["note"] = "the log does not show in which stage the memory ran out"

    consequences = []
    for c in all_cands:
        if c is root:
            continue
        if len(consequences) >= _MAX_CONSEQUENCES:
            break
        consequences.append({"file": c["file"], "node": c["node"], "lineno": c["lineno"], "line": c["line"],
                             "timestamp": c["timestamp"], "kind": _KIND_NAME.get(c["kind"], c["kind"]),
                             "error_class": c["cls"], "stage": c["stage"]})

    timeline = []
    for sc in scans:
        own = None
        for kinds in tiers:
            mine = [c for c in sc.cands if c["kind"] in kinds]
            if mine:
                own = min(mine, key=lambda c: c["lineno"])
                break
        timeline.append({
            "node": sc.node, "file": sc.file, "lines": sc.lines,
            "first_timestamp": sc.first_ts, "last_timestamp": sc.last_ts,
            "stage_reached": STAGES[sc.ctx] if sc.ctx >= 0 else None,
            "stage_since": sc.ctx_since,
            "ready": sc.ready, "ready_timestamp": sc.ready_ts,
            "first_error": _public_error(own),
            "stage_marks": list(sc.stage_marks),
            "recovered_errors": [_public_error(c) for c in sc.recovered],
            "hints": list(sc.hints),
            "until": sc.until,
        })

    after_stop = []
    for sc in scans:
        after_stop.extend(sc.after_stop)
    after_stop.sort(key=lambda c: (0 if c["tkey"] is not None else 1, c["tkey"] or 0.0, c["index"], c["lineno"]))
    after_stop = [dict((k, v) for k, v in c.items() if k not in ("tkey", "index")) for c in after_stop]

    ans = {
        "stage": root["stage"] if root else "none",
        "error_class": root["cls"] if root else None,
        "first_error": _public_error(root),
        "oom": oom,
        "stages_reached": stages_reached,
        "last_stage": last_stage,
        "consequences": consequences,
        "timeline": timeline,
        "order_uncertain": uncertain,
        "order_uncertain_why": "; ".join(why) if why else None,
        "after_stop": after_stop[:_MAX_AFTER_STOP],
    }
    if root is not None:
        ans["summary"] = "%s failed (%s) on %s%s: %s" % (
            root["stage"], root["cls"], root["node"],
            " at %s" % root["timestamp"] if root["timestamp"] else "", _cut(root["line"], 200))
    else:
        ready = [sc for sc in scans if sc.ready]
        if ready:
            ans["summary"] = "no failure found; API ready since %s" % (ready[0].ready_ts or "start")
        elif last_stage is not None:
            since = None
            for sc in scans:
                if sc.ctx == last_rank:
                    since = sc.ctx_since
                    break
            open_on, done_on = _comm_nodes(scans)
            if done_on and not open_on:
                # every NCCL communicator that was set up was destroyed again: the program ended its
                # distributed work (a collective check, or a clean shutdown before readiness)
                ans["summary"] = ("no failure found; last stage %s: NCCL communicators initialised and destroyed "
                                  "again on %s" % (last_stage, ", ".join(done_on)))
            else:
                ans["summary"] = "no failure found; stuck in %s%s" % (last_stage, " since %s" % since if since else "")
                if open_on:
                    ans["summary"] += "; NCCL communicator init started and never completed on %s" % ", ".join(open_on)
        else:
            ans["summary"] = "no failure found and no vLLM stage marker seen"
        stop = _external_stop(all_cands)
        if stop is not None:
            ans["summary"] += "; stopped from outside by signal %s (%s line %d)" % stop
    if after_stop:
        ans["summary"] += "; %d error line(s) after the stop (shutdown noise, see after_stop)" % len(after_stop)
    return ans


def _comm_nodes(scans):
    """Nodes with an NCCL communicator whose init never completed, and the nodes whose communicators were all
    initialised and destroyed again (empty unless that holds for every communicator of every file); each list
    in file order, without repeats."""
    open_on, done_on = [], []
    all_done = True
    for sc in scans:
        states = set(sc.comms.values())
        if "started" in states and sc.node not in open_on:
            open_on.append(sc.node)
        if states - {"destroyed"}:
            all_done = False
        elif states and sc.node not in done_on:
            done_on.append(sc.node)
    return open_on, done_on if all_done else []


def _external_stop(cands):
    """(signal, node, lineno) of the first line saying that the launcher itself was stopped by a signal."""
    for c in cands:
        if c["kind"] == "c":
            m = _STOP_RX.search(c["line"])
            if m is not None:
                return (m.group(1) or m.group(2), c["node"], c["lineno"])
    return None


def _node_names(items, nodes):
    names = []
    for i, (given, path) in enumerate(items):
        if nodes and i < len(nodes) and nodes[i] not in (None, ""):
            names.append(str(nodes[i]))
        else:
            names.append(None)
    return names


def _until_value(value, what):
    """One cutoff: None (no cutoff) or a line count >= 0."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise LogStageError("until for %s is %r; give a line count (an integer >= 0) or null" % (what, value))
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise LogStageError("until for %s is %r; give a line count (an integer >= 0) or null" % (what, value))
    if n < 0 or (isinstance(value, float) and n != value):
        raise LogStageError("until for %s is %r; give a line count (an integer >= 0) or null" % (what, value))
    return n


def until_list(until, keys):
    """``until`` as a list of cutoffs aligned with ``keys`` (paths or log names).

    ``until`` is None (no cutoff), a list (one entry per key, None for no cutoff), a dict (key -> line count;
    keys not in it get no cutoff) or, for a single key, one number.  Raises :class:`LogStageError`.
    """
    if until is None:
        return [None] * len(keys)
    if isinstance(until, dict):
        unknown = [k for k in until if k not in keys]
        if unknown:
            raise LogStageError("until names %s, which is not one of the logs given (%s)"
                                % (unknown[0], ", ".join(str(k) for k in keys)))
        return [_until_value(until.get(k), k) for k in keys]
    if isinstance(until, (list, tuple)):
        if len(until) != len(keys):
            raise LogStageError("until has %d entries for %d logs; give one per log (null for no cutoff)"
                                % (len(until), len(keys)))
        return [_until_value(u, k) for u, k in zip(until, keys)]
    if len(keys) == 1:
        return [_until_value(until, keys[0])]
    raise LogStageError("until is one value for %d logs; give a list with one entry per log" % len(keys))


def classify_files(paths, nodes=None, until=None):
    """Classify one or many logs (one per node, rank or container) into the first failing stage.

    ``paths``: files or directories (expanded, sorted).  ``nodes``: optional names, one per entry of
    ``paths`` (a directory's files all get its name).  ``until``: optional per-file cutoff counted in lines
    (see :func:`until_list`; a directory entry takes no cutoff): the file's line count when the server was
    last seen alive; errors on later lines are shutdown noise, returned under ``after_stop`` and never the
    failure.  Returns the JSON-serialisable answer.  Raises :class:`LogStageError` naming an unreadable path.
    """
    if isinstance(paths, (str, bytes)):
        paths = [paths]
    paths = [p.decode("utf-8", "surrogateescape") if isinstance(p, bytes) else str(p) for p in paths]
    if not paths:
        raise LogStageError("no log paths given")
    given_nodes = list(nodes) if nodes else []
    cutoffs = until_list(until, paths)
    items = []
    for i, p in enumerate(paths):
        node = given_nodes[i] if i < len(given_nodes) and given_nodes[i] not in (None, "") else None
        for top, f in expand_paths([p]):
            if node is not None:
                name = str(node)
            elif top != f:
                name = os.path.relpath(f, top)
            else:
                name = os.path.basename(f) or f
            if cutoffs[i] is not None and top != f:
                raise LogStageError("until is given for %s, a directory; give the cutoff per file (list its files "
                                    "in paths)" % p)
            items.append((f, name, cutoffs[i]))
    scans = []
    for idx, (f, name, cut) in enumerate(items):
        sc = _Scan(f, name, idx, cut)
        fh = _open_log(f)
        try:
            _scan_stream(sc, fh.read)
        except (IOError, OSError, EOFError) as exc:
            raise LogStageError("error while reading log file %s: %s" % (f, exc))
        finally:
            fh.close()
        scans.append(sc)
    return _build_answer(scans)


class _BytesReader(object):
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def read(self, n):
        chunk = self.data[self.pos:self.pos + n]
        self.pos += len(chunk)
        return chunk


def _as_bytes(text):
    if text is None:
        return b""
    if isinstance(text, bytes):
        return text
    return str(text).encode("utf-8", "surrogateescape") if _has_surrogates(text) else str(text).encode("utf-8")


def _has_surrogates(text):
    try:
        str(text).encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def classify_texts(texts, names=None, nodes=None, until=None):
    """Like :func:`classify_files` for log contents already in memory (one text per node).

    ``until``: optional cutoff per text, counted in lines (see :func:`until_list`; a dict is keyed by name).
    """
    all_names = []
    for idx in range(len(texts)):
        name = names[idx] if names and idx < len(names) and names[idx] else ("log" if len(texts) == 1 else "log%d" % (idx + 1))
        all_names.append(str(name))
    cutoffs = until_list(until, all_names)
    scans = []
    for idx, text in enumerate(texts):
        name = all_names[idx]
        node = nodes[idx] if nodes and idx < len(nodes) and nodes[idx] not in (None, "") else name
        sc = _Scan(str(name), str(node), idx, cutoffs[idx])
        data = _as_bytes(text)
        if not isinstance(text, bytes) and _has_surrogates(text):
            data = str(text).encode("utf-8", "replace")
        _scan_stream(sc, _BytesReader(data).read)
        scans.append(sc)
    return _build_answer(scans)


def classify_text(text, name="log", node=None, until=None):
    """Classify one log given as a string (or bytes); same answer as :func:`classify_files` on that content.

    ``until``: optional line count written before the server was stopped (later errors go to ``after_stop``).
    """
    return classify_texts([text], names=[name], nodes=[node], until=None if until is None else [until])
