"""Frozen run records: one directory per attempt, never overwritten.

Why one file (over 1,000 lines): every writer and reader of a run folder (create, write_part, freeze, verify, the
open/owner lease, the salvage of interrupted runs) shares its layout and the freeze rule; a run is only safe when
one module owns that layout. The run_record task around it (argument spec, kinds, dispatch) is ``_runtask``.

Layout (docs/records.md)::

    <root>/<case_id>/run-NNN/      NNN = next free number, taken with an atomic mkdir
        manifest.json              written by freeze(): every other file with size and sha256
        hosts/<host>/...           parts written with write_part()

Contract of every function here:

* Pure Python standard library, no Ansible import: the modules (``run_record``, the log classifier, the
  vLLM server module) and plain scripts call it alike.
* Problems the caller can fix raise :class:`RecordError` (``FrozenError`` for a frozen run) whose message
  names the host path, what is wrong and the fix.  Nothing is half-written: parts are written to a
  temporary file in the same directory and renamed into place.
* A run is frozen when ``manifest.json`` exists in it.  That test, not permission bits, is what refuses
  writes, because root ignores mode bits.
* Files are hashed in chunks; a record may hold files far larger than memory.
* ``check_mode=True`` computes the answer and touches nothing.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import datetime
import errno
import hashlib
import json
import os
import re
import secrets
import socket
import stat
import tempfile
import time

# Version of the manifest layout.  2: host parts carry the real case and run ids, the collection version read from
# galaxy.yml, and per-file ``cut``/``original`` notes for size-capped logs.  Readers accept every version in
# SUPPORTED_SCHEMA_VERSIONS and refuse any other with a message naming it (check_schema).
# 3: every run has a ``run_uid`` (16 random lowercase hex characters, also the name of everything the run puts on a
# managed host) and ``metadata.status`` (ok | failed | refused | incomplete); the owner of the play that opened it is
# kept in ``metadata.owner`` on the controller (the hand-off leaves it out).
SCHEMA_VERSION = 3
SUPPORTED_SCHEMA_VERSIONS = (1, 2, 3)
MANIFEST = "manifest.json"
# An open run holds OPEN_FILE from its creation to its freeze: its run_uid and its owner. freeze() moves both into
# the manifest's metadata and removes the file, so a frozen run never lists it.
OPEN_FILE = "open.json"
RUN_STATUSES = ("ok", "failed", "refused", "incomplete")
# An open run whose owner cannot be checked by its pid (another controller) is abandoned once its owner's lease has
# run out: opened (or last written) plus this many seconds.
DEFAULT_OWNER_LEASE = 4 * 3600
# A run folder without OPEN_FILE and without a manifest (made before schema 3, or caught between its mkdir and the
# write of OPEN_FILE) is taken as abandoned only when it has not changed for this long.
LEGACY_OPEN_GRACE = 600
DEFAULT_ROOT = "records"               # the records root when none is given (roles/record/defaults), resolved by resolve_root
RUN_PREFIX = "run-"
DIR_MODE = 0o700
FILE_MODE = 0o600
FROZEN_FILE_MODE = 0o444
FROZEN_DIR_MODE = 0o555
CHUNK = 1024 * 1024

_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_RUN_DIR = re.compile(r"^run-([0-9]{3,})$")
# A run elsewhere that holds a number: a run folder, or a copy in transit into one (the records sink unpacks into
# ".incoming-run-NNN-<random>" beside the run's place before renaming it).
_TAKEN_NAME = re.compile(r"^(?:\.incoming-)?run-([0-9]{3,})(?:-.*)?$")


class RecordError(Exception):
    """A record operation that cannot be done; ``str()`` is a message for the user."""


class FrozenError(RecordError):
    """Writing into a frozen run was refused."""


# ------------------------------------------------------------------------------------------------ helpers
def utc_now():
    """Current UTC time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def validate_case_id(case_id):
    """Raise RecordError unless ``case_id`` is one safe path component (letters, digits, ``._-``)."""
    if not isinstance(case_id, str) or not _CASE_ID.match(case_id) or ".." in case_id:
        raise RecordError(
            "case_id %r is not allowed: use 1-128 characters from A-Z a-z 0-9 . _ -, starting with a letter "
            "or digit, without '..' or '/' (it becomes one directory name under the records root)" % (case_id,))
    return case_id


def run_id_for(number):
    """``run-007``; the padding is 3 digits and grows past 999 (``run-1000``)."""
    return "%s%03d" % (RUN_PREFIX, number)


def run_numbers(case_dir):
    """Sorted numbers of the ``run-NNN`` directories in ``case_dir`` (missing dir: empty list)."""
    try:
        names = os.listdir(case_dir)
    except FileNotFoundError:
        return []
    nums = []
    for name in names:
        m = _RUN_DIR.match(name)
        if m:
            nums.append(int(m.group(1)))
    return sorted(nums)


def taken_numbers(names):
    """Numbers held by ``names`` from another place that keeps runs of the case (the records sink's listing):
    ``run-NNN`` and ``.incoming-run-NNN-*``; other names are ignored.  Raise RecordError unless ``names`` is a
    list of strings (a listing that cannot be read must not be mistaken for an empty one)."""
    if names is None:
        return []
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise RecordError("taken must be a list of run names (run-NNN), got %r" % (names,))
    nums = []
    for name in names:
        m = _TAKEN_NAME.match(name.rstrip("/").rsplit("/", 1)[-1])
        if m:
            nums.append(int(m.group(1)))
    return sorted(nums)


def _first_number(local, taken):
    """The first number to try: above every run of the case here and every number taken elsewhere."""
    return max(local + taken + [0]) + 1


def hash_file(path, chunk=CHUNK):
    """(size, sha256 hex) of ``path``, read in chunks."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk)
            if not block:
                break
            size += len(block)
            h.update(block)
    return size, h.hexdigest()


def is_frozen(run_dir):
    """True when ``run_dir`` holds a ``manifest.json`` (whatever its permission bits)."""
    return os.path.lexists(os.path.join(run_dir, MANIFEST))


def _fix_for(err):
    if err.errno in (errno.EACCES, errno.EPERM):
        return "make it writable for the user Ansible runs as (become, or chown/chmod), or choose another records root"
    if err.errno == errno.EROFS:
        return "the filesystem is mounted read-only; choose a records root on a writable filesystem"
    if err.errno == errno.ENOSPC:
        return "the filesystem is full; free space or choose another records root"
    return "check the path and its permissions"


# ------------------------------------------------------------------------------------------------ create
def _check_root(root, check_mode=False):
    root = os.path.abspath(root)
    if os.path.lexists(root) and not os.path.isdir(root):
        raise RecordError("records root %s exists but is not a directory; remove it or set the records root "
                          "(repro_vllm_records_root / root) to a directory" % root)
    if not os.path.isdir(root):
        parent = os.path.dirname(root)
        if not os.path.isdir(parent):
            raise RecordError("records root %s cannot be created: its parent directory %s does not exist; create "
                              "the parent first or set the records root to an existing directory" % (root, parent))
        if not check_mode:
            try:
                os.mkdir(root, DIR_MODE)
            except FileExistsError:
                pass
            except OSError as exc:
                raise RecordError("cannot create records root %s: %s; %s" % (root, exc.strerror, _fix_for(exc)))
    return root


def plan_run(root, case_id, taken=None):
    """Where :func:`create_run` would create the next run now: dict(path, run_id, number).  Touches nothing."""
    validate_case_id(case_id)
    root = _check_root(root, check_mode=True)
    case_dir = os.path.join(root, case_id)
    number = _first_number(run_numbers(case_dir), taken_numbers(taken))
    run_id = run_id_for(number)
    return {"path": os.path.join(case_dir, run_id), "run_id": run_id, "number": number, "case_id": case_id,
            "run_uid": new_run_uid()}


def new_run_uid():
    """16 random lowercase hex characters: the run's own id on every host (never the case and run number)."""
    return secrets.token_hex(8)


def _proc_start_ticks(pid):
    """Start time of ``pid`` in clock ticks since boot (field 22 of /proc/<pid>/stat), None when unknown."""
    try:
        with open("/proc/%d/stat" % int(pid)) as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def controller_owner(records_root, pid=None, environ=None):
    """Who opens a run: this controller's host name, the records root, the play's process (pid and its start
    ticks, so a reused pid is not taken for it) and, under AWX/ansible-runner, the job id."""
    environ = os.environ if environ is None else environ
    pid = os.getpid() if pid is None else int(pid)
    owner = {"controller": socket.gethostname(), "records_root": records_root, "pid": pid,
             "pid_start_ticks": _proc_start_ticks(pid), "user": environ.get("USER") or environ.get("LOGNAME")}
    job = environ.get("JOB_ID") or environ.get("AWX_JOB_ID")
    if job:
        owner["job_id"] = str(job)
    return owner


def read_json_file(path):
    """The JSON object in ``path``, or None when it is missing, unreadable or not an object."""
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read().decode("utf-8"))
        return data if isinstance(data, dict) else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def read_open(run_dir):
    """The run's OPEN_FILE (dict) or None when it has none or it cannot be read."""
    return read_json_file(os.path.join(run_dir, OPEN_FILE))


def _write_atomic(path, blob, mode):
    """Write ``blob`` to ``path`` through a synced temporary file beside it (``mode``), renamed into place."""
    name = os.path.basename(path)
    fd, tmp = tempfile.mkstemp(prefix=".%s-" % name[:-len(".json")], suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(blob)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def owner_alive(owner, lease_until, now=None, hostname=None):
    """(alive, why) for the owner of an open run.

    On the same controller the play's process decides (its pid with the same start ticks); a run opened on
    another controller (another AWX node sharing the records root) is alive until its owner's lease has run out.
    """
    now = time_now() if now is None else now
    hostname = socket.gethostname() if hostname is None else hostname
    owner = owner or {}
    pid = owner.get("pid")
    if owner.get("controller") == hostname and isinstance(pid, int):
        ticks = _proc_start_ticks(pid)
        if ticks is None:
            return False, "its play (pid %d on %s) is gone" % (pid, hostname)
        if owner.get("pid_start_ticks") is not None and ticks != owner.get("pid_start_ticks"):
            return False, "its play (pid %d on %s) is gone; the pid now belongs to another process" % (pid, hostname)
        return True, "its play (pid %d on %s) is still running" % (pid, hostname)
    if isinstance(lease_until, (int, float)) and now > lease_until:
        return False, "its owner's lease ran out at %s (controller %s)" % (_stamp(lease_until), owner.get("controller"))
    return True, "its owner (controller %s) holds it until %s" % (owner.get("controller"), _stamp(lease_until))


def time_now():
    return time.time()


def _stamp(unix):
    if not isinstance(unix, (int, float)):
        return "unknown"
    return datetime.datetime.fromtimestamp(unix, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _case_dirs(root):
    """[(case_id, folder)] of every case under ``root``; RecordError when the root cannot be read."""
    try:
        names = sorted(os.listdir(root))
    except OSError as exc:
        raise RecordError("records root %s cannot be read: %s" % (root, exc.strerror or exc))
    return [(n, os.path.join(root, n)) for n in names if _CASE_ID.match(n) and os.path.isdir(os.path.join(root, n))]


def open_runs(case_dir):
    """Run folders of the case that are not frozen: [(run_id, path)], oldest first."""
    return [(run_id_for(n), os.path.join(case_dir, run_id_for(n))) for n in run_numbers(case_dir)
            if not is_frozen(os.path.join(case_dir, run_id_for(n)))]


def _open_run_owner(path, now, hostname=None):
    """(alive, why, OPEN_FILE data) of an open run's owner; None when the run folder is gone."""
    info = read_open(path)
    if info is None:
        try:
            age = now - os.stat(path).st_mtime
        except OSError:
            return None
        return (age < LEGACY_OPEN_GRACE, "it has no %s (made before schema 3, or being created now) and changed %d s "
                "ago" % (OPEN_FILE, int(age)), None)
    alive, why = owner_alive(info.get("owner"), info.get("lease_until"), now=now, hostname=hostname)
    return alive, why, info


# What the play's interrupt handler (callback/record_log.py) writes into its open run: {"signal", "at"}.
INTERRUPTED_FILE = "interrupted.json"


def sealed_because(why):
    """What the seal of an interrupted run saw (its manifest's ``sealed_because``), from why its owner is gone."""
    return ("its play's process is gone" if "is gone" in why else "its owner's lease ran out" if "lease ran out" in why
            else "it was opened before schema 3 and has not changed for %d s" % LEGACY_OPEN_GRACE)


def interrupted_runs(root, now=None, hostname=None):
    """Open runs under ``root`` (every case) whose play is provably gone - what stop.yml brings the host files of
    into the run before it seals it: [{case_id, run, path, run_uid, hosts, why, sealed_because, last_written,
    interrupted, interrupted_at}]. ``interrupted``: what the play's interrupt handler wrote (INTERRUPTED_FILE; None when the play
    was killed or lost); ``interrupted_at`` its time, else ``last_written``, the play's last write into the run on
    the controller (the moment it was killed or lost, as near as the controller knows)."""
    now = time_now() if now is None else now
    out = []
    if not os.path.isdir(os.path.abspath(root)):
        return out  # no records here: nothing was interrupted
    for case, case_dir in _case_dirs(os.path.abspath(root)):
        for run_id, path in open_runs(case_dir):
            found = _open_run_owner(path, now, hostname)
            if found is None or found[0] or found[2] is None or not found[2].get("run_uid"):
                continue
            info = found[2]
            written = [os.path.getmtime(os.path.join(path, rel)) for rel in scan(path)[0]]
            last = round(max(written), 3) if written else None
            marked = read_json_file(os.path.join(path, INTERRUPTED_FILE))
            out.append({"case_id": case, "run": run_id, "path": path, "run_uid": info["run_uid"],
                        "hosts": list((info.get("run") or {}).get("hosts") or []), "why": found[1],
                        "sealed_because": sealed_because(found[1]),
                        "last_written": last, "interrupted": marked,
                        "interrupted_at": (marked or {}).get("at") if isinstance((marked or {}).get("at"), (int, float))
                        else last})
    return out


def salvage_parts(found, run_dir, host, last_written=None):
    """What of an interrupted run's folder on ``host`` (``found``: ansible.builtin.find's files under
    ``<remote_root>/runs/<run_uid>``, recursive) goes into the run's part ``hosts/<host>/``: this host's files
    (``hosts/<host>/...``, the same parts as a closed attempt's: logs/server.log, memory.jsonl, logs/...) and its
    server's state (``.state/<host>/...`` as ``state/...``: the state file, the exit record, the supervisor's
    lease-expired record). Returns ``files`` (host_record's), ``after_interrupt`` (the parts changed after
    ``last_written``, the play's last write on the controller) and ``remove`` (this host's folders of the run)."""
    run_dir = str(run_dir).rstrip("/")
    files, after = [], []
    for entry in sorted(found or [], key=lambda f: f.get("path", "")):
        rel = os.path.relpath(entry.get("path", ""), run_dir)
        if rel.startswith("hosts/%s/" % host):
            part = rel[len("hosts/%s/" % host):]
            part = "memory.jsonl" if part == "logs/memory.jsonl" else part
        elif rel.startswith(".state/%s/" % host):
            part = "state/" + rel[len(".state/%s/" % host):]
        else:
            continue
        files.append({"src": entry["path"], "part": part})
        if last_written is not None and float(entry.get("mtime") or 0) > float(last_written):
            after.append(part)
    return {"files": files, "after_interrupt": after,
            "remove": ["%s/hosts/%s" % (run_dir, host), "%s/.state/%s" % (run_dir, host)]}


def host_files_never_fetched(run_dir):
    """For a frozen run whose copy lacks the files of some of its hosts: {run, run_uid, hosts, line} with how to get
    them (they stay on the hosts; prune keeps them); None when it has them all."""
    manifest = load_manifest(run_dir)
    missing = hosts_without_files(manifest)
    if not missing:
        return None
    uid = manifest.get("run_uid")
    run = os.path.basename(os.path.normpath(run_dir))
    line = ("%s: the files of %s (server log, memory series, server state) were never fetched - it was sealed "
            "without them; they stay on the host(s) under <repro_vllm_remote_root>/runs/%s/ (prune.yml keeps them "
            "unless told repro_vllm_prune_without_host_files=[%s]); copy them from there by hand (scp -r). Next time "
            "run playbooks/stop.yml before the hand-off: it brings an interrupted run's host files in, then seals it"
            % (run, ", ".join(missing), uid, uid))
    return {"run": run, "run_uid": uid, "hosts": missing, "line": line}


def salvage_plan(found_results, stop_results, remote_root, host):
    """stop.yml's plan for the interrupted runs of ``host``: one entry per run of the loops over them (``found_results``:
    ansible.builtin.find's results, each with ``item`` - the run of interrupted_runs - and ``files``; ``stop_results``:
    vllm_server state=swept's, in the same order) with salvage_parts' ``files``, ``after_interrupt`` and ``remove``,
    the ``parts`` named, ``server`` - how its servers here ended (the sweep's lines) - and its console ``line``."""
    plan = []
    stops = list(stop_results or [])
    for index, found in enumerate(found_results or []):
        run = found.get("item") or {}
        stop = stops[index] if index < len(stops) else {}
        parts = salvage_parts(found.get("files") or [], "%s/runs/%s" % (str(remote_root).rstrip("/"),
                                                                        run.get("run_uid")),
                              host, run.get("interrupted_at"))
        # the sweep names what it stopped now; a server stopped before this play (its heartbeat saw the play gone,
        # or its lease ran out) left its lease released and the supervisor's record, brought in with the files
        expired = [f["part"] for f in parts["files"] if f["part"].endswith(".lease-expired")]
        server = [c.get("line") for c in stop.get("cleaned") or []] or (
            ["not live: stopped before this play when its lease ended (the reason is in %s)" % ", ".join(expired)]
            if expired else ["no lease of it on this host (its server was stopped and released, or never started)"])
        named = [f["part"] for f in parts["files"]]
        line = "stop | %s | %s/%s (run_uid %s, %s) | server: %s | %s" % (
            host, run.get("case_id"), run.get("run"), run.get("run_uid"), run.get("why"), "; ".join(server),
            ("brought into the run: %s; changed after the last write of the play (the interrupt): %s"
             % (", ".join(named), ", ".join(parts["after_interrupt"]) or "none")) if parts["files"]
            else "nothing of it on this host")
        plan.append(dict(parts, run=run, parts=named, server=server, line=line))
    return plan


def seal_interrupted(case_dir, collection_version, sealed_by, now=None, hostname=None, check_mode=False):
    """Freeze every run of the case that a play opened and never closed, once its owner is provably gone.

    Each is frozen as it is, with ``metadata.status: incomplete``, ``seal_reason: interrupted``, ``sealed_by`` (the
    run and play that sealed it) and what the seal saw (``sealed_because``); its run_uid and owner come from its
    OPEN_FILE. A run whose owner is alive is left open and reported. Returns dict(sealed=[...], open=[...]).
    """
    now = time_now() if now is None else now
    sealed, still_open = [], []
    for run_id, path in open_runs(case_dir):
        found = _open_run_owner(path, now, hostname)
        if found is None:
            continue
        alive, why, info = found
        if alive:
            still_open.append({"run": run_id, "path": path, "why": why,
                               "run_uid": (info or {}).get("run_uid")})
            continue
        # what the seal saw, without the owner's identity (the manifest's metadata.owner keeps that on the controller)
        because = sealed_because(why)
        metadata = {"status": "incomplete", "seal_reason": "interrupted", "sealed_by": sealed_by,
                    "sealed_because": because, "sealed_at": utc_now()}
        if not check_mode:
            try:
                res = freeze(path, collection_version, metadata=metadata)
            except RecordError as exc:
                still_open.append({"run": run_id, "path": path, "why": "could not seal it: %s" % exc,
                                   "run_uid": (info or {}).get("run_uid")})
                continue
            run_uid = res["manifest"].get("run_uid")
        else:
            run_uid = (info or {}).get("run_uid")
        sealed.append({"run": run_id, "path": path, "run_uid": run_uid, "why": why})
    return {"sealed": sealed, "open": still_open}


def _created_unix(manifest):
    try:
        stamp = datetime.datetime.strptime(manifest.get("created") or "", "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None
    return stamp.replace(tzinfo=datetime.timezone.utc).timestamp()


def prune_split(paths, run_uids, host=None, lacking=None, allowed=None):
    """Which of a host's run folders (``<remote_root>/runs/<run_uid>``, as found there) are removed: those whose
    name is one of ``run_uids`` (prunable_runs), except the folder on ``host`` of a run whose controller copy has no
    files of that host (``lacking``: prunable_runs' list) - the only copy of its server log - unless ``allowed``
    names the run (its run_uid or ``<case>/<run>``). Returns ``remove`` (the paths, in the order found), ``removed``
    (their run_uids), ``withheld`` ([{path, run_uid, run, why}], kept for that reason) and ``kept`` (how many stay:
    open, not held by this controller, not verified, too young or withheld)."""
    wanted = set(run_uids or [])
    allowed = set(allowed or [])
    short = dict((entry["run_uid"], entry) for entry in lacking or [])
    remove, withheld = [], []
    for path in paths or []:
        uid = os.path.basename(str(path).rstrip("/"))
        if uid not in wanted:
            continue
        entry = short.get(uid)
        if entry and host in entry["hosts"] and not allowed & {uid, entry["run"]}:
            withheld.append({"path": path, "run_uid": uid, "run": entry["run"],
                             "why": "the controller's copy of %s has no files of %s (hosts/%s/): this folder holds "
                                    "the only copy" % (entry["run"], host, host)})
            continue
        remove.append(path)
    return {"remove": remove, "removed": [os.path.basename(str(p).rstrip("/")) for p in remove],
            "withheld": withheld, "kept": len(list(paths or [])) - len(remove)}


def hosts_without_files(manifest):
    """The hosts of a frozen run (``metadata.hosts``) that have no file under ``hosts/<host>/`` in it: their part was
    never brought to the controller (an interrupted run sealed without its hosts)."""
    have = set(e["path"].split("/")[1] for e in manifest.get("files") or []
               if e.get("path", "").startswith("hosts/") and e["path"].count("/") >= 2)
    return [h for h in (manifest.get("metadata") or {}).get("hosts") or [] if h not in have]


def prunable_runs(root, older_than, now=None):
    """The run_uids whose host folders may go: runs under ``root`` (every case) that are frozen, verify, and were
    frozen more than ``older_than`` seconds ago. An open run, a run that does not verify and a run without a run_uid
    (schema 2) are never listed; the ones that do not verify are returned in ``not_verified``, and the listed ones
    whose copy lacks the files of some of their hosts in ``lacking`` ([{run, run_uid, hosts}], prune_split)."""
    now = time_now() if now is None else now
    uids, runs, not_verified, lacking = [], [], [], []
    for case, case_dir in _case_dirs(os.path.abspath(root)):
        for number in run_numbers(case_dir):
            path = os.path.join(case_dir, run_id_for(number))
            name = "%s/%s" % (case, run_id_for(number))
            if not is_frozen(path):
                continue
            try:
                checked = verify(path)
            except RecordError as exc:
                not_verified.append({"run": name, "why": str(exc)})
                continue
            manifest = checked["manifest"]
            uid = manifest.get("run_uid")
            if not checked["ok"]:
                not_verified.append({"run": name, "why": describe_problems(checked)})
                continue
            created = _created_unix(manifest)
            if not uid or created is None or now - created < older_than:
                continue
            uids.append(uid)
            runs.append({"run": name, "run_uid": uid, "created": manifest["created"]})
            missing = hosts_without_files(manifest)
            if missing:
                lacking.append({"run": name, "run_uid": uid, "hosts": missing})
    return {"run_uids": uids, "runs": runs, "not_verified": not_verified, "lacking": lacking}


def create_run(root, case_id, max_attempts=10000, taken=None, owner=None,
               owner_lease=DEFAULT_OWNER_LEASE, identity=None):
    """Create ``<root>/<case_id>/run-NNN`` (mode 0700) with the next free number and return
    dict(path, run_id, number, case_id).

    The number is taken by ``os.mkdir`` itself: two processes racing for the same number see one succeed
    and the other get FileExistsError, re-read the directory and try the next number.  So concurrent
    creates (several hosts writing to one shared root, or parallel plays) never share a run.

    ``taken``: run names that exist in another place keeping runs of this case (the records sink's listing, see
    :func:`taken_numbers`); the new number is above all of them too, so a controller that started with an empty
    records root does not make a second ``run-001`` of a case the sink already holds.

    ``identity``: what the run is, decided once at its open and kept in its OPEN_FILE until :func:`freeze` writes
    it into the manifest (RUN_IDENTITY: purpose, hosts, the profile judged, the collection version, the resolved
    records root), so no close has to be told it again.
    """
    validate_case_id(case_id)
    elsewhere = taken_numbers(taken)
    root = _check_root(root)
    case_dir = os.path.join(root, case_id)
    try:
        os.mkdir(case_dir, DIR_MODE)
    except FileExistsError:
        if not os.path.isdir(case_dir):
            raise RecordError("case path %s exists but is not a directory; remove it or use another case_id" % case_dir)
    except OSError as exc:
        raise RecordError("cannot create case directory %s: %s; %s" % (case_dir, exc.strerror, _fix_for(exc)))
    number = _first_number(run_numbers(case_dir), elsewhere)
    for _attempt in range(max_attempts):
        run_id = run_id_for(number)
        path = os.path.join(case_dir, run_id)
        try:
            os.mkdir(path, DIR_MODE)
        except FileExistsError:
            nums = run_numbers(case_dir)
            number = max(number, nums[-1] if nums else 0) + 1
            continue
        except OSError as exc:
            raise RecordError("cannot create run directory %s: %s; %s" % (path, exc.strerror, _fix_for(exc)))
        os.chmod(path, DIR_MODE)  # mkdir's mode is filtered by the umask
        run_uid = new_run_uid()
        opened = time_now()
        _write_atomic(os.path.join(path, OPEN_FILE), render_json(
            {"run_uid": run_uid, "case_id": case_id, "run_id": run_id, "opened": utc_now(), "owner": owner or {},
             "lease_until": round(opened + float(owner_lease), 3),
             "run": {k: v for k, v in (identity or {}).items() if k in RUN_IDENTITY}}), FILE_MODE)
        return {"path": path, "run_id": run_id, "number": number, "case_id": case_id, "run_uid": run_uid}
    raise RecordError("gave up creating a run under %s after %d attempts (something keeps taking the numbers)"
                      % (case_dir, max_attempts))


# ------------------------------------------------------------------------------------------------ write
def _require_run_dir(run_dir):
    run_dir = os.path.abspath(run_dir)
    if not os.path.isdir(run_dir):
        raise RecordError("run directory %s does not exist (or is not a directory); create a run first with "
                          "run_record state=create and pass its path" % run_dir)
    return run_dir


def frozen_message(run_dir):
    return ("run %s is frozen (it has a %s): frozen runs are never modified; start a new run with "
            "run_record state=create and write there" % (run_dir, MANIFEST))


def resolve_part(run_dir, part):
    """Absolute path of ``part`` inside ``run_dir``; RecordError when it would escape the run.

    Refused: an absolute path, ``..`` or empty components, the run's own ``manifest.json``, and any
    existing component that is a symlink (a link could point outside the run or into another run).
    """
    if not isinstance(part, str) or not part or part.startswith("/") or "\\" in part or "\x00" in part:
        raise RecordError("part %r must be a relative path inside the run (e.g. hosts/node1/fingerprint.json)" % (part,))
    comps = part.split("/")
    if any(c in ("", ".", "..") for c in comps):
        raise RecordError("part %r must not contain '..', '.' or empty components: it has to stay inside the run %s"
                          % (part, run_dir))
    if comps in ([MANIFEST], [OPEN_FILE]):
        raise RecordError("part %r is reserved: %s is written by run_record state=create/freeze only" % (part, part))
    real_run = os.path.realpath(run_dir)
    cur = run_dir
    for c in comps:
        cur = os.path.join(cur, c)
        if os.path.islink(cur):
            raise RecordError("part %r goes through the symlink %s; records hold plain files and directories only"
                              % (part, cur))
    target = os.path.join(run_dir, *comps)
    real_parent = os.path.realpath(os.path.dirname(target))
    if real_parent != real_run and not real_parent.startswith(real_run + os.sep):
        raise RecordError("part %r resolves outside the run %s" % (part, run_dir))
    return target


def _dirs_below(run_dir, dirpath):
    """Every directory from ``run_dir`` (excluded) down to ``dirpath`` (included), outermost first."""
    rel = os.path.relpath(dirpath, run_dir)
    comps = [] if rel == "." else rel.split(os.sep)
    return [os.path.join(run_dir, *comps[:i]) for i in range(1, len(comps) + 1)]


def frozen_subrecord(run_dir, target):
    """The first directory between ``run_dir`` (excluded) and ``target``'s parent that holds a
    manifest.json (a nested record such as a fetched ``hosts/<host>/``), or None."""
    return next((d for d in _dirs_below(run_dir, os.path.dirname(target)) if is_frozen(d)), None)


def _makedirs(run_dir, dirpath):
    """Create ``dirpath`` (inside ``run_dir``) and missing parents with mode 0700."""
    for cur in _dirs_below(run_dir, dirpath):
        try:
            os.mkdir(cur, DIR_MODE)
            os.chmod(cur, DIR_MODE)
        except FileExistsError:
            if os.path.islink(cur) or not os.path.isdir(cur):
                raise RecordError("%s exists and is not a directory; cannot write below it" % cur)


def render_json(data):
    """The bytes a ``json`` part is written as: pretty, sorted keys, UTF-8, trailing newline."""
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def _payload(content, data, src, has_data):
    given = [content is not None, has_data, src is not None]
    if sum(given) != 1:
        raise RecordError("give exactly one of content, json or src (got %d)" % sum(given))
    if content is not None:
        return content.encode("utf-8") if isinstance(content, str) else bytes(content), None
    if has_data:
        return render_json(data), None
    src = os.path.abspath(src)
    if not os.path.isfile(src):
        raise RecordError("src %s is not a readable regular file on this host" % src)
    return None, src


def write_part(run_dir, part, content=None, data=None, src=None, overwrite=False, check_mode=False,
               has_data=None):
    """Write one part of a run atomically.

    Exactly one of ``content`` (str/bytes), ``data`` (any JSON-able value; pass ``has_data=True`` when the
    value itself may be None) or ``src`` (a file on this host, copied in chunks).  Parent directories
    are created (0700), the file is 0600 until the run is frozen.

    Returns dict(path, part, size, sha256, existed, changed).  An existing part with identical bytes is
    ``changed: False``; different bytes raise RecordError unless ``overwrite`` (data is never lost
    silently).  A frozen run raises FrozenError.
    """
    if has_data is None:
        has_data = data is not None
    run_dir = _require_run_dir(run_dir)
    if is_frozen(run_dir):
        raise FrozenError(frozen_message(run_dir))
    target = resolve_part(run_dir, part)
    sub = frozen_subrecord(run_dir, target)
    if sub:
        raise FrozenError(frozen_message(sub))
    blob, src_path = _payload(content, data, src, has_data)
    if blob is not None:
        size, digest = len(blob), hashlib.sha256(blob).hexdigest()
    else:
        size, digest = hash_file(src_path)
    existed = os.path.lexists(target)
    if existed:
        if not os.path.isfile(target) or os.path.islink(target):
            raise RecordError("%s exists and is not a regular file; refusing to replace it" % target)
        old_size, old_digest = hash_file(target)
        if (old_size, old_digest) == (size, digest):
            return {"path": target, "part": part, "size": size, "sha256": digest, "existed": True, "changed": False}
        if not overwrite:
            raise RecordError("part %s already exists in %s with different content (sha256 %s); refusing to lose it: "
                              "write to another part or set overwrite: true" % (part, run_dir, old_digest))
    result = {"path": target, "part": part, "size": size, "sha256": digest, "existed": existed, "changed": True}
    if check_mode:
        return result
    parent = os.path.dirname(target)
    _makedirs(run_dir, parent)
    fd, tmp = tempfile.mkstemp(prefix=".part-", suffix=".tmp", dir=parent)
    try:
        h = hashlib.sha256()
        written = 0
        with os.fdopen(fd, "wb") as out:
            if blob is not None:
                out.write(blob)
                h.update(blob)
                written = len(blob)
            else:
                with open(src_path, "rb") as inp:
                    while True:
                        block = inp.read(CHUNK)
                        if not block:
                            break
                        out.write(block)
                        h.update(block)
                        written += len(block)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, FILE_MODE)
        if is_frozen(run_dir):  # frozen while we wrote
            raise FrozenError(frozen_message(run_dir))
        os.replace(tmp, target)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    result.update(size=written, sha256=h.hexdigest())
    return result


# ------------------------------------------------------------------------------------------------ freeze / verify
def scan(run_dir):
    """(files, others): sorted relative paths of regular files below ``run_dir`` except its own top-level
    manifest.json, and of anything else found (symlinks, sockets, ...).  Symlinks are not followed."""
    files, others = [], []
    for dirpath, dirnames, filenames in os.walk(run_dir):
        for d in list(dirnames):
            if os.path.islink(os.path.join(dirpath, d)):
                others.append(os.path.relpath(os.path.join(dirpath, d), run_dir))
                dirnames.remove(d)
        for name in filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, run_dir).replace(os.sep, "/")
            if rel == MANIFEST:
                continue
            st = os.lstat(full)
            if stat.S_ISREG(st.st_mode):
                files.append(rel)
            else:
                others.append(rel)
    return sorted(files), sorted(others)


def build_manifest(run_dir, collection_version, case_id=None, run_id=None, metadata=None, created=None,
                   file_notes=None, run_uid=None):
    """The manifest dict for ``run_dir`` as it is now (hashes every file).

    ``file_notes`` maps a relative path to extra keys stored in that file's entry (for example ``cut`` and
    ``original`` of a size-capped log); ``path``, ``size`` and ``sha256`` are always the ones computed here.
    """
    file_notes = file_notes or {}
    files, others = scan(run_dir)
    # an open run's own marker is not part of the record: freeze() moves it into the metadata
    files = [f for f in files if f != OPEN_FILE]
    if others:
        raise RecordError("cannot freeze %s: it holds entries that are not regular files (%s); records hold plain "
                          "files only, remove them" % (run_dir, ", ".join(others[:5])))
    entries = []
    for rel in files:
        size, digest = hash_file(os.path.join(run_dir, rel))
        entry = dict(file_notes.get(rel) or {})
        entry.update({"path": rel, "size": size, "sha256": digest})
        entries.append(entry)
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "collection_version": collection_version,
        "created": created or utc_now(),
        "case_id": case_id if case_id is not None else os.path.basename(os.path.dirname(run_dir)),
        "run_id": run_id if run_id is not None else os.path.basename(run_dir),
        "metadata": metadata or {},
        "files": entries,
    }
    if run_uid:
        manifest["run_uid"] = run_uid
    return manifest


def _make_read_only(run_dir):
    for dirpath, dirnames, filenames in os.walk(run_dir, topdown=False):
        for name in filenames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                os.chmod(full, FROZEN_FILE_MODE)
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                os.chmod(full, FROZEN_DIR_MODE)
    os.chmod(run_dir, FROZEN_DIR_MODE)


# What a run's open decides once (create_run's ``identity``) and its freeze writes into the manifest: metadata keys,
# plus the collection version (the manifest's own key). ``records_root`` stays in the open file's owner only.
RUN_IDENTITY = ("purpose", "hosts", "profile", "profile_source", "collection_version", "records_root")


def identity_metadata(metadata, identity, collection_version):
    """``(metadata, collection_version)`` a run is frozen with: ``metadata`` as given, completed by what its open
    decided (``identity``, from OPEN_FILE). The profile judged at the open wins over one a caller names (a profile
    file's run was once frozen as ``cpu-smoke``, the role default); purpose and hosts fill only what is missing; the
    open's collection version stands in for an unknown one."""
    metadata = dict(metadata or {})
    identity = identity or {}
    if "profile_source" in identity:
        metadata["profile"] = identity.get("profile")
        metadata["profile_source"] = identity["profile_source"]
    for key in ("purpose", "hosts"):
        if identity.get(key) is not None:
            metadata.setdefault(key, identity[key])
    if collection_version in (None, "", "unknown") and identity.get("collection_version"):
        collection_version = identity["collection_version"]
    return metadata, collection_version or "unknown"


def freeze(run_dir, collection_version, metadata=None, case_id=None, run_id=None, check_mode=False, file_notes=None):
    """Write ``manifest.json`` and make the run read-only (files 0444, dirs 0555).

    Returns dict(path, manifest_path, manifest, changed).  A run that is already frozen is verified:
    ``changed: False`` when it verifies, RecordError naming the bad files when it does not.
    """
    run_dir = _require_run_dir(run_dir)
    manifest_path = os.path.join(run_dir, MANIFEST)
    if is_frozen(run_dir):
        res = verify(run_dir)
        if not res["ok"]:
            raise RecordError("run %s is already frozen but does not verify: %s" % (run_dir, describe_problems(res)))
        if not check_mode:
            _make_read_only(run_dir)
        return {"path": run_dir, "manifest_path": manifest_path, "manifest": res["manifest"], "changed": False}
    opened = read_open(run_dir) or {}
    # metadata.status: a run's is one of RUN_STATUSES (run_record's status option checks it); a host part's is the
    # host's (ok, degraded, failed, unreachable) - both are kept as given
    metadata, collection_version = identity_metadata(metadata, opened.get("run"), collection_version)
    run_uid = opened.get("run_uid") or metadata.get("run_uid")
    if run_uid:
        metadata["run_uid"] = run_uid
    if opened.get("owner"):
        metadata.setdefault("owner", opened["owner"])
    if opened.get("opened"):
        metadata.setdefault("opened", opened["opened"])
    manifest = build_manifest(run_dir, collection_version, case_id=case_id, run_id=run_id, metadata=metadata,
                              file_notes=file_notes, run_uid=run_uid)
    if check_mode:
        return {"path": run_dir, "manifest_path": manifest_path, "manifest": manifest, "changed": True}
    _write_atomic(manifest_path, render_json(manifest), FROZEN_FILE_MODE)
    if os.path.lexists(os.path.join(run_dir, OPEN_FILE)):
        os.unlink(os.path.join(run_dir, OPEN_FILE))
    _make_read_only(run_dir)
    return {"path": run_dir, "manifest_path": manifest_path, "manifest": manifest, "changed": True}


def load_manifest(record_dir):
    path = os.path.join(record_dir, MANIFEST)
    if not os.path.isfile(path):
        raise RecordError("%s has no %s: it is not a frozen record (freeze it with run_record state=freeze, or "
                          "point path at the run or host directory that holds the manifest)" % (record_dir, MANIFEST))
    try:
        with open(path, "rb") as f:
            manifest = json.loads(f.read().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError("%s is not valid JSON (%s); the record is damaged" % (path, exc))
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
        raise RecordError("%s has no 'files' list; it is not a repro.vllm manifest" % path)
    check_schema(manifest, path)
    return manifest


def check_schema(manifest, path="manifest.json"):
    """Return the manifest's ``schema_version``; RecordError when this collection cannot read it.

    Every version in SUPPORTED_SCHEMA_VERSIONS is read as it is (version 1 simply has no ``cut`` notes and may
    name the host as run id); a newer one is refused rather than misread.
    """
    version = manifest.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise RecordError("%s has schema_version %r, not an integer; it is not a repro.vllm manifest or it is damaged"
                          % (path, version))
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise RecordError("%s has schema_version %d, but this repro.vllm %s reads versions %s only; read it with the "
                          "repro.vllm release that wrote it (collection_version %r in the manifest) or a newer one"
                          % (path, version, read_collection_version(),
                             ", ".join(str(v) for v in SUPPORTED_SCHEMA_VERSIONS), manifest.get("collection_version")))
    return version


# ------------------------------------------------------------------------------------------------ controller helpers
_VERSION_LINE = re.compile(r"^version:\s*['\"]?([^'\"\s#]+)", re.MULTILINE)


def _collection_root():
    """The collection's folder: the one holding the ``plugins/`` folder this file is in (at any depth)."""
    here = os.path.dirname(os.path.abspath(__file__))
    while os.path.basename(here) != "plugins" and os.path.dirname(here) != here:
        here = os.path.dirname(here)
    return os.path.dirname(here)


def read_collection_version(collection_root=None):
    """The version of this collection, read from its one source: ``galaxy.yml`` at the collection root (or the
    ``MANIFEST.json`` that ``ansible-galaxy collection build`` writes from it).  ``unknown`` when neither can be
    read, which is the case inside a module shipped to a managed node: call this on the controller."""
    root = collection_root or _collection_root()
    try:
        with open(os.path.join(root, "galaxy.yml"), encoding="utf-8") as f:
            m = _VERSION_LINE.search(f.read())
        if m:
            return m.group(1)
    except OSError:
        pass
    try:
        with open(os.path.join(root, "MANIFEST.json"), encoding="utf-8") as f:
            version = (json.load(f).get("collection_info") or {}).get("version")
        if isinstance(version, str) and version:
            return version
    except (OSError, ValueError, AttributeError):
        pass
    return "unknown"


def resolve_root(root, cwd=None):
    """``root`` as an absolute path: a relative one is taken against ``cwd`` (default: this process's real working
    directory, ``os.getcwd()``), never against a playbook's folder or ``$PWD``."""
    if not isinstance(root, str) or not root:
        raise RecordError("records root %r is empty; set repro_vllm_records_root to a directory" % (root,))
    root = os.path.expanduser(root)
    if not os.path.isabs(root):
        root = os.path.join(cwd or os.getcwd(), root)
    return os.path.normpath(root)


def verify(record_dir):
    """Recompute every size and sha256 listed in ``record_dir/manifest.json``.

    Works for any directory holding a manifest (a run, or a fetched ``hosts/<host>/``).  Returns
    dict(ok, checked, mismatched, missing, unexpected, manifest, manifest_sha256): ``mismatched`` entries carry path,
    expected and actual size/sha256; ``unexpected`` lists files present but not in the manifest; ``manifest_sha256``
    (of manifest.json itself) tells two copies of a run apart.
    """
    record_dir = os.path.abspath(record_dir)
    if not os.path.isdir(record_dir):
        raise RecordError("%s is not a directory; pass the run (or fetched host) directory to verify" % record_dir)
    manifest = load_manifest(record_dir)
    listed = {}
    for entry in manifest["files"]:
        rel = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(rel, str) or rel.startswith("/") or ".." in rel.split("/"):
            raise RecordError("%s lists an unsafe path %r; the manifest was tampered with"
                              % (os.path.join(record_dir, MANIFEST), rel))
        listed[rel] = entry
    files, others = scan(record_dir)
    present = set(files)
    mismatched, missing = [], []
    checked = 0
    for rel in sorted(listed):
        entry = listed[rel]
        full = os.path.join(record_dir, rel)
        if rel not in present:
            missing.append(rel)
            continue
        size, digest = hash_file(full)
        checked += 1
        if size != entry.get("size") or digest != entry.get("sha256"):
            mismatched.append({"path": rel, "expected_size": entry.get("size"), "actual_size": size,
                               "expected_sha256": entry.get("sha256"), "actual_sha256": digest})
    unexpected = sorted([f for f in files if f not in listed] + others)
    ok = not (mismatched or missing or unexpected)
    return {"ok": ok, "checked": checked, "mismatched": mismatched, "missing": missing,
            "unexpected": unexpected, "manifest": manifest, "path": record_dir,
            "manifest_sha256": hash_file(os.path.join(record_dir, MANIFEST))[1]}


def describe_problems(res, limit=5):
    """One line naming the first bad files of a verify() result."""
    parts = []
    if res["mismatched"]:
        parts.append("changed: " + ", ".join(m["path"] for m in res["mismatched"][:limit]))
    if res["missing"]:
        parts.append("missing: " + ", ".join(res["missing"][:limit]))
    if res["unexpected"]:
        parts.append("not in the manifest: " + ", ".join(res["unexpected"][:limit]))
    return "; ".join(parts) or "ok"


# What a run's manifest says of the profile it was judged against (metadata.profile_source): a profile shipped in
# profiles/, a user's file (repro_vllm_profile_file), or no judgement at all (metadata.profile is then null).
# A bare name given to run_record (not the compatibility action's result) is recorded as "named".
PROFILE_SHIPPED, PROFILE_FILE, PROFILE_NAMED, PROFILE_NOT_JUDGED = "shipped", "file", "named", "not judged"


def judged_profile(value):
    """``{"name", "source"}``: the profile a run was actually judged against, from what the compatibility action
    returned (its registered result: ``enabled`` and the validated ``profile``), a validated profile, or a bare name.

    Not judged (the action's ``enabled`` false, a skipped task, nothing given): ``{"name": None, "source": "not
    judged"}``. A bare name: source ``named``. A profile file keeps its own name with source ``file``: its name is no shipped profile's, so nothing
    may look it up in profiles/ by that name."""
    if isinstance(value, str):
        return {"name": value or None, "source": PROFILE_NAMED if value else PROFILE_NOT_JUDGED}
    if not isinstance(value, dict):
        return {"name": None, "source": PROFILE_NOT_JUDGED}
    if isinstance(value.get("judged"), dict):
        value = value["judged"]
    if "source" in value and "name" in value and "origin" not in value:
        return {"name": value["name"], "source": value["source"]}
    if "enabled" in value or "skipped" in value:
        if not value.get("enabled") or not isinstance(value.get("profile"), dict):
            return {"name": None, "source": PROFILE_NOT_JUDGED}
        value = value["profile"]
    name = value.get("name")
    if not name:
        return {"name": None, "source": PROFILE_NOT_JUDGED}
    origin = str(value.get("origin") or "")
    shipped = origin == "profiles/%s.yml" % name
    return {"name": name, "source": PROFILE_SHIPPED if shipped else PROFILE_FILE}


def stop_plan(runs, play_hosts, host):
    """stop.yml's plan over the interrupted runs (``runs``: interrupted_runs'): ``mine`` (those ``host`` holds a part
    of), ``seal`` (those whose every host is a target of the play: sealed with their hosts' files) and ``lines`` (one
    per run, the console's: sealed, or NOT sealed and which of its hosts to run stop.yml on)."""
    targets = set(play_hosts or [])
    plan = {"mine": [], "seal": [], "lines": []}
    for run in runs or []:
        hosts = list(run.get("hosts") or [])
        missing = [h for h in hosts if h not in targets]
        if host in hosts:
            plan["mine"].append(run)
        if not missing:
            plan["seal"].append(run)
        plan["lines"].append("stop | controller | sealed %s/%s as incomplete (interrupted) with the files of %s%s" % (
            run.get("case_id"), run.get("run"), ", ".join(hosts), ": NOT sealed - its hosts %s are not targets here; "
            "run stop.yml on them" % ", ".join(missing) if missing else ""))
    return plan
