"""The ``run_record`` task: its argument spec and its dispatch, shared by the module (plugins/modules/run_record.py, on
any host) and its action (plugins/action/run_record.py, which runs it in the controller's own process when the task's
connection is local and nothing is become), so both ways give the same result. The record itself (create, write,
freeze, verify, the owner of an open run) is ``_record``; this file shapes the task around it: the kinds of run an
open makes, the declared inputs of a close, and what each state returns.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import os

from ansible_collections.repro.vllm.plugins.module_utils.record._record import (
    DEFAULT_OWNER_LEASE, DEFAULT_ROOT, RUN_STATUSES, RecordError, controller_owner, create_run, describe_problems,
    freeze, interrupted_runs, judged_profile, plan_run, prunable_runs, seal_interrupted, time_now, verify, write_part)

# The kinds of run an open makes (run_record state=create kind=...), each closed by run_record state=close with the
# kind of close that names it (_runclose.CLOSE_OF). ``hosts``: where the run's hosts come from - ``targets`` (the
# hosts repro_vllm_targets matches in the play), ``given`` (the step's nodes; the targets are still checked) or
# ``none`` (a run of the controller alone); ``on_hosts``: the run lives on its hosts too (remote_root, lease_dir);
# ``announce``: the console says where the run is recorded.
OPEN_KINDS = {
    "fingerprint": {"hosts": "targets", "on_hosts": False, "announce": True},
    "audit": {"hosts": "targets", "on_hosts": False, "announce": True},
    "attempt": {"hosts": "given", "on_hosts": True, "announce": False},
    "collective": {"hosts": "given", "on_hosts": True, "announce": False},
    "summary": {"hosts": "none", "on_hosts": False, "announce": True},
    "diff": {"hosts": "none", "on_hosts": False, "announce": True},
    "replay": {"hosts": "none", "on_hosts": False, "announce": True},
}
DEFAULT_REMOTE_ROOT = "/var/tmp/repro-vllm"  # where a run lives on its hosts when the open names no remote_root


def open_args(args):
    """The arguments of a ``state=create kind=...`` shaped by its kind (OPEN_KINDS), as a new dict: the records root
    ``records`` when none is given, the purpose the kind's name when none is given, ``announce`` as the kind says,
    no ``targets`` for a run of the controller alone (it has no host), no ``remote_root``/``lease_dir`` for a run that
    does not live on its hosts (``/var/tmp/repro-vllm`` for one that does, when none is given), and ``nodes``: the
    hosts of a ``given`` kind, which replace the targets' hosts once the targets are checked. Raises RecordError for
    an unknown kind, or a ``given`` kind without its hosts."""
    out = dict(args)
    kind = out.get("kind")
    if kind is None:
        return out
    if kind not in OPEN_KINDS:
        raise RecordError("run_record state=create: kind %r is not a kind of run (one of %s)"
                          % (kind, ", ".join(sorted(OPEN_KINDS))))
    shape = OPEN_KINDS[kind]
    if out.get("root") in (None, ""):
        out["root"] = DEFAULT_ROOT
    if not out.get("purpose"):
        out["purpose"] = kind
    out.setdefault("announce", shape["announce"])
    if shape["hosts"] == "none":
        out.pop("targets", None)
        out["hosts"] = []
    elif shape["hosts"] == "given":
        if not out.get("hosts"):
            raise RecordError("run_record state=create kind=%s: give hosts (the nodes of the run)" % kind)
        out["nodes"] = list(out.pop("hosts"))
    if shape["on_hosts"]:
        if not out.get("remote_root"):
            out["remote_root"] = DEFAULT_REMOTE_ROOT
    else:
        out.pop("remote_root", None)
        out.pop("lease_dir", None)
    return out


# state=close: what the close decides with, declared (plugin_utils/close/_runclose.py: the keys each kind takes are the
# keyword arguments of its function there; an input left out is null and not handed on). ``reports`` is how what
# the hosts reported reaches the close: host -> its report, passed by the YAML that closes the run.
INPUTS_SPEC = dict(
    reports=dict(type="dict"),
    hosts=dict(type="list", elements="str"),
    nodes=dict(type="list", elements="str"),
    error=dict(type="str"),
    record_only=dict(type="raw"),
    violations_fail=dict(type="bool"),
    judge=dict(type="dict"),
    audit=dict(type="dict"),
    result=dict(type="dict"),
    step=dict(type="raw"),
    identity=dict(type="raw"),
    diff=dict(type="raw"),
    debug=dict(type="bool"),
    debug_env=dict(type="dict"),
    nproc_per_node=dict(type="int"),
    backend=dict(type="str"),
    master=dict(type="str"),
    timeout_s=dict(type="float"),
    host=dict(type="str"),
    task=dict(type="str"),
    decision=dict(type="dict"),
    made_from=dict(type="list", elements="str"),
    sections=dict(type="list", elements="str"),
)


ARGUMENT_SPEC = dict(
    state=dict(type="str", required=True, choices=["create", "write", "freeze", "verify", "prunable", "close",
                                                   "interrupted"]),
    # state=create: the kind of run opened (OPEN_KINDS); state=close: the kind of close (plugin_utils/close/_runclose.py)
    kind=dict(type="str", choices=sorted(set(OPEN_KINDS) | {"fleet", "decisions", "incomplete"})),
    inputs=dict(type="dict", default={}, options=INPUTS_SPEC),
    root=dict(type="path"),
    case_id=dict(type="str", default="default"),
    taken=dict(type="list", elements="str", default=[]),
    path=dict(type="path"),
    part=dict(type="str"),
    content=dict(type="str"),
    json=dict(type="raw"),
    src=dict(type="path"),
    overwrite=dict(type="bool", default=False),
    collection_version=dict(type="str", default="unknown"),
    metadata=dict(type="dict"),
    fail_on_mismatch=dict(type="bool", default=True),
    manifest_sha256=dict(type="str"),
    parts=dict(type="list", elements="dict", options=dict(
        part=dict(type="str", required=True),
        content=dict(type="str"),
        json=dict(type="raw"),
    ), mutually_exclusive=[("content", "json")], required_one_of=[("content", "json")]),
    verify=dict(type="bool", default=False),
    hosts=dict(type="list", elements="str"),
    hosts_pattern=dict(type="str"),
    # the action turns it into hosts and hosts_pattern before anything else (plugins/action/run_record.py)
    targets=dict(type="raw"),
    purpose=dict(type="str"),
    profile=dict(type="raw"),
    owner=dict(type="dict"),
    owner_lease=dict(type="float", default=float(DEFAULT_OWNER_LEASE)),
    seal_interrupted=dict(type="bool", default=False),
    status=dict(type="str", choices=list(RUN_STATUSES)),
    older_than=dict(type="float", default=7 * 86400.0),
    announce=dict(type="bool", default=False),
    remote_root=dict(type="str"),
    lease_dir=dict(type="str"),
    # create's gate and close's judge: done by the action on the controller (plugins/action/run_record.py)
    compatibility=dict(type="dict", options=dict(
        enabled=dict(type="bool"),
        profile=dict(type="str"),
        profile_file=dict(type="path"),
    )),
)
REQUIRED_IF = [
    ("state", "create", ("root",)),
    ("state", "write", ("path",)),
    ("state", "write", ("part", "parts"), True),
    ("state", "write", ("content", "json", "src", "parts"), True),
    ("state", "freeze", ("path",)),
    ("state", "close", ("path", "kind")),
    ("state", "verify", ("path",)),
    ("state", "prunable", ("root",)),
    ("state", "interrupted", ("root",)),
]
MUTUALLY_EXCLUSIVE = [("content", "json", "src")]
# what state=create hands back as given: with them the registered result is the run's whole identity
# (the record role registers it as repro_vllm_run on every host of the play)
IDENTITY_KEYS = ("hosts", "purpose")


def run_identity(p):
    """A create's RUN_IDENTITY from its validated parameters, the judged profile normalised by
    :func:`judged_profile` (a name, the compatibility action's registered result, or nothing = not judged)."""
    judged = judged_profile(p.get("profile"))
    return {"purpose": p.get("purpose"), "hosts": p.get("hosts"), "profile": judged["name"],
            "profile_source": judged["source"], "collection_version": p.get("collection_version"),
            "records_root": p.get("root")}


def remote_places(res, p, owner):
    """Where the run lives on every managed host, decided once at its open: ``run_dir``
    (``<remote_root>/runs/<run_uid>``; each host's part is ``hosts/<host>`` under it, its state ``.state/<host>``),
    the host-wide ``lease_file`` (``<lease_dir>/<run_uid>.json``) with the ``lease`` identity its servers are leased
    with, and the ``labels`` of its containers."""
    uid = res["run_uid"]  # plan_run (check mode) names one too
    controller = (owner or {}).get("controller")
    out = {"run_dir": "%s/runs/%s" % (p["remote_root"].rstrip("/"), uid),
           "lease": {"run_uid": uid, "case_id": res.get("case_id"), "run_id": res.get("run_id"),
                     "controller": controller, "started": round(time_now(), 3)},
           "labels": {"run_uid": uid, "case": res.get("case_id"), "run": res.get("run_id"), "controller": controller}}
    if p.get("lease_dir"):
        out["lease_file"] = "%s/%s.json" % (p["lease_dir"].rstrip("/"), uid)
    return out


def create_lines(res, p, check_mode=False):
    """What a create says on the console: each run of the case it sealed as incomplete, and (``announce``) where
    the new run is recorded, for which hosts, against which profile."""
    lines = ["record | sealed %s of case %s as incomplete (interrupted): %s" % (s["run"], res.get("case_id"), s["why"])
             for s in res.get("sealed") or []]
    if p.get("announce"):
        prof = res.get("profile") or {}
        lines.append("record | %s run %s of case %s for %d host(s): %s%s (profile %s; records root %s; repro.vllm %s)" % (
            p.get("purpose") or "a", res.get("run_id"), res.get("case_id"), len(p.get("hosts") or []), res.get("path"),
            " (check mode: not created)" if check_mode else "", "%s, %s" % (prof.get("name") or "none", prof.get("source")),
            res.get("records_root"), p.get("collection_version")))
    return lines


def no_hosts_message(pattern, limit=None):
    """Why no run was opened: the target pattern (and the --limit around it) matched no host."""
    return ("no host matches the target pattern '%s'%s; no run was opened. Check the pattern with "
            "'ansible-inventory -i <inventory> --graph' and set -e repro_vllm_targets=<group or host>"
            % (pattern, (" within --limit %s" % limit) if limit else ""))


def run_task(p, check_mode=False):
    """Do one run_record task with validated parameters ``p`` (ARGUMENT_SPEC).

    Returns ``(result, error)``: the task's result keys, and ``None`` or the message to fail the task with (the
    result still says what was found).  Never raises for a problem the user can fix.
    """
    state = p["state"]
    try:
        if state == "create":
            if p.get("hosts_pattern") is not None and not p.get("hosts"):
                return {}, no_hosts_message(p["hosts_pattern"])
            taken = p.get("taken") or []
            owner = p.get("owner") or controller_owner(p["root"])
            identity = run_identity(p)
            res = (plan_run(p["root"], p["case_id"], taken=taken) if check_mode
                   else create_run(p["root"], p["case_id"], taken=taken, owner=owner, owner_lease=p["owner_lease"],
                                   identity=identity))
            res = dict(res, changed=True, records_root=p["root"], owner=owner,
                       collection_version=p["collection_version"])
            if p.get("seal_interrupted"):
                # runs of this case an earlier play opened and never closed (killed, lost controller): frozen now as
                # incomplete, once their owner is provably gone; the new run is open and owned, never sealed here
                sealed = seal_interrupted(os.path.join(p["root"], p["case_id"]), p["collection_version"],
                                          {"run": res["run_id"], "run_uid": res["run_uid"]},
                                          check_mode=check_mode)
                res["sealed"] = sealed["sealed"]
                res["still_open"] = [o for o in sealed["open"] if o["run"] != res["run_id"]]
            res.update((k, p[k]) for k in IDENTITY_KEYS if p.get(k) is not None)
            res["profile"] = {"name": identity["profile"], "source": identity["profile_source"]}
            res["console"] = create_lines(res, p, check_mode)
            if p.get("remote_root"):
                res["remote"] = remote_places(res, p, owner)
            return res, None
        if state == "prunable":
            found = prunable_runs(p["root"], p["older_than"])
            return dict(found, changed=False), None
        if state == "interrupted":
            return dict(runs=interrupted_runs(p["root"]), changed=False), None
        # O(parts): each written as O(state=write) writes one - into an open run (write) or before its freeze
        written = []
        for item in (p.get("parts") or []) if state in ("write", "freeze") else []:
            w = write_part(p["path"], item["part"], content=item.get("content"), data=item.get("json"),
                           overwrite=p["overwrite"], check_mode=check_mode, has_data=item.get("json") is not None)
            written.append(dict(part=w["part"], size=w["size"], sha256=w["sha256"], existed=w["existed"],
                                changed=w["changed"]))
        if state == "write" and p.get("parts"):
            return dict(changed=any(w["changed"] for w in written), run_path=p["path"], written=written), None
        if state == "write":
            res = write_part(p["path"], p["part"], content=p["content"], data=p["json"], src=p["src"],
                             overwrite=p["overwrite"], check_mode=check_mode, has_data=p["json"] is not None)
            # no "path" key here: AnsibleModule would add stat info of it, overwriting "size"
            return dict(changed=res["changed"], run_path=p["path"], part=res["part"], dest=res["path"],
                        size=res["size"], sha256=res["sha256"], existed=res["existed"]), None
        if state == "freeze":
            # a run's close in one task: its last parts (written above), the freeze, and (verify) the check
            metadata = dict(p["metadata"] or {})
            if p.get("status"):
                metadata["status"] = p["status"]
            res = freeze(p["path"], p["collection_version"], metadata=metadata, check_mode=check_mode)
            out = dict(changed=res["changed"] or any(w["changed"] for w in written), path=res["path"],
                       manifest=res["manifest"], manifest_path=res["manifest_path"])
            if p.get("parts"):
                out["written"] = written
            if p.get("verify") and not check_mode:
                checked = verify(p["path"])
                out.update(ok=checked["ok"], checked=checked["checked"], mismatched=checked["mismatched"],
                           missing=checked["missing"], unexpected=checked["unexpected"])
                if not checked["ok"]:
                    return out, ("record %s does not verify right after its freeze: %s; something changed it while it was "
                                 "frozen: look for another writer of this run" % (res["path"], describe_problems(checked)))
            return out, None
        if state == "close":
            # the close decides with the play's host variables: only the controller's action has them
            return {}, ("state=close runs on the controller only (the repro.vllm.run_record action, delegate_to: "
                        "localhost, no become); it reads what every host of the play registered")
        res = verify(p["path"])
        out = dict(changed=False, path=res["path"], ok=res["ok"], checked=res["checked"],
                   mismatched=res["mismatched"], missing=res["missing"], unexpected=res["unexpected"],
                   manifest=res["manifest"], manifest_sha256=res["manifest_sha256"])
        if not res["ok"] and p["fail_on_mismatch"]:
            return out, ("record %s does not verify against its manifest.json: %s; it was changed after it was frozen: "
                         "fetch or copy it again from the source, or treat it as tampered" % (res["path"], describe_problems(res)))
        if p.get("manifest_sha256") and p["manifest_sha256"] != res["manifest_sha256"] and p["fail_on_mismatch"]:
            return out, ("record %s verifies against its own manifest.json, but that manifest is not the one expected "
                         "(sha256 %s, expected %s): it is another run of the same name, or a copy of a changed one"
                         % (res["path"], res["manifest_sha256"], p["manifest_sha256"]))
        return out, None
    except RecordError as exc:
        return {}, str(exc)
    except OSError as exc:
        return {}, "%s: %s (path %s)" % (state, exc.strerror or exc, exc.filename or p.get("path") or p.get("root"))
