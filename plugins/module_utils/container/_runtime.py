"""The server in its exact image: the container runtime of an attempt (podman or docker), used by ``vllm_server``.

The attempt's step is a vLLM command (``vllm serve MODEL ...``, or a production ``docker|podman run ... IMAGE ...``).
With a container runtime the server runs as ``<runtime> run --name repro-vllm-<run_uid>-<host> ... IMAGE ...``:

* the image is the one pinned when the play resolved it (repo digest where the runtime lists one, else image id),
  never a tag that may have moved since;
* the container is labelled with the run (``repro.vllm.run_uid``, ``.case``, ``.run``, ``.controller``, ``.node``)
  so that a later play finds it by its labels, and named after the run_uid so that two runs never share a name;
* environment values reach the container as ``-e NAME`` (the value comes from the client's own environment), so a
  secret is never on a command line;
* GPUs are passed by the runtime's own means (``--gpus`` for docker, CDI ``--device nvidia.com/gpu=N`` for
  podman), only those assigned (``CUDA_VISIBLE_DEVICES`` of the step, which is not passed into the container: the
  runtime renumbers the GPUs it passes from 0);
* every host path the command names is mounted read-only at the same path; host networking unless the caller's
  container arguments name a network.

Standard library only (runs on the managed node, Python 3.9+).
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import json
import os
import re

from ansible_collections.repro.vllm.plugins.module_utils.ladder import _command
from ansible_collections.repro.vllm.plugins.module_utils.common._cmd import STATUS_OK, find_binary, run_cmd
from ansible_collections.repro.vllm.plugins.module_utils.container._container import (
    as_digest, parse_docker_inspect, parse_podman_inspect, pinned_reference)

RUNTIMES = ("podman", "docker")
# podman-run(1) and docker's "run" reference: exit 125 the runtime itself failed, 126 the contained command could not
# be invoked, 127 it could not be found - the container never ran vLLM (its classification is the classifier's)
REFUSAL_EXIT_CODES = {125: "the runtime itself failed", 126: "the command in the container could not be invoked",
                      127: "the command in the container was not found"}
ENGINE_FLAGS_EXAMPLE = "--cgroup-manager cgroupfs --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1000:1000"


def refusal_hint(server):
    """The hint of docs/method.md ("The server in its exact image") when the container runtime refused to start the
    server's container: ``server`` is a vllm_server result or a frozen ``server.json`` (its ``start``: the
    ``exit_code`` of the ``<runtime> run`` process; ``container.runtime`` podman or docker). None otherwise."""
    if not isinstance(server, dict):
        return None
    start = server["start"] if isinstance(server.get("start"), dict) else server  # server.json keeps it under start
    container = server.get("container") or start.get("container")
    runtime = container.get("runtime") if isinstance(container, dict) else None
    code = start.get("exit_code")
    if runtime not in RUNTIMES or isinstance(code, bool) or code not in REFUSAL_EXIT_CODES:
        return None
    return ("%s refused to start the server's container (exit %s: %s; its own error is in the server log: rlimits, "
            "cgroups, the OCI runtime, no such image, no GPU device); give the flags this host's %s needs in "
            "repro_vllm_container_args (the localhost inventory adds REPRO_VLLM_CONTAINER_ARGS, for example \"%s\"; "
            "docs/method.md, \"The server in its exact image\") and run the attempt again"
            % (runtime, code, REFUSAL_EXIT_CODES[code], runtime, ENGINE_FLAGS_EXAMPLE))


LABEL_PREFIX = "repro.vllm."
LABEL_KEYS = ("run_uid", "case", "run", "controller", "node")
PROBE_MARKER = "REPRO_VLLM_CONTAINER_PROBE "
# Options of a production ``run`` command that the attempt sets itself (its own name, no detach, removal after the
# log is saved) or that do not belong in a reproduction (a restart policy hides the first failure).
_OWN_RUN_OPTIONS = {"--name", "--rm", "-d", "--detach", "-i", "--interactive", "-t", "--tty", "-it", "-ti",
                    "--restart", "--cidfile"}
_NETWORK_OPTIONS = {"--network", "--net"}
_NAME_SAFE = re.compile(r"[^a-zA-Z0-9_.-]+")

# The in-container probe: what the server process sees from inside (run with the image's python3 by ``exec``).
PROBE_SCRIPT = r"""
import glob, json, os, shutil, subprocess
out = {"cuda_visible_devices": None, "libcuda": [], "gpu_devices": [], "gpus": None, "nvidia_smi": None}
try:
    env = open("/proc/1/environ", "rb").read().split(b"\0")
    for item in env:
        if item.startswith(b"CUDA_VISIBLE_DEVICES="):
            out["cuda_visible_devices"] = item.split(b"=", 1)[1].decode("utf-8", "replace")
except OSError as exc:
    out["environ_error"] = str(exc)
found = set()
for maps in glob.glob("/proc/[0-9]*/maps"):
    try:
        with open(maps) as f:
            for line in f:
                if "libcuda.so" in line:
                    found.add(line.split()[-1])
    except OSError:
        pass
out["libcuda"] = sorted(found)
out["gpu_devices"] = sorted(p for p in glob.glob("/dev/nvidia*") if p[len("/dev/nvidia"):].isdigit())
smi = shutil.which("nvidia-smi")
if smi:
    out["nvidia_smi"] = smi
    try:
        res = subprocess.run([smi, "-L"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=20)
        out["gpus"] = [l for l in res.stdout.decode("utf-8", "replace").splitlines() if l.strip()]
    except Exception as exc:
        out["gpus_error"] = str(exc)
print("REPRO_VLLM_CONTAINER_PROBE " + json.dumps(out, sort_keys=True))
"""


class RuntimeSpecError(ValueError):
    """A container request that cannot be honoured (conflicting runtime or image, unknown runtime)."""


# ----------------------------------------------------------------------------------------------- names and labels
def container_name(run_uid, node):
    """``repro-vllm-<run_uid>-<host>``: unique per run and node; the host part keeps only [a-zA-Z0-9_.-]."""
    host = _NAME_SAFE.sub("-", str(node or "node")).strip("-.") or "node"
    return "repro-vllm-%s-%s" % (run_uid, host)


def run_labels(run_uid, case_id=None, run_id=None, controller=None, node=None):
    values = {"run_uid": run_uid, "case": case_id, "run": run_id, "controller": controller, "node": node}
    return dict((LABEL_PREFIX + k, str(values[k])) for k in LABEL_KEYS if values[k] not in (None, ""))


# ----------------------------------------------------------------------------------------------- the command
def split_command(argv, runtime=None, image=None):
    """Read a step's command for a container runtime.

    ``argv`` is a bare ``vllm serve ...`` command or a production ``docker|podman run OPTIONS IMAGE ...``. A run
    command sets the runtime and the image itself; ``runtime`` / ``image`` given as well must agree with it (a
    conflict raises RuntimeSpecError naming both). Returns a dict: ``runtime``, ``image`` (the reference),
    ``options`` (the production run options kept, as tokens), ``dropped`` (the run options the attempt sets itself),
    ``entrypoint`` (None: the image's own), ``args`` (what follows the image), ``vllm_argv`` (the vLLM part, to
    read its port and API key from).
    """
    if runtime in (None, "", "process"):
        runtime = None
        if not argv or os.path.basename(str(argv[0])) not in RUNTIMES + ("nerdctl",):
            return None  # a process: the command is run as it is, whatever it is
    parsed = _command.parse_command(argv)
    cmd_runtime = parsed["runtime"]
    if cmd_runtime:
        if cmd_runtime not in RUNTIMES:
            raise RuntimeSpecError("the command's runtime %s is not one this collection runs (%s)"
                                   % (cmd_runtime, ", ".join(RUNTIMES)))
        if runtime and runtime != cmd_runtime:
            raise RuntimeSpecError("repro_vllm_server_runtime is %s but the production command is a %s run command; "
                                   "leave the variable unset or make them agree" % (runtime, cmd_runtime))
        if image and image != parsed["image"]:
            raise RuntimeSpecError("repro_vllm_image is %s but the production command runs %s; leave the variable "
                                   "unset or make them agree" % (image, parsed["image"]))
        runtime, image = cmd_runtime, parsed["image"]
    if not runtime:
        return None
    if runtime not in RUNTIMES:
        raise RuntimeSpecError("repro_vllm_server_runtime %s is not one of process, %s" % (runtime, ", ".join(RUNTIMES)))
    if not image:
        raise RuntimeSpecError("repro_vllm_server_runtime is %s but no image is named: set repro_vllm_image (a "
                               "reference such as vllm/vllm-openai:v0.11.0)" % runtime)
    options, dropped = [], []
    for opt in parsed["runtime_options"]:
        (dropped if opt["flag"] in _OWN_RUN_OPTIONS or opt["flag"] in ("-e", "--env") else options).extend(
            opt["tokens"])
    # the -e of a production run command go through the step's environment like every other variable
    program = parsed["program"]
    entrypoint = None
    rest = []
    if program:
        entrypoint = os.path.basename(program[0])
        rest = list(program[1:])
    vllm_part = (["vllm", "serve"] if not program else ["vllm"] + list(program[1:]))
    tail = []
    if parsed["model_flag"]:
        tail.extend(["--model", parsed["model"]])
    else:
        tail.append(parsed["model"])
    for opt in parsed["options"]:
        tail.extend(opt["tokens"])
    return {"runtime": runtime, "image": image, "options": options, "dropped": dropped, "entrypoint": entrypoint,
            "args": rest + tail, "vllm_argv": vllm_part + tail, "runtime_env": dict(parsed["runtime_env"])}


def host_paths(args):
    """Absolute host paths the command names (model, chat template, tokenizer...) that exist: mounted read-only."""
    found = []
    for tok in args:
        value = tok.split("=", 1)[1] if tok.startswith("--") and "=" in tok else tok
        if value.startswith("/") and os.path.exists(value):
            path = os.path.normpath(value)
            if path != "/" and path not in found:
                found.append(path)
    return found


def gpu_args(runtime, gpus, host_has_gpus):
    """The runtime's own GPU flags for the assigned GPUs (``gpus``: list of indices or UUIDs, None = all).

    Nothing on a host without GPU device nodes (the CPU build). docker: ``--gpus all`` or
    ``--gpus "device=0,1"`` (the quotes are part of the value: docker reads it as CSV); podman: CDI devices
    ``--device nvidia.com/gpu=N`` (``=all`` for every GPU)."""
    if not host_has_gpus:
        return []
    if runtime == "docker":
        if gpus is None:
            return ["--gpus", "all"]
        return ["--gpus", '"device=%s"' % ",".join(str(g) for g in gpus)] if gpus else []
    if gpus is None:
        return ["--device", "nvidia.com/gpu=all"]
    out = []
    for g in gpus:
        out.extend(["--device", "nvidia.com/gpu=%s" % g])
    return out


def run_argv(binary, spec, pinned_ref, name, labels, env_names, gpus=None, host_has_gpus=False, container_args=None):
    """The ``run`` command of the attempt's container (no ``--rm``: the log is read before the container is removed)."""
    container_args = [str(a) for a in (container_args or [])]
    user_opts = container_args + list(spec.get("options") or [])
    argv = [binary, "run", "--name", name]
    if not any(t.split("=", 1)[0] in _NETWORK_OPTIONS for t in user_opts):
        argv.extend(["--network", "host"])
    for key in sorted(labels):
        argv.extend(["--label", "%s=%s" % (key, labels[key])])
    for key in sorted(env_names):
        argv.extend(["-e", key])
    argv.extend(gpu_args(spec["runtime"], gpus, host_has_gpus))
    for path in host_paths(spec["args"]):
        argv.extend(["-v", "%s:%s:ro" % (path, path)])
    argv.extend(user_opts)
    if spec.get("entrypoint"):
        argv.extend(["--entrypoint", spec["entrypoint"]])
    argv.append(pinned_ref)
    argv.extend(spec["args"])
    return argv


def container_env_names(env):
    """The names passed into the container: every variable of the step except the GPU selection (the runtime
    passes the assigned GPUs and renumbers them) and the client's own plumbing."""
    plumbing = ("CUDA_VISIBLE_DEVICES", "PATH", "HOME", "XDG_RUNTIME_DIR", "DOCKER_HOST", "CONTAINER_HOST", "TMPDIR")
    return sorted(k for k in env if k not in plumbing)


# ----------------------------------------------------------------------------------------------- runtime answers
def _json(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def parse_container_inspect(text):
    """``docker|podman container inspect NAME`` -> {id, name, image_id, image, running, pid, exit_code, status,
    labels, started_at} or None. podman: ``Image`` is the bare image id and ``ImageName`` the reference; docker:
    ``Image`` is ``sha256:<id>`` and ``Config.Image`` the reference."""
    data = _json(text)
    if isinstance(data, dict):
        data = [data]
    if not data or not isinstance(data[0], dict):
        return None
    c = data[0]
    state = c.get("State") or {}
    cfg = c.get("Config") or {}
    return {"id": c.get("Id"), "name": (c.get("Name") or "").lstrip("/") or None, "image_id": as_digest(c.get("Image")),
            "image": c.get("ImageName") or cfg.get("Image"), "running": bool(state.get("Running")),
            "pid": state.get("Pid") or None, "exit_code": state.get("ExitCode"), "status": state.get("Status"),
            "labels": dict(cfg.get("Labels") or c.get("Labels") or {}), "started_at": state.get("StartedAt")}


def parse_image_inspect(runtime, text):
    parser = parse_podman_inspect if runtime == "podman" else parse_docker_inspect
    try:
        return parser(text)
    except ValueError:
        return None


def parse_probe(text):
    for line in (text or "").splitlines():
        if line.startswith(PROBE_MARKER):
            return _json(line[len(PROBE_MARKER):])
    return None


def image_identity(runtime, reference, image_record):
    """What identifies an image the runtime holds: {reference, image_id, image_repo_digest, run_ref, by}.

    ``run_ref`` is what a container is started from: the repo digest of the reference's repository where the
    runtime lists one, else the image id (``sha256:...``, which both runtimes run)."""
    rec = image_record or {}
    digest = pinned_reference(reference, rec.get("repo_digests") or [])
    image_id = as_digest(rec.get("config_digest") or rec.get("id"))
    run_ref, by = (digest, "repo_digest") if digest else ((image_id, "image_id") if image_id else (reference, "reference"))
    return {"reference": reference, "image_id": image_id, "image_repo_digest": digest, "run_ref": run_ref, "by": by}


def pin_from_facts(runtime, reference, facts):
    """The pin of a play from what resolved the image before: the fingerprint's ``repro_vllm_container`` facts
    (container_facts), or the pin an earlier attempt of the play returned. None when they name another image or
    another runtime, or did not find it."""
    if not isinstance(facts, dict) or not facts:
        return None
    if facts.get("run_ref") and facts.get("image_id"):
        if facts.get("reference") == reference and facts.get("runtime") in (None, runtime):
            return dict(facts, runtime=runtime)
        return None
    if facts.get("reference") != reference:
        return None
    entry = (facts.get("runtimes") or {}).get(runtime) or {}
    if not entry.get("image_present"):
        return None
    ident = image_identity(runtime, reference, entry.get("image"))
    ident.update(runtime=runtime, pinned_by="fingerprint")
    return ident


def moved_tag(pin, now):
    """The reference resolves to another image than the one pinned: {reference, pinned_image_id, now_image_id,
    pinned_digest, now_digest}, else None."""
    if not pin or not now or not now.get("image_id") or not pin.get("image_id"):
        return None
    if now["image_id"] == pin["image_id"]:
        return None
    return {"reference": pin.get("reference"), "pinned_image_id": pin["image_id"], "now_image_id": now["image_id"],
            "pinned_digest": pin.get("image_repo_digest"), "now_digest": now.get("image_repo_digest")}


def moved_line(moved):
    return ("the image tag %s moved since the play pinned it: pinned %s (id %s), now %s (id %s); start a new play to "
            "take the new image, or set repro_vllm_allow_moved_tag: true to run the pinned one anyway"
            % (moved["reference"], moved.get("pinned_digest") or "-", moved["pinned_image_id"],
               moved.get("now_digest") or "-", moved["now_image_id"]))


# ----------------------------------------------------------------------------------------------- runtime calls
class Runtime(object):
    """One runtime binary with its global options, every call under a timeout (the collection's one runner)."""

    def __init__(self, runtime, binary=None, env=None, timeout=30.0, run=run_cmd):
        self.runtime = runtime
        self.binary = binary or find_binary(runtime, None)
        self.env = env
        self.timeout = timeout
        self._run = run

    def call(self, args, timeout=None):
        if not self.binary:
            return {"status": "not_found", "rc": 127, "stdout": "", "stderr": "",
                    "msg": "%s: not found on PATH" % self.runtime, "cmd": [self.runtime] + list(args)}
        return self._run([self.binary] + list(args), timeout=timeout or self.timeout, env=self.env)

    def version(self):
        res = self.call(["version", "--format", "{{.Client.Version}}"])
        return res["stdout"].strip() or None if res["status"] == STATUS_OK else None

    def image_record(self, reference):
        """The runtime's record of an image (``_container`` parsers: id, repo_digests, ...), or None."""
        res = self.call(["image", "inspect", reference])
        return parse_image_inspect(self.runtime, res["stdout"]) if res["status"] == STATUS_OK else None

    def resolve(self, reference):
        """The image the reference names now (image_identity), or None when the runtime does not hold it."""
        rec = self.image_record(reference)
        return image_identity(self.runtime, reference, rec) if rec else None

    def inspect(self, name):
        res = self.call(["container", "inspect", name])
        return parse_container_inspect(res["stdout"]) if res["status"] == STATUS_OK else None

    def exists(self, name):
        return self.inspect(name) is not None

    def probe(self, name, timeout=60.0):
        res = self.call(["exec", name, "python3", "-c", PROBE_SCRIPT], timeout=timeout)
        parsed = parse_probe(res.get("stdout"))
        if parsed is None:
            err = (res.get("stderr") or res.get("msg") or "").strip()[-300:]
            return {"error": "%s exec %s python3 answered %s: %s" % (self.runtime, name, res.get("rc"), err)}
        return parsed

    def logs(self, name, path, timeout=60.0):
        """The container's own log with the runtime's timestamps, into ``path``; True when it was written."""
        res = self.call(["logs", "--timestamps", name], timeout=timeout)
        if res["status"] != STATUS_OK:
            return False
        with open(path, "w") as f:
            f.write(res.get("stdout") or "")
            f.write(res.get("stderr") or "")
        return True

    def stop(self, name, grace, logs_path=None):
        """``stop -t GRACE``, the log saved to ``logs_path`` (when given), then ``rm -f``: returns {stopped,
        removed, logs_saved, errors}."""
        out = {"name": name, "stopped": False, "removed": False, "logs_saved": False, "errors": []}
        res = self.call(["stop", "-t", str(int(max(0, grace))), name], timeout=max(30.0, grace + 30.0))
        out["stopped"] = res["status"] == STATUS_OK
        if not out["stopped"]:
            out["errors"].append(((res.get("stderr") or res.get("msg") or "").strip())[-300:])
        if logs_path:
            try:
                out["logs_saved"] = self.logs(name, logs_path)
            except (OSError, IOError) as exc:
                out["errors"].append("log not saved to %s: %s" % (logs_path, exc))
        res = self.call(["rm", "-f", name], timeout=60.0)
        out["removed"] = res["status"] == STATUS_OK
        if not out["removed"]:
            out["errors"].append(((res.get("stderr") or res.get("msg") or "").strip())[-300:])
        return out

    def labelled(self, run_uid):
        """Ids of every container (running or not) labelled with this run_uid."""
        res = self.call(["ps", "-a", "-q", "--no-trunc", "--filter", "label=%srun_uid=%s" % (LABEL_PREFIX, run_uid)])
        if res["status"] != STATUS_OK:
            return []
        return [line.strip() for line in res["stdout"].splitlines() if line.strip()]


def collective_container(server_runtime, image, container_args=None, facts=None):
    """The collective checkpoint's container when the server runs in one: {runtime, image, run_args} with the image
    as the play's fingerprint pinned it (its ``pinned_reference``, a repo digest) where the facts name that
    reference, else the reference itself; {} when the server runs as a process or names no image."""
    if server_runtime not in RUNTIMES or not image:
        return {}
    facts = facts if isinstance(facts, dict) else {}
    pinned = facts.get("pinned_reference") if facts.get("reference") == image else None
    return {"runtime": server_runtime, "image": pinned or image, "run_args": [str(a) for a in container_args or []]}
