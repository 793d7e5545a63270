"""Round 83 of issue 35 (after the public batch issue35bh was frozen and scored): c10's date read as PyTorch writes it,
and rows from PyTorch's, Ray's, huggingface_hub's and vLLM's sources, each tried on the real pastes whose misses
pointed to it. Three tests (c1488, c2483, c2024) guard answers that reading c10's date alone would have changed: a
January-September c10 line used to pass as a raw line; they pass on round 82's classifier as they must."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


def test_c10_s_unpadded_month_is_a_time():
    # "[rank8]:[W813 11:52:00.306168204 CUDACachingAllocator.cpp:3933]" is August 13: the allocator's OOM and the
    # worker's traceback through capture_model under it are one incident
    ans = classify_text(case("c2546"))
    assert brief(ans) == ("engine_init", "oom", "medium", 1)
    assert ans["first_error"]["timestamp"] == "0813 11:52:00.306168204"


def test_a_c10_stamped_abort_under_a_dead_engine_s_wrapper_keeps_the_wrapper_s_stage():
    # the wrapper's time is only borrowed from the abort's line under it (February: c10 writes "W224")
    assert brief(classify_text(case("c1488"))) == ("request", "illegal_memory_access", "medium", 8)


def test_the_tcpstore_client_losing_its_server_is_a_victim_at_warning():
    assert brief(classify_text(case("c2483"))) == ("unknown", "other", None, 1)


def test_the_hccl_watchdog_s_words_are_the_nccl_watchdog_s():
    # torch_npu's "Some HCCL operations have failed or timed out" is a victim as NCCL's is: the watchdog line stays first
    assert brief(classify_text(case("c2024"))) == ("distributed_init", "timeout", "medium", 1)


def test_a_ray_node_that_cannot_reach_the_gcs_is_the_workers_placement():
    assert brief(classify_text(case("c2542"))) == ("cuda_init", "timeout", "medium", 18)


def test_the_hub_unreachable_for_a_config_file_or_the_file_list_is_the_config():
    assert brief(classify_text(case("c2536"))) == ("config", "timeout", "medium", 4)
    # vLLM's own retry record of the file listing, after the start-up's first lines
    assert brief(classify_text(case("c2537"))) == ("config", "timeout", "medium", 7)
    assert brief(classify_text(case("c2102"))) == ("config", "other", "medium", 1)
