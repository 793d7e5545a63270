"""Round 34 of issue 35 (after the fresh batch issue35ab was frozen and scored; each row from its tool's source): an
error naming a request id of vLLM's OpenAI front end is a request's, Ray's C++ log records (and Ray's tag of a worker
with no name yet) are records with a level, and the message table read from five more vLLM releases and from the
config checks other modules also call.  Paths, pids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("rid", ["chatcmpl-129a69c8cd1a40e0aa3e94662fd8cc2b", "cmpl-8d2e5b0c6f7a4b1e", "embd-0123456789ab"])
def test_an_error_naming_a_front_end_request_id_is_a_request(rid):
    text = ("ERROR 11-19 10:12:21 [nixl_connector.py:1068] Potentially invalid KV blocks for unrecognized request %s "
            "were retrieved by a decode worker.\n" % rid)
    ans = classify_text(text)
    assert (ans["stage"], ans["confidence"]) == ("request", "medium")


def test_a_word_ending_in_cmpl_with_a_short_tail_is_no_request_id():
    assert classify_text("ERROR 11-19 10:12:21 [x.py:1] failed to build cmpl-x\n")["stage"] == "unknown"


@pytest.mark.parametrize("tag", ["", "(pid=5623) ", "(pid=5623, ip=10.0.0.2) "])
def test_rays_cpp_error_records_are_errors(tag):
    text = tag + ("[2023-08-25 00:42:40,265 E 5623 7733] logging.cc:97: Unhandled exception: N5boost10wrapexceptINS_6"
                  "system12system_errorEEE. what(): thread: Resource temporarily unavailable [system:11]\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("unknown", 1)


def test_rays_cpp_info_records_are_quiet():
    text = "(pid=5623) [2023-08-25 00:42:40,265 I 5623 7733] core_worker.cc:215: Initializing worker failed=0\n"
    assert classify_text(text)["stage"] == "none"


@pytest.mark.parametrize("line, want", [
    # vllm/engine/arg_utils.py create_engine_config (0.6.0 - 0.6.2), read from the 0.6.0 release
    ("ValueError: Chunked prefill is not supported with multi-step (--num-scheduler-steps > 1)",
     ("config", "config_error", "medium")),
    # ... and its speculative-decoding sibling; the tensorizer's own engine also calls create_engine_config, which
    # dropped these checks before round 34 (a function the frame map places at config builds the config, whoever calls)
    ("ValueError: Speculative decoding is not supported with multi-step (--num-scheduler-steps > 1)",
     ("config", "config_error", "medium")),
])
def test_messages_of_the_releases_read_in_round_34(line, want):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == want


@pytest.mark.parametrize("prefix, want", [
    ("c1452", ("request", "other", "medium", 1)),            # NIXL's record naming a chatcmpl- request
    ("c1454", ("cuda_init", "other", "high", 5)),            # a Ray worker's C++ abort after the engine's banner
    ("c1464", ("config", "config_error", "medium", 2)),      # chunked prefill with multi-step (0.6.0)
])
def test_round_34_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want


@pytest.mark.parametrize("line", [
    "BadRequestError                           Traceback (most recent call last)",    # IPython's header
    "Traceback (most recent call last):\n  File \"/x/trl/extras/vllm_client.py\", line 233, in init_communicator\n"
    "    raise Exception(f\"Request failed: {response.status_code}, {response.text}\")\n"
    "Exception: Request failed: 404, {\"detail\":\"Not Found\"}",                       # Starlette's 404 body
    "litellm.NotFoundError: NotFoundError: Hosted_vllmException - Error code: 404 - {'detail': 'Not Found'}",
])
def test_a_clients_report_of_an_answered_request_is_a_request(line):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["confidence"]) == ("request", "medium")


def test_a_client_that_never_reached_the_server_stays_unknown():
    ans = classify_text("openai.APIConnectionError: Connection error.\n")
    assert ans["stage"] == "unknown"


def test_v0s_dump_of_a_failed_executions_input_is_a_failure_at_request_low():
    # round 34c: logged at INFO by dump_input_on_failure when execute_model raised (V0 0.6.4 -> 0.10)
    text = ("(VllmWorkerProcess pid=90) INFO 12-19 09:33:44 model_runner_base.py:120] Writing input of failed execution "
            "to /tmp/err_execute_model_input_20241219-093344.pkl...\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["confidence"], ans["first_error"]["lineno"]) == ("request", "low", 1)


def test_the_error_it_dumped_for_stays_the_failure():
    text = ("INFO 12-19 09:33:44 model_runner_base.py:120] Writing input of failed execution to /tmp/x.pkl...\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert classify_text(text)["error_class"] == "illegal_memory_access"
