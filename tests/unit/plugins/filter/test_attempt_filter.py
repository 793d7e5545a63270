# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The attempt role's private filters (filter/attempt.py): this node's plan with its part of the run's identity."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter import attempt
from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _diff

GPU = {"present": True, "driver": {"reported_version": "580.159.04", "cuda_driver_version": "13.0"},
       "gpus": [{"index": 0, "uuid": "GPU-1", "name": "NVIDIA H200", "pci_bus_id": "00000000:19:00.0", "extra": 1}]}
STEP = {"name": "minimal", "nodes": ["node01", "node02"], "host": "0.0.0.0", "port": 8000,
        "argv": ["vllm", "serve", "/m", "--port", "8000"], "env": {"VLLM_HOST_IP": "10.0.0.11"}}


def test_attempt_node_gives_the_plan_and_the_identity_of_a_node_of_the_step_only():
    assert set(attempt.FilterModule().filters()) == {"_attempt_node", "_attempt_host_parts", "_attempt_requests",
                                                     "_attempt_report", "_attempt_wait"}
    worker = attempt.attempt_node(STEP, "node02", master_addr="10.0.0.11", gpu=GPU, image="vllm/vllm-openai:v1")
    assert worker["argv"] == STEP["argv"] + ["--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.11",
                                             "--headless"]
    # the identity is that of the command this node runs, with its launcher options
    assert worker["identity"] == _diff.record_identity(GPU, worker["argv"], env=STEP["env"], image="vllm/vllm-openai:v1")
    assert worker["identity"]["command"] == worker["argv"] and worker["identity"]["driver"] == "580.159.04"
    outside = attempt.attempt_node(STEP, "node03", master_addr="10.0.0.11", gpu=GPU)
    assert (outside["in_step"], outside["argv"], outside["identity"]) == (False, None, None)
    # the environment its server starts with: the step's, and the debug one for the step it names
    head = attempt.attempt_node(dict(STEP, request={"route": "/v1/completions", "body": {}, "timeout": 5}), "node01",
                                master_addr="10.0.0.11", debug=True, debug_step="minimal")
    assert head["env"] == dict(STEP["env"], **head["debug_env"]) and head["debug_env"]
    traced = attempt.attempt_node(STEP, "node01", master_addr="10.0.0.11", debug=True, debug_step="minimal",
                                  trace_function=True)
    assert traced["trace_warning"] and not head["trace_warning"]
    assert (worker["env"], worker["sends"], worker["trace_warning"]) == (STEP["env"], [], False)
    # the head's sends: its requests as sent, at its API
    assert [(s["label"], s["index"], s["base_url"]) for s in head["sends"]] == [
        ("request", 1, "http://127.0.0.1:8000")]


def test_attempt_node_names_what_is_wrong():
    with pytest.raises(AnsibleFilterError, match="attempt_node: a start over 2 nodes needs the head's address"):
        attempt.attempt_node(STEP, "node02")
    with pytest.raises(AnsibleFilterError, match="attempt_node: record_identity: gpu_facts must be"):
        attempt.attempt_node(STEP, "node01", master_addr="10.0.0.11", gpu=["not", "a", "dict"])


def test_the_wait_request_and_report_filters_name_what_is_wrong():
    assert attempt.attempt_wait([{"finished": 1, "ready": True}], ["node01"])["done"] is True
    with pytest.raises(AnsibleFilterError, match="attempt_requests: a send"):
        attempt.attempt_requests({"results": [{"item": 1}]}, {"name": "minimal"})
    assert attempt.attempt_requests({}, {"name": "minimal"})["lines"] == []
    with pytest.raises(AnsibleFilterError, match="attempt_report: the node's plan must be a mapping"):
        attempt.attempt_report(["plan"], {"name": "minimal"})
    with pytest.raises(AnsibleFilterError, match="attempt_wait: "):
        attempt.attempt_wait([{"finished": 1}], 5)
