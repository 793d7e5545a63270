# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter front of the one node and master-address selection (module_utils/ladder/_command.py node_selection): the
minimal start, every attempt's placement and the collective checkpoint read their nodes and head address here; the
collective reads its whole node plan (module_utils/gpu/_collective.py node_plan) in the same call."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils.gpu import _collective
from ansible_collections.repro.vllm.plugins.module_utils.ladder import _command


def node_selection(play_hosts, hostvars, nnodes=None, nodes=None, master_addr=(), host=None, collective=None):
    """``_command.node_selection``; the head's address is its ``ansible_host`` in ``hostvars`` when set. With
    ``collective`` (``_collective.node_plan``'s keywords), ``host``'s plan of the collective checkpoint (its nodes
    checked against ``play_hosts``)."""
    def head_address(head):
        try:
            return hostvars[head].get("ansible_host")
        except (KeyError, AttributeError, TypeError):
            return None
    try:
        selection = _command.node_selection(play_hosts, nnodes=None if nnodes in (None, "") else int(nnodes),
                                            nodes=nodes, master_addr=master_addr, head_address=head_address, host=host)
        return selection if collective is None else _collective.node_plan(selection, play_hosts=play_hosts, **collective)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("node_selection: %s" % exc)


class FilterModule:
    """repro.vllm node selection."""

    def filters(self):
        return {"_node_selection": node_selection}
