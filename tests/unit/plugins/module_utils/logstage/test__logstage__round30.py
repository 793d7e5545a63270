"""Round 30 of issue 35 (after the fresh batch issue35x was frozen and scored; each row from its tool's source): Ray's
actor tags named by a repr or an operator, PyTorch's deferred CUDA init error, the BitsAndBytes loader's support
check, LMCache's full buffer, the model registry's inspection line, the older words of the multi-modal placeholder
check.  Paths, pids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/venv/lib/python3.10/site-packages"


@pytest.mark.parametrize("tag, proc", [
    ("(ActorWorker(actor_infer-0) pid=7, ip=10.0.0.2)", "ActorWorker(actor_infer-0)"),
    ("(MapWorker(MapBatches(vLLMEngineActor)) pid=7, ip=10.0.0.2)", "MapWorker(MapBatches(vLLMEngineActor))"),
])
def test_a_ray_actor_named_by_its_repr_is_a_process_tag(tag, proc):
    lines = ["ERROR 01-02 03:04:05 [core.py:9] EngineCore hit an exception: Traceback (most recent call last):",
             'ERROR 01-02 03:04:05 [core.py:9]   File "%s/vllm/v1/engine/core.py", line 4, in run_busy_loop' % _SP,
             "ERROR 01-02 03:04:05 [core.py:9]     self._process_engine_step()"]
    ans = classify_text("".join(tag + " " + line + "\n" for line in lines))
    assert (ans["stage"], ans["first_error"]["process"]) == ("request", proc)


@pytest.mark.parametrize("line, want", [
    ("torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: device >= 0 && "
     "device < num_gpus INTERNAL ASSERT FAILED", ("cuda_init", "cuda_error")),
    ("AttributeError: Model FooForCausalLM does not support BitsAndBytes quantization yet. No 'packed_modules_mapping' "
     "found.", ("weight_loading", "config_error")),
    ("Failed to allocate memory for tensor(torch.Size([2, 8, 16, 64]), torch.float16) because no memory is available "
     "(memory_management.py:444:lmcache.experimental.memory_management)", ("request", "oom")),
    ("ValueError: Attempted to assign 2 x 256 = 512 image tokens to 300 placeholders", ("request", "other")),
])
def test_messages_of_round_30(line, want):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == want


def test_the_registry_inspection_line_is_config():
    text = ("ERROR 01-02 03:04:05 registry.py:307] Traceback (most recent call last):\n"
            'ERROR 01-02 03:04:05 registry.py:307]   File "%s/vllm/model_executor/models/registry.py", line 277, in '
            "<lambda>\nERROR 01-02 03:04:05 registry.py:307]     lambda: _ModelInfo.from_model_cls("
            "self.load_model_cls()))\n" % _SP)
    assert classify_text(text)["stage"] == "config"


@pytest.mark.parametrize("prefix, want", [
    ("c1293", ("request", "other", "high", 1)),           # (ActorWorker(actor_infer-0) pid=..) busy-loop frames
    ("c1315", ("cuda_init", "cuda_error", "medium", 1)),  # DeferredCudaCallError in a Ray vLLM worker
    ("c1324", ("weight_loading", "config_error", "high", 1)),  # the BitsAndBytes support check alone
    ("c1299", ("request", "oom", "medium", 1)),           # LMCache's allocator, one line
    ("c1319", ("config", "other", "high", 1)),            # the registry's inspection, cut in importlib
    ("c1325", ("request", "other", "low", 1)),            # "... image tokens to 466 placeholders" alone
])
def test_round_30_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want


def test_karpenter_failing_to_schedule_the_pod_is_scheduling():
    text = 'Failed to schedule pod, incompatible with nodepool "cpu-pool", no instance type has nvidia.com/gpu\n'
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"]) == ("environment", "scheduling")


def test_no_platform_detected_stands_in_only_without_a_failure():
    line = "INFO 01-02 03:04:05 [__init__.py:252] No platform detected, vLLM is running on UnspecifiedPlatform\n"
    assert classify_text(line)["stage"] == "environment"
    # the config's "Failed to infer device type" after it stays the answer (round 21)
    text = line + "RuntimeError: Failed to infer device type\n"
    assert classify_text(text)["stage"] == "config"


@pytest.mark.parametrize("prefix, want", [
    ("c953", ("environment", "other", "high", 3)),         # kubectl logs: only the platform detection's line
    ("c1130", ("environment", "scheduling", "high", 1)),   # Karpenter's FailedScheduling message
])
def test_round_30b_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
