"""The host side of one host's record part (module ``repro.vllm.host_record``, action of the same name).

* :func:`basics` - OS, kernel, Python and the (redacted) environment, read from files and the interpreter:
  no ``setup`` module, no external command.
* :func:`prepare_file` - one host file a stage names (server log, memory trace), size-capped (head and tail
  kept, what was cut and its sha256 noted) and redacted here, before anything leaves the host.  Small results
  travel inline in the module result; larger ones are written into a staging folder that is unique to this
  call (``tempfile.mkdtemp``) and removed by the action once the controller verified its copy.
* :func:`host_status` - ``ok`` or ``degraded`` with the reasons: a hung, skipped or failing ``nvidia-smi`` (or
  container runtime) is never ``ok``.

Python 3.9+ standard library only.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import base64
import datetime
import hashlib
import os
import platform
import sys
import tempfile

from ansible_collections.repro.vllm.plugins.module_utils.common._redact import redact_env, redact_text

CHUNK = 1024 * 1024
DEFAULT_LOG_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_INLINE_MAX_BYTES = 4 * 1024 * 1024
STAGING_PREFIX = "repro-vllm-stage-"

# host_record's options, one spec for its module (which documents them all) and its action: what the module reads on
# the host (the action passes exactly these on) and what the action reads on the controller. The action gives the
# service_* options their defaults (_service's); the module accepts them only so that its spec documents them.
HOST_SPEC = dict(
    gather=dict(type="list", elements="str", default=[], choices=["basics", "gpu", "container", "collect_env"]),
    collect_env_argv=dict(type="list", elements="str", default=[]),
    collect_env_timeout=dict(type="float", default=120.0),
    collect_env_container=dict(type="dict"),
    image=dict(type="str", default=""),
    nvidia_smi_path=dict(type="str", default=""),
    command_timeout=dict(type="float", default=10.0),
    files=dict(type="list", elements="dict", default=[], options=dict(
        src=dict(type="str", required=True),
        part=dict(type="str", required=True),
        required=dict(type="bool", default=False),
        redact=dict(type="bool", default=True),
    )),
    log_max_bytes=dict(type="int", default=DEFAULT_LOG_MAX_BYTES),
    inline_max_bytes=dict(type="int", default=DEFAULT_INLINE_MAX_BYTES),
    staging_root=dict(type="str", default=""),
)
CONTROLLER_SPEC = dict(
    run_path=dict(type="path", required=True),
    part_dir=dict(type="str"),
    stage=dict(type="str", default="fingerprint"),
    data=dict(type="dict", default={}),
    remove_src=dict(type="list", elements="str", default=[]),
    remove_empty_parents=dict(type="int", default=0),
    metadata=dict(type="dict", default={}),
    service=dict(type="dict", default={}),
    service_command_timeout=dict(type="float"),
    service_max_log_bytes=dict(type="int"),
    service_required=dict(type="bool"),
    secrets=dict(type="dict", default={}, no_log=True),
)


# ------------------------------------------------------------------------------------------------ basics
def _os_release(path="/etc/os-release"):
    info = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.strip().partition("=")
                if sep and key:
                    info[key] = value.strip().strip('"').strip("'")
    except OSError:
        return None
    return info


def basics(environ=None, os_release_path="/etc/os-release", key=None):
    """Host basics for ``fingerprint.json``: collected_at, os, kernel, python; and the redacted environment.

    ``key`` is the case's redaction key (stable markers ``<redacted:kind:hex8>``); None gives plain markers."""
    rel = _os_release(os_release_path)
    if rel:
        os_name = "%s %s" % (rel.get("NAME") or rel.get("ID") or "?", rel.get("VERSION_ID") or "")
    else:
        os_name = "%s (no %s)" % (platform.system(), os_release_path)
    vi = sys.version_info
    return {
        "collected_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "os": os_name.strip(),
        "os_release": {k: rel[k] for k in ("ID", "ID_LIKE", "VERSION_ID", "PRETTY_NAME") if k in rel} if rel else None,
        "kernel": platform.release(),
        "machine": platform.machine(),
        "python": {"major": vi.major, "minor": vi.minor, "micro": vi.micro, "releaselevel": vi.releaselevel,
                   "serial": vi.serial, "executable": sys.executable},
        "env": redact_env(dict(os.environ if environ is None else environ), key=key),
    }


# ------------------------------------------------------------------------------------------------ files
def _sha_range(f, start, end):
    h = hashlib.sha256()
    f.seek(start)
    left = end - start
    while left > 0:
        block = f.read(min(CHUNK, left))
        if not block:
            break
        h.update(block)
        left -= len(block)
    return h.hexdigest()


def cap_bytes(path, max_bytes):
    """Read ``path`` whole when it is at most ``max_bytes``, else its head and tail (together at most
    ``max_bytes``, cut on line ends where a line end is near) with a marker line between them.

    Returns (data, original, cut): ``original`` is dict(size, sha256) of the whole file; ``cut`` is None or
    dict(offset, length, sha256, kept_head, kept_tail, max_bytes) of the bytes left out.
    """
    if max_bytes < 2:
        raise ValueError("max_bytes must be at least 2, got %r" % (max_bytes,))
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        whole = hashlib.sha256()
        while True:
            block = f.read(CHUNK)
            if not block:
                break
            whole.update(block)
        original = {"size": size, "sha256": whole.hexdigest()}
        if size <= max_bytes:
            f.seek(0)
            return f.read(), original, None
        head_len = max_bytes // 2
        f.seek(0)
        head = f.read(head_len)
        nl = head.rfind(b"\n")
        if nl >= head_len // 2:  # cut at a line end when one is in the second half of the head
            head = head[:nl + 1]
        tail_len = max_bytes - head_len
        f.seek(size - tail_len)
        tail = f.read(tail_len)
        nl = tail.find(b"\n")
        if 0 <= nl < tail_len // 2 and nl + 1 < len(tail):
            tail = tail[nl + 1:]
        start, end = len(head), size - len(tail)
        cut = {"offset": start, "length": end - start, "sha256": _sha_range(f, start, end),
               "kept_head": len(head), "kept_tail": len(tail), "max_bytes": max_bytes}
    marker = ("\n[repro.vllm: %d bytes cut here (offset %d, sha256 %s) of %d; head and tail kept, "
              "log_max_bytes %d]\n" % (cut["length"], start, cut["sha256"], size, max_bytes)).encode("ascii")
    return head + marker + tail, original, cut


def redact_bytes(data, key=None):
    """(bytes, changed): ``data`` with secret shapes masked (keyed markers with the case's ``key``); undecodable
    bytes pass through unchanged; the line count never changes."""
    text = data.decode("utf-8", errors="surrogateescape")
    out = redact_text(text, key=key)
    if out == text:
        return data, False
    return out.encode("utf-8", errors="surrogateescape"), True


def new_staging_dir(staging_root, label):
    """A fresh folder for this call only (mode 0700); an existing folder is never reused or touched."""
    root = staging_root or tempfile.gettempdir()
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in (label or ""))[:80]
    return tempfile.mkdtemp(prefix="%s%s-" % (STAGING_PREFIX, safe), dir=root)


def prepare_file(spec, max_bytes, inline_max, stage_dir_factory, check_mode=False, key=None):
    """One file a stage names, ready to leave the host.

    ``spec``: dict(src, part, required, redact).  Returns dict(part, src, status) and, when the file was read:
    size and sha256 of what is sent, ``original`` (whole file), ``cut`` (None or what was left out),
    ``redacted`` (bool), ``transfer`` (``inline`` with ``content_b64``, or ``staged`` with ``staged_path``).
    A missing optional file is ``status: missing``; a missing required or unreadable file is ``status: error``
    with ``msg``.
    """
    src, part = spec["src"], spec["part"]
    out = {"part": part, "src": src}
    if not os.path.exists(src):
        out.update(status="error" if spec.get("required") else "missing",
                   msg="%s does not exist on this host" % src)
        return out
    if not os.path.isfile(src):
        out.update(status="error", msg="%s is not a regular file" % src)
        return out
    try:
        data, original, cut = cap_bytes(src, max_bytes)
    except OSError as exc:
        out.update(status="error", msg="cannot read %s: %s" % (src, exc.strerror or exc))
        return out
    redacted = False
    if spec.get("redact", True):
        data, redacted = redact_bytes(data, key=key)
    out.update(status="ok", size=len(data), sha256=hashlib.sha256(data).hexdigest(), original=original, cut=cut,
               redacted=redacted)
    if check_mode:
        out["transfer"] = "planned"
    elif len(data) <= inline_max:
        out.update(transfer="inline", content_b64=base64.b64encode(data).decode("ascii"))
    else:
        stage = stage_dir_factory()
        staged = os.path.join(stage, "%03d-%s" % (len(os.listdir(stage)), os.path.basename(part)))
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        out.update(transfer="staged", staged_path=staged)
    return out


# ------------------------------------------------------------------------------------------------ verdict
def _smi_failures(gpu):
    """Sentences for nvidia-smi calls that hung, were skipped after a hang, or failed without a diagnosis.

    The first ``--query-gpu`` call may be refused by an older driver and retried with the safe field set; only
    the final answer counts (``gpu_query.status``)."""
    reasons = []
    timed_out = list(gpu.get("timed_out") or [])
    if timed_out:
        limit = next((c.get("timeout") for c in gpu.get("commands") or [] if c.get("status") == "timed_out"), "?")
        reasons.append("timed out after %ss: %s" % (limit, "; ".join(t[:200] for t in timed_out)))
    if gpu.get("skipped"):
        reasons.append("%d nvidia-smi call(s) not run after the hang" % len(gpu["skipped"]))
    nvml = (gpu.get("driver") or {}).get("nvml_error")
    if nvml:
        reasons.append("nvidia-smi: %s" % nvml)
    elif not timed_out:
        # an older nvidia-smi refuses --version and the facts fall back to its table: only the GPU query counts
        query = gpu.get("gpu_query") or {}
        if query.get("status") in ("failed", "error"):
            reasons.append("nvidia-smi --query-gpu ended %s%s" % (
                query["status"], " after the fallback (%s)" % query.get("fallback_reason") if query.get("fallback_used") else ""))
    for err in gpu.get("errors") or []:
        reasons.append("GPU facts section %s: %s" % (err.get("section"), err.get("error")))
    return reasons


def host_status(gpu=None, container=None):
    """(status, reasons): ``degraded`` when a GPU or container command hung, was skipped after a hang, or the
    core nvidia-smi queries failed; ``ok`` otherwise.  A host without nvidia-smi at all is ``ok`` (a CPU host:
    the facts say so)."""
    reasons = _smi_failures(gpu or {})
    ct = container or {}
    if ct.get("timed_out"):
        reasons.append("container runtime timed out: %s" % "; ".join(
            " ".join(t) if isinstance(t, list) else str(t) for t in ct["timed_out"]))
    return ("degraded" if reasons else "ok"), reasons


# ------------------------------------------------------------------ vLLM's own report of the serving environment
_CONTAINER_CLIS = ("docker", "podman", "nerdctl", "enroot", "srun")


def _resolve(exe, path_env=None):
    """``exe`` as a path: itself when it names a folder, else the first executable of that name on PATH (None)."""
    if os.sep in exe:
        return exe
    for d in (path_env if path_env is not None else os.environ.get("PATH", "")).split(os.pathsep):
        cand = os.path.join(d, exe)
        if d and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def serving_python(argv, path_env=None):
    """(python, why_not) for the environment a server command runs in: the interpreter of its ``vllm`` script (the
    script's ``#!`` line, found on PATH when the command names it bare), or the command's own python
    (``python -m vllm.entrypoints...``). None with the reason when the server runs in an image, nothing is found, or
    the script's interpreter is not a Python (a site's shell wrapper around vllm)."""
    argv = [str(a) for a in (argv or [])]
    if not argv:
        return None, "no server command"
    base = os.path.basename(argv[0])
    if base in _CONTAINER_CLIS:
        return None, ("the server runs through %s (in an image): run 'vllm collect-env' inside that image" % base)
    exe = _resolve(argv[0], path_env)
    if exe is None:
        return None, "%s is not on this host's PATH" % argv[0]
    if base.startswith("python"):
        return exe, None
    try:
        with open(exe, "rb") as f:
            first = f.readline(512).decode("utf-8", "replace").strip()
    except OSError as exc:
        return None, "cannot read %s: %s" % (exe, exc.strerror or exc)
    interp = first[2:].strip().split() if first.startswith("#!") else []
    if interp and os.path.basename(interp[0]) == "env" and len(interp) > 1:
        interp = interp[1:]
    if not interp:
        return None, "%s is not a Python script (no #! line): cannot tell its Python" % exe
    if not os.path.basename(interp[0]).startswith("python"):
        return None, "%s is a %s script, not Python's: its Python cannot be told from it" % (exe, interp[0])
    return interp[0], None


def collect_env_commands(argv, path_env=None):
    """([(via, cmd)], why_not): how vLLM's own report can be had for a server command, in the order to try. The
    CLI's ``vllm collect-env`` subcommand first when the command runs a ``vllm`` executable (it works through a site's
    wrapper script, and runs the CLI's own Python); then ``<python> -m vllm.collect_env`` with the serving Python
    (vLLM releases whose CLI has no such subcommand). Empty with the reason when neither can be told."""
    argv = [str(a) for a in (argv or [])]
    out = []
    exe = _resolve(argv[0], path_env) if argv else None
    if exe and os.path.basename(exe) == "vllm":
        out.append(("vllm collect-env", [exe, "collect-env"]))
    python, why = serving_python(argv, path_env)
    if python:
        out.append(("python -m vllm.collect_env", [python, "-m", "vllm.collect_env"]))
    return out, (None if out else why)


def collect_env_container_argv(container):
    """``<runtime> run --rm --entrypoint python3 [the run's arguments] IMAGE -m vllm.collect_env``: vLLM's report from
    inside the image that ran (``container`` as vllm_server returned it), or None when it names no image."""
    container = container or {}
    if not (container.get("binary") and container.get("run_ref")):
        return None
    args = [str(a) for a in container.get("args") or []]
    keep = []
    i = 0
    while i < len(args):  # the server's own name, labels and entrypoint are not the report's
        if args[i] in ("--name", "--label", "--entrypoint"):
            i += 2
            continue
        keep.append(args[i])
        i += 1
    return ([container["binary"], "run", "--rm", "--entrypoint", "python3"] + keep
            + [container["run_ref"], "-m", "vllm.collect_env"])


def _no_subcommand(res):
    """True when the CLI refused ``collect-env`` as a subcommand it does not have (argparse's usage error, rc 2)."""
    return res.get("rc") == 2 and "invalid choice" in (res.get("stderr") or "")


def collect_env(argv, timeout, key=None, runner=None, container=None):
    """Run vLLM's own environment report for a server command under ``timeout``: ``vllm collect-env`` of the command's
    ``vllm``, else (a CLI without that subcommand, or a ``python -m vllm...`` command) ``python -m vllm.collect_env``
    with the serving environment's Python; with a ``container`` (vllm_server's record of the server's container),
    inside a new container of the same image.

    Returns {status: ok|failed|timed_out|not_found|skipped, via (which of them ran), command, python, rc,
    duration_ms, output (redacted), stderr_tail (redacted), msg, tried (the ones that ran before, each
    {via, rc, msg})}. Never raises."""
    in_image = collect_env_container_argv(container)
    if in_image:
        candidates, why = [("python3 -m vllm.collect_env in the image", in_image)], None
    else:
        candidates, why = collect_env_commands(argv)
    if not candidates:
        return {"status": "skipped", "via": None, "command": None, "python": None, "rc": None, "duration_ms": 0,
                "output": "", "stderr_tail": "", "msg": why, "tried": []}
    if runner is None:
        from ansible_collections.repro.vllm.plugins.module_utils.common._cmd import run_cmd as runner
    tried = []
    spent = 0
    for i, (via, cmd) in enumerate(candidates):
        res = runner(cmd, timeout=max(1.0, timeout - spent / 1000.0))
        spent += res.get("duration_ms") or 0
        if i + 1 < len(candidates) and _no_subcommand(res):
            tried.append({"via": via, "rc": res.get("rc"), "msg": "this vllm has no collect-env subcommand"})
            continue
        break
    status = res["status"] if res["status"] != "ok" or res.get("rc") == 0 else "failed"
    python = (cmd[0] if via.startswith("python -m") else
              "python3 in %s" % container["run_ref"] if in_image else None)
    return {"status": status, "via": via, "command": " ".join(cmd), "python": python, "rc": res.get("rc"),
            "duration_ms": spent, "output": redact_text(res.get("stdout") or "", key=key),
            "stderr_tail": redact_text((res.get("stderr") or "")[-2000:], key=key), "msg": res.get("msg") or "",
            "tried": tried}
