# -*- coding: utf-8 -*-
"""run_record's action does a controller-side task in its own process (local connection, no become): the same
argument checks, files, results and errors as the module run in its own Python, as Ansible runs it on a node."""
from __future__ import annotations

import json
import os
import types

import pytest
from ansible.parsing.dataloader import DataLoader

from ansible_collections.repro.vllm.plugins.action import run_record as action
from ansible_collections.repro.vllm.plugins.module_utils.record import _record
from ansible_collections.repro.vllm.plugins.modules import run_record as module
from ansible_collections.repro.vllm.tests.unit.plugins.modules import module_process

# keys only the module process adds: its invocation, and AnsibleModule's stat of a returned "path"
_MODULE_ONLY = {"invocation", "uid", "gid", "owner", "group", "mode", "state", "secontext"}


def _here(args, check_mode=False):
    act = action.ActionModule.__new__(action.ActionModule)
    act._task = types.SimpleNamespace(check_mode=check_mode)
    return act._run_here(dict(args))


def _there(tmp_path, args, check_mode=False):
    res = module_process.run_module(module, tmp_path, check_mode, **dict(args))
    return {k: v for k, v in res.items() if k not in _MODULE_ONLY and not (k == "size" and "path" in res)}


def _same(a, b, root_a, root_b):
    """Equal once the two records roots are named alike (and the freeze time, which differs by a second)."""
    def norm(res):
        text = json.dumps(res, sort_keys=True).replace(root_b, root_a).replace("(basic.py)", "(repro.vllm.run_record)")
        data = json.loads(text)
        # a run's own id is random and its owner is the process that opened it: equal in shape, not in value
        data.pop("run_uid", None)
        data.pop("owner", None)
        # the sha256 of the manifest file: of its created time and run_uid too
        assert len(data.pop("manifest_sha256", "") or "") in (0, 64)
        if isinstance(data.get("manifest"), dict):
            data["manifest"].pop("created", None)
            assert len(data["manifest"].pop("run_uid", "")) in (0, 16)
            for key in ("run_uid", "owner", "opened"):
                data["manifest"].get("metadata", {}).pop(key, None)
        return data
    assert norm(a) == norm(b)


def test_every_state_gives_what_the_module_gives(tmp_path):
    roots = {}
    for side in ("here", "there"):
        roots[side] = str(tmp_path / side / "records")
        os.makedirs(os.path.dirname(roots[side]))
    work = tmp_path / "work"
    work.mkdir()
    log = tmp_path / "server.log"
    log.write_text("INFO Started server process\n")

    def both(check_mode=False, **args):
        a = _here(dict(args, **({"root": roots["here"]} if "root" in args else {})), check_mode)
        targs = dict(args)
        if "root" in targs:
            targs["root"] = roots["there"]
        if "path" in targs:
            targs["path"] = targs["path"].replace(roots["here"], roots["there"])
        b = _there(work, targs, check_mode)
        _same(a, b, roots["here"], roots["there"])
        return a

    assert both(check_mode=True, state="create", root="x", case_id="kimi")["run_id"] == "run-001"
    run = both(state="create", root="x", case_id="kimi")["path"]
    assert run == os.path.join(roots["here"], "kimi", "run-001")
    w = both(state="write", path=run, part="hosts/node1/fingerprint.json", json={"driver": "580.159.04"})
    assert w["changed"] and json.load(open(w["dest"])) == {"driver": "580.159.04"}
    assert both(state="write", path=run, part="hosts/node1/fingerprint.json", json={"driver": "580.159.04"})["changed"] is False
    both(state="write", path=run, part="logs/server.log", src=str(log))
    both(state="write", path=run, part="notes.md", content="expected: ready\n")
    # several parts in one task (the service role's service.json and logs), in order; written again: no change
    parts = [{"part": "hosts/node1/service.json", "json": {"status": "ok"}},
             {"part": "hosts/node1/logs/service-current.log", "content": "started\n"}]
    many = both(state="write", path=run, parts=parts)
    assert many["changed"] and [w["part"] for w in many["written"]] == [p["part"] for p in parts]
    assert both(state="write", path=run, parts=parts)["changed"] is False
    assert "part" in both(state="write", path=run, content="x")["msg"]
    # refusals: the same messages both ways
    assert "mutually exclusive" in both(state="write", path=run, part="a", content="x", json={"a": 1})["msg"]
    assert "content" in both(state="write", path=run, part="a")["msg"]
    assert "inside the run" in both(state="write", path=run, part="../../x", content="x")["msg"]
    assert "Unsupported parameters" in both(state="verify", path=run, bogus=1)["msg"]
    assert "not a frozen record" in both(state="verify", path=run)["msg"]
    # a close in one task: the last parts, the freeze and the check of what was frozen
    assert "content" in both(state="freeze", path=run, parts=[{"part": "fleet.json"}])["msg"]
    assert "mutually exclusive" in both(state="freeze", path=run, parts=[{"part": "a", "content": "x", "json": {}}])["msg"]
    assert not os.path.exists(os.path.join(run, "manifest.json"))
    fr = both(state="freeze", path=run, collection_version="0.1.0", metadata={"play": "fingerprint"}, verify=True,
              parts=[{"part": "fleet.json", "json": {"hosts": [{"host": "node1", "status": "ok"}]}},
                     {"part": "run.md", "content": "# run\n"}])
    assert fr["changed"] and [f["path"] for f in fr["manifest"]["files"]] == [
        "fleet.json", "hosts/node1/fingerprint.json", "hosts/node1/logs/service-current.log", "hosts/node1/service.json",
        "logs/server.log", "notes.md", "run.md"]
    assert fr["ok"] is True and fr["checked"] == 7 and [w["part"] for w in fr["written"]] == ["fleet.json", "run.md"]
    assert both(state="verify", path=run)["ok"] is True
    assert "frozen" in both(state="write", path=run, part="late.txt", content="x")["msg"]
    for side in ("here", "there"):
        target = run.replace(roots["here"], roots[side])
        os.chmod(target, 0o755)
        with open(os.path.join(target, "extra.txt"), "w") as f:
            f.write("x")
    bad = both(state="verify", path=run)
    assert bad["failed"] and "not in the manifest: extra.txt" in bad["msg"]
    assert both(state="verify", path=run, fail_on_mismatch=False)["unexpected"] == ["extra.txt"]


def test_only_a_local_connection_without_become_runs_here():
    act = action.ActionModule.__new__(action.ActionModule)
    act._connection = types.SimpleNamespace(transport="local")
    act._play_context = types.SimpleNamespace(become=False)
    assert act._in_process()
    act._play_context = types.SimpleNamespace(become=True)
    assert not act._in_process()
    act._connection = types.SimpleNamespace(transport="ssh")
    act._play_context = types.SimpleNamespace(become=False)
    assert not act._in_process()


@pytest.mark.parametrize("check_mode", [True, False])
def test_check_mode_touches_nothing_here(tmp_path, check_mode):
    root = str(tmp_path / "records")
    res = _here({"state": "create", "root": root, "case_id": "c"}, check_mode)
    assert res["run_id"] == "run-001" and os.path.isdir(res["path"]) is (not check_mode)


def _action_run(args, task_vars=None, check_mode=False):
    """The whole action as a task on the controller runs it (a local connection, no become)."""
    act = action.ActionModule.__new__(action.ActionModule)
    act._task = types.SimpleNamespace(args=dict(args), check_mode=check_mode, async_val=0,
                                      action="repro.vllm.run_record")
    act._connection = types.SimpleNamespace(transport="local", _shell=types.SimpleNamespace(tmpdir="/nonexistent"))
    act._play_context = types.SimpleNamespace(become=False)
    act._loader = DataLoader()
    return act.run(task_vars=task_vars or {})


def test_create_hands_back_the_runs_identity_and_refuses_a_pattern_that_matched_no_host(tmp_path):
    # the record role registers this result as repro_vllm_run: everything a later play reads is in it
    root = str(tmp_path / "records")
    args = {"state": "create", "root": root, "case_id": "c", "hosts": ["node01", "node02"], "hosts_pattern": "gpu",
            "purpose": "audit", "profile": "kimi-k3-h200"}
    inventory = {"groups": {"all": ["node01", "node02"], "ungrouped": [], "gpu": ["node01", "node02"]},
                 "ansible_play_hosts_all": ["node01", "node02", "localhost"]}
    res = _action_run(args, inventory)
    assert not res.get("failed"), res
    assert {k: res[k] for k in ("path", "run_id", "case_id", "hosts", "purpose", "profile", "records_root")} == {
        "path": os.path.join(root, "c", "run-001"), "run_id": "run-001", "case_id": "c",
        "hosts": ["node01", "node02"], "purpose": "audit", "profile": {"name": "kimi-k3-h200", "source": "named"},
        "records_root": root}
    assert res["collection_version"] not in ("", "unknown")
    # a module run on a node (its own Python) hands back the same identity
    (tmp_path / "work").mkdir()
    there = _there(tmp_path / "work", dict(args, root=str(tmp_path / "there")))
    assert {k: there[k] for k in ("hosts", "purpose")} == {k: args[k] for k in ("hosts", "purpose")}
    assert there["profile"] == res["profile"]
    # no host matched: nothing is created, anywhere; the controller names the pattern and the --limit around it
    empty = {"groups": {"all": ["node01", "node02"], "gpu": []}, "ansible_play_hosts_all": ["localhost"]}
    for task_vars, limit in ((empty, ""), (dict(empty, ansible_limit="node09"), " within --limit node09")):
        bad = _action_run(dict(args, root=str(tmp_path / "none"), hosts=[]), task_vars)
        expected = "no host matches the target pattern 'gpu'%s; no run was opened" % limit
        assert bad["failed"] and bad["msg"].startswith(expected), bad
        assert "ansible-inventory" in bad["msg"] and not os.path.exists(str(tmp_path / "none"))
    there = _there(tmp_path / "work", dict(args, root=str(tmp_path / "none"), hosts=[]))
    assert there["failed"] and "no host matches the target pattern 'gpu'" in there["msg"]
    assert not os.path.exists(str(tmp_path / "none"))
    # a run of the controller alone names no pattern and may have no host
    assert _action_run(dict(args, root=str(tmp_path / "ctl"), hosts=[], hosts_pattern=None))["run_id"] == "run-001"


def test_create_refuses_a_named_host_that_matches_nothing_before_anything_is_created(tmp_path):
    # -e repro_vllm_targets=ok1,ok2,old: two hosts in the play, "old" nowhere in the inventory
    groups = {"all": ["ok1", "ok2", "node03"], "ungrouped": [], "fleet": ["ok1", "ok2", "node03"]}
    args = {"state": "create", "root": str(tmp_path / "records"), "case_id": "c", "hosts": ["ok1", "ok2"],
            "hosts_pattern": "ok1,ok2,old", "purpose": "audit"}
    bad = _action_run(args, {"groups": groups, "ansible_play_hosts_all": ["ok1", "ok2", "localhost"]})
    assert bad["failed"] and bad["not_matched"] == [{"name": "old", "reason": "not_in_inventory"}], bad
    assert bad["msg"].startswith("repro_vllm_targets names 1 host(s) that match nothing: old (not a host or group"), bad
    assert bad["hosts"] == ["ok1", "ok2"] and not os.path.exists(str(tmp_path / "records"))
    # a host of the inventory that --limit leaves out: named, with the limit
    limited = _action_run(dict(args, hosts_pattern="ok1,ok2,node03"),
                          {"groups": groups, "ansible_play_hosts_all": ["ok1", "ok2", "localhost"],
                           "ansible_limit": "ok1,ok2,localhost"})
    assert limited["not_matched"] == [{"name": "node03", "reason": "outside_limit"}], limited
    assert "node03 (in the inventory, left out by --limit ok1,ok2,localhost)" in limited["msg"]
    assert "within --limit ok1,ok2,localhost" in limited["msg"] and not os.path.exists(str(tmp_path / "records"))
    # a group, a wildcard, an exclusion and the implicit localhost name no missing host: the run opens
    fine = _action_run(dict(args, hosts_pattern="fleet,ok*,!old,localhost", hosts=["ok1", "ok2", "node03"]),
                       {"groups": groups, "ansible_play_hosts_all": ["ok1", "ok2", "node03", "localhost"]})
    assert not fine.get("failed") and fine["run_id"] == "run-001", fine
    # nothing matched at all, and a name is nowhere: the no-host message, and the name
    none = _action_run(dict(args, root=str(tmp_path / "none"), hosts=[], hosts_pattern="gpu_typo"),
                       {"groups": groups, "ansible_play_hosts_all": ["localhost"]})
    assert none["msg"].startswith("no host matches the target pattern 'gpu_typo'; no run was opened")
    assert none["msg"].endswith("; named there and matching nothing: gpu_typo (not a host or group of the inventory)")
    assert none["not_matched"] == [{"name": "gpu_typo", "reason": "not_in_inventory"}]
    assert not os.path.exists(str(tmp_path / "none"))


def test_create_makes_the_hosts_of_the_targets_as_the_plays_pattern_reads_them(tmp_path):
    # repro_vllm_targets as given (a comma list, a YAML list, groups, wildcards, exclusions): the action makes the
    # pattern and the play's hosts it matches, in the pattern's order, as the open's Jinja did with inventory_hostnames
    groups = {"all": ["ok1", "ok2", "node03", "old"], "ungrouped": [], "fleet": ["ok1", "ok2", "node03"],
              "r570": ["old"]}
    play = {"groups": groups, "ansible_play_hosts_all": ["ok1", "ok2", "node03", "old", "localhost"]}
    base = {"state": "create", "case_id": "c", "purpose": "audit"}
    cases = [("ok2,ok1", "ok2,ok1", ["ok2", "ok1"]), (["fleet", "!node03"], "fleet,!node03", ["ok1", "ok2"]),
             ("ok*:r570", "ok*,r570", ["ok1", "ok2", "old"]), ("fleet:&ok*", "fleet,&ok*", ["ok1", "ok2"]),
             ("all", "all", ["ok1", "ok2", "node03", "old"]),
             # an exclusion of a name the inventory does not have excludes nothing (and is no warning)
             ("fleet,!gone", "fleet,!gone", ["ok1", "ok2", "node03"])]
    for n, (targets, pattern, hosts) in enumerate(cases):
        res = _action_run(dict(base, root=str(tmp_path / ("r%d" % n)), targets=targets), play)
        assert not res.get("failed") and res["hosts"] == hosts, (targets, res)
        assert res["hosts_pattern"] == pattern, res
        with open(os.path.join(res["path"], _record.OPEN_FILE)) as fh:
            assert json.load(fh)["run"]["hosts"] == hosts
    # a host of the targets that --limit left out of the play is not expected; a named host that matches nothing
    # still refuses the run before anything is created, naming it
    limited = _action_run(dict(base, root=str(tmp_path / "lim"), targets="ok1,ok2"),
                          dict(play, ansible_play_hosts_all=["ok1", "localhost"], ansible_limit="ok1,localhost"))
    assert limited["failed"] and limited["not_matched"] == [{"name": "ok2", "reason": "outside_limit"}], limited
    missing = _action_run(dict(base, root=str(tmp_path / "miss"), targets=["ok1", "gone"]), play)
    assert missing["failed"] and missing.get("not_matched") == [{"name": "gone", "reason": "not_in_inventory"}], missing
    assert missing["hosts"] == ["ok1"]
    # a missing name with an exclusion: refused, and the exclusion is not read as "every host but" on its own
    alone = _action_run(dict(base, root=str(tmp_path / "alone"), targets="gone,!ok1"), play)
    assert alone["failed"] and alone["hosts"] == [] and alone["not_matched"] == [{"name": "gone", "reason": "not_in_inventory"}]
    assert not [p for p in ("lim", "miss", "alone") if os.path.exists(str(tmp_path / p))]
    both = _action_run(dict(base, root=str(tmp_path / "both"), targets="ok1", hosts=["ok1"]), play)
    assert both["failed"] and "not both" in both["msg"]


def _compat_result(tmp_path, **args):
    """The registered result of the real compatibility action (state=profile), as a play hands it to the open."""
    from ansible_collections.repro.vllm.plugins.action import compatibility as compat_action
    act = compat_action.ActionModule.__new__(compat_action.ActionModule)
    act._task = types.SimpleNamespace(args=dict(state="profile", **args), check_mode=False, async_val=0,
                                      action="repro.vllm.compatibility")
    act._connection = types.SimpleNamespace(transport="local", _shell=types.SimpleNamespace(tmpdir="/nonexistent"))
    act._play_context = types.SimpleNamespace(become=False)
    act._templar = None
    act._loader = None
    return act.run(task_vars={})


@pytest.mark.parametrize("given, name, source", [
    ({"profile": "kimi-k3-h200"}, "kimi-k3-h200", "shipped"),
    ({"profile_file": "FILE"}, "my-h200-fleet", "file"),
    ({"enabled": False}, None, "not judged"),
    (None, None, "not judged"),
])
def test_the_profile_judged_at_the_open_is_the_one_every_freeze_writes(tmp_path, given, name, source):
    # a profile file's run was once frozen as "cpu-smoke" (the role default): the manifest now says what was judged,
    # whatever the close's metadata claims
    prof = tmp_path / "fleet.yml"
    prof.write_text("name: my-h200-fleet\ngpu_models: [H200]\ngpu_count_min: 1\nimage_cuda: null\n")
    if given is None:
        judged = None
    else:
        judged = _compat_result(tmp_path, **{k: (str(prof) if v == "FILE" else v) for k, v in given.items()})
        assert judged["judged"] == {"name": name, "source": source}
    root = str(tmp_path / "records")
    args = {"state": "create", "root": root, "case_id": "c", "purpose": "fingerprint", "hosts": ["node01"]}
    if judged is not None:
        args["profile"] = judged
    opened = _action_run(args)
    assert opened["profile"] == {"name": name, "source": source}
    frozen = _action_run({"state": "freeze", "path": opened["path"], "status": "ok",
                          "metadata": {"case_id": "c", "profile": "cpu-smoke"}, "verify": True})
    assert frozen["ok"], frozen
    with open(os.path.join(opened["path"], "manifest.json")) as fh:
        manifest = json.load(fh)
    meta = manifest["metadata"]
    assert (meta["profile"], meta["profile_source"]) == (name, source)
    assert meta["purpose"] == "fingerprint" and meta["hosts"] == ["node01"] and meta["status"] == "ok"
    # the version the open took from galaxy.yml, though the freeze named none
    assert manifest["collection_version"] == opened["collection_version"] != "unknown"
    assert "records_root" not in meta and root not in json.dumps({k: v for k, v in meta.items() if k != "owner"})


def test_one_open_for_every_kind_of_run_its_whole_identity_handed_back(tmp_path, monkeypatch):
    """run_record state=create kind=...: the kind decides the run's hosts, whether it lives on them, its purpose and
    whether the console announces it (_runtask.OPEN_KINDS); the records root is ``records`` when none is given,
    resolved against the working directory, and handed back with the rest of the run's identity."""
    monkeypatch.chdir(tmp_path)
    groups = {"all": ["node1", "node2"], "ungrouped": ["node1", "node2"]}
    play = {"groups": groups, "ansible_play_hosts_all": ["node1", "node2"]}
    base = {"state": "create", "case_id": "c", "targets": "all", "remote_root": "/r", "lease_dir": "/r/.leases"}
    # an attempt: its nodes, its step's purpose, where it lives on them; the targets checked, no console line
    attempt = _action_run(dict(base, kind="attempt", hosts=["node2"], purpose="minimal_startup"), play)
    assert not attempt.get("failed"), attempt
    root = os.path.join(str(tmp_path), "records")
    assert (attempt["kind"], attempt["hosts"], attempt["purpose"], attempt["records_root"]) == (
        "attempt", ["node2"], "minimal_startup", root)
    assert attempt["path"] == os.path.join(root, "c", "run-001") and "hosts_pattern" not in attempt
    assert attempt["remote"]["run_dir"] == "/r/runs/%s" % attempt["run_uid"]
    assert attempt["remote"]["lease_file"] == "/r/.leases/%s.json" % attempt["run_uid"]
    assert attempt["owner"]["controller"] and attempt["console"] == []
    with open(os.path.join(attempt["path"], "open.json")) as fh:
        assert json.load(fh)["run"]["hosts"] == ["node2"]
    # the same targets naming a host that matches nothing refuse the attempt before anything is created
    bad = _action_run(dict(base, kind="attempt", hosts=["node2"], root=str(tmp_path / "bad"), targets="node2,old"),
                      play)
    assert bad["failed"] and bad["not_matched"] == [{"name": "old", "reason": "not_in_inventory"}], bad
    assert not os.path.exists(str(tmp_path / "bad"))
    # a collective: the default remote root; no lease when none is given
    coll = _action_run(dict(base, kind="collective", hosts=["node1", "node2"], remote_root=None, lease_dir=None), play)
    assert (coll["purpose"], coll["hosts"]) == ("collective", ["node1", "node2"]), coll
    assert coll["remote"]["run_dir"].startswith("/var/tmp/repro-vllm/runs/") and "lease_file" not in coll["remote"]
    # a fingerprint: the targets' hosts, announced, nothing on the hosts
    fp = _action_run(dict(base, kind="fingerprint"), play)
    assert (fp["hosts"], fp["purpose"], fp["hosts_pattern"]) == (["node1", "node2"], "fingerprint", "all"), fp
    assert "remote" not in fp and fp["console"][-1].startswith("record | fingerprint run run-003 of case c for 2 host(s)")
    # a summary: the controller's alone, whatever the targets say
    summary = _action_run(dict(base, kind="summary"), {})
    assert (summary["hosts"], summary["purpose"], summary["run_id"]) == ([], "summary", "run-004"), summary
    assert "remote" not in summary and summary["console"][-1].startswith("record | summary run run-004")
    # refused: a kind that is no kind of run, an attempt without its nodes
    assert "is not a kind of run" in _action_run(dict(base, kind="nosuch"), play)["msg"]
    assert "give hosts" in _action_run(dict(base, kind="attempt"), play)["msg"]
    assert not os.path.exists(os.path.join(root, "c", "run-005"))
