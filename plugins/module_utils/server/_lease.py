"""A started server's lease on its node.

Two layouts: the host-wide run lease ``<lease_dir>/<run_uid>.json`` (one entry per inventory host, below), which the
attempts of schema-3 runs use, and the older ``<state_file>.lease`` holding ``{"until": unix time, ...}``.

The server's supervisor (module_utils/server/_server.py) stops the whole process group once ``until`` has passed; the
play renews it (vllm_server start and check, api_request before each request). What the supervisor stopped is
written once to ``<state_file>.lease-expired``. Standard library only.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import fcntl
import json
import os
import time


def write_json_atomic(path, data):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    os.rename(tmp, path)


def lease_file_for(state_file):
    return state_file + ".lease"


def lease_expired_file_for(state_file):
    return state_file + ".lease-expired"


def renew_lease(lease_file, seconds, by=None):
    """Move the lease to ``seconds`` from now; returns the new ``until`` (unix time)."""
    now = time.time()
    until = round(now + float(seconds), 3)
    write_json_atomic(lease_file, {"until": until, "renewed_at": round(now, 3), "seconds": float(seconds), "by": by})
    return until


# ------------------------------------------------------------------ the host-wide lease folder (schema 3 runs)
# Every run's servers on a host are leased in ONE folder, whatever the case or remote root, so any play can see every
# live server on the host: <lease_dir>/<run_uid>.json = {"run_uid", "case_id", "run_id", "controller", "started",
# "servers": {<inventory host>: {"until", "renewed_at", "seconds", "by", "state_file", "pid", "port", "gpus", ...}}}.
# One file per run; the entry per inventory host, because several inventory hosts (a head and a worker, loopback test
# hosts) can be one machine. Writers take the folder's lock file; the file is replaced atomically, so a reader never
# sees half of it.
DEFAULT_LEASE_DIR = "/var/tmp/repro-vllm/.leases"
LOCK_NAME = ".lock"
RUN_KEYS = ("run_uid", "case_id", "run_id", "controller", "started")


def is_run_lease(lease_file):
    """True for a host-wide run lease (``<lease_dir>/<run_uid>.json``), False for a ``<state_file>.lease``."""
    return not lease_file.endswith(".lease")


class _Locked(object):
    """The lease folder's lock (flock on ``<lease_dir>/.lock``), held while a lease file is read and rewritten."""

    def __init__(self, lease_dir):
        self.path = os.path.join(lease_dir, LOCK_NAME)
        self.fd = None

    def __enter__(self):
        folder = os.path.dirname(self.path)
        if not os.path.isdir(folder):
            os.makedirs(folder, exist_ok=True)
            # every user's plays lease their servers here (like /tmp: anyone may add, only the owner removes)
            _chmod_quietly(folder, 0o1777)
        fresh = not os.path.exists(self.path)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        if fresh:
            _chmod_quietly(self.path, 0o666)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _chmod_quietly(path, mode):
    try:
        os.chmod(path, mode)
    except OSError:
        pass  # another user made it first: its mode is theirs


def read_json(path):
    try:
        with open(path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else None
    except (OSError, IOError, ValueError):
        return None


def node_entry(lease_file, node=None):
    """The lease a server's supervisor follows: its node's entry of a run lease, or a whole ``.lease`` file."""
    data = read_json(lease_file)
    if data is None:
        return None
    if is_run_lease(lease_file):
        return (data.get("servers") or {}).get(node or "")
    return data


def renew_node(lease_file, node, seconds, by=None, info=None):
    """Move ``node``'s entry of the run lease to ``seconds`` from now (creating file and entry); returns ``until``.

    ``info``: the run's keys (RUN_KEYS, kept at the top) and the server's (state_file, pid, port, gpus, host ...).

    A server whose stop was asked (``stop_requested_at``: its play's heartbeat ended the lease because the play was
    interrupted or its process is gone) is not revived: the until stays and is returned. Ansible's workers are
    process groups of their own, so a worker of a play killed as a group (AWX's cancel) finishes its task, and a
    request or a readiness wait still in flight renewed the lease after the heartbeat had ended it (the server
    then outlived the job by the whole lease). Another server of the node (another ``state_file``) starts afresh.
    """
    info = dict(info or {})
    now = time.time()
    until = round(now + float(seconds), 3)
    with _Locked(os.path.dirname(lease_file)):
        data = read_json(lease_file) or {}
        servers = data.get("servers") or {}
        entry = dict(servers.get(node) or {})
        same = info.get("state_file") is None or entry.get("state_file") in (None, info["state_file"])
        if entry.get("stop_requested_at") is not None and same:
            return entry.get("until")
        if not same:
            entry = {}
        for key in RUN_KEYS:
            if info.get(key) is not None:
                data[key] = info.pop(key)
        servers = data.setdefault("servers", {})
        entry.update((k, v) for k, v in info.items() if v is not None)
        entry.update(until=until, renewed_at=round(now, 3), seconds=float(seconds), by=by)
        entry.pop("released_at", None)
        servers[node] = entry
        write_json_atomic(lease_file, data)
    return until


def update_node(lease_file, node, **keys):
    """Set keys on ``node``'s entry (the supervisor's ``expired_at``, the pid once known); nothing when absent."""
    with _Locked(os.path.dirname(lease_file)):
        data = read_json(lease_file)
        if not data or node not in (data.get("servers") or {}):
            return False
        data["servers"][node].update(keys)
        write_json_atomic(lease_file, data)
    return True


def release_node(lease_file, node):
    """The server of ``node`` is stopped: drop its entry, and the file once no server of the run is left."""
    with _Locked(os.path.dirname(lease_file)):
        data = read_json(lease_file)
        if data is None:
            return False
        (data.get("servers") or {}).pop(node, None)
        if data.get("servers"):
            write_json_atomic(lease_file, data)
        else:
            os.unlink(lease_file)
    return True


def list_run_leases(lease_dir):
    """Every run lease in ``lease_dir``: [(path, data)], sorted by path; unreadable files as data None."""
    try:
        names = sorted(os.listdir(lease_dir))
    except OSError:
        return []
    return [(os.path.join(lease_dir, n), read_json(os.path.join(lease_dir, n)))
            for n in names if n.endswith(".json") and not n.startswith(".")]


# ------------------------------------------------------------------ the controller's heartbeat (plugin_utils/server/_heartbeat.py)
# While the controller lives, its heartbeat calls these two on the node, each as one short command (this file's source
# and one call, run by the node's Python): beat() every lease/4 seconds, and expire_now() when the play is interrupted
# or its controller process is gone. They touch only the entry of one server (``state_file``): a later attempt of the
# same run on the same node has its own heartbeat.


def _own(entry, state_file):
    """``entry`` when it is this server's (its ``state_file``, or none written), else None."""
    if not entry or (state_file and entry.get("state_file") not in (None, state_file)):
        return None
    return entry


def beat(lease_file, node, state_file, seconds, by="controller heartbeat"):
    """Keep this server's lease at least ``seconds`` from now (a longer lease a task set stays). Returns
    {"state": "renewed"|"absent"|"expired", "until"}: "absent" - no entry of this server (not written yet, or the
    server was stopped and released), "expired" - its supervisor stopped it already (``expired_at``)."""
    now = time.time()
    with _Locked(os.path.dirname(lease_file)):
        data = read_json(lease_file)
        entry = _own((data or {}).get("servers", {}).get(node), state_file)
        if not entry:
            return {"state": "absent", "until": None}
        if entry.get("expired_at") is not None or entry.get("stop_requested_at") is not None:
            return {"state": "expired", "until": entry.get("until")}  # stopped, or being stopped: never revived
        until = max(float(entry.get("until") or 0), round(now + float(seconds), 3))
        entry.update(until=until, renewed_at=round(now, 3), heartbeat_at=round(now, 3), heartbeat_by=by)
        write_json_atomic(lease_file, data)
    return {"state": "renewed", "until": until}


def expire_now(lease_file, node, state_file, reason, wait_s):
    """End this server's lease now (its supervisor stops the group within a second, SIGKILL after its stop grace)
    and wait up to ``wait_s`` seconds until the supervisor says it stopped it (``expired_at``) or the entry is gone.
    Returns {"state": "stopped"|"released"|"absent"|"still_running", "waited_s", "processes", "reason"}: "absent"
    when there was no entry of this server to end; "released" when the entry went away meanwhile without the
    supervisor's record (another play or stop.yml stopped the server and released it: an entry is released only
    once nothing of its server is left)."""
    t0 = time.time()
    with _Locked(os.path.dirname(lease_file)):
        data = read_json(lease_file)
        entry = _own((data or {}).get("servers", {}).get(node), state_file)
        if not entry:
            return {"state": "absent", "waited_s": 0.0, "processes": None, "reason": reason}
        if entry.get("expired_at") is None:
            entry.update(until=round(t0, 3), stop_requested_at=round(t0, 3), stop_reason=reason)
            write_json_atomic(lease_file, data)
    while True:
        entry = _own(node_entry(lease_file, node), state_file)
        if entry is None or entry.get("expired_at") is not None:
            record = read_json(lease_expired_file_for(state_file)) if state_file else None
            return {"state": "stopped" if entry is not None or record else "released",
                    "waited_s": round(time.time() - t0, 3), "processes": (record or {}).get("processes"),
                    "reason": reason}
        if time.time() - t0 >= wait_s:
            return {"state": "still_running", "waited_s": round(time.time() - t0, 3), "processes": None,
                    "reason": reason}
        time.sleep(0.2)
