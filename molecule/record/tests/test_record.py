"""The record role leaves exactly one frozen run with a manifest that matches the files."""
import hashlib
import json
import os

RUNS = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"] + "/records/record-scenario"


def test_one_run_frozen_with_matching_manifest(host):
    runs = sorted(host.run("ls -1 %s", RUNS).stdout.split())
    assert runs == ["run-001"]
    run = RUNS + "/run-001"
    manifest = json.loads(host.file(run + "/manifest.json").content_string)
    assert sorted(e["path"] for e in manifest["files"]) == ["fleet.json", "notes.md"]
    for e in manifest["files"]:
        f = host.file(run + "/" + e["path"])
        assert hashlib.sha256(f.content).hexdigest() == e["sha256"]
        assert f.mode & 0o222 == 0


def test_lost_host_is_in_fleet_and_notes(host):
    fleet = json.loads(host.file(RUNS + "/run-001/fleet.json").content_string)
    assert len(fleet["hosts"]) == 1 and fleet["hosts"][0]["host"] == "never-reported"
    assert fleet["hosts"][0]["status"] == "lost"
    assert fleet["hosts"][0]["detail"].startswith("no result came back: the host stopped before its record task ran")
    assert "| never-reported | lost |" in host.file(RUNS + "/run-001/notes.md").content_string
