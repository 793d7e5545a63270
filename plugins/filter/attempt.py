# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private filters of the attempt role (plugin_utils/close/_attempt.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.plugin_utils.close import _attempt


def attempt_host_parts(step, **kwargs):
    """See plugin_utils/close/_attempt.py host_parts."""
    if "host" not in kwargs:
        raise AnsibleFilterError("attempt_host_parts: give host (the node whose part this is)")
    try:
        return _attempt.host_parts(kwargs.pop("host"), step, **kwargs)
    except (_attempt.AttemptCloseError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("attempt_host_parts: %s" % exc)


class FilterModule:
    """repro.vllm attempt plumbing (private)."""

    def filters(self):
        return {"_attempt_host_parts": attempt_host_parts}
