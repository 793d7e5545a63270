# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

import os

from ansible_collections.repro.vllm.plugins.module_utils._collective import classify_inputs, close, judge, log_inputs
from ansible_collections.repro.vllm.plugins.module_utils._runtime import collective_container as _collective_container


def collective_verdict(node_results, classification=None):
    """The collective checkpoint's answer from every node's collective_run result and log_stage's answer."""
    if not isinstance(node_results, dict) or not node_results:
        raise AnsibleFilterError("collective_verdict: the input must be a non-empty dict {host: collective_run "
                                 "result}, got %r" % (type(node_results).__name__,))
    if classification is not None and not isinstance(classification, dict):
        raise AnsibleFilterError("collective_verdict: classification must be log_stage's answer (a dict)")
    return judge(dict((str(k), v) for k, v in node_results.items()), classification or {})


def collective_log_paths(node_and_part, run_path=None):
    """For ``[host, collective_run result]``: the controller paths of that host's logs in ``run_path``, or, with
    no ``run_path``, the names log_stage gives them (``<host>/rank<N>``, ``<host>/torchrun``)."""
    try:
        host, part = node_and_part
    except (TypeError, ValueError):
        raise AnsibleFilterError("collective_log_paths: the input must be [host, collective_run result]")
    files = list((part or {}).get("logs") or [])
    log_dir = os.path.join(str(run_path), "hosts", str(host), "logs") if run_path else ""
    paths, labels = classify_inputs(log_dir, files, str(host))
    return paths if run_path else labels


def _nodes_and_parts(nodes, parts, name):
    if not isinstance(nodes, (list, tuple)) or not nodes:
        raise AnsibleFilterError("%s: the input must be the checkpoint's nodes (a non-empty list)" % name)
    if not isinstance(parts, (list, tuple)) or len(parts) != len(nodes):
        raise AnsibleFilterError("%s: give one collective_run result per node (%d nodes)" % (name, len(nodes)))
    return list(nodes), list(parts)


def collective_container(server_runtime, image, container_args=None, facts=None):
    """See module_utils/_runtime.py collective_container."""
    return _collective_container(server_runtime, image, container_args, facts)


def collective_logs(nodes, parts, run_path):
    """See module_utils/_collective.py log_inputs."""
    nodes, parts = _nodes_and_parts(nodes, parts, "collective_logs")
    return log_inputs(run_path, nodes, parts)


def collective_close(nodes, parts, classification, run=None, nproc_per_node=None, backend=None, master=None,
                     timeout_s=None):
    """See module_utils/_collective.py close."""
    nodes, parts = _nodes_and_parts(nodes, parts, "collective_close")
    if classification is not None and not isinstance(classification, dict):
        raise AnsibleFilterError("collective_close: classification must be log_stage's answer (a dict)")
    return close(nodes, parts, classification, run=run, nproc_per_node=nproc_per_node, backend=backend,
                 master=master, timeout_s=timeout_s)


class FilterModule:
    """repro.vllm collective checkpoint verdict."""

    def filters(self):
        return {"collective_verdict": collective_verdict, "_collective_log_paths": collective_log_paths,
                "_collective_logs": collective_logs, "_collective_close": collective_close,
                "_collective_container": collective_container}
