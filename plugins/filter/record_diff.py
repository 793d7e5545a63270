# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter front of the run comparison in plugin_utils/decide/_diff.py: the ladder's one-variable check
(``record_diff``; each host's identity is built by the ``_attempt_node`` filter); the run diff of two frozen runs is
the ``run_diff`` filter (decisions.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _diff


def _front(func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except _diff.DiffError as exc:
        raise AnsibleFilterError(str(exc))


def record_diff(current, previous, allowed=None, previous_run=None):
    """See plugin_utils/decide/_diff.py record_diff."""
    return _front(_diff.record_diff, current, previous, allowed=allowed, previous_run=previous_run)


class FilterModule:
    """repro.vllm run comparison."""

    def filters(self):
        return {"record_diff": record_diff}
