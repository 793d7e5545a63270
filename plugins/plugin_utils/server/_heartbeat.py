"""The controller's heartbeat of a started server (controller side; the node side is module_utils/server/_lease.py).

A server's lease is short (``repro_vllm_server_lease``, 60 s by default) and its supervisor on the node stops the
whole group once it has passed. What keeps it alive is not a task but a heartbeat that lives exactly as long as the
controller's play: the action of ``repro.vllm.vllm_server`` (state=started or checked) starts one per server, a small
daemon forked from the task's worker (so it holds the task's connection to the node, ssh with its control socket or
local) in its own session (a Ctrl-C to the play's process group does not reach it). It:

- renews the server's lease every lease/4 seconds over that connection (``_lease.beat``: never shortens a longer lease
  a task set), so a start that waits minutes for readiness, or a long request, is never cut short while the
  controller lives; three beats may fail before the lease runs out;
- ends when the server's lease entry is gone (the play stopped it) or its supervisor stopped it;
- stops the server at once (``_lease.expire_now``: the lease ends now, the supervisor stops the group, SIGKILL after
  the stop grace) and waits for the stop when the play asks (SIGUSR1: the play was interrupted; the
  ``record_log``/``console`` callbacks ask from their SIGINT/SIGTERM handler and wait, see ``stop_all``) or when the
  controller's main process is gone (SIGKILL, a crash, a lost AWX node: then the daemon is gone too, and the lease
  runs out within ``repro_vllm_server_lease`` seconds).

The play and its heartbeats meet in a per-process folder on the controller (``registry_dir``): one JSON file per
heartbeat (its pid, node, lease and stop wait), and ``<key>.stopped`` with what a requested stop found.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import glob
import hashlib
import inspect
import json
import os
import shlex
import signal
import tempfile
import time

from ansible_collections.repro.vllm.plugins.module_utils.server import _lease

STOP_SIGNALS = {"SIGINT": signal.SIGUSR1, "SIGTERM": signal.SIGUSR2}
_REASONS = {signal.SIGUSR1: "the play was interrupted (SIGINT: Ctrl-C, an AWX job cancel)",
            signal.SIGUSR2: "the play was terminated (SIGTERM)"}


def registry_dir(main_pid):
    """The folder where the play's main process (``main_pid``) and its heartbeats meet."""
    return os.path.join(tempfile.gettempdir(), "repro-vllm-heartbeat-%d-%d" % (os.getuid(), main_pid))


def key_of(lease_file, node, state_file):
    return hashlib.sha1(("%s|%s|%s" % (lease_file, node, state_file)).encode("utf-8")).hexdigest()[:16]


def period_of(lease_seconds):
    """Seconds between two beats: a quarter of the lease (three may fail), at least one."""
    return max(1.0, float(lease_seconds) / 4.0)


def remote_command(interpreter, func, kwargs):
    """One shell command that runs ``_lease.<func>(**kwargs)`` with the node's Python and prints its JSON answer:
    the source of module_utils/server/_lease.py (standard library only) and one call, so the node needs nothing installed."""
    if func not in ("beat", "expire_now"):
        raise ValueError("not a heartbeat call: %s" % func)
    script = inspect.getsource(_lease) + (
        "\nimport json as _j, sys as _s\n_s.stdout.write(_j.dumps(%s(**_j.loads(_s.argv[1]))))\n" % func)
    return "%s -c %s %s" % (shlex.quote(interpreter), shlex.quote(script), shlex.quote(json.dumps(kwargs)))


def process_start(pid):
    """The start time (clock ticks since boot) of ``pid``, None when it is gone or a zombie: a pid and its start
    are one process."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def alive(pid, start=None):
    now = process_start(pid)
    return now is not None and (start is None or now == start)


def _answer(out):
    try:
        data = json.loads(out.strip().splitlines()[-1])
        return data if isinstance(data, dict) else None
    except (ValueError, IndexError, AttributeError):
        return None


class Heartbeat(object):
    """The daemon's loop. ``execute(cmd) -> (rc, stdout, stderr)`` runs one command on the node (the task's
    connection); ``main_pid``/``main_start``: the play's main process."""

    def __init__(self, execute, interpreter, lease_file, node, state_file, seconds, stop_grace, main_pid,
                 main_start, folder, key):
        self.execute = execute
        self.interpreter = interpreter
        self.where = dict(lease_file=lease_file, node=node, state_file=state_file)
        self.seconds = float(seconds)
        self.stop_wait = float(stop_grace) + 10.0
        self.main_pid, self.main_start = main_pid, main_start
        self.folder, self.key = folder, key
        self.asked = None  # the signal the play sent (STOP_SIGNALS), once it did

    def call(self, func, timeout=None, **kwargs):
        """One command on the node; ``timeout`` seconds at most (a hung connection fails this call, the next beat
        tries again)."""
        kwargs.update(self.where)
        timeout = timeout or max(10.0, period_of(self.seconds) * 2)
        previous = signal.signal(signal.SIGALRM, _timed_out)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            rc, out, err = self.execute(remote_command(self.interpreter, func, kwargs))
        except Exception as exc:  # pylint: disable=broad-except
            return {"state": "error", "error": str(exc)[:300]}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        answer = _answer(out) if rc == 0 else None
        return answer or {"state": "error", "error": ("rc %s: %s" % (rc, (err or out or "")[-300:])).strip()}

    def run(self):
        """Beat until the server is gone; stop it when asked or when the play's process is gone. Returns why it
        ended (also written, with the stop's answer, to ``<key>.stopped`` when it stopped the server)."""
        started = time.monotonic()
        seen = False
        next_beat = 0.0
        while True:
            gone = not alive(self.main_pid, self.main_start)
            if self.asked is not None or gone:
                reason = _REASONS.get(self.asked) or "the play's controller process %d is gone" % self.main_pid
                answer = self.call("expire_now", timeout=self.stop_wait + 30.0, reason=reason, wait_s=self.stop_wait)
                answer.update(node=self.where["node"], state_file=self.where["state_file"])
                _lease.write_json_atomic(os.path.join(self.folder, self.key + ".stopped"), answer)
                return "stopped: %s" % answer.get("state")
            if time.monotonic() >= next_beat:
                answer = self.call("beat", seconds=self.seconds)
                state = answer.get("state")
                if state == "renewed":
                    seen = True
                elif state == "expired" or (state == "absent" and seen):
                    return "the server is %s" % ("stopped by its supervisor" if state == "expired" else "released")
                elif state == "absent" and time.monotonic() - started > max(2 * self.seconds, 60.0):
                    return "no lease entry of this server appeared (it never started)"
                next_beat = time.monotonic() + period_of(self.seconds)
            time.sleep(0.2)


class CallTimeout(Exception):
    pass


def _timed_out(_signum, _frame):
    raise CallTimeout("no answer from the node within the call's time limit")


def _ask(beat, signum, _frame):
    beat.asked = signum


def beating(lease_file, node, state_file):
    """True when a heartbeat of this play already beats for this server (the action then builds nothing)."""
    known = _lease.read_json(os.path.join(registry_dir(os.getppid()),
                                          key_of(lease_file, node, state_file) + ".json"))
    return bool(known) and alive(known.get("pid", 0), known.get("pid_start"))


def start(execute, interpreter, lease_file, node, state_file, seconds, stop_grace, detach=None):
    """Fork this server's heartbeat from the task's worker; returns its pid (None when one already beats for it).
    The worker's parent is the play's main process: the heartbeat watches that one. ``detach``: called first in the
    heartbeat (the action unhooks Ansible's display from the play's results queue there)."""
    main_pid = os.getppid()
    main_start = process_start(main_pid)
    folder = registry_dir(main_pid)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    key = key_of(lease_file, node, state_file)
    entry_path = os.path.join(folder, key + ".json")
    known = _lease.read_json(entry_path)
    if known and alive(known.get("pid", 0), known.get("pid_start")):
        return None
    rfd, wfd = os.pipe()
    first = os.fork()
    if first:
        os.close(wfd)
        with os.fdopen(rfd, "rb") as fh:
            got = fh.read()
        os.waitpid(first, 0)
        return int(got) if got.strip() else None
    try:  # the first child: a session of its own, then the daemon, then gone
        os.close(rfd)
        os.setsid()
        pid = os.fork()
        if pid:
            os.write(wfd, str(pid).encode())
            os._exit(0)
        os.close(wfd)
        _daemon(execute, interpreter, lease_file, node, state_file, seconds, stop_grace, main_pid, main_start,
                folder, key, entry_path, detach)
    finally:
        os._exit(0)
    return None  # not reached


def _daemon(execute, interpreter, lease_file, node, state_file, seconds, stop_grace, main_pid, main_start, folder,
            key, entry_path, detach):
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    if detach is not None:
        try:
            detach()
        except Exception:  # pylint: disable=broad-except
            pass
    beat = Heartbeat(execute, interpreter, lease_file, node, state_file, seconds, stop_grace, main_pid, main_start,
                     folder, key)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in STOP_SIGNALS.values():
        signal.signal(signum, lambda s, f: _ask(beat, s, f))
    _lease.write_json_atomic(entry_path, {"pid": os.getpid(), "pid_start": process_start(os.getpid()), "node": node,
                                          "lease_file": lease_file, "state_file": state_file,
                                          "stop_wait": beat.stop_wait, "seconds": float(seconds)})
    beat.run()
    # the play reads <key>.stopped and removes both (stop_all); a play that is gone reads nothing: clean up here
    if not os.path.exists(os.path.join(folder, key + ".stopped")) or not alive(main_pid, main_start):
        forget(folder, key)


def forget(folder, key):
    """Remove a heartbeat's files, and the play's folder once it is empty."""
    for suffix in (".json", ".stopped"):
        try:
            os.unlink(os.path.join(folder, key + suffix))
        except OSError:
            pass
    try:
        os.rmdir(folder)
    except OSError:
        pass  # another heartbeat of the play is still there


def stop_all(signame):
    """The play's main process was interrupted (``signame``: SIGINT or SIGTERM): ask every heartbeat of this play to
    stop its server now and wait for their answers, at most their stop wait (the stop grace plus 10 s) plus 5 s.
    Returns [{node, state ("stopped"|"released"|"absent"|"still_running"|"error"|"no answer"), waited_s, processes,
    reason}]."""
    folder = registry_dir(os.getpid())
    asked = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        entry = _lease.read_json(path)
        if not entry or not alive(entry.get("pid", 0), entry.get("pid_start")):
            continue
        try:
            os.kill(entry["pid"], STOP_SIGNALS.get(signame, signal.SIGUSR1))
        except OSError:
            continue
        asked.append((path[:-len(".json")] + ".stopped", entry))
    if not asked:
        return []
    deadline = time.monotonic() + max(entry.get("stop_wait", 25.0) for _done, entry in asked) + 5.0
    answers = {}
    while len(answers) < len(asked) and time.monotonic() < deadline:
        for done, entry in asked:
            if done not in answers and os.path.exists(done):
                answers[done] = _lease.read_json(done) or {"state": "error", "node": entry.get("node")}
        if len(answers) < len(asked):
            time.sleep(0.2)
    out = []
    for done, entry in asked:
        out.append(answers.get(done) or {"state": "no answer", "node": entry.get("node"),
                                         "state_file": entry.get("state_file"), "waited_s": None})
        if done in answers:
            forget(folder, os.path.basename(done)[:-len(".stopped")])
    return out


def stop_line(answer):
    """One console line for a server the interrupt stopped (or could not)."""
    node = answer.get("node") or "?"
    state = answer.get("state")
    if state == "stopped":
        procs = answer.get("processes") or []
        return ("interrupt | %s | server stopped before the play ended: its lease was ended and its supervisor stopped "
                "%d process(es) in %s s" % (node, len(procs), answer.get("waited_s")))
    if state == "released":
        return ("interrupt | %s | server stopped before the play ended: another play or stop.yml stopped it and "
                "released its lease (%s s)" % (node, answer.get("waited_s")))
    if state == "absent":
        return "interrupt | %s | no server of this play was running" % node
    return ("interrupt | %s | the server may still be running (%s%s): stop it with playbooks/stop.yml; its lease ends "
            "it otherwise" % (node, state, (": " + answer["error"]) if answer.get("error") else ""))
