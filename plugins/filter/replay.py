# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter fronts of the replay (module_utils/handoff/_replay.py) that replay.yml still templates: the records root,
the step that replays a package's attempt on the attempt play's hosts, the "what is not the same here" lines, and
the public verdict. The choices before the unpack and the verdict of replay.json are the repro.vllm.replay
action's and module's."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils.record import _record
from ansible_collections.repro.vllm.plugins.module_utils.handoff import _replay


def records_root(root=None):
    """The records root as the record role resolves it (``_record.resolve_root``: a relative root against the
    controller's working directory, never ``$PWD``); ``records`` when none is given."""
    try:
        return _record.resolve_root(root if root not in (None, "") else _record.DEFAULT_ROOT)
    except _record.RecordError as exc:
        raise AnsibleFilterError("records_root: %s" % exc)


def replay_plan(replay, play_hosts, secret_env=None, secret_args=None, port=None):
    """See module_utils/handoff/_replay.py attempt_plan."""
    try:
        return _replay.attempt_plan(replay, list(play_hosts or []), secret_env=secret_env, secret_args=secret_args,
                                    port=port)
    except (_replay.ReplayError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("replay_plan: %s" % exc)


def replay_verdict(package, here, diff=None, package_verdict=None, missing=None):
    """See module_utils/handoff/_replay.py replay_verdict."""
    if not isinstance(package, dict) or not isinstance(here, dict):
        raise AnsibleFilterError("replay_verdict: give the package's attempt and the replayed attempt (dicts)")
    return _replay.replay_verdict(package, here, diff, package_verdict=package_verdict, missing=missing)


def replay_lines(diff):
    """See module_utils/handoff/_replay.py not_the_same_lines."""
    return _replay.not_the_same_lines(diff)


class FilterModule:
    """repro.vllm replay."""

    def filters(self):
        return {"_records_root": records_root, "_replay_plan": replay_plan, "replay_verdict": replay_verdict,
                "_replay_lines": replay_lines}
