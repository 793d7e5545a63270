"""Round 24 of issue 35: an application's error line that repeats the message of an exception already in its file
(``logger.error(f"Error: {e}")`` around vLLM's call: ms-swift, vllm-omni, gateways) relays that exception and is
never the root cause itself (``_logstage_answer._mark_relays``).  The samples follow vLLM's own log format (the V1
AsyncLLM's EngineDeadError); the wrapper's words, paths and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_answer import _mark_relays
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_rules import CONSEQUENCE, ERROR_LINE
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_DEAD = ("ERROR 05-01 14:39:06 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered "
         "an issue. See stack trace (above) for the root cause.\n")


def test_an_error_line_that_repeats_an_exception_s_message_relays_it():
    ans = classify_text(_DEAD + "[ERROR:app] turn 1 failed: EngineCore encountered an issue. See stack trace (above) "
                                "for the root cause.\n")
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("request", "engine_dead", 1)


def test_an_error_line_with_words_of_its_own_is_still_an_error():
    ans = classify_text(_DEAD + "[ERROR:app] could not reach the tokenizer service at tok:9000\n")
    assert ans["first_error"]["lineno"] == 2


def test_a_message_repeated_before_the_exception_is_no_relay():
    # the repeat must come after the exception it relays: an earlier line is an error of its own
    ans = classify_text("[ERROR:app] turn 1 failed: EngineCore encountered an issue. See stack trace (above) for the "
                        "root cause.\n" + _DEAD)
    assert ans["first_error"]["lineno"] == 1


def test_a_short_message_is_too_common_to_be_a_relay():
    # under 24 characters a message ("bad value") is words many lines share: the later line stays an error
    for msg, relay in (("bad value", False), ("the tokenizer has no chat template", True)):
        cands = [{"kind": CONSEQUENCE, "lineno": 1, "line": "ValueError: " + msg},
                 {"kind": ERROR_LINE, "lineno": 2, "line": "[ERROR:app] failed: " + msg}]
        _mark_relays(cands)
        assert bool(cands[1].get("relay")) is relay, msg


_FRAMES = ('  File "/venv/lib/python3.10/site-packages/vllm/model_executor/model_loader/loader.py", line 21, in get_model\n'
           "    return loader.load_model(model_config=model_config)\n")  # cut before its exception


def test_a_paste_that_opens_inside_a_traceback_line_starts_the_traceback_at_its_first_line():
    # the paste's first line is the end of a source line the copy cut ("lf.model = get_model(..."), and the paste ends
    # before the exception: the cut traceback is the error, from its first line
    ans = classify_text("lf.model = get_model(model_config=self.model_config,\n" + _FRAMES)
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("weight_loading", 1)
    ans = classify_text("lf.model = get_model(\n    model_config=self.model_config,\n" + _FRAMES)
    assert ans["first_error"]["lineno"] == 1


def test_prose_before_a_traceback_or_a_gap_is_not_its_first_line():
    # three plain lines are more than a cut line; an empty line parts them from the frames
    ans = classify_text("we ran it\nand then\nit said\n" + _FRAMES)
    assert ans["first_error"]["lineno"] == 4
    ans = classify_text("lf.model = get_model(model_config=self.model_config,\n\n" + _FRAMES)
    assert ans["first_error"]["lineno"] == 3
    # two lines of a program's own words (no call, no assignment) before the frames are not code the copy cut (held
    # out: issue35w's c1290, a container's start-up messages before its worker's frames)
    ans = classify_text("the service is starting, this may take a while :)\nstart timed out, checking the log...\n"
                        + _FRAMES)
    assert ans["first_error"]["lineno"] == 3
    assert classify_text(case("c1290"))["first_error"]["lineno"] == 3


@pytest.mark.parametrize("prefix, want", [
    # ms-swift's infer loop relays the EngineDeadError the API path raised (the cause above it was cut)
    ("c846", ("request", "engine_dead", "medium", 2)),
    # vllm-omni's stage worker relays it per request
    ("c460", ("request", "engine_dead", "high", 7)),
    # pastes that open inside a traceback's line (a source line's tail, a cut source line)
    ("c527", ("config", "other", "high", 1)),
    ("c1131", ("cuda_init", "other", "high", 1)),
])
def test_round_24_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
