# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' one node and master-address selection (filter _node_selection over _command.node_selection)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter.node_selection import FilterModule, node_selection


def test_the_head_address_is_its_ansible_host_else_its_name():
    hosts = ["head", "w1", "w2"]
    hostvars = {"head": {"ansible_host": "192.0.2.11"}, "w1": {}}
    assert node_selection(hosts, hostvars, nnodes="2", host="w1") == {
        "nodes": ["head", "w1"], "head": "head", "master_addr": "192.0.2.11", "rank": 1}
    assert node_selection(["w1", "head"], hostvars)["master_addr"] == "w1"
    # the collective's order: its own address, then repro_vllm_master_addr, then the head's
    assert node_selection(hosts, hostvars, nnodes=1, master_addr=["", "10.0.0.5"])["master_addr"] == "10.0.0.5"
    with pytest.raises(AnsibleFilterError, match="node_selection"):
        node_selection(hosts, hostvars, nnodes="two")
    assert FilterModule().filters() == {"_node_selection": node_selection}
