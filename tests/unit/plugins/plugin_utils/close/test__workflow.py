# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The workflow result contract (set_stats): exactly the chaining keys, never a role variable, decisions where
the runs have them, the playbook's judgement over a file's, the sink's place of each run."""
from __future__ import annotations

import jinja2
import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.close import _workflow as w

RUNS = ["/srv/records/case-a/run-001", "/srv/records/case-a/run-002/"]


def test_only_the_chaining_keys_are_handed_on():
    stats = w.build_result("fingerprint", "case-a", RUNS[:1])
    assert set(stats) == {"repro_vllm_result", "repro_vllm_case_id"}
    assert set(stats) <= set(w.STATS_KEYS)
    assert stats["repro_vllm_case_id"] == "case-a"
    res = stats["repro_vllm_result"]
    assert res == {"schema_version": 1, "purpose": "fingerprint", "case_id": "case-a", "records_root": "/srv/records",
                   "runs": ["/srv/records/case-a/run-001"], "last_run": "/srv/records/case-a/run-001"}
    # a role variable never appears among the keys, wherever the playbook put it
    assert not any(k.startswith("repro_vllm_run") for k in stats)


def test_package_is_a_chaining_key_only_when_made():
    stats = w.build_result("handoff", "case-a", RUNS, package="/srv/records/case-a/handoff/x.tar.gz")
    assert stats["repro_vllm_package"] == "/srv/records/case-a/handoff/x.tar.gz"
    assert stats["repro_vllm_result"]["package"] == stats["repro_vllm_package"]


def test_the_hand_off_hands_no_case_id_on_and_every_result_names_the_records_root():
    """replay.yml after handoff.yml makes a case of its own; a case id among its extra variables would outrank it.
    The hand-off makes no run, so its records root comes from the role (it was null)."""
    stats = w.build_result("handoff", "case-a", [], package="/srv/records/case-a/handoff/x.tar.gz",
                           records_root="/srv/records")
    assert set(stats) == {"repro_vllm_result", "repro_vllm_package"}
    assert stats["repro_vllm_result"]["case_id"] == "case-a" and stats["repro_vllm_result"]["records_root"] == "/srv/records"
    assert stats["repro_vllm_result"]["runs"] == [] and stats["repro_vllm_result"]["last_run"] is None
    for purpose in ("fingerprint", "reproduce", "audit", "diff", "replay"):
        assert w.build_result(purpose, "case-a", RUNS, records_root="/srv/records")["repro_vllm_case_id"] == "case-a"
    assert w.build_result("handoff", "case-a", [])["repro_vllm_result"]["records_root"] is None


def test_runs_are_kept_in_order_once_and_without_trailing_slash():
    assert w.merge_runs(RUNS[:1], RUNS + RUNS[:1]) == ["/srv/records/case-a/run-001", "/srv/records/case-a/run-002"]
    with pytest.raises(w.WorkflowResultError):
        w.merge_runs([], [None])


def test_unknown_field_fails_naming_it():
    with pytest.raises(w.WorkflowResultError, match="repro_vllm_run_path"):
        w.build_result("reproduce", "case-a", RUNS, fields={"repro_vllm_run_path": RUNS[0]})


@pytest.mark.parametrize("purpose,case", [("", "c"), (None, "c"), ("fingerprint", ""), ("fingerprint", None)])
def test_purpose_and_case_are_required(purpose, case):
    with pytest.raises(w.WorkflowResultError):
        w.build_result(purpose, case, RUNS)


def test_decision_files_and_the_playbooks_judgement():
    decisions = {
        "compatibility.json": {"path": RUNS[0] + "/compatibility.json",
                               "data": {"profile": "kimi-k3-gb300", "verdict": "fail",
                                        "violations": [{"host": "n1", "fact": "driver_branch"}]}},
        "score.json": {"path": RUNS[1] + "score.json", "data": {"score": 9, "band": "collect", "items": []}},
        "isolation.json": {"path": "/x/isolation.json", "data": {"decision": "move", "reasons": [
            {"condition": "image_rebuilt", "evidence": "digest a -> b"}, {"condition": "driver_changed"}]}},
        "audit.json": {"path": "/x/audit.json", "data": {"hosts": {"n1": {"drift": [{"fact": "driver"}]}, "n2": {"drift": []}}}},
    }
    res = w.build_result("reproduce", "case-a", RUNS, decisions=decisions,
                         fields={"classification": {"stage": "engine_init", "error_class": "oom"}, "band": "", "score": None})
    r = res["repro_vllm_result"]
    assert r["verdict"] == "fail" and r["compatibility"] == {"profile": "kimi-k3-gb300", "verdict": "fail", "violations": 1}
    # an empty or null field from the playbook never hides what a file says
    assert (r["score"], r["band"]) == (9, "collect")
    assert r["decision"] == "move" and r["decision_reasons"] == ["driver_changed", "image_rebuilt"]
    assert r["drift"] == {"n1": 1}
    assert r["classification"] == {"stage": "engine_init", "error_class": "oom"}
    assert set(r["files"]) == {"compatibility.json", "score.json", "isolation.json", "audit.json"}
    # the playbook's own value wins over a file's
    assert w.build_result("reproduce", "c", RUNS, decisions=decisions, fields={"verdict": "pass"})["repro_vllm_result"]["verdict"] == "pass"


def test_secrets_in_a_finding_are_redacted():
    token = "hf_" + "FAKE" * 9
    r = w.build_result("reproduce", "c", RUNS, fields={"finding": "HF_TOKEN=%s failed" % token})["repro_vllm_result"]
    assert token not in r["finding"]


@pytest.mark.parametrize("sink,host,path", [
    ("store01:/srv/repro", "store01", "/srv/repro"),
    ("store01:/srv/repro/", "store01", "/srv/repro"),
    (" store01 : /srv//repro", "store01", "/srv/repro"),
])
def test_sink_parsing(sink, host, path):
    assert w.parse_sink(sink) == (host, path)
    assert w.sink_path(sink, RUNS[1]) == path + "/case-a/run-002"


@pytest.mark.parametrize("sink", ["store01", "store01:relative/path", ":/srv", "store01:/", 7])
def test_bad_sink_fails_with_the_expected_shape(sink):
    with pytest.raises(w.WorkflowResultError, match="inventory host"):
        w.parse_sink(sink)


def test_no_sink_is_empty():
    assert w.parse_sink("") == ("", "")


def test_a_push_copies_each_controller_run_to_its_place_on_the_sink():
    """The sink role's copy.yml reads each copy's hosts, paths, console line and refusal (Jinja's format)."""
    plan = w.sink_copies("store01:/srv/repro/", push=["/r/case-a/run-001/", "/r/100%/run-002"])
    assert (plan["host"], plan["path"], "case_path" in plan) == ("store01", "/srv/repro", False)
    first, second = plan["copies"]
    assert {k: first[k] for k in ("id", "from", "src", "to", "dest", "fetch")} == {
        "id": "run-001", "from": "localhost", "src": "/r/case-a/run-001", "to": "store01",
        "dest": "/srv/repro/case-a/run-001", "fetch": False}
    assert (first["line"], first["done"], first["verified"]) == (
        "sink | run-001 -> store01:/srv/repro/case-a/run-001", "copied", "files verified there")
    assert first["refusal"] % {"there": "aa", "here": "bb"} == (
        "store01:/srv/repro/case-a/run-001 already holds a different run-001 (its manifest sha256 aa is not this run's"
        " bb); nothing was copied and nothing on the sink was touched. This job's records root started without the"
        " sink's runs: read them back first (repro.vllm.sink, tasks_from fetch.yml) or give AWX a persistent records"
        " root (docs/awx.md); the run stays at /r/case-a/run-001.")
    # copy.yml fills it with Jinja's format filter; a % in a path stays a %
    fill = jinja2.Environment().from_string("{{ r | format(there='aa', here='bb') }}")
    assert fill.render(r=first["refusal"]) == first["refusal"] % {"there": "aa", "here": "bb"}
    assert fill.render(r=second["refusal"]).endswith("the run stays at /r/100%/run-002.")
    assert w.sink_copies("store01:/srv/repro", push=[])["copies"] == []


def test_a_read_back_takes_the_runs_of_the_listing_into_the_records_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    listing = [".incoming-run-003-k2j1x9", "notes", "run-001", "run-002", "run-12x"]
    plan = w.sink_copies("store01:/srv/repro", case_id="case-a", listing=listing, records_root="rel")
    root = str(tmp_path / "rel")
    assert (plan["case_path"], plan["case_dir"]) == ("/srv/repro/case-a", root + "/case-a")
    assert [c["id"] for c in plan["copies"]] == ["run-001", "run-002"]
    assert plan["fetched"] == [root + "/case-a/run-001", root + "/case-a/run-002"]
    assert (plan["missing"], plan["refused"]) == ([], "")
    copy = plan["copies"][0]
    assert {k: copy[k] for k in ("from", "src", "to", "dest", "fetch")} == {
        "from": "store01", "src": "/srv/repro/case-a/run-001", "to": "localhost", "dest": root + "/case-a/run-001",
        "fetch": True}
    assert (copy["line"], copy["done"], copy["verified"]) == (
        "sink | store01:/srv/repro/case-a/run-001 -> %s/case-a/run-001" % root, "read back", "files verified")
    assert copy["refusal"] % {"there": "aa", "here": "bb"} == (
        "%s/case-a/run-001 is a different run-001 than the sink's store01:/srv/repro/case-a/run-001 (manifest sha256"
        " differs); nothing was read back over it. Read the sink into an empty records root." % root)
    # no root given: records, in the working directory; the list step alone (no listing yet) reads nothing back
    odd = w.sink_copies("store01:/srv/100%", case_id="case-a", listing=["run-001"], records_root="/r")["copies"][0]
    assert jinja2.Environment().from_string("{{ r | format(there='aa', here='bb') }}").render(r=odd["refusal"]) == (
        "/r/case-a/run-001 is a different run-001 than the sink's store01:/srv/100%/case-a/run-001 (manifest sha256"
        " differs); nothing was read back over it. Read the sink into an empty records root.")
    alone = w.sink_copies("store01:/srv/repro", case_id="case-a")
    assert alone["case_dir"] == str(tmp_path / "records" / "case-a") and alone["copies"] == alone["fetched"] == []


def test_a_read_back_of_runs_the_sink_lacks_is_refused_naming_them():
    plan = w.sink_copies("store01:/srv/repro", case_id="case-a", listing=["run-001", "run-002"],
                         fetch=["run-002", "run-009"], records_root="/r")
    assert plan["missing"] == ["run-009"] and plan["fetched"] == ["/r/case-a/run-002", "/r/case-a/run-009"]
    assert plan["refused"] == "store01:/srv/repro has no run-009 of case case-a (it has run-001, run-002)"
    empty = w.sink_copies("store01:/srv/repro", case_id="case-a", listing=[], fetch=["run-001"], records_root="/r")
    assert empty["refused"] == "store01:/srv/repro has no run-001 of case case-a (it has none)"
    with pytest.raises(w.WorkflowResultError, match="inventory host"):
        w.sink_copies("store01", case_id="case-a")


def test_sink_in_the_result_says_verified_or_why_not():
    ok = w.build_result("fingerprint", "case-a", RUNS[:1], sink="store01:/srv/repro")["repro_vllm_result"]["sink"]
    assert ok == {"host": "store01", "runs": ["/srv/repro/case-a/run-001"], "verified": True, "error": None}
    bad = w.build_result("fingerprint", "case-a", RUNS[:1], sink="store01:/srv/repro",
                         sink_error="already holds a different run-001")["repro_vllm_result"]["sink"]
    assert bad["verified"] is False and "different run-001" in bad["error"]


def test_decision_files_are_read_from_the_runs_the_last_run_holding_one_wins(tmp_path):
    import json
    first, second = tmp_path / "case" / "run-001", tmp_path / "case" / "run-002"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    (first / "compatibility.json").write_text(json.dumps({"verdict": "fail", "profile": "p", "violations": [{}]}))
    (first / "score.json").write_text(json.dumps({"score": 40, "band": "low"}))
    (second / "compatibility.json").write_text(json.dumps({"verdict": "pass", "profile": "p", "violations": []}))
    (second / "notes.md").write_text("not a decision file\n")
    got = w.read_decisions([str(first), str(second)])
    assert sorted(got) == ["compatibility.json", "score.json"]
    assert got["compatibility.json"] == {"path": str(second / "compatibility.json"),
                                         "data": {"verdict": "pass", "profile": "p", "violations": []}}
    assert got["score.json"]["path"] == str(first / "score.json")
    res = w.build_result("reproduce", "case", [str(first), str(second)], decisions=got)["repro_vllm_result"]
    assert res["verdict"] == "pass" and res["score"] == 40 and res["files"]["score.json"] == str(first / "score.json")
    assert w.read_decisions([]) == {} and w.read_decisions([str(tmp_path / "missing")]) == {}
    # a decision file that is not a JSON object never passes on half-read
    (second / "isolation.json").write_text("{\"decision\": ")
    with pytest.raises(w.WorkflowResultError, match="isolation.json cannot be read as JSON"):
        w.read_decisions([str(second)])
    (second / "isolation.json").write_text("[1, 2]")
    with pytest.raises(w.WorkflowResultError, match="holds list, not a JSON object"):
        w.read_decisions([str(second)])
