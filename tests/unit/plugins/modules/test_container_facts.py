# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""container_facts run as Ansible runs it (own process, JSON args), its runtimes replaced by replay stubs
that print the real captures of tests/fixtures/containers."""

from __future__ import annotations

import json
import os
import stat
import sys

from ansible_collections.repro.vllm.plugins.modules import container_facts
from ansible_collections.repro.vllm.tests.unit.plugins.modules import module_process

FIX = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "containers"))
CONFIG = "sha256:e391a3994d242d7e40f04c24b59ef5140f403af837bf2981c01bd0da2cd373b6"


def replay_bin(tmp_path, name, mapping):
    path = tmp_path / name
    replay = os.path.join(FIX, "replay.py")
    path.write_text('#!/bin/sh\nexec "%s" "%s" "%s" "$@"\n' % (sys.executable, replay, os.path.join(FIX, mapping)))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def run_module(tmp_path, check_mode=False, **args):
    return module_process.run_module(container_facts, tmp_path, check_mode, **args)


def absent(tmp_path):
    return str(tmp_path / "not-installed")


def test_facts_from_all_runtimes(tmp_path):
    res = run_module(
        tmp_path, image="localhost/repro-vllm-tiny:0.1", ctr_namespace="default",
        docker_executable=replay_bin(tmp_path, "docker", "docker-cli-28.2.2/replay.json"),
        podman_executable=replay_bin(tmp_path, "podman", "podman-4.3.1/replay.json"),
        ctr_executable=replay_bin(tmp_path, "ctr", "containerd-1.6.20/replay.json"),
        enroot_executable=replay_bin(tmp_path, "enroot", "documented/replay_enroot.json"),
        crictl_executable=absent(tmp_path))
    assert not res.get("failed") and res["changed"] is False
    f = res["ansible_facts"]["repro_vllm_container"]
    assert f["found_in"] == ["docker", "podman", "ctr"] and f["config_digests"] == [CONFIG]
    assert f["probe"] is None
    assert f["runtimes"]["crictl"]["present"] is False
    assert f["runtimes"]["ctr"]["namespace"] == "default"
    assert "FAKE" not in json.dumps(res)  # the fake secrets baked into the image never come back
    cmds = [a["cmd"][1:] for a in res["actions"]]
    assert ["version", "--format", "{{json .}}"] in cmds and ["image", "inspect", "localhost/repro-vllm-tiny:0.1"] in cmds


def test_machine_without_docker_engine(tmp_path):
    res = run_module(tmp_path, image="vllm/vllm-openai:v0.23.0", runtimes=["docker", "podman"],
                     docker_executable=replay_bin(tmp_path, "docker", "docker-cli-28.2.2/replay_no_daemon.json"),
                     podman_executable=absent(tmp_path))
    assert not res.get("failed")
    d = res["ansible_facts"]["repro_vllm_container"]["runtimes"]["docker"]
    assert d["daemon_running"] is False and "Is the docker daemon running?" in d["error"]
    assert res["ansible_facts"]["repro_vllm_container"]["runtimes"]["podman"]["present"] is False


def test_probe_is_only_planned_in_check_mode(tmp_path):
    podman = replay_bin(tmp_path, "podman", "podman-4.3.1/replay.json")
    res = run_module(tmp_path, check_mode=True, image="localhost/repro-vllm-tinypy:0.1", runtimes=["podman"],
                     podman_executable=podman, probe=True, probe_run_args=["--ulimit", "nofile=1024:1024"])
    facts = res["ansible_facts"]["repro_vllm_container"]
    assert facts["runtimes"]["podman"]["image"]["config_digest"] == (
        "sha256:c1965bb182af27654ad05ad461e4a83792290e6f0d61da96a6fc219abf118442")
    probe = facts["probe"]
    assert probe["planned"] and probe["ran"] is False and probe["runtime"] == "podman"
    assert probe["cmd"][:7] == [podman, "run", "--rm", "--entrypoint", "python3", "--ulimit", "nofile=1024:1024"]
    assert res["actions"][-1]["status"] == "planned"
    assert all(a["cmd"][1] != "run" for a in res["actions"][:-1])


def test_probe_runs_and_reports(tmp_path):
    for runtime, mapping in (("docker", "docker-cli-28.2.2/replay.json"), ("podman", "podman-4.3.1/replay.json")):
        binary = replay_bin(tmp_path, runtime, mapping)
        res = run_module(tmp_path, image="localhost/repro-vllm-tinypy:0.1", runtimes=[runtime], probe=True,
                         **{"%s_executable" % runtime: binary})
        probe = res["ansible_facts"]["repro_vllm_container"]["probe"]
        assert not res.get("failed") and probe["ran"] and probe["status"] == "ok" and probe["runtime"] == runtime
        assert probe["python"] == "3.11.2" and probe["torch"] is None and probe["error"] is None
        assert probe["errors"] == {"torch": "ModuleNotFoundError: No module named 'torch'"}
        assert res["actions"][-1]["cmd"][:5] == [binary, "run", "--rm", "--entrypoint", "python3"]


def test_probe_failures_are_values(tmp_path):
    podman = replay_bin(tmp_path, "podman", "podman-4.3.1/replay_rlimit.json")
    res = run_module(tmp_path, image="localhost/repro-vllm-tinypy:0.1", runtimes=["podman"], podman_executable=podman,
                     probe=True)
    probe = res["ansible_facts"]["repro_vllm_container"]["probe"]
    assert not res.get("failed") and probe["ran"] and probe["rc"] == 126 and probe["status"] == "failed"
    assert "setrlimit" in probe["error"] and probe["torch"] is None
    podman = replay_bin(tmp_path, "podman2", "podman-4.3.1/replay.json")
    res = run_module(tmp_path, image="localhost/repro-vllm-tiny:0.1", runtimes=["podman"], podman_executable=podman,
                     probe=True, probe_runtime="podman")
    probe = res["ansible_facts"]["repro_vllm_container"]["probe"]
    assert probe["rc"] == 127 and probe["status"] == "failed" and "python3" in probe["error"]
    res = run_module(tmp_path, image="localhost/absent:1", runtimes=["podman"], podman_executable=podman, probe=True)
    probe = res["ansible_facts"]["repro_vllm_container"]["probe"]
    assert probe["ran"] is False and "no docker or podman with the image" in probe["error"]


def test_bad_input(tmp_path):
    res = run_module(tmp_path, image="  ")
    assert res["failed"] and "non-empty" in res["msg"]
    res = run_module(tmp_path, image="x", runtimes=["lxc"])
    assert res["failed"] and "runtimes" in res["msg"]
    res = run_module(tmp_path, image="x", command_timeout=0)
    assert res["failed"] and "positive" in res["msg"]
