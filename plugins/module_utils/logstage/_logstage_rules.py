"""The rules data of the log_stage classifier: what changes with every vLLM release.

Everything here is data read by the scanner in ``_logstage.py``; nothing here reads a log.  When a vLLM release
renames a function, adds a start-up message or a failure text, this is the file to change (with a sample in the
unit tests).  Each table says where its rows come from:

* :data:`SIGNATURES`: failure, victim, consequence and header texts, from the source strings of vLLM, PyTorch,
  NCCL, the CUDA runtime, the NVIDIA container toolkit, huggingface_hub, argparse, uvicorn and Ray (the reference
  ``vllm-stages.md`` lists them by stage with their files);
* :data:`MARKERS`: the log lines that prove a stage was reached (vLLM's own INFO messages, uvicorn's, tqdm bars);
* the traceback-frame tables (:data:`FRAMES`, serving-only frames, logger lines naming a worker method) live in
  ``_logstage_frames.py`` (split by responsibility: functions there, messages here); the messages vLLM raises
  while one stage runs, listed from its source, in ``_logstage_messages.py``;
* :data:`CLASS_KEYWORDS`, :data:`CLASS_FLOOR`, :data:`CLASS_DEFAULT_STAGE`: how an exception without a signature
  is classed and placed.

Why one file (over 1,000 lines): it is tables, one row a source string with where it comes from; the scanner
compiles them once, and a row is found by its text.

Standard library only; imports on Python 3.9.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

STAGES = ("environment", "config", "cuda_init", "distributed_init", "weight_loading", "engine_init",
          "api_ready", "request")
ANSWER_STAGES = STAGES + ("none", "unknown")
# container_error, image_pull, scheduling (issue 35): a container runtime or orchestrator refused to run the server
# (runc/crun/OCI, the engine's runtime configuration; the image could not be pulled; no node could take the pod)
ERROR_CLASSES = ("oom", "cuda_error", "nccl_error", "driver_mismatch", "config_error", "timeout", "missing_file",
                 "import_error", "port_in_use", "illegal_memory_access", "engine_dead", "other",
                 "container_error", "image_pull", "scheduling")
STAGE_RANK = dict((s, i) for i, s in enumerate(STAGES))
# what a line that reads as an error says (ERROR_WORDS): the words programs and runtimes print for a failure - GNU's
# "prog: error: ...", "fatal", "failed"/"failure", crashes and aborts, signals ("Killed", "Segmentation fault", "core
# dumped", a process "killed by" or that "was killed"), a non-zero exit code or status, refusals ("cannot", "unable
# to", "permission denied", "not found"), an assertion, a timeout, memory exhausted; collect_env's "Could not collect"
# (a tool that is not installed) is no error, nor a count of none ("failed=0", "timed out: none", "errors": {}), nor
# a label's value (reason="error")
ERROR_WORDS_RX = (r"(?i)(?:^|[\s:\[(']|(?<!=)\")(?:error|fatal|failed|failure|fails|crash(?:ed|es|loopbackoff)?|panic|aborted|"
                  r"segmentation fault|core dumped|out of memory|timed out|cannot|could not(?! collect)|unable to|"
                  r"refused|denied|not found|assert(?:ion)?)\b(?!\s*[:=]\s*(?:0|none|false|\{\}|\[\])(?:\W|$))|"
                  r"\bexit(?:ed)?(?: with)? (?:code|status)\W{0,3}[1-9]|\bexitCode\W{0,3}[1-9]|"
                  r"^Killed\b|\b(?:was|been|got|is|were) killed\b|\bkilled by\b")

# --------------------------------------------------------------------------------------------------------------
# signature kinds: what a matching line means
# --------------------------------------------------------------------------------------------------------------
FAILURE = "failure"                    # a root cause
VICTIM = "victim"                      # what a surviving rank reports after another one died
CONSEQUENCE = "consequence"            # a wrapper that reports an earlier failure; stands in when nothing else is there
WEAK_CONSEQUENCE = "weak_consequence"  # a wrapper that is never the root cause
HEADER = "header"                      # the real error is in the traceback that follows
# a dump the engine logs about the batch that failed, before it reports the failure: stands in for the failure only
# when no consequence reports it
DIAGNOSTIC = "diagnostic"
HANG_HINT = "hang_hint"                # a worker is stuck; kept as a hint
WARNING_HINT = "warning_hint"          # a warning worth showing; kept as a hint
ERROR_LINE = "error_line"              # an ERROR record without a signature (not a table kind; set by the scanner)
# (not table kinds either) a request answered with a server error (a 5xx access line), a traceback the paste cut
# before its exception: each stands in for the failure only when nothing else is there
ACCESS_ERROR = "access_error"
CUT_TRACEBACK = "cut_traceback"
# (round 33) a plain line that reads as an error in no format the scanner knows ("error: ...", "X failed", "exit code
# 137", "Killed", a linker's "cannot find -lx"), in a file with no other error and no stage marker: the failure the
# paste shows, its stage unknown - `none` is for a log that shows no failure (the last tier: anything else wins)
ERROR_WORDS = "error_words"

# placement: how a signature's stage is chosen ("the log's stage" is the furthest stage its markers prove)
FIXED = "fixed"                        # the message's own meaning fixes the stage, wherever it is printed
FIXED_UNTIL_READY = "fixed_until_ready"  # the stage given, unless the log shows the API server up (then the log's)
AT_LEAST = "at_least"                  # the log's stage, at least the one given (the one given without markers)
AT_LEAST_OR_UNKNOWN = "at_least_or_unknown"  # the log's stage, at least the one given; unknown without markers
WHERE_OR = "where_or"                  # the log's stage; the one given without markers
WHERE = "where"                        # the log's stage; unknown without markers

# level flags: a signature is matched on ERROR/CRITICAL records, raw lines and exception lines; these add levels
GENERIC = "generic"                    # a more specific line of the same error wins
AT_WARNING = "at_warning"              # also on WARNING records (the source logs it at WARNING)
AT_INFO = "at_info"                    # also on INFO records (hang hints)
AT_DEBUG = "at_debug"                  # also on DEBUG records (the source logs it at DEBUG)

# marker roles and line formats
ENTRY = "entry"                        # the stage has begun
EXIT = "exit"                          # the stage is over: the log is in the next one
READY = "ready"                        # the API server is up
FMT_VLLM = "vllm"                      # a vLLM logger record (message part)
FMT_UVICORN = "uvicorn"                # a uvicorn record ("INFO:     ...")
FMT_RAW = "raw"                        # any other line (tqdm bar, print, Gloo, traceback line)
FMT_NCCL = "nccl"                      # an NCCL INFO/WARN line
FMT_C10 = "c10"                        # a PyTorch c10 / glog line
FMT_PYLOG = "pylog"                    # a Python-logging line of another library

# the stage basis reported with an answer: why the stage was chosen
BASIS_MARKERS = "markers"              # the log's own stage markers (how far it got)
BASIS_FRAMES = "frames"                # the traceback's frames (which vLLM function was running)
BASIS_MESSAGE = "message"              # the message's own meaning (a signature's stage, the class's usual stage)
# no marker, mapped frame or fixed meaning: read from what the error shows (serving-only frames, the logger's file,
# the words, a collective's numbers)
BASIS_INFERRED = "inferred"

# how sure the stage is (the answer's ``confidence``); null for ``none`` and ``unknown``
CONF_HIGH = "high"                     # the message's fixed meaning, mapped frames, a named worker method, markers
# a signature's or class's usual stage without markers; serving-only frames, a serving file's logger record, a
# collective's numbers
CONF_MEDIUM = "medium"
CONF_LOW = "low"                       # the error's words alone
CONFIDENCES = (CONF_HIGH, CONF_MEDIUM, CONF_LOW)

# --------------------------------------------------------------------------------------------------------------
# signatures: (kind, key, regex or None, error class, placement, stage, level flags, hint)
# The key is a plain substring tested first (cheap); the regex, when given, must also match.
# --------------------------------------------------------------------------------------------------------------
SIGNATURES = (
    # --- a request the server refused (issue 35, round 10: the corpus's vocabulary places a rejected request at
    # request): the request checks' answer (serving_engine.py _validate_input: "This model's maximum context length
    # is ...", 0.2 -> current), as the server logs it in its "Error in preprocessing" record or a client quotes it (a
    # client library's own report of a 4xx is placed by STAGE_WORDS).  Never a root cause beside a failure of the
    # server (a consequence: it stands in only when nothing else is there), low without markers (USUAL_STAGE_LOW)
    (CONSEQUENCE, "maximum context length is", None, "other", WHERE_OR, "request", (AT_WARNING,),
     "the server refused a request longer than the model's context (a 400): shorten it or raise --max-model-len"),
    # round 19: the scheduler ignoring a prompt longer than it can ever schedule (vllm/core/scheduler.py V0 0.2 ->
    # 0.10, logger.warning "Input prompt (%d tokens) is too long and exceeds limit of %d"; the request finishes as
    # FINISHED_IGNORED): only the scheduler of a running engine has requests to ignore
    (CONSEQUENCE, "is too long and exceeds limit of", r"Input prompt \(\d+ tokens\).* is too long and exceeds limit of",
     "other", FIXED, "request", (AT_WARNING,),
     "the scheduler ignored a prompt longer than max_model_len (or max_num_batched_tokens without chunked prefill)"),
    # the error body of a 500 that a client quotes (round 13): vLLM's ErrorResponse ({"object": "error", "message":
    # ..., "code": 500}), FastAPI's HTTPException ({"detail": ...}), Ray Serve's "Internal Server Error (Request ID:
    # ...)": the server was up and a request failed in it; the server's own traceback, when pasted, is the cause
    (CONSEQUENCE, "Internal Server Error", r"\"(?:message|detail|error)\":\s*\"[^\"]*\bInternal Server Error\b",
     "other", WHERE_OR, "request", (AT_WARNING,), "the server answered a request with 500: its own log has the cause"),
    # round 31: openai-python's APIStatusError as a caller prints it (_exceptions.py: "Error code: %d - %s", the body
    # after it): the server was up and answered a request with a server error
    (CONSEQUENCE, "Error code: 5", r"\bError code: 5\d\d - [{\[]", "other", WHERE_OR, "request", (AT_WARNING,),
     "the server answered a request with a 5xx: its own log has the cause"),
    # round 31: the guidance structured-output backend refusing a token of a request's grammar
    # (v1/structured_output/backend_guidance.py GuidanceGrammar.check_error, logged at WARNING)
    (FAILURE, "LLMatcher error:", None, "other", FIXED, "request", (AT_WARNING,),
     "the guidance backend refused a token for a request's grammar (structured output)"),
    # --- consequences: wrappers that report an earlier failure ---------------------------------------------
    # v1/engine/utils.py wait_for_engine_startup (core_client.py before 0.9) raises it when an engine core process
    # exits before its READY handshake: the engine never ran (as WorkerProc initialization failed, below)
    (CONSEQUENCE, "Engine core initialization failed", None, "other", WHERE, None, (),
     "a wrapper: the root cause is the first error above it"),
    # v1/executor/multiproc_executor.py WorkerProc.wait_for_ready raises it in the executor's constructor while the
    # engine core starts: the engine never ran, so it is not a dead engine (as "EngineCore failed to start.")
    (CONSEQUENCE, "WorkerProc initialization failed due to an exception in a background process", None,
     "other", WHERE, None, (), None),
    (CONSEQUENCE, "Frontend process failed during engine core initialization", None, "engine_dead", WHERE, None, (), None),
    # v1/executor/multiproc_executor.py collective_rpc/get_response: a worker answered FAILURE with its exception's
    # text (WorkerProc.worker_busy_loop catches it, logs "WorkerProc hit an exception." and goes on): not a dead engine
    (CONSEQUENCE, "Worker failed with error", r"Worker failed with error '", "other", WHERE, None, (), None),
    (CONSEQUENCE, "One or more workers failed", None, "engine_dead", WHERE, None, (), None),
    (CONSEQUENCE, "EngineDeadError", None, "engine_dead", WHERE_OR, "request", (AT_WARNING,),
     "the engine core died; look for the first error of the engine or a worker"),
    (CONSEQUENCE, "AsyncEngineDeadError", None, "engine_dead", WHERE_OR, "request", (AT_WARNING,), None),
    (CONSEQUENCE, "Engine loop has died", None, "engine_dead", WHERE_OR, "request", (AT_WARNING,), None),
    (CONSEQUENCE, "is already dead, terminating server process", None,
     "engine_dead", WHERE_OR, "request", (AT_WARNING,), None),
    # V0 engine/multiprocessing/client.py run_heartbeat_loop (0.6 -> 0.10): setup() starts it only once the MQLLMEngine
    # answered IS_SERVER_READY ("Started after the MQLLMEngine is ready"): as the V1 monitor below
    (CONSEQUENCE, "Engine process (pid", r"Engine process \(pid \d+\) died",
     "engine_dead", WHERE_OR, "request", (AT_WARNING,), None),
    (CONSEQUENCE, "Engine process failed to start", None, "engine_dead", WHERE, None, (AT_WARNING,), None),
    # v1/engine/core_client.py MPClient.__init__ starts its engine-core monitor (start_engine_core_monitor, 0.9+)
    # after the cores' READY handshake: the engine had started, so without markers it was serving (as EngineDeadError)
    (CONSEQUENCE, "died unexpectedly, shutting down client", r"Engine core proc \S+ died unexpectedly",
     "engine_dead", WHERE_OR, "request", (AT_WARNING,), None),
    (CONSEQUENCE, "ChildFailedError", None, "other", WHERE, None, (),
     "torchrun's summary; the failing rank's own error comes first"),
    (CONSEQUENCE, "failed (exitcode:", r"failed \(exitcode: -?\d+\) local_rank: \d+",
     "other", WHERE, None, (AT_WARNING,), None),
    (CONSEQUENCE, "The actor died", None, "engine_dead", WHERE, None, (AT_WARNING,), None),
    # round 23: Ray Serve's controller (serve/_private/deployment_state.py, WARNING): a replica that stopped answering
    # its health check - checked only once the replica runs, i.e. after its constructor built the engine
    (CONSEQUENCE, "Didn't receive health check response for replica", None, "timeout", WHERE_OR, "request",
     (AT_WARNING,), None),
    (CONSEQUENCE, "RayActorError", None, "engine_dead", WHERE, None, (AT_WARNING,), None),
    (CONSEQUENCE, "ActorDiedError", None, "engine_dead", WHERE, None, (AT_WARNING,), None),
    # (round 87) the raylet's word for a worker process that crashed under a task (Ray's core worker: "A worker died
    # or was killed while executing a task by an unexpected system error"): a consequence - Ray often prints it before
    # the dead worker's own last lines, which say why
    (CONSEQUENCE, "A worker died or was killed while executing a task", None, "other", WHERE, None, (AT_WARNING,), None),
    # ... and ActorDiedError's own text (ray/exceptions.py) where a paste kept the message without the type's name
    # (class other: the worker's death, its cause - often the OOM killer - is in the lines that follow)
    (CONSEQUENCE, "The actor is dead because its worker process has died", None, "other", WHERE, None,
     (AT_WARNING,), None),
    (WEAK_CONSEQUENCE, "engine core exited unexpectedly", None, "engine_dead", WHERE, None, (AT_WARNING,), None),
    (WEAK_CONSEQUENCE, "failed (engine dead)", None, "engine_dead", WHERE, None, (AT_WARNING,), None),
    (WEAK_CONSEQUENCE, "died, exit code:", r"Worker \S+ pid \d+ died, exit code: -?\d+",
     "engine_dead", WHERE, None, (AT_WARNING,), None),
    (WEAK_CONSEQUENCE, "The server had an error while processing your request", None,
     "engine_dead", WHERE, None, (AT_WARNING,), None),
    # v1/engine/core.py log_error_detail / execute_model_with_error_logging -> logging_utils/dump_input.py
    # dump_engine_exception (0.9+): only around the execution of a scheduled batch in EngineCore.step*, never at
    # start-up (the profiling run and graph capture are the worker's _dummy_run): a request was being served
    (DIAGNOSTIC, "Dumping input data for V1 LLM engine", None, "other", FIXED, "request", (), None),
    (DIAGNOSTIC, "Dumping scheduler output", None, "other", FIXED, "request", (), None),
    (DIAGNOSTIC, "Dumping scheduler stats", None, "other", FIXED, "request", (), None),
    # round 34c: V0's dump_input_on_failure (worker/model_runner_base.py 0.6.4 -> 0.10) logs at INFO "Writing input of
    # failed execution to %s..." when execute_model raised; V0's profile_run calls the same execute_model, so a step of
    # requests is the likelier stage, not a sure one: the log's stage, else request at low (USUAL_STAGE_LOW)
    (DIAGNOSTIC, "input of failed execution", r"Writing input of failed execution to ", "other", WHERE_OR, "request",
     (AT_INFO,), "a model execution failed (V0 dumped its input): the error it raised is the cause"),
    (WEAK_CONSEQUENCE, "Root Cause (first observed failure)", None, "other", WHERE, None, (), None),
    # torchrun (torch.distributed.elastic): stopping the other workers, and being stopped itself
    (WEAK_CONSEQUENCE, " closing signal SIG", None, "other", WHERE, None, (AT_WARNING,),
     "torchrun stops the other workers once one has failed or torchrun itself was stopped"),
    (WEAK_CONSEQUENCE, " death signal, shutting down workers", None, "other", WHERE, None, (AT_WARNING,),
     "torchrun was stopped from outside (a timeout wrapper, the scheduler or a user): see last_stage"),
    (WEAK_CONSEQUENCE, "SignalException: Process ", None, "other", WHERE, None, (), None),
    (WEAK_CONSEQUENCE, "Executor failed.", r"Executor failed\.$", "engine_dead", WHERE, None, (), None),
    # --- orchestrators and wrappers that only report that the server's process went away (issue 35) ---------------
    # Kubernetes: the container keeps exiting (the pod's status CrashLoopBackOff, the kubelet's BackOff event
    # "Back-off restarting failed container"): why it exited is in the container's own log
    (CONSEQUENCE, "CrashLoopBackOff", None, "other", WHERE, None, (AT_WARNING,),
     "the container exits again and again; its own log (kubectl logs --previous) names the failure"),
    (CONSEQUENCE, "Back-off restarting failed container", None, "other", WHERE, None, (AT_WARNING,),
     "the container exits again and again; its own log (kubectl logs --previous) names the failure"),
    # kubelet's eviction (eviction manager: "The node was low on resource: %v. ..."): the pod was stopped for the
    # node's sake, in whatever stage it was
    (CONSEQUENCE, "The node was low on resource", None, "other", WHERE, None, (AT_WARNING,),
     "kubelet evicted the pod for the node's memory or disk; its own log says how far the server got"),
    # Ray Serve's controller (serve/_private/deployment_state.py): "Exception in Replica(id=..., deployment=...), the
    # replica will be stopped." - the replica's exception is in the traceback that follows
    (HEADER, "Exception in Replica(", None, "other", WHERE, None, (), None),
    # round 19: Ray's driver reporting a task's exception nobody retrieved (ray/_private/worker.py
    # _unhandled_error_handler: "Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): %s", the task's
    # RayTaskError: "ray::<Actor>.<method>() (pid=..., ...)" and its traceback follow); the method names the step
    (HEADER, "Unhandled error (suppress with", None, "other", WHERE, None, (), None),
    # vLLM V1 core_client.py: the engine core's monitor saw the workers die ("Got fatal signal from worker
    # processes, shutting down. See stack trace above for root cause issue.")
    (CONSEQUENCE, "Got fatal signal from worker processes", None, "engine_dead", WHERE, None, (AT_WARNING,),
     "a worker process died; its own error comes first in its log"),
    # docker compose's "<service> exited with code N": 137 is SIGKILL (the kernel's or the cgroup's OOM killer,
    # docker's own .State.OOMKilled; or a kill from outside), 139 SIGSEGV
    (FAILURE, "exited with code 137", None, "oom", WHERE, None, (AT_WARNING,),
     "SIGKILL: most often the OOM killer on host or container memory (docker inspect .State.OOMKilled, dmesg)"),
    (CONSEQUENCE, "exited with code", r"exited with code [1-9]\d*", "other", WHERE, None, (AT_WARNING,),
     "the container's process exited; its own output above (or docker logs) names the failure"),
    # docker compose v2 (pkg/compose/convergence.go) when a service another one depends on did not start: "dependency
    # failed to start: container %s exited (%d)" / "... is unhealthy"; the service's own log says why
    (CONSEQUENCE, "dependency failed to start", r"dependency failed to start: container \S+ (?:exited \(\d+\)|is "
     r"unhealthy)", "other", WHERE, None, (AT_WARNING,),
     "a service this one depends on did not start: its own log (docker compose logs SERVICE) names the failure"),
    # Ray Serve's controller (serve/_private/deployment_state.py) while a replica waits for resources: "Deployment %r
    # [in application %r] [has] %d replicas that have taken more than %ss to be scheduled. ...": no node gives the
    # replica its GPUs (the replica, and vLLM in it, never started); later progress makes it a delay, not the failure
    (FAILURE, "to be scheduled", r"replicas that have taken more than \d+s to be scheduled", "scheduling", FIXED,
     "environment", (AT_WARNING,), "the Ray cluster has no node with the replica's resources (GPUs, accelerator type)"),
    # a shell's report of a foreground job killed by SIGKILL ("Killed", bash "line N:  PID Killed  cmd"): the
    # kernel's OOM killer unless someone killed it
    (FAILURE, "Killed", r"^Killed\s*$|: line \d+:\s+\d+ Killed\s", "oom", WHERE, None, (AT_WARNING,),
     "SIGKILL, most often the kernel's OOM killer on host memory (dmesg shows 'Out of memory: Killed process')"),
    # Kubernetes' container state and event for a container killed at its memory limit
    (FAILURE, "OOMKilled", None, "oom", WHERE, None, (AT_WARNING,),
     "the container exceeded its memory limit (host RAM in the cgroup, not GPU memory)"),
    # orchestrators that gave up waiting for the server to become ready: kubectl wait / rollout status ("timed out
    # waiting for the condition"), Cloud Run ("failed to start and listen on the port ... within the allocated
    # timeout"), kubelet probes ("Startup probe failed", "Readiness probe failed", "Liveness probe failed")
    (FAILURE, "timed out waiting for the condition", None, "timeout", WHERE, None, (AT_WARNING,),
     "the orchestrator gave up waiting for the server; the pod's events and log say where it was"),
    (FAILURE, "failed to start and listen on the port", None, "timeout", WHERE, None, (AT_WARNING,),
     "the platform's start-up check gave up before the server listened; the revision's log says where it was"),
    (CONSEQUENCE, "probe failed", r"(?:Startup|Readiness|Liveness) probe failed", "timeout", WHERE, None, (AT_WARNING,),
     "a kubelet probe failed: a slow start-up (model download, compile) or a dead server"),
    # --- victims: what surviving ranks report after one rank died ------------------------------------------
    (VICTIM, "remote process exited or there was a network error", None,
     "nccl_error", AT_LEAST, "distributed_init", (AT_WARNING,),
     "the victim side; look for the rank or node that failed first"),
    (VICTIM, "ncclRemoteError", None, "nccl_error", AT_LEAST, "distributed_init", (AT_WARNING,), None),
    # (round 83) PyTorch's TCPStore client losing its server (torch/csrc/distributed/c10d/TCPStore.cpp, logged at
    # WARNING through c10's logger: "recvValue failed on SocketImpl(...): Failed to recv, got 0 bytes. Connection was
    # likely closed. Did the remote end crash?"): the store's host - the head node, rank 0 - went away first
    (VICTIM, "recvValue failed on SocketImpl", None, "other", WHERE, None, (AT_WARNING,),
     "the TCPStore's server (the head node) closed the connection: look for what stopped the head first"),
    (VICTIM, "Watchdog caught collective operation timeout", None,
     "timeout", AT_LEAST, "distributed_init", (AT_WARNING,),
     "NCCL watchdog on a surviving rank; look for the rank or node that failed first"),
    # (round 83: torch_npu's ProcessGroupHCCL words it as ProcessGroupNCCL does, "Some HCCL operations ...")
    (VICTIM, "operations have failed or timed out", r"Some [A-Z]CCL operations have failed or timed out",
     "timeout", AT_LEAST, "distributed_init", (AT_WARNING,), None),
    # round 61: the watchdog quotes what ended it (torch ProcessGroupNCCL.cpp ncclCommWatchdog: "Process group
    # watchdog thread terminated with exception: " + e.what()): a collective's timeout is read here, a CUDA, HIP or
    # NCCL error it found on the work's stream by that error's own row (the failure; the watchdog only reports it)
    (VICTIM, "watchdog thread terminated with exception",
     r"watchdog thread terminated with exception: (?!(?:CUDA|HIP|NCCL) error)",
     "timeout", AT_LEAST, "distributed_init", (AT_WARNING,), None),
    (VICTIM, "detected by watchdog", None, "timeout", AT_LEAST, "distributed_init", (AT_WARNING,), None),
    (VICTIM, "Timeout at NCCL work", None, "timeout", AT_LEAST, "distributed_init", (AT_WARNING,), None),
    # round 19: ProcessGroupNCCL's heartbeat monitor (torch 2.2+, ProcessGroupNCCL.cpp heartbeatMonitor: "Heartbeat
    # monitor timed out! Process will be terminated after dumping debug info." and "ProcessGroupNCCL's watchdog got
    # stuck for %d seconds without making progress in monitoring enqueued collectives"): a collective or the watchdog
    # hung on this rank; the group existed, but neither line says in which stage
    (VICTIM, "Heartbeat monitor timed out", None, "timeout", AT_LEAST_OR_UNKNOWN, "distributed_init", (AT_WARNING,),
     "a collective hung (10 min by default): look for the rank or node that failed or stalled first"),
    (VICTIM, "watchdog got stuck for", r"watchdog got stuck for \d+ seconds without making progress", "timeout",
     AT_LEAST_OR_UNKNOWN, "distributed_init", (AT_WARNING,), None),
    (WEAK_CONSEQUENCE, "we are taking the entire process down", None, "timeout", WHERE, None, (AT_WARNING,), None),
    # a rank that waited in the rendezvous store for keys the other ranks never set (torch.distributed.DistStoreError
    # "wait timeout after 50000ms, keys: /default_pg/..."): the ones that failed or never came are the cause
    (VICTIM, "wait timeout after", r"DistStoreError: wait timeout after \d+ ?ms", "timeout", AT_LEAST,
     "distributed_init", (), "this rank waited for the other ranks in the store; look for the rank or node that "
     "failed first or never started"),
    (VICTIM, "peer", r"Connection (?:reset|closed) by (?:remote )?peer",
     "nccl_error", AT_LEAST, "distributed_init", (AT_WARNING,), None),
    # --- headers: the real error is in the traceback that follows ------------------------------------------
    (HEADER, "WorkerProc failed to start", None, "other", WHERE, None, (), None),
    (HEADER, "WorkerProc hit an exception", None, "other", WHERE, None, (), None),
    # vllm/v1/engine/core.py run_engine_core logs "EngineCore failed to start." (logger.exception) when building the
    # engine core raised: the engine never ran, so a paste cut before the exception shows no dead engine, only a
    # start-up failure of an unknown class (a dead engine is EngineDeadError, "Engine loop has died", ...)
    (HEADER, "EngineCore failed to start", None, "other", WHERE, None, (), None),
    (HEADER, "EngineCore encountered a fatal error", None, "other", WHERE, None, (), None),
    # round 60: vLLM-Omni's stage engine core (vllm_omni/engine/stage_engine_core_proc.py run_stage_core) logs as
    # run_engine_core does: "StageEngineCoreProc failed to start." before it is built, "... encountered a fatal
    # error." once its busy loop ran
    (HEADER, "EngineCoreProc failed to start", None, "other", WHERE, None, (), None),
    (HEADER, "EngineCoreProc encountered a fatal error", None, "other", WHERE, None, (), None),
    (HEADER, "AsyncLLM output_handler failed", None, "engine_dead", WHERE, None, (), None),
    (HEADER, "Exception in ASGI application", None, "other", WHERE_OR, "request", (), None),
    # the API server's warm-ups before it listens (0.14+): logger.exception, later logger.warning(exc_info=True)
    (HEADER, "warmup failed", r"(?:Chat template|[Mm]ulti-modal|Input processor) warmup failed", "other", WHERE_OR,
     "api_ready", (AT_WARNING,), None),
    # the OpenAI handlers log the exception of a request (entrypoints/openai/serving_*.py, logger.exception)
    (HEADER, "Error in preprocessing prompt inputs", None, "other", WHERE_OR, "request", (), None),
    (HEADER, "Error in chat completion stream generator", None, "other", WHERE_OR, "request", (), None),
    (HEADER, "Error in completion stream generator", None, "other", WHERE_OR, "request", (), None),
    # V0 multiproc worker loop (vllm/executor/multiproc_worker_utils.py _run_worker_process)
    (HEADER, "while processing method", r"Exception in worker \S+ while processing method", "other", WHERE, None, (), None),
    (HEADER, "terminate called after throwing an instance of", None, "other", WHERE, None, (), None),
    # (round 87) LLVM's libc++abi (macOS, clang builds) says the same in one line, the exception's text after its type
    # (cxa_default_handlers.cpp: "terminating due to uncaught exception of type %s: %s")
    (FAILURE, "terminating due to uncaught exception of type", None, "other", WHERE, None, (), None),
    # a C++ std::terminate backtrace (Ray's raylet.so TerminateHandler prints the frames of the aborted worker)
    (FAILURE, "__cxxabiv1::__terminate", None, "other", WHERE, None, (), None),
    (HEADER, "Error executing method", r"Error executing method '?\w+'?\. This might cause deadlock",
     "other", WHERE, None, (AT_WARNING,), None),
    # --- environment: host, container runtime, driver, libraries, imports ----------------------------------
    (FAILURE, "nvidia-container-cli", r"nvidia-container-cli: (?:initialization|requirement|detection) error",
     "driver_mismatch", FIXED, "environment", (AT_WARNING,),
     "container runtime could not use the host driver (driver not loaded, or older than the image's CUDA requires)"),
    (FAILURE, "nvidia-container-cli", r"nvidia-container-cli: \w+ error",
     "other", FIXED, "environment", (AT_WARNING,),
     "NVIDIA container runtime error"),
    # buildah (podman build) resolves --device as a host path (pkg/parse DeviceFromPath): a CDI name such as
    # nvidia.com/gpu=all that is no path, or a device node the host lacks
    (FAILURE, "getting info of source device", None, "container_error", FIXED, "environment", (), None),
    (FAILURE, "could not select device driver", None, "container_error", FIXED, "environment", (AT_WARNING,),
     "the NVIDIA container runtime is not configured for this engine"),
    # --- container runtimes and orchestrators (issue 35): the server's container never ran -----------------------
    # OCI runtimes: runc (libcontainer: "runc create failed: unable to start container process: error during
    # container init: ..."), crun ("crun: <msg>"), as reported by podman (libpod/define/errors.go: ErrOCIRuntime
    # "OCI runtime error", ErrOCIRuntimePermissionDenied "OCI permission denied", ErrOCIRuntimeNotFound "OCI runtime
    # attempted to invoke a command that was not found"; before podman 3 "OCI runtime permission denied error",
    # "OCI runtime command not found error", "OCI not found"), docker/containerd ("OCI runtime create failed",
    # "failed to create shim task", "failed to create containerd task"), catatonit (podman's init: "failed to exec
    # pid1").  Podman exits 126 when the runtime cannot start the command, 127 when it is not found.  The NVIDIA
    # hook's own errors (nvidia-container-cli, above) are more specific and come first.
    # a runtime line that reports a failed OCI hook ("error running hook #0: error running hook: exit status 1,
    # stdout: , stderr: ..."): the hook's own error (the NVIDIA hook's, above, on this line or the next) is the cause
    (CONSEQUENCE, "error running hook", None, "container_error", FIXED, "environment", (AT_WARNING,),
     "an OCI hook failed (the NVIDIA container hook: its own error follows)"),
    # runc's "error setting rlimit type 7" / crun's "setrlimit `RLIMIT_NOFILE`": the engine cannot raise a limit for
    # this user (rootless podman on a VM): give the engine its flags (docs/method.md, "Container runtime")
    (FAILURE, "rlimit", r"error setting rlimits?|setrlimit `?RLIMIT_", "container_error", FIXED, "environment",
     (AT_WARNING,), "the container runtime may not set this resource limit here: pass the engine flags in "
     "repro_vllm_container_args (the localhost inventory fills it from REPRO_VLLM_CONTAINER_ARGS, e.g. "
     "--ulimit nofile=1024:1024 --ulimit nproc=1000:1000; docs/method.md)"),
    (FAILURE, "OCI runtime", r"OCI runtime (?:create|start|exec|state) failed", "container_error", FIXED, "environment",
     (AT_WARNING,), "the container runtime refused to create or start the container: the server never ran"),
    (FAILURE, "runc create failed", None, "container_error", FIXED, "environment", (AT_WARNING,),
     "runc refused the container (rlimits, mounts, devices, seccomp, the command): the server never ran"),
    (FAILURE, "unable to start container process", None, "container_error", FIXED, "environment", (AT_WARNING,), None),
    (FAILURE, "error during container init", None, "container_error", FIXED, "environment", (AT_WARNING,), None),
    (FAILURE, "OCI", r"\bOCI (?:permission denied|not found|runtime (?:error|permission denied error|command not "
     r"found error|attempted to invoke a command that was not found))", "container_error", FIXED, "environment",
     (AT_WARNING,), "podman's OCI runtime refused the container; for rlimits or devices the engine needs its run "
     "flags (repro_vllm_container_args, docs/method.md)"),
    (FAILURE, "crun: ", r"(?:^|Error: |error: |OCI runtime error: )crun: ", "container_error", FIXED, "environment",
     (AT_WARNING,), "crun refused the container: the server never ran"),
    (FAILURE, "failed to create shim task", None, "container_error", FIXED, "environment", (AT_WARNING,), None),
    # podman (round 13): libpod/oci_conmon*.go createOCIContainer "container create failed (no logs from conmon): %w"
    # (the runtime died before conmon could report), libpod/runtime.go "default OCI runtime %q not found: %w" (the
    # engine's configured runtime is not installed); tini's PRINT_FATAL "[FATAL tini (%d)] exec %s failed: %s" (the
    # container's init - tini, or podman's --init binary - could not start the entrypoint or itself)
    (FAILURE, "no logs from conmon", None, "container_error", FIXED, "environment", (AT_WARNING,),
     "podman's OCI runtime died creating the container before conmon could report (runtime, rlimits, devices)"),
    (FAILURE, "OCI runtime \"", r"\bOCI runtime \"[^\"]*\" not found", "container_error", FIXED, "environment",
     (AT_WARNING,), "the container engine's configured OCI runtime (crun or runc) is not installed on this host"),
    (FAILURE, "[FATAL tini (", r"\[FATAL tini \(\d+\)\] exec \S+ failed", "container_error", FIXED, "environment",
     (AT_WARNING,), "the container's init could not exec its command (the image's entrypoint or the engine's init)"),
    # the engine refused the container's own set-up: a name another container holds (podman libpod "the container
    # name %q is already in use by %s", docker's daemon "Conflict. The container name %q is already in use by
    # container %q"), a bind mount whose host path is missing (podman "statfs <path>: no such file or directory")
    (FAILURE, "is already in use by", r"\bcontainer name \S+ is already in use by", "container_error", FIXED,
     "environment", (AT_WARNING,), "a container of that name exists (a stale run): remove it or use another name"),
    (FAILURE, "statfs ", r"(?:^|Error: )statfs \S+: no such file or directory", "container_error", FIXED,
     "environment", (AT_WARNING,), "a bind mount's host path does not exist"),
    # podman's rootless network (netavark's errors as podman reports them, "netavark: ..."; rootlessport
    # "rootlessport cannot expose privileged port %d, you can add 'net.ipv4.ip_unprivileged_port_start=...'"),
    # containerd's CRI ("failed to reserve container name %q: name %q is reserved for %q"), the NVIDIA runtime shim
    # ("failed to create NVIDIA Container Runtime: %v")
    (FAILURE, "netavark", r"\bnetavark: ", "container_error", FIXED, "environment", (AT_WARNING,),
     "podman's network backend refused the container's network (ports, firewall, rootless)"),
    (FAILURE, "cannot expose privileged port", None, "container_error", FIXED, "environment", (AT_WARNING,),
     "rootless podman may not publish a port below 1024: publish a higher one"),
    (FAILURE, "failed to reserve container name", None, "container_error", FIXED, "environment", (AT_WARNING,), None),
    (FAILURE, "failed to create NVIDIA Container Runtime", None, "container_error", FIXED, "environment",
     (AT_WARNING,), "the NVIDIA container runtime could not build the container's spec (its config, CDI, the hook)"),
    # CDI device injection: podman ("setting up CDI devices: %w"), docker 25+ ("CDI device injection failed: %w"),
    # the NVIDIA runtime ("failed to inject CDI devices: %w"), the CDI library ("unresolvable CDI devices %s")
    (FAILURE, "CDI device", None, "container_error", FIXED, "environment", (AT_WARNING,),
     "no CDI spec names this GPU device: nvidia-ctk cdi generate (and list), or the engine's --gpus instead"),
    (FAILURE, "failed to create containerd task", None, "container_error", FIXED, "environment", (AT_WARNING,), None),
    (FAILURE, "failed to exec pid1", None, "container_error", FIXED, "environment", (AT_WARNING,),
     "the container's init could not start the image's entrypoint"),
    (FAILURE, "unknown or invalid runtime name", None, "container_error", FIXED, "environment", (AT_WARNING,),
     "the container engine has no runtime of that name (nvidia-ctk runtime configure)"),
    (FAILURE, "executable file not found in $PATH", r"executable file (?:`[^`]*` |\S+ )?not found in \$PATH",
     "container_error", FIXED, "environment", (AT_WARNING,),
     "the image has no such command for the user the container runs as"),
    # the docker client without a daemon (docker/cli: "Cannot connect to the Docker daemon at %s. Is the docker
    # daemon running?")
    # the docker client without the right to the daemon's socket (docker/cli: "permission denied while trying to
    # connect to the Docker daemon socket at %s")
    (FAILURE, "permission denied while trying to connect to the Docker daemon", None, "container_error", FIXED,
     "environment", (AT_WARNING,), "this user may not use the docker socket (the docker group, or rootless docker)"),
    (FAILURE, "Cannot connect to the Docker daemon", None, "container_error", FIXED, "environment", (AT_WARNING,),
     "the docker daemon is not running or not reachable on this socket"),
    # Kubernetes (kubelet events and container states): the container could not be created or configured
    (FAILURE, "FailedCreatePodSandBox", None, "container_error", FIXED, "environment", (AT_WARNING,), None),
    (FAILURE, "Failed to create pod sandbox", None, "container_error", FIXED, "environment", (AT_WARNING,), None),
    (FAILURE, "CreateContainer", r"\bCreateContainer(?:Config)?Error\b", "container_error", FIXED, "environment",
     (AT_WARNING,), "kubelet could not create the container (a missing secret or config map, a bad mount)"),
    (FAILURE, "RunContainerError", None, "container_error", FIXED, "environment", (AT_WARNING,), None),
    # kubelet's volume events (FailedMount: "MountVolume.SetUp failed for volume %q : ...", "Unable to attach or
    # mount volumes: unmounted volumes=[...]"): the pod's container never started
    (FAILURE, "MountVolume.", r"\bMountVolume\.\w+ failed for volume", "container_error", FIXED, "environment",
     (AT_WARNING,), "kubelet could not mount a volume of the pod (a missing PVC, secret or host path)"),
    (FAILURE, "Unable to attach or mount volumes", None, "container_error", FIXED, "environment", (AT_WARNING,), None),
    # image pulls: kubelet ("Failed to pull image", ErrImagePull, ImagePullBackOff, "Back-off pulling image"),
    # kubeadm ("[ERROR ImagePull]"), docker/containerd ("pull access denied", "manifest unknown", "failed to
    # register layer", "toomanyrequests"), podman ("Error: initializing source")
    (FAILURE, "Failed to pull image", None, "image_pull", FIXED, "environment", (AT_WARNING,),
     "the node could not pull the image (name or tag, registry credentials, disk space)"),
    (FAILURE, "ImagePull", r"\b(?:ErrImagePull|ImagePullBackOff|ErrImageNeverPull|InvalidImageName)\b|"
     r"\[ERROR ImagePull\]", "image_pull", FIXED, "environment", (AT_WARNING,), None),
    (FAILURE, "Back-off pulling image", None, "image_pull", FIXED, "environment", (AT_WARNING,), None),
    (FAILURE, "pull access denied", None, "image_pull", FIXED, "environment", (AT_WARNING,),
     "the registry has no such image or refuses this user (docker login)"),
    (FAILURE, "manifest unknown", None, "image_pull", FIXED, "environment", (AT_WARNING,),
     "the image tag does not exist in the registry"),
    (FAILURE, "no matching manifest for", None, "image_pull", FIXED, "environment", (AT_WARNING,),
     "the image has no build for this platform"),
    # podman, buildah, CRI-O (containers/image: "no image found in image index|manifest list for architecture %s,
    # variant %q, OS %s" when an index has no entry for the host's platform, wrapped in "choosing an image from
    # manifest list %s: %w")
    (FAILURE, "no image found in ", r"no image found in (?:image index|manifest list) for architecture", "image_pull",
     FIXED, "environment", (AT_WARNING,), "the image has no build for this host's architecture (arm64 hosts: GH200, "
     "GB200, GB300)"),
    # the kernel's ENOEXEC when the container's entrypoint is a binary of another CPU architecture (an amd64 image
    # on an arm64 host without binfmt emulation): runc and docker print "exec %s: exec format error" (Go's errno
    # text), crun "exec container process `%s`: Exec format error" (strerror); a Python parent's OSError [Errno 8]
    (FAILURE, "xec format error", r"\b[Ee]xec format error\b", "container_error", WHERE_OR, "environment",
     (AT_WARNING,), "a binary of another CPU architecture: pull or build the image for this host's platform"),
    (FAILURE, "failed to register layer", None, "image_pull", FIXED, "environment", (AT_WARNING,),
     "the image could not be extracted (no space left on the image store?)"),
    (FAILURE, "toomanyrequests", None, "image_pull", FIXED, "environment", (AT_WARNING,), "the registry's pull rate limit"),
    # containerd's CRI ("failed to pull and unpack image %q: %w", "failed to resolve reference %q: %w"), the
    # docker CLI's reference parser (distribution/reference ErrReferenceInvalidFormat "invalid reference format"),
    # podman's short names (containers/image pkg/shortnames: "short-name resolution enforced but cannot prompt
    # without a TTY", "short-name %q did not resolve to an alias and no unqualified-search registries are defined")
    (FAILURE, "failed to pull and unpack image", None, "image_pull", FIXED, "environment", (AT_WARNING,), None),
    (FAILURE, "failed to resolve reference", None, "image_pull", FIXED, "environment", (AT_WARNING,), None),
    (FAILURE, "invalid reference format", None, "image_pull", FIXED, "environment", (AT_WARNING,),
     "the image name is not a valid reference (an empty tag, capitals, a stray character)"),
    (FAILURE, "short-name", r"short-name (?:resolution enforced|\S+ did not resolve)", "image_pull", FIXED,
     "environment", (AT_WARNING,), "name the image with its registry (docker.io/vllm/vllm-openai:...)"),
    (FAILURE, "initializing source", r"Error: initializing source \S+", "image_pull", FIXED, "environment",
     (AT_WARNING,), None),
    # scheduling: the Kubernetes scheduler ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu."), its
    # FailedScheduling event, a Knative revision that failed with that message
    (FAILURE, "nodes are available", r"\b\d+/\d+ nodes are available", "scheduling", FIXED, "environment",
     (AT_WARNING,), "no node can take the pod (GPUs, memory, taints, node selectors): it never started"),
    # a namespace's ResourceQuota refusing the pod (the API server's admission: 'pods "x" is forbidden: exceeded
    # quota: ...'), the cluster autoscaler's NotTriggerScaleUp event ("pod didn't trigger scale-up: ...")
    (FAILURE, "exceeded quota", r"\bforbidden: exceeded quota\b", "scheduling", FIXED, "environment", (AT_WARNING,),
     "the namespace's ResourceQuota has no room for the pod's GPUs or memory"),
    (FAILURE, "NotTriggerScaleUp", None, "scheduling", FIXED, "environment", (AT_WARNING,),
     "no node group of the autoscaler can give the pod what it requests (GPU type, count)"),
    (FAILURE, "FailedScheduling", None, "scheduling", FIXED, "environment", (AT_WARNING,), None),
    # round 30: Karpenter's FailedScheduling event message (kubernetes-sigs/karpenter provisioning events:
    # "Failed to schedule pod, <why>": no node pool can take the pod, e.g. none has GPUs)
    (FAILURE, "Failed to schedule pod,", None, "scheduling", FIXED, "environment", (AT_WARNING,),
     "no Karpenter node pool can take the pod (GPU instance types, taints, requirements): it never started"),
    (FAILURE, "PodUnschedulable", None, "scheduling", FIXED, "environment", (AT_WARNING,), None),
    # the pod condition's reason (Kubernetes core/v1 PodReasonUnschedulable), the event reason of other schedulers
    (FAILURE, "Unschedulable", r"\bUnschedulable\b", "scheduling", FIXED, "environment", (AT_WARNING,), None),
    # NVIDIA's notice (nvidia-docker #1730): a running container lost its GPUs (systemd reloaded the cgroup device
    # rules runc had set), and every NVML client in it prints this; the container must be recreated
    (FAILURE, "Failed to initialize NVML: Unknown Error", None, "container_error", FIXED, "environment", (AT_WARNING,),
     "the container lost its GPU devices (a systemd reload under runc's cgroup driver): recreate it"),
    # the docker daemon refused the request for another reason (the more specific rows above come first)
    (FAILURE, "Error response from daemon", None, "container_error", FIXED, "environment", (AT_WARNING, GENERIC),
     None),
    # torch's own CUDA init (torch/cuda/__init__.py _check_driver / _lazy_init) and the CUDA runtime's refusals of
    # the driver (cudaErrorInsufficientDriver 35, cudaErrorSystemNotReady 802, cudaErrorCompatNotSupportedOnDevice
    # 804, 803 below): raised at the first CUDA call of whichever process makes it (a bare check: environment;
    # vLLM's config checks counting devices: config; its engine core at device init: cuda_init; NCCL's first
    # kernel: distributed_init), so the log's stage where it shows one, else environment at medium (WHERE_OR),
    # never high by the words alone; the driver stays the cause (cause_stage environment)
    (FAILURE, "CUDA driver version is insufficient for CUDA runtime version", None,
     "driver_mismatch", WHERE_OR, "environment", (AT_WARNING,),
     "the host driver is older than the CUDA runtime in the image"),
    (FAILURE, "driver on your system is too old", None, "driver_mismatch", WHERE_OR, "environment", (AT_WARNING,),
     "PyTorch was built for a newer CUDA than the host driver supports"),
    (FAILURE, "Found no NVIDIA driver on your system", None, "driver_mismatch", WHERE_OR, "environment", (AT_WARNING,),
     "no usable NVIDIA driver in this container/host"),
    # NVML's NVML_ERROR_LIB_RM_VERSION_MISMATCH ("Driver/library version mismatch": the kernel module and the user-space
    # driver differ, a driver upgraded without a reboot) and nvidia-smi's own "NVIDIA-SMI has failed because it
    # couldn't communicate with the NVIDIA driver"
    (FAILURE, "Driver/library version mismatch", None, "driver_mismatch", FIXED, "environment", (AT_WARNING,),
     "the loaded kernel module and the driver libraries differ (reboot after a driver upgrade)"),
    (FAILURE, "couldn't communicate with the NVIDIA driver", None, "driver_mismatch", FIXED, "environment",
     (AT_WARNING,), "no NVIDIA driver is loaded or reachable here"),
    (FAILURE, "unsupported display driver / cuda driver combination", None,
     "driver_mismatch", WHERE_OR, "environment", (AT_WARNING,),
     "CUDA error 803: user-mode driver and kernel module do not match"),
    (FAILURE, "forward compatibility was attempted on non supported HW", None,
     "driver_mismatch", WHERE_OR, "environment", (AT_WARNING,),
     "CUDA error 804: forward-compatibility libraries on a GPU that does not support them"),
    (FAILURE, "system not yet initialized", None, "cuda_error", WHERE_OR, "environment", (AT_WARNING,),
     "CUDA error 802: on NVSwitch/NVLink systems the Fabric Manager (and IMEX on GB200/GB300) is not running"),
    (FAILURE, "cannot open shared object file", r"lib(?:cuda|nvidia-ml)\.so[.\d]*: cannot open shared object file",
     "driver_mismatch", FIXED, "environment", (AT_WARNING,),
     "the driver libraries are not visible in this container"),
    (FAILURE, "cannot open shared object file", None, "import_error", WHERE_OR, "environment", (AT_WARNING,),
     "a shared library of the install is missing"),
    # vllm/_custom_ops.py: logger.warning("Failed to import from vllm._C with %r", e) on import; the kernels the
    # engine needs are then missing (a build for another torch/CUDA, a missing library)
    (FAILURE, "Failed to import from vllm._C", None, "import_error", FIXED, "environment", (AT_WARNING,),
     "vLLM's compiled ops do not load: the wheel was built for another torch/CUDA, or a library is missing"),
    (FAILURE, "undefined symbol", None, "import_error", WHERE_OR, "environment", (),
     "binary built against another torch/CUDA (ABI mismatch)"),
    # round 13: a caller's own report that vLLM itself did not import - an embedding program (a Rust server through
    # PyO3: "Failed to import python 'vllm' module", after its panic line), a launcher's "could not import vllm" -, and
    # the NameError of a harness that guards "from vllm import LLM, SamplingParams" with try/except ImportError (lm-eval
    # models/vllm_causallms.py, lmms-eval) and then calls the missing name: vLLM is not importable there; the guess
    # of the guard is low
    (FAILURE, "import", r"(?i)\b(?:failed to|could not|cannot|unable to) import (?:the )?(?:python )?['\"`]?vllm['\"`]?"
     r"(?![\w.])", "import_error", FIXED, "environment", (AT_WARNING,),
     "vLLM does not import in this environment: its own error (a missing library, a build for another torch) says why"),
    (FAILURE, "is not defined", r"\bNameError: name '(?:LLM|SamplingParams|AsyncLLMEngine|LLMEngine)' is not defined",
     "import_error", WHERE_OR, "environment", (), "a caller guarded its import of vLLM and the import failed: run "
     "python -c 'import vllm' in that environment"),
    (FAILURE, "PackageNotFoundError", None, "import_error", WHERE_OR, "environment", (), None),
    (FAILURE, "ModuleNotFoundError", None, "import_error", WHERE_OR, "environment", (), None),
    (FAILURE, "No module named", None, "import_error", WHERE_OR, "environment", (), None),
    (FAILURE, "ImportError", None, "import_error", WHERE_OR, "environment", (GENERIC,), None),
    # round 50: CPython's own words of an ImportError (Python/ceval.c import_from: "cannot import name %R from %R",
    # "... from partially initialized module %R (most likely due to a circular import)"), as a paste may keep them
    # without the exception's name
    (FAILURE, "cannot import name", r"\bcannot import name '[\w.]+' from ", "import_error", WHERE_OR, "environment",
     (GENERIC,), None),
    (FAILURE, "Could not load logging config. File does not exist", None, "config_error", FIXED, "environment", (), None),
    (FAILURE, "Only one platform plugin can be activated", None, "config_error", FIXED, "environment", (), None),
    (FAILURE, "Too many open files", r"(?:^|Error: )\[Errno 24\] Too many open files", "other", WHERE, None, (),
     "raise the open-files limit (ulimit -n)"),
    # --- ports ------------------------------------------------------------------------------------------------
    (FAILURE, "failed to listen on any local network address", None, "port_in_use", FIXED, "distributed_init", (),
     "the torch.distributed master port is taken (a stale run?)"),
    (FAILURE, "EADDRINUSE", None, "port_in_use", FIXED, "distributed_init", (),
     "the torch.distributed master port is taken (a stale run?)"),
    (FAILURE, "errno: 98 - Address already in use", None, "port_in_use", FIXED, "distributed_init", (), None),
    # the API port: bound before the engine starts (>=0.6.4), after the app started in older versions (uvicorn's
    # own bind under vllm/entrypoints/launcher.py serve_http): environment unless the log shows the API server up
    # round 79: a ZMQ socket that cannot bind to an address (pyzmq's ZMQError carries glibc's strerror): vLLM's
    # make_zmq_socket binds the engine client's, the data-parallel coordinator's and the KV connectors' sockets at
    # different stages - where it was bound is the stage, not the API port's
    (FAILURE, "ZMQError: Cannot assign requested address", None, "other", WHERE, None, (),
     "the address to bind is not one of this host's (the data-parallel or KV-transfer address?)"),
    # round 39: EADDRNOTAVAIL (errno 99, "cannot assign requested address") is an address that is not this host's -
    # the --host value, or "localhost" resolved to an IPv6 loopback the host does not have: not a port in use
    # (round 79: the key without its first letter - Python's OSError prints glibc's strerror, "Cannot assign ...",
    # uvicorn's bind error the lower case)
    (FAILURE, "annot assign requested address", r"\[Errno 99\]|[Cc]annot assign requested address", "other",
     FIXED_UNTIL_READY, "environment", (), "the address to bind is not one of this host's (--host; IPv6 loopback?)"),
    (FAILURE, "error while attempting to bind on address", None, "port_in_use", FIXED_UNTIL_READY, "environment", (), None),
    (FAILURE, "Address already in use", None, "port_in_use", FIXED_UNTIL_READY, "environment", (),
     "the API port is taken by another process"),
    # --- config: arguments, model/tokenizer config, parallel config ------------------------------------------
    (FAILURE, "error: unrecognized arguments", None, "config_error", FIXED, "config", (),
     "a flag this vLLM version does not know"),
    (FAILURE, "error: argument ", r"error: argument -", "config_error", FIXED, "config", (),
     "a flag value this vLLM version rejects"),
    (FAILURE, "error: the following arguments are required", None, "config_error", FIXED, "config", (), None),
    (FAILURE, "cannot be used with --headless", None, "config_error", FIXED, "config", (), None),
    (FAILURE, "Cannot use more than one data parallel load balancing mode", None, "config_error", FIXED, "config", (), None),
    (FAILURE, "Failed to load the model config", None, "config_error", FIXED, "config", (), None),
    (FAILURE, "contains custom code which must be executed", None, "config_error", FIXED, "config", (),
     "add --trust-remote-code if the model's code is trusted"),
    (FAILURE, "trust_remote_code=True` to allow custom code", None, "config_error", FIXED, "config", (),
     "add --trust-remote-code if the model's code is trusted"),
    (FAILURE, "requires you to execute the configuration file in that repo", None,
     "config_error", FIXED, "config", (), None),
    (FAILURE, "is greater than the derived max_model_len", None, "config_error", FIXED, "config", (), None),
    (FAILURE, "max_model_len must be a positive integer", None, "config_error", FIXED, "config", (), None),
    # (keyed on its stem, round 13: a paste cut inside "... are not supported for now" still shows it)
    (FAILURE, "Model architectures", r"Model architectures \[.*\] are not supported",
     "config_error", FIXED, "config", (), None),
    (FAILURE, "failed to be inspected", r"Model architectures \[.*\] failed to be inspected",
     "config_error", FIXED, "config", (),
     "usually an import failure of the model's dependencies"),
    (FAILURE, "Cannot find model module", None, "config_error", FIXED, "config", (), None),
    (FAILURE, "Unknown quantization method", None, "config_error", FIXED, "config", (), None),
    (FAILURE, "does not match the quantization method specified in the `quantization` argument", None,
     "config_error", FIXED, "config", (), None),
    (FAILURE, "must be divisible by tensor parallel size", None, "config_error", FIXED, "config", (), None),
    (FAILURE, "must be divisible by pipeline parallel size", None, "config_error", FIXED, "config", (), None),
    (FAILURE, "Pipeline parallelism is not supported for this model", None, "config_error", FIXED, "config", (), None),
    (FAILURE, "is larger than the number of available GPUs", r"World size \(\d+\) is larger than the number of available GPUs",
     "config_error", FIXED, "config", (),
     "more ranks than GPUs on this node: use --nnodes/Ray or fewer ranks"),
    # the dtype check of the worker's device init (V0 worker.py _check_if_gpu_supports_dtype, V1 gpu_worker.py
    # init_device -> platforms/cuda.py check_if_supports_dtype): raised at cuda_init, the fix is --dtype (CAUSES)
    (FAILURE, "Bfloat16 is only supported on GPUs with compute capability", None, "config_error", FIXED, "cuda_init",
     (), "use --dtype half on this GPU"),
    (FAILURE, "Configuration mismatch detected for engine", None, "config_error", FIXED, "config", (), None),
    (FAILURE, "Could not detect config format", None, "missing_file", FIXED, "config", (), None),
    (FAILURE, "Failed to load mistral '", None, "config_error", FIXED, "config", (), None),
    # the Hub refused the download (round 10, vocabulary: an access refusal is no config validation: class other)
    (FAILURE, "GatedRepoError", None, "other", WHERE_OR, "config", (), "a gated model: the token lacks access"),
    # ... and transformers' own words for it (utils/hub.py cached_file: OSError "You are trying to access a gated
    # repo.", 4.3x on), printed without the huggingface_hub exception under it
    (FAILURE, "You are trying to access a gated repo", None, "other", WHERE_OR, "config", (),
     "a gated model: the token lacks access"),
    # (round 48) huggingface_hub's own words for the gated repository (utils/_http.py hf_raise_for_status: "Cannot
    # access gated repo for url %s.", GatedRepoError's message), printed without the exception's name
    (FAILURE, "Cannot access gated repo for url", None, "other", WHERE_OR, "config", (),
     "a gated model: the token lacks access"),
    # round 57: the Hub refusing a checkpoint file (requests' raise_for_status "<code> Client Error: <reason> for url:
    # <url>", which huggingface_hub's hf_raise_for_status re-raises; the file's resolve URL names it): the weights are
    # being fetched; any other file or Hub call (the config, the tokenizer, the repository's metadata) is the config's
    (FAILURE, "Client Error: ", r"\b404 Client Error: .* for url: \S+/resolve/\S+\.(?:safetensors|bin|pt|pth|gguf)\b",
     "missing_file", WHERE_OR, "weight_loading", (), "the checkpoint file is not in the Hub repository"),
    (FAILURE, "Client Error: ", r"\b4\d\d Client Error: .* for url: \S+/resolve/\S+\.(?:safetensors|bin|pt|pth|gguf)\b",
     "other", WHERE_OR, "weight_loading", (), "the Hub refused the checkpoint: a token with access (HF_TOKEN)"),
    # (round 57: 403 as 401 - a gated model whose licence the token's account has not accepted)
    (FAILURE, " Client Error", r"\b40[13] Client Error", "other", WHERE_OR, "config", (),
     "the Hugging Face token is missing or wrong, or lacks access to the gated model (its licence accepted)"),
    (FAILURE, "RepositoryNotFoundError", None, "missing_file", WHERE_OR, "config", (),
     "the model path does not exist and is not a Hub repository"),
    # huggingface_hub's hf_raise_for_status: a 404 for a file of a Hub repository (the HTTPError its EntryNotFoundError
    # chains, printed alone by older transformers)
    (FAILURE, "404 Client Error", r"404 Client Error.*huggingface\.co/", "missing_file", WHERE_OR, "config", (),
     "the file is not in the Hub repository (name, revision or subfolder)"),
    # transformers' PretrainedConfig._get_config_dict: the config file is not JSON (a config.json cut short or empty,
    # a GGUF or other file given as the model's directory); vLLM reads the config while the engine's config is built.
    # Round 74: config_error (the configuration cannot be read), not other
    (FAILURE, "is not a valid JSON file", r"config file at .* is not a valid JSON file", "config_error", WHERE_OR,
     "config", (), "the model path holds no readable config.json: an interrupted copy, an empty file, or a file that "
     "is no HF config (for a GGUF file pass --tokenizer and the file itself)"),
    # transformers' load_gguf_checkpoint (modeling_gguf_pytorch_utils.py), which vLLM's config and tokenizer call for
    # a GGUF file: the file's architecture has no GGUF mapping in the installed transformers
    # round 20: the multi-modal processor's check of a prompt's placeholders against its items (multimodal/
    # processing.py _validate_mm_placeholders / _validate_mm_updates, 0.8 -> current: "Expected there to be %d prompt
    # updates corresponding to %d %s items, but instead found %d prompt updates!"): a request's prompt - or the
    # profiling run's dummy inputs of a processor that is itself wrong: low without markers (USUAL_STAGE_LOW)
    (FAILURE, "prompt updates corresponding to", r"Expected there to be \d+ prompt updates corresponding to", "other",
     WHERE_OR, "request", (), "the prompt's multi-modal placeholders do not match its images/videos (or the model's "
     "processor is wrong)"),
    # round 20: openai-harmony's parser of gpt-oss output (HarmonyError "Unexpected token %d while expecting start
    # token %d"), run by vLLM on a request's output tokens (entrypoints/harmony_utils.py, parser/harmony.py)
    (FAILURE, "while expecting start token", r"Unexpected token \d+ while expecting start token", "other", WHERE_OR,
     "request", (), "gpt-oss output that is not Harmony (often max_tokens cut it): see vLLM's Harmony fixes"),
    (FAILURE, "GGUF model with architecture", None, "config_error", WHERE_OR, "config", (),
     "the installed transformers cannot read this GGUF architecture: a newer transformers, or the original model"),
    (FAILURE, "LocalEntryNotFoundError", None, "missing_file", WHERE_OR, "config", (),
     "the model files are not in the local cache and the Hub cannot be used"),
    (FAILURE, "HFValidationError", None, "missing_file", WHERE_OR, "config", (),
     "the model path does not exist, so it was taken as a Hub repository id"),
    # ... and the same check's words where a caller logged them without the class (huggingface_hub
    # utils/_validators.py validate_repo_id: "Repo id must be in the form ...", "Repo id must use alphanumeric
    # chars ..."; vLLM's config.py file listing retries it: round 28)
    (FAILURE, "Repo id must ", None, "missing_file", WHERE_OR, "config", (),
     "the model path does not exist, so it was taken as a Hub repository id"),
    (FAILURE, "We couldn't connect to 'https://huggingface.co'", None, "missing_file", WHERE_OR, "config", (), None),
    # (round 83) the Hub's HTTP call failing (requests/urllib3 "HTTPSConnectionPool(host='huggingface.co', port=443):
    # Max retries exceeded with url: <path>"; hf-mirror.com is the Hub's mirror): the path says what was being fetched
    # - the repository's file list (/api/models/...: vLLM's file listing while the config is built,
    # transformers_utils/config.py) or a config, tokenizer or processor file is the config; a weight file's path
    # (.safetensors, .bin, .pt, .gguf) is left to the other rows. The class is the error's words' (a timeout, else other)
    (FAILURE, "host='huggingface.co'",
     r"host='(?:huggingface\.co|hf-mirror\.com)'.*?url: /(?!\S*\.(?:safetensors|bin|pt|gguf)\b)", "other", AT_LEAST,
     "config", (), "the Hub could not be reached while the model's config and files were looked up (HF_ENDPOINT, a "
     "proxy, or HF_HUB_OFFLINE with the files cached)"),
    # vLLM's retry of the Hub's file listing (transformers_utils/config.py list_repo_files -> with_retry: "Error
    # retrieving file list: %s, retrying %d of %d"), while the config is built
    (FAILURE, "Error retrieving file list", None, "other", AT_LEAST, "config", (), None),
    # round 19: huggingface_hub with HF_HUB_OFFLINE set (utils/_http.py OfflineModeIsEnabled, a ConnectionError: "Cannot
    # reach %s: offline mode is enabled"): a file or the repository's info was not in the local cache
    (FAILURE, "OfflineModeIsEnabled", None, "missing_file", WHERE_OR, "config", (),
     "HF_HUB_OFFLINE is set and the model's files are not all in the local cache (download them, or pass a path)"),
    (FAILURE, "does not appear to have a file named", None, "missing_file", WHERE_OR, "config", (), None),
    # the tokenizer and the model's config files (transformers: "Can't load tokenizer for %r", "Can't load the
    # configuration of %r"; vllm/transformers_utils/tokenizer.py get_tokenizer: "Failed to load the tokenizer.")
    (FAILURE, "Can't load tokenizer for", None, "missing_file", WHERE_OR, "config", (),
     "the tokenizer files are missing or unreadable (path, revision, token)"),
    (FAILURE, "Can't load the configuration of", None, "missing_file", WHERE_OR, "config", (), None),
    # round 77: mistral_common's tokenizer file lookup (tokens/tokenizers/utils.py get_one_valid_tokenizer_file: "No
    # tokenizer file found."), which vLLM's mistral tokenizer mode calls as the tokenizer is set up
    (FAILURE, "No tokenizer file found", None, "missing_file", WHERE_OR, "config", (),
     "--tokenizer-mode mistral needs the model's tekken.json or tokenizer.model.v* file; an HF tokenizer needs "
     "--tokenizer-mode auto"),
    # round 76: --chat-template naming a file that cannot be opened: entrypoints/chat_utils.py load_chat_template
    # (0.4 ->: "The supplied chat template (%s) looks like a file path, but it failed to be opened", read as the API
    # server starts, after the engine: the log's markers place it) and validate_chat_template (the serve command's
    # argument check: "... appears path-like, but doesn't exist!", config)
    (FAILURE, "looks like a file path, but it failed to be opened", None, "missing_file", WHERE_OR, "config", (),
     "the --chat-template file is not there (a path inside the container? a bind mount that made a directory?)"),
    (FAILURE, "appears path-like, but doesn't exist", None, "missing_file", WHERE_OR, "config", (),
     "the --chat-template file is not there (a path inside the container?)"),
    (FAILURE, "Failed to load the tokenizer", None, "missing_file", WHERE_OR, "config", (), None),
    (FAILURE, "is not a local folder and is not a valid model identifier", None,
     "missing_file", WHERE_OR, "config", (), None),
    (FAILURE, "validation error", r"\d+ validation errors? for \w+", "config_error", FIXED, "config", (GENERIC,), None),
    # ... and its detail line pasted alone: pydantic-core prints a validator's ValueError as "Value error, <msg>
    # [type=value_error, input_value=...]"; the input is ArgsKwargs only for a pydantic dataclass's __init__, which
    # in vLLM (0.10+) are the config classes (the OpenAI request models are BaseModels: their input is a dict)
    (FAILURE, "Value error, ", r"^\s*Value error, .*\[type=value_error, input_value=ArgsKwargs\(", "config_error",
     FIXED, "config", (GENERIC,), None),
    # (round 81) the same detail line cut before its "[type=..." suffix (a wrapped message pasted alone): the OpenAI
    # request models' errors reach a client inside the 400 answer's JSON ('msg': 'Value error, ...'), never at a
    # line's start, so a line that starts with it is a config class's check - unless the log shows a later stage
    (FAILURE, "Value error, ", r"^\s*Value error, (?!.*input_type=(?!ArgsKwargs))", "config_error", WHERE_OR, "config",
     (GENERIC,), None),
    # (round 81) vLLM's platform maps a logical device to a physical one by int() of the CUDA_VISIBLE_DEVICES (or
    # HIP/ASCEND) entry (platforms/interface.py device_id_to_physical_device_id, cuda.py / rocm.py before): a GPU or
    # MIG UUID there fails while the workers pick their device
    (FAILURE, "invalid literal for int() with base 10: '", r"invalid literal for int\(\) with base 10: '(?:GPU|MIG)-",
     "other", FIXED, "cuda_init", (), "CUDA_VISIBLE_DEVICES names a GPU or MIG UUID: vLLM reads its entries as indices"),
    # (round 81) Starlette's answer for a route the server does not have ({"detail":"Not Found"}; vLLM's API
    # server is a FastAPI app): the server was up and answered a request sent to the wrong path
    # (medium, as round 34's client reports of an answered request: the answer may come from a proxy in front)
    (FAILURE, "Not Found", r"""\{\s*["']detail["']\s*:\s*["']Not Found["']\s*\}""", "other", WHERE_OR,
     "request", (), "the server answered, but has no such route (a client's base URL or path, e.g. /v1 missing)"),
    # VllmConfig's scheduler budget check (vllm/config/vllm.py _set_max_num_scheduled_tokens), raised as the config
    # is built: "max_num_scheduled_tokens is set to %d, which does not allow any tokens to be scheduled"
    (FAILURE, "which does not allow any tokens to be scheduled", None, "config_error", FIXED, "config", (), None),
    # DeviceConfig's device type (vllm/config.py DeviceConfig.__init__ 0.6 -> 0.10, config/device.py __post_init__
    # 0.11+) raises "Failed to infer device type" while EngineArgs builds the config, when no platform was detected
    # at import: the config stage failed; its cause is the environment (round 21: was cuda_init, against the frames
    # every such paste shows - create_engine_config -> DeviceConfig - and its labels); class other (round 33: was
    # cuda_error, but no CUDA call failed: vLLM found no platform to call - an environment cause with no class of its own)
    (FAILURE, "Failed to infer device type", None, "other", FIXED, "config", (),
     "no platform was detected: no /dev/nvidia*, driver libraries not mounted or NVIDIA_VISIBLE_DEVICES empty"),
    # round 33: the same check before the platforms existed (vllm/config.py DeviceConfig 0.3 -> 0.5: CUDA not
    # available and no Neuron: "No supported device detected."), and PyTorch's refusal of the empty device type an
    # undetected platform has (UnspecifiedPlatform.device_type = "": torch.device("") raises "Device string must not
    # be empty", c10/core/Device.cpp) where a caller or another version builds the device without the check
    (FAILURE, "No supported device detected", None, "other", FIXED, "config", (),
     "no platform was detected: no /dev/nvidia*, driver libraries not mounted or NVIDIA_VISIBLE_DEVICES empty"),
    (FAILURE, "Device string must not be empty", None, "other", WHERE_OR, "config", (),
     "an empty device type: vLLM detected no platform (no GPU visible, or a vLLM build for another device)"),
    # --- cuda_init: platform, device discovery, CUDA context, memory pre-check ----------------------------------
    # PyTorch's CUDA error message (c10/cuda/CUDAException.cpp c10_cuda_check_implementation) ends with "CUDA kernel
    # errors might be asynchronously reported at some other API call, ..." on its own line: a paste cut after the
    # error's first line still shows a CUDA error (round 13); the error's own line, when there, comes first
    (FAILURE, "CUDA kernel errors might be asynchronously reported", None, "cuda_error", WHERE, None, (GENERIC,),
     "a CUDA error whose first line is not in the paste: CUDA_LAUNCH_BLOCKING=1 names the kernel"),
    (FAILURE, "No CUDA GPUs are available", None, "cuda_error", FIXED, "cuda_init", (AT_WARNING,),
     "no GPU visible to the process (CUDA_VISIBLE_DEVICES?)"),
    (FAILURE, "invalid device ordinal", None, "cuda_error", FIXED, "cuda_init", (),
     "a device index outside the visible GPUs"),
    (FAILURE, "busy or unavailable", None, "cuda_error", FIXED, "cuda_init", (),
     "a GPU in exclusive-process mode is held by another process"),
    (FAILURE, "no CUDA-capable device is detected", None, "cuda_error", FIXED, "cuda_init", (AT_WARNING,), None),
    # round 19: Ascend NPUs - the CANN runtime's failed device calls (its error lines "<api> execution failed,
    # reason=...[FUNC:...][FILE:error_message_manage.cc]...") for the calls that open a device (rtGetDeviceCount,
    # rtSetDevice, rtSetDefaultDeviceId), and torch_npu's "c10_npu::SetDevice(...) ... error code is N"
    (FAILURE, "execution failed, reason=", r"\brt(?:GetDeviceCount|SetDevice|SetDefaultDeviceId)\w* execution failed, "
     r"reason=", "cuda_error", WHERE_OR, "cuda_init", (AT_WARNING,),
     "the NPU driver could not open the device (npu-smi info; a process still holding it, the driver's state)"),
    (FAILURE, "c10_npu::SetDevice", None, "cuda_error", WHERE_OR, "cuda_init", (AT_WARNING,), None),
    # NVML's exceptions (pynvml: NVMLError_<Code> made from nvmlErrorString, e.g. InvalidArgument for an index
    # outside the host's GPUs, DriverNotLoaded, LibraryNotFound, GpuIsLost): the device could not be queried
    (FAILURE, "NVMLError", None, "cuda_error", WHERE_OR, "cuda_init", (),
     "NVML could not query the device: an index outside the host's GPUs (CUDA_VISIBLE_DEVICES), no driver loaded"),
    # gpu_worker.init_device's assertion local_rank < device_count: with no device visible the GPUs are not there
    # (cuda_error); (round 79) with some visible the layout asks for more than there are (TP x DP beyond the GPUs)
    (FAILURE, "is out of bounds for 0 devices", r"DP adjusted local rank \d+ is out of bounds",
     "cuda_error", FIXED, "cuda_init", (), "no GPU is visible to the worker (CUDA_VISIBLE_DEVICES, the container's devices)"),
    (FAILURE, "is out of bounds for", r"DP adjusted local rank \d+ is out of bounds for [1-9]",
     "config_error", FIXED, "cuda_init", (), "TP x DP asks for more GPUs than this node shows (CUDA_VISIBLE_DEVICES)"),
    (FAILURE, "Cannot re-initialize CUDA in forked subprocess", None, "cuda_error", FIXED, "cuda_init", (), None),
    (FAILURE, "Unsupported device type", None, "config_error", FIXED, "cuda_init", (), None),
    # round 50: the V2 model runner (vllm/v1/worker/gpu/buffer_utils.py UvaBuffer, 0.14 -> current; the CPU worker's
    # too), built in the worker's init_device, refuses to start without pinned host memory (is_uva_available)
    (FAILURE, "UVA is not available", None, "other", WHERE_OR, "cuda_init", (),
     "no pinned host memory for the model runner's buffers (a host taken for WSL, a container without it)"),
    # (a paste hard-wrapped after "desired" keeps the words up to there)
    (FAILURE, "on startup is less than desired", r"on startup is less than desired(?: (?:GPU|CPU|XPU)? ?memory utilization|\s*$)",
     "oom", FIXED, "cuda_init", (),
     "memory is held by other processes before vLLM starts: not a sizing problem"),
    (FAILURE, "Insufficient space in", r"Insufficient space in \S+ for", "other", FIXED, "cuda_init", (),
     "the container /dev/shm is too small (--shm-size or --ipc=host)"),
    # the CPU backend's shared memory for its collectives (csrc/cpu/shm.cpp SHMManager: "create shm in SHMManager
    # failed. errno: %d", "ftruncate in SHMManager failed. errno: %d"), made by the CPU communicator at init
    (FAILURE, "in SHMManager failed", r"(?:create shm|ftruncate|mmap) in SHMManager failed", "other", WHERE_OR,
     "distributed_init", (), "the CPU worker could not create its shared memory in /dev/shm: too small or full "
     "(--shm-size or --ipc=host)"),
    (FAILURE, "Cannot provide a placement group", None, "config_error", FIXED, "cuda_init", (), None),
    # Ray's autoscaler: no node type can take a resource demand (a bundle pinned to a node IP, more GPUs than the
    # cluster has) - vLLM's troubleshooting page names it for the workers' placement group (initialize_ray_cluster:
    # placing the workers, cuda_init as above); any Ray task can print it, so low without markers (USUAL_STAGE_LOW)
    (FAILURE, "No available node types can fulfill resource request", None, "other", WHERE_OR, "cuda_init", (AT_WARNING,),
     "Ray cannot place the workers: check that vLLM and Ray use the same node IP (VLLM_HOST_IP) and the GPUs Ray sees"),
    # Ray placement of the workers (vllm/executor/ray_utils.py initialize_ray_cluster; vllm/engine/ray_utils.py
    # initialize_cluster before 0.4): the cluster cannot give the GPUs asked for
    # (round 29: "... in the cluster" is the same check's words in vllm/engine/ray_utils.py initialize_cluster, <0.4)
    (FAILURE, "The number of required GPUs exceeds the total number of available GPUs in the", None,
     "other", FIXED, "cuda_init", (), "the Ray cluster has fewer GPUs than tensor x pipeline parallel size"),
    # round 29: initialize_model_parallel's first check (model_executor/parallel_utils/parallel_state.py <=0.3,
    # distributed/parallel_state.py after): the processes launched (torchrun --nproc-per-node, a caller's own
    # process group) are not the tensor x pipeline parallel layout asked for
    (FAILURE, "is not equal to tensor_model_parallel_size", None, "config_error", FIXED, "distributed_init", (),
     "the world size of the launch differs from tensor x pipeline parallel size"),
    (FAILURE, "Placement group bundle cannot have more than 1 GPU", None, "other", FIXED, "cuda_init", (), None),
    # (round 83) a Ray node that cannot reach the cluster's GCS (src/ray/gcs/gcs_client: "Failed to connect to GCS at
    # address %s within %d seconds"): joining the cluster the workers are placed on, before any worker starts
    (FAILURE, "Failed to connect to GCS at address", None, "timeout", WHERE_OR, "cuda_init", (),
     "this Ray node cannot reach the head's GCS (its address, port 6379, a firewall, the head not started)"),
    # (round 86) ... and a Ray node whose own processes did not come up in time (ray/_private/node.py: "The current node
    # timed out during startup. This could happen because some of the Ray processes failed to startup.")
    (FAILURE, "The current node timed out during startup", None, "timeout", WHERE_OR, "cuda_init", (),
     "this node's Ray processes (raylet) did not start: its IP address (hostNetwork, RAY_NODE_IP), ports, memory"),
    (FAILURE, "Ray does not allocate any GPUs on the driver node", None, "other", FIXED, "cuda_init", (),
     "run the driver on a GPU node or adjust the placement group"),
    (FAILURE, "Current node has no GPU available", None, "other", FIXED, "cuda_init", (), None),
    (FAILURE, "Timed out waiting for engine core processes to start", None, "timeout", WHERE, None, (),
     "raise VLLM_ENGINE_READY_TIMEOUT_S or find the slow stage"),
    (FAILURE, "Did not receive response from front-end process within", None, "timeout", WHERE, None, (), None),
    (FAILURE, "KeyboardInterrupt: terminated", None, "timeout", WHERE, None, (),
     "SIGTERM during start-up (a Kubernetes probe killed a slow start?)"),
    (FAILURE, "died unexpectedly (exit code:", r"died unexpectedly \(exit code: -?\d+\)",
     "engine_dead", WHERE, None, (),
     "a worker process died; exit code -9 is SIGKILL (host OOM killer?), -11 a segfault, -6 an abort"),
    (FAILURE, "RayWorkerProc rank=", r"RayWorkerProc rank=\S+ died unexpectedly", "engine_dead", WHERE, None, (), None),
    (FAILURE, "died with exit code", r"Process \S+ \(PID: \d+\) died with exit code", "engine_dead", WHERE, None, (), None),
    # Ray's memory monitor (the raylet's OOM killer, ray/_raylet memory_monitor): "Memory on the node (IP: ...)
    # where the task (...) was running was X / Y (Z), which exceeds the memory usage threshold of T. Ray killed this
    # worker (ID: ...) because it was the most recently scheduled task" - the host's memory, not the GPU's
    # (round 49) the same report's advice line ("Refer to the documentation on how to address the out of memory issue:
    # https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html"), kept when its head was cut away
    (FAILURE, "ray-oom-prevention", None, "oom", WHERE, None, (AT_WARNING,),
     "Ray's memory monitor killed a worker: the node ran low on host memory"),
    (FAILURE, "which exceeds the memory usage threshold", r"which exceeds the memory usage threshold of [\d.]+\. Ray killed",
     "oom", WHERE, None, (AT_WARNING,),
     "Ray's memory monitor killed a worker: the node's host memory (RAM) was above its threshold"),
    # --- distributed_init: torch.distributed, NCCL, Gloo, custom all-reduce -------------------------------------
    (FAILURE, "Failed to load NCCL library from", None, "import_error", FIXED, "distributed_init", (),
     "set VLLM_NCCL_SO_PATH or fix the NCCL install"),
    (FAILURE, "VLLM_NCCL_SO_PATH", r"please set the environment variable VLLM_NCCL_SO_PATH",
     "import_error", FIXED, "distributed_init", (), None),
    (FAILURE, "DeepEPv2 requires NCCL GIN", None, "config_error", FIXED, "distributed_init", (), None),
    (FAILURE, "The client socket has timed out after", None, "timeout", FIXED, "distributed_init", (),
     "the rendezvous (TCPStore) is unreachable: master address, firewall, or the other node not started"),
    # round 63: the store client's last try (torch/csrc/distributed/c10d/socket.cpp: "The client socket has failed to
    # connect to any network address of (host, port).", then DistNetworkError; its warnings before name each errno)
    (FAILURE, "The client socket has failed to connect to any network address of", None, "other", FIXED,
     "distributed_init", (), "the rendezvous (TCPStore) is unreachable: master address and port, firewall, or the "
     "node that serves it not started"),
    (FAILURE, "Gloo connectFullMesh failed", None, "nccl_error", FIXED, "distributed_init", (),
     "Gloo picked the wrong interface: set GLOO_SOCKET_IFNAME"),
    # gloo's own check of the interface it was told to use (GLOO_SOCKET_IFNAME), printed at once and without a
    # timestamp: the root cause, whatever timeout the other ranks report later
    (FAILURE, "Unable to find address for:", None, "nccl_error", FIXED, "distributed_init", (),
     "the network interface named in GLOO_SOCKET_IFNAME does not exist on this host: name one that does (ip -br link)"),
    # (round 84) ... and its check of the address it resolved for this host when no interface was named
    # (gloo/transport/tcp/device.cc: "ifa != nullptr. Unable to find interface for: [<address>]"): the host name or
    # VLLM_HOST_IP resolves to an address no interface of this host has
    (FAILURE, "Unable to find interface for", None, "nccl_error", FIXED, "distributed_init", (),
     "this host's name resolves to an address no interface has (/etc/hosts, VLLM_HOST_IP): set GLOO_SOCKET_IFNAME"),
    (FAILURE, "DistNetworkError", None, "other", FIXED, "distributed_init", (GENERIC,), None),
    (FAILURE, "'out of memory'", r"Cuda failure (?:\d+ )?'out of memory'",
     "oom", AT_LEAST, "distributed_init", (AT_WARNING,), None),
    (FAILURE, "unhandled cuda error", None, "nccl_error", AT_LEAST, "distributed_init", (), None),
    (FAILURE, "unhandled system error", None, "nccl_error", AT_LEAST, "distributed_init", (),
     "sockets, InfiniBand, /dev/shm or the IPC_LOCK capability"),
    (FAILURE, "internal error - please report this issue to the NCCL developers", None,
     "nccl_error", AT_LEAST, "distributed_init", (), None),
    # round 28: NCCL's own refusal to run inside a CUDA graph being captured (src/misc/strongstream.cc, "NCCL cannot
    # be captured in a graph if ..."), then ncclInvalidUsage: vLLM captures its graphs only at start-up
    (FAILURE, "NCCL cannot be captured in a graph", None, "nccl_error", FIXED, "engine_init", (),
     "NCCL was called inside CUDA-graph capture: NCCL built for CUDA < 11.3 or a driver < R465 (or --enforce-eager)"),
    (FAILURE, "invalid usage (run with NCCL_DEBUG", None, "nccl_error", AT_LEAST, "distributed_init", (), None),
    (FAILURE, "invalid argument (run with NCCL_DEBUG", None, "nccl_error", AT_LEAST, "distributed_init", (), None),
    (FAILURE, "ncclInvalidUsage", None, "nccl_error", AT_LEAST, "distributed_init", (), None),
    (FAILURE, "ncclSystemError", None, "nccl_error", AT_LEAST, "distributed_init", (), None),
    (FAILURE, "ncclUnhandledCudaError", None, "nccl_error", AT_LEAST, "distributed_init", (), None),
    (FAILURE, "ncclInternalError", None, "nccl_error", AT_LEAST, "distributed_init", (), None),
    (FAILURE, "NCCL error", r"NCCL error(?: in)?:", "nccl_error", AT_LEAST, "distributed_init", (GENERIC,), None),
    # Intel GPUs (oneCCL, the collective library of torch-ccl / IPEX that vLLM's XPU workers use in NCCL's place):
    # its log records carry the level tag "|CCL_ERROR|" (ccl/common/log/log.hpp)
    (FAILURE, "|CCL_ERROR|", None, "nccl_error", AT_LEAST, "distributed_init", (AT_WARNING,), None),
    # Ascend NPUs (torch_npu's ProcessGroupHCCL and its HCCL wrapper, which vllm-ascend uses in NCCL's place): "HCCL
    # function error: <call>, error code is %d" and the error-code record "ERR02200 DIST call hccl api failed."
    (FAILURE, "HCCL function error", None, "nccl_error", AT_LEAST, "distributed_init", (), None),
    (FAILURE, "DIST call hccl api failed", None, "nccl_error", AT_LEAST, "distributed_init", (AT_WARNING,),
     "HCCL failed: the E?xxxx record after it says why (a port already bound, a leftover process holding the NPU)"),
    (FAILURE, "Failed: Cuda error", r"Failed: Cuda error \S+:\d+",
     "cuda_error", AT_LEAST, "distributed_init", (GENERIC,),
     "custom all-reduce CUDACHECK; the process exits without a Python traceback"),
    (FAILURE, "Failed to bind NVLink SHARP", None, "nccl_error", AT_LEAST, "distributed_init", (AT_WARNING,),
     "try NCCL_NVLS_ENABLE=0"),
    # --- weight_loading ---------------------------------------------------------------------------------------
    (FAILURE, "Failed to load model - not enough GPU memory", None, "oom", FIXED, "weight_loading", (),
     "the weights do not fit: more tensor parallelism, quantization, or less memory held elsewhere"),
    (FAILURE, "Cannot find any model weights", None, "missing_file", FIXED, "weight_loading", (), None),
    (FAILURE, "Weight files referenced in index but missing", None, "missing_file", FIXED, "weight_loading", (), None),
    (FAILURE, "Following weights were not initialized from checkpoint", None,
     "config_error", FIXED, "weight_loading", (),
     "checkpoint and model architecture do not match"),
    (FAILURE, "Unknown load_format", None, "config_error", FIXED, "weight_loading", (), None),
    (FAILURE, "is not supported", r"Load format `\S+` is not supported", "config_error", FIXED, "weight_loading", (), None),
    (FAILURE, "SafetensorError", None, "missing_file", FIXED, "weight_loading", (),
     "a truncated or corrupt shard, or a git-lfs pointer instead of the file"),
    (FAILURE, "HeaderTooLarge", None, "missing_file", FIXED, "weight_loading", (), None),
    # round 74: get_quant_config (model_loader/weight_utils.py) finds no config of the quantization method asked for
    # in the checkpoint: the checkpoint is not of that method (or came incomplete) - config_error. Its caller was the
    # loader's model build up to 0.6 (weight_loading, the stage without frames) and VllmConfig's validation since
    # (vllm/config.py __post_init__ -> _get_quantization_config: config, read from the frames)
    (FAILURE, "Cannot find the config file for", None, "config_error", WHERE_OR, "weight_loading", (),
     "the checkpoint has no config of the quantization method asked for: drop --quantization or use a checkpoint "
     "of that method"),
    (FAILURE, "Found multiple config files for", None, "config_error", FIXED, "weight_loading", (), None),
    (FAILURE, "Unsupported quantization config found", None, "config_error", FIXED, "weight_loading", (), None),
    (FAILURE, "param_data.shape == loaded_weight.shape", None, "other", FIXED, "weight_loading", (),
     "checkpoint shapes do not fit this model or TP size"),
    # the linear layers' and parameters' weight_loader shape assertion (layers/linear.py ReplicatedLinear and
    # model_executor/parameter.py, 0.5 -> current: "Tried to load weights of size {}to a parameter of size {}")
    (FAILURE, "Tried to load weights of size", None, "other", FIXED, "weight_loading", (),
     "checkpoint shapes do not fit this model or TP size"),
    # the GGUF loader maps the file's tensor names to the model's (model_loader/gguf_loader.py _get_gguf_weights_map,
    # 0.10 -> current): a GGUF whose tensors the model class cannot take
    (FAILURE, "Failed to map GGUF parameters", None, "other", FIXED, "weight_loading", (), None),
    # model_loader/weight_utils.py default_weight_loader: "Attempted to load weight ({}) into parameter ({})"
    # (round 61: these three shape checks are class other, not config_error - the checkpoint's tensors do not fit the
    # model class as built, no setting is refused; a tensor-parallel size that splits a layer unevenly is refused
    # earlier by its own divisibility rows)
    (FAILURE, "Attempted to load weight", None, "other", FIXED, "weight_loading", (),
     "checkpoint shapes do not fit this model or TP size"),
    # --- engine_init: compile, memory profiling, KV cache, CUDA graphs ------------------------------------------
    (FAILURE, "No available memory for the cache blocks", None, "oom", FIXED, "engine_init", (),
     "raise --gpu-memory-utilization or free memory"),
    (FAILURE, "KV cache is needed, which is larger than the available KV cache memory", None,
     "oom", FIXED, "engine_init", (),
     "lower --max-model-len or raise --gpu-memory-utilization"),
    (FAILURE, "To serve at least one request with the model", None, "oom", FIXED, "engine_init", (),
     "lower --max-model-len or raise --gpu-memory-utilization"),
    (FAILURE, "is larger than the maximum number of tokens that can be stored in KV cache", None,
     "oom", FIXED, "engine_init", (), None),
    (FAILURE, "Cannot auto-fit max_model_len", None, "oom", FIXED, "engine_init", (), None),
    (FAILURE, "on kv cache allocation is less than requested memory", None, "oom", FIXED, "engine_init", (), None),
    (FAILURE, "Error in memory profiling", None, "other", FIXED, "engine_init", (),
     "another process changed GPU memory during profiling"),
    (FAILURE, "cannot express this model's mixed page sizes", None, "other", FIXED, "engine_init", (), None),
    (FAILURE, "Failed to promote local KV cache specs", None, "other", FIXED, "engine_init", (), None),
    (FAILURE, "backend compilation occurred during the initial profiling run", None,
     "other", FIXED, "engine_init", (), None),
    (FAILURE, "VLLM_USE_MEGA_AOT_ARTIFACT is enabled but PyTorch version does not support", None,
     "config_error", FIXED, "engine_init", (), None),
    # the CUDA runtime's stream-capture errors (cudaErrorStreamCaptureUnsupported, ...Invalidated, ...Merge, ...) come
    # only from a stream being captured: vLLM captures its CUDA graphs at start-up only (as the line below)
    (FAILURE, "cudaErrorStreamCapture", None, "cuda_error", FIXED, "engine_init", (), None),
    (FAILURE, "operation not permitted when stream is capturing", None, "cuda_error", FIXED, "engine_init", (),
     "a non-capturable operation inside a CUDA graph; --enforce-eager isolates it"),
    (FAILURE, "operation failed due to a previous error during capture", None, "cuda_error", FIXED, "engine_init", (), None),
    (FAILURE, "torch._dynamo.exc.", r"torch\._dynamo\.exc\.\w+", "other", AT_LEAST, "engine_init", (),
     "torch.compile failed; --enforce-eager isolates it"),
    (FAILURE, "InductorError", None, "other", AT_LEAST, "engine_init", (),
     "Inductor failed (missing compiler or Python headers, or a custom triton)"),
    (FAILURE, "LoweringException", None, "other", AT_LEAST, "engine_init", (), None),
    (FAILURE, "CppCompileError", None, "other", AT_LEAST, "engine_init", (), None),
    (FAILURE, "CalledProcessError", r"CalledProcessError: Command '\['\S*(?:gcc|cc|clang)",
     "other", AT_LEAST, "engine_init", (),
     "no working C compiler in the image"),
    # round 50: a kernel Triton compiles that needs more shared memory than the GPU has, or that the PTX assembler
    # refuses, fails before any CUDA call runs - class other, not cuda_error (the CUDA runtime's own errors); ptxas
    # reports a refused line as "ptxas <file>.ptx, line N; error   : ..."
    (FAILURE, "OutOfResources", r"OutOfResources: out of resource", "other", AT_LEAST, "engine_init", (), None),
    (FAILURE, "ptxas fatal", None, "other", AT_LEAST, "engine_init", (), "the bundled ptxas does not know this GPU"),
    (FAILURE, "PTXASError", None, "other", AT_LEAST, "engine_init", (), None),
    (FAILURE, ".ptx, line ", r"\bptxas \S+\.ptx, line \d+; error\s*:", "other", AT_LEAST, "engine_init", (), None),
    # (round 82) ptxas refusing the target it was given ("Value 'sm_121a' is not defined for option 'gpu-name'"):
    # the assembler bundled with Triton or the CUDA toolkit is older than the GPU's architecture
    (FAILURE, "is not defined for option 'gpu-name'", r"Value '\w+' is not defined for option 'gpu-name'", "other",
     AT_LEAST, "engine_init", (), "the ptxas in use does not know this GPU's architecture (a toolchain older than the GPU)"),
    # (round 82) a process killed by SIGILL - the shell's job report ("Illegal instruction (core dumped)"), faulthandler's
    # "Fatal Python error: Illegal instruction": the binary uses an instruction this CPU lacks (a wheel or image built
    # for AVX-512 or AMX; vLLM's CPU build documents its instruction-set requirements); the CUDA runtime's
    # cudaErrorIllegalInstruction reads "an illegal instruction was encountered" (lower case) and stays a CUDA error
    (FAILURE, "Illegal instruction", None, "other", WHERE_OR, "environment", (),
     "the CPU lacks an instruction the binary was built for (check the image's or wheel's CPU target: AVX-512, AMX)"),
    # Triton's make_cubin (triton/backends/nvidia/compiler.py, 3.x) runs ptxas with subprocess.run(check=True) and
    # raises PTXASError while handling its CalledProcessError (a paste may keep only the first)
    (FAILURE, "CalledProcessError", r"CalledProcessError: Command '\[[^\]]*/ptxas'", "other", AT_LEAST, "engine_init", (),
     None),
    # (round 48) Triton refusing an fp8 type the GPU lacks while it compiles a kernel (its fp8 checks: "type fp8e4nv
    # not supported in this architecture. The supported fp8 dtypes are ..."), as the compile rows above
    (FAILURE, "not supported in this architecture", r"type fp8\w* not supported in this architecture", "other",
     AT_LEAST, "engine_init", (), "this GPU has no such fp8 type: another --kv-cache-dtype or quantization"),
    (FAILURE, "RPC call to", r"RPC call to \S+ timed out", "timeout", WHERE, None, (), None),
    # round 53: V0's MQLLMEngineClient (engine/multiprocessing/client.py run_heartbeat_loop, 0.6.x) starts its
    # heartbeat check once the engine answered the client's readiness RPC (setup): the engine went silent under a
    # running server
    (FAILURE, "No heartbeat received from MQLLMEngine", None, "timeout", WHERE_OR, "request", (),
     "the engine process stopped answering (hung or killed): its own log says why"),
    # --- request: the serving loop and handlers -------------------------------------------------------------------
    # the OpenAI server's error body as a client prints it (vllm/entrypoints/openai/protocol.py ErrorResponse:
    # {"object": "error", "message": ..., "type": ..., "param": ..., "code": N}; newer {"error": {"message": ...}}):
    # the server was up and answered a request with it
    (FAILURE, "rror", r"""["']object["']\s*:\s*["']error["']\s*,\s*["']message["']|\{\s*["']error["']\s*:\s*\{\s*["']message["']""",
     "other", WHERE_OR, "request", (AT_WARNING,), "the server's error answer to a request; its own log says why"),
    # a request's structured-output spec rejected by the backend (vllm/v1/structured_output/backend_xgrammar.py
    # validate_xgrammar_grammar, and the messages vLLM's structured-output tests expect): the request, not the server
    # round 44: a request's inputs refused by checks that run only per prompt: inputs/parse.py parse_and_batch_prompt
    # (0.5 -> 0.12, LLM.generate and the completion handler), multimodal/registry.py map_input (0.5: more items of a
    # modality than --limit-mm-per-prompt allows; the profiling pass's dummy data stays within it), and the chat
    # handler's tool-choice check against the server's flags (serving_chat.py 0.6 -> current, answered as a 400)
    (FAILURE, "please provide at least one prompt", None, "other", FIXED, "request", (AT_WARNING,), None),
    # round 48: vLLM's placeholder for an optional dependency it did not find (utils/import_utils.py PlaceholderModule,
    # 0.7 -> current: "Please install vllm[%s] for %s support"), raised where the module is first used
    (FAILURE, "Please install vllm[", r"Please install vllm\[\w+\] for \w+ support", "import_error", WHERE, None,
     (AT_WARNING,), "an optional part of vLLM is not installed: pip install 'vllm[<extra>]'"),
    # round 47: NIXL's UCX backend (nixl src/plugins/ucx/ucx_utils.cpp: "Unexpected UCX error: %s") failing a KV
    # transfer of disaggregated serving - vLLM's NIXL connector starts a remote engine's handshake and its reads for
    # a request that names it (kv_transfer_params)
    (FAILURE, "Unexpected UCX error", None, "other", WHERE_OR, "request", (AT_WARNING,),
     "NIXL's UCX transport failed a KV transfer between prefill and decode instances"),
    # round 46: the V1 KV offloading worker's transfer of a request's blocks (v1/kv_offload/worker/worker.py
    # transfer_async, 0.12+: logger.warning("Exception in %r transfer %d: %r", ...) for a (src, dst) medium pair,
    # "Failed to submit %r transfer %d"): only scheduled requests' blocks are offloaded or loaded back
    (FAILURE, " transfer ", r"(?:Exception in|Failed to submit) \('\w+', '\w+'\) transfer \d+", "other", FIXED,
     "request", (AT_WARNING,), "the KV offloading worker could not move a request's blocks (CPU offload)"),
    (FAILURE, "in `--limit-mm-per-prompt`, but found", None, "other", FIXED, "request", (AT_WARNING,), None),
    (FAILURE, "tool choice requires --enable-auto-tool", None, "config_error", FIXED, "request", (AT_WARNING,),
     "the server was started without --enable-auto-tool-choice and --tool-call-parser"),
    (FAILURE, "features not supported by xgrammar", None, "other", FIXED, "request", (AT_WARNING,),
     "the request's JSON schema uses keywords the structured-output backend does not support"),
    (FAILURE, "Failed to transform json schema into a grammar", None, "other", FIXED, "request", (AT_WARNING,), None),
    (FAILURE, "Invalid grammar specification", None, "other", FIXED, "request", (AT_WARNING,), None),
    (FAILURE, "Grammar error:", None, "other", FIXED, "request", (AT_WARNING,), None),
    # a request's prompt longer than max_model_len: _validate_model_input (vllm/engine/llm_engine.py 0.6+: "The
    # {decoder,encoder} prompt (length N) is longer than the maximum model length of M"; v1/engine/processor.py,
    # input_processor.py, and 0.8's "Prompt length of N is longer than ..."): raised only for a request's input
    (FAILURE, "is longer than the maximum model length", None, "other", FIXED, "request", (AT_WARNING,),
     "a prompt longer than --max-model-len: the request, not the server"),
    # round 36: the same check's own words before its limit (an abridged paste: "The decoder prompt (length 4926) is
    # longer than ..."), and its sibling for the placeholders a prompt's images add ("... plus the number of ...")
    (FAILURE, "prompt (length ", r"The (?:decoder|encoder) prompt \(length \d+\) (?:is longer than|plus the number of)",
     "other", FIXED, "request", (AT_WARNING,), "a prompt longer than --max-model-len: the request, not the server"),
    # round 37: the checks a quantized layer's weights are created under, while the model is built (the layers'
    # __init__ -> quant_method.create_weights): FP8 block quantization's shapes (quantization/utils/fp8_utils.py
    # validate_fp8_block_shape: "... is not divisible by weight quantization block_n = M"), and compressed-tensors
    # finding no scheme for a layer (compressed_tensors.py get_scheme / _get_scheme_from_parts)
    (FAILURE, "divisible by weight quantization block_", None, "config_error", FIXED, "weight_loading", (),
     "the layer's size does not fit the checkpoint's FP8 block size at this tensor-parallel size"),
    (FAILURE, "No compressed-tensors compatible scheme was found", None, "other", FIXED, "weight_loading", (),
     "the checkpoint's quantization scheme is not one this vLLM release knows for that layer"),
    # round 38: the pipeline-parallel support check of the model's architecture (vllm/config.py ModelConfig
    # verify_with_parallel_config, 0.5 -> 0.6: NotImplementedError "Pipeline parallelism is only supported for the
    # following architectures: ...", later "... is not supported for this model"), while the config is built
    (FAILURE, "Pipeline parallelism is ", r"Pipeline parallelism is (?:only supported for the following|not supported "
     r"for this model)", "config_error", FIXED, "config", (), "this model cannot run with --pipeline-parallel-size > 1 "
     "in this vLLM release"),
    # round 39: CacheConfig's check of --swap-space against the host's memory (vllm/config.py
    # verify_with_parallel_config, 0.2 -> 0.10: ValueError("Too large swap space. " + msg)) while the config is built
    (FAILURE, "Too large swap space", None, "config_error", FIXED, "config", (),
     "--swap-space asks for more CPU memory than the host can give (lower it)"),
    # round 36: the Mamba state blocks a hybrid model's full decode CUDA graphs need, one per sequence
    # (config/compilation.py resolve_cudagraph_mode_and_sizes, called by the V1 model runner's initialize_attn_backend
    # once the KV cache is sized, never while profiling): the KV-cache capacity check of hybrid models
    (FAILURE, "exceeds available Mamba cache blocks", r"max_num_seqs \(\d+\) exceeds available Mamba cache blocks",
     "oom", FIXED, "engine_init", (), "fewer Mamba cache blocks than max_num_seqs: lower --max-num-seqs or raise "
     "--gpu-memory-utilization"),
    # V0 AsyncLLMEngine.engine_step under ENGINE_ITERATION_TIMEOUT_S (vllm/engine/async_llm_engine.py): a hang
    (FAILURE, "Engine iteration timed out", None, "timeout", WHERE_OR, "request", (),
     "a step of the engine hung while serving (a stuck worker or collective)"),
    # --- any stage: CUDA runtime and memory ---------------------------------------------------------------------
    (FAILURE, "illegal memory access", None, "illegal_memory_access", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "CUDA_ERROR_ILLEGAL_ADDRESS", None,
     "illegal_memory_access", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "cudaErrorIllegalAddress", None,
     "illegal_memory_access", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    # round 56: ROCm's runtime (ROCR-Runtime, the HSA queue's error handler: "Memory access fault by GPU node-N (Agent
    # handle: ...) on address ... Reason: ...", then abort): the AMD form of an illegal memory access
    (FAILURE, "Memory access fault by GPU node-", None,
     "illegal_memory_access", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "no kernel image is available for execution on the device", None,
     "cuda_error", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,),
     "the binary has no kernels for this GPU architecture"),
    (FAILURE, "the provided PTX was compiled with an unsupported toolchain", None,
     "driver_mismatch", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,),
     "the driver is older than the PTX"),
    (FAILURE, "device-side assert triggered", None, "cuda_error", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "unspecified launch failure", None, "cuda_error", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "uncorrectable ECC error encountered", None,
     "cuda_error", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,),
     "a hardware memory error: check the GPU (nvidia-smi -q -d ECC)"),
    (FAILURE, "misaligned address", None, "cuda_error", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "an illegal instruction was encountered", None,
     "cuda_error", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "NVRM: Xid", None, "cuda_error", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,),
     "a GPU fault reported by the kernel driver"),
    (FAILURE, "OutOfMemoryError", None, "oom", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "CUDA out of memory", None, "oom", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "CUDA error: out of memory", None, "oom", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    # round 20: vLLM's CUDA driver-API wrappers in C++ (csrc/cumem_allocator.cpp, the sleep-mode allocator 0.7.3+:
    # "CUDA Error: %s at %s:%d" from cuGetErrorString) - every allocation of weights and KV cache with
    # --enable-sleep-mode, and a wake_up's re-allocation
    (FAILURE, "CUDA Error: out of memory", None, "oom", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "cudaErrorMemoryAllocation", None, "oom", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    # round 31: the same on Ascend NPUs (torch_npu's caching allocator "NPU out of memory. NPUCachingAllocator tried
    # to allocate ...", its error code "ERR00006 PTA memory error"; CANN's runtime "Memory_Allocation_Failure(EL0004)")
    # and on TPUs (XLA's RESOURCE_EXHAUSTED status for a program or buffer that does not fit the device's memory)
    (FAILURE, "NPU out of memory", None, "oom", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "PTA memory error", None, "oom", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "Memory_Allocation_Failure(EL0004)", None, "oom", AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "RESOURCE_EXHAUSTED", r"\bRESOURCE_EXHAUSTED: .*(?:Attempting to reserve|[Oo]ut of memory)", "oom",
     AT_LEAST_OR_UNKNOWN, "cuda_init", (AT_WARNING,), None),
    (FAILURE, "Out of memory: Killed process", None, "oom", WHERE, None, (AT_WARNING,),
     "the host kernel OOM killer (host RAM, not GPU memory)"),
    (FAILURE, "running low on memory", None, "oom", WHERE, None, (AT_WARNING,),
     "host RAM exhausted (Ray memory monitor)"),
    (FAILURE, "CUDA error", r"CUDA error: \S", "cuda_error", AT_LEAST_OR_UNKNOWN, "cuda_init", (GENERIC, AT_WARNING), None),
    # round 23: the CUDA checks of flash-attention's kernels (csrc and hopper/ launch templates, also vendored by
    # xformers and vLLM's vllm-flash-attn: CHECK_CUDA / CHECK_CUDA_KERNEL_LAUNCH print "CUDA error (<file>:<line>):
    # <cudaGetErrorString>" to stderr and exit) - no Python traceback follows
    (FAILURE, "CUDA error (", r"CUDA error \([^()\s]+:\d+\): \S", "cuda_error", AT_LEAST_OR_UNKNOWN, "cuda_init", (), None),
    # PyTorch's ROCm build reports a HIP runtime error as CUDA's (c10/cuda CUDAException hipified: "HIP error: %s")
    (FAILURE, "HIP error", r"HIP error: \S", "cuda_error", AT_LEAST_OR_UNKNOWN, "cuda_init", (GENERIC, AT_WARNING), None),
    (FAILURE, "CUDADriverError", None, "cuda_error", AT_LEAST_OR_UNKNOWN, "cuda_init", (GENERIC,), None),
    (FAILURE, "Fatal Python error", None, "other", WHERE, None, (), None),
    # abseil's failure signal handler (installed by Ray in its workers): "*** SIGSEGV received at time=%d on cpu %d ***"
    (FAILURE, " received at time=", r"\*\*\* SIG[A-Z]+ received at time=\d+", "other", WHERE, None, (),
     "a process died on a signal (native code crashed); the frames printed after it say where"),
    # a device-side assertion of a CUDA kernel (device printf of assert(): "%s:%d: %s: block: [%d,%d,%d], thread:
    # [%d,%d,%d] Assertion `%s` failed."), e.g. PyTorch's CUDA_KERNEL_ASSERT in an index or gather kernel; round 26:
    # also a line a paste wrapped inside the condition (the block/thread coordinates are the format's own)
    (FAILURE, "Assertion `", r"block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion `", "cuda_error",
     WHERE, None, (), "a CUDA kernel's device-side assertion (often an index out of range): CUDA_LAUNCH_BLOCKING=1 "
     "shows the kernel"),
    # a stub loader that cannot resolve a CUDA library's symbol ("Invalid handle. Cannot load symbol cublasLtGetVersion":
    # the tsl/XLA CUDA stubs of JAX/TensorFlow installed beside vLLM): the CUDA libraries do not match
    (FAILURE, "Cannot load symbol", r"Cannot load symbol \w+", "driver_mismatch", WHERE, None, (AT_WARNING,),
     "a CUDA library in the environment lacks a symbol another library needs (mixed CUDA library versions)"),
    (FAILURE, "Segmentation fault", None, "other", WHERE, None, (), "a crash in native code"),
    # round 49: the KV connectors' worker side refusing to start without its transfer library (kv_connector/v1
    # nixl_connector.py NixlConnectorWorker.__init__ 0.9+, mooncake_connector.py 0.2x+: logger.error then
    # RuntimeError("NIXL is not available" / "Mooncake is not available")), built with the distributed environment
    (FAILURE, "NIXL is not available", None, "import_error", FIXED, "distributed_init", (),
     "the nixl package is not installed or does not load (the NIXL KV connector needs it)"),
    (FAILURE, "Mooncake is not available", None, "import_error", FIXED, "distributed_init", (),
     "the mooncake transfer engine is not installed or does not load (the Mooncake KV connector needs it)"),
    # round 47: Slurm stopping the job or step (slurmstepd: "*** JOB %u ON %s CANCELLED AT %s[ DUE TO TIME LIMIT] ***",
    # the same for "STEP %u.%u"; its task/cgroup plugin: "Detected %u oom_kill event(s) in StepId=...")
    (FAILURE, "CANCELLED AT", r"\*\*\* (?:JOB|STEP) [\d.]+ ON \S+ CANCELLED AT \S+ DUE TO TIME LIMIT", "timeout", WHERE,
     None, (), "the Slurm job ran past its time limit (--time)"),
    (FAILURE, "CANCELLED AT", r"\*\*\* (?:JOB|STEP) [\d.]+ ON \S+ CANCELLED AT", "other", WHERE, None, (),
     "Slurm cancelled the job (scancel, a failed node, or the allocation ended): the log before it says how far "
     "the server had got"),
    (FAILURE, "oom_kill event", r"Detected \d+ oom[_-]kill events?", "oom", WHERE, None, (AT_WARNING,),
     "the Slurm step's cgroup ran out of host memory"),
    # (round 42) the shell's report of SIGSEGV is glibc's strsignal(), translated by the locale (its po files): zh_CN,
    # de, fr, ja, ru
    (FAILURE, "\u6bb5\u9519\u8bef", None, "other", WHERE, None, (), "a crash in native code"),
    (FAILURE, "Speicherzugriffsfehler", None, "other", WHERE, None, (), "a crash in native code"),
    (FAILURE, "Erreur de segmentation", None, "other", WHERE, None, (), "a crash in native code"),
    (FAILURE, "\u30bb\u30b0\u30e1\u30f3\u30c6\u30fc\u30b7\u30e7\u30f3\u9055\u53cd", None, "other", WHERE, None, (),
     "a crash in native code"),
    (FAILURE, "\u041e\u0448\u0438\u0431\u043a\u0430 \u0441\u0435\u0433\u043c\u0435\u043d\u0442\u0438\u0440\u043e\u0432\u0430\u043d\u0438\u044f", None,
     "other", WHERE, None, (), "a crash in native code"),
    # --- issue 35, round 2: an exception's type and message whose meaning places a one-line paste (sources beside) -
    # the OpenAI server's request models (entrypoints/openai/protocol.py ChatCompletionRequest, CompletionRequest,
    # EmbeddingRequest, ...) are validated only when a request arrives; a config class's error stays config (GENERIC)
    (FAILURE, "validation error", r"\d+ validation errors? for (?:\w*Request|ChatCompletion\w+|\w*ToolsParam)\b",
     "other", FIXED, "request", (), "the request's body does not match the API's schema"),
    # the chat template renders per request (chat_utils.py apply_hf_chat_template -> jinja2), or is missing
    (FAILURE, "jinja2.exceptions.", r"jinja2\.exceptions\.(?:Template\w*Error|UndefinedError|SecurityError)",
     "other", WHERE_OR, "request", (), "the chat template cannot render this conversation"),
    (FAILURE, "default chat template is no longer allowed", None, "other", WHERE_OR, "request", (),
     "the tokenizer has no chat template: pass --chat-template"),
    (FAILURE, "chat_template is not set", None, "other", WHERE_OR, "request", (),
     "the tokenizer has no chat template: pass --chat-template"),
    # the quantization method's GPU check (VllmConfig._get_quantization_config, vllm/config.py 0.6+ and
    # config/vllm.py; model_loader/loader.py in 0.4-0.5, where markers or frames show weight_loading)
    (FAILURE, "is not supported for the current GPU", r"quantization method \S+ is not supported for the current GPU",
     "config_error", WHERE_OR, "config", (), "the GPU is older than the quantization method needs"),
    # compressed-tensors' (and quark's) scheme check, CompressedTensorsConfig._check_scheme_supported (0.5.1 ->
    # current): get_scheme calls it while a layer's __init__ asks for its quant method - building the model (round 9);
    # raised with three arguments, so it prints as a tuple: ('Quantization scheme is not supported for ', ...)
    (FAILURE, "Quantization scheme is not supported for", None, "config_error", FIXED, "weight_loading", (),
     "the GPU is older than the checkpoint's quantization scheme needs"),
    # the LoRA adapter's rank against --max-lora-rank: lora/worker_manager.py _load_lora (0.3 -> 0.6) and
    # lora/peft_helper.py PEFTHelper.validate_legal (0.7 -> current), run when an adapter is loaded - for the request
    # that names it (V0 and V1 _apply_adapters), or at start for --lora-modules (V1): the log's stage, else request
    # a LoRA weight name the adapter loader cannot place (lora/utils.py parse_fine_tuned_lora_name, 0.3 -> current),
    # raised while an adapter is loaded: as the rank check
    (FAILURE, "is unsupported LoRA weight", None, "other", WHERE_OR, "request", (), None),
    # round 19: the adapter's modules against the model's LoRA-able ones (lora/models.py from_local_checkpoint 0.4 ->
    # 0.1x, lora/lora_model.py after: "While loading %s, expected target modules in %s but received %s"): as above
    (FAILURE, "expected target modules in", r"While loading \S.*, expected target modules in", "other", WHERE_OR,
     "request", (), "the adapter targets modules this model cannot take LoRA on (a vision tower, lm_head, names)"),
    (FAILURE, "is greater than max_lora_rank", r"LoRA rank \d+ is greater than max_lora_rank \d+", "config_error",
     WHERE_OR, "request", (), "raise --max-lora-rank to the adapter's rank"),
    # SchedulerConfig._verify_args (vllm/config.py 0.4-0.10, config/scheduler.py): raised as the config is built
    (FAILURE, "is smaller than max_model_len", r"max_num_batched_tokens \(\d+\) is smaller than max_model_len",
     "config_error", FIXED, "config", (), None),
    # transformers' Auto* classes (vLLM's config and tokenizer helpers): the checkpoint's class is unknown to it
    (FAILURE, "Unrecognized configuration class", None, "config_error", WHERE_OR, "config", (), None),
    (FAILURE, "does not recognize this architecture", None, "config_error", WHERE_OR, "config", (),
     "the installed transformers is older than the model"),
    (FAILURE, "does not exist or is not currently imported", r"Tokenizer class \S+ does not exist", "config_error",
     WHERE_OR, "config", (), None),
    # a missing file named by what reads it: the config and tokenizer files (config), checkpoint shards (weights)
    (FAILURE, "No such file or directory", r"No such file or directory:? '?\S*(?:config|tokenizer|vocab|merges)"
     r"[\w.-]*\.(?:json|model|txt)\b", "missing_file", WHERE_OR, "config", (), None),
    (FAILURE, "No such file or directory", r"No such file or directory:? '?\S*\.(?:safetensors|bin|pt|pth|gguf)\b",
     "missing_file", WHERE_OR, "weight_loading", (), None),
    # a parameter name not in the model (models/*.py load_weights: params_dict[name]; the fused-MoE layers register
    # w13_weight, w2_weight, w13_weight_scale_inv, w2_input_scale, ...; round 52: bitsandbytes' quant state of a weight,
    # weight.absmax, .quant_map, .nested_absmax, .quant_state.bitsandbytes__nf4, read by the bitsandbytes loader);
    # torch's load_state_dict
    (FAILURE, "KeyError: '", r"KeyError: '[\w.]+\.(?:\w*_)?(?:weight|bias|qweight|qzeros|scales|g_idx|\w*scale|absmax|"
     r"quant_map|quant_state(?:\.bitsandbytes__\w+)?)(?:_inv)?'", "other",
     WHERE_OR, "weight_loading", (), "a checkpoint tensor the model code does not know (another architecture/version)"),
    (FAILURE, "Error(s) in loading state_dict for", None, "other", WHERE_OR, "weight_loading", (), None),
    # PyTorch's CUDA init (c10/cuda): "CUDA driver initialization failed, you might not have a CUDA gpu."
    (FAILURE, "CUDA driver initialization failed", None, "cuda_error", WHERE_OR, "cuda_init", (), None),
    # PyTorch's caching allocator warns before it raises (c10/cuda/CUDACachingAllocator.cpp, torch 2.4+: "memory
    # allocation failed with OOM on device %d while trying to allocate %d bytes (free: %d, total: %d)"; dev c181)
    (FAILURE, "memory allocation failed with OOM", None, "oom", WHERE, None, (AT_WARNING,), None),
    # the quantized layers' shape checks in create_weights (layers/quantization/gptq.py, awq.py, *marlin*.py), run
    # while load_model builds the model: the tensor-parallel split does not fit the quantized shapes (cause config)
    # round 51: LoRA asked of a model class without it, refused while the model is loaded (model_loader/loader.py
    # _get_model_initialization_kwargs, 0.4 -> 0.6: "Model X does not support LoRA, but LoRA is enabled"; the V0
    # model runner's and V1 LoRA mixin's load_model: "X does not support LoRA yet.")
    (FAILURE, "does not support LoRA", r"does not support LoRA(?:, but LoRA is enabled| yet\b)", "config_error", WHERE_OR,
     "weight_loading", (), "this model class has no LoRA support in this vLLM: drop --enable-lora or merge the adapter"),
    # the V2 model runner's pooling runner, made in load_model after "Model loading took" (v1/worker/gpu/pool/
    # pooling_runner.py, in 0.32, not in 0.26): the model's pooling task is one this runner does not run
    (FAILURE, "Model Runner V2 supports pooling tasks", None, "config_error", WHERE_OR, "engine_init", (),
     "VLLM_USE_V2_MODEL_RUNNER=0, or a pooling task the V2 runner supports"),
    # round 52: FlashAttentionImpl.__init__ (v1/attention/backends/flash_attn.py, 0.10.1 -> 0.11) refuses attention
    # sinks (gpt-oss) without FlashAttention 3: the attention layers are built with the model
    (FAILURE, "Sinks are only supported in FlashAttention 3", None, "other", WHERE_OR, "weight_loading", (),
     "attention sinks need FlashAttention 3 (Hopper): another attention backend or GPU"),
    # round 52: an attention backend's impl is constructed by the model's attention layers (Attention.__init__) - its
    # constructor refusing the layer's arguments (a backend from another release: "FlashAttentionImpl.__init__() got
    # an unexpected keyword argument 'sinks'") is the model being built
    (FAILURE, "Impl.__init__() ", r"\b\w*(?:Attention|Attn)\w*Impl\.__init__\(\) (?:got an unexpected keyword|missing \d+ "
     r"required)", "other", WHERE_OR, "weight_loading", (), "the attention backend is from another vLLM release"),
    # torch.ops' namespace of vLLM's compiled extension without the op a layer calls (torch/_ops.py _OpNamespace:
    # "'_OpNamespace' '_C' object has no attribute 'gelu_quick'"): vllm._C from another build; an op is first called
    # when the weights are processed or the model first runs
    (FAILURE, "'_OpNamespace' '_", r"'_OpNamespace' '_(?:C|\w+_C|C_\w+)' object has no attribute", "import_error",
     AT_LEAST_OR_UNKNOWN, "weight_loading", (), "vllm._C lacks this op: the compiled extension is from another vLLM build"),
    # round 54: vllm/_custom_ops.py (0.4 -> 0.5) imports vllm._C's ops inside "try: ... except ImportError: pass", so
    # a vllm._C that did not import shows only at the first op call: NameError: name 'vllm_ops' / 'vllm_cache_ops'
    (FAILURE, "_ops' is not defined", r"NameError: name 'vllm_(?:cache_)?ops' is not defined", "import_error",
     AT_LEAST_OR_UNKNOWN, "weight_loading", (),
     "vllm._C did not import (vllm/_custom_ops.py hides its ImportError): python -c 'import vllm._C' says why"),
    # DeepGEMM's placeholder (vllm/utils/deep_gemm.py _missing, 0.12 -> current) raises at the first DeepGEMM kernel
    # call - the FP8 GEMMs and MoE of the profiling and warm-up passes; the sparse attention indexer layer refuses to be
    # constructed without it (layers/sparse_attn_indexer.py SparseAttnIndexer.__init__, 0.20 -> current: the model is
    # built by the loader's initialize_model)
    (FAILURE, "DeepGEMM backend is not available", None, "import_error", WHERE_OR, "engine_init", (),
     "install deep_gemm (or a vLLM build with it), or pick kernels that do not need it"),
    (FAILURE, "requires DeepGEMM to be installed", None, "import_error", WHERE_OR, "weight_loading", (),
     "install deep_gemm (or a vLLM build with it)"),
    (FAILURE, "is not aligned with the quantized weight shape", None, "config_error", WHERE_OR, "weight_loading", (),
     "the tensor-parallel size splits the quantized weights unevenly"),
    (FAILURE, "is not divisible by min_thread_", None, "config_error", WHERE_OR, "weight_loading", (),
     "the tensor-parallel size splits the quantized weights unevenly"),
    # round 51: the Mistral tokenizer's file, looked for while the tokenizer is made (transformers_utils/tokenizers/
    # mistral.py find_tokenizer_file, 0.6 -> 0.11: "Found N files matching the pattern ... Make sure that a Mistral
    # tokenizer is present in [...]" - none; "Make sure only one Mistral tokenizer is present" - several)
    (FAILURE, "Mistral tokenizer is present", r"Make sure that a Mistral\s+tokenizer is present", "missing_file",
     WHERE_OR, "config", (), "no tokenizer.model.v* / tekken.json beside the model: --tokenizer-mode auto, or add it"),
    (FAILURE, "Mistral tokenizer is present", r"Make sure only one Mistral\s+tokenizer is present", "config_error",
     WHERE_OR, "config", (), None),
    # round 52: a quantization config without a key its method needs (layers/quantization/base_config.py
    # get_from_keys: "Cannot find any of [...] in the model's quantization config"), read by get_quant_config - in the
    # loader up to 0.6, while VllmConfig is built since (so no stage in general); bitsandbytes' adapter_name_or_path was
    # read only by 0.5's BitsAndBytesConfig.from_config, whose get_quant_config ran in the loader's _initialize_model
    (FAILURE, "in the model's quantization config",
     r"Cannot find any of \['adapter_name_or_path'\] in the model's quantization config", "config_error", WHERE_OR,
     "weight_loading", (), "vLLM 0.5's bitsandbytes reads the QLoRA adapter from its quantization config: "
     "--qlora-adapter-name-or-path, or a newer vLLM"),
    # round 55: a parser name the server does not know - the OpenAI server's check of --tool-call-parser before it
    # starts the engine (api_server.py / cli_args.py, 0.6 -> current: KeyError "invalid tool call parser: X (chose
    # from {...})") and the reasoning parsers' registry (reasoning/abs_reasoning_parsers.py, 0.26 -> current:
    # "Reasoning parser 'X' not found. Available parsers: ...", first asked by VllmConfig for its tokens)
    (FAILURE, "invalid tool call parser", None, "config_error", WHERE_OR, "config", (),
     "--tool-call-parser names a parser this vLLM does not have (the message lists them)"),
    (FAILURE, "Reasoning parser '", r"Reasoning parser '[^']*' not found\. Available parsers", "config_error", WHERE_OR,
     "config", (), "--reasoning-parser names a parser this vLLM does not have (the message lists them)"),
    # round 56: the engine arguments' V1 oracle (engine/arg_utils.py _raise_or_fallback, 0.8 -> 0.11: with
    # VLLM_USE_V1=1 set, a feature V1 lacks - a flag, a device type, a model kind - raises "VLLM_USE_V1=1 is not
    # supported with <feature>." while the engine config is built, where unset it falls back to V0; only there: FIXED)
    (FAILURE, "VLLM_USE_V1=1 is not supported with", None, "config_error", FIXED, "config", (),
     "unset VLLM_USE_V1 (this vLLM then runs the feature on V0) or drop the feature the message names"),
    # round 56: the model's architecture resolved by the loader (model_executor/model_loader/utils.py
    # resolve_transformers_fallback / resolve_transformers_arch, 0.7 -> 0.9: "<arch> has no vLLM implementation and
    # the Transformers implementation is not compatible with vLLM."), the row of "Cannot find model module" beside it
    (FAILURE, "has no vLLM implementation and the Transformers implementation is not compatible", None, "other",
     WHERE_OR, "weight_loading", (), "this vLLM cannot run the architecture: a vLLM release that implements it"),
    # round 56: PyTorch's CUDA context asked for a device it does not count (aten/src/ATen/cuda/CUDAContext.cpp
    # getDeviceProperties: TORCH_INTERNAL_ASSERT(device >= 0 && device < num_gpus)) at the first device query
    (FAILURE, "device < num_gpus INTERNAL ASSERT FAILED", None, "cuda_error", WHERE_OR, "cuda_init", (),
     "the process sees fewer GPUs than it asks for: CUDA_VISIBLE_DEVICES and the device ids vLLM is given"),
    # round 60: a disaggregated (P/D) worker pairing with a remote engine's KV cache (kv_connector/v1/nixl_connector.py
    # 0.12 -> 0.13, kv_connector/utils.py 0.14 -> current: assert "Local block size N is not divisible by remote block
    # size M or vice versa.", "Local|Remote tensor parallel size N is not divisible by remote|local ..."), checked in
    # NIXL's add_remote_agent / _validate_remote_agent_handshake: the handshake a request naming that engine starts
    (FAILURE, "is not divisible by", r"(?:Local|Remote) (?:block size|tensor parallel size) \d+ is not divisible by "
     r"(?:remote|local) (?:block size|tensor parallel size)", "config_error", WHERE_OR, "request", (),
     "the prefill and decode instances cannot be paired: start them with block and tensor-parallel sizes that divide"),
    # round 60: the paged-attention kernels' TORCH_CHECK of the KV-cache block size (csrc/attention/
    # attention_kernels.cu, csrc/cpu/attention.cpp, csrc/rocm/attention.cu: "Unsupported block size: N"), hit
    # wherever the kernel first runs (a CUDA-graph capture at start-up, else the first decode): never before the model
    # runs, and without the log's stage unknown (not the config, which accepted the size)
    (FAILURE, "Unsupported block size: ", r"Unsupported block size: \d+", "config_error", AT_LEAST_OR_UNKNOWN,
     "engine_init", (),
     "the attention kernels are not built for this --block-size"),
    # round 60: vLLM's wrapper of its custom ops (_custom_ops.py hint_on_error, 0.5.3 -> 0.6.3: NotImplementedError
    # "Error in calling custom op %s: %s / Not implemented or built, mostly likely because the current current device
    # does not support this kernel ..."): the compiled kernels lack this GPU, as "no kernel image is available"
    (FAILURE, "Not implemented or built, mostly likely because", None, "cuda_error", AT_LEAST_OR_UNKNOWN, "cuda_init",
     (), "vLLM's compiled kernels were not built for this GPU (TORCH_CUDA_ARCH_LIST of the build, or another wheel)"),
    # round 62: LLVM's fatal-error handler (llvm/lib/Support/ErrorHandling.cpp report_fatal_error: "LLVM ERROR: "
    # and the reason, then abort), reached through Triton's compiler when a kernel is built for this GPU: the process
    # is gone, the reason on this line is the cause; the log's stage (a kernel is compiled where it first runs)
    (FAILURE, "LLVM ERROR: ", None, "other", WHERE, None, (),
     "Triton's LLVM could not compile a kernel for this GPU (its architecture or the Triton version)"),
    # round 64: vLLM's CUTLASS kernels refusing this GPU (csrc/quantization/cutlass_w8a8/*_entry.cu, csrc/attention
    # mla, 0.6 -> current: TORCH_CHECK_NOT_IMPLEMENTED "No compiled cutlass_scaled_mm for a compute capability less
    # than CUDA device capability: N", "..._azp", "..._scaled_sparse_mm", "cutlass_*fp4_group_mm kernel", "cutlass
    # MLA"): a GEMM or attention kernel of a forward pass, so never before the model runs - the 2:4 weights'
    # compression (cutlass_sparse_compress) runs when the weights are processed after loading
    (FAILURE, "No compiled cutlass", r"No compiled cutlass(?:_scaled_mm|_scaled_mm_azp|_scaled_sparse_mm|"
     r"_mxfp4_group_mm|_fp4_group_mm| MLA)\b", "cuda_error", AT_LEAST, "engine_init", (),
     "this vLLM build has no CUTLASS kernel for this GPU's compute capability (a wheel built for it, or another "
     "quantization)"),
    (FAILURE, "No compiled cutlass_sparse_compress", None, "cuda_error", AT_LEAST, "weight_loading", (),
     "this vLLM build has no CUTLASS kernel for this GPU's compute capability"),
    # round 65: the platform refusing the attention backend it was asked for (platforms/cuda.py, rocm.py
    # get_attn_backend_cls, 0.11 -> current: "Selected backend X is not valid for this configuration. Reason: [...]"),
    # asked by the attention layers as the model is built (attention/selector.py get_attn_backend) - and later by the
    # model runner, which the log's stage then shows
    # round 78: the reason list is the platform's own - "ImportError" when the backend's module did not import (the
    # package, FlashInfer or FlashMLA, is not installed): import_error; the MLA prefill backend's refusal reads the same
    (FAILURE, "is not valid for this configuration",
     r"Selected (?:MLA prefill )?backend \S+ is not valid for this configuration\. Reason: \['ImportError'\]",
     "import_error", WHERE_OR, "weight_loading", (),
     "the attention backend asked for is not installed (its module did not import): install it or ask for another"),
    (FAILURE, "is not valid for this configuration",
     r"Selected (?:MLA prefill )?backend \S+ is not valid for this configuration",
     "config_error", WHERE_OR, "weight_loading", (),
     "the attention backend asked for (--attention-backend / VLLM_ATTENTION_BACKEND) cannot run this model on this GPU"),
    # round 59: the tensor-parallel split of a layer's size (vllm/distributed/utils.py ensure_divisibility, 0.2 ->
    # current: assert "{} is not divisible by {}", called by the layers and models while the model is built)
    (FAILURE, "is not divisible by", r"AssertionError: \d+ is not divisible by \d+", "config_error", WHERE_OR,
     "weight_loading", (), "the tensor-parallel size does not divide the model's sizes (vocabulary, heads, layers)"),
    # the model's config cannot be read (vllm transformers_utils/config.py get_config; transformers' AutoConfig)
    (FAILURE, "No supported config format found in", None, "missing_file", WHERE_OR, "config", (), None),
    (FAILURE, "Should have a `model_type` key in its config.json", None, "config_error", WHERE_OR, "config", (), None),
    # Triton compiles its launcher with the host's C compiler at the first kernel (triton/runtime/build.py), in
    # vLLM at the compile / profiling / warm-up passes like the gcc row above
    (FAILURE, "Failed to find C compiler", None, "other", AT_LEAST, "engine_init", (), "no C compiler in the image"),
    # round 32: the custom all-reduce's P2P check run in a subprocess (distributed/device_communicators/
    # custom_all_reduce_utils.py gpu_p2p_access_check, 0.4 -> 0.6: subprocess.run of the file itself, check=True)
    (FAILURE, "CalledProcessError", r"CalledProcessError: Command '\[.*custom_all_reduce_utils\.py", "other", FIXED,
     "distributed_init", (), "the custom all-reduce's P2P check failed: --disable-custom-all-reduce to go without it"),
    # round 32: Ray's refusal of an actor class a node cannot import (ray/_private/function_manager.py: "The actor
    # with name %s failed to import on the worker. This may be because needed library dependencies are not
    # installed in the worker environment"): the node's Python lacks what the actor needs; the log's stage
    (FAILURE, "failed to import on the worker", None, "import_error", WHERE, None, (),
     "a Ray node's Python lacks vLLM or a library it needs: the same environment on every node"),
    # round 31: FlashInfer's JIT build of a kernel (flashinfer/jit: ninja in its cache folder, ~/.cache/flashinfer/),
    # run at the first call of the kernel - in vLLM the start-up's profiling / warm-up / capture passes
    (FAILURE, "CalledProcessError", r"CalledProcessError: Command '\['ninja', .*flashinfer", "other", AT_LEAST,
     "engine_init", (), "FlashInfer could not build a kernel for this GPU: its JIT build log (nvcc, arch) has why"),
    # a CPU-only PyTorch (torch/cuda/__init__.py _lazy_init), met where CUDA is first asked for
    # round 30: vLLM's platform detection found no accelerator (platforms/__init__.py resolve_current_platform_cls_qualname,
    # 0.7+, logged at INFO): the engine cannot start on this host or in this container (GPUs not given to it, driver
    # libraries not mapped). A diagnostic: it stands in only when the log shows no failure - what fails after it
    # ("Failed to infer device type": config, round 21; a driver library that does not load) is the answer
    (DIAGNOSTIC, "No platform detected, vLLM is running on UnspecifiedPlatform", None, "other", FIXED, "environment",
     (AT_WARNING, AT_INFO), "no GPU is visible to vLLM here: the container's GPU request or runtime, or the driver libraries"),
    # round 30: PyTorch's lazy CUDA init failing in a call made before it (torch/cuda/__init__.py _lazy_init:
    # DeferredCudaCallError "CUDA call failed lazily at initialization with error: ..."), raised at the first
    # CUDA call of the process that makes it: the log's stage, else cuda_init
    (FAILURE, "CUDA call failed lazily at initialization", None, "cuda_error", WHERE_OR, "cuda_init", (), None),
    # round 30: the BitsAndBytes loader's check that the model class maps its packed modules
    # (model_loader/loader.py 0.5 -> 0.8, bitsandbytes_loader.py after: "Model %s does not support BitsAndBytes
    # quantization yet"), raised while the weights load
    (FAILURE, "does not support BitsAndBytes quantization yet", None, "config_error", FIXED, "weight_loading", (),
     "this model class cannot be loaded with bitsandbytes in this vLLM version: another quantization or a newer vLLM"),
    # round 30: LMCache's allocator of its KV-cache buffer (lmcache memory_management.py: "Failed to allocate memory
    # ... because no memory is available", a warning before its RuntimeError), run when a request's KV is stored or
    # loaded: the log's stage, else request
    (FAILURE, "because no memory is available", r"Failed to allocate memory .{0,200}because no memory is available",
     "oom", WHERE_OR, "request", (AT_WARNING,), "LMCache's buffer is full: raise its max_local_cpu_size or evict sooner"),
    (FAILURE, "Torch not compiled with CUDA enabled", None, "driver_mismatch", WHERE_OR, "cuda_init", (),
     "the installed torch is a CPU-only build"),
    # the model path is neither a folder nor a Hub id (transformers utils/hub.py; vllm transformers_utils/config.py)
    (FAILURE, "Incorrect path_or_model_id", None, "missing_file", WHERE_OR, "config", (), None),
    (FAILURE, "Invalid repository ID or local directory specified", None, "missing_file", WHERE_OR, "config", (), None),
    # the server's CLI check (entrypoints/openai/cli_args.py validate_parsed_serve_args)
    (FAILURE, "enable-auto-tool-choice requires", None, "config_error", FIXED, "config", (), "add --tool-call-parser"),
    # the rendezvous' TCPStore server (c10d/TCPStore.cpp "... waiting for clients. %d/%d clients joined.")
    (VICTIM, "waiting for clients", r"Timed out after \d+ seconds waiting for clients", "timeout", AT_LEAST,
     "distributed_init", (), "ranks missing at the rendezvous (MASTER_ADDR/PORT, a rank that died first)"),
    # --- api_ready / request --------------------------------------------------------------------------------
    (FAILURE, "Application startup failed", None, "other", FIXED, "api_ready", (AT_WARNING,), None),
    (FAILURE, "Exception occurred while running API servers", None, "other", FIXED, "api_ready", (), None),
    # --- hang hints and warnings kept as hints ------------------------------------------------------------------
    (HANG_HINT, "No available shared memory broadcast block found in", None, None, WHERE, None, (AT_WARNING, AT_INFO),
     "a worker is stuck (NCCL hang, slow compile)"),
    (HANG_HINT, "workers still running after", None, None, WHERE, None, (AT_WARNING, AT_INFO),
     "a worker did not exit (often stuck in a collective)"),
    (HANG_HINT, "Waiting for", r"Waiting for \d+ local, \d+ remote core engine proc", None, WHERE, None, (AT_INFO,), None),
    (WARNING_HINT, "Failed to import from vllm._C", None, None, WHERE, None, (AT_WARNING,),
     "wheel/torch ABI mismatch; missing ops fail later"),
    (WARNING_HINT, "Free memory grew by", None, None, WHERE, None, (AT_WARNING,), None),
    (WARNING_HINT, "Compiling model again due to a load failure", None, None, WHERE, None, (AT_WARNING,), None),
    # logged at DEBUG by 0.6 (entrypoints/launcher.py) and at WARNING later
    (WARNING_HINT, "is used by process", r"port \d+ is used by process", None, WHERE, None, (AT_WARNING, AT_DEBUG), None),
)

# signatures whose usual stage (WHERE_OR, AT_LEAST), when nothing else places them, is one of several call sites:
# confidence low instead of medium (issue 35, round three).  The dynamic loader's errors surface wherever a compiled
# extension is first loaded: vllm._C at ``import vllm`` (environment), flash-attn / FlashInfer / xformers /
# DeepGEMM when an attention or MoE backend is picked while the model is built, cuBLASLt / Triton at the first
# kernel call (profiling).  A connection reset or closed by the peer is any socket: a TCPStore or Gloo peer
# (distributed init), a Hugging Face download (config, weights), a client going away (request).  A refused request
# (a 400) is the request stage's, but a client's quote of it proves nothing of the server (round 10).
USUAL_STAGE_LOW = frozenset(("cannot open shared object file", "undefined symbol", "peer", "maximum context length is",
                             "No available node types can fulfill resource request", "is not defined",
                             "prompt updates corresponding to", "Device string must not be empty",
                             "input of failed execution"))

# --------------------------------------------------------------------------------------------------------------
# stage markers: (stage, role, format, key, regex or None)
# --------------------------------------------------------------------------------------------------------------
MARKERS = (
    ("environment", ENTRY, FMT_VLLM, "version", r"█\s+version\s+\S+"),
    ("environment", ENTRY, FMT_VLLM, "vLLM server version", None),
    ("environment", ENTRY, FMT_VLLM, "vLLM API server version", None),
    ("environment", ENTRY, FMT_VLLM, "Available plugins for group", None),
    ("environment", ENTRY, FMT_VLLM, "Platform plugin", r"Platform plugin \S+ is activated"),
    ("environment", ENTRY, FMT_VLLM, "Automatically detected platform", None),
    ("environment", ENTRY, FMT_VLLM, "headless multiproc executor", None),
    ("environment", ENTRY, FMT_VLLM, "in headless mode, with head node address", None),
    ("config", ENTRY, FMT_VLLM, "non-default args:", None),
    ("config", ENTRY, FMT_VLLM, "args: Namespace(", None),
    ("config", ENTRY, FMT_VLLM, "Resolved architecture:", None),
    ("config", ENTRY, FMT_VLLM, "Using max model len", None),
    ("config", ENTRY, FMT_VLLM, "Chunked prefill is enabled with", None),
    ("config", ENTRY, FMT_VLLM, "Defaulting api_server_count", None),
    ("config", ENTRY, FMT_VLLM, "HF_HUB_OFFLINE is True", None),
    ("config", ENTRY, FMT_VLLM, "Using ray distributed inference", None),
    ("config", ENTRY, FMT_VLLM, "for distributed inference", r"Defaulting to use \w+ for distributed inference"),
    ("cuda_init", ENTRY, FMT_VLLM, "Initializing a V1 LLM engine", None),
    ("cuda_init", ENTRY, FMT_VLLM, "Initializing an LLM engine", None),
    ("cuda_init", ENTRY, FMT_VLLM, "DP group leader:", None),
    ("cuda_init", ENTRY, FMT_VLLM, "Started engine process with PID", None),
    ("cuda_init", ENTRY, FMT_VLLM, "Started DP Coordinator process", None),
    ("cuda_init", ENTRY, FMT_VLLM, "Waiting for READY message from DP Coordinator", None),
    ("cuda_init", ENTRY, FMT_VLLM, "vLLM message queue communication handle", None),
    ("cuda_init", ENTRY, FMT_VLLM, "Reducing Torch parallelism from", None),
    ("cuda_init", ENTRY, FMT_VLLM, "placement group",
     r"(?:Waiting for creating a placement group|No current placement group found|Using the existing placement group)"),
    ("cuda_init", ENTRY, FMT_VLLM, "Using V2 Model Runner", None),
    ("cuda_init", ENTRY, FMT_VLLM, "worker init memory snapshot", None),
    ("distributed_init", ENTRY, FMT_VLLM, "distributed_init_method=", r"world_size=\d+ rank=\d+ local_rank=\d+ distributed_init_method="),
    ("distributed_init", ENTRY, FMT_VLLM, "Adjusting world_size=", None),
    ("distributed_init", ENTRY, FMT_VLLM, "falling back to gloo", None),
    ("distributed_init", ENTRY, FMT_VLLM, "Found nccl from library", None),
    ("distributed_init", ENTRY, FMT_VLLM, "vLLM is using nccl==", None),
    ("distributed_init", ENTRY, FMT_VLLM, "reading GPU P2P access cache from", None),
    ("distributed_init", ENTRY, FMT_VLLM, "Custom allreduce is disabled", None),
    ("distributed_init", ENTRY, FMT_VLLM, "Custom collectives are disabled", None),
    ("distributed_init", ENTRY, FMT_VLLM, "SymmMemCommunicator", None),
    ("distributed_init", ENTRY, FMT_VLLM, "all-reduce backends (in dispatch order)", None),
    ("distributed_init", ENTRY, FMT_VLLM, "all2all manager", None),
    ("distributed_init", ENTRY, FMT_VLLM, "is assigned as DP rank", None),
    ("distributed_init", ENTRY, FMT_RAW, "[Gloo] Rank", None),
    ("distributed_init", ENTRY, FMT_NCCL, "", None),
    ("weight_loading", ENTRY, FMT_VLLM, "Starting to load model", None),
    ("weight_loading", ENTRY, FMT_VLLM, "Loading model from scratch", None),
    ("weight_loading", ENTRY, FMT_VLLM, "Initializing model took", None),
    ("weight_loading", ENTRY, FMT_VLLM, "Using model weights format", None),
    ("weight_loading", ENTRY, FMT_VLLM, "Filesystem type for checkpoints", None),
    ("weight_loading", ENTRY, FMT_VLLM, "Prefetching checkpoint files", None),
    ("weight_loading", ENTRY, FMT_VLLM, "Auto-prefetch is disabled", None),
    ("weight_loading", ENTRY, FMT_VLLM, "Time spent downloading weights", None),
    ("weight_loading", ENTRY, FMT_VLLM, "EP weight filter:", None),
    ("weight_loading", ENTRY, FMT_VLLM, "Loading drafter model", None),
    ("weight_loading", ENTRY, FMT_VLLM, "attention backend", r"Using \w+ attention backend out of potential backends"),
    ("weight_loading", ENTRY, FMT_VLLM, "backend on V1 engine", r"Using [\w ]+ backend on V1 engine"),
    ("weight_loading", ENTRY, FMT_RAW, " shards", r"Loading (?:safetensors|pt) checkpoint shards|Multi-thread loading shards"),
    ("weight_loading", ENTRY, FMT_RAW, "Loading safetensors using", None),
    ("weight_loading", ENTRY, FMT_VLLM, "Loading weights took", None),
    ("weight_loading", EXIT, FMT_VLLM, "Model loading took", None),
    ("weight_loading", EXIT, FMT_VLLM, "Loading model weights took", None),
    ("engine_init", ENTRY, FMT_VLLM, "torch.compile",
     r"Starting torch\.compile|for vLLM's torch\.compile|torch\.compile cache is disabled|torch\.compile (?:takes|took)"),
    ("engine_init", ENTRY, FMT_VLLM, "Dynamo bytecode transform time", None),
    ("engine_init", ENTRY, FMT_VLLM, "Directly load", r"Directly load (?:AOT compilation|the compiled graph)"),
    ("engine_init", ENTRY, FMT_VLLM, "Cache the graph", None),
    ("engine_init", ENTRY, FMT_VLLM, "Compiling a graph for", None),
    ("engine_init", ENTRY, FMT_VLLM, "saved AOT compiled function", None),
    ("engine_init", ENTRY, FMT_VLLM, "Initial profiling/warmup run took", None),
    ("engine_init", ENTRY, FMT_VLLM, "Warming up model", None),
    ("engine_init", ENTRY, FMT_VLLM, "Encoder cache will be initialized", None),
    ("engine_init", ENTRY, FMT_VLLM, "Memory profiling takes", None),
    ("engine_init", ENTRY, FMT_VLLM, "CUDA graph memory", r"(?:Profiling|Estimated) CUDA graph memory|CUDA graph memory profiling is"),
    ("engine_init", ENTRY, FMT_VLLM, "Available KV cache memory", None),
    ("engine_init", ENTRY, FMT_VLLM, "KV cache size:", None),
    ("engine_init", ENTRY, FMT_VLLM, "Maximum concurrency for", None),
    ("engine_init", ENTRY, FMT_VLLM, "# GPU blocks:", None),
    ("engine_init", ENTRY, FMT_VLLM, "for KV cache on node", None),
    ("engine_init", ENTRY, FMT_VLLM, "Compile and warming up model for size", None),
    ("engine_init", ENTRY, FMT_VLLM, "Capturing", r"Capturing (?:CUDA graph|cudagraph|prefill CUDA graph|the model for CUDA graphs)"),
    ("engine_init", ENTRY, FMT_RAW, "Capturing", r"Capturing (?:CUDA graph|cudagraph|prefill CUDA graph)"),
    ("engine_init", ENTRY, FMT_VLLM, "Graph capturing finished", None),
    ("engine_init", ENTRY, FMT_VLLM, "CUDA graph pool memory", None),
    ("engine_init", ENTRY, FMT_VLLM, "Kernel JIT monitor activated", None),
    ("engine_init", ENTRY, FMT_VLLM, "Autotuning process", None),
    ("engine_init", EXIT, FMT_VLLM, "init engine (profile, create kv cache, warmup model) took", None),
    ("api_ready", ENTRY, FMT_VLLM, "Supported tasks:", None),
    ("api_ready", ENTRY, FMT_VLLM, "Supported_tasks:", None),
    ("api_ready", ENTRY, FMT_VLLM, "Starting vLLM", r"Starting vLLM (?:API )?server"),
    ("api_ready", ENTRY, FMT_VLLM, "Available routes are:", None),
    # round 31: the API server's launcher lists its routes one line each (entrypoints/launcher.py serve_http, 0.5+:
    # "Route: %s, Methods: %s") before uvicorn starts - a paste that opens after "Available routes are:"
    ("api_ready", ENTRY, FMT_VLLM, "Route: /", r"Route: /\S*, Methods: "),
    ("api_ready", ENTRY, FMT_VLLM, "Detected the chat template content format", None),
    ("api_ready", ENTRY, FMT_VLLM, "tool choice has been enabled", None),
    ("api_ready", ENTRY, FMT_VLLM, "warmup completed in", None),
    # the API server's warm-ups' start lines (0.14 on; DEBUG in later releases)
    ("api_ready", ENTRY, FMT_VLLM, "Warming up", r"Warming up (?:chat template processing|multi-?modal (?:input )?process)"),
    ("api_ready", ENTRY, FMT_UVICORN, "Started server process", None),
    ("api_ready", ENTRY, FMT_UVICORN, "Waiting for application startup", None),
    ("api_ready", READY, FMT_UVICORN, "Application startup complete", None),
    ("api_ready", READY, FMT_UVICORN, "Uvicorn running on", None),
    # a 200 answer to a probe or the models list (the OpenAI server's /health, /ping, /v1/models: uvicorn logs
    # the access line only once the server listens, and /health answers 200 only while the engine is alive); round
    # 26: a Prometheus scrape of /metrics or /version answered 200 (build_app mounts them on the same app)
    ("api_ready", READY, FMT_UVICORN, " HTTP/", r'"GET /(?:health|ping|v1/models|metrics|version)\b\S* HTTP/[\d.]+" 200\b'),
    ("request", ENTRY, FMT_UVICORN, " HTTP/", r'"(?:POST|PUT|PATCH|DELETE|GET) (?!/(?:health|metrics|ping|version|load|v1/models|docs|openapi)\b)\S+ HTTP/'),
    ("request", ENTRY, FMT_VLLM, "Received request", None),
    ("request", ENTRY, FMT_VLLM, "Added request", None),
    ("request", ENTRY, FMT_VLLM, "Avg prompt throughput", None),
    ("request", ENTRY, FMT_VLLM, "Finished request", None),
    ("request", ENTRY, FMT_VLLM, "SpecDecoding metrics", None),
)

# the KV cache sized to nothing, printed before the error it causes: V0 "# GPU blocks: %d, # CPU blocks: %d"
# (engine/llm_engine.py _init_cache 0.1 -> 0.3, executor/*gpu_executor.py initialize_cache 0.4 -> 0.10; 0.1 - 0.3 then
# fail to allocate a tensor of negative dimension, later releases raise "No available memory for the cache blocks")
# and V1 "Available KV cache memory: %.2f GiB" (v1/worker/gpu_worker.py determine_available_memory; negative, the
# engine core's check raises the same).  An error of no class after such a line is the GPU memory's (oom).
KV_CACHE_EMPTY_RX = r"# GPU blocks: (?:0|-\d+)\b|Available KV cache memory: -\d"
# a dead engine's error that quotes the error that stopped the engine loop (V0 engine/multiprocessing/client.py
# MQEngineDeadError: "Engine loop is not running. Inspect the stacktrace to find the original error: %r."): the
# quoted error gives the class
ORIGINAL_ERROR_KEY = "the original error: "

# --------------------------------------------------------------------------------------------------------------
# exceptions without a signature
# --------------------------------------------------------------------------------------------------------------
# a generic exception is classed by keywords (first hit wins)
CLASS_KEYWORDS = (
    # (round 62: the Neuron runtime's NRT_RESOURCE - status 4, "failed to allocate a resource" - of its device tensor
    # allocation, nrt_tensor_allocate; round 63: Rebellions' RBLN runtime "SYS_EBUSY: Lack of device memory")
    ("oom", ("OutOfMemoryError", "out of memory", "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation",
             "DefaultCPUAllocator: can't allocate memory", "hipErrorOutOfMemory", "UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
             "nrt_tensor_allocate status=4", "NRT_RESOURCE", "Lack of device memory",
             # (round 87) Apple's GPU driver failing a Metal command buffer for memory (MTLCommandBufferError 8)
             "kIOGPUCommandBufferCallbackErrorOutOfMemory")),
    ("illegal_memory_access", ("illegal memory access", "CUDA_ERROR_ILLEGAL_ADDRESS", "cudaErrorIllegalAddress")),
    ("driver_mismatch", ("driver version is insufficient", "driver on your system is too old",
                         "unsupported display driver")),
    ("port_in_use", ("Address already in use", "EADDRINUSE")),
    # (round 62: XCCL - Kunlun's XPU collective library in its torch_xmlir back end, and PyTorch's XPU back end's
    # ProcessGroupXCCL; round 65: Intel's oneCCL, which its errors name "oneCCL: <file>:<line> ...")
    ("nccl_error", ("NCCL", "nccl", "Gloo", "DistBackendError", "ProcessGroupNCCL", "XCCL", "oneCCL")),
    # (round 59: HIP's hipError_t names, and Intel's Unified Runtime results that PyTorch's XPU back end reports as
    # "level_zero backend failed with error: N (UR_RESULT_ERROR_...)"; round 62: torch_npu's errors of Ascend's ACL
    # runtime - "NPU function error: <acl call>, error code is N", "ACL stream synchronize failed, error code:N" - and
    # CANN's EE9999 inner runtime error; round 63: PyTorch's checks of CUDA driver API calls, c10/cuda/driver_api.h
    # C10_CUDA_DRIVER_CHECK: "CUDA driver error: ...")
    ("cuda_error", ("CUDA error", "CUDA_ERROR_", "cudaError", "CUDADriverError", "AcceleratorError", "Triton Error [CUDA]",
                    "HIP error", "hipError", "UR_RESULT_ERROR_", "level_zero backend failed", "NPU function error",
                    "ACL stream synchronize failed", "EE9999", "CUDA driver error")),
    ("timeout", ("TimeoutError", "timed out", "Timed out", "Timeout")),
    # (round 86: the dynamic loader refusing a library built against a newer glibc or libstdc++ - glibc's dl-version.c
    # "version `%s' not found (required by %s)")
    ("import_error", ("ModuleNotFoundError", "ImportError", "No module named", "PackageNotFoundError",
                      "undefined symbol", "cannot open shared object file", "cannot import name",
                      "' not found (required by")),
    ("missing_file", ("FileNotFoundError", "No such file or directory")),
    # (round 82: EngineDeadError's own message, v1/engine/exceptions.py, as a client's 500 answer quotes it)
    ("engine_dead", ("EngineDeadError", "died unexpectedly", "EngineCore encountered an issue")),
)
# a generic exception that no keyword classes, raised by a check that refuses a setting: vLLM's config classes,
# EngineArgs, the model loaders and quantization methods raise ``ValueError``/``NotImplementedError`` (pydantic's
# ``ValidationError`` since the config dataclasses, 0.10 on) with these words - "X is not supported", "only supports",
# (round 80) "Only X is supported" (an activation, a dtype, a layout a model class takes),
# "does not support", "must be divisible by", "requires --flag", "Set --flag" - in every release read for the
# message table (0.5.5 -> 0.34.0); a request's own limits ("At most 1 image(s) may be provided") use none of them
CONFIG_REFUSAL_RX = (r"\b(?:ValueError|NotImplementedError|ValidationError)\b.*?(?:\b(?:is|are) not (?:yet )?supported"
                     r"|\bnot supported\b|\bonly supports?\b|\b[Oo]nly (?:\S+ ){1,4}(?:is|are) supported\b"
                     r"|\bdo(?:es)? not support\b|\bmust be (?:divisible|one of|"
                     r"set|specified|provided)\b|\brequires? --|\b[Ss]et --)")
# the earliest stage an error of the class can happen in (a CUDA error needs a CUDA context)
CLASS_FLOOR = {"oom": "cuda_init", "cuda_error": "cuda_init", "illegal_memory_access": "cuda_init",
               "nccl_error": "distributed_init"}
# the stage of a class when the log says nothing else, and how sure that is: (stage, confidence).
# A failed import or a library/driver mismatch surfaces wherever the import or the first call happens - ``import
# vllm`` (environment), a config's trust_remote_code module (config), an attention backend or kernel chosen while the
# model is built, Triton/inductor at compile (engine_init): the class names its cause (cause_stage environment), not
# where it surfaced, so that default is low.  A port in use, an NCCL error (NCCL ran: at least distributed_init) and a
# config validation error keep medium.
CLASS_DEFAULT_STAGE = {"import_error": ("environment", "low"), "driver_mismatch": ("environment", "low"),
                       "port_in_use": ("environment", "medium"), "nccl_error": ("distributed_init", "medium"),
                       "config_error": ("config", "medium")}

# --------------------------------------------------------------------------------------------------------------
# inference: where a failure without markers, mapped frames or a fixed meaning happened (stage_basis "inferred")
# --------------------------------------------------------------------------------------------------------------
# the vLLM logger record's own file (``[serving_chat.py:218]``): these files log only while serving requests
# (vllm/entrypoints/openai/serving_*.py, the tool and reasoning parsers); (regex, stage[, the message's regex])
SERVING_LOGGER_FILES = (
    (r"^serving(?:_\w+)?\.py$", "request"),
    # round 50: V0's MQLLMEngine.start (vllm/engine/multiprocessing/engine.py, 0.6 -> 0.10) logs repr(e) of what
    # ended its loops - the start-up loop answers the client's handshake and keeps its errors, so what reaches it is
    # the engine loop's: a step of the served requests (its run_mp_engine logs str(e) of a failed construction)
    (r"^engine\.py$", "request", r"^[A-Za-z_][\w.]*\((?:['\"\d)]|$)"),
    (r"tool_parser\w*\.py$", "request"),
    (r"reasoning_parser\w*\.py$|_reasoning_parser\.py$", "request"),
    # round 13: vllm/logging_utils/dump_input.py dump_engine_exception (0.9.1+) logs the scheduler's output and stats
    # only from EngineCore.log_error_detail, around execute_model in step / step_with_batch_queue: a scheduled step
    # failed (the start-up's dummy and profiling runs go to the workers directly, never through it)
    (r"^dump_input\.py$", "request"),
    # issue 35: modules that log only while one start-up stage runs - the model loaders and weight_utils.py
    # (model_executor/model_loader/), arg_utils.py (EngineArgs), the distributed set-up (parallel_state.py,
    # pynccl*.py, custom_all_reduce*.py log when the groups and communicators are made), kv_cache_utils.py (the
    # KV-cache sizing)
    (r"^(?:weight_utils|loader|default_loader|base_loader|bitsandbytes_loader|gguf_loader|tensorizer_loader|"
     r"sharded_state_loader|runai_streamer_loader|dummy_loader)\.py$", "weight_loading"),
    (r"^arg_utils\.py$", "config"),
    # round 52: of vLLM's registry.py files only the model registry (model_executor/models/registry.py) logs errors:
    # "Error in inspecting model architecture" / "Error in loading model architecture" with the import's traceback,
    # while ModelConfig resolves the architecture (the others warn of a re-registration)
    (r"^registry\.py$", "config"),
    (r"^(?:parallel_state|pynccl|pynccl_wrapper|custom_all_reduce|custom_all_reduce_utils)\.py$", "distributed_init"),
    (r"^kv_cache_utils\.py$", "engine_init"),
)
# the error's words when nothing else places it: (substring, regex or None, stage, confidence, source)
# The first row that matches wins.
STAGE_WORDS = (
    # vllm/entrypoints/openai/cli_args.py validate_parsed_serve_args: KeyError("invalid tool call parser: ...")
    ("invalid tool call parser", None, "config", "medium", "cli_args.py validate_parsed_serve_args"),
    # the tool parsers' logger.exception("Error in extracting tool call from response.") and the streaming ones
    ("tool call", r"(?i)error (?:in|trying to) (?:extracting|handle|handling|parsing) (?:streaming )?tool call",
     "request", "medium", "tool_parsers/*_tool_parser.py extract_tool_calls(_streaming)"),
    # the API server's warm-ups before it listens (0.14 on: serving_chat / renderers warmup, speech_to_text's input
    # processor): "Chat template warmup failed", "[Readonly ]multi-modal warmup failed", logged only at start-up
    ("warmup failed", r"(?:Chat template|[Mm]ulti-modal|Input processor) warmup failed", "api_ready", "medium",
     "entrypoints/openai serving_chat.py / renderers warmup (PR 30700, 0.14+): the API server's warm-up"),
    ("Error in ", r"Error in (?:chat completion|completion|streaming|preprocessing|applying chat template|"
     r"extracting reasoning|reasoning)", "request", "medium", "entrypoints/openai/serving_*.py logger.exception"),
    # vllm/v1/engine/async_llm.py: logger.exception("AsyncLLM output_handler failed.") - the handler that moves the
    # engine core's outputs to the requests' streams: the engine died under submitted requests
    ("output_handler failed", None, "request", "medium", "v1/engine/async_llm.py AsyncLLM.output_handler"),
    # V0 vllm/engine/async_llm_engine.py _log_task_completion: logger.error("Engine background task failed") - the
    # engine loop that AsyncLLMEngine starts for the requests (start_background_loop, 0.2 -> 0.10) ended in an error
    ("Engine background task failed", None, "request", "medium", "engine/async_llm_engine.py _log_task_completion (V0)"),
    # round 53: the V1 engine core's utility calls (v1/engine/core.py _handle_client_request / _invoke_utility_method,
    # 0.8 -> current: logger.exception "Invocation of %s method failed") come from its client once the engine is up -
    # collective_rpc (an RL trainer's weight sync), sleep / wake_up, LoRA adds, prefix-cache resets; a method FRAMES
    # names places it first (METHOD_MESSAGES); get_supported_tasks is asked while the API server starts
    ("method failed", r"Invocation of '?(?!get_supported_tasks\b)\w+'? method failed", "request", "medium",
     "v1/engine/core.py: a utility call of the client on the running engine"),
    # round 57: msgspec's refusal of a keyword its Struct does not have (msgspec _core.c: TypeError "Unexpected keyword
    # argument '%U'"; Python's own reads "got an unexpected keyword argument"): vLLM's msgspec structs a caller builds are
    # a request's parameters (SamplingParams 0.6 -> current, PoolingParams), made per generation once the engine is up;
    # low, as a caller may build them before
    ("Unexpected keyword argument '", None, "request", "low",
     "msgspec Struct: SamplingParams / PoolingParams built for a generation (sampling_params.py, pooling_params.py)"),
    # round 51: the Hub's safetensors metadata, read with retries (with_retry's "<what>: <error>, retrying N of M") by
    # try_get_safetensors_metadata while the model config is built (dtype and quantization from the checkpoint)
    ("Error retrieving safetensors", None, "config", "medium",
     "transformers_utils/config.py, repo_utils.py try_get_safetensors_metadata (0.10 -> current)"),
    # round 34: an error naming a request id of the OpenAI front end (entrypoints/openai/serving_*.py, 0.2 -> current:
    # f"chatcmpl-{...}", f"cmpl-{...}", "embd-", "pool-", "classify-", "score-", "rerank-", transcription "trsc-" and
    # translation "trsl-" ids): only a request the server accepted has one
    ("-", r"\b(?:chatcmpl|cmpl|embd|pool|classify|score|rerank|trsc|trsl)-[0-9A-Za-z]{8,}", "request", "medium",
     "entrypoints/openai/serving_*.py: the request id of an accepted request"),
    # vllm/v1/engine/core.py run_engine_core: "EngineCore encountered a fatal error." is logged only once the engine
    # core was built (before, it logs "EngineCore failed to start."): the busy loop that serves requests failed;
    # round 60: vLLM-Omni's StageEngineCoreProc (stage_engine_core_proc.py run_stage_core) logs the same way
    ("encountered a fatal error", r"EngineCore(?:Proc)? encountered a fatal error", "request", "medium",
     "v1/engine/core.py run_engine_core, vllm_omni stage_engine_core_proc.py run_stage_core (after start-up)"),
    # V0 model_runner_base.py dump_input_on_failure wraps execute_model: "Error in model execution: %s"; V0's
    # profile_run calls the same execute_model (worker/model_runner.py 0.6.4 -> 0.10), so a profiling failure at
    # start-up carries the same words: request is the likelier stage, not a sure one (low)
    ("xecution", r"Error in model execution|input(?:s)? of failed execution", "request", "low",
     "worker/model_runner_base.py (V0): dump_input_on_failure, the wrapper of execute_model"),
    # vllm/model_executor/models/registry.py _try_inspect_model_cls, while ModelConfig resolves the architecture
    ("Error in inspecting model architecture", None, "config", "medium",
     "models/registry.py _try_inspect_model_cls (ModelConfig)"),
    # round 46: the same inspection's subprocess failed (models/registry.py _run_in_subprocess, 0.6 -> current: "Error
    # raised in subprocess:" and the subprocess's stderr; no other vLLM function raises it)
    ("Error raised in subprocess", None, "config", "medium", "models/registry.py _run_in_subprocess (ModelConfig)"),
    # an error about one of vLLM's config classes (vllm/config/*.py): they exist while the config is built
    ("Config", r"\b(?:Model|Cache|Parallel|Scheduler|Device|Load|LoRA|Speculative|Decoding|StructuredOutputs|"
     r"Observability|KVTransfer|KVEvents|Compilation|MultiModal|Pooler|Vllm)Config\b", "config", "low",
     "vllm/config/*.py: the engine's config classes"),
    # a client's report that the server answered its request with an error status (openai-python _exceptions.py
    # APIStatusError subclasses: "Error code: %d - %s"; httpx "Server error '%d %s'"; requests "%d Server Error"):
    # the server was up and serving
    # (round 34: its "Error code: %d - {body}" under any wrapper that quotes it - LiteLLM's, TRL's -, the 400 and 422
    # classes by their bare names - an IPython header, vLLM's own error body's "type": each an answer of a running
    # server; Starlette's default body of a route the server does not have, {"detail": "Not Found"}, is a signature
    # since round 81)
    ("rror", r"openai\.\w+Error: Error code: (?:400|404|422|5\d\d)\b|openai\.(?:BadRequest|InternalServer|"
     r"UnprocessableEntity|NotFound)Error\b|Server error '5\d\d |\b5\d\d Server Error\b|\bInternal Server Error\b|"
     r"\bError code: (?:400|404|422) - [{\[]|\b(?:BadRequest|UnprocessableEntity)Error\b",
     "request", "medium", "openai-python (_exceptions.py: the APIStatusError subclass names the status), httpx, "
     "requests: an error status answered to a request; a 500's reason phrase (http.HTTPStatus) a client quotes"),
    # vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py: a disaggregated worker shakes hands with a
    # remote engine (_nixl_handshake, begun by start_load_kv for a request whose kv_transfer_params name it; the
    # done_callback's logger.exception "Handshake with %s failed", the engine-id check, the failure log's type)
    ("NIXL", r"Remote NIXL agent engine ID mismatch|NIXL transfer failure: handshake", "request", "medium",
     "kv_connector/v1/nixl_connector.py _nixl_handshake (per request: start_load_kv)"),
    ("Handshake with ", r"Handshake with [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\S* failed",
     "request", "medium", "kv_connector/v1/nixl_connector.py background handshake (per request)"),
    # round 23: Ray Serve LLM (ray/llm/_internal/serve/deployments/utils/error_handling_utils.py, 2.44+): the
    # replica's error handler of one request's response stream
    ("Encountered failure while handling request", None, "request", "medium",
     "ray.llm serve deployments error_handling_utils.py: a request's stream failed"),
    # round 23: model_executor/models/utils.py _merge_multimodal_embeddings (0.6 on): a batch's multimodal items
    # against its placeholder tokens, in the model's forward - a request's prompt and media, or the profiling run's
    # dummy inputs (which the processor builds to match): low
    # (round 30: "... image tokens to N placeholders" is the same check in merge_vision_embeddings, 0.5 -> 0.6)
    ("Attempted to assign", r"Attempted to assign .{1,60} (?:multimodal|image) tokens to \d+ placeholders", "request", "low",
     "models/utils.py _merge_multimodal_embeddings (the forward of a batch with multimodal items)"),
    # decoding JSON happens in the tool parsers and in request validation (JSON schema, tool arguments)
    ("JSONDecodeError", None, "request", "low", "json.decoder.JSONDecodeError raised in tool parsers and requests"),
    # the decode attention kernels run only once a KV cache holds a request's tokens
    ("paged_attention", None, "request", "low", "csrc/attention paged_attention_v1/v2 (decode only)"),
)

# what an ``unknown`` answer's summary adds: what the log lacks and what would place the failure
UNKNOWN_MISSING = ("stage unknown: the log shows no vLLM start-up line, no vLLM traceback frame and no message whose "
                   "meaning places it; the server's own log from its start would (for a container: its log, e.g. "
                   "kubectl logs --previous or docker logs)")
# (round 84) ... and what would place it, by what the first error is: a wrapper that reports another process's failure,
# or a Python exception whose traceback is not in the log
UNKNOWN_NEXT = {
    "wrapper": ("; it reports a failure of another process (the engine core, a worker): that process's first error, "
                "above it in the same log, would place it"),
    "bare": ("; the exception's traceback is not in the log: its frames (the lines above it) or the server's log from "
             "its start would place it"),
}

# --------------------------------------------------------------------------------------------------------------
# collectives: what a ProcessGroupNCCL watchdog line says about the collective that timed out
# --------------------------------------------------------------------------------------------------------------
# PyTorch ProcessGroupNCCL.cpp WorkNCCL's description "WorkNCCL(SeqNum=%d, OpType=%s, NumelIn=%d, NumelOut=%d,
# Timeout(ms)=%d)" (NumelIn/NumelOut since torch 2.2) and "Timeout at NCCL work: %d, last enqueued NCCL work: %d,
# last completed NCCL work: %d".  SeqNum counts the collectives of one process group, from 1.
COLLECTIVE_RX = r"WorkNCCL\(SeqNum=(\d+), OpType=(\w+)(?:, NumelIn=(\d+), NumelOut=(\d+))?|Timeout at NCCL work: (\d+)"
# vLLM's start-up issues, on an NCCL process group of torch, first one-element collectives (V0 worker.py's
# "A small all_reduce for warmup": torch.distributed.all_reduce(torch.zeros(1).cuda()) at the end of its
# distributed init; barriers on an NCCL group are one-element all-reduces; V1's init talks over the CPU (gloo) group
# and pynccl instead); the first tensor-sized collectives come from the model's forward pass in the profiling run
# (profile_run / _dummy_run: two all-reduces per layer, the embedding's all-reduce, the logits gather), then
# warm-up and serving.  So: a collective of at most COLLECTIVE_TINY_NUMEL elements among the first
# COLLECTIVE_INIT_SEQ of its group is init's; any other within COLLECTIVE_STARTUP_SEQ is the profiling and warm-up
# passes (at most ~2 per layer and pass: a few passes of a 126-layer model stay below it); later ones are serving.
COLLECTIVE_INIT_SEQ = 4
COLLECTIVE_TINY_NUMEL = 64
COLLECTIVE_STARTUP_SEQ = 1000

# --------------------------------------------------------------------------------------------------------------
# failures without a Traceback header
# --------------------------------------------------------------------------------------------------------------
# uvicorn's access log line of a request answered with a server error (uvicorn/logging.py AccessFormatter:
# '%(client_addr)s - "%(request_line)s" %(status_code)s'), not a probe
ACCESS_5XX_RX = (r'"(?:POST|PUT|PATCH|DELETE|GET) (?!/(?:health|metrics|ping|version|load|v1/models|docs|openapi)\b)'
                 r'\S+ HTTP/[\d.]+" (5\d\d)\b')
# a line of another format whose level word says ERROR (``[2025-01-02 10:00:00] ERROR serving.py:1: Error in ...``,
# ``ERROR | ...``): an error record of a layout not parsed above
# (not a vLLM record whose brackets a paste mangled: ``ERROR 10-20 03:20:50 [x.py:1[] ...`` stays a raw line of its
# traceback)
LEVEL_WORD_RX = (r"^(?:\S+\s+){0,4}?\[?(?:ERROR|CRITICAL|FATAL)\]?(?::|\s+[|:-]?\s*)(?!\d\d-\d\d \d)"
                 r"(?!\s)(?!File \")(?P<msg>.+)$")

# --------------------------------------------------------------------------------------------------------------
# cause beside position: a message that names an earlier cause than the stage where it surfaced (cause_stage)
# --------------------------------------------------------------------------------------------------------------
# (substring, regex or None, cause stage, source); also every error of class driver_mismatch or import_error
CAUSES = (
    ("Failed to infer device type", None, "environment",
     "vLLM detected no platform at import (vllm/platforms/__init__.py): the accelerator or its driver is not visible"),
    ("No supported device detected", None, "environment", "DeviceConfig (0.3 -> 0.5): CUDA not available, no Neuron"),
    ("Device string must not be empty", None, "environment",
     "torch.device(\"\"): the empty device type of vLLM's UnspecifiedPlatform (round 33)"),
    ("No compiled cutlass", None, "environment",
     "vLLM's CUTLASS kernels (csrc/quantization/cutlass_w8a8): the installed build has none for this GPU"),
    ("Not implemented or built, mostly likely because", None, "environment",
     "vLLM's _custom_ops.py hint_on_error (0.5.3 -> 0.6.3): the installed kernels were not built for this GPU"),
    ("no kernel image is available for execution on the device", None, "environment",
     "CUDA runtime: the installed binaries have no kernels for this GPU's architecture"),
    ("HIP error: invalid device function", None, "environment",
     "HIP runtime (hipErrorInvalidDeviceFunction): the ROCm build has no kernel for this GPU's architecture"),
    ("the provided PTX was compiled with an unsupported toolchain", None, "environment",
     "CUDA runtime: the driver is older than the toolchain that built the kernels"),
    ("undefined symbol", None, "environment", "dynamic loader: a binary built against another torch/CUDA"),
    ("mismatches the version that was used to compile", None, "environment",
     "torch.utils.cpp_extension: CUDA version of the host vs the one torch was built with"),
    ("Insufficient space in", r"Insufficient space in /dev/shm\b", "environment",
     "shm_broadcast.py: the container's /dev/shm is too small"),
    ("in SHMManager failed", None, "environment", "csrc/cpu/shm.cpp: the CPU worker's /dev/shm"),
    ("/dev/shm", r"/dev/shm\S*.*No space left on device|No space left on device.*/dev/shm", "environment",
     "a full /dev/shm (the container's shm size)"),
    ("Error while creating shared memory segment", None, "environment", "NCCL transport/shm: /dev/shm too small"),
    ("tool choice requires --enable-auto-tool", None, "config",
     "serving_chat.py: the server's flags (--enable-auto-tool-choice, --tool-call-parser) refuse the request's tool choice"),
    ("invalid literal for int()", r"invalid literal for int\(\) with base 10: '(?:GPU|MIG)-", "environment",
     "the process's CUDA_VISIBLE_DEVICES holds UUIDs where vLLM reads device indices (round 81)"),
    ("is not defined for option 'gpu-name'", None, "environment",
     "ptxas older than the GPU's architecture: the toolchain (Triton's bundled ptxas, the CUDA toolkit) needs updating"),
    ("Illegal instruction", None, "environment",
     "SIGILL: the binary was built for instructions this CPU lacks"),
    ("Bfloat16 is only supported on GPUs", None, "config",
     "the device init's dtype check: the model's dtype (--dtype) does not suit this GPU"),
    ("quantized weight", r"not aligned with the quantized weight shape", "config",
     "the quantized layers' shape check: the tensor-parallel size (--tensor-parallel-size) does not suit the weights"),
    ("min_thread_", r"is not divisible by min_thread_[kn]", "config", "Marlin's shape check: as above"),
    ("chat template", r"default chat template is no longer allowed|chat_template is not set", "config",
     "the tokenizer has no chat template: the server's --chat-template is the fix"),
)
CAUSE_CLASSES = {"driver_mismatch": "environment", "import_error": "environment"}
