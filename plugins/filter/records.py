# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private filters over the records' own bookkeeping (the attempt role's prune and stop)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils.record import _record


def prune_split(paths, run_uids, host=None, lacking=None, allowed=None):
    """See module_utils/record/_record.py prune_split."""
    if not isinstance(paths, (list, tuple)) or not isinstance(run_uids, (list, tuple)):
        raise AnsibleFilterError("prune_split: give the host's run folders (a list) and the prunable run_uids (a list)")
    if not isinstance(lacking or [], (list, tuple)) or not isinstance(allowed or [], (list, tuple)):
        raise AnsibleFilterError("prune_split: lacking and allowed are lists")
    return _record.prune_split(list(paths), list(run_uids), host=host, lacking=list(lacking or []),
                               allowed=[str(a) for a in allowed or []])


def salvage_plan(found_results, stop_results, remote_root, host):
    """See module_utils/record/_record.py salvage_plan."""
    if not isinstance(found_results, (list, tuple)) or not isinstance(stop_results, (list, tuple)):
        raise AnsibleFilterError("salvage_plan: give the find loop's results and the stop loop's results (lists)")
    return _record.salvage_plan(list(found_results), list(stop_results), remote_root, host)


def stop_plan(runs, play_hosts, host):
    """See module_utils/record/_record.py stop_plan."""
    if not isinstance(runs, (list, tuple)) or not isinstance(play_hosts, (list, tuple)):
        raise AnsibleFilterError("stop_plan: give the interrupted runs (a list) and the play's hosts (a list)")
    return _record.stop_plan(list(runs), list(play_hosts), host)


class FilterModule:
    """repro.vllm records bookkeeping (private)."""

    def filters(self):
        return {"_prune_split": prune_split, "_salvage_plan": salvage_plan, "_stop_plan": stop_plan}
