"""Round 85 of issue 35: a failure with no stage of its own, and after it the dead engine's report to a request
(EngineDeadError: vLLM's client raises it only for an engine that had started), is a request's; from vLLM's source
(v1/engine/core_client.py, exceptions.py), tried on the real paste whose miss pointed to it (c2460)."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


def test_a_bare_cuda_error_then_engine_dead_error_is_a_request():
    assert brief(classify_text(case("c2460"))) == ("request", "illegal_memory_access", "medium", 1)


def test_engine_core_initialization_failed_after_a_bare_error_stays_a_start_up_failure():
    # the wrapper of an engine that never started is no dead engine's report to a request
    assert brief(classify_text(case("c13")))[0] == "unknown"
