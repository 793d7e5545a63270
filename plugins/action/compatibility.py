# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of repro.vllm.compatibility: loads the profile and the matrix (YAML, controller side), reads the
hosts' parts of the open run and hands them to module_utils/compat/_compat.py, which decides."""

from __future__ import annotations

import json
import os

import yaml

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.repro.vllm.plugins.plugin_utils.close import _closing
from ansible_collections.repro.vllm.plugins.module_utils.compat import _compat
from ansible_collections.repro.vllm.plugins.module_utils.record import _record

PROFILES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "profiles")
MATRIX = "matrix.yml"

ARGSPEC = {
    "state": {"type": "str", "choices": ["check", "profile"], "default": "check"},
    "profile": {"type": "str"},
    "profile_file": {"type": "path"},
    "run_path": {"type": "path"},
    "hosts": {"type": "list", "elements": "str", "default": []},
    "allow_foreign": {"type": "bool", "default": False},
    "enabled": {"type": "bool", "default": True},
    "write": {"type": "bool", "default": False},
}

PART = "compatibility.json"


# libyaml's loader where PyYAML has it: the matrix and the profile are read by every judged playbook's first task
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml(path, origin):
    try:
        with open(path, "rb") as fh:
            return yaml.load(fh, Loader=_LOADER)  # nosec B506 - a safe loader (CSafeLoader or SafeLoader)
    except yaml.YAMLError as exc:
        raise _compat.ProfileError(origin, None, "not valid YAML: %s" % " ".join(str(exc).split()))
    except OSError as exc:
        raise _compat.ProfileError(origin, None, "cannot be read: %s" % exc.strerror)


def builtin_names(folder=PROFILES_DIR):
    return sorted(f[:-4] for f in os.listdir(folder) if f.endswith(".yml") and f != MATRIX)


def load_matrix(folder=PROFILES_DIR):
    path = os.path.join(folder, MATRIX)
    return _compat.validate_matrix(_load_yaml(path, path), path)


def load_profile(name, path, folder=PROFILES_DIR, cwd=None):
    """The validated profile for the two user variables (exactly one of them)."""
    kind, value = _compat.choose_profile(name, path)
    if kind == "name":
        known = builtin_names(folder)
        if value not in known:
            raise _compat.unknown_profile(value, known)
        full = os.path.join(folder, value + ".yml")
        prof = _compat.validate_profile(_load_yaml(full, full), "profiles/%s.yml" % value, builtin=True)
        if prof["name"] != value:
            raise _compat.ProfileError(full, "name", "is %r, the file is %s.yml" % (prof["name"], value))
        return prof
    full = os.path.abspath(os.path.join(cwd or os.getcwd(), os.path.expanduser(value)))
    if not os.path.isfile(full):
        raise _compat.ProfileError("repro_vllm_profile_file", None, "%s does not exist (relative paths are taken from "
                                                                    "the working directory)" % full)
    return _compat.validate_profile(_load_yaml(full, full), full)


def _read_json(path):
    try:
        with open(path, "r") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def read_hosts(run_path, hosts):
    """{host: {fingerprint, container, missing}} from the run's hosts/<host>/ folders, in the job's order."""
    out = {}
    for host in hosts:
        folder = os.path.join(run_path, "hosts", host)
        fp = _read_json(os.path.join(folder, "fingerprint.json"))
        missing = None
        if fp is None:
            for part, key in (("unreachable.json", "msg"), ("failed.json", "detail")):
                data = _read_json(os.path.join(folder, part))
                if isinstance(data, dict):
                    missing = "%s: %s" % (part[:-5], data.get(key) or "no message")
                    break
            missing = missing or "no fingerprint.json in the run"
        out[host] = {"fingerprint": fp, "container": _read_json(os.path.join(folder, "container.json")),
                     "missing": missing}
    return out


def judge_run(profile, matrix, run_path, hosts, allow_foreign=False):
    """compatibility.json's document for the run's hosts; a host part the judge cannot read fails the task once,
    naming the host, its folder and the fix (the playbook freezes the run without compatibility.json)."""
    try:
        return _compat.check(profile, matrix, read_hosts(run_path, hosts), allow_foreign)
    except _compat.JudgeError as exc:
        folder = os.path.join(run_path, "hosts", exc.host)
        raise AnsibleActionFail(
            "compatibility judge (repro.vllm.compatibility, profile %s) stopped at %s; no compatibility.json was "
            "written. The host's parts in %s are not what repro.vllm.host_record writes: fingerprint that host "
            "again into a new run (ansible-playbook playbooks/fingerprint.yml --limit %s), and if the new run "
            "fails the same way, report it with that folder" % (profile["name"], exc, folder, exc.host))


def console_lines(lines):
    """What the console prints of the judge's lines: the verdict line as it is, each host line after it prefixed."""
    return lines[:1] + ["compatibility | %s" % line for line in lines[1:]]


def check_mode_unjudged(run_path):
    """The answer of a judge in check mode, where the open created no run: nothing to judge."""
    msg = "check mode: the run %s was not created, nothing to judge" % run_path
    return {"run_path": run_path, "skipped": True, "msg": msg, "verdict": "unchecked", "lines": [msg],
            "compatibility": {}}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _valid, args = self.validate_argument_spec(argument_spec=ARGSPEC)
        result.update(changed=False, enabled=args["enabled"], run_path=args["run_path"])
        if not args["enabled"]:
            # the run is not judged: nothing is loaded, and the result still has the keys a verdict has
            result.update(verdict="unchecked", lines=[], compatibility={}, judged=_record.judged_profile(None),
                          msg="not judged (repro_vllm_compatibility is false, or no profile was given)")
            return result
        try:
            matrix = load_matrix()
            profile = load_profile(args["profile"], args["profile_file"])
        except _compat.ProfileError as exc:
            raise AnsibleActionFail("compatibility profile refused before any host is touched: %s" % exc)
        result["profile"] = profile
        # what every run of the play records as its profile (repro.vllm.run_record's profile takes this result)
        result["judged"] = _record.judged_profile(profile)
        chosen = [line for line in [_compat.choice_line(args["profile"], args["profile_file"])] if line]
        if args["state"] == "profile":
            result["msg"] = "profile %s (%s) is valid" % (profile["name"], profile["origin"])
            result["console"] = chosen + ["compatibility | " + result["msg"]]
            return result
        if self._task.check_mode and not (args["run_path"] and os.path.isdir(args["run_path"])):
            result.update(check_mode_unjudged(args["run_path"]))
            return result
        if not args["run_path"] or not os.path.isdir(args["run_path"]):
            raise AnsibleActionFail("run_path %r is not a directory: the compatibility check reads the hosts' parts of "
                                    "the open run" % args["run_path"])
        doc = judge_run(profile, matrix, args["run_path"], args["hosts"], args["allow_foreign"])
        result.update(compatibility=doc, verdict=doc["verdict"], lines=_compat.console_lines(doc))
        result["console"] = chosen + console_lines(result["lines"])
        if args["write"]:
            try:
                written = _record.write_part(args["run_path"], PART, data=doc, check_mode=bool(self._task.check_mode),
                                             has_data=True)
            except (_record.RecordError, OSError) as exc:
                raise AnsibleActionFail("compatibility.json could not be written into the open run %s: %s"
                                        % (args["run_path"], exc))
            result.update(changed=written["changed"], written=dict(part=written["part"], sha256=written["sha256"],
                                                                   size=written["size"]))
        # the verdict and every violation as the task's result under any display (AWX's): plugin_utils/close/_closing.py
        return _closing.shown(result)
