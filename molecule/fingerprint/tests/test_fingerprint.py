"""What the fingerprint role left on the host: its frozen part of the record, and the fetched copy."""
import hashlib
import json
import os

EPH = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]


def _runs(host, base):
    out = host.run("ls -1 %s 2>/dev/null", base)
    return sorted(x for x in out.stdout.split() if x.startswith("run-"))


def test_converge_made_exactly_one_run(host):
    # converge starts from an empty scratch area; check mode writing nothing is tested in tests/system
    assert _runs(host, EPH + "/records/molecule") == ["run-001"]


def test_host_part_is_frozen_read_only_and_matches_manifest(host):
    # host_record brings the part to the controller in one task: it is frozen there with its own manifest
    cd = EPH + "/records/molecule/run-001/hosts/instance"
    manifest = json.loads(host.file(cd + "/manifest.json").content_string)
    names = sorted(e["path"] for e in manifest["files"])
    assert names == ["container.json", "env.json", "fingerprint.json"]
    assert (manifest["case_id"], manifest["run_id"]) == ("molecule", "run-001")
    for entry in manifest["files"]:
        f = host.file(cd + "/" + entry["path"])
        assert f.is_file and f.mode & 0o222 == 0, entry["path"]
        assert hashlib.sha256(f.content).hexdigest() == entry["sha256"]
    fp = json.loads(host.file(cd + "/fingerprint.json").content_string)
    assert fp["gpu"]["gpus"][0]["uuid"].startswith("GPU-")


def test_nothing_is_left_staged_on_the_host(host):
    # a fingerprint needs no staging folder on the host; the run itself is frozen on the controller
    remote = host.file(EPH + "/remote")
    assert not remote.exists or host.run("find %s -type f", EPH + "/remote").stdout.strip() == ""
    assert host.file(EPH + "/records/molecule/run-001/manifest.json").exists
