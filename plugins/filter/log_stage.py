# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import LogStageError, classify_texts


def _as_list(value, what):
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        return [value]
    if isinstance(value, (list, tuple)):
        return list(value)
    raise AnsibleFilterError("log_stage: %s must be a string or a list of strings, got %s" % (what, type(value).__name__))


def log_stage(data, names=None, nodes=None, until=None):
    """Classify a log (a string) or several logs (a list of strings, one per node) like the log_stage module."""
    texts = _as_list(data, "the input")
    if texts is None:
        raise AnsibleFilterError("log_stage: the input is empty (None); pass the log text, e.g. from slurp | b64decode")
    for i, t in enumerate(texts):
        if not isinstance(t, (str, bytes)):
            raise AnsibleFilterError("log_stage: item %d of the input is a %s, not a log string" % (i, type(t).__name__))
    names = _as_list(names, "names")
    nodes = _as_list(nodes, "nodes")
    for label, values in (("names", names), ("nodes", nodes)):
        if values is not None and len(values) != len(texts):
            raise AnsibleFilterError("log_stage: %s has %d entries for %d logs; give one per log" % (label, len(values), len(texts)))
    if until is not None and not isinstance(until, (list, tuple, dict)):
        until = [until]
    try:
        return classify_texts(list(texts), names=[str(n) for n in names] if names else None,
                              nodes=[str(n) for n in nodes] if nodes else None, until=until)
    except LogStageError as exc:
        raise AnsibleFilterError("log_stage: %s" % exc)


class FilterModule:
    """repro.vllm first-failing-stage classifier."""

    def filters(self):
        return {"log_stage": log_stage}
