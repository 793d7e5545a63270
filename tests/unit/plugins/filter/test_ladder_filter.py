# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter fronts of the ladder (filter/ladder.py): the names the roles call, clear errors, Ansible's bool."""

from __future__ import annotations

import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter import ladder
from ansible_collections.repro.vllm.plugins.module_utils.ladder import _ladder
from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _judge

from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import RECORDS, load


def _run(name, case="cpu-layer"):
    """outcome.json of a real run (the attempt as the play kept it)."""
    return load(os.path.join(RECORDS, case, name, "outcome.json"))


def test_the_ladder_filters_and_their_errors():
    assert set(ladder.FilterModule().filters()) == {
        "_ladder_start", "_last_good", "_layer_plan", "_layer_judged", "_job_exit",
        "_one_variable_gate", "_minimal_plan"}
    # the minimal plan: the config.json the head's slurp read (base64), the host's console prefix, its errors named
    import base64
    import json
    raw = {"content": base64.b64encode(json.dumps({"auto_map": {"AutoConfig": "x.Y"}}).encode()).decode()}
    given = {"model": "/models/kimi", "production_argv": ["vllm", "serve", "/models/kimi", "--enable-prefix-caching"]}
    plan = ladder.minimal_plan(["node01"], given, model_config_raw=raw, host_name="node01")
    assert plan["base"]["trust_remote_code"] is True and plan["base"]["model_config_read"] is True
    # a production command or a secret environment: the plan holds secrets (the play hides the task)
    assert plan["secret"] is True and ladder.minimal_plan(["node01"], {"model": "/m"})["secret"] is False
    assert ladder.minimal_plan(["node01"], {"model": "/m", "secret_env": {"HF_TOKEN": "x"}})["secret"] is True
    assert plan["lines"][0].startswith("reproduce | node01 | minimal | derived from the production command: ")
    with pytest.raises(AnsibleFilterError, match=r"minimal_startup: the model's config.json \(/models/kimi/config.json"):
        ladder.minimal_plan(["node01"], {"model": "/models/kimi"},
                            model_config_raw={"content": base64.b64encode(b"{no").decode()})
    with pytest.raises(AnsibleFilterError, match="minimal_command: give the command as a list of arguments"):
        ladder.minimal_plan(["node01"], {"production_argv": "vllm serve m"})
    good = _run("run-002")
    with pytest.raises(AnsibleFilterError, match="feature_layer: speculative is no variable the ladder's layers read"):
        ladder.ladder_start({"speculative": {}}, good)
    with pytest.raises(AnsibleFilterError, match="feature_layer: speculative is no layer of this ladder"):
        ladder.layer_plan("speculative", ladder.ladder_start({}, good), {})
    with pytest.raises(AnsibleFilterError, match="feature_layer: the layer's attempt must be a mapping"):
        ladder.layer_judged({"name": "prefix_caching", "skip": ""}, None, {}, {})
    with pytest.raises(AnsibleFilterError, match="minimal_startup: request .* must be a mapping"):
        ladder.minimal_plan(["h1"], {"model": "/m"}, model_config_raw={}, request="/v1/completions")
    with pytest.raises(AnsibleFilterError, match="feature_layer: repro_vllm_ladder_until is 'x', which is no ladder"):
        ladder.ladder_start({}, good, until="x")
    with pytest.raises(AnsibleFilterError, match="job_exit: the input"):
        ladder.job_exit("run-007")
    with pytest.raises(AnsibleFilterError, match="job_exit: repro_vllm_record_only must be a boolean, not 'maybe'"):
        ladder.job_exit({}, {"repro_vllm_record_only": "maybe"})


def test_the_ladder_climbs_from_the_minimal_attempt_or_the_resumed_run_and_never_from_nothing():
    """_ladder_start picks the run to climb from (feature_layer's _repro_vllm_last_good): the real cpu-layer minimal
    run when it is good, else the frozen run repro_vllm_ladder_resume names, read from its folder; a failed
    minimal run and no resume is an error that says what is needed."""
    minimal, data = _run("run-002"), {"prefix_block_size": 16}
    started = ladder.ladder_start(data, minimal, until="concurrency_2")
    assert started["last_good"] is minimal and started["window"] == ["prefix_caching", "long_context", "output_limit",
                                                                     "concurrency_2"]
    folder = os.path.join(RECORDS, "cpu-layer", "run-002")
    resumed = ladder.ladder_start(data, None, resume=folder, until="gateway")
    assert resumed["last_good"]["path"] == folder and resumed["last_good"]["run"] == minimal["run"]
    # a resumed run wins over the play's own attempt (reproduce.yml makes none when it resumes)
    assert ladder.ladder_start(data, {"run": "run-009"}, resume=folder)["last_good"]["path"] == folder
    failed = dict(minimal, ok=False, stage="engine_init")
    for attempt in (None, failed):
        with pytest.raises(AnsibleFilterError, match="feature_layer: there is no last good run to climb from"):
            ladder.ladder_start(data, attempt, resume="")


@pytest.mark.parametrize("record_only,fails", [(True, False), ("yes", False), ("true", False), (False, True),
                                               ("false", True), ("no", True), ("0", True), (None, True), ("", True)])
def test_job_exit_reads_record_only_as_ansibles_bool(record_only, fails):
    verdict = {"finding": {"run": "run-004"}, "refused": False, "line": "run-004 failed"}
    assert ladder.job_exit(verdict, {"repro_vllm_record_only": record_only})["fails"] is fails


def test_the_exit_rule_on_the_real_plays_verdicts():
    """reproduce.yml's end (filter _job_exit), on the verdicts of real runs (the cpu-layer case): a failed run or a
    refusal fails the job unless it only records."""
    layer_play = _judge.reproduction_summary([_run(r) for r in ("run-002", "run-003", "run-004", "run-005")])
    healthy = _judge.reproduction_summary([_run("run-002")])
    assert layer_play["finding"] is not None and healthy["finding"] is None
    failed = ladder.job_exit(layer_play)
    assert failed["fails"] is True and failed["why"] == ["a failure was found: %s" % layer_play["line"]]
    recorded = ladder.job_exit(layer_play, {"repro_vllm_record_only": True})
    assert recorded["fails"] is False and recorded["recorded"] == failed["why"]
    assert recorded["lines"] == ["exit | record only (repro_vllm_record_only): the job does not fail on "
                                 "a failure was found: %s" % layer_play["line"]]
    # the name repro_vllm_record_only replaced is not read since 0.2.0
    assert ladder.job_exit(layer_play, {"repro_vllm_fail_on_finding": False})["fails"] is True
    assert ladder.job_exit(healthy)["fails"] is False
    assert ladder.job_exit(dict(healthy, refused=True))["why"] == ["a step was refused: %s" % healthy["line"]]
    assert ladder.job_exit(None)["fails"] is False


def test_job_exit_at_the_boundary_fails_on_violations_unless_it_only_records():
    """reproduce.yml's boundary stop (roles/compatibility/tasks/enforce.yml): no verdict yet, only the violations."""
    fails = ladder.job_exit(None, {"repro_vllm_record_only": None}, violations=2)
    assert fails["fails"] and fails["why"] == ["2 compatibility violation(s)"]
    only = ladder.job_exit(None, {"repro_vllm_record_only": True}, violations=2)
    assert not only["fails"] and only["lines"] == [
        "exit | record only (repro_vllm_record_only): the job does not fail on 2 compatibility violation(s)"]
    assert not ladder.job_exit(None, {"repro_vllm_record_only": None})["fails"]


def test_the_gate_builds_the_identity_and_its_diff_as_the_real_layer_run_recorded_them():
    from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.ladder.test__ladder import LAYER_CASE, _layer
    from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.ladder.test__ladder import _run as _run_id
    good = _run_id("run-003", identity=True)
    step = _layer("long_context", good)
    changes = load(os.path.join(LAYER_CASE, "run-004", "changes.json"))
    hosts = changes["current"]["hosts"]
    gate = ladder.one_variable_gate(dict(step, request=dict(step["request"], repeat=3)),
                                    [hosts[n] for n in step["nodes"]], case_id="cpu-layer")
    # the identity (the request without its repeat) and the diff against the last good run, as changes.json holds them
    assert gate["identity"] == changes["current"] and gate["diff"] == changes["diff"]
    assert (gate["refused"], gate["attempt"], gate["line"]) == (False, None, None)
    # against the minimal run (run-002) prefix caching differs too: refused, naming the run it compares with
    minimal = load(os.path.join(LAYER_CASE, "run-002", "changes.json"))["current"]
    refused = ladder.one_variable_gate(dict(step, previous={"run": "run-002", "identity": minimal}),
                                       [hosts[n] for n in step["nodes"]], case_id="cpu-layer")
    assert refused["refused"] is True and refused["diff"]["previous_run"] == "run-002"
    assert refused["attempt"]["summary"] == refused["line"] and refused["attempt"]["diff"] == refused["diff"]
    assert refused["line"].startswith("refused: long_context would differ from the last good run run-002")
    # the first run of a case: nothing to compare, never refused
    first = ladder.one_variable_gate(dict(step, previous=None), [hosts[n] for n in step["nodes"]])
    assert first["diff"]["baseline"] is True and first["refused"] is False
    with pytest.raises(AnsibleFilterError, match="one_variable_gate: the input"):
        ladder.one_variable_gate("long_context", [])


def test_the_minimal_plan_first_says_the_nodes_the_model_and_what_stops_it_then_plans():
    first = ladder.minimal_plan(["h1", "h2", "h3"], {"nnodes": "2", "model": "/models/tiny"})
    assert first == {"nodes": ["h1", "h2"], "model_ref": "/models/tiny", "read_config": True, "unplannable": None,
                     "secret": False}
    # a hub id, or trust_remote_code forced: no config.json to read
    assert ladder.minimal_plan(["h1"], {"model": "org/tiny"})["read_config"] is False
    assert ladder.minimal_plan(["h1"], {"model": "./tiny", "trust_remote_code": "false"})["read_config"] is False
    # the production command's model wins over repro_vllm_model
    prod = ladder.minimal_plan(["h1"], {"model": "ignored", "production_argv": ["vllm", "serve", "~/models/k3", "-tp", "8"]})
    assert (prod["model_ref"], prod["read_config"]) == ("~/models/k3", True)
    assert ladder.minimal_plan(["h1"], {"nnodes": 2, "model": "m"})["unplannable"] == (
        "repro_vllm_nnodes is 2 but the play has only 1 host(s) (h1); add the worker nodes to the inventory or lower "
        "repro_vllm_nnodes")
    assert ladder.minimal_plan(["h1"], {"nnodes": 0, "model": "m"})["unplannable"].startswith("repro_vllm_nnodes is 0 ")
    assert ladder.minimal_plan(["h1"], {"model": ""})["unplannable"].startswith("set repro_vllm_model (a model directory")
    # with the slurp's result (here: skipped) the whole plan, on the nodes chosen first
    given = {"nnodes": 1, "model": "/models/tiny", "port": "8473", "platform_args": ["--enforce-eager"],
             "allow_unknown": "false"}
    full = ladder.minimal_plan(["h1", "h2"], given, model_config_raw={"skipped": True}, host_name="h1")
    assert full["nodes"] == full["base"]["nodes"] == ["h1"] and full["base"]["port"] == 8473
    assert full["base"]["argv"][:3] == ["vllm", "serve", "/models/tiny"] and "--enforce-eager" in full["base"]["argv"]
    assert (full["derived"], full["lines"], full["refusal"], full["base"]["model_config_read"]) == (None, [], None, False)
    # no request (a plan for a resumed ladder): no step; with the request and the run to compare with, the minimal step
    assert full["step"] is None
    request = {"route": "/v1/completions", "timeout": 60.0, "concurrency": 1, "base_url": None, "body": {}, "repeat": 1}
    previous = {"run": "run-001", "path": "/r/c/run-001", "identity": {}}
    stepped = ladder.minimal_plan(["h1", "h2"], given, model_config_raw={}, request=request, previous=previous)
    assert stepped["step"] == _ladder.build_step("minimal", base=stepped["base"], request=request, previous=previous)
    assert (stepped["step"]["name"], stepped["step"]["nodes"], stepped["step"]["previous"]) == ("minimal", ["h1"], previous)


def test_the_run_resumed_is_read_from_its_folder_and_must_be_good(tmp_path, monkeypatch):
    """The run a resumed ladder climbs from (_ladder_start's resume): the run folder read back (outcome.json and
    changes.json, a relative folder under the working directory as the records root is); it must be good."""
    minimal = _run("run-002")
    assert ladder.last_good(minimal) == minimal and ladder.last_good(dict(minimal, ok=False)) is None
    monkeypatch.chdir(os.path.dirname(RECORDS))
    folder = os.path.join(os.path.basename(RECORDS), "cpu-layer", "run-003")
    resumed = ladder.ladder_start({}, None, resume=folder)["last_good"]
    assert resumed["run"] == "run-003" and resumed["path"] == folder and resumed["layers_applied"] == ["prefix_caching"]
    assert resumed["identity"] == load(os.path.join(RECORDS, "cpu-layer", "run-003", "changes.json"))["current"]
    with pytest.raises(AnsibleFilterError, match=r"feature_layer: \S+run-004 is not a good run \(stage config"):
        ladder.ladder_start({}, None, resume=os.path.join(RECORDS, "cpu-layer", "run-004"))
    with pytest.raises(AnsibleFilterError, match="feature_layer: repro_vllm_ladder_resume: cannot read outcome.json of "):
        ladder.ladder_start({}, None, resume=str(tmp_path))
