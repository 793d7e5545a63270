"""The one command runner of the collection.

``AnsibleModule.run_command`` has no timeout, and a hung ``nvidia-smi`` (a GPU fallen off the bus, a
wedged driver) must never hang a play on a 3 a.m. cluster.  Every external command the modules run goes
through :func:`run_cmd`: list arguments, no shell, ``LC_ALL=C``, a hard per-command timeout that kills the
whole process group, bounded output, and a result that says *how* it ended instead of raising.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import os
import signal
import subprocess
import time

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_TIMED_OUT = "timed_out"
STATUS_NOT_FOUND = "not_found"
STATUS_ERROR = "error"

DEFAULT_MAX_BYTES = 8 * 1024 * 1024


def find_binary(name, explicit=None, extra_dirs=()):
    """Return the absolute path of ``name`` or None.

    ``explicit`` (an option value) wins when given; it is returned as-is if it is an executable file, else None,
    so a mistyped path is reported as not found instead of silently falling back to another binary.
    """
    if explicit:
        return explicit if os.path.isfile(explicit) and os.access(explicit, os.X_OK) else None
    dirs = os.environ.get("PATH", "").split(os.pathsep) + list(extra_dirs) + ["/usr/bin", "/usr/sbin", "/bin", "/sbin"]
    for d in dirs:
        if not d:
            continue
        cand = os.path.join(d, name)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def _decode(data, max_bytes):
    truncated = len(data) > max_bytes
    if truncated:
        data = data[:max_bytes]
    return data.decode("utf-8", errors="replace"), truncated


def _kill_group(proc):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=1)
            return
        except subprocess.TimeoutExpired:
            continue


def run_cmd(argv, timeout=10.0, env=None, data=None, cwd=None, max_bytes=DEFAULT_MAX_BYTES, inherit_env=True):
    """Run ``argv`` (a list) with a timeout; never raises for a command that fails, hangs or is missing.

    Returns a dict: ``cmd`` (the argv), ``rc`` (int or None), ``status`` (ok, failed, timed_out, not_found,
    error), ``stdout``/``stderr`` (text, undecodable bytes replaced), ``truncated`` (bool), ``duration_ms``,
    ``timeout`` (seconds) and ``msg`` (a human sentence when it did not end well).
    """
    argv = [str(a) for a in argv]
    run_env = dict(os.environ) if inherit_env else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    run_env.update({"LC_ALL": "C", "LANG": "C"})
    if env:
        run_env.update({k: str(v) for k, v in env.items()})
    result = {"cmd": argv, "rc": None, "status": STATUS_ERROR, "stdout": "", "stderr": "", "truncated": False,
              "duration_ms": 0, "timeout": timeout, "msg": ""}
    start = time.monotonic()
    try:
        # run_command cannot time out or kill a process group; this runner exists to do both
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,  # pylint: disable=ansible-bad-function
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=run_env, cwd=cwd,
                                start_new_session=True, close_fds=True)
    except FileNotFoundError:
        result.update(status=STATUS_NOT_FOUND, rc=127, msg="%s: command not found" % argv[0])
        return result
    except PermissionError as exc:
        result.update(status=STATUS_NOT_FOUND, rc=126, msg="%s: not executable (%s)" % (argv[0], exc))
        return result
    except OSError as exc:
        result.update(status=STATUS_ERROR, msg="%s: could not start (%s)" % (argv[0], exc))
        return result
    try:
        out, err = proc.communicate(input=data.encode("utf-8") if isinstance(data, str) else data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=2)
        except (subprocess.TimeoutExpired, ValueError):
            out, err = b"", b""
        result["duration_ms"] = int((time.monotonic() - start) * 1000)
        result["stdout"], t1 = _decode(out or b"", max_bytes)
        result["stderr"], t2 = _decode(err or b"", max_bytes)
        result.update(status=STATUS_TIMED_OUT, rc=None, truncated=t1 or t2,
                      msg="%s did not finish within %ss and was killed" % (" ".join(argv), timeout))
        return result
    result["duration_ms"] = int((time.monotonic() - start) * 1000)
    result["rc"] = proc.returncode
    result["stdout"], t1 = _decode(out, max_bytes)
    result["stderr"], t2 = _decode(err, max_bytes)
    result["truncated"] = t1 or t2
    if proc.returncode == 0:
        result["status"] = STATUS_OK
    elif proc.returncode in (126, 127) and not out:
        result["status"] = STATUS_NOT_FOUND
        result["msg"] = "%s exited %d (not found or not executable)" % (argv[0], proc.returncode)
    else:
        result["status"] = STATUS_FAILED
        result["msg"] = "%s exited %d" % (" ".join(argv), proc.returncode)
    return result


def summary(result):
    """The part of a run result worth keeping in a record (no bulky output)."""
    return {k: result.get(k) for k in ("cmd", "rc", "status", "duration_ms", "timeout", "truncated", "msg")}
