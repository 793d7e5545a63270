# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter fronts of the replay (module_utils/handoff/_replay.py): the records root, the profile, the step that replays a
package's attempt, the node pairing, the verdict document and the console lines. Every choice replay.yml makes is
taken here, in Python; the playbook only orders the steps."""

from __future__ import annotations

import os

import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils.compat import _compat
from ansible_collections.repro.vllm.plugins.module_utils.record import _record
from ansible_collections.repro.vllm.plugins.module_utils.handoff import _replay


def records_root(root=None):
    """The records root as the record role resolves it (``_record.resolve_root``: a relative root against the
    controller's working directory, never ``$PWD``); ``records`` when none is given."""
    try:
        return _record.resolve_root(root if root not in (None, "") else _record.DEFAULT_ROOT)
    except _record.RecordError as exc:
        raise AnsibleFilterError("records_root: %s" % exc)


def replay_profile(replay, given_profile=None, given_file=None):
    """See module_utils/handoff/_replay.py choose_profile and profile_override. Reads the package's profile file where it
    is unpacked, else the text the checked package returned (``profile_text``: replay.yml chooses before the
    unpack). A compatibility profile of the package is validated here (``_compat.validate_profile``), so a broken
    one is refused before anything is unpacked."""
    if not isinstance(replay, dict):
        raise AnsibleFilterError("replay_profile: give the result of repro.vllm.replay")
    path = replay.get("profile_file")
    data = None
    try:
        if path and os.path.isfile(path):
            with open(path, "r", encoding="utf-8") as f:
                data = yaml.safe_load(f)
        elif path and replay.get("profile_text") is not None:
            data = yaml.safe_load(replay["profile_text"])
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise AnsibleFilterError("replay_profile: the package's profile file %s cannot be read as YAML (%s); "
                                 "give -e repro_vllm_profile=<name> to judge the hosts against a profile of "
                                 "this collection" % (os.path.basename(path), " ".join(str(exc).split())))
    chosen = _replay.choose_profile(path, data, replay.get("profile"))
    try:
        final = _replay.profile_override(chosen, given_profile, given_file)
    except _replay.ReplayError as exc:
        raise AnsibleFilterError("replay_profile: %s" % exc)
    if final["source"] == "package_profile_file":
        try:
            _compat.validate_profile(data, "the package's profile/%s" % os.path.basename(path))
        except _compat.ProfileError as exc:
            raise AnsibleFilterError("replay_profile: %s; nothing was unpacked. Give -e repro_vllm_profile=<name> (or "
                                     "-e repro_vllm_profile_file=<your file>) to judge the hosts against another "
                                     "profile" % exc)
    return final


def replay_profile_vars(final, replay, check_mode=False):
    """See module_utils/handoff/_replay.py profile_vars."""
    if not isinstance(final, dict):
        raise AnsibleFilterError("replay_profile_vars: give what repro.vllm._replay_profile returned")
    return _replay.profile_vars(final, replay, bool(check_mode))


def replay_plan(replay, play_hosts, secret_env=None, secret_args=None, port=None):
    """See module_utils/handoff/_replay.py attempt_plan."""
    try:
        return _replay.attempt_plan(replay, list(play_hosts or []), secret_env=secret_env, secret_args=secret_args,
                                    port=_port(port))
    except (_replay.ReplayError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("replay_plan: %s" % exc)


def replay_precheck(replay, play_hosts, secret_env=None, secret_args=None, port=None, case_id=None):
    """See module_utils/handoff/_replay.py precheck (before the unpack)."""
    try:
        return _replay.precheck(replay, list(play_hosts or []), secret_env=secret_env, secret_args=secret_args,
                                port=_port(port), case_id=case_id)
    except (_replay.ReplayError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("replay_precheck: %s; nothing was unpacked" % exc)


def _port(port):
    return int(port) if port not in (None, "", 0, "0") else None


def replay_pairs(nodes, play_hosts):
    """See module_utils/handoff/_replay.py node_pairs."""
    return _replay.node_pairs(nodes, list(play_hosts or []))


def replay_verdict(package, here, diff=None, package_verdict=None, missing=None):
    """See module_utils/handoff/_replay.py replay_verdict."""
    if not isinstance(package, dict) or not isinstance(here, dict):
        raise AnsibleFilterError("replay_verdict: give the package's attempt and the replayed attempt (dicts)")
    return _replay.replay_verdict(package, here, diff, package_verdict=package_verdict, missing=missing)


def replay_document(replay, head, diff=None, case_id=None, secret_env=None, ignored_case_id=None):
    """See module_utils/handoff/_replay.py replay_document."""
    if not isinstance(head, dict) or head.get("run") is None:
        return None  # the attempt did not run (check mode, or a stop before it)
    if not isinstance(replay, dict) or "attempt" not in replay:
        raise AnsibleFilterError("replay_document: give the result of repro.vllm.replay")
    return _replay.replay_document(replay, head, diff, case_id=case_id, secret_env=secret_env,
                                   ignored_case_id=ignored_case_id)


def replay_unpacked_lines(replay, profile, check_mode=False, handed_result=None, ignored_case_id=None, missing=None):
    """See module_utils/handoff/_replay.py unpacked_lines."""
    return _replay.unpacked_lines(replay, profile, check_mode=bool(check_mode), handed_result=handed_result,
                                  ignored_case_id=ignored_case_id, missing=list(missing or []))


def replay_lines(diff):
    """See module_utils/handoff/_replay.py not_the_same_lines."""
    return _replay.not_the_same_lines(diff)


class FilterModule:
    """repro.vllm replay."""

    def filters(self):
        return {"_records_root": records_root, "_replay_profile": replay_profile,
                "_replay_plan": replay_plan, "_replay_pairs": replay_pairs, "replay_verdict": replay_verdict,
                "_replay_document": replay_document, "_replay_unpacked_lines": replay_unpacked_lines,
                "_replay_lines": replay_lines, "_replay_precheck": replay_precheck, "_replay_profile_vars": replay_profile_vars}
