"""Rounds 21 and 22 of issue 35: from issue35p's misses, read after its freeze (DeviceConfig's device type, the model
registry, the Ray executor's batch future, the custom LoRA kernel's token limit), and sleep mode (round 22).
The samples are written from vLLM's source and formats; paths, ids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief


def test_the_device_type_fails_while_the_config_is_built_for_want_of_a_platform():
    text = ('  File "/venv/lib/python3.10/site-packages/vllm/engine/arg_utils.py", line 1046, in create_engine_config\n'
            "    device_config = DeviceConfig(device=self.device)\n"
            "RuntimeError: Failed to infer device type\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["confidence"], ans["cause_stage"]) == ("config", "high", "environment")


def test_the_model_registry_is_not_a_forward_pass():
    text = ('  File "/venv/lib/python3.11/site-packages/vllm/model_executor/models/registry.py", line 503, in '
            "resolve_model_cls\n    return self._raise_for_unsupported(architectures)\n"
            '  File "/venv/lib/python3.11/site-packages/vllm/model_executor/models/registry.py", line 440, in '
            "_raise_for_unsupported\n    raise ValueError(\n")
    assert classify_text(text)["stage"] != "request"
    # a model's own forward under the same folder still is one (shared with start-up: low in a cut traceback)
    forward = text.replace("models/registry.py", "models/llama.py").replace("resolve_model_cls", "forward")
    assert classify_text(forward)["stage"] == "request"


def test_the_ray_executor_s_future_is_a_model_step():
    text = ("(EngineCore_DP0 pid=3) ERROR 12-08 18:21:31 [core.py:844]     model_output = future.result()\n"
            '(EngineCore_DP0 pid=3) ERROR 12-08 18:21:31 [core.py:844]   File "/vllm/vllm/v1/executor/ray_utils.py", '
            "line 150, in result\n"
            "(EngineCore_DP0 pid=3) ERROR 12-08 18:21:31 [core.py:844]     outputs = ray.get(self.ref_or_refs, "
            "timeout=timeout)\n")
    assert brief(classify_text(text))[::2] == ("request", "high")


def test_the_custom_lora_kernel_s_token_limit_is_a_config_check():
    text = ("ValueError: Due to limitations of the custom LoRA CUDA kernel, max_num_batched_tokens must be <= 65528 "
            "when LoRA is enabled.\n")
    assert brief(classify_text(text))[:3] == ("config", "config_error", "medium")


def test_round_22_an_engine_woken_from_sleep_had_started_and_served():
    # sleep mode's wake_up frames (an RL trainer's rollout between two generation phases), cut before the exception
    text = ('  File "/venv/lib/python3.10/site-packages/vllm/executor/executor_base.py", line 216, in wake_up\n'
            '    self.collective_rpc("wake_up")\n'
            '  File "/venv/lib/python3.10/site-packages/vllm/worker/worker.py", line 140, in wake_up\n'
            "    allocator.wake_up()\n")
    assert brief(classify_text(text))[::2] == ("request", "high")
    # the V1 engine core's record of a utility call that failed names the method
    rec = "ERROR 08-29 10:18:10 [core.py:459] Invocation of wake_up method failed\n"
    assert classify_text(rec)["stage"] == "request"
    # a method no row knows: still a utility call of the client on the running engine (round 53), at medium
    ans = classify_text(rec.replace("wake_up", "frobnicate"))
    assert (ans["stage"], ans["confidence"]) == ("request", "medium")
    # the one the API server makes while it starts says nothing by itself
    assert classify_text(rec.replace("wake_up", "get_supported_tasks"))["stage"] == "unknown"
