# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.plugin_utils.close._workflow import (
    WorkflowResultError, merge_runs, parse_sink, sink_path)


def workflow_runs(earlier, new):
    try:
        return merge_runs(earlier, new)
    except WorkflowResultError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def records_sink(sink, run=None):
    try:
        host, path = parse_sink(sink)
        return {"host": host, "path": path, "run_path": sink_path(sink, run) if run else None}
    except WorkflowResultError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"_workflow_runs": workflow_runs, "_records_sink": records_sink}
