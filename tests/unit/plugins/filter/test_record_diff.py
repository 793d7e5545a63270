# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""record_identity / record_diff: the one-variable check, on the GPU facts captured on a real H200."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter.record_diff import FilterModule, record_diff
from ansible_collections.repro.vllm.plugins.plugin_utils.decide._diff import DiffError, record_identity

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "2026-11-29-580.159.04-h200", "module",
                       "gpu_facts.json")
FAKE_HF = "hf_" + "FAKE" * 8
ARGV = ["vllm", "serve", "/models/tiny", "--host", "127.0.0.1", "--port", "8011", "--max-model-len", "512",
        "--enforce-eager"]
ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
REQUEST = {"route": "/v1/completions", "concurrency": 1, "timeout": 60.0, "base_url": None,
           "body": {"model": "tiny", "prompt": "Hello, my name is", "max_tokens": 8, "temperature": 0}}


@pytest.fixture(scope="module")
def h200():
    with open(FIXTURE) as f:
        data = json.load(f)
    return data  # the repro_vllm_gpu fact as the module returned it on the H200


def _run(gpu, argv=None, env=None, request=None, host="gpu-a01"):
    argv = ARGV if argv is None else argv
    env = ENV if env is None else env
    return {"hosts": {host: record_identity(gpu, argv, env=env)},
            "request": copy.deepcopy(REQUEST if request is None else request)}


def test_identity_of_the_real_h200(h200):
    ident = record_identity(h200, ARGV, env=dict(ENV, HF_TOKEN=FAKE_HF),
                            image="vllm/vllm-openai@sha256:" + "c" * 64)
    assert ident["driver"] == "580.159.04"
    assert ident["kernel_module"] == "580.159.04"
    assert ident["cuda_driver"] == "13.0"
    assert ident["gpu_map"] == [{"index": 0, "uuid": "GPU-948ad24a-c62e-62f7-d2bd-ad21819f9f3d", "name": "NVIDIA H200",
                                 "pci_bus_id": "00000000:00:06.0"}]
    assert ident["image_digest"] == "sha256:" + "c" * 64
    assert ident["env"]["HF_TOKEN"] == "<redacted>" and FAKE_HF not in json.dumps(ident)
    assert ident["gpu_present"] is True


def test_identity_without_gpus():
    ident = record_identity({}, ARGV, env=ENV)
    assert ident["driver"] is None and ident["gpu_map"] == [] and ident["gpu_present"] is False


def test_first_run_is_a_baseline(h200):
    d = record_diff(_run(h200), None)
    assert d["baseline"] is True and d["changes"] == [] and d["one_variable"] is True


def test_same_run_reordered_options_is_no_change(h200):
    argv = ARGV[:3] + ["--enforce-eager", "--port=8011", "--max-model-len", "512", "--host", "127.0.0.1"]
    d = record_diff(_run(h200, argv=argv), _run(h200), previous_run="run-002")
    assert d["changes"] == [] and d["one_variable"] and d["summary"] == "no change against run-002"


def test_the_layer_alone_passes(h200):
    after = _run(h200, argv=ARGV + ["--enable-prefix-caching"])
    d = record_diff(after, _run(h200), allowed=["command:--enable-prefix-caching", "command:--no-enable-prefix-caching"])
    assert d["one_variable"] is True
    assert d["changes"] == [{"variable": "command", "key": "--enable-prefix-caching", "host": "gpu-a01",
                             "before": None, "after": True}]
    assert d["variables"] == ["command"]


def test_a_second_variable_is_unexpected(h200):
    after = _run(h200, argv=ARGV + ["--enable-prefix-caching"], env=dict(ENV, NCCL_DEBUG="INFO"))
    d = record_diff(after, _run(h200), allowed=["command:--enable-prefix-caching"], previous_run="run-002")
    assert d["one_variable"] is False
    assert d["unexpected_variables"] == ["env"]
    assert [(c["variable"], c["key"]) for c in d["unexpected"]] == [("env", "NCCL_DEBUG")]
    assert "NOT part of the step: env:NCCL_DEBUG" in d["summary"]


def test_driver_and_gpu_map_changes_are_seen(h200):
    other = copy.deepcopy(h200)
    other["driver"]["reported_version"] = "575.57.08"
    other["driver"]["kernel_module_version"] = "575.57.08"
    other["gpus"][0]["uuid"] = "GPU-00000000-0000-0000-0000-000000000001"
    d = record_diff(_run(other), _run(h200), allowed=["request:*"])
    keys = [(c["variable"], c["key"]) for c in d["changes"]]
    assert ("driver", "driver") in keys and ("driver", "kernel_module") in keys and ("gpu_map", "gpus") in keys
    assert d["one_variable"] is False and d["unexpected_variables"] == ["driver", "gpu_map"]


def test_request_fields_and_patterns(h200):
    req = copy.deepcopy(REQUEST)
    req["body"]["max_tokens"] = 256
    req["body"]["ignore_eos"] = True
    d = record_diff(_run(h200, request=req), _run(h200), allowed=["request:max_tokens", "request:ignore_eos"])
    assert d["one_variable"] is True and d["count"] == 2
    req2 = copy.deepcopy(REQUEST)
    req2["concurrency"] = 2
    d2 = record_diff(_run(h200, request=req2), _run(h200), allowed=["request:*"])
    assert d2["one_variable"] and d2["changes"][0]["key"] == "concurrency"


def test_hosts_added(h200):
    after = {"hosts": {"a": record_identity(h200, ARGV), "b": record_identity(h200, ARGV)}, "request": REQUEST}
    before = {"hosts": {"a": record_identity(h200, ARGV)}, "request": REQUEST}
    d = record_diff(after, before)
    assert d["changes"][0]["variable"] == "hosts" and d["changes"][0]["after"] == ["a", "b"]


def test_bad_input():
    with pytest.raises(AnsibleFilterError):
        record_diff(None, None)
    with pytest.raises(AnsibleFilterError):
        record_diff({"hosts": {}}, "run-001")
    with pytest.raises(DiffError):
        record_identity(["not", "facts"], ARGV)


def test_filters_registered():
    assert set(FilterModule().filters()) == {"record_diff"}


def test_scrub_masks_strings_not_counts():
    from ansible_collections.repro.vllm.plugins.plugin_utils.decide._diff import record_scrub
    answer = {"usage": {"prompt_tokens": 5, "completion_tokens": 8}, "max_tokens": 8,
              "text": "Authorization: Bearer " + FAKE_HF, "lines": ["--api-key sk-" + "FAKE" * 6, "ok"]}
    out = record_scrub(answer)
    assert out["usage"] == {"prompt_tokens": 5, "completion_tokens": 8} and out["max_tokens"] == 8
    assert FAKE_HF not in json.dumps(out) and "FAKEFAKE" not in json.dumps(out)
    assert out["lines"][1] == "ok"
