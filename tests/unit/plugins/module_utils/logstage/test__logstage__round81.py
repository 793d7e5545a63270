"""Round 81 of issue 35 (after the public batch issue35bf was frozen and scored): each rule from vLLM's, FlashInfer's,
pydantic's or Starlette's source, tried on the real pastes whose misses pointed to it, with a real paste each rule
must leave alone."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


def test_a_step_s_sampled_tokens_copied_to_the_host_is_serving():
    # a worker's traceback cut before execute_model: gpu_model_runner.py _to_list -> the copy's synchronize
    assert brief(classify_text(case("c2455"))) == ("request", "illegal_memory_access", "high", 7)


def test_flashinfer_s_weight_layout_shuffle_is_weight_loading():
    # get_shuffle_matrix_sf_a_row_indices runs from process_weights_after_loading only
    assert brief(classify_text(case("c2462"))) == ("weight_loading", "other", "high", 4)


def test_pydantic_s_value_error_line_cut_before_its_type_is_a_config_check():
    assert brief(classify_text(case("c2459"))) == ("config", "config_error", "medium", 1)


def test_a_request_model_s_value_error_inside_a_400_answer_stays_a_request():
    # the client's paste of the 400 body: 'msg': 'Value error, ...' is inside the JSON, not at a line's start
    assert brief(classify_text(case("c838"))) == ("request", "config_error", "medium", 1)


def test_a_gpu_uuid_in_cuda_visible_devices_is_cuda_init_caused_by_the_environment():
    for prefix, line in (("c2481", 1), ("c2480", 4)):
        ans = classify_text(case(prefix))
        assert brief(ans) == ("cuda_init", "other", "high", line)
        assert ans["cause_stage"] == "environment"


def test_starlette_s_not_found_answer_means_the_server_was_serving():
    # the server's {"detail":"Not Found"} comes before the client's own KeyError
    assert brief(classify_text(case("c2474"))) == ("request", "other", "medium", 1)


def test_a_worker_rpc_failing_while_the_engine_core_starts_is_engine_init():
    # the wrapper after it (c2454), or the engine core's "EngineCore failed to start." heading its traceback (c1954)
    assert brief(classify_text(case("c2454"))) == ("engine_init", "other", "medium", 1)
    assert brief(classify_text(case("c1954"))) == ("engine_init", "oom", "medium", 8)


def test_a_worker_rpc_failing_without_a_start_up_failure_is_left_alone():
    # alone it may be a request's step or an adapter loaded at the API server's start
    assert brief(classify_text(case("c26")))[0] == "unknown"
    assert brief(classify_text(case("c2428")))[0] == "api_ready"
