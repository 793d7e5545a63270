# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_record against real files, real permissions and real concurrent processes."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.record import _record as r
from ansible_collections.repro.vllm.tests import real_parts

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def root(tmp_path):
    return str(tmp_path / "records")


@pytest.fixture
def run(root):
    return r.create_run(root, "case1")["path"]


# ------------------------------------------------------------------------------------------------ create
def test_create_numbers_and_modes(root):
    a = r.create_run(root, "case1")
    b = r.create_run(root, "case1")
    assert (a["run_id"], a["number"]) == ("run-001", 1)
    assert (b["run_id"], b["number"]) == ("run-002", 2)
    assert b["path"] == os.path.join(root, "case1", "run-002")
    for p in (root, os.path.join(root, "case1"), a["path"], b["path"]):
        assert mode(p) == 0o700, p
    # another case starts at 1 again
    assert r.create_run(root, "case2")["run_id"] == "run-001"


def test_create_padding_grows_past_999(root):
    case_dir = os.path.join(root, "big")
    os.makedirs(os.path.join(case_dir, "run-998"))
    os.makedirs(os.path.join(case_dir, "not-a-run"))
    os.makedirs(os.path.join(case_dir, "run-12x"))
    assert r.create_run(root, "big")["run_id"] == "run-999"
    got = r.create_run(root, "big")
    assert (got["run_id"], got["number"]) == ("run-1000", 1000)
    assert r.create_run(root, "big")["run_id"] == "run-1001"
    assert r.run_numbers(case_dir) == [998, 999, 1000, 1001]


def test_plan_run_creates_nothing(root):
    plan = r.plan_run(root, "case1")
    assert plan["run_id"] == "run-001"
    assert not os.path.exists(root)
    r.create_run(root, "case1")
    assert r.plan_run(root, "case1")["run_id"] == "run-002"
    assert os.listdir(os.path.join(root, "case1")) == ["run-001"]


def test_create_above_runs_taken_elsewhere(root):
    """An empty records root (an AWX job's fresh container) with a sink that holds run-001..run-003 and a copy of
    run-004 in transit: the new run is run-005, here and in plan_run alike; a later run of the job follows it."""
    sink_listing = ["run-001", "run-003", ".incoming-run-004-k2j1x9", "notes", "run-12x", "run-002"]
    assert r.taken_numbers(sink_listing) == [1, 2, 3, 4]
    assert r.plan_run(root, "case1", taken=sink_listing)["run_id"] == "run-005"
    assert not os.path.exists(root)
    assert r.create_run(root, "case1", taken=sink_listing)["run_id"] == "run-005"
    assert r.create_run(root, "case1", taken=sink_listing)["run_id"] == "run-006"
    # a local run above the sink's numbers wins; an empty listing changes nothing
    assert r.create_run(root, "case1", taken=["run-002"])["run_id"] == "run-007"
    assert r.create_run(root, "case2", taken=[])["run_id"] == "run-001"
    assert sorted(os.listdir(os.path.join(root, "case1"))) == ["run-005", "run-006", "run-007"]


@pytest.mark.parametrize("bad", ["run-001", [1, 2], {"run-001": 1}, [None]])
def test_taken_must_be_a_listing(root, bad):
    with pytest.raises(r.RecordError, match="taken must be a list of run names"):
        r.create_run(root, "case1", taken=bad)
    assert not os.path.exists(os.path.join(root, "case1"))


def _creator(root, n, barrier, queue):
    barrier.wait()
    out = []
    for dummy in range(n):
        out.append(r.create_run(root, "race")["number"])
    queue.put((os.getpid(), out))


def test_concurrent_creates_never_share_a_number(root):
    ctx = multiprocessing.get_context("fork")
    procs, per = 8, 5
    barrier = ctx.Barrier(procs)
    queue = ctx.Queue()
    workers = [ctx.Process(target=_creator, args=(root, per, barrier, queue)) for dummy in range(procs)]
    for w in workers:
        w.start()
    results = [queue.get(timeout=60) for dummy in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    assert len({pid for pid, nums in results}) == procs  # really 8 processes
    numbers = [n for pid, nums in results for n in nums]
    assert len(numbers) == procs * per
    assert sorted(numbers) == list(range(1, procs * per + 1))
    assert sorted(os.listdir(os.path.join(root, "race"))) == ["run-%03d" % i for i in range(1, 41)]


@pytest.mark.parametrize("bad", ["", "../x", "a/b", "..", ".hidden", "a..b", "-x", "a b", "x" * 129, "caf\u00e9", None])
def test_case_id_validation(root, bad):
    with pytest.raises(r.RecordError, match="case_id"):
        r.create_run(root, bad)
    assert not os.path.exists(root)


def test_root_is_a_file(tmp_path):
    f = tmp_path / "records"
    f.write_text("x")
    with pytest.raises(r.RecordError) as err:
        r.create_run(str(f), "c")
    assert str(f) in str(err.value) and "not a directory" in str(err.value)


def test_root_parent_missing(tmp_path):
    root = tmp_path / "missing" / "records"
    with pytest.raises(r.RecordError) as err:
        r.create_run(str(root), "c")
    msg = str(err.value)
    assert str(tmp_path / "missing") in msg and "does not exist" in msg and "create the parent" in msg


def test_case_path_is_a_file(root):
    os.makedirs(root)
    with open(os.path.join(root, "c"), "w") as f:
        f.write("x")
    with pytest.raises(r.RecordError, match="not a directory"):
        r.create_run(root, "c")


@pytest.fixture
def open_tmp():
    """A scratch dir outside pytest's 0700 base, so an unprivileged child can reach it."""
    d = tempfile.mkdtemp(prefix="repro-record-test-")
    os.chmod(d, 0o755)
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


def test_root_not_writable(open_tmp):
    """A real permission refusal.  As root (who ignores mode bits) the attempt runs in a child process that
    dropped to nobody; it loads a world-readable copy of _record.py (standard library only)."""
    tmp_path = open_tmp
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(str(locked), 0o755)
    lib = tmp_path / "record_copy.py"
    lib.write_text(open(r.__file__.replace(".pyc", ".py")).read())
    os.chmod(str(lib), 0o644)
    code = ("import importlib.util, sys\n"
            "spec = importlib.util.spec_from_file_location('rec', sys.argv[1])\n"
            "r = importlib.util.module_from_spec(spec); spec.loader.exec_module(r)\n"
            "try:\n r.create_run(sys.argv[2], 'c')\nexcept r.RecordError as e:\n print(e); sys.exit(3)\n")
    python = sys.executable
    preexec = None
    if IS_ROOT:
        python = "/usr/bin/python3"
        if not os.access(python, os.X_OK):
            real_parts.missing("system-python3", "%s is not there" % python)

        def preexec():
            os.setgid(65534)
            os.setuid(65534)
    else:
        os.chmod(str(locked), 0o555)
    proc = subprocess.run([python, "-c", code, str(lib), str(locked)], capture_output=True, text=True,
                          preexec_fn=preexec, timeout=60, cwd=str(tmp_path), check=False)
    assert proc.returncode == 3, proc.stderr
    assert str(locked) in proc.stdout and "Permission denied" in proc.stdout and "writable" in proc.stdout
    assert os.listdir(str(locked)) == []


# ------------------------------------------------------------------------------------------------ write
def test_write_json_content_src(run, tmp_path):
    a = r.write_part(run, "hosts/node1/fingerprint.json", data={"b": [1, 2], "a": "x\u00e9"})
    with open(a["path"], "rb") as f:
        raw = f.read()
    assert raw == b'{\n  "a": "x\xc3\xa9",\n  "b": [\n    1,\n    2\n  ]\n}\n'
    assert a["sha256"] == hashlib.sha256(raw).hexdigest() and a["size"] == len(raw) and a["changed"]
    assert mode(os.path.join(run, "hosts")) == 0o700 and mode(os.path.join(run, "hosts", "node1")) == 0o700
    assert mode(a["path"]) == 0o600
    b = r.write_part(run, "notes.md", content="run sheet\n")
    assert open(b["path"]).read() == "run sheet\n"
    src = tmp_path / "big.log"
    blob = os.urandom(3 * r.CHUNK + 17)
    src.write_bytes(blob)
    c = r.write_part(run, "hosts/node1/logs/server.log", src=str(src))
    assert open(c["path"], "rb").read() == blob
    assert c["sha256"] == hashlib.sha256(blob).hexdigest() and c["size"] == len(blob)
    # json null is a value, not "no source"
    d = r.write_part(run, "null.json", data=None, has_data=True)
    assert open(d["path"]).read() == "null\n"
    assert not [n for n in os.listdir(os.path.join(run, "hosts", "node1")) if n.startswith(".part-")]


def test_write_exactly_one_source(run, tmp_path):
    with pytest.raises(r.RecordError, match="exactly one"):
        r.write_part(run, "x", content="a", data={"a": 1})
    with pytest.raises(r.RecordError, match="exactly one"):
        r.write_part(run, "x")
    with pytest.raises(r.RecordError, match="not a readable regular file"):
        r.write_part(run, "x", src=str(tmp_path / "nope"))


def test_write_existing_part(run):
    first = r.write_part(run, "stages.json", data={"stage": "engine_init"})
    same = r.write_part(run, "stages.json", data={"stage": "engine_init"})
    assert same["changed"] is False and same["existed"] is True and same["sha256"] == first["sha256"]
    with pytest.raises(r.RecordError) as err:
        r.write_part(run, "stages.json", data={"stage": "request"})
    assert "overwrite: true" in str(err.value) and first["sha256"] in str(err.value)
    assert json.load(open(first["path"])) == {"stage": "engine_init"}
    again = r.write_part(run, "stages.json", data={"stage": "request"}, overwrite=True)
    assert again["changed"] and again["existed"]
    assert json.load(open(first["path"])) == {"stage": "request"}


def test_write_check_mode_writes_nothing(run):
    res = r.write_part(run, "hosts/n/x.txt", content="abc", check_mode=True)
    assert res["changed"] and res["size"] == 3 and res["sha256"] == hashlib.sha256(b"abc").hexdigest()
    assert os.listdir(run) == [r.OPEN_FILE]  # only the open run's own marker


@pytest.mark.parametrize("part", ["/etc/passwd", "../escape", "hosts/../../escape", "a/./b", "a//b", "",
                                  "hosts/..", "manifest.json", "a\\b"])
def test_write_refuses_escaping_parts(run, part):
    with pytest.raises(r.RecordError):
        r.write_part(run, part, content="x")
    assert os.listdir(run) == [r.OPEN_FILE]  # only the open run's own marker
    assert not os.path.exists(os.path.join(os.path.dirname(run), "escape"))


def test_write_refuses_symlink_tricks(run, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(str(outside), os.path.join(run, "link"))
    with pytest.raises(r.RecordError, match="symlink"):
        r.write_part(run, "link/file.txt", content="x")
    (outside / "victim").write_text("keep")
    os.symlink(str(outside / "victim"), os.path.join(run, "victim"))
    with pytest.raises(r.RecordError, match="symlink"):
        r.write_part(run, "victim", content="x", overwrite=True)
    assert (outside / "victim").read_text() == "keep"
    assert os.listdir(str(outside)) == ["victim"]


def test_write_into_missing_run(tmp_path):
    with pytest.raises(r.RecordError, match="state=create"):
        r.write_part(str(tmp_path / "nope"), "a", content="x")


# ------------------------------------------------------------------------------------------------ freeze
def _fill(run):
    r.write_part(run, "notes.md", content="notes\n")
    r.write_part(run, "hosts/node1/env.json", data={"CUDA_VISIBLE_DEVICES": "0"})
    r.write_part(run, "hosts/node2/logs/server.log", content="INFO ready\n")


def test_freeze_manifest_and_modes(run):
    _fill(run)
    res = r.freeze(run, "0.1.0", metadata={"host": "node1"})
    assert res["changed"]
    with open(os.path.join(run, "manifest.json")) as f:
        man = json.load(f)
    assert man == res["manifest"]
    assert man["schema_version"] == r.SCHEMA_VERSION and man["collection_version"] == "0.1.0"
    assert man["case_id"] == "case1" and man["run_id"] == "run-001"
    assert {k: v for k, v in man["metadata"].items() if k not in ("run_uid", "opened", "owner")} == {"host": "node1"}
    assert man["created"].endswith("Z") and "T" in man["created"]
    assert [f["path"] for f in man["files"]] == ["hosts/node1/env.json", "hosts/node2/logs/server.log", "notes.md"]
    notes = [f for f in man["files"] if f["path"] == "notes.md"][0]
    assert notes == {"path": "notes.md", "size": 6, "sha256": hashlib.sha256(b"notes\n").hexdigest()}
    for dirpath, dirnames, filenames in os.walk(run):
        assert mode(dirpath) == 0o555, dirpath
        for n in filenames:
            assert mode(os.path.join(dirpath, n)) == 0o444, n
    assert r.is_frozen(run)


def test_freeze_twice_is_unchanged_and_checks(run):
    _fill(run)
    first = r.freeze(run, "0.1.0")
    second = r.freeze(run, "0.2.0")
    assert second["changed"] is False and second["manifest"] == first["manifest"]
    target = os.path.join(run, "notes.md")
    os.chmod(target, 0o644)
    with open(target, "w") as f:
        f.write("edited\n")
    with pytest.raises(r.RecordError, match="does not verify.*notes.md"):
        r.freeze(run, "0.1.0")


def test_freeze_check_mode(run):
    _fill(run)
    res = r.freeze(run, "0.1.0", check_mode=True)
    assert res["changed"] and len(res["manifest"]["files"]) == 3
    assert not os.path.exists(os.path.join(run, "manifest.json"))
    assert mode(run) == 0o700


def test_freeze_refuses_symlinks(run, tmp_path):
    _fill(run)
    os.symlink(str(tmp_path), os.path.join(run, "elsewhere"))
    with pytest.raises(r.RecordError, match="elsewhere"):
        r.freeze(run, "0.1.0")
    assert not r.is_frozen(run)


def test_frozen_run_refuses_writes_even_for_root(run):
    _fill(run)
    r.freeze(run, "0.1.0")
    # make the permission bits permissive again: only the manifest check can refuse now
    for dirpath, dirnames, filenames in os.walk(run):
        os.chmod(dirpath, 0o700)
        for n in filenames:
            os.chmod(os.path.join(dirpath, n), 0o600)
    for part, kw in (("notes.md", {"content": "x", "overwrite": True}), ("new.txt", {"content": "x"}),
                     ("hosts/node9/x.json", {"data": {"a": 1}})):
        with pytest.raises(r.FrozenError) as err:
            r.write_part(run, part, **kw)
        msg = str(err.value)
        assert run in msg and "frozen" in msg and "never modified" in msg and "state=create" in msg
    assert open(os.path.join(run, "notes.md")).read() == "notes\n"
    assert not os.path.exists(os.path.join(run, "new.txt"))
    assert r.verify(run)["ok"]


def test_nested_record_is_a_file_of_the_outer_one(run):
    host = os.path.join(run, "hosts", "node1")
    os.makedirs(host)
    r.write_part(host, "fingerprint.json", data={"gpu": "H200"})
    inner = r.freeze(host, "0.1.0", case_id="case1", run_id="run-001")
    assert inner["manifest"]["files"] == [{"path": "fingerprint.json", "size": inner["manifest"]["files"][0]["size"],
                                           "sha256": inner["manifest"]["files"][0]["sha256"]}]
    # the outer run is not frozen, but the nested record refuses writes
    with pytest.raises(r.FrozenError, match="node1"):
        r.write_part(run, "hosts/node1/extra.txt", content="x")
    r.write_part(run, "stages.json", data={"stage": "none"})
    outer = r.freeze(run, "0.1.0")
    assert [f["path"] for f in outer["manifest"]["files"]] == [
        "hosts/node1/fingerprint.json", "hosts/node1/manifest.json", "stages.json"]
    assert r.verify(run)["ok"] and r.verify(host)["ok"]


# ------------------------------------------------------------------------------------------------ verify
def _frozen(run):
    _fill(run)
    r.freeze(run, "0.1.0")
    for dirpath, dirnames, filenames in os.walk(run):
        os.chmod(dirpath, 0o755)
        for n in filenames:
            os.chmod(os.path.join(dirpath, n), 0o644)
    return run


def test_verify_ok(run):
    res = r.verify(_frozen(run))
    assert res["ok"] and res["checked"] == 3
    assert res["mismatched"] == [] and res["missing"] == [] and res["unexpected"] == []
    # the sha256 of manifest.json itself: the records sink tells a copy of this run from another run by it
    with open(os.path.join(run, "manifest.json"), "rb") as f:
        assert res["manifest_sha256"] == hashlib.sha256(f.read()).hexdigest()


def test_verify_detects_changed_bytes_same_size(run):
    _frozen(run)
    p = os.path.join(run, "hosts", "node2", "logs", "server.log")
    with open(p, "r+b") as f:
        f.write(b"X")
    res = r.verify(run)
    assert not res["ok"]
    (m,) = res["mismatched"]
    assert m["path"] == "hosts/node2/logs/server.log" and m["expected_size"] == m["actual_size"]
    assert m["expected_sha256"] != m["actual_sha256"]
    assert "changed: hosts/node2/logs/server.log" in r.describe_problems(res)


def test_verify_detects_removed_and_added(run):
    _frozen(run)
    os.unlink(os.path.join(run, "notes.md"))
    with open(os.path.join(run, "hosts", "node1", "added.txt"), "w") as f:
        f.write("x")
    res = r.verify(run)
    assert not res["ok"] and res["missing"] == ["notes.md"] and res["unexpected"] == ["hosts/node1/added.txt"]
    assert res["checked"] == 2
    text = r.describe_problems(res)
    assert "missing: notes.md" in text and "not in the manifest: hosts/node1/added.txt" in text


def test_verify_errors(run, tmp_path):
    with pytest.raises(r.RecordError, match="not a frozen record"):
        r.verify(run)
    with pytest.raises(r.RecordError, match="not a directory"):
        r.verify(str(tmp_path / "nope"))
    with open(os.path.join(run, "manifest.json"), "w") as f:
        f.write("{broken")
    with pytest.raises(r.RecordError, match="not valid JSON"):
        r.verify(run)
    with open(os.path.join(run, "manifest.json"), "w") as f:
        json.dump({"schema_version": r.SCHEMA_VERSION, "files": [{"path": "../../etc/passwd", "size": 1, "sha256": "0"}]}, f)
    with pytest.raises(r.RecordError, match="unsafe path"):
        r.verify(run)


def test_hash_file_in_chunks(tmp_path):
    p = tmp_path / "f"
    blob = os.urandom(1000)
    p.write_bytes(blob)
    assert r.hash_file(str(p), chunk=7) == (1000, hashlib.sha256(blob).hexdigest())


def _write_manifest(run, **fields):
    """A manifest as an older release wrote it: no open.json beside it (schema 3 removes it at the freeze)."""
    os.chmod(run, 0o700)
    if os.path.exists(os.path.join(run, r.OPEN_FILE)):
        os.unlink(os.path.join(run, r.OPEN_FILE))
    with open(os.path.join(run, "manifest.json"), "w") as f:
        json.dump(dict({"files": []}, **fields), f)


def test_schema_version_is_bumped_and_older_manifests_still_verify(run):
    assert r.SCHEMA_VERSION == 3 and {1, 2} <= set(r.SUPPORTED_SCHEMA_VERSIONS)
    _write_manifest(run, schema_version=1, collection_version="0.1.0")
    assert r.verify(run)["ok"]  # a record written before this change still reads


@pytest.mark.parametrize("version", [4, 99])
def test_newer_schema_version_is_refused_naming_versions(run, version):
    _write_manifest(run, schema_version=version, collection_version="9.0.0")
    with pytest.raises(r.RecordError, match=r"schema_version %d, but this repro.vllm .* reads versions 1, 2, 3 only.*9\.0\.0"
                       % version):
        r.verify(run)


@pytest.mark.parametrize("value", [None, "2", True])
def test_missing_or_odd_schema_version_is_refused(run, value):
    fields = {} if value is None else {"schema_version": value}
    _write_manifest(run, **fields)
    with pytest.raises(r.RecordError, match="not an integer"):
        r.verify(run)


def test_file_notes_land_in_the_manifest_entry_but_not_over_the_hashes(run):
    r.write_part(run, "logs/server.log", content="head\n...\ntail\n")
    cut = {"offset": 5, "length": 100, "sha256": "ab" * 32}
    man = r.freeze(run, "0.1.0", file_notes={"logs/server.log": {"cut": cut, "size": -1}})["manifest"]
    entry = [e for e in man["files"] if e["path"] == "logs/server.log"][0]
    assert entry["cut"] == cut and entry["size"] == len("head\n...\ntail\n")
    assert r.verify(run)["ok"]


def test_collection_version_comes_from_galaxy_yml(tmp_path):
    (tmp_path / "galaxy.yml").write_text("namespace: repro\nname: vllm\nversion: '1.4.2'  # released\n")
    assert r.read_collection_version(str(tmp_path)) == "1.4.2"
    os.remove(str(tmp_path / "galaxy.yml"))
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"collection_info": {"version": "1.5.0"}}))
    assert r.read_collection_version(str(tmp_path)) == "1.5.0"
    os.remove(str(tmp_path / "MANIFEST.json"))
    assert r.read_collection_version(str(tmp_path)) == "unknown"


def test_this_collection_version_is_the_galaxy_one():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
    import yaml
    with open(os.path.join(root, "galaxy.yml")) as f:
        assert r.read_collection_version() == yaml.safe_load(f)["version"]


def test_relative_root_resolves_against_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert r.resolve_root("records") == os.path.join(str(tmp_path), "records")
    assert r.resolve_root("a/../b", cwd="/srv") == "/srv/b"
    assert r.resolve_root("/abs/records") == "/abs/records"
    with pytest.raises(r.RecordError, match="empty"):
        r.resolve_root("")


# ------------------------------------------------------------------ the run's owner and life (schema 3)
def test_a_run_opens_with_its_own_uid_and_owner_and_freezes_them_into_the_manifest(root):
    owner = r.controller_owner(root, environ={"USER": "oncall", "JOB_ID": "4711"})
    a = r.create_run(root, "case1", owner=owner)
    b = r.create_run(root, "case1", owner=owner)
    assert len(a["run_uid"]) == 16 and int(a["run_uid"], 16) >= 0 and a["run_uid"] != b["run_uid"]
    opened = r.read_open(a["path"])
    assert opened["run_uid"] == a["run_uid"] and opened["owner"]["job_id"] == "4711"
    assert opened["owner"]["pid"] == os.getpid() and opened["owner"]["records_root"] == root
    with pytest.raises(r.RecordError, match="reserved"):
        r.write_part(a["path"], r.OPEN_FILE, content="x")
    r.write_part(a["path"], "notes.md", content="n\n")
    man = r.freeze(a["path"], "0.1.0", metadata={"status": "ok"})["manifest"]
    assert man["schema_version"] == 3 and man["run_uid"] == a["run_uid"] == man["metadata"]["run_uid"]
    assert man["metadata"]["owner"]["user"] == "oncall" and man["metadata"]["status"] == "ok"
    assert not os.path.exists(os.path.join(a["path"], r.OPEN_FILE))
    assert [f["path"] for f in man["files"]] == ["notes.md"] and r.verify(a["path"])["ok"]


def test_a_host_parts_status_is_its_own(run):
    # a host part's manifest keeps the host's status (host_record: ok, degraded, failed, unreachable)
    part = os.path.join(run, "hosts", "n1")
    r.write_part(run, "hosts/n1/fingerprint.json", data={"gpu": {}})
    assert r.freeze(part, "0.1.0", metadata={"status": "degraded"})["manifest"]["metadata"]["status"] == "degraded"


def test_an_interrupted_run_is_sealed_incomplete_once_its_owner_is_gone(root):
    import subprocess
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = r.create_run(root, "case1", owner=r.controller_owner(root, pid=dead.pid))
    r.write_part(gone["path"], "hosts/n1/logs/server.log", content="INFO started\n")
    live = r.create_run(root, "case1", owner=r.controller_owner(root))     # this process: alive
    far = r.create_run(root, "case1", owner=dict(r.controller_owner(root), controller="another-awx-node"),
                       owner_lease=3600)
    res = r.seal_interrupted(os.path.join(root, "case1"), "0.1.0", {"run": "run-009"})
    assert [s["run"] for s in res["sealed"]] == [gone["run_id"]]
    assert {o["run"] for o in res["open"]} == {live["run_id"], far["run_id"]}
    man = r.load_manifest(gone["path"])
    assert man["run_uid"] == gone["run_uid"] and man["metadata"]["status"] == "incomplete"
    assert man["metadata"]["seal_reason"] == "interrupted" and man["metadata"]["sealed_by"] == {"run": "run-009"}
    assert "is gone" in man["metadata"]["sealed_because"] and r.verify(gone["path"])["ok"]
    # the other controller's run: abandoned once its owner's lease has run out, not before
    later = r.seal_interrupted(os.path.join(root, "case1"), "0.1.0", {"run": "run-010"}, now=r.time_now() + 7200)
    assert [s["run"] for s in later["sealed"]] == [far["run_id"]]
    assert "lease ran out" in later["sealed"][0]["why"] and not r.is_frozen(live["path"])


def test_a_run_folder_without_open_json_is_sealed_only_when_it_has_not_changed_for_a_while(root):
    legacy = os.path.join(root, "case1", "run-001")
    os.makedirs(legacy)
    res = r.seal_interrupted(os.path.join(root, "case1"), "0.1.0", {"run": "run-002"})
    assert res["sealed"] == [] and "changed 0 s ago" in res["open"][0]["why"]
    res = r.seal_interrupted(os.path.join(root, "case1"), "0.1.0", {"run": "run-002"},
                             now=r.time_now() + r.LEGACY_OPEN_GRACE + 1)
    assert [s["run"] for s in res["sealed"]] == ["run-001"] and "run_uid" not in r.load_manifest(legacy)


def test_prunable_runs_are_frozen_verified_old_and_have_a_run_uid(root):
    old = r.create_run(root, "case1", owner=r.controller_owner(root))
    r.write_part(old["path"], "notes.md", content="n\n")
    r.freeze(old["path"], "0.1.0", metadata={"status": "ok"})
    fresh = r.create_run(root, "case2", owner=r.controller_owner(root))
    r.freeze(fresh["path"], "0.1.0")
    still_open = r.create_run(root, "case2", owner=r.controller_owner(root))
    tampered = r.create_run(root, "case1", owner=r.controller_owner(root))
    r.write_part(tampered["path"], "notes.md", content="n\n")
    r.freeze(tampered["path"], "0.1.0")
    os.chmod(os.path.join(tampered["path"], "notes.md"), 0o644)
    with open(os.path.join(tampered["path"], "notes.md"), "w") as f:
        f.write("changed\n")
    later = r.time_now() + 8 * 86400
    res = r.prunable_runs(root, 7 * 86400, now=later)
    assert set(res["run_uids"]) == {old["run_uid"], fresh["run_uid"]}
    assert still_open["run_uid"] not in res["run_uids"]
    assert [n["run"] for n in res["not_verified"]] == ["case1/%s" % tampered["run_id"]]
    # not old enough yet: nothing
    assert r.prunable_runs(root, 7 * 86400)["run_uids"] == []


def test_prune_split_removes_only_the_folders_of_prunable_runs():
    found = ["/var/tmp/repro-vllm/runs/0123456789abcdef", "/var/tmp/repro-vllm/runs/fedcba9876543210/",
             "/var/tmp/repro-vllm/runs/0123456789abcdef0", "/var/tmp/repro-vllm/runs/x0123456789abcdef"]
    split = r.prune_split(found, ["0123456789abcdef", "fedcba9876543210", "1111111111111111"])
    assert split == {"remove": found[:2], "removed": ["0123456789abcdef", "fedcba9876543210"], "withheld": [],
                     "kept": 2}
    assert r.prune_split(found, []) == {"remove": [], "removed": [], "withheld": [], "kept": 4}
    assert r.prune_split([], ["0123456789abcdef"]) == {"remove": [], "removed": [], "withheld": [], "kept": 0}


def test_prune_split_withholds_the_only_copy_of_a_hosts_files_unless_the_run_is_named():
    found = ["/var/tmp/repro-vllm/runs/0123456789abcdef", "/var/tmp/repro-vllm/runs/fedcba9876543210"]
    uids = ["0123456789abcdef", "fedcba9876543210"]
    lacking = [{"run": "c1/run-003", "run_uid": "0123456789abcdef", "hosts": ["node01"]}]
    split = r.prune_split(found, uids, host="node01", lacking=lacking)
    assert split["remove"] == found[1:] and split["kept"] == 1
    assert split["withheld"][0]["path"] == found[0] and "no files of node01" in split["withheld"][0]["why"]
    # another host of the run has its files on the controller: its folder goes
    assert r.prune_split(found, uids, host="node02", lacking=lacking)["remove"] == found
    # named by run_uid or by case/run
    for name in ("0123456789abcdef", "c1/run-003"):
        assert r.prune_split(found, uids, host="node01", lacking=lacking, allowed=[name])["remove"] == found


def test_prunable_runs_name_the_hosts_a_copy_lacks(root):
    run = r.create_run(root, "case1", owner=r.controller_owner(root))
    r.write_part(run["path"], "hosts/node02/server.log", content="x\n")
    r.freeze(run["path"], "0.1.0", metadata={"status": "incomplete", "hosts": ["node01", "node02"]})
    whole = r.create_run(root, "case1", owner=r.controller_owner(root))
    r.write_part(whole["path"], "hosts/node01/server.log", content="x\n")
    r.freeze(whole["path"], "0.1.0", metadata={"status": "ok", "hosts": ["node01"]})
    res = r.prunable_runs(root, 0, now=r.time_now() + 5)
    assert set(res["run_uids"]) == {run["run_uid"], whole["run_uid"]}
    assert res["lacking"] == [{"run": "case1/%s" % run["run_id"], "run_uid": run["run_uid"], "hosts": ["node01"]}]


def test_interrupted_runs_are_open_runs_whose_play_is_gone(root):
    gone = r.create_run(root, "case1", owner=dict(r.controller_owner(root), pid=2 ** 22 + 7, pid_start_ticks=1),
                        identity={"hosts": ["node01", "node02"], "purpose": "reproduction"})
    with open(os.path.join(gone["path"], r.INTERRUPTED_FILE), "w") as fh:
        fh.write('{"at": 1234.5, "signal": "SIGINT"}\n')
    live = r.create_run(root, "case1", owner=r.controller_owner(root))
    done = r.create_run(root, "case2", owner=dict(r.controller_owner(root), pid=2 ** 22 + 7, pid_start_ticks=1))
    r.freeze(done["path"], "0.1.0")
    found = r.interrupted_runs(root)
    assert [(f["case_id"], f["run"]) for f in found] == [("case1", gone["run_id"])]
    assert found[0]["hosts"] == ["node01", "node02"] and found[0]["run_uid"] == gone["run_uid"]
    assert found[0]["interrupted_at"] == 1234.5 and "is gone" in found[0]["why"]
    assert found[0]["sealed_because"] == "its play's process is gone"
    assert r.sealed_because("its owner's lease ran out at 2026-01-01T00:00:00Z (controller c)") == \
        "its owner's lease ran out"
    assert live["run_id"] not in [f["run"] for f in found]
    assert r.interrupted_runs(os.path.join(root, "nothing-here")) == []


def test_salvage_plan_brings_this_hosts_files_and_names_those_after_the_interrupt():
    run_dir = "/var/tmp/repro-vllm/runs/0123456789abcdef"
    found = [{"item": {"run_uid": "0123456789abcdef", "interrupted_at": 100.0, "run": "run-003", "case_id": "c",
                       "why": "its play (pid 7 on ctl) is gone"},
              "files": [{"path": run_dir + "/hosts/node01/logs/server.log", "mtime": 150.0},
                        {"path": run_dir + "/hosts/node01/logs/memory.jsonl", "mtime": 90.0},
                        {"path": run_dir + "/.state/node01/vllm_server.state.json.lease-expired", "mtime": 101.0},
                        {"path": run_dir + "/hosts/node02/logs/server.log", "mtime": 150.0}]}]
    stops = [{"cleaned": [{"line": "server of c/run-003 ... - stop asked: its supervisor had stopped it at ..."}]}]
    plan = r.salvage_plan(found, stops, "/var/tmp/repro-vllm/", "node01")
    assert sorted(plan[0]["parts"]) == ["logs/server.log", "memory.jsonl", "state/vllm_server.state.json.lease-expired"]
    assert {"src": run_dir + "/hosts/node01/logs/memory.jsonl", "part": "memory.jsonl"} in plan[0]["files"]
    assert sorted(plan[0]["after_interrupt"]) == ["logs/server.log", "state/vllm_server.state.json.lease-expired"]
    assert plan[0]["remove"] == [run_dir + "/hosts/node01", run_dir + "/.state/node01"]
    assert plan[0]["server"] == [stops[0]["cleaned"][0]["line"]]
    assert plan[0]["line"] == (
        "stop | node01 | c/run-003 (run_uid 0123456789abcdef, its play (pid 7 on ctl) is gone) | server: %s | brought "
        "into the run: %s; changed after the last write of the play (the interrupt): %s" % (
            plan[0]["server"][0], ", ".join(plan[0]["parts"]), ", ".join(plan[0]["after_interrupt"])))
    assert r.salvage_plan([dict(found[0], files=[])], stops, "/r", "node01")[0]["line"].endswith(
        "| nothing of it on this host")
    # nothing of the run's lease on the host: said so
    assert "no lease of it" in r.salvage_plan(found, [{"cleaned": []}], "/r", "node01")[0]["server"][0]
    # no lease left, but the supervisor's record of the stop is among the files: stopped before this play, said so
    earlier = r.salvage_plan(found, [{"cleaned": []}], "/var/tmp/repro-vllm/", "node01")[0]["server"]
    assert earlier == ["not live: stopped before this play when its lease ended (the reason is in "
                       "state/vllm_server.state.json.lease-expired)"]


def test_stop_plan_seals_the_runs_whose_every_host_is_a_target_and_says_so():
    runs = [{"case_id": "c", "run": "run-003", "hosts": ["node01", "node02"]},
            {"case_id": "c", "run": "run-004", "hosts": ["node02"]}]
    plan = r.stop_plan(runs, ["node01"], "node01")
    assert plan["mine"] == runs[:1] and plan["seal"] == []
    assert plan["lines"] == [
        "stop | controller | sealed c/run-003 as incomplete (interrupted) with the files of node01, node02: NOT sealed - "
        "its hosts node02 are not targets here; run stop.yml on them",
        "stop | controller | sealed c/run-004 as incomplete (interrupted) with the files of node02: NOT sealed - its "
        "hosts node02 are not targets here; run stop.yml on them"]
    both = r.stop_plan(runs, ["node01", "node02"], "node02")
    assert both["mine"] == runs and both["seal"] == runs
    assert both["lines"][1] == "stop | controller | sealed c/run-004 as incomplete (interrupted) with the files of node02"
    assert r.stop_plan([], ["node01"], "node01") == {"mine": [], "seal": [], "lines": []}
