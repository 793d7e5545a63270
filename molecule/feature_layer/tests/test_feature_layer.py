"""The feature_layer role: prefix_caching as a run of its own on top of the minimal run, changing only its one
variable, with the cache evidence of the real vLLM."""
import json
import os

RUNS = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"] + "/records/layer-scenario"


def _json(host, path):
    return json.loads(host.file(path).content_string)


def test_two_runs_the_layer_changed_one_variable(host):
    assert sorted(host.run("ls -1 %s", RUNS).stdout.split()) == ["run-001", "run-002"]
    changes = _json(host, RUNS + "/run-002/changes.json")
    assert changes["previous_run"] == "run-001" and changes["diff"]["one_variable"] is True
    assert ["%s:%s" % (c["variable"], c["key"]) for c in changes["diff"]["changes"]] == ["command:--enable-prefix-caching"]


def test_prefix_cache_evidence(host):
    pc = _json(host, RUNS + "/run-002/prefix_cache.json")
    assert pc["expectation_met"] is True and pc["reasons"] == []
    assert pc["shared_prefix"]["hit_tokens"] >= 128 and pc["shared_prefix"]["hit_tokens"] % 128 == 0
    assert pc["counters"]["before"]["hits"] == 0
    outcome = _json(host, RUNS + "/run-002/outcome.json")
    assert outcome["ok"] is True and outcome["step"] == "prefix_caching" and outcome["layer"] == "prefix_caching"


def test_no_server_left(host):
    assert host.run("pgrep -f -- '--port [8]095'").rc == 1
