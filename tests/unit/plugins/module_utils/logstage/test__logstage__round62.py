"""Round 62 of issue 35 (after the fresh batch issue35ay was frozen and scored; from LLVM's, the Neuron runtime's,
torch_npu's and vLLM's source): LLVM's fatal error is the failure; the Neuron runtime's resource status is memory;
Ascend's ACL runtime errors are accelerator errors, XCCL a collective library; a wrapper quoting an error takes its
class; the scheduler is built once the KV cache is sized; a config message row classes an error its frames placed."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


def test_llvms_fatal_error_is_the_failure_in_the_logs_stage():
    ans = classify_text("INFO 05-08 02:15:22 [engine.py:310] Added request chatcmpl-fd9f6952cc0e4cee8b49014b4f8de7f0.\n"
                        "LLVM ERROR: Failed to compute parent layout for slice layout.\n"
                        "ERROR 05-08 02:15:29 [client.py:305] RuntimeError('Engine process (pid 50) died.')\n")
    assert brief(ans) == ("request", "other", "high", 2)


@pytest.mark.parametrize("line, cls", [
    ('RuntimeError: nrt_tensor_allocate status=4 message="Allocation Failure"', "oom"),
    ("RuntimeError: ACL stream synchronize failed, error code:507035", "cuda_error"),
    ("RuntimeError: SetPrecisionMode: NPU function error: at_npu::native::AclSetCompileopt, error code is 500001",
     "cuda_error"),
    ("[XCCL][init.cpp:1227] host 10.0.0.2 addr_window check failed", "nccl_error"),
])
def test_other_accelerators_runtime_errors_are_classed(line, cls):
    assert classify_text(line + "\n")["error_class"] == cls


def test_a_wrapper_quoting_an_error_takes_its_class():
    ans = classify_text("ERROR 09-19 07:42:16 [core.py:720] RuntimeError: Worker failed with error 'ACL stream "
                        "synchronize failed, error code:507035', please check the stack trace above for the root cause\n")
    assert ans["error_class"] == "cuda_error"


def test_the_scheduler_is_built_once_the_kv_cache_is_sized():
    ans = classify_text('Traceback (most recent call last):\n'
                        '  File "/opt/vllm/vllm/engine/llm_engine.py", line 214, in __init__\n'
                        '    self.scheduler = Scheduler(scheduler_config, cache_config, lora_config)\n'
                        '  File "/opt/vllm/vllm/core/scheduler.py", line 265, in __init__\n'
                        '    self.block_manager = BlockSpaceManagerImpl(\n'
                        'AssertionError: (2047, 16)\n')
    assert (ans["stage"], ans["stage_basis"]) == ("engine_init", "frames")


@pytest.mark.parametrize("prefix, want", [
    ("c2289", ("request", "other", "high", 2)),
    ("c2290", ("engine_init", "other", "high", 20)),
    ("c2303", ("request", "cuda_error", "medium", 6)),
    ("c2302", ("distributed_init", "nccl_error", "medium", 3)),
    ("c2309", ("config", "config_error", "high", 13)),
])
def test_round_62_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
