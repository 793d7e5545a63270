"""The minimal_startup role leaves one frozen run of a real vLLM start with the fixed request, and no server behind."""
import hashlib
import json
import os

RUNS = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"] + "/records/minimal-scenario"


def _json(host, path):
    return json.loads(host.file(path).content_string)


def test_one_run_frozen_with_matching_manifest(host):
    assert sorted(host.run("ls -1 %s", RUNS).stdout.split()) == ["run-001"]
    run = RUNS + "/run-001"
    manifest = _json(host, run + "/manifest.json")
    paths = {e["path"] for e in manifest["files"]}
    assert {"hosts/instance/command.json", "hosts/instance/logs/server.log", "hosts/instance/memory.jsonl",
            "stages.json", "request.json", "responses/request-01.json", "changes.json", "outcome.json",
            "notes.md"} <= paths
    for e in manifest["files"]:
        f = host.file(run + "/" + e["path"])
        assert hashlib.sha256(f.content).hexdigest() == e["sha256"]
        assert f.mode & 0o222 == 0


def test_the_minimal_command_served_the_fixed_request(host):
    run = RUNS + "/run-001"
    outcome = _json(host, run + "/outcome.json")
    assert outcome["ok"] is True and outcome["stage"] == "none" and outcome["statuses"] == [200]
    argv = _json(host, run + "/hosts/instance/command.json")["argv"]
    assert argv[-9:] == ["--host", "127.0.0.1", "--port", "8093", "--served-model-name", "tiny", "--max-model-len",
                         "512", "--enforce-eager"]
    assert "Application startup complete" in host.file(run + "/hosts/instance/logs/server.log").content_string


def test_no_server_left(host):
    assert host.run("pgrep -f -- '--port [8]093'").rc == 1  # [8]: the pattern must not match this shell
