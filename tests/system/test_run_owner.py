# -*- coding: utf-8 -*-
"""Two plays of one case on one host, on the REAL CPU vLLM: two operators (or two AWX jobs), each with its own records
root and port, run reproduce.yml for the same case 10 s apart. Both open the same run number in their own records
roots; each run has its own run_uid, so neither shares a host folder, a state file or a lease with the other, neither
stops the other's server, and both end frozen with their real (healthy) verdicts. A third play given the first one's
port while its server is leased is refused (a frozen run with status refused) naming the first run."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time

from conftest import COLLECTIONS, ROOT, free_port

from ansible_collections.repro.vllm.plugins.module_utils.record import _record

from test_reproduce_cancel import _drain, _start
from test_reproduce_localhost import _live_servers

CASE = "two-plays"
LEASES = "/var/tmp/repro-vllm/.leases"    # the host-wide lease folder (the role default; one per host)


def _leased_run_on(port, timeout):
    """The run_uid whose lease on this host holds ``port`` (an attempt's server is starting or up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in glob.glob(os.path.join(LEASES, "*.json")):
            try:
                with open(path) as f:
                    data = json.load(f)
            except (OSError, ValueError):
                continue
            if data.get("case_id") == CASE and any(e.get("port") == port for e in data.get("servers", {}).values()):
                return data["run_uid"]
        time.sleep(0.5)
    raise AssertionError("no lease holds port %d within %ss: %s" % (port, timeout, os.listdir(LEASES)))


def _attempt_run(work):
    """The one attempt of a play (the run with an outcome.json; the summary run has none)."""
    runs = [p for p in (work / "records" / CASE).iterdir() if (p / "outcome.json").is_file()]
    assert len(runs) == 1, sorted(p.name for p in (work / "records" / CASE).iterdir())
    return runs[0]


def test_two_plays_of_one_case_on_one_host_never_touch_each_other(real_vllm, tmp_path):
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir()
    b_dir.mkdir()
    port_a, port_b = free_port(), free_port()
    while port_b == port_a:
        port_b = free_port()
    c_dir = tmp_path / "c"
    c_dir.mkdir()
    a, a_lines = _start(a_dir, port_a, CASE, lease=120)
    time.sleep(10)
    b, b_lines = _start(b_dir, port_b, CASE, lease=120)
    # a third play of the case is given a's port while a's server is leased on the host: it is refused, naming a
    a_uid = _leased_run_on(port_a, timeout=300)
    c = _start(c_dir, port_a, CASE, lease=120)
    out = {}
    for name, proc, lines in (("c", c[0], c[1]), ("a", a, a_lines), ("b", b, b_lines)):
        seen = []
        _drain(proc, lines, seen, timeout=900)
        out[name] = seen
    c_text = "\n".join(out["c"])
    refusal = [line for line in out["c"] if "REFUSED" in line]
    assert refusal and a_uid in refusal[0] and "%s/" % CASE in refusal[0] and "stop.yml" in refusal[0], c_text
    c_run = _attempt_run(c_dir)
    assert json.loads((c_run / "manifest.json").read_text())["metadata"]["status"] == "refused"
    assert json.loads((c_run / "outcome.json").read_text())["stage"] is None
    for name, proc in (("a", a), ("b", b)):
        text = "\n".join(out[name])
        assert proc.returncode == 0, text
        # neither cleaned a server of this case (another test's abandoned server on the host may be cleaned)
        assert "cleaned: server of %s/" % CASE not in text and "REFUSED" not in text and "FAILED" not in text, text
    uids = {}
    for name, work in (("a", a_dir), ("b", b_dir)):
        run = _attempt_run(work)
        manifest = json.loads((run / "manifest.json").read_text())
        assert manifest["schema_version"] == 3 and manifest["metadata"]["status"] == "ok", manifest["metadata"]
        outcome = json.loads((run / "outcome.json").read_text())
        assert outcome["ok"] is True and outcome["stage"] == "none", outcome["summary"]
        server = json.loads((run / "hosts" / "localhost" / "server.json").read_text())
        assert [c for c in server["leftovers_cleaned"] if c["case_id"] == CASE] == [] and server["refusal"] is None
        uids[name] = manifest["run_uid"]
        assert server["run_uid"] == uids[name]
        # the host folder of the run is gone once the controller holds its verified copy
        assert not (work / "remote" / "runs" / uids[name]).exists()
    assert uids["a"] != uids["b"]
    # b started while a's server was up: b saw it as a live server of another run, and left it alone
    seen_by_b = json.loads((_attempt_run(b_dir) / "hosts" / "localhost" / "server.json").read_text())
    assert uids["a"] in [s["run_uid"] for s in seen_by_b["other_live_runs"]]
    assert _live_servers(port_a) == [] and _live_servers(port_b) == []


def test_prune_removes_host_folders_of_old_verified_runs_only(tmp_path):
    """prune.yml on localhost: the host folder of a run this controller holds frozen and verified goes; the folder of
    an open run, of a run that does not verify and of a run it does not hold stay."""
    records, remote = tmp_path / "records", tmp_path / "remote" / "runs"
    records.mkdir()
    done = _record.create_run(str(records), "prune-case")
    _record.write_part(done["path"], "notes.md", content="n\n")
    _record.freeze(done["path"], "0.1.0", metadata={"status": "ok"})
    still_open = _record.create_run(str(records), "prune-case")
    for uid in (done["run_uid"], still_open["run_uid"], "0123456789abcdef"):
        (remote / uid / "hosts" / "localhost").mkdir(parents=True)
    extra = {"repro_vllm_records_root": str(records), "repro_vllm_remote_root": str(tmp_path / "remote"),
             "repro_vllm_prune_older_than": 0}
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS)
    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                          os.path.join(ROOT, "inventories", "localhost"), os.path.join(ROOT, "playbooks", "prune.yml"),
                          "-e", json.dumps(extra)], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=300, check=False)
    text = res.stdout.decode()
    assert res.returncode == 0, text
    assert sorted(p.name for p in remote.iterdir()) == sorted([still_open["run_uid"], "0123456789abcdef"]), text
    assert "1 run folder(s) removed: %s" % done["run_uid"] in text
