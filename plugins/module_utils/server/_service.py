"""The failing production server itself, frozen: ``service.json`` of a fingerprint run.

``repro_vllm_service`` names the server one of six ways (``kind``): ``pid`` (a bare pid), ``match`` (a regular
expression over the command line), ``systemd`` (a unit), ``docker``/``podman`` (a container) or ``kubectl`` (a
pod, through kubectl on the host). The record holds what the isolation decision and a reader of the hand-off
need: the command line and environment (both redacted), the image digest, the libcuda the process mapped, the
restart count and last exit codes, and the current and previous logs, size-capped (head and tail kept, the cut
recorded). Every command goes through ``_cmd.run_cmd`` with a timeout; nothing here raises for a missing tool.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import json
import os
import re

from ansible_collections.repro.vllm.plugins.module_utils.common._cmd import find_binary, run_cmd
from ansible_collections.repro.vllm.plugins.module_utils.gpu._process import read_maps_libcuda
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import redact_argv, redact_env, redact_text

KINDS = ("pid", "match", "systemd", "docker", "podman", "kubectl")
DEFAULT_LOG_BYTES = 256 * 1024
DEFAULT_TIMEOUT = 15.0
LOG_FILES = {"current": "logs/service-current.log", "previous": "logs/service-previous.log"}
# ``systemctl show`` properties read (systemd.exec(5)/systemd.service(5); NRestarts since systemd 235)
SYSTEMD_PROPS = ("Id", "LoadState", "MainPID", "ExecMainPID", "ExecMainCode", "ExecMainStatus", "ExecMainStartTimestamp",
                 "ExecMainExitTimestamp", "NRestarts", "Result", "ActiveState", "SubState", "Restart",
                 "InvocationID", "FragmentPath")
_CUT_MARK = "\n[repro.vllm: %d bytes cut from the middle of this log]\n"


class ServiceError(ValueError):
    """A ``repro_vllm_service`` that cannot be used as given."""


def validate_spec(spec):
    """The normalised spec, or ServiceError naming the fix."""
    if not isinstance(spec, dict):
        raise ServiceError("repro_vllm_service must be a dict with 'kind' (one of %s)" % ", ".join(KINDS))
    kind = spec.get("kind")
    if kind not in KINDS:
        raise ServiceError("repro_vllm_service.kind is %r; use one of %s" % (kind, ", ".join(KINDS)))
    need = {"pid": "pid", "match": "pattern", "systemd": "name", "docker": "name", "podman": "name",
            "kubectl": "name"}[kind]
    if spec.get(need) in (None, ""):
        raise ServiceError("repro_vllm_service kind %s needs '%s'" % (kind, need))
    out = dict(spec)
    if kind == "pid":
        try:
            out["pid"] = int(spec["pid"])
        except (TypeError, ValueError):
            raise ServiceError("repro_vllm_service.pid must be a process id, got %r" % (spec["pid"],))
    if kind == "match":
        try:
            re.compile(spec["pattern"])
        except re.error as exc:
            raise ServiceError("repro_vllm_service.pattern is not a regular expression (%s)" % exc)
    return out


# ------------------------------------------------------------------------------------------------------ logs
def cap_text(text, max_bytes=DEFAULT_LOG_BYTES):
    """(text, info): at most ``max_bytes`` kept, half from the head and half from the tail, the cut marked in the
    text; info is ``{bytes, kept_bytes, cut_bytes}`` (sizes of the UTF-8 encoding)."""
    data = (text or "").encode("utf-8", "replace")
    total = len(data)
    if total <= max_bytes:
        return data.decode("utf-8", "replace"), {"bytes": total, "kept_bytes": total, "cut_bytes": 0}
    head = max_bytes // 2
    tail = max_bytes - head
    cut = total - head - tail
    kept = (data[:head].decode("utf-8", "replace") + _CUT_MARK % cut + data[total - tail:].decode("utf-8", "replace"))
    return kept, {"bytes": total, "kept_bytes": head + tail, "cut_bytes": cut}


# ------------------------------------------------------------------------------------------------------ /proc
def parse_cmdline(data):
    """``/proc/<pid>/cmdline`` bytes -> argv list."""
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    return [a.decode("utf-8", "replace") for a in (data or b"").split(b"\0") if a != b""] if data else []


def parse_environ(data):
    """``/proc/<pid>/environ`` bytes -> {name: value}."""
    return _env_list(parse_cmdline(data))


def _env_list(items):
    """``NAME=value`` strings (an environ, a container's ``Config.Env``) -> {name: value}."""
    env = {}
    for item in items or []:
        name, sep, value = str(item).partition("=")
        if sep and name:
            env[name] = value
    return env


def _read_bytes(path, limit=4 * 1024 * 1024):
    try:
        with open(path, "rb") as fh:
            return fh.read(limit), None
    except (OSError, IOError) as exc:
        return None, "%s: %s" % (path, exc.strerror or exc)


def read_process(pid, proc_root="/proc", key=None):
    """What /proc says about one process: ``{pid, alive, exe, cmdline, env, libcuda, errors}`` (argv and
    environment redacted with ``_redact``; ``errors`` names every file that could not be read and why)."""
    base = os.path.join(proc_root, str(pid))
    rec = {"pid": int(pid), "alive": os.path.isdir(base), "exe": None, "cmdline": [], "env": {}, "libcuda": None,
           "errors": []}
    if not rec["alive"]:
        rec["errors"].append("%s: no such process" % base)
        return rec
    raw, err = _read_bytes(os.path.join(base, "cmdline"))
    if err:
        rec["errors"].append(err)
    rec["cmdline"] = redact_argv(parse_cmdline(raw), key)
    raw, err = _read_bytes(os.path.join(base, "environ"))
    if err:
        rec["errors"].append(err + " (read it as the server's user or root)")
    rec["env"] = redact_env(parse_environ(raw), key)
    try:
        rec["exe"] = os.readlink(os.path.join(base, "exe"))
    except OSError as exc:
        rec["errors"].append("%s: %s" % (os.path.join(base, "exe"), exc.strerror or exc))
    libs, err = read_maps_libcuda(proc_root, pid)
    rec["libcuda"] = libs
    if err:
        rec["errors"].append(err)
    return rec


def match_pids(pattern, proc_root="/proc", exclude=()):
    """Pids whose command line (arguments joined by spaces) matches ``pattern`` (re.search), lowest first;
    ``exclude`` pids (this module and its parents) never match."""
    rx = re.compile(pattern)
    out = []
    for name in os.listdir(proc_root):
        if not name.isdigit() or int(name) in exclude:
            continue
        raw, err = _read_bytes(os.path.join(proc_root, name, "cmdline"), limit=256 * 1024)
        if err or not raw:
            continue
        if rx.search(" ".join(parse_cmdline(raw))):
            out.append(int(name))
    return sorted(out)


def own_lineage(proc_root="/proc"):
    """This process and its ancestors (a pattern that matches the play's own command must not pick the play)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        raw, err = _read_bytes(os.path.join(proc_root, str(pid), "stat"), limit=4096)
        if err or not raw:
            break
        try:
            pid = int(raw.rsplit(b")", 1)[1].split()[1])
        except (IndexError, ValueError):
            break
    return pids


# ------------------------------------------------------------------------------------------------------ parsers
def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def parse_systemctl_show(text):
    """``systemctl show -p A,B ...`` (``Name=value`` lines) -> dict."""
    out = {}
    for line in (text or "").splitlines():
        name, sep, value = line.partition("=")
        if sep:
            out[name.strip()] = value
    return out


def systemd_state(props):
    """The service view of ``systemctl show`` properties. ``ExecMainStatus`` is the exit status (or signal number
    when ``ExecMainCode`` says killed/dumped) of the main process's last exit; 0 with no exit yet."""
    code = props.get("ExecMainCode")
    status = _int(props.get("ExecMainStatus"))
    exited = bool(props.get("ExecMainExitTimestamp"))
    last = None
    if exited and status is not None:
        # ExecMainCode is a CLD_* number: 1 exited, 2 killed, 3 dumped (siginfo(2))
        last = {"code": {"1": "exited", "2": "killed", "3": "dumped"}.get(str(code), code), "status": status}
    return {
        "unit": props.get("Id"),
        "main_pid": _int(props.get("MainPID")) or None,
        "restart_count": _int(props.get("NRestarts")),
        "exit_codes": [status] if last and last["code"] == "exited" else [],
        "signals": [status] if last and last["code"] in ("killed", "dumped") else [],
        "state": {k: props.get(k) for k in ("ActiveState", "SubState", "Result", "Restart", "ExecMainStartTimestamp",
                                            "ExecMainExitTimestamp", "InvocationID", "FragmentPath")},
    }


def container_state(text, key=None):
    """``docker|podman container inspect NAME`` (a JSON list) -> the service view of its first entry.

    ``RestartCount`` counts the restarts the engine's restart policy made; ``State.ExitCode`` is the last exit
    status (0 while it runs and has never exited). ``ImageDigest`` is podman's manifest digest; docker gives the
    image id (``Image``) only, which is resolved to a digest with ``_container`` separately.
    """
    data = json.loads(text)
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise ValueError("container inspect: expected a non-empty JSON list")
    c = data[0]
    state = c.get("State") or {}
    cfg = c.get("Config") or {}
    argv = [c.get("Path")] + list(c.get("Args") or []) if c.get("Path") else []
    exit_code = _int(state.get("ExitCode"))
    never_exited = str(state.get("FinishedAt") or "").startswith("0001-01-01")
    return {
        "id": c.get("Id"),
        "name": str(c.get("Name") or "").lstrip("/") or None,
        "main_pid": _int(state.get("Pid")) or None,
        "restart_count": _int(c.get("RestartCount")),
        "exit_codes": [] if exit_code is None or (never_exited and exit_code == 0) else [exit_code],
        "signals": [],
        "image": {"reference": cfg.get("Image") or c.get("ImageName"), "id": c.get("Image"),
                  "digest": c.get("ImageDigest")},
        "cmdline": redact_argv(argv, key),
        "env": redact_env(_env_list(cfg.get("Env")), key),
        "state": {k: state.get(k) for k in ("Status", "Running", "Restarting", "OOMKilled", "Dead", "Error",
                                            "StartedAt", "FinishedAt")},
        "restart_policy": ((c.get("HostConfig") or {}).get("RestartPolicy") or {}).get("Name"),
    }


def _digest_of(image_id):
    """kubelet imageID (``docker-pullable://repo@sha256:..``, ``repo@sha256:..``, ``sha256:..``) -> digest."""
    m = re.search(r"(sha256:[0-9a-f]{64})", image_id or "")
    return m.group(1) if m else None


def pod_state(text, container=None, key=None):
    """``kubectl get pod NAME -o json`` -> the service view of one container (``container`` or the first).

    From ``status.containerStatuses[]``: ``restartCount``, ``lastState.terminated.exitCode`` (the previous
    instance) and ``state.terminated.exitCode`` (the current one, when it is down), ``imageID``'s digest.
    """
    pod = json.loads(text)
    if not isinstance(pod, dict) or pod.get("kind") not in (None, "Pod"):
        raise ValueError("kubectl get pod -o json: expected one Pod object")
    spec_cs = (pod.get("spec") or {}).get("containers") or []
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    name = container or (spec_cs[0].get("name") if spec_cs else (statuses[0].get("name") if statuses else None))
    st = next((s for s in statuses if s.get("name") == name), {})
    sp = next((s for s in spec_cs if s.get("name") == name), {})
    codes, signals, reasons = [], [], []
    for part in ((st.get("lastState") or {}).get("terminated"), (st.get("state") or {}).get("terminated")):
        if part:
            if _int(part.get("exitCode")) is not None:
                codes.append(_int(part.get("exitCode")))
            if _int(part.get("signal")):
                signals.append(_int(part.get("signal")))
            reasons.append(part.get("reason"))
    argv = list(sp.get("command") or []) + list(sp.get("args") or [])
    env = dict((e.get("name"), e.get("value") if "value" in e else "<from %s>" % ",".join(
        k for k in e if k != "name")) for e in sp.get("env") or [] if e.get("name"))
    meta = pod.get("metadata") or {}
    return {
        "id": meta.get("uid"),
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "container": name,
        "node": (pod.get("spec") or {}).get("nodeName"),
        "main_pid": None,
        "restart_count": _int(st.get("restartCount")),
        "exit_codes": codes,
        "signals": signals,
        "image": {"reference": st.get("image") or sp.get("image"), "id": st.get("imageID"),
                  "digest": _digest_of(st.get("imageID"))},
        "cmdline": redact_argv(argv, key),
        "env": redact_env(env, key),
        "state": {"phase": (pod.get("status") or {}).get("phase"), "ready": st.get("ready"),
                  "current": sorted((st.get("state") or {}).keys()), "terminated_reasons": [r for r in reasons if r]},
    }


# ------------------------------------------------------------------------------------------------------ gather
def _cmd_note(res):
    return {"cmd": res["cmd"], "rc": res["rc"], "status": res["status"]}


def _log(rec, which, res, max_bytes, key):
    if res["status"] != "ok":
        rec["logs"][which] = {"status": res["status"], "cmd": res["cmd"],
                              "msg": redact_text(res.get("msg") or res.get("stderr", "")[-400:], key)}
        return None
    text = res.get("stdout", "")
    if res.get("stderr"):
        text += ("\n" if text and not text.endswith("\n") else "") + res["stderr"]
    kept, info = cap_text(redact_text(text, key), max_bytes)
    info.update({"status": "ok", "cmd": res["cmd"], "path": LOG_FILES[which]})
    rec["logs"][which] = info
    return kept


def empty_record(spec):
    return {"kind": spec.get("kind"), "name": spec.get("name") or spec.get("pattern"),
            "pid": spec.get("pid"), "status": "ok", "msg": None, "cmdline": [], "env": {}, "exe": None,
            "image": None, "libcuda": None, "restart_count": None, "exit_codes": [], "signals": [], "state": {},
            "logs": {}, "commands": [], "errors": []}


def _merge_proc(rec, proc):
    """Fill argv/env/exe/libcuda from /proc (``read_process``) when the main pid is visible here (same pid
    namespace)."""
    if not proc["alive"]:
        rec["errors"].extend(proc["errors"])
        return
    rec["pid"] = proc["pid"]
    if proc["cmdline"]:
        rec["cmdline"] = proc["cmdline"]
    if proc["env"]:
        rec["env"] = proc["env"]
    rec["exe"] = proc["exe"]
    rec["libcuda"] = proc["libcuda"]
    rec["errors"].extend(proc["errors"])


def _supervisor_state(rec, path):
    """A home-made supervisor's state file (JSON ``{"restart_count": int, "exit_codes": [int, ...]}``, the
    contract documented for ``repro_vllm_service.state_file``): what a bare process has no kernel record of."""
    raw, err = _read_bytes(path, limit=1024 * 1024)
    if err:
        rec["errors"].append(err)
        return
    try:
        data = json.loads(raw.decode("utf-8", "replace"))
    except ValueError as exc:
        rec["errors"].append("%s is not JSON (%s)" % (path, exc))
        return
    if not isinstance(data, dict):
        rec["errors"].append("%s: expected a JSON object with restart_count and exit_codes" % path)
        return
    if _int(data.get("restart_count")) is not None:
        rec["restart_count"] = _int(data.get("restart_count"))
    codes = [_int(c) for c in data.get("exit_codes") or [] if _int(c) is not None]
    rec["exit_codes"] = codes[-10:]
    rec["state"] = {"state_file": path}


def gather(spec, run=run_cmd, proc_root="/proc", max_log_bytes=DEFAULT_LOG_BYTES, timeout=DEFAULT_TIMEOUT,
           binary=None, key=None, journal_lines=5000):
    """(record, logs) for ``spec``: ``record`` is service.json, ``logs`` maps current/previous to capped text.

    ``record["status"]`` is ok, not_found (nothing matched, or the unit/container/pod is unknown) or error (the
    tool is missing, timed out or failed); ``msg`` then says what and how to fix it.
    """
    spec = validate_spec(spec)
    kind = spec["kind"]
    rec = empty_record(spec)
    logs = {}

    def call(argv, what):
        res = run(argv, timeout=timeout)
        rec["commands"].append(_cmd_note(res))
        if res["status"] != "ok":
            rec["errors"].append("%s: %s" % (what, redact_text(res.get("msg") or res.get("stderr", "")[-400:], key)))
        return res

    if kind in ("pid", "match"):
        if kind == "match":
            pids = match_pids(spec["pattern"], proc_root, exclude=own_lineage(proc_root))
            rec["matched_pids"] = pids
            if not pids:
                rec.update(status="not_found", msg="no process command line matches %r; check the pattern with "
                                                   "'pgrep -af'" % spec["pattern"])
                return rec, logs
            pid = pids[0]
        else:
            pid = spec["pid"]
        proc = read_process(pid, proc_root, key)
        if not proc["alive"]:
            rec.update(status="not_found", msg="process %s is not running" % pid)
            return rec, logs
        _merge_proc(rec, proc)
        rec["restart_count"] = _int(spec.get("restart_count"))
        if spec.get("state_file"):
            _supervisor_state(rec, spec["state_file"])
        for which in ("current", "previous"):
            path = spec.get("log_%s" % which)
            if path:
                raw, err = _read_bytes(path, limit=64 * 1024 * 1024)
                if err:
                    rec["logs"][which] = {"status": "error", "msg": err}
                    continue
                kept, info = cap_text(redact_text(raw.decode("utf-8", "replace"), key), max_log_bytes)
                info.update({"status": "ok", "source": path, "path": LOG_FILES[which]})
                rec["logs"][which] = info
                logs[which] = kept
        return rec, logs

    tool = {"systemd": "systemctl", "docker": "docker", "podman": "podman", "kubectl": "kubectl"}[kind]
    exe = find_binary(tool, binary)
    if not exe:
        rec.update(status="error", msg="%s not found on this host%s; install it or set repro_vllm_service.binary" % (
            tool, " at %s" % binary if binary else ""))
        return rec, logs

    if kind == "systemd":
        res = call([exe, "show", "-p", ",".join(SYSTEMD_PROPS), "--", spec["name"]], "systemctl show")
        if res["status"] != "ok":
            rec.update(status="error", msg="systemctl show %s failed: %s" % (spec["name"], rec["errors"][-1]))
            return rec, logs
        props = parse_systemctl_show(res["stdout"])
        if props.get("LoadState") == "not-found":
            rec.update(status="not_found", msg="systemd has no unit %s on this host; 'systemctl list-units' lists "
                                               "them" % spec["name"])
            return rec, logs
        view = systemd_state(props)
        rec.update({k: view[k] for k in ("restart_count", "exit_codes", "signals", "state")})
        rec["unit"] = view["unit"]
        if view["main_pid"]:
            _merge_proc(rec, read_process(view["main_pid"], proc_root, key))
        journal = find_binary("journalctl")
        if journal:
            base = [journal, "--no-pager", "-o", "short-iso", "-n", str(journal_lines), "-u", spec["name"]]
            # current: this invocation of the unit; previous: the unit's journal of this boot, every invocation
            # (systemd's own "Scheduled restart job" lines included)
            if props.get("InvocationID"):
                res = call(base + ["_SYSTEMD_INVOCATION_ID=%s" % props["InvocationID"]], "journalctl")
                logs["current"] = _log(rec, "current", res, max_log_bytes, key)
            res = call(base + ["-b"], "journalctl")
            logs["previous"] = _log(rec, "previous", res, max_log_bytes, key)
        else:
            rec["errors"].append("journalctl not found: the unit's logs were not read")
        return rec, {k: v for k, v in logs.items() if v is not None}

    if kind in ("docker", "podman"):
        res = call([exe, "container", "inspect", spec["name"]], "%s container inspect" % tool)
        if res["status"] != "ok":
            unknown = re.search(r"no such (container|object)", res.get("stderr", ""), re.IGNORECASE)
            rec.update(status="not_found" if unknown else "error",
                       msg="%s container inspect %s: %s" % (tool, spec["name"], rec["errors"][-1]))
            return rec, logs
        try:
            view = container_state(res["stdout"], key)
        except ValueError as exc:
            rec.update(status="error", msg="%s container inspect %s: %s" % (tool, spec["name"], exc))
            return rec, logs
        for name in ("id", "restart_count", "exit_codes", "signals", "image", "cmdline", "env", "state",
                     "restart_policy"):
            rec[name] = view[name]
        rec["container"] = view["name"]
        if view["main_pid"]:
            _merge_proc(rec, read_process(view["main_pid"], proc_root, key))
            rec["cmdline"], rec["env"] = view["cmdline"] or rec["cmdline"], view["env"] or rec["env"]
        # the engine keeps one log across restarts: "current" is all of it (capped); there is no separate previous
        res = call([exe, "logs", spec["name"]], "%s logs" % tool)
        logs["current"] = _log(rec, "current", res, max_log_bytes, key)
        return rec, {k: v for k, v in logs.items() if v is not None}

    # kubectl
    ns = ["-n", spec["namespace"]] if spec.get("namespace") else []
    res = call([exe, "get", "pod", spec["name"]] + ns + ["-o", "json"], "kubectl get pod")
    if res["status"] != "ok":
        unknown = "NotFound" in res.get("stderr", "")
        rec.update(status="not_found" if unknown else "error",
                   msg="kubectl get pod %s: %s" % (spec["name"], rec["errors"][-1]))
        return rec, logs
    try:
        view = pod_state(res["stdout"], spec.get("container"), key)
    except ValueError as exc:
        rec.update(status="error", msg="kubectl get pod %s: %s" % (spec["name"], exc))
        return rec, logs
    for name in ("id", "restart_count", "exit_codes", "signals", "image", "cmdline", "env", "state", "namespace",
                 "container", "node"):
        rec[name] = view[name]
    cont = ["-c", view["container"]] if view["container"] else []
    res = call([exe, "logs", spec["name"]] + ns + cont, "kubectl logs")
    logs["current"] = _log(rec, "current", res, max_log_bytes, key)
    if rec["restart_count"]:
        res = call([exe, "logs", spec["name"], "--previous"] + ns + cont, "kubectl logs --previous")
        logs["previous"] = _log(rec, "previous", res, max_log_bytes, key)
    return rec, {k: v for k, v in logs.items() if v is not None}


# ---------------------------------------------------------------------------------------------- into the run
def record_parts(record, logs):
    """What of a ``served_process`` result goes into the host's part of the run, as ``[{part, json|content}]`` with
    names relative to that part: ``service.json`` (the record) and each log the server had that is not empty, at the
    path its record names (``LOG_FILES``). The fingerprint's ``host_record`` action and the ``service`` role write
    these."""
    parts = [{"part": "service.json", "json": record}]
    for name in sorted(logs or {}):
        info = ((record or {}).get("logs") or {}).get(name) or {}
        if logs[name] and info.get("path"):
            parts.append({"part": info["path"], "content": logs[name]})
    return parts


def progress_line(host, record):
    """The console's line for the production server of ``host`` as it was frozen."""
    rec = record or {}
    return "service | %s | %s %s | pid %s | restarts %s | last exit codes %s%s" % (
        host, rec.get("kind"), rec.get("status"), rec.get("pid"), rec.get("restart_count"), rec.get("exit_codes"),
        (" | %s" % rec["msg"]) if rec.get("msg") else "")
