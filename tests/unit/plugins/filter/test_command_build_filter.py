# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node placement filter: each node of a multi-node step its rank, through _command, not in Jinja."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter.command_build import node_placement


def test_node_placement_filter_gives_each_node_its_rank_and_the_workers_headless():
    nodes = ["node01", "node02"]
    assert node_placement(nodes, "node01", "127.0.0.1") == ["--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1"]
    assert node_placement(nodes, "node02", "127.0.0.1", "") == [
        "--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1", "--headless"]
    assert node_placement(["node01"], "node01", "") == []
    with pytest.raises(AnsibleFilterError, match="not one of the step's nodes"):
        node_placement(nodes, "node03", "127.0.0.1")
