"""Round 63 of issue 35 (after the fresh batch issue35az was frozen and scored; from PyTorch's and the accelerator
runtimes' source): the c10d store client's last failed connect is the rendezvous; PyTorch's CUDA driver API checks
are CUDA errors; Rebellions' runtime's lack of device memory is memory; Docker Desktop's time stamp is taken off a
frame line whose indentation the paste lost."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


def test_the_store_clients_last_failed_connect_is_the_rendezvous():
    ans = classify_text("[E socket.cpp:719] [c10d] The client socket has failed to connect to any network address of "
                        "(10.0.0.1, 48247).\n")
    assert (ans["stage"], ans["confidence"]) == ("distributed_init", "high")


@pytest.mark.parametrize("line, cls", [
    ("RuntimeError: CUDA driver error: the operation cannot be performed in the present state", "cuda_error"),
    ("RuntimeError: SYS_EBUSY: Lack of device memory. (code: -16)", "oom"),
])
def test_driver_api_and_device_memory_errors_are_classed(line, cls):
    assert classify_text(line + "\n")["error_class"] == cls


def test_docker_desktops_time_stamp_is_taken_off_an_unindented_frame_line():
    ans = classify_text('2023-12-03 14:56:00 Traceback (most recent call last):\n'
                        '2023-12-03 14:56:00 File "/usr/lib/python3/dist-packages/vllm/worker/model_runner.py", '
                        'line 95, in load_model\n'
                        '2023-12-03 14:56:00 self.model = get_model(\n'
                        '2023-12-03 14:56:00 KeyError: \'step\'\n')
    assert (ans["stage"], ans["stage_basis"]) == ("weight_loading", "frames")


@pytest.mark.parametrize("prefix, want", [
    ("c2331", ("distributed_init", "other", "high", 3)),
    ("c2314", ("unknown", "cuda_error", None, 7)),
])
def test_round_63_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
