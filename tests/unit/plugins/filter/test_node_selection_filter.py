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


def test_the_collective_reads_its_whole_node_plan_in_the_same_call():
    hosts = ["head", "w1", "w2"]
    plan = {"nproc_per_node": 0, "parallel": ["4", 1, 1], "python": "", "vllm_bin": "/venv/bin/vllm",
            "server_env": {"NCCL_IB_HCA": "mlx5", "VLLM_X": "1"}, "env": {"GLOO_SOCKET_IFNAME": "lo"}, "host_env": {},
            "backend": "gloo", "master_port": 29555, "timeout": 300}
    got = node_selection(hosts, {}, nnodes=2, master_addr=["10.0.0.5"], host="w1", collective=plan)
    assert got["nodes"] == ["head", "w1"] and got["rank"] == 1 and got["in_job"] is True
    assert got["nproc"] == 2 and got["python"] == "/venv/bin/python" and got["master"] == "10.0.0.5:29555"
    assert got["env"] == {"NCCL_IB_HCA": "mlx5", "GLOO_SOCKET_IFNAME": "lo"}
    assert node_selection(hosts, {}, nnodes=2, host="w2", collective=plan)["line"] == "not part of the job"
    # the nodes are checked against the play's hosts (the filter's input)
    assert got["refusal"] == ""
    assert "forks is 1;" in node_selection(hosts, {}, nnodes=2, host="w1", collective=dict(plan, forks=1))["refusal"]
    assert node_selection(["w1"], {}, nodes=["w1", "w9"], host="w1", collective=plan)["refusal"].startswith(
        "the collective checkpoint needs all 2 nodes (w1, w9) in this play")
    with pytest.raises(AnsibleFilterError, match="node_selection"):
        node_selection(hosts, {}, nnodes=2, host="w1", collective=dict(plan, nproc_per_node="many"))
