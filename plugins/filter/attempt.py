# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private filters of the attempt role: this node's plan (module_utils/ladder/_ladder.py node_plan, with its part of
the run's identity, plugin_utils/decide/_diff.py, and the head's sends), a multi-node start's wait
(_ladder.wait_round), what the head's requests showed, this node's report to the close and its part of the run
(plugin_utils/close/_attempt.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.plugin_utils.close import _attempt
from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _diff
from ansible_collections.repro.vllm.plugins.module_utils.ladder import _command, _ladder


def attempt_node(step, node, master_addr=None, master_port=None, debug=False, debug_step=None, trace_function=False,
                 gpu=None, image=None, container=None, ready_timeout=0, wait_round_s=10):
    """This node's plan in the step (_ladder.node_plan) with ``env`` (the step's environment and the debug one: what
    its server starts with), ``trace_warning`` (the head of a run traced with VLLM_TRACE_FUNCTION), ``sample_memory``
    (the head of a step with the prefix_cache check: its server's memory before and after its sequence), ``sends``
    (the head's requests as sent, _attempt.sends; none on another node) and, on a node of the step, ``identity``:
    its part of the run's identity (_diff.record_identity of ``gpu``, the repro_vllm_gpu fact, the command, the
    step's env, the image and the ``container`` fact); None outside the step."""
    try:
        plan = _ladder.node_plan(step, node, master_addr=master_addr, master_port=master_port, debug=debug,
                                 debug_step=debug_step, trace_function=trace_function, ready_timeout=ready_timeout,
                                 wait_round_s=wait_round_s)
        plan["env"] = dict((step or {}).get("env") or {}, **plan["debug_env"])
        plan["trace_warning"] = plan["is_head"] and "VLLM_TRACE_FUNCTION" in plan["debug_env"]
        plan["sample_memory"] = plan["is_head"] and "prefix_cache" in ((step or {}).get("checks") or [])
        plan["sends"] = _attempt.sends(plan["requests"], plan["api_url"])
        plan["identity"] = _diff.record_identity(gpu or {}, plan["argv"], env=(step or {}).get("env"), image=image,
                                                 container=container) if plan["in_step"] else None
    except (_attempt.AttemptCloseError, _command.CommandError, _diff.DiffError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("attempt_node: %s" % exc)
    return plan


def attempt_host_parts(step, **kwargs):
    """See plugin_utils/close/_attempt.py host_parts."""
    if "host" not in kwargs:
        raise AnsibleFilterError("attempt_host_parts: give host (the node whose part this is)")
    try:
        return _attempt.host_parts(kwargs.pop("host"), step, **kwargs)
    except (_attempt.AttemptCloseError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("attempt_host_parts: %s" % exc)


def attempt_requests(sent, step, memory_before=None, memory_after=None):
    """See plugin_utils/close/_attempt.py requests_seen (``sent``: api_request's registered loop)."""
    try:
        return _attempt.requests_seen(step, (sent or {}).get("results"), memory_before=memory_before,
                                      memory_after=memory_after)
    except (_attempt.AttemptCloseError, AttributeError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("attempt_requests: %s" % exc)


def attempt_report(plan, step, **kwargs):
    """See plugin_utils/close/_attempt.py node_report."""
    try:
        return _attempt.node_report(plan, step, **kwargs)
    except (_attempt.AttemptCloseError, AttributeError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("attempt_report: %s" % exc)


def attempt_wait(statuses, nodes, collected=None):
    """See module_utils/ladder/_ladder.py wait_round."""
    try:
        return _ladder.wait_round(nodes, statuses, collected=collected)
    except (AttributeError, TypeError) as exc:
        raise AnsibleFilterError("attempt_wait: %s" % exc)


class FilterModule:
    """repro.vllm attempt plumbing (private)."""

    def filters(self):
        return {"_attempt_node": attempt_node, "_attempt_host_parts": attempt_host_parts,
                "_attempt_requests": attempt_requests, "_attempt_report": attempt_report,
                "_attempt_wait": attempt_wait}
