"""Round 82 of issue 35 (after the public batch issue35bg was frozen and scored): each rule from its tool's source,
tried on the real pastes whose misses pointed to it, with a real paste each rule must leave alone."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


def test_engine_dead_error_s_own_words_in_a_500_answer_are_a_dead_engine():
    assert brief(classify_text(case("c2496"))) == ("request", "engine_dead", "medium", 1)


def test_a_sigill_is_the_environment():
    # the shell's job report of a CPU serving build killed by SIGILL
    ans = classify_text(case("c2518"))
    assert brief(ans) == ("environment", "other", "medium", 1)


def test_the_cuda_runtime_s_illegal_instruction_stays_a_cuda_error():
    # cudaErrorIllegalInstruction ("an illegal instruction was encountered") is the GPU's, not the CPU's
    assert brief(classify_text(case("c580")))[:2] == ("request", "cuda_error")


def test_ptxas_older_than_the_gpu_is_a_kernel_build_at_start_up_caused_by_the_environment():
    ans = classify_text(case("c2519"))
    assert brief(ans) == ("engine_init", "other", "medium", 1)
    assert ans["cause_stage"] == "environment"


def test_v0_s_request_without_parameters_is_a_request():
    assert brief(classify_text(case("c2489")))[:2] == ("request", "config_error")
