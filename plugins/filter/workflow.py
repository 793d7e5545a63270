# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.plugin_utils.close._workflow import (
    WorkflowResultError, merge_runs, sink_copies)


def workflow_runs(earlier, new):
    try:
        return merge_runs(earlier, new)
    except WorkflowResultError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def records_sink(sink, push=None, case_id=None, listing=None, fetch=None, records_root=None):
    try:
        return sink_copies(sink, push=push, case_id=case_id, listing=listing, fetch=fetch, records_root=records_root)
    except WorkflowResultError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"_workflow_runs": workflow_runs, "_records_sink": records_sink}
