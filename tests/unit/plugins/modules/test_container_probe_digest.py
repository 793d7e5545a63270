# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The in-image probe runs the image by digest, and reads what the container sees of the GPU and driver
(issue 10, item 4). Runtimes are replays of the real podman/docker captures (tests/fixtures/containers);
the probe's new fields are read from its real run on the lent H200 (2026-12-01 device fixture)."""
from __future__ import annotations

import os

from ansible_collections.repro.vllm.plugins.module_utils.container import _container
from ansible_collections.repro.vllm.tests.unit.plugins.modules.test_container_facts import replay_bin, run_module

FIX = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))
H200 = os.path.join(FIX, "2026-12-01-580.159.04-h200-driver-and-collective", "driver")


def _probe(res):
    return res["ansible_facts"]["repro_vllm_container"]["probe"]


def test_podman_probe_runs_the_repo_digest(tmp_path):
    podman = replay_bin(tmp_path, "podman", "podman-4.3.1/replay.json")
    res = run_module(tmp_path, image="localhost/repro-vllm-tinypy:0.1", runtimes=["podman"],
                     podman_executable=podman, probe=True)
    probe = _probe(res)
    digest = "localhost/repro-vllm-tinypy@sha256:09528dee99b1a0d0186a38fc8c8c33b4c4123262e7e42330ba633062eed08d0c"
    assert probe["reference"] == digest and probe["reference_kind"] == "repo_digest"
    assert probe["cmd"][-3] == digest and probe["status"] == "ok" and probe["python"] == "3.11.2"
    assert probe["torch"] is None and "torch" in probe["errors"]
    # a capture made before the probe read the driver: the new keys are there, null
    assert probe["cuda_driver"] is None and probe["libcuda_path"] is None


def test_docker_probe_without_repo_digest_runs_the_image_id(tmp_path):
    docker = replay_bin(tmp_path, "docker", "docker-cli-28.2.2/replay.json")
    res = run_module(tmp_path, image="localhost/repro-vllm-tinypy:0.1", runtimes=["docker"],
                     docker_executable=docker, probe=True)
    probe = _probe(res)
    # loaded with docker load, never pushed: no repo digest, the image id (config digest) identifies it
    assert probe["reference_kind"] == "image_id"
    assert probe["reference"] == "sha256:c1965bb182af27654ad05ad461e4a83792290e6f0d61da96a6fc219abf118442"
    assert probe["status"] == "ok" and probe["python_executable"] == "/usr/bin/python3"


def test_by_digest_can_be_turned_off_and_check_mode_plans_it(tmp_path):
    podman = replay_bin(tmp_path, "podman", "podman-4.3.1/replay.json")
    res = run_module(tmp_path, image="localhost/repro-vllm-tinypy:0.1", runtimes=["podman"],
                     podman_executable=podman, probe=True, probe_by_digest=False)
    assert _probe(res)["reference"] == "localhost/repro-vllm-tinypy:0.1" and _probe(res)["status"] == "ok"
    res = run_module(tmp_path, check_mode=True, image="localhost/repro-vllm-tinypy:0.1", runtimes=["podman"],
                     podman_executable=podman, probe=True)
    assert _probe(res)["ran"] is False and _probe(res)["reference_kind"] == "repo_digest"


def test_probe_reference_order():
    rec = {"repo_digests": ["reg.example/vllm@sha256:" + "b" * 64], "config_digest": "sha256:" + "c" * 64}
    assert _container.probe_reference("reg.example/vllm:v1", rec) == (rec["repo_digests"][0], "repo_digest")
    assert _container.probe_reference("x:1", {"config_digest": rec["config_digest"]}) == (rec["config_digest"], "image_id")
    assert _container.probe_reference("x:1", None) == ("x:1", "reference")


def test_real_h200_probe_output_with_driver_fields():
    with open(os.path.join(H200, "probe.out")) as fh:
        seen = _container.parse_probe(fh.read())
    assert seen["device_count"] == 1 and seen["cuda_driver"] == "13.0" and seen["torch_cuda"] == "13.0"
    assert seen["libcuda_path"] == "/usr/local/nvidia/lib64/libcuda.so.580.159.04"
    assert seen["visible_devices"]["NVIDIA_VISIBLE_DEVICES"] == "0"
    with open(os.path.join(H200, "probe_novisible.out")) as fh:
        hidden = _container.parse_probe(fh.read())
    assert hidden["device_count"] == 0 and hidden["cuda_driver"] is None
    assert hidden["visible_devices"]["CUDA_VISIBLE_DEVICES"] == ""
