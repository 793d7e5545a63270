# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter fronts of the command reader's builders (module_utils/ladder/_command.py): the minimal command from its parts and
whether a model's config asks for custom code. The roles use these instead of building argv in Jinja."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils.ladder import _command


def node_placement(nodes, node, master_addr="", master_port=None):
    """``_command.node_placement`` for ``node`` among ``nodes`` (the step's nodes, the head first)."""
    nodes = list(nodes or [])
    if node not in nodes:
        raise AnsibleFilterError("node_placement: %s is not one of the step's nodes %s" % (node, nodes))
    try:
        return _command.node_placement(len(nodes), nodes.index(node), master_addr or None,
                                       master_port=master_port if master_port not in (None, "") else None)
    except (_command.CommandError, ValueError) as exc:
        raise AnsibleFilterError("node_placement: %s" % exc)


class FilterModule:
    """repro.vllm command builders."""

    def filters(self):
        return {"_node_placement": node_placement}
