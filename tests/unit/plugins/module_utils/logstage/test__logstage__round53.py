"""Round 53 of issue 35 (after the fresh batch issue35ap was frozen and scored; each row from vLLM's source): the
Transformers backend's module swap, V0's MQLLMEngine heartbeat, the engine core's utility calls, and a header whose
traceback was cut placed by the log's progress at no more than medium."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("path, func", [
    ("vllm/model_executor/models/transformers/base.py", "_recursive_replace"),
    ("vllm/model_executor/models/transformers/moe.py", "recursive_replace"),
    ("vllm/model_executor/models/transformers.py", "replace_linear_class"),
])
def test_the_transformers_backends_module_swap_is_the_model_being_built(path, func):
    text = ('Traceback (most recent call last):\n  File "/venv/site-packages/%s", line 327, in %s\n'
            '    child = make_layer(module)\nValueError: an error no table knows\n' % (path, func))
    ans = classify_text(text)
    assert (ans["stage"], ans["confidence"]) == ("weight_loading", "high")


def test_the_mq_engines_silence_under_a_running_server_is_a_request_timeout():
    ans = classify_text("TimeoutError: No heartbeat received from MQLLMEngine\n")
    assert (ans["stage"], ans["error_class"]) == ("request", "timeout")


def test_a_header_whose_traceback_was_cut_is_placed_by_the_log_at_medium():
    head = ("INFO 12-08 19:24:04 [parallel_state.py:1408] rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, "
            "TP rank 0\n")
    tb = ("ERROR 12-08 19:24:05 [core.py:843] EngineCore failed to start.\n"
          "ERROR 12-08 19:24:05 [core.py:843] Traceback (most recent call last):\n"
          'ERROR 12-08 19:24:05 [core.py:843]   File "/venv/site-packages/vllm/v1/engine/core.py", line 834, in '
          "run_engine_core\n"
          "ERROR 12-08 19:24:05 [core.py:843]     engine_core = EngineCoreProc(*args, **kwargs)\n")
    ans = classify_text(head + tb)
    assert (ans["stage"], ans["stage_basis"], ans["confidence"]) == ("distributed_init", "markers", "medium")
    # with its exception, the same log's stage stays high
    ans = classify_text(head + tb + "ERROR 12-08 19:24:05 [core.py:843] RuntimeError: an error no table knows\n")
    assert ans["confidence"] == "high"


@pytest.mark.parametrize("prefix, want", [
    ("c1992", ("weight_loading", "other", "high", 1)),
    ("c1996", ("request", "timeout", "medium", 1)),
    ("c1978", ("request", "other", "medium", 1)),
    ("c1974", ("distributed_init", "other", "medium", 4)),
])
def test_round_53_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
