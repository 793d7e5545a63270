"""The receiving side of a hand-off package (playbooks/replay.yml).

* ``unpack``: check the package (its ``.sha256`` when it lies beside it, every member path with the hand-off's own
  rules, every run against its manifest) and unpack it into a NEW case ``<case>-replay-<UTC stamp>`` under the
  records root; the runs stay frozen as they came, the package's own files go to ``package/``, and ``origin.json``
  says where it all came from. Nothing of an earlier case is touched; a tampered package leaves nothing behind.
  In check mode (module ``state: checked``) the same checks run in a scratch folder that is removed again, and
  what replay.yml decides before the unpack is returned (the attempt, the profile file's text, summary.json).
* ``choose_profile`` / ``profile_override`` / ``precheck``: the profile (exactly one of a name and a file; the
  receiver's extra variable wins) and the refusals replay.yml makes before anything is unpacked.
* ``select_attempt`` / ``replay_step``: the attempt to replay (the package's last failing attempt, else its last
  good one) and the step the attempt role runs with it - the same argv (image by digest), the same environment
  minus the secrets the receiver supplies, the same fixed request.
* ``replay_verdict``: reproduced / different / not_reproduced from the package's case verdict and the replay's
  (``package_verdict`` / ``replay_verdict``, the case vocabulary of summary.json format 2), with the environment
  differences and the secret variables the receiver did not supply next to it.

Controller side; Python standard library only.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
import tempfile
import time

from ansible_collections.repro.vllm.plugins.module_utils.record import _evidence
from ansible_collections.repro.vllm.plugins.module_utils.ladder._command import CommandError, option_map, parse_command, render_command
from ansible_collections.repro.vllm.plugins.module_utils.handoff._handoff import safe_member
from ansible_collections.repro.vllm.plugins.module_utils.ladder._ladder import attempt_text, build_step
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import MASK
from ansible_collections.repro.vllm.plugins.module_utils.record._record import (
    DEFAULT_ROOT, MANIFEST, RecordError, _make_read_only, describe_problems, hash_file, resolve_root, run_id_for,
    run_numbers, validate_case_id, verify)
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import MARKER_RE

VERDICTS = ("reproduced", "different", "not_reproduced")
ORIGIN = "origin.json"
PACKAGE_DIR = "package"
_TOP_SUFFIX = "-handoff"
_STAMP_RE = re.compile(r"^[0-9]{8}T[0-9]{6}Z$")
_RUN_MEMBER_RE = re.compile(r"^runs/(run-[0-9]{3,})(/.*)?$")


class ReplayError(Exception):
    """A package that cannot be replayed; the message names the file and the fix."""


def check_sha256(package):
    """(sha256 of the package, True/False when a ``<name>.sha256`` lies beside it, None when none does).

    Raises ReplayError naming the package when the file beside it names another digest."""
    digest = hash_file(package)[1]
    side = package + ".sha256"
    if not os.path.isfile(side):
        return digest, None
    with open(side, "r", encoding="utf-8", errors="replace") as f:
        words = f.read().split()
    if not words or not re.match(r"^[0-9a-f]{64}$", words[0]):
        raise ReplayError("%s is not a sha256 file (expected '<hex>  <name>'); the package is not replayed"
                          % os.path.basename(side))
    if words[0] != digest:
        raise ReplayError("%s: sha256 %s differs from %s (%s); the package was changed or cut short on its way - "
                          "copy it again from its source"
                          % (os.path.basename(package), digest, os.path.basename(side), words[0]))
    return digest, True


def _members(tar, package):
    """Every member of the package, checked: safe path, file or folder, under one ``<case>-handoff/``."""
    top, files = None, []
    for info in tar:
        if not safe_member(info.name) or not (info.isfile() or info.isdir()):
            raise ReplayError("%s: member %r is not a plain file or folder with a safe path (links, '..' and "
                              "absolute paths are refused); the package is not replayed"
                              % (os.path.basename(package), info.name))
        head = info.name.split("/", 1)[0]
        if top is None:
            top = head
        elif head != top:
            raise ReplayError("%s: member %s is outside %s/; a hand-off package has one top folder"
                              % (os.path.basename(package), info.name, top))
        if info.isfile():
            files.append(info)
    if top is None or not top.endswith(_TOP_SUFFIX):
        raise ReplayError("%s is not a hand-off package of repro.vllm (no <case>-handoff/ folder inside); make "
                          "it with playbooks/handoff.yml" % os.path.basename(package))
    return top, files


def replay_case_id(original, stamp, existing):
    """``<original>-replay-<stamp>``, with ``-2``, ``-3``... when a case of that name already exists."""
    base = "%s-replay-%s" % (original, stamp)
    name, n = base, 1
    while name in existing:
        n += 1
        name = "%s-%d" % (base, n)
    return validate_case_id(name)


def unpack(package, records_root=None, stamp=None, check_mode=False):
    """Check and unpack a hand-off package into a new replay case (under ``resolve_root``).  Returns a dict (see module docs)."""
    package = os.path.abspath(str(package))
    if not os.path.isfile(package):
        raise ReplayError("package %s does not exist (give repro_vllm_package the path of the .tar.gz that "
                          "playbooks/handoff.yml made)" % package)
    digest, sha_checked = check_sha256(package)
    stamp = stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    if not _STAMP_RE.match(stamp):
        raise ReplayError("stamp %r is not a UTC YYYYMMDDTHHMMSSZ time" % stamp)
    records_root = resolve_root(records_root or DEFAULT_ROOT)
    try:
        with tarfile.open(package, "r:gz") as tar:
            top, files = _members(tar, package)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ReplayError("%s cannot be read as a tar.gz (%s); copy it again from its source"
                          % (os.path.basename(package), exc))
    original = validate_case_id(top[:-len(_TOP_SUFFIX)])
    rels = [f.name[len(top) + 1:] for f in files]
    run_ids = sorted({m.group(1) for m in (_RUN_MEMBER_RE.match(r) for r in rels) if m},
                     key=lambda r: int(r.split("-", 1)[1]))
    if not run_ids:
        raise ReplayError("%s holds no runs/run-NNN folder: nothing to replay" % os.path.basename(package))
    existing = set(os.listdir(records_root)) if os.path.isdir(records_root) else set()
    case_id = replay_case_id(original, stamp, existing)
    case_dir = os.path.join(records_root, case_id)
    result = {"case_id": case_id, "case_dir": case_dir, "records_root": records_root, "original_case": original,
              "runs": run_ids, "stamp": stamp,
              "package": {"name": os.path.basename(package), "path": package, "sha256": digest,
                          "sha256_file_checked": sha_checked},
              "profile_file": None, "summary": {}, "changed": True, "files_checked": 0}
    profile = [r for r in rels if r.startswith("profile/")]
    if profile:
        result["profile_file"] = os.path.join(case_dir, PACKAGE_DIR, profile[0])
    if check_mode:
        # the manifests are still checked, in a scratch folder outside the records root that is removed again; what
        # replay.yml decides before the unpack (the attempt, the profile, the secrets) is read there too
        scratch = tempfile.mkdtemp(prefix="repro-vllm-replay-check-")
        try:
            _extract(package, top, scratch)
            result["files_checked"] = sum(_verify_run(os.path.join(scratch, "runs", rid), rid, package)
                                          for rid in run_ids)
            result.update(_read_package(scratch, os.path.join(scratch, "runs"), run_ids, profile))
        finally:
            _remove_tree(scratch)
        result["changed"] = False
        return result
    os.makedirs(records_root, mode=0o755, exist_ok=True)
    while True:
        try:
            os.mkdir(case_dir, 0o700)
            break
        except FileExistsError:  # another replay took the name between listdir and mkdir
            case_id = replay_case_id(original, stamp, set(os.listdir(records_root)))
            case_dir = os.path.join(records_root, case_id)
    result.update(case_id=case_id, case_dir=case_dir)
    if profile:
        result["profile_file"] = os.path.join(case_dir, PACKAGE_DIR, profile[0])
    staging = os.path.join(case_dir, ".unpacking")
    try:
        os.mkdir(staging, 0o700)
        _extract(package, top, staging)
        checked = 0
        for rid in run_ids:
            checked += _verify_run(os.path.join(staging, "runs", rid), rid, package)
        result["files_checked"] = checked
        for rid in run_ids:
            os.rename(os.path.join(staging, "runs", rid), os.path.join(case_dir, rid))
            _make_read_only(os.path.join(case_dir, rid))
        os.rmdir(os.path.join(staging, "runs"))
        os.rename(staging, os.path.join(case_dir, PACKAGE_DIR))
        result["summary"] = _summary_of(os.path.join(case_dir, PACKAGE_DIR))
        _make_read_only(os.path.join(case_dir, PACKAGE_DIR))
        origin = {"package": result["package"]["name"], "sha256": digest,
                  "sha256_file_checked": sha_checked, "original_case": original, "runs": run_ids,
                  "replay_case": case_id, "unpacked": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        with open(os.path.join(case_dir, ORIGIN), "x", encoding="utf-8") as f:
            f.write(json.dumps(origin, indent=2, sort_keys=True) + "\n")
        os.chmod(os.path.join(case_dir, ORIGIN), 0o444)
        result["origin"] = origin
    except BaseException:
        _remove_tree(case_dir)
        raise
    return result


PROFILE_TEXT_MAX = 256 * 1024


def _summary_of(folder):
    """The package's summary.json in ``folder`` ({} when it has none)."""
    path = os.path.join(folder, "summary.json")
    if not os.path.isfile(path):
        return {}
    with open(path, "rb") as f:
        return json.loads(f.read().decode("utf-8"))


def _read_package(folder, runs_dir, run_ids, profile_members):
    """What a checked (not unpacked) package says before anything is written: its summary.json, the text of its
    ``profile/<file>`` (None when there is none or it is over PROFILE_TEXT_MAX bytes), the attempt to replay (its
    paths None: the scratch folder they pointed into is removed) and the profile its manifest names."""
    out = {"summary": _summary_of(folder), "profile_text": None}
    if profile_members:
        path = os.path.join(folder, *profile_members[0].split("/"))
        if os.path.getsize(path) <= PROFILE_TEXT_MAX:
            with open(path, "rb") as f:
                out["profile_text"] = f.read().decode("utf-8", errors="replace")
    attempt = select_attempt(runs_dir, run_ids)
    out["profile"] = manifest_profile(_evidence.read_run(attempt["path"])["metadata"])
    attempt.update(path=None, environment_run=None)
    out["attempt"] = attempt
    return out


def _extract(package, top, dest_dir):
    """Write every file member (paths already checked by _members) under dest_dir, without the top folder."""
    with tarfile.open(package, "r:gz") as tar:
        for info in tar:
            if not info.isfile():
                continue
            rel = info.name[len(top) + 1:]
            dest = os.path.join(dest_dir, *rel.split("/"))
            os.makedirs(os.path.dirname(dest), mode=0o700, exist_ok=True)
            with open(dest, "xb") as out:
                shutil.copyfileobj(tar.extractfile(info), out)


def _verify_run(run_dir, rid, package):
    """Verify a run (and each host part holding its own manifest); raise ReplayError naming the member."""
    checked = 0
    dirs = [run_dir]
    hosts = os.path.join(run_dir, "hosts")
    if os.path.isdir(hosts):
        dirs += [os.path.join(hosts, h) for h in sorted(os.listdir(hosts))
                 if os.path.isfile(os.path.join(hosts, h, MANIFEST))]
    for d in dirs:
        rel = os.path.relpath(d, os.path.dirname(os.path.dirname(run_dir))).replace(os.sep, "/")
        try:
            res = verify(d)
        except RecordError as exc:
            raise ReplayError("%s: %s cannot be verified (%s); the package is not replayed"
                              % (os.path.basename(package), rel, exc))
        if not res["ok"]:
            bad = [m["path"] for m in res["mismatched"]] + res["missing"] + res["unexpected"]
            raise ReplayError(
                "%s: %s does not match its manifest (%s): member %s/%s was changed after the run was frozen; the "
                "package is not replayed - ask its sender for the original"
                % (os.path.basename(package), rel, describe_problems(res), rel, bad[0] if bad else "?"))
        checked += res["checked"]
    return checked


def _remove_tree(path):
    if not os.path.isdir(path):
        return
    for dirpath, dirnames, _files in os.walk(path):
        os.chmod(dirpath, 0o700)
        for d in dirnames:
            os.chmod(os.path.join(dirpath, d), 0o700)
    shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------------------------------ what is replayed
def _result_of(run):
    outcome = run["parts"].get("outcome.json") or {}
    stage, error_class, ok = _evidence.attempt_result(run)
    return {"stage": stage, "error_class": error_class, "ok": ok, "first_error": outcome.get("first_error")}


def select_attempt(case_dir, run_ids=None):
    """The attempt to replay: the last failing attempt (not refused) of the runs, else the last good one.

    Returns ``{run, path, step, nodes, argv, env, request, image, ok, stage, error_class, first_error,
    environment_run}``; ``environment_run`` is the package's last fingerprint run before it (else the attempt run
    itself: its identity holds the driver and GPU map), the run the receiver's fingerprint is compared with."""
    ids = run_ids or [run_id_for(n) for n in run_numbers(case_dir)]
    runs = [_evidence.read_run(os.path.join(case_dir, rid)) for rid in ids]
    attempts = [r for r in runs if _evidence.is_attempt(r) and not (r["parts"]["outcome.json"] or {}).get("refused")]
    if not attempts:
        raise ReplayError("the package holds no attempt run (no outcome.json in %s): it was made from a fingerprint "
                          "only; make it again after playbooks/reproduce.yml" % ", ".join(ids))
    failed = [r for r in attempts if not _result_of(r)["ok"]]
    chosen = (failed or attempts)[-1]
    outcome = chosen["parts"]["outcome.json"]
    fps = [r for r in runs[:runs.index(chosen)] if r["purpose"] == "fingerprint"]
    env_run = fps[-1] if fps else chosen
    nodes = [str(n) for n in outcome.get("nodes") or _evidence.run_hosts(chosen)]
    identity = (((chosen["parts"].get("changes.json") or {}).get("current") or {}).get("hosts") or {})
    head = identity.get(nodes[0]) if nodes else None
    server = ((chosen["hosts"].get(nodes[0]) or {}).get("server.json") or {}) if nodes else {}
    res = _result_of(chosen)
    return {"run": chosen["run"], "path": chosen["path"], "step": outcome.get("step"), "nodes": nodes,
            "argv": [str(a) for a in outcome.get("argv") or []], "env": dict(outcome.get("env") or {}),
            "request": outcome.get("request") or {}, "image": (head or {}).get("image"),
            "image_digest": (head or {}).get("image_digest"), "ok": res["ok"], "stage": res["stage"],
            "layer": outcome.get("layer"),
            "error_class": res["error_class"], "first_error": res["first_error"],
            "identity": (chosen["parts"].get("changes.json") or {}).get("current"),
            "container": server.get("container") if isinstance(server, dict) else None,
            "environment_run": env_run["path"], "environment_run_id": env_run["run"]}


def container_pin(attempt):
    """(runtime, pin) for replaying an attempt whose server ran in a container: the package's image, matched on the
    receiver by its image id (vllm_server refuses when the receiver does not hold it, saying how to bring it);
    ("process", None) for a server that ran as a process."""
    ran = attempt.get("container") or {}
    if not (ran.get("runtime") and ran.get("image_id")):
        return "process", None
    return ran["runtime"], {"runtime": ran["runtime"], "reference": ran.get("image"), "image_id": ran["image_id"],
                            "image_repo_digest": ran.get("image_repo_digest"),
                            # by id: an image brought with save/load is held under its id, not always its digest
                            "run_ref": ran["image_id"], "by": "image_id",
                            "pinned_by": "the package (%s)" % attempt.get("run")}


def _is_redacted(value):
    return isinstance(value, str) and bool(MARKER_RE.search(value))


def by_digest(reference, digest):
    """``repo@sha256:...`` for an image reference and its digest (the reference as is when no digest)."""
    if not reference or not digest:
        return reference
    if "@" in digest:
        return digest
    repo = reference.split("@", 1)[0]
    last = repo.rsplit("/", 1)[-1]
    if ":" in last:
        repo = repo[:len(repo) - len(last)] + last.split(":", 1)[0]
    return "%s@%s" % (repo, digest)


def replay_step(attempt, secret_env=None, secret_args=None, port=None):
    """What the attempt role needs to replay ``attempt`` (select_attempt): argv, env, host, port, request and the
    secrets the receiver must supply. Raises ReplayError for a secret in the command that was not supplied.

    ``secret_env`` are the receiver's secret variables (names only are used here); ``secret_args`` maps an
    option (``--api-key``) to the value to put back where the package holds a redaction marker."""
    secret_args = dict(secret_args or {})
    argv = list(attempt["argv"])
    if not argv:
        raise ReplayError("the package's %s has no command (outcome.json argv is empty)" % attempt["run"])
    missing = []
    for i, tok in enumerate(argv):
        if not _is_redacted(tok):
            continue
        if tok.startswith("--") and "=" in tok:
            flag = tok.split("=", 1)[0]
            if flag in secret_args:
                argv[i] = "%s=%s" % (flag, secret_args[flag])
                continue
        else:
            flag = argv[i - 1] if i > 0 else "<argv[%d]>" % i
            if flag in secret_args:
                argv[i] = str(secret_args[flag])
                continue
        missing.append(flag)
    if missing:
        raise ReplayError(
            "the command of %s holds secrets the package does not carry: %s. Supply them with "
            "-e '{\"repro_vllm_replay_secret_args\": {\"%s\": \"...\"}}' (never through the package)"
            % (attempt["run"], ", ".join(missing), missing[0]))
    try:
        parsed = parse_command(argv)
    except CommandError as exc:
        raise ReplayError("the command of %s cannot be read: %s" % (attempt["run"], exc))
    image = None
    runtime, pin = container_pin(attempt)
    if pin:
        # the container runtime runs the pinned image by id; the command keeps the reference it was recorded with
        image = pin["reference"] = parsed["image"] or pin["reference"]
    elif parsed["runtime"]:
        image = by_digest(parsed["image"], attempt.get("image_digest"))
        parsed["image"] = image
    if port:
        for opt in parsed["options"]:
            if opt["flag"] == "--port":
                opt["tokens"] = [opt["tokens"][0], str(port)] if len(opt["tokens"]) == 2 else ["--port=%s" % port]
                opt["value"] = str(port)
                break
        else:
            parsed["options"].append({"flag": "--port", "value": str(port), "tokens": ["--port", str(port)],
                                      "category": None})
    argv = render_command(parsed)
    opts = option_map(argv)
    env, needed = {}, []
    for key, value in sorted(attempt["env"].items()):
        if _is_redacted(value):
            needed.append(key)
        else:
            env[key] = str(value)
    supplied = sorted(set(secret_env or {}) & set(needed))
    not_supplied = [k for k in needed if k not in supplied]
    request = dict(attempt["request"] or {})
    request.pop("repeat", None)
    request.update(repeat=1)
    return {"argv": argv, "env": env, "image": image, "runtime": runtime, "container_pin": pin,
            "host": str(opts.get("--host") or "127.0.0.1"),
            "port": int(str(opts.get("--port") or 8000)), "request": request, "secret_env_needed": needed,
            "secret_env_supplied": supplied, "secret_env_missing": not_supplied}


# ---------------------------------------------------------------------------------------------- the verdict
_RUN_PATH_RE = re.compile(r"^.*?/(run-[0-9]{3,}/)")
FIRST_ERROR_KEYS = ("line", "timestamp", "process", "node", "file", "lineno", "stage", "error_class")


def first_error_brief(first_error):
    """The classifier's first error without its context lines, its file named inside its run (never a path of
    the controller that classified it)."""
    if not isinstance(first_error, dict):
        return None
    out = {k: first_error.get(k) for k in FIRST_ERROR_KEYS}
    if isinstance(out["file"], str):
        out["file"] = _RUN_PATH_RE.sub(r"\1", out["file"])
    return out


def _side(result):
    result = result or {}
    stage = result.get("stage")
    ok = bool(result.get("ok"))
    return {"stage": stage if stage is not None else ("none" if ok else None),
            "error_class": None if ok else result.get("error_class"),
            "first_error": None if ok else first_error_brief(result.get("first_error")), "ok": ok}


def differences(diff):
    """The run diff's entries as one flat list ``[{host, variable, from, to}]`` (what is not the same here)."""
    out = []
    for host in sorted((diff or {}).get("hosts") or {}):
        for e in diff["hosts"][host]:
            out.append({"host": host, "variable": e["variable"], "from": e["from"], "to": e["to"]})
    return out


# the case verdict of summary.json format 2 (first match wins in this order), and those that are a failure
CASE_VERDICTS = ("boundary", "collective_failed", "fails_at_minimal", "fails_at_layer", "refused", "incomplete",
                 "healthy")
FAILED_CASE_VERDICTS = ("boundary", "collective_failed", "fails_at_minimal", "fails_at_layer")


def attempt_case_verdict(result, layer=None):
    """The case verdict (CASE_VERDICTS) that one attempt supports, from what replay compares: ``ok``, ``stage``,
    ``error_class``, ``refused`` and the ladder ``layer`` of the attempt.

    This is the fallback for format-1 packages, whose summary.json carries no ``verdict``, and the verdict of the
    replay's own attempt (which replays one attempt of the package, so ``layer`` is the package attempt's layer).
    A refused attempt is ``refused``; a healthy one ``healthy``; one that never got a stage or an error class
    (interrupted, not classified) ``incomplete``; a failure of a ladder layer ``fails_at_layer``; any other failure
    ``fails_at_minimal``. ``boundary`` and ``collective_failed`` need runs replay does not replay, so they come
    only from a format-2 summary.json."""
    if not isinstance(result, dict):
        return "incomplete"
    if result.get("refused"):
        return "refused"
    if result.get("ok"):
        return "healthy"
    if result.get("stage") in (None, "") and result.get("error_class") in (None, ""):
        return "incomplete"
    return "fails_at_layer" if (layer or result.get("layer")) else "fails_at_minimal"


def package_case_verdict(summary, attempt):
    """(verdict, where from) of the package: summary.json's top-level ``verdict`` (format 2 and later), else
    attempt_case_verdict of the package's replayed attempt (format 1: ``attempt``)."""
    summary = summary if isinstance(summary, dict) else {}
    fmt = summary.get("format")
    if isinstance(fmt, int) and fmt >= 2 and summary.get("verdict") in CASE_VERDICTS:
        return summary["verdict"], "summary.json"
    return attempt_case_verdict(attempt), "attempt"


def secret_names(replay):
    """Every secret variable the package names: summary.json ``secret_variable_names`` and the environment
    variables its replayed attempt holds as redaction markers. A command option of that list (``argv --api-key``)
    is not a variable: it is supplied with repro_vllm_replay_secret_args, and replay_step refuses it when it is not."""
    names = set(str(n) for n in (replay or {}).get("secret_variable_names") or [] if not str(n).startswith("argv "))
    env = ((replay or {}).get("attempt") or {}).get("env") or {}
    names.update(k for k, v in env.items() if _is_redacted(v))
    return sorted(names)


def missing_secrets(replay, secret_env=None):
    """The package's secret variables (secret_names) that the receiver did not supply in ``secret_env``."""
    supplied = set(secret_env or {})
    return [n for n in secret_names(replay) if n not in supplied]


def added_env(replay, here, secret_env=None):
    """The environment the receiver added to the replayed attempt (``repro_vllm_secret_env`` names that are neither
    in the package attempt's environment nor among its secret variables), as differences ``[{host, variable: env:NAME,
    from: None, to: "<redacted>"}]`` on the first node of the replay: names only, never a value."""
    env = ((replay or {}).get("attempt") or {}).get("env") or {}
    known = set(secret_names(replay)) | set(env)
    nodes = (here or {}).get("nodes") or []
    host = str(nodes[0]) if nodes else None
    return [{"host": host, "variable": "env:%s" % name, "from": None, "to": MASK}
            for name in sorted(str(n) for n in (secret_env or {})) if name not in known]


def replay_verdict(package, here, diff=None, package_verdict=None, missing=None, added=None):
    """``{"verdict", "package_verdict", "replay_verdict", "package", "here", "differences", "missing_secrets",
    "summary"}``.

    ``package`` and ``here`` are attempt results (``ok``, ``stage``, ``error_class``, ``first_error``, ``layer``:
    the package's outcome.json, the replay's attempt). ``package_verdict`` is the package's case verdict
    (package_case_verdict; derived from ``package`` when not given); the replay's is attempt_case_verdict of
    ``here`` with the package attempt's layer. ``reproduced``: both verdicts match and, for a failure, so do the
    stage and the error class (a healthy package replayed healthy included); ``not_reproduced``: the package
    failed and the replay is healthy; ``different`` otherwise (both first errors side by side). ``diff`` is the
    run diff of the package's environment against the receiver's (``_diff.run_diff``), ``added`` what the receiver
    added to the attempt's environment (added_env); ``missing`` the package's
    secret variables the receiver did not supply (missing_secrets): a verdict other than ``reproduced`` says the
    difference may come from them."""
    p, h = _side(package), _side(here)
    pv = package_verdict if package_verdict in CASE_VERDICTS else attempt_case_verdict(package)
    rv = attempt_case_verdict(here, layer=(package or {}).get("layer"))
    same_failure = (p["stage"], p["error_class"]) == (h["stage"], h["error_class"])
    if pv == rv and (rv not in FAILED_CASE_VERDICTS or same_failure):
        verdict = "reproduced"
    elif pv in FAILED_CASE_VERDICTS and rv == "healthy":
        verdict = "not_reproduced"
    else:
        verdict = "different"
    diffs = differences(diff) + list(added or [])  # the receiver's own additions: a difference the run diff cannot see
    missing = sorted(set(missing or []))

    def text(side, case):
        if side["ok"] or case in ("healthy", "refused", "incomplete"):
            return case
        return "failed at %s (%s; %s)" % (side["stage"], side["error_class"] or "no class", case)

    summary = "%s: the package %s, here %s" % (verdict.replace("_", " "), text(p, pv), text(h, rv))
    if diffs:
        summary += "; not the same here: %s" % ", ".join(sorted({d["variable"] for d in diffs}))
    else:
        summary += "; no difference in the environment compared"
    if missing:
        summary += "; the package's secret variable(s) %s not supplied here (repro_vllm_secret_env)" % ", ".join(missing)
        if verdict != "reproduced":
            summary += ": the difference may come from them"
    return {"verdict": verdict, "package_verdict": pv, "replay_verdict": rv,
            "package": {k: p[k] for k in ("stage", "error_class", "first_error")},
            "here": {k: h[k] for k in ("stage", "error_class", "first_error")},
            "differences": diffs, "missing_secrets": missing, "summary": summary}


def not_the_same_lines(diff):
    """"what is not the same here" console lines of a run diff (one per difference)."""
    diffs = differences(diff)
    if not diffs:
        return ["replay | what is not the same here: nothing in %s" % ", ".join(ENVIRONMENT_FACTS)]

    def cell(v):
        return "-" if v is None else (json.dumps(v, sort_keys=True) if isinstance(v, (list, dict)) else str(v))

    return ["replay | what is not the same here | %s | %s | package: %s | here: %s"
            % (d["host"], d["variable"], cell(d["from"]), cell(d["to"])) for d in diffs]


# the environment facts the replay compares (the run diff's fact names)
ENVIRONMENT_FACTS = ("driver", "kernel_module", "cuda_driver", "gpu_model", "gpu_count", "image", "image_digest",
                     "image_vllm", "image_torch", "image_cuda", "visible_devices", "foreign_processes")


# ------------------------------------------------------------------------------ the choices replay.yml makes
DEFAULT_PROFILE = "cpu-smoke"


def manifest_profile(metadata):
    """The shipped profile a run's manifest names, or None: a run judged against a profile file (its name is no
    shipped profile's: the package's profile/ file stands for it) or not judged at all names none. Runs made before
    ``profile_source`` existed name the profile they were given."""
    metadata = metadata or {}
    if metadata.get("profile_source") in ("file", "not judged"):
        return None
    return metadata.get("profile") or None


PROFILE_SOURCES = ("package_profile_file", "package_variables_file", "package_manifest", "default",
                   "repro_vllm_profile", "repro_vllm_profile_file")


def choose_profile(profile_file, data, manifest_profile=None):
    """Which profile the receiving hosts are judged against: ``{"profile", "profile_file", "source"}``, exactly one
    of ``profile`` and ``profile_file`` non-empty (the compatibility role refuses both).

    ``profile_file`` is the package's unpacked ``profile/<file>`` (or None) and ``data`` its parsed content (None
    when there is no file or it could not be read). A compatibility profile (a mapping with ``name`` and no
    ``repro_vllm_*`` key) is used as the profile file (``profile`` empty); the runs' variables file
    (``repro_vllm_*`` keys) gives its ``repro_vllm_profile``; otherwise the profile named in the replayed run's
    manifest, else ``cpu-smoke``. ``source`` says which (PROFILE_SOURCES)."""
    fallback = manifest_profile or DEFAULT_PROFILE
    source = "package_manifest" if manifest_profile else "default"
    if not profile_file or not isinstance(data, dict):
        return {"profile": fallback, "profile_file": "", "source": source}
    run_vars = [k for k in data if isinstance(k, str) and k.startswith("repro_vllm_")]
    if "name" in data and not run_vars:
        return {"profile": "", "profile_file": profile_file, "source": "package_profile_file"}
    if data.get("repro_vllm_profile"):
        return {"profile": str(data["repro_vllm_profile"]), "profile_file": "", "source": "package_variables_file"}
    return {"profile": fallback, "profile_file": "", "source": source}


def profile_override(chosen, given_profile=None, given_file=None):
    """The profile after the receiver's own choice: ``chosen`` (choose_profile) unless ``repro_vllm_profile`` or
    ``repro_vllm_profile_file`` is an extra variable of the replay.

    replay.yml sets both variables empty in its play and reads them back: a value there can only come from an
    extra variable, which outranks play variables (``given_profile`` / ``given_file`` are the values read back;
    one equal to ``chosen`` changes nothing). The receiver's profile name wins with no file; the receiver's file
    always wins (over the package's choice and over a name given beside it: one rule with the compatibility
    role's)."""
    given_profile = (given_profile or "").strip() if isinstance(given_profile, str) else given_profile
    given_file = (given_file or "").strip() if isinstance(given_file, str) else given_file
    by_name = bool(given_profile) and given_profile != chosen.get("profile")
    by_file = bool(given_file) and given_file != chosen.get("profile_file")
    if by_file:
        return {"profile": "", "profile_file": str(given_file), "source": "repro_vllm_profile_file"}
    if by_name:
        return {"profile": str(given_profile), "profile_file": "", "source": "repro_vllm_profile"}
    return dict(chosen)


def profile_vars(final, replay, check_mode=False):
    """``{"profile", "profile_file"}`` replay.yml sets for the roles after the unpack: ``final`` (profile_override)
    with the package's own profile file where the unpack put it (``replay`` is what the unpack returned). In check
    mode nothing is unpacked, so the package's file is not there: the profile its manifest names (else
    ``cpu-smoke``) stands in for it."""
    if final.get("source") != "package_profile_file":
        return {"profile": final.get("profile") or "", "profile_file": final.get("profile_file") or ""}
    if check_mode:
        return {"profile": (replay or {}).get("profile") or DEFAULT_PROFILE, "profile_file": ""}
    return {"profile": "", "profile_file": (replay or {}).get("profile_file") or ""}


def receivers(play_hosts):
    """The receiving hosts among a play's hosts, in order: every host but the controller (``localhost``), or the
    controller alone when it is the only one (a replay on this machine)."""
    hosts = [str(h) for h in play_hosts or []]
    return [h for h in hosts if h != "localhost"] or (["localhost"] if "localhost" in hosts else [])


def node_pairs(nodes, play_hosts):
    """The package's nodes paired, in order, with the receiving hosts (``{package node: receiving host}``); a
    node without a receiver is left out (the attempt play stops on too few hosts)."""
    here = receivers(play_hosts)
    return dict(zip([str(n) for n in nodes or []], here))


def attempt_plan(replay, play_hosts, secret_env=None, secret_args=None, port=None):
    """replay_step's answer plus ``step``: the whole step the attempt role runs for the package's attempt, on
    the first N hosts of the play (N = the attempt's nodes). ``replay`` is what the replay module returned;
    ``port`` as a variable gives it (none, empty or 0: the package's). Raises ReplayError when the play has fewer
    hosts than the attempt had nodes."""
    port = int(port) if port not in (None, "", 0, "0") else None
    attempt = replay["attempt"]
    hosts = [str(h) for h in play_hosts or []]
    nodes = list(attempt.get("nodes") or [])
    if len(hosts) < len(nodes):
        raise ReplayError(
            "the package's %s ran on %d node(s) (%s) but this play has %d (%s); add hosts to the inventory or "
            "repro_vllm_targets" % (attempt["run"], len(nodes), ", ".join(nodes), len(hosts), ", ".join(hosts)))
    plan = replay_step(attempt, secret_env=secret_env, secret_args=secret_args, port=port)
    plan["missing_secrets"] = missing_secrets(replay, secret_env)
    # a package whose server ran in a container replays in its image, matched by image id even where the tag moved
    plan["allow_moved_tag"] = plan["container_pin"] is not None
    plan["step"] = build_step("replay", attempt=attempt, plan=plan, nodes=hosts[:len(nodes)],
                              original_case=replay.get("original_case"), package=replay.get("package") or {})
    return plan


def precheck(replay, play_hosts, secret_env=None, secret_args=None, port=None, case_id=None):
    """attempt_plan on the receiving hosts of a play that also holds the controller (receivers), for replay.yml to
    refuse a package it cannot replay here (too few hosts, a secret option not supplied, an unreadable command)
    before anything is unpacked. ``replay`` is the checked package (unpack in check mode). Added
    ``ignored_case_id``: ``case_id`` (an extra ``repro_vllm_case_id``, as replay.yml reads it back) when it is
    given and not the replay case - the replay ignores it - else None."""
    plan = attempt_plan(replay, receivers(play_hosts), secret_env=secret_env, secret_args=secret_args, port=port)
    plan["ignored_case_id"] = case_id if case_id not in (None, "", replay.get("case_id")) else None
    return plan


def unpacked_lines(replay, profile, check_mode=False, handed_result=None, ignored_case_id=None, missing=None):
    """The console lines after the unpack, in order: a case an earlier workflow node handed on (``handed_result``,
    its ``repro_vllm_result``) and an extra ``repro_vllm_case_id`` (``ignored_case_id``), both ignored - the replay
    makes its own case and writes nothing into either; the package's secret variables the receiver does not supply
    (``missing``); where the package came from and what is replayed - or, in check mode (``replay`` is the checked
    package), what would be. ``profile`` is the profile file or name the hosts are judged against, with its source."""
    case_id, lines = replay["case_id"], []
    if isinstance(handed_result, dict) and handed_result.get("case_id"):
        lines.append("replay | the workflow handed on case %s (repro_vllm_result of %s): ignored - a replay makes its own "
                     "case %s and writes nothing into %s" % (handed_result["case_id"], handed_result.get("purpose")
                                                             or "an earlier node", case_id, handed_result["case_id"]))
    if ignored_case_id and ignored_case_id != case_id:
        lines.append("replay | repro_vllm_case_id=%s ignored (an extra variable: in a workflow, handed on by an earlier "
                     "node or a survey) - this replay's case is %s (replay.json ignored_case_id)" % (ignored_case_id, case_id))
    if missing:
        lines.append("replay | WARNING: the package names the secret variable(s) %s and this replay does not supply "
                     "them: the replay starts without them, and a different answer may come from that. Supply them "
                     "with -e '{\"repro_vllm_secret_env\": {\"NAME\": \"...\"}}' (never through the package)."
                     % ", ".join(missing))
    package = replay["package"]
    if check_mode:
        return lines + [
            "replay | check mode: %s checks out (%d files verified against the manifests); it would be unpacked into "
            "%s and the receivers judged against profile %s. The receiving hosts are fingerprinted in check mode; "
            "the attempt is not replayed." % (package["name"], replay.get("files_checked") or 0, replay["case_dir"],
                                              profile)]
    attempt = replay.get("attempt") or {}
    checked = ("checked against its .sha256" if package.get("sha256_file_checked")
               else "NO .sha256 beside it: not checked")
    return lines + [
        "replay | package %s (sha256 %s, %s), %d files verified against the manifests of %s"
        % (package["name"], package["sha256"], checked, replay.get("files_checked") or 0, ", ".join(replay["runs"])),
        "replay | case %s unpacked into %s (origin.json)" % (replay["original_case"], replay["case_dir"]),
        "replay | replaying %s (%s): %s in the package; profile %s"
        % (attempt.get("run", "-"), attempt.get("step") or "-", attempt_text(attempt) if attempt else "-", profile),
    ]


def replay_document(replay, head, diff=None, case_id=None, secret_env=None, ignored_case_id=None):
    """replay.json: the verdict of the package's attempt against the replayed one (``head``, the attempt fact of
    the first host that ran it), with where it came from; None when the attempt did not run. ``secret_env`` is
    the receiver's secret environment (only its names are read): missing_secrets. ``ignored_case_id``: an extra
    ``repro_vllm_case_id`` the replay ignored (null when none was given)."""
    if not isinstance(head, dict) or head.get("run") is None:
        return None
    attempt = replay["attempt"]
    pv, pv_from = package_case_verdict(replay.get("summary"), attempt)
    doc = replay_verdict(attempt, head, diff, package_verdict=pv, missing=missing_secrets(replay, secret_env),
                         added=added_env(replay, head, secret_env))
    doc.update(package_verdict_from=pv_from, origin=replay.get("origin"),
               package_run="%s/%s" % (replay["original_case"], attempt["run"]),
               run="%s/%s" % (case_id or replay["case_id"], head["run"]),
               diff=(diff or {}).get("summary") if diff else None, ignored_case_id=ignored_case_id or None)
    return doc


def judge(replay, head, diff=None, case_id=None):
    """The last play of replay.yml: ``{"replay": replay.json (replay_document; None when the attempt did not run),
    "section": the run sheet's, "line": the console's verdict line without its record, "classification": the
    replayed attempt's stage and error class (None when none ran)}``. ``replay`` is what the unpack returned: its
    ``ignored_case_id`` goes into replay.json, its ``secret_env_names`` (the receiver's secret variables, names
    only) are what the receiver supplied; ``head`` is the attempt fact of the first host that ran the attempt."""
    doc = replay_document(replay, head, diff, case_id=case_id,
                          secret_env=dict.fromkeys((replay or {}).get("secret_env_names") or []),
                          ignored_case_id=(replay or {}).get("ignored_case_id"))
    if doc is None:
        line = "replay | case %s | no verdict: the attempt did not run | " % case_id
        section = None
    else:
        line = "replay | case %s | %s | %s" % (case_id, doc["verdict"], doc["summary"])
        section = "## Replay\n\n**%s**\n\n%s" % (doc["summary"], "\n\n".join(not_the_same_lines(diff)))
    classification = ({"stage": head.get("stage"), "error_class": head.get("error_class")}
                      if isinstance(head, dict) else None)
    return {"replay": doc, "section": section, "line": line, "classification": classification}
