"""Round 13 of issue 35: the families fresh pastes show, each from its tool's source: podman's and tini's refusals
(libpod's "container create failed (no logs from conmon)", "default OCI runtime %q not found", tini's PRINT_FATAL),
the error body of a 500 a client quotes (vLLM's ErrorResponse, FastAPI's ``detail``), structured log records (a
JSON record's ``level``/``message``, logrus' ``level=... msg="..."``), vLLM's record without its date, and messages of
vLLM and CPython that place an excerpt.  The samples are written from those sources; paths and ids are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text, match_signature


def answer(text):
    ans = classify_text(text)
    first = ans["first_error"] or {}
    return ans["stage"], ans["error_class"], ans["confidence"], first.get("lineno")


@pytest.mark.parametrize("text, lineno", [
    ("$ podman run --rm -it quay.io/x/y:1\nError: container create failed (no logs from conmon): conmon bytes "
     "\"\": readObjectStart: expect { or n, but found \x00\n", 2),
    ("$ podman images\nError: default OCI runtime \"crun\" not found: invalid argument\n", 2),
    ("Attaching to app\napp  | [FATAL tini (7)] exec /run/podman-init failed: No such file or directory\n"
     "app exited with code 127\n", 2),
])
def test_a_container_engine_refusal_is_the_environment(text, lineno):
    assert answer(text) == ("environment", "container_error", "high", lineno)


def test_a_quoted_500_error_body_is_a_failed_request():
    body = '{\n    "object": "error",\n    "message": "Internal Server Error (Request ID: 1f2e)",\n    "code": 500\n}\n'
    assert answer(body) == ("request", "other", "medium", 3)


def test_a_client_record_of_a_500_is_a_failed_request():
    text = "2025-01-02 10:00:00.123 | ERROR    | app.client:call:12 - API error: Internal Server Error\n"
    assert answer(text)[:3] == ("request", "other", "medium")


def test_an_indented_json_member_is_not_a_source_line():
    # a 4-space indented JSON member of an unrelated body stays quiet (no signature, no exception)
    assert classify_text('{\n    "object": "list",\n    "data": []\n}\n')["stage"] == "none"


def test_a_json_record_at_error_is_an_error_line():
    text = ('{"timestamp": "2025-01-02 10:00:00,1", "level": "INFO", "message": "starting"}\n'
            '{"timestamp": "2025-01-02 10:00:01,1", "level": "ERROR", "message": "Error: the profile is not supported"}\n')
    assert answer(text)[3] == 2


def test_a_json_record_at_info_stays_quiet():
    assert classify_text('{"level": "INFO", "message": "Error: a word in an info record"}\n')["stage"] == "none"


def test_logfmt_records_relaying_a_traceback_are_read_as_its_lines():
    vl = "/opt/venv/lib/python3.12/site-packages/vllm"
    lines = ["Traceback (most recent call last):",
             '  File \\"%s/entrypoints/cli/main.py\\", line 66, in main' % vl,
             "    cmd.subparser_init(subparsers)",
             '  File \\"%s/entrypoints/cli/serve.py\\", line 72, in subparser_init' % vl,
             "    serve_parser = make_arg_parser(serve_parser)",
             "argparse.ArgumentError: argument --x: conflicting option string: --x"]
    text = "".join('time="2026-01-29T14:55:54Z" level=info msg="%s" component=vllm\n' % x for x in lines)
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("config", "frames", "high")


@pytest.mark.parametrize("text, stage, conf", [
    ("ValueError: There is no module or parameter named 'lm_head' in FooForCausalLM\n", "weight_loading", "low"),
    ("TypeError: EngineArgs.__init__() got an unexpected keyword argument 'foo'\n", "config", "medium"),
    ("TypeError: AsyncEngineArgs.__init__() got an unexpected keyword argument 'foo'\n", "config", "medium"),
])
def test_messages_that_place_an_excerpt(text, stage, conf):
    assert answer(text)[0::2][:2] == (stage, conf)


def test_asyncio_callback_header_opens_its_traceback():
    vl = "/opt/venv/lib/python3.10/site-packages/vllm"
    text = ("Exception in callback functools.partial(<function _log_task_completion at 0x7f>, error_callback=None)\n"
            "handle: <Handle functools.partial(<function _log_task_completion at 0x7f>, error_callback=None)>\n"
            "Traceback (most recent call last):\n"
            '  File "%s/engine/async_llm_engine.py", line 55, in _log_task_completion\n'
            "    return_value = task.result()\n") % vl
    # the paste ends in the frames: the record is reported from its header, the callback's line
    assert answer(text)[3] == 1


def test_the_engine_cores_input_dump_is_a_failed_step():
    text = ("ERROR 07-03 20:47:11 [dump_input.py:82] SchedulerStats(num_running_reqs=1, num_waiting_reqs=0)\n"
            "ERROR 07-03 20:47:11 [core.py:517] EngineCore encountered a fatal error.\n")
    assert answer(text)[:3] == ("request", "other", "medium")


def test_a_request_output_frame_is_serving():
    text = ('  File "/opt/venv/lib/python3.11/site-packages/vllm/outputs.py", line 172, in from_seq_group\n'
            "    x = seq_group.y\nAttributeError: 'NoneType' object has no attribute 'y'\n")
    assert answer(text)[:3] == ("request", "other", "medium")


@pytest.mark.parametrize("prefix", ["(APIServer pid=1) ", ""])
def test_a_vllm_record_without_its_date_keeps_its_file(prefix):
    text = prefix + "ERROR [serving_chat.py:830] ValueError: the request's message could not be parsed\n"
    ans = classify_text(text)
    assert (ans["stage"], ans["confidence"], ans["first_error"]["timestamp"]) == ("request", "medium", None)


def test_an_embedding_programs_report_that_vllm_did_not_import_is_the_environment():
    text = ("thread 'tokio-runtime-worker' panicked at src/engines/worker.rs:247:17:\n"
            "Failed to import python 'vllm' module. Are we running in the correct venv? ImportError: libx.so\n"
            "stack backtrace:\n   0: rust_begin_unwind\n")
    assert answer(text) == ("environment", "import_error", "high", 2)


@pytest.mark.parametrize("text", ["Failed to import vllm_ascend", "Could not import vllm.lora, using a fallback"])
def test_another_package_named_like_vllm_is_not_vllm(text):
    sig = match_signature(text)
    assert sig is None or sig.key != "import"


def test_a_guarded_import_of_vllm_shows_as_a_name_error():
    text = ('  File "/opt/venv/lib/python3.10/site-packages/lm_eval/models/vllm_causallms.py", line 170, in __init__\n'
            "    self.model = LLM(**self.model_args)\nNameError: name 'LLM' is not defined. Did you mean: 'VLLM'?\n")
    assert answer(text) == ("environment", "import_error", "low", 3)


def test_a_traceback_placed_by_a_config_message_row_is_a_config_error():
    text = ('  File "/opt/app/engine.py", line 58, in __init__\n    self.llm = vllm.LLM(*args, **kwargs)\n'
            "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'foo'\n")
    assert answer(text) == ("config", "config_error", "medium", 3)


@pytest.mark.parametrize("text, cls", [
    ('docker: Error response from daemon: Conflict. The container name "/vllm" is already in use by container '
     '"3f2a". You have to remove (or rename) that container to be able to reuse that name.', "container_error"),
    ("Error: statfs /srv/models: no such file or directory", "container_error"),
    ('  Warning  FailedMount  12s  kubelet  MountVolume.SetUp failed for volume "cache" : configmap "c" not found',
     "container_error"),
    ("  Warning  FailedMount  1s  kubelet  Unable to attach or mount volumes: unmounted volumes=[models]",
     "container_error"),
    ('  Warning  Failed  3s  kubelet  Failed to pull image "x/y:1": rpc error: code = NotFound desc = failed to pull '
     'and unpack image "docker.io/x/y:1": failed to resolve reference "docker.io/x/y:1": not found', "image_pull"),
    ("docker: invalid reference format.", "image_pull"),
    ("Error: short-name \"vllm-openai\" did not resolve to an alias and no unqualified-search registries are defined",
     "image_pull"),
    ("Failed to initialize NVML: Driver/library version mismatch", "driver_mismatch"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
     "driver is installed and running.", "driver_mismatch"),
])
def test_engine_orchestrator_and_driver_refusals_are_the_environment(text, cls):
    assert answer(text + "\n")[:3] == ("environment", cls, "high")


def test_an_eviction_alone_says_no_stage():
    text = "  Warning  Evicted  1m  kubelet  The node was low on resource: memory. Threshold quantity: 100Mi\n"
    ans = classify_text(text)
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("unknown", 1)


RAY_REPLICA = "/home/ray/anaconda3/lib/python3.11/site-packages/ray/serve/_private/replica.py"


@pytest.mark.parametrize("method, stage", [("handle_request_with_rejection", "request"),
                                           ("handle_request_streaming", "request"),
                                           ("initialize_and_get_metadata", "unknown")])
def test_a_ray_serve_replicas_task_names_its_stage(method, stage):
    text = ("ray.exceptions.RayTaskError(RuntimeError): ray::ServeReplica:app:LLMServer.%s() (pid=5, ip=10.0.0.2, "
            "actor_id=ab12, repr=<ray.serve._private.replica.ServeReplica:app:LLMServer object at 0x7e>)\n" % method)
    assert classify_text(text)["stage"] == stage


def test_a_ray_serve_replicas_log_prefix_is_a_process_tag():
    tag = "(ServeReplica:app:VLLMDeployment pid=263, ip=10.0.0.5) "
    text = (tag + '  File "%s", line 707, in handle_request_with_rejection\n' % RAY_REPLICA
            + tag + "    async for result in self._user_callable_wrapper.call_user_generator(\n"
            + tag + "RuntimeError: the thing failed\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"]) == ("request", "frames")
    assert ans["first_error"]["process"] == "ServeReplica:app:VLLMDeployment"


@pytest.mark.parametrize("tag", ["(VllmWorker PP0_TP1 pid=4797)", "(Worker_TP0_EP0 pid=1584)", "(VllmWorker TP0 pid=9)"])
def test_a_v1_workers_rank_tag_is_a_process_tag(tag):
    vl = "/opt/venv/lib/python3.12/site-packages/vllm"
    rec = tag + " ERROR 09-29 05:54:49 [multiproc_executor.py:596] "
    text = (rec + '  File "%s/v1/worker/gpu_model_runner.py", line 2395, in _dummy_run\n' % vl
            + rec + "    outputs = self.model(\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"], ans["first_error"]["lineno"]) == ("engine_init", "frames", 1)


def test_a_cuda_error_cut_before_its_first_line_is_still_a_cuda_error():
    text = ("(EngineCore_DP0 pid=151) CUDA kernel errors might be asynchronously reported at some other API call, so "
            "the stacktrace below might be incorrect.\n"
            "(EngineCore_DP0 pid=151) For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n")
    assert answer(text) == ("unknown", "cuda_error", None, 1)


def test_the_cuda_errors_own_line_comes_first():
    text = ("RuntimeError: CUDA error: an illegal memory access was encountered\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
            "might be incorrect.\n")
    assert answer(text)[1::2] == ("illegal_memory_access", 1)


@pytest.mark.parametrize("text, cls", [
    ("Error: netavark: code: 4, msg: iptables: Chain already exists.", "container_error"),
    ("Error: rootlessport cannot expose privileged port 80, you can add 'net.ipv4.ip_unprivileged_port_start=80' to "
     "/etc/sysctl.conf", "container_error"),
    ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to reserve container name "vllm": name '
     '"vllm" is reserved for "3f2a"', "container_error"),
    ("docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI "
     "runtime create failed: failed to create NVIDIA Container Runtime: failed to construct OCI spec modifier",
     "container_error"),
    ("permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock",
     "container_error"),
    ('Error creating: pods "vllm-0" is forbidden: exceeded quota: gpu, requested: nvidia.com/gpu=1', "scheduling"),
    ("  Normal  NotTriggerScaleUp  2m  cluster-autoscaler  pod didn't trigger scale-up: 1 Insufficient nvidia.com/gpu",
     "scheduling"),
])
def test_more_runtime_and_cluster_refusals_are_the_environment(text, cls):
    assert answer(text + "\n")[:3] == ("environment", cls, "high")


@pytest.mark.parametrize("body, cls", [
    ('{"object":"error","message":"CUDA error: an illegal memory access was encountered","type":"InternalServerError",'
     '"param":null,"code":500}', "illegal_memory_access"),
    ('{"object":"error","message":"CUDA out of memory. Tried to allocate 2.00 GiB","type":"InternalServerError",'
     '"param":null,"code":500}', "oom"),
    ('{"object":"error","message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}',
     "other"),
])
def test_an_error_body_a_client_quotes_is_classed_by_the_servers_exception(body, cls):
    assert answer(body + "\n")[:3] == ("request", cls, "medium")


def test_a_frame_cut_after_its_line_number_is_no_exception():
    st = "/opt/venv/lib/python3.10/site-packages/starlette/middleware"
    text = ("ERROR: Exception in ASGI application\nTraceback (most recent call last):\n"
            'File "%s/errors.py", line 165, in call\nawait self.app(scope, receive, _send)\n'
            'File "%s/exceptions.py", line 62, i\n') % (st, st)
    assert answer(text)[3] == 1


def test_a_frame_cut_inside_its_path_still_names_its_file():
    text = ("(APIServer pid=1) Traceback (most recent call last):\n"
            '(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/chat_completi\n')
    assert answer(text) == ("request", "other", "medium", 1)


def test_a_cut_frame_of_an_unmapped_file_places_nothing():
    text = 'Traceback (most recent call last):\n  File "/opt/app/ma\n'
    assert classify_text(text)["stage"] in ("none", "unknown")


def test_the_registrys_refusal_cut_by_the_paste_is_still_config():
    assert answer("ValueError: Model architectures ['FooForCausalLM'] are not supported for no\n")[:3] == (
        "config", "config_error", "high")
