# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""repro.vllm.replay on the controller: the records root resolved as for the hand-off (plugins/action/handoff.py),
and the choices replay.yml takes before the unpack (module_utils/handoff/_replay.py decides each of them).

Given ``checked`` (what ``state=checked`` returned), the unpack decides first, in this order: the profile the
receivers are judged against (the package's choice, unless the receiver's extra variable names another), that
profile usable (the package's file a valid profile, a receiver's name or file as repro.vllm.compatibility loads
it), enough receiving hosts for the attempt's nodes and every secret option of its command supplied, an extra case
id to ignore. A refusal comes before anything is unpacked. Then it unpacks (in check mode the checked package
answers) and returns what the later plays read: the profile variables, the console lines, the run diff's node
pairs."""

from __future__ import annotations

import os

import yaml
from ansible.errors import AnsibleActionFail

from ansible_collections.repro.vllm.plugins.action.compatibility import load_profile
from ansible_collections.repro.vllm.plugins.action.handoff import ActionModule as _RootResolved
from ansible_collections.repro.vllm.plugins.module_utils.compat import _compat
from ansible_collections.repro.vllm.plugins.module_utils.handoff import _replay

# the options the action decides with before the unpack; the module is run without them
DECISION_ARGS = ("checked", "profile", "profile_file", "case_id", "hosts", "secret_env", "secret_args", "port",
                 "handed_result")


def package_choice(checked):
    """``(chosen, refusal)``: the package's own profile choice (``_replay.choose_profile``) and, when it is the
    package's profile file, the refusal that file earns if it is used (not YAML, not a valid profile), else None.
    Reads the file where the unpack put it, else the text the check returned."""
    path = checked.get("profile_file")
    try:
        if path and os.path.isfile(path):
            with open(path, "r", encoding="utf-8") as f:
                data = yaml.safe_load(f)
        elif path and checked.get("profile_text") is not None:
            data = yaml.safe_load(checked["profile_text"])
        else:
            data = None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        # not readable: it can only be judged as the package's profile file, and it is refused when it is used
        return ({"profile": "", "profile_file": path, "source": "package_profile_file"},
                "the package's profile file %s cannot be read as YAML (%s); give -e repro_vllm_profile=<name> to "
                "judge the hosts against a profile of this collection" % (os.path.basename(path), " ".join(str(exc).split())))
    chosen = _replay.choose_profile(path, data, checked.get("profile"))
    if chosen["source"] != "package_profile_file":
        return chosen, None
    try:
        _compat.validate_profile(data, "the package's profile/%s" % os.path.basename(path))
    except _compat.ProfileError as exc:
        return chosen, ("%s; nothing was unpacked. Give -e repro_vllm_profile=<name> (or -e repro_vllm_profile_file="
                        "<your file>) to judge the hosts against another profile" % exc)
    return chosen, None


def decide(checked, profile=None, profile_file=None, case_id=None, hosts=None, secret_env=None, secret_args=None,
           port=None):
    """What replay.yml decides before the unpack, in this order; raises AnsibleActionFail (nothing unpacked).

    ``profile``, ``profile_file`` and ``case_id`` are the variables as replay.yml reads them back after setting
    them empty in its play: a value there can only be an extra variable (it outranks play variables; the
    inventory's does not), the receiver's choice of profile or a case id to ignore. Returns ``{"profile":
    profile_override's answer, "console": the compatibility check's line of a profile other than the package's
    file, "ignored_case_id", "missing_secrets"}``."""
    chosen, refusal = package_choice(checked)
    final = _replay.profile_override(chosen, profile, profile_file)
    console = []
    if final["source"] == "package_profile_file":
        if refusal:
            raise AnsibleActionFail("replay | %s" % refusal)
    else:
        # the receiver's profile name or file (or the package's name), checked as repro.vllm.compatibility does
        try:
            loaded = load_profile(final["profile"] or None, final["profile_file"] or None)
        except _compat.ProfileError as exc:
            raise AnsibleActionFail("compatibility profile refused before any host is touched: %s" % exc)
        console = ["compatibility | profile %s (%s) is valid" % (loaded["name"], loaded["origin"])]
    try:
        plan = _replay.precheck(checked, list(hosts or []), secret_env=secret_env, secret_args=secret_args,
                                port=port, case_id=case_id)
    except (_replay.ReplayError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleActionFail("replay | %s; nothing was unpacked" % exc)
    return {"profile": final, "console": console, "ignored_case_id": plan["ignored_case_id"] or None,
            "missing_secrets": plan["missing_secrets"]}


def unpacked(replay, decided, hosts=None, handed_result=None, secret_env=None, check_mode=False):
    """What the later plays read of the unpack (``replay``: the module's answer, or the check's in check mode):
    the profile variables for the roles (``_replay.profile_vars``), the console lines, the package's nodes paired
    with the receiving hosts (the run diff's) and the environment facts it compares."""
    final = decided["profile"]
    profile_vars = _replay.profile_vars(final, replay, bool(check_mode))
    label = "%s (%s)" % (profile_vars["profile_file"] or profile_vars["profile"], final["source"])
    nodes = (replay.get("attempt") or {}).get("nodes")
    return {"profile_vars": profile_vars, "profile_source": final["source"],
            "ignored_case_id": decided["ignored_case_id"], "missing_secrets": decided["missing_secrets"],
            "lines": _replay.unpacked_lines(replay, label, check_mode=bool(check_mode), handed_result=handed_result,
                                            ignored_case_id=decided["ignored_case_id"],
                                            missing=decided["missing_secrets"]),
            "node_pairs": _replay.node_pairs(nodes, list(hosts or [])),
            "environment_facts": list(_replay.ENVIRONMENT_FACTS), "console": decided["console"],
            "secret_env_names": sorted(str(n) for n in secret_env or {})}


class ActionModule(_RootResolved):
    """The records root resolved in the controller's process, the choices around the unpack, then the module."""

    def run(self, tmp=None, task_vars=None):
        args = dict(self._task.args)
        checked = args.get("checked")
        if args.get("state", "unpacked") != "unpacked" or not checked:
            return super().run(tmp, task_vars)
        if not isinstance(checked, dict) or "attempt" not in checked:
            raise AnsibleActionFail("replay: checked must be what repro.vllm.replay state=checked returned")
        decided = decide(checked, args.get("profile"), args.get("profile_file"), args.get("case_id"),
                         args.get("hosts"), args.get("secret_env"), args.get("secret_args"), args.get("port"))
        if self._task.check_mode:
            # nothing is unpacked in check mode: the checked package answers (its stamp names the same case)
            result = {k: v for k, v in checked.items() if k not in ("invocation", "profile_text")}
            result["changed"] = False
        else:
            # the check's root and time: the case the console named is the one made (-2, -3... only when taken since)
            self._task.args = dict({k: v for k, v in args.items() if k not in DECISION_ARGS},
                                   records_root=checked["records_root"], stamp=checked["stamp"])
            result = super().run(tmp, task_vars)
            if result.get("failed"):
                return result
        result.update(unpacked(result, decided, args.get("hosts"), args.get("handed_result"), args.get("secret_env"),
                               check_mode=self._task.check_mode))
        return result
