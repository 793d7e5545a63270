# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ladder in one place (module_utils/ladder/_ladder.py): the one step builder against the steps the roles' YAML built
before it (tests/fixtures/steps, made on the real runs of tests/fixtures/frozen-runs/cpu-layer) and against what
those real runs recorded (outcome.json, notes.md); the ladder's decisions on the same runs."""
from __future__ import annotations

import json
import os
import re

import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _judge
from ansible_collections.repro.vllm.plugins.module_utils.ladder import _ladder
from ansible_collections.repro.vllm.plugins.module_utils.handoff import _replay
from ansible_collections.repro.vllm.plugins.module_utils.ladder._command import LADDER_ORDER

from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import FIXTURES, RECORDS, load

LAYER_CASE = os.path.join(RECORDS, "cpu-layer")
CAPTURE = load(os.path.join(FIXTURES, "steps", "yaml-61e6e75.json"))
INPUTS = CAPTURE["inputs"]


def _run(name, case="cpu-layer", identity=False):
    """outcome.json of a real run (the attempt as the play kept it), with its identity when asked."""
    outcome = load(os.path.join(RECORDS, case, name, "outcome.json"))
    if identity:
        outcome["identity"] = load(os.path.join(RECORDS, case, name, "changes.json"))["current"]
    return outcome


def _sheet(name):
    """The run sheet's table (notes.md) of a real cpu-layer run: field -> text."""
    with open(os.path.join(LAYER_CASE, name, "notes.md")) as f:
        rows = re.findall(r"^\| ([a-z ]+) \| (.*) \|$", f.read(), re.M)
    return dict((k, v.replace("\\|", "|")) for k, v in rows)


def _minimal():
    return _ladder.build_step("minimal", base=INPUTS["base"], request=INPUTS["request"], previous=INPUTS["previous"])


def _layer(name, good):
    layer = [entry for entry in INPUTS["ladder"] if entry["name"] == name][0]
    return _ladder.build_step("layer", layer=layer, last_good=good, base=INPUTS["base"], request=INPUTS["request"],
                              ladder=INPUTS["ladder"], play_hosts=INPUTS["play_hosts"], overrides={},
                              production=INPUTS["production"], prefix=INPUTS["prefix"])


def _rollback():
    layer = [entry for entry in INPUTS["ladder"] if entry["name"] == "long_context"][0]
    return _ladder.build_step("rollback", layer=layer, failed=_run("run-004"), last_good=_run("run-003", identity=True),
                              base=INPUTS["base"])


def _kept(step):
    """The step as the attempt role keeps it for a second clean run (_attempt.kept_step: without previous)."""
    return {k: v for k, v in step.items() if k != "previous"}


def _repeat(original):
    runs = [_run("run-002", identity=True), _run("run-003", identity=True), _run("run-004"), _run("run-005")]
    return _ladder.build_step("repeat", original=_kept(original), target=_judge.repeat_target(runs))


# ------------------------------------------------------------------------ the one builder against the old YAML
def _built():
    good2, good3 = _run("run-002", identity=True), _run("run-003", identity=True)
    out = {"minimal": _minimal(), "rollback": _rollback()}
    for name, run in sorted(INPUTS["layers"].items()):
        out[name] = _layer(name, good2 if run == "run-002" else good3)
    out["repeat"] = _repeat(out["long_context"])
    return out


@pytest.mark.parametrize("kind", sorted(CAPTURE["steps"]))
def test_every_step_is_what_the_yaml_made_with_every_key_of_the_schema(kind):
    old, new = CAPTURE["steps"][kind], _built()[kind]
    assert set(new) == set(_ladder.STEP_KEYS)
    # every key the YAML set has the YAML's value (types too: the port an int, the block size an int)
    assert dict((k, new[k]) for k in old) == old
    # the keys it left out have the values the attempt role reads for a missing key
    for key in set(_ladder.STEP_KEYS) - set(old):
        assert new[key] == (new["name"] if key == "debug_as" else _ladder.STEP_DEFAULTS[key]), key


def test_the_capture_covers_every_kind_but_replay_and_the_layer_specials():
    steps = CAPTURE["steps"]
    assert {s["purpose"] for s in steps.values()} == {"minimal_startup", "feature_layer", "rollback", "repeat"}
    assert steps["multi_node"]["nodes"] == ["localhost", "node2"] and steps["gateway"]["probes"]
    assert steps["gateway"]["via_gateway"] is True and steps["prefix_caching"]["prefix"]["block_size"] == 128


# ------------------------------------------------------------------- the builder against what the runs recorded
@pytest.mark.parametrize("run,build", [
    ("run-002", _minimal),
    ("run-003", lambda: _layer("prefix_caching", _run("run-002", identity=True))),
    ("run-004", lambda: _layer("long_context", _run("run-003", identity=True))),
    ("run-005", _rollback),
    ("run-006", lambda: _repeat(_layer("long_context", _run("run-003", identity=True)))),
])
def test_each_step_is_the_one_the_real_run_recorded(run, build):
    step, outcome, sheet = build(), _run(run), _sheet(run)
    assert (step["name"], step["purpose"], step["layer"]) == (outcome["step"], outcome["purpose"], outcome["layer"])
    for key in ("nodes", "expected", "layers_applied", "rollback_of", "repeat_of", "argv", "env", "request"):
        assert step[key] == outcome[key], key
    assert step["input"] == sheet["input condition"]
    assert (", ".join(step["changed"]) or "none (baseline)") == sheet["changed variable"]
    assert step["rollback"] == sheet["rollback"]


def test_the_replay_step_comes_from_the_same_builder():
    attempt = dict(_run("run-004"), identity={"hosts": {}})
    replay = {"attempt": attempt, "original_case": "cpu-layer", "package": {"name": "p.tar.gz", "sha256": "ab" * 32},
              "secret_variable_names": []}
    plan = _replay.attempt_plan(replay, ["gpu-a", "gpu-b"])
    step = plan["step"]
    assert set(step) == set(_ladder.STEP_KEYS)
    assert step == _ladder.complete({
        "name": "replay", "purpose": "replay", "layer": None, "nodes": ["gpu-a"], "host": plan["host"],
        "port": plan["port"], "argv": plan["argv"], "env": plan["env"], "request": plan["request"], "checks": [],
        "allowed": [], "changed": [], "expected": "the package's result: failed at config (config_error)",
        "rollback": "none (a replay changes nothing on purpose)",
        "input": "replay of cpu-layer/run-004 from package p.tar.gz (sha256 %s)" % ("ab" * 32),
        "previous": {"run": "run-004", "path": attempt["path"], "identity": {"hosts": {}}},
        "enforce_one_variable": False, "via_gateway": False, "layers_applied": []})
    assert step["debug_as"] == "replay" and step["argv"][:2] == attempt["argv"][:2]


@pytest.mark.parametrize("kind,inputs,words", [
    ("ladder", {}, "no step kind 'ladder'; the kinds are minimal, layer, rollback, repeat, replay"),
    ("minimal", {"base": {}, "previous": None}, "a minimal step needs request (the fixed request"),
    ("rollback", {"layer": "x", "failed": {}, "last_good": {}, "base": {}, "port": 1}, "not port"),
    ("rollback", {"layer": "long_context", "failed": {}, "last_good": {"run": "run-003"}, "base": INPUTS["base"]},
     "the last good run has no stage"),
    ("layer", {"layer": {"name": "prefix_caching"}, "last_good": None, "base": {}, "request": {}, "ladder": [],
               "play_hosts": []}, "last_good (the last good run (_repro_vllm_last_good)) must be a mapping"),
])
def test_a_step_that_cannot_be_built_says_what_is_missing(kind, inputs, words):
    with pytest.raises(_ladder.LadderError) as err:
        _ladder.build_step(kind, **inputs)
    assert words in str(err.value)


# ----------------------------------------------------------------------------------------- the ladder's decisions
def test_last_good_is_one_rule_for_the_minimal_run_a_layer_and_a_resumed_run():
    assert _ladder.last_good(_run("run-002")) == _run("run-002")
    assert _ladder.last_good(_run("run-002", case="cpu-fail")) is None          # the minimal run failed in config
    assert _ladder.last_good(_run("run-011", case="cpu-ok")) is None            # port_in_use
    assert _ladder.last_good(dict(_run("run-002"), refused=True)) is None
    # a resumed run: outcome.json and changes.json of a real run folder
    path = os.path.join(LAYER_CASE, "run-003")
    good = _ladder.last_good(_run("run-003"), resumed_from=path,
                             changes=load(os.path.join(path, "changes.json")))
    assert good["run"] == "run-003" and good["path"] == path and good["layers_applied"] == ["prefix_caching"]
    assert good["identity"] == _run("run-003", identity=True)["identity"] and good["stage"] == "none"
    with pytest.raises(_ladder.LadderError, match=r"run-004 is not a good run \(stage config, run-004 long_context"):
        _ladder.last_good(_run("run-004"), resumed_from=os.path.join(LAYER_CASE, "run-004"), changes={})


def test_judge_layer_on_the_real_ladder_of_cpu_layer():
    minimal, prefix, long_context = _run("run-002"), _run("run-003"), _run("run-004")
    ok = _ladder.judge_layer(prefix, minimal)
    assert (ok["status"], ok["stop"], ok["stop_reason"], ok["is_last_good"]) == ("ok", False, "", True)
    assert ok["last_good"] is prefix
    assert ok["row"] == {"layer": "prefix_caching", "status": "ok", "run": "run-003", "stage": "none",
                         "error_class": None, "component": "server", "reason": prefix["summary"]}
    failed = _ladder.judge_layer(long_context, prefix)
    assert (failed["status"], failed["stop"], failed["is_last_good"]) == ("failed", True, False)
    assert failed["stop_reason"] == "the failure stage changed from none to config at long_context"
    assert failed["last_good"] is prefix and failed["row"]["error_class"] == "config_error"
    unexpected = _ladder.judge_layer(dict(prefix, expectation_met=False), minimal)
    assert (unexpected["status"], unexpected["stop"], unexpected["is_last_good"]) == ("unexpected", False, True)
    refused = _ladder.judge_layer({"refused": True, "layer": "long_context", "summary": "refused: x", "ok": False},
                                  prefix)
    assert (refused["status"], refused["stop"], refused["stop_reason"]) == ("refused", True, "refused: refused: x")
    assert refused["last_good"] is prefix


def test_rollback_status_on_the_real_rollback_and_one_that_did_not_come_back():
    back = _ladder.rollback_status(_run("run-005"))
    assert back["status"] == "ok" and back["earlier_state_returned"] is True
    assert back["reason"] == "the earlier state came back: " + _run("run-005")["summary"]
    lost = _ladder.rollback_status({"run": "run-008", "stage": "engine_init", "earlier_state_returned": False,
                                    "summary": "x"})
    assert lost == {"layer": "rollback", "status": "failed", "run": "run-008", "stage": "engine_init",
                    "error_class": None, "earlier_state_returned": False,
                    "reason": "the earlier state did NOT come back: x"}


# -------------------------------------------------------------------- feature_layer's calls: start, plan, judged
def _data(**values):
    """The captured ladder data as layers_data gives it now: name -> fields, ``requires`` as variable -> value
    (set unless ``values`` says otherwise), no ``allow`` list (the move to more hosts is _command's)."""
    out = {}
    for layer in INPUTS["ladder"]:
        fields = dict((k, v) for k, v in layer.items() if k not in ("name", "allow"))
        if "requires" in fields:
            fields["requires"] = dict((n, values.get(n, "set")) for n in fields["requires"])
        out[layer["name"]] = fields
    return out


def _start(good, until="gateway", data=None, **kw):
    kw.setdefault("play_hosts", INPUTS["play_hosts"])
    return _ladder.start(data or _data(), good, until=until, base=INPUTS["base"], request=INPUTS["request"],
                         prefix=INPUTS["prefix"], **kw)


@pytest.mark.parametrize("variables", ["defaults", "steps", "set2"])
def test_the_layers_as_data_are_what_the_yaml_rendered_from_the_same_variables(variables):
    """layers_data against vars/ladder.yml's own rendering (fixtures/steps/ladder-yaml-d0a3e24), field by field; the
    two faults of the YAML are the only differences: a mapping written as Python's repr where the option takes JSON,
    and a stray backslash in the tool_calling expectation."""
    capture = load(os.path.join(FIXTURES, "steps", "ladder-yaml-d0a3e24", "ladder-%s.json" % variables))
    got, want = _ladder.layers_data(capture["values"]), capture["ladder"]
    assert list(got) == list(want) == LADDER_ORDER
    config = capture["values"]["structured_outputs_config"]
    if isinstance(config, dict):
        assert want["tool_calling"]["args"][-1] == str(config) and json.loads(got["tool_calling"]["args"][-1]) == config
        want["tool_calling"]["args"][-1] = json.dumps(config)
    if "json_schema" in want["tool_calling"]["checks"]:
        assert "schema\\'s shape" in want["tool_calling"]["expected"]
        want["tool_calling"]["expected"] = want["tool_calling"]["expected"].replace("schema\\'s", "schema's")
    for name in LADDER_ORDER:
        assert got[name] == want[name], name


def test_the_layers_read_nothing_but_their_values_and_a_missing_value_is_unset():
    data = _ladder.layers_data({"tool_call_parser": "hermes", "multi_node_env": {"NCCL_SOCKET_IFNAME": "ib0"}})
    assert data["tool_calling"]["args"][:3] == ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    assert data["tool_calling"]["args"][-1] == "" and data["tool_calling"]["checks"] == ["tool_call"]
    assert data["multi_node"]["expected"].startswith(
        "The head and the --headless workers (vLLM's own launcher: --nnodes, --node-rank, --master-addr) start "
        "together with NCCL_SOCKET_IFNAME, every node's log")
    assert data["gateway"]["args"] == ["--api-key", ""] and data["gateway"]["requires"] == {"repro_vllm_gateway_url": None}
    with pytest.raises(_ladder.LadderError):
        _ladder.layers_data(["not", "a", "mapping"])


@pytest.mark.parametrize("name", sorted(INPUTS["layers"]))
def test_a_layers_plan_holds_the_step_the_yaml_made(name):
    good = _run(INPUTS["layers"][name], identity=True)
    ladder = _start(good)
    assert ladder["window"] == LADDER_ORDER[LADDER_ORDER.index((good["layers_applied"] or [None])[-1]) + 1:] \
        if good["layers_applied"] else LADDER_ORDER
    assert ladder["production"] == INPUTS["base"]["derived"] and [x["name"] for x in ladder["layers"]] == LADDER_ORDER
    plan = _ladder.layer_plan(name, ladder, good)
    assert (plan["go"], plan["runs"], plan["skipped"], plan["skip"]) == (True, True, False, "")
    old = CAPTURE["steps"][name]
    assert dict((k, plan["step"][k]) for k in old) == old


def test_a_layers_plan_skips_with_the_first_reason_and_nothing_goes_on_once_the_ladder_stopped():
    good = _run("run-002", identity=True)
    ladder = _start(good, data=_data(repro_vllm_long_context_len=0), production=False, play_hosts=["localhost"],
                    skip=["output_limit"], overrides={"prefix_caching": {"expected": "mine"}})
    assert ladder["window"] == LADDER_ORDER and ladder["production"] is None
    why = dict((n, _ladder.layer_plan(n, ladder, good)["skip"]) for n in LADDER_ORDER)
    assert why == {"prefix_caching": "", "long_context": "needs repro_vllm_long_context_len to be set",
                   "output_limit": "left out by repro_vllm_ladder_skip", "concurrency_2": "", "concurrency_n": "",
                   "tool_calling": "",
                   "unknown_options": "the production command has nothing for it (no production command, or "
                                      "repro_vllm_ladder_production is false)",
                   "multi_node": "needs 2 hosts in the play; it has 1", "gateway": ""}
    skipped = _ladder.layer_plan("long_context", ladder, good)
    assert (skipped["go"], skipped["runs"], skipped["skipped"], skipped["step"]) == (True, False, True, None)
    prefix = _ladder.layer_plan("prefix_caching", ladder, good)
    assert prefix["layer"]["expected"] == prefix["step"]["expected"] == "mine"
    stopped = _ladder.layer_plan("gateway", ladder, good, stopped="true")
    assert (stopped["go"], stopped["runs"], stopped["skipped"], stopped["skip"], stopped["step"]) == (
        False, False, False, "", None)
    with pytest.raises(_ladder.LadderError, match="repro_vllm_ladder_until is 'x', which is no ladder layer"):
        _start(good, until="x")
    assert _start(good, until="none")["window"] == []


def test_a_layer_judged_on_the_real_ladder_the_row_the_stop_and_the_rollbacks_step():
    minimal, prefix, long_context = _run("run-002", identity=True), _run("run-003", identity=True), _run("run-004")
    ladder = _start(prefix)
    plan = _ladder.layer_plan("long_context", ladder, prefix)
    failed = _ladder.layer_judged(plan, long_context, prefix, INPUTS["base"])
    assert failed["row"] == _ladder.judge_layer(long_context, prefix)["row"] and failed["row"]["status"] == "failed"
    assert (failed["stop"], failed["rollback"], failed["last_good"]) == (True, True, prefix)
    assert failed["stop_reason"] == "the failure stage changed from none to config at long_context"
    # the rollback's step: the one the YAML made (rollback of long_context to run-003)
    old = CAPTURE["steps"]["rollback"]
    assert dict((k, failed["step"][k]) for k in old) == old
    ok = _ladder.layer_judged(_ladder.layer_plan("prefix_caching", _start(minimal), minimal), prefix, minimal,
                              INPUTS["base"])
    assert (ok["row"]["status"], ok["stop"], ok["rollback"], ok["last_good"]) == ("ok", False, False, prefix)
    assert ok["step"]["name"] == "prefix_caching"
    skipped = _ladder.layer_judged({"name": "gateway", "skip": "left out by repro_vllm_ladder_skip", "step": None},
                                   None, prefix, INPUTS["base"])
    assert skipped == {"row": {"layer": "gateway", "status": "skipped", "run": None,
                               "reason": "left out by repro_vllm_ladder_skip"},
                       "stop": False, "stop_reason": "", "last_good": prefix, "rollback": False, "step": None}


@pytest.mark.parametrize("until,applied,window", [
    ("", [], []),
    (None, ["prefix_caching"], []),
    ("none", [], []),  # what people type for "minimal only" (issue 32 item 6)
    ("none", ["prefix_caching"], []),
    ("long_context", [], ["prefix_caching", "long_context"]),
    ("concurrency_2", ["prefix_caching"], ["long_context", "output_limit", "concurrency_2"]),
    ("prefix_caching", ["prefix_caching", "long_context"], []),
    ("gateway", ["prefix_caching", "long_context", "output_limit", "concurrency_2", "concurrency_n", "tool_calling",
                 "unknown_options", "multi_node"], ["gateway"]),
])
def test_window_climbs_after_the_last_good_runs_layers_up_to_until(until, applied, window):
    assert _ladder.window(LADDER_ORDER, until, applied) == window


def test_window_after_the_real_runs_and_its_refusals():
    # after the minimal run (run-002) and after a run resumed from run-003 (prefix_caching applied)
    assert _ladder.window(LADDER_ORDER, "long_context", _run("run-002")["layers_applied"]) == [
        "prefix_caching", "long_context"]
    assert _ladder.window(LADDER_ORDER, "output_limit", _run("run-003")["layers_applied"]) == [
        "long_context", "output_limit"]
    with pytest.raises(_ladder.LadderError, match="repro_vllm_ladder_until is 'long_ctx', which is no ladder layer; "
                                                  "use one of prefix_caching, long_context"):
        _ladder.window(LADDER_ORDER, "long_ctx")
    with pytest.raises(_ladder.LadderError, match="has the layer speculative"):
        _ladder.window(LADDER_ORDER, "gateway", ["speculative"])


# ------------------------------------------------------------------------------------------------ the skip rule
@pytest.mark.parametrize("layer,kw,why", [
    ({"name": "long_context"}, {"skip": ["long_context"]}, "left out by repro_vllm_ladder_skip"),
    ({"name": "unknown_options", "production_only": True}, {},
     "the production command has nothing for it (no production command, or repro_vllm_ladder_production is false)"),
    ({"name": "unknown_options", "production_only": True}, {"derived": {"layers": {}}},
     "the production command has nothing for it"),
    ({"name": "long_context", "requires": {"repro_vllm_long_context_len": 0}}, {},
     "needs repro_vllm_long_context_len to be set"),
    ({"name": "tool_calling", "requires": ["repro_vllm_tool_call_parser", "repro_vllm_tool_chat_template"]},
     {"values": {"repro_vllm_tool_call_parser": "hermes", "repro_vllm_tool_chat_template": ""}},
     "needs repro_vllm_tool_chat_template to be set"),
    ({"name": "multi_node", "requires_nodes": 2}, {"play_hosts": 1, "last_good_nodes": 1},
     "needs 2 hosts in the play; it has 1"),
    ({"name": "multi_node", "requires_nodes": 2}, {"play_hosts": 2, "last_good_nodes": 2},
     "the last good run already spans 2 nodes"),
])
def test_layer_skip_says_the_first_reason_that_holds(layer, kw, why):
    assert _ladder.layer_skip(layer, **kw) == why


def test_layer_skip_runs_a_layer_that_can_run_and_takes_production_items_for_its_variables():
    tool = {"name": "tool_calling", "requires": ["repro_vllm_tool_call_parser"]}
    assert _ladder.layer_skip(tool, values={"repro_vllm_tool_call_parser": "hermes"}) == ""
    # the production command's own --tool-call-parser stands in for the unset variable
    assert _ladder.layer_skip(tool, derived={"layers": {"tool_calling": ["--tool-call-parser hermes"]}}, values={}) == ""
    assert _ladder.layer_skip(dict(tool, requires={"repro_vllm_tool_call_parser": "hermes"})) == ""
    assert _ladder.layer_skip({"name": "multi_node", "requires_nodes": 2}, play_hosts=2, last_good_nodes=1) == ""
    unknown = {"name": "unknown_options", "production_only": True}
    assert _ladder.layer_skip(unknown, derived={"layers": {"unknown_options": ["--frobnicate-level 3"]}}) == ""
    # the real derivation of cpu-layer: its long_context item stands in for repro_vllm_long_context_len
    long_context = [entry for entry in INPUTS["ladder"] if entry["name"] == "long_context"][0]
    assert _ladder.layer_skip(long_context, derived=INPUTS["production"], values={}) == ""
    assert _ladder.layer_skip(long_context, values={}) == "needs repro_vllm_long_context_len to be set"


def test_the_capture_is_json_of_the_runs_it_names():
    # the inputs name the real runs; their outcome.json is what the YAML read as the last good runs
    assert CAPTURE["steps"]["prefix_caching"]["previous"] == _run("run-002", identity=True)
    assert json.loads(json.dumps(CAPTURE["steps"]["rollback"]["previous"])) == _run("run-003", identity=True)


def test_layer_skip_reads_the_derivation_itself():
    """The role passes the production command's derivation (cpu-layer's, real) and every required value; the rule
    reads a value only where the derivation has nothing for the layer."""
    derived = INPUTS["production"]
    long_context = [entry for entry in INPUTS["ladder"] if entry["name"] == "long_context"][0]
    unset = {"repro_vllm_long_context_len": 0}
    assert _ladder.layer_skip(long_context, derived=derived, values=unset) == ""
    assert _ladder.layer_skip(long_context, derived=None, values=unset) == "needs repro_vllm_long_context_len to be set"
    unknown = {"name": "unknown_options", "production_only": True}
    assert _ladder.layer_skip(unknown, derived=derived) == "the production command has nothing for it"
    assert _ladder.layer_skip(unknown, derived=None) == (
        "the production command has nothing for it (no production command, or repro_vllm_ladder_production is false)")


def test_the_one_variable_gate_lets_a_layer_start_or_refuses_it_naming_every_difference():
    from ansible_collections.repro.vllm.plugins.plugin_utils.decide._diff import record_diff
    good = _run("run-003", identity=True)
    step = _layer("long_context", good)
    current = load(os.path.join(LAYER_CASE, "run-004", "changes.json"))["current"]
    # the real long_context run against its last good run: only its one variable changed
    diff = record_diff(current, good["identity"], allowed=step.get("allowed") or [], previous_run="run-003")
    assert step["enforce_one_variable"] is True and diff["one_variable"] is True
    assert _ladder.one_variable_gate(step, diff, "cpu-layer") == {"refused": False, "attempt": None, "line": None}
    # the same run against the minimal run (run-002): prefix caching differs too, which this layer does not allow
    minimal = load(os.path.join(LAYER_CASE, "run-002", "changes.json"))["current"]
    more = record_diff(current, minimal, allowed=step.get("allowed") or [], previous_run="run-002")
    assert more["one_variable"] is False and more["unexpected"]
    gate = _ladder.one_variable_gate(dict(step, previous={"run": "run-002"}), more, "cpu-layer")
    names = sorted({"%s:%s" % (u["variable"], u["key"]) for u in more["unexpected"]})
    assert gate["refused"] is True and gate["line"] == gate["attempt"]["summary"]
    assert gate["line"].startswith("refused: long_context would differ from the last good run run-002 in more than "
                                   "its one variable: ")
    assert sorted(gate["line"].split(": ", 2)[2].split(", ")) == names
    attempt = gate["attempt"]
    assert (attempt["refused"], attempt["run"], attempt["ok"], attempt["case_id"]) == (True, None, False, "cpu-layer")
    assert attempt["nodes"] == step["nodes"] and attempt["layer"] == step["layer"] and attempt["diff"] is more
    # a step that need not change only one variable (the minimal start, a repeat) always starts
    assert _ladder.one_variable_gate(_minimal(), more)["refused"] is False


PLAN = load(os.path.join(FIXTURES, "minimal-plan", "captured.json"))


def _plan_inputs(case):
    """minimal_plan's arguments for a case of tests/fixtures/minimal-plan/cases.yml: the role's defaults, then the
    case's variables (as the role's tasks hand them over)."""
    import yaml
    with open(os.path.join(FIXTURES, "..", "..", "roles", "minimal_startup", "defaults", "main.yml")) as f:
        v = dict(yaml.safe_load(f), **case["vars"])
    return dict(nodes=case["nodes"], model_ref=case["model_ref"], model=v["repro_vllm_model"],
                model_config=case.get("config") or {}, trust_remote_code=v["repro_vllm_trust_remote_code"],
                vllm_bin=v["repro_vllm_vllm_bin"], host=v["repro_vllm_host"], port=v["repro_vllm_port"],
                served_model_name=v["repro_vllm_served_model_name"],
                tensor_parallel_size=v["repro_vllm_tensor_parallel_size"],
                pipeline_parallel_size=v["repro_vllm_pipeline_parallel_size"],
                data_parallel_size=v["repro_vllm_data_parallel_size"], platform_args=v["repro_vllm_platform_args"],
                server_env=v["repro_vllm_server_env"], secret_env=v["repro_vllm_secret_env"],
                production_argv=v["repro_vllm_production_argv"], production_env=v["repro_vllm_production_env"],
                keep=v["repro_vllm_minimal_keep"], keep_env=v["repro_vllm_minimal_keep_env"],
                allow_unknown=v["repro_vllm_allow_unknown_options"])


@pytest.mark.parametrize("case", PLAN["cases"], ids=[c["name"] for c in PLAN["cases"]])
def test_the_minimal_plan_is_what_the_yaml_plan_made(case):
    """The YAML plan (roles/minimal_startup/tasks/plan.yml at e6b2485, run by ansible-core over each case:
    tests/fixtures/minimal-plan) against _ladder.minimal_plan on the same inputs: the same base of every attempt,
    derivation, secret environment, console lines and refusal."""
    made = case["made"]
    plan = _ladder.minimal_plan(**_plan_inputs(case["inputs"]))
    if made["failed"]:
        assert "minimal_startup: " + plan["refusal"] == made["failed"]
        return
    assert plan["refusal"] is None
    assert plan["base"] == made["base"]
    assert plan["derived"] == made["derived"] and plan["secret_env"] == made["secret_env"]
    assert ["reproduce | node01 | %s" % line for line in plan["lines"]] == (made["lines"] or [])


def test_the_minimal_plan_needs_a_model_or_a_production_command():
    with pytest.raises(_ladder.LadderError, match="set repro_vllm_model"):
        _ladder.minimal_plan(["node01"], "")
    with pytest.raises(_ladder.LadderError, match="trust_remote_code setting is 'maybe'"):
        _ladder.minimal_plan(["node01"], "/m", model="/m", trust_remote_code="maybe")


def test_node_plan_places_each_node_of_the_real_steps_and_keeps_the_debug_setting_to_its_step():
    step = _minimal()
    head = _ladder.node_plan(step, "localhost")
    # one node: the step's own command, no launcher options, the API the head reaches
    assert head == {"in_step": True, "is_head": True, "rank": 0, "argv": step["argv"], "master_addr": None,
                    "api_url": "http://127.0.0.1:8473", "debug_on": False, "debug_env": {},
                    "requests": _ladder.step_requests(step), "line": "rank 0 (head)", "single": True, "multi": False,
                    "wait_rounds": []}
    outside = _ladder.node_plan(step, "node09", debug=True, debug_step="minimal")
    assert (outside["in_step"], outside["is_head"], outside["rank"], outside["argv"]) == (False, False, -1, None)
    # the progress line names the place, and the debug variables of a node of the step only
    assert outside["line"] == "not part of this step"
    debug = _ladder.node_plan(dict(step, nodes=["node01", "localhost"]), "localhost", master_addr="10.0.0.1",
                              debug=True, debug_step="minimal")
    assert debug["line"] == ("rank 1 (--headless worker) | DEBUG logging for this run only: VLLM_LOGGING_LEVEL, "
                             "CUDA_LAUNCH_BLOCKING, NCCL_DEBUG")
    # the debug environment is the step's own (debug_as: a second clean run keeps the setting of the step it repeats)
    assert outside["debug_on"] is True and outside["debug_env"] == {
        "VLLM_LOGGING_LEVEL": "DEBUG", "CUDA_LAUNCH_BLOCKING": "1", "NCCL_DEBUG": "TRACE"}
    traced = _ladder.node_plan(dict(step, name="repeat", debug_as="minimal"), "localhost", debug=True,
                               debug_step="minimal", trace_function=True)
    assert traced["debug_on"] is True and traced["debug_env"]["VLLM_TRACE_FUNCTION"] == "1"
    assert list(traced["debug_env"]) == ["VLLM_LOGGING_LEVEL", "CUDA_LAUNCH_BLOCKING", "NCCL_DEBUG",
                                         "VLLM_TRACE_FUNCTION"]
    assert _ladder.node_plan(step, "localhost", debug=True, debug_step="long_context")["debug_env"] == {}
    assert _ladder.node_plan(step, "localhost", debug=False, debug_step="minimal", trace_function=True)["debug_on"] is False
    # two nodes: the head and a --headless worker, each with vLLM's launcher options; a wildcard host is 127.0.0.1
    two = dict(step, nodes=["node01", "node02"], host="0.0.0.0")
    worker = _ladder.node_plan(two, "node02", master_addr="10.0.0.11", master_port="29500")
    assert (worker["rank"], worker["is_head"], worker["api_url"]) == (1, False, "http://127.0.0.1:8473")
    # both start without waiting, then wait in rounds: the ready timeout's rounds (rounded up) and two more
    assert (worker["single"], worker["multi"], worker["wait_rounds"]) == (False, True, [0, 1])
    rounds = _ladder.node_plan(two, "node01", master_addr="10.0.0.11", ready_timeout="901", wait_round_s=10)
    assert rounds["wait_rounds"] == list(range(93))
    assert (outside["single"], outside["multi"], outside["wait_rounds"]) == (False, False, [])
    assert worker["argv"] == step["argv"] + ["--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.11",
                                             "--master-port", "29500", "--headless"]
    assert _ladder.node_plan(two, "node01", master_addr="10.0.0.11", master_port="")["argv"][-2:] == [
        "--master-addr", "10.0.0.11"]
    assert _ladder.node_plan(dict(step, host=None), "localhost")["api_url"] == "http://127.0.0.1:8473"
    assert _ladder.node_plan(dict(step, host="10.1.2.3"), "localhost")["api_url"] == "http://10.1.2.3:8473"
    with pytest.raises(_ladder._command.CommandError, match="needs the head's address"):
        _ladder.node_plan(two, "node02")


def test_the_head_sends_the_fixed_request_then_the_probes_then_the_further_requests():
    request = {"route": "/v1/completions", "body": {"prompt": "x"}, "timeout": 30, "concurrency": 4, "repeat": 2,
               "base_url": None, "extra": [{"label": "chat", "route": "/v1/chat/completions"}]}
    step = dict(_minimal(), request=request, via_gateway=True,
                probes=[{"label": "no-key", "send_key": "false"}, {"label": "direct", "base_url": "http://10.0.0.5:8000"}])
    sent = _ladder.step_requests(step)
    assert [(r["label"], r["send_key"] if "send_key" in r else None) for r in sent] == [
        ("request", True), ("no-key", False), ("direct", True), ("chat", None)]
    assert sent[0] == dict(request, label="request", send_key=True)
    assert sent[1]["base_url"] is None and sent[2]["base_url"] == "http://10.0.0.5:8000"
    # a further request runs once, one at a time, with its own route over the step's request
    assert sent[3] == dict(request, concurrency=1, repeat=1, label="chat", route="/v1/chat/completions")
    # only the head sends them
    assert _ladder.node_plan(step, "localhost")["requests"] == sent
    assert _ladder.node_plan(dict(step, nodes=["node01", "localhost"]), "localhost", master_addr="h")["requests"] == []
    # the prefix-caching check sends its own sequence: /metrics around the fixed request sent twice, then two prompts
    # sharing the prefix (the second waits for the stats log line), /metrics at the end
    prefix = {"block_size": 128, "shared_text": "The quick brown fox. " * 30, "log_wait_s": 12}
    seq = _ladder.step_requests(dict(step, checks=["prefix_cache"], prefix=prefix))
    assert [r["label"] for r in seq] == ["metrics-before", "request", "metrics-repeat", "shared-prefix-a",
                                         "shared-prefix-b", "metrics-after"]
    metrics = {"method": "GET", "route": "/metrics", "timeout": 30, "max_body_bytes": 4194304}
    assert seq[0] == dict(metrics, label="metrics-before") and seq[5] == dict(metrics, label="metrics-after")
    assert seq[1] == dict(request, label="request", repeat=2)
    assert seq[3] == dict(request, label="shared-prefix-a", concurrency=1, settle=0.3,
                          body={"prompt": prefix["shared_text"] + "First ending: the end."})
    assert seq[4]["settle"] == 12 and seq[4]["body"]["prompt"] == prefix["shared_text"] + "Second ending: another end."
    assert seq[4]["repeat"] == 2 and seq[4]["route"] == "/v1/completions"
    plain = _ladder.step_requests(_minimal())
    assert len(plain) == 1 and plain[0]["send_key"] is False and plain[0]["label"] == "request"


def test_wait_round_stops_the_others_when_a_node_ended_first_and_ends_when_every_start_finished():
    nodes = ["node01", "node02", "node03"]
    running = {"finished": 0, "started": 1, "ansible_job_id": "j1"}
    ready = {"finished": 1, "ready": True, "outcome": "ready"}
    ended = {"finished": 1, "ready": False, "outcome": "exited", "exit_code": 1}
    # nothing finished yet (a node without a job: a skipped async_status)
    state = _ladder.wait_round(nodes, [running, {"skipped": True, "changed": False}, running])
    assert state == {"started": {"node01": None, "node02": None, "node03": None}, "failed": [],
                     "failed_outcome": None, "stop": [], "done": False}
    # the head serves, the others still start
    state = _ladder.wait_round(nodes, [ready, running, running])
    assert state["started"]["node01"] is ready and state["stop"] == [] and state["done"] is False
    # a worker's server ended without serving: the nodes still starting are stopped now, and the wait is over
    state = _ladder.wait_round(nodes, [ready, dict(ended, finished=True), running])
    assert (state["failed"], state["failed_outcome"], state["stop"], state["done"]) == (
        ["node02"], "exited", ["node03"], True)
    assert state["started"]["node03"] is None
    # every start finished: over, nothing to stop
    state = _ladder.wait_round(nodes, [ready, ready, ended])
    assert (state["failed"], state["stop"], state["done"]) == (["node03"], [], True)
    assert _ladder.wait_round(nodes, [ready, ready, ready])["done"] is True
    assert _ladder.wait_round(nodes, [ready, dict(ended, outcome=None)])["failed_outcome"] is None


def test_wait_round_takes_a_stopped_nodes_collected_start_and_no_other():
    nodes = ["node01", "node02"]
    ended = {"finished": 1, "ready": False, "outcome": "exited", "ansible_job_id": "j1"}
    running = {"finished": 0, "started": 1, "ansible_job_id": "j2"}
    collected = {"finished": 1, "ready": False, "outcome": "stopped", "ansible_job_id": "j2"}
    skipped = {"skipped": True, "changed": False}
    # node02 was stopped because node01 ended first: its start result is what the collect read of the same job
    state = _ladder.wait_round(nodes, [ended, running], collected=[skipped, collected])
    assert state["started"] == {"node01": ended, "node02": collected}
    # the wait itself is the round's: node02 is still the one to stop, the failure is node01's
    assert (state["failed"], state["stop"], state["done"]) == (["node01"], ["node02"], True)
    # an answer of another job (an earlier attempt's collect), or one still running, is not this start
    for other in (dict(collected, ansible_job_id="j0"), dict(collected, finished=0), None):
        assert _ladder.wait_round(nodes, [ended, running], collected=[None, other])["started"]["node02"] is None
    # a round without a job (a skipped async_status) takes no collected answer either
    assert _ladder.wait_round(nodes, [ended, skipped], collected=[None, collected])["started"]["node02"] is None
