"""Round 26 of issue 35 (after the fresh batch issue35u was frozen and scored; each row from its source's format):
a Prometheus scrape answered 200 proves the API server up, a CUDA device-side assertion is read even where a paste
wrapped its condition, and the V2 model runner's output copy is serving.  Paths, pids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_ASSERT = ("/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:111: operator(): block: [9,0,0], thread: [32,0,0] "
           "Assertion `index out of bounds` failed.\n")


@pytest.mark.parametrize("path", ["/metrics", "/version"])
def test_a_scrape_answered_200_proves_the_api_server_up(path):
    text = '(APIServer pid=1) INFO:     10.0.0.1:51174 - "GET %s HTTP/1.1" 200 OK\n' % path + _ASSERT
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"], ans["error_class"]) == ("request", "markers", "cuda_error")
    # a scrape that failed proves nothing
    text = '(APIServer pid=1) INFO:     10.0.0.1:51174 - "GET %s HTTP/1.1" 404 Not Found\n' % path + _ASSERT
    assert classify_text(text)["stage"] == "unknown"


def test_a_device_side_assertion_wrapped_inside_its_condition_is_still_one():
    text = ("/pytorch/aten/src/ATen/native/cuda/IndexKernelUtils.cu:16: vectorized_gather_kernel: block: [5,1,0], "
            "thread: [192,0,0] Assertion `ind >=0\n && ind < ind_dim_size` failed.\n")
    ans = classify_text(text)
    assert (ans["error_class"], ans["first_error"]["lineno"]) == ("cuda_error", 1)
    # the words alone, without the kernel's block and thread, are no device assertion
    assert classify_text("the docs say: Assertion `x` failed in the example\n")["error_class"] != "cuda_error"


def test_the_v2_model_runner_s_output_copy_is_serving():
    text = ('  File "/opt/vllm/vllm/v1/worker/gpu/async_utils.py", line 168, in get_output\n'
            "    self.copy_event.synchronize()\n"
            "torch.AcceleratorError: CUDA error: device-side assert triggered\n")
    assert brief(classify_text(text))[:3] == ("request", "cuda_error", "high")


@pytest.mark.parametrize("prefix, want", [
    ("c1195", ("request", "cuda_error", "high", 7)),      # /metrics scrapes before a device-side assertion
    ("c1196", ("unknown", "cuda_error", None, 1)),        # a wrapped device-side assertion, nothing else
    ("c1198", ("request", "cuda_error", "high", 5)),      # the V2 runner's get_output
])
def test_round_26_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
