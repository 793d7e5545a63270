"""Round 39 of issue 35 (after the fresh batch issue35ag was frozen and scored; each row from its tool's source): the
Ray executor's worker set-up alone says only that one of its steps failed (medium), the API server's bind to an
address that is not the host's is no port in use, and CacheConfig's swap-space check is config.  Paths are
invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_VL = "/workspace/vllm/vllm"


def test_the_ray_executors_worker_setup_alone_is_cuda_init_at_medium():
    # _init_workers_ray runs init_device and load_model on the workers (0.2 -> 0.10): a paste cut inside it does not
    # say which step failed
    text = ('  File "%s/engine/llm_engine.py", line 107, in __init__\n'
            "    self._init_workers_ray(placement_group)\n"
            '  File "%s/engine/llm_engine.py", line 194, in _init_workers_ray\n'
            "    self._run_workers(\n" % (_VL, _VL))
    ans = classify_text(text)
    assert (ans["stage"], ans["confidence"]) == ("cuda_init", "medium")


def test_a_later_steps_frame_under_it_still_places_it_high():
    text = ('  File "%s/executor/ray_gpu_executor.py", line 90, in _init_workers_ray\n'
            '    self._run_workers("load_model")\n'
            '  File "%s/worker/worker.py", line 139, in load_model\n'
            "    self.model_runner.load_model()\n"
            "KeyError: 'model.layers.1.block_sparse_moe.experts.4.w3.weight'\n" % (_VL, _VL))
    ans = classify_text(text)
    assert (ans["stage"], ans["confidence"]) == ("weight_loading", "high")


@pytest.mark.parametrize("line, want", [
    ("ERROR:    [Errno 99] error while attempting to bind on address ('::1', 8000, 0, 0): cannot assign requested "
     "address", ("environment", "other")),
    ("ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use",
     ("environment", "port_in_use")),
    ("ValueError: Too large swap space. 16.00 GiB out of the 15.01 GiB total CPU memory is allocated for the swap "
     "space.", ("config", "config_error")),
])
def test_messages_of_round_39(line, want):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == want


@pytest.mark.parametrize("prefix, want", [
    ("c1653", ("cuda_init", "other", "medium", 1)),     # _init_workers_ray cut (the title: a weight's KeyError)
    ("c1661", ("config", "config_error", "high", 1)),   # Too large swap space
    ("c1663", ("environment", "other", "high", 1)),     # Errno 99 (label: api_ready)
])
def test_round_39_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
