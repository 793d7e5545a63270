"""The single_request role: the saved request file is what the run sent through the fixed client path, and what the
real vLLM answered is in the frozen run."""
import json
import os

RUNS = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"] + "/records/request-scenario"


def _json(host, path):
    return json.loads(host.file(path).content_string)


def test_the_saved_body_was_sent_and_answered(host):
    run = RUNS + "/run-001"
    saved = _json(host, os.environ["MOLECULE_EPHEMERAL_DIRECTORY"] + "/saved-request.json")
    request = _json(host, run + "/request.json")
    assert request["body"] == saved and request["route"] == "/v1/completions" and request["repeat"] == 1
    assert request["client"].startswith("repro.vllm.api_request")
    answer = _json(host, run + "/responses/request-01.json")
    assert answer["statuses"] == [200]
    assert answer["responses"][0]["body"]["usage"]["completion_tokens"] == 4
    assert answer["request"]["body_bytes"] > 0 and len(answer["request"]["body_sha256"]) == 64
    outcome = _json(host, run + "/outcome.json")
    assert outcome["ok"] is True and outcome["component"] == "server" and outcome["error_class"] is None


def test_no_server_left(host):
    assert host.run("pgrep -f -- '--port [8]094'").rc == 1
