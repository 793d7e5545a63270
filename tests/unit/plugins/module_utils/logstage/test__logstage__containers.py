# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Container runtimes and orchestrators as sources of the first failure (issue 35): the real captures of
tests/fixtures/containers (podman 4.3.1, the docker client, made on this project's machines), then what the rules
must not catch.  Inputs written here are named ``CONSTRUCTED_*`` and built from the source strings cited beside
them (runc, crun, podman's libpod/define/errors.go, kubelet, the scheduler, docker compose, bash)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text

FIX = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "containers"))


def _capture(path):
    with open(os.path.join(FIX, path), encoding="utf-8") as fh:
        return fh.read()


def test_podman_rlimit_refusal_is_environment_with_the_fix():
    # the failure issue 35 names: podman on a VM whose runtime may not set the default rlimits (rc 126)
    ans = classify_text(_capture("podman-4.3.1/probe_rlimit.err"))
    assert (ans["stage"], ans["error_class"], ans["stage_basis"], ans["confidence"]) == (
        "environment", "container_error", "message", "high")
    assert ans["first_error"]["lineno"] == 1
    assert "repro_vllm_container_args" in ans["first_error"]["hint"]
    assert "REPRO_VLLM_CONTAINER_ARGS" in ans["first_error"]["hint"]


def test_podman_command_not_found_is_environment():
    # runc via podman, the image has no python3 (rc 127)
    ans = classify_text(_capture("podman-4.3.1/probe_nopython.err"))
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("environment", "container_error", "high")


@pytest.mark.parametrize("path", ["docker-cli-28.2.2/version_no_daemon.err", "docker-cli-28.2.2/inspect_no_daemon.err"])
def test_docker_without_daemon_is_environment(path):
    ans = classify_text(_capture(path))
    assert (ans["stage"], ans["error_class"]) == ("environment", "container_error")


# the NVIDIA hook's own error stays the root cause when the runtime line that reports the failed hook comes first
CONSTRUCTED_HOOK = (
    # runc's wrapper of a failed OCI hook, then nvidia-container-cli's error on the next line (as docker prints it)
    "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI "
    "runtime create failed: runc create failed: unable to start container process: error during container init: "
    "error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
    "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown.\n")


def test_hook_error_beats_the_runtime_wrapper():
    ans = classify_text(CONSTRUCTED_HOOK)
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("environment", "driver_mismatch", 2)


@pytest.mark.parametrize("text,cls", [
    # kubelet events (pkg/kubelet/images: "Failed to pull image %q: %v"; the scheduler's FailedScheduling)
    ('  Warning  Failed     3s    kubelet  Failed to pull image "vllm/vllm-openai:v9.9.9": rpc error: code = NotFound '
     'desc = failed to pull and unpack image: not found', "image_pull"),
    ("  Warning  FailedScheduling  10s  default-scheduler  0/2 nodes are available: 2 Insufficient nvidia.com/gpu. "
     "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.", "scheduling"),
    # crun's exec failure as podman prints it (libpod ErrOCIRuntimeNotFound)
    ("Error: crun: executable file `vllm` not found in $PATH: No such file or directory: OCI runtime attempted to "
     "invoke a command that was not found", "container_error"),
])
def test_orchestrator_and_runtime_lines_are_environment(text, cls):
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("environment", cls, "high")


def test_a_crash_loop_alone_is_unknown_and_says_what_is_missing():
    # the pod's status only: why the container exits is in its own log
    CONSTRUCTED_PODS = ("NAME                    READY   STATUS             RESTARTS      AGE\n"
                        "vllm-7d9f8b6c5d-x2x9q   0/1     CrashLoopBackOff   4 (73s ago)   3m\n")
    ans = classify_text(CONSTRUCTED_PODS)
    assert ans["stage"] == "unknown" and ans["confidence"] is None
    assert "kubectl logs --previous" in ans["first_error"]["hint"]
    # the summary says what the log lacks
    assert "stage unknown: the log shows no vLLM start-up line" in ans["summary"]


def test_a_crash_loop_beside_the_server_log_is_not_the_root_cause():
    # a vLLM failure in the same paste wins over the orchestrator's report of the restarts
    CONSTRUCTED_BOTH = ("vllm-7d9f8b6c5d-x2x9q   0/1     CrashLoopBackOff   4 (73s ago)   3m\n"
                        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                        "when initializing the engine.\n")
    ans = classify_text(CONSTRUCTED_BOTH)
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("engine_init", "oom", 2)


@pytest.mark.parametrize("text", [
    # words that must not be taken for a runtime or orchestrator failure
    "INFO 12-01 10:00:00 [api_server.py:1] Killed 3 idle connections",
    "vllm-1 exited with code 0",
    "WARNING 12-01 10:00:00 [x.py:1] the pull request template is missing",
])
def test_what_the_container_rules_must_not_catch(text):
    ans = classify_text(text)
    assert ans["error_class"] not in ("container_error", "image_pull", "scheduling", "oom"), ans["summary"]


def test_podman_run_of_an_image_for_another_architecture():
    # runc via podman 4.3.1: the image's entrypoint is an ELF for aarch64 on this x86_64 host (the kernel's ENOEXEC;
    # the capture's README says how the binary was made): the container never ran, the fix is the image's platform
    ans = classify_text(_capture("podman-4.3.1/run_wrong_arch.err"))
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("environment", "container_error", "medium")
    assert ans["first_error"]["lineno"] == 1
    assert "architecture" in ans["first_error"]["hint"]


def test_podman_pull_from_an_index_without_this_architecture():
    # podman 4.3.1 asked for arm64 from a local OCI index that holds only an amd64 image (rc 125)
    ans = classify_text(_capture("podman-4.3.1/pull_wrong_arch.err"))
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("environment", "image_pull", "high")
    assert "architecture" in ans["first_error"]["hint"]


def test_compose_dependency_and_ray_serve_scheduling():
    # CONSTRUCTED from docker compose's convergence.go and Ray Serve's deployment_state.py strings: a dependency that
    # did not start stands in only as unknown (its own log names the failure); a replica no node can take is
    # scheduling, and progress after it makes it a delay
    ans = classify_text("dependency failed to start: container vllm-service is unhealthy\n")
    assert (ans["stage"], ans["error_class"]) == ("unknown", "other")
    waiting = ("WARNING 2025-01-01 10:00:00,000 controller 1 deployment_state.py:2152 - Deployment 'VLLMDeployment:m' "
               "has 1 replicas that have taken more than 30s to be scheduled. This may be due to waiting for the "
               "cluster to auto-scale or for a runtime environment to be installed.\n")
    ans = classify_text(waiting)
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("environment", "scheduling", "high")
    later = waiting + "INFO 01-01 10:01:00 [model_runner.py:1000] Loading model weights took 14.9 GiB\n"
    assert classify_text(later)["stage"] == "none"


def test_gguf_architecture_unknown_to_transformers_is_config():
    # CONSTRUCTED from transformers' modeling_gguf_pytorch_utils.py load_gguf_checkpoint
    ans = classify_text("ValueError: GGUF model with architecture falcon-h1 is not supported yet.\n")
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("config", "config_error", "medium")


def test_ascend_hccl_communicator_errors_are_nccl_class():
    # CONSTRUCTED from torch_npu's HCCL error records (vllm-ascend's workers print them as they are)
    ans = classify_text("RuntimeError: createHCCLCommOrigin:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:2314 "
                        "HCCL function error: HcclGetRootInfo(&hcclID), error code is 7\n"
                        "[ERROR] 2025-06-17-06:11:33 (PID:10, Device:2, RankID:-1) ERR02200 DIST call hccl api failed.\n")
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("distributed_init", "nccl_error", 1)


def test_oneccl_error_records_are_nccl_class():
    # CONSTRUCTED from oneCCL's log record layout (|CCL_ERROR| tag): Intel GPUs' collective library, like NCCL's
    ans = classify_text("2024:09:13-11:21:50:(311) |CCL_ERROR| exchange_utils.cpp:202 sendmsg_fd: condition "
                        "!check_msg_retval(...) failed\n errno: Broken pipe\n")
    assert (ans["stage"], ans["error_class"]) == ("distributed_init", "nccl_error")
