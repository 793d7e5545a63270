# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter fronts of the replay (module_utils/_replay.py): the step that replays a package's attempt, the verdict,
and the "what is not the same here" lines."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils import _replay


def replay_step(attempt, secret_env=None, secret_args=None, port=None):
    """See module_utils/_replay.py replay_step."""
    try:
        return _replay.replay_step(attempt, secret_env=secret_env, secret_args=secret_args,
                                   port=int(port) if port not in (None, "", 0, "0") else None)
    except (_replay.ReplayError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("replay_step: %s" % exc)


def replay_verdict(package, here, diff=None):
    """See module_utils/_replay.py replay_verdict."""
    if not isinstance(package, dict) or not isinstance(here, dict):
        raise AnsibleFilterError("replay_verdict: give the package's attempt and the replayed attempt (dicts)")
    return _replay.replay_verdict(package, here, diff)


def replay_lines(diff):
    """See module_utils/_replay.py not_the_same_lines."""
    return _replay.not_the_same_lines(diff)


class FilterModule:
    """repro.vllm replay."""

    def filters(self):
        return {"replay_step": replay_step, "replay_verdict": replay_verdict, "replay_lines": replay_lines}
