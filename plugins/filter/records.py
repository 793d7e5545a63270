# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private filters over the records' own bookkeeping (the attempt role's prune)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils import _record


def prune_split(paths, run_uids):
    """See module_utils/_record.py prune_split."""
    if not isinstance(paths, (list, tuple)) or not isinstance(run_uids, (list, tuple)):
        raise AnsibleFilterError("prune_split: give the host's run folders (a list) and the prunable run_uids (a list)")
    return _record.prune_split(list(paths), list(run_uids))


class FilterModule:
    """repro.vllm records bookkeeping (private)."""

    def filters(self):
        return {"_prune_split": prune_split}
