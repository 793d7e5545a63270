"""Round 61 of issue 35 (after the fresh batch issue35ax was frozen and scored; from PyTorch's, vLLM's, Starlette's and
uvicorn's source): the NCCL watchdog is read by the error it quotes; a caller's method run by vLLM's RPC on its
workers is the running engine's (a weight sync), not start-up; vLLM's parameter classes are the weights; an exception
line indented like its frames is the exception; a streaming response's disconnect watch is a request; a checkpoint
tensor that does not fit is class other."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("quoted, stage, cls", [
    ("CUDA error: an illegal memory access was encountered", "unknown", "illegal_memory_access"),
    ("HIP error: operation not permitted when stream is capturing", "engine_init", "cuda_error"),
    ("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 "
     "milliseconds before timing out.", None, "timeout"),
])
def test_the_nccl_watchdog_is_read_by_what_it_quotes(quoted, stage, cls):
    ans = classify_text("[rank0]:[E1030 15:32:32.970893361 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 0] "
                        "Process group watchdog thread terminated with exception: " + quoted + "\n")
    # (a quoted collective timeout keeps the watchdog's row; its stage is the collective's numbers', not this test's)
    assert (stage or ans["stage"], ans["error_class"]) == (ans["stage"], cls)
    assert ans["first_error"]["kind"] == ("victim" if cls == "timeout" else "failure")


_RPC = ('Traceback (most recent call last):\n'
        '  File "/usr/lib/python3.11/site-packages/vllm/v1/executor/uniproc_executor.py", line 76, in collective_rpc\n'
        '    result = run_method(self.driver_worker, method, args, kwargs)\n'
        '  File "/usr/lib/python3.11/site-packages/vllm/v1/serial_utils.py", line 459, in run_method\n'
        '    return func(*args, **kwargs)\n'
        '  File "/usr/lib/python3.11/site-packages/torch/utils/_contextlib.py", line 120, in decorate_context\n'
        '    return func(*args, **kwargs)\n'
        '  File "%s", line 147, in %s\n'
        '    self.model_runner.model.load_weights(weights=[(name, weight)])\n'
        '  File "/usr/lib/python3.11/site-packages/vllm/model_executor/models/qwen3.py", line 752, in load_weights\n'
        '    param = params_dict[name]\n'
        "KeyError: 'model.layers.0.mlp.gate.weight'\n")


@pytest.mark.parametrize("path, func, stage, conf", [
    # a caller's worker extension run through vLLM's RPC: the engine was up (a weight sync)
    ("/usr/lib/python3.11/site-packages/trl/scripts/vllm_serve.py", "update_named_param", "request", "medium"),
    # a platform plugin's worker (a vllm_* package) and a caller's set-up method are not a running engine's
    ("/usr/lib/python3.11/site-packages/vllm_ascend/worker/worker.py", "reload_named_param", "weight_loading", "high"),
    ("/usr/lib/python3.11/site-packages/openrlhf/vllm_worker_wrap.py", "init_process_group", "weight_loading", "high"),
])
def test_a_callers_method_run_by_vllms_rpc_is_the_running_engines(path, func, stage, conf):
    ans = classify_text(_RPC % (path, func))
    assert (ans["stage"], ans["confidence"]) == (stage, conf)


def test_vllms_parameter_classes_are_the_weights_and_an_indented_exception_is_the_exception():
    ans = classify_text('  File "vllm/model_executor/parameter.py", line 94, in _assert_and_load\n'
                        '      assert self.data.shape == loaded_weight.shape\n'
                        '  AssertionError\n')
    assert brief(ans) == ("weight_loading", "other", "high", 3)


def test_a_streaming_responses_disconnect_watch_is_a_request():
    ans = classify_text('Traceback (most recent call last):\n'
                        '  File "/usr/lib/python3/dist-packages/starlette/responses.py", line 237, in '
                        'listen_for_disconnect\n'
                        '    message = await receive()\n'
                        'asyncio.exceptions.CancelledError: Cancelled by cancel scope 7fbb404e2b30\n')
    assert ans["stage"] == "request"


@pytest.mark.parametrize("line", [
    "AssertionError: Attempted to load weight (torch.Size([1])) into parameter (torch.Size([]))",
    "AssertionError: Tried to load weights of size torch.Size([2048])to a parameter of size torch.Size([4096])",
])
def test_a_checkpoint_tensor_that_does_not_fit_is_no_refused_setting(line):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == ("weight_loading", "other")


@pytest.mark.parametrize("prefix, want", [
    ("c2259", ("engine_init", "cuda_error", "high", 1)),
    ("c2270", ("request", "other", "medium", 1)),
    ("c2256", ("weight_loading", "other", "high", 3)),
])
def test_round_61_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
