# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils.gpu._collective import judge
from ansible_collections.repro.vllm.plugins.module_utils.container._runtime import collective_container as _collective_container


def collective_verdict(node_results, classification=None):
    """The collective checkpoint's answer from every node's collective_run result and log_stage's answer."""
    if not isinstance(node_results, dict) or not node_results:
        raise AnsibleFilterError("collective_verdict: the input must be a non-empty dict {host: collective_run "
                                 "result}, got %r" % (type(node_results).__name__,))
    if classification is not None and not isinstance(classification, dict):
        raise AnsibleFilterError("collective_verdict: classification must be log_stage's answer (a dict)")
    return judge(dict((str(k), v) for k, v in node_results.items()), classification or {})


def collective_container(server_runtime, image, container_args=None, facts=None):
    """See module_utils/container/_runtime.py collective_container."""
    return _collective_container(server_runtime, image, container_args, facts)


class FilterModule:
    """repro.vllm collective checkpoint verdict."""

    def filters(self):
        return {"collective_verdict": collective_verdict, "_collective_container": collective_container}
