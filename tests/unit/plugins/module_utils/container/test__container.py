# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_container parsers on real runtime captures (tests/fixtures/containers, provenance in its README), and
gather() against replay stubs that print those captures from real processes."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.container import _container as c

FIX = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "containers"))
PODMAN = os.path.join(FIX, "podman-4.3.1")
DOCKER = os.path.join(FIX, "docker-cli-28.2.2")
CTR = os.path.join(FIX, "containerd-1.6.20")
H200 = os.path.join(FIX, "h200-probe")
DOC = os.path.join(FIX, "documented")

CONFIG = "sha256:e391a3994d242d7e40f04c24b59ef5140f403af837bf2981c01bd0da2cd373b6"
PODMAN_MANIFEST = "sha256:3463a4e2ed3ff2faa1f7c875ee5ed71ad2ab6a28918e698fd0cc9da7e134090b"
CTR_MANIFEST = "sha256:baa6612d845f9179589e48c166066ef33c299df9a30bc6a26aa079bc30bcbf39"
CTR_INDEX = "sha256:931e87a9097b7a8af514cf2540a6723e4a3e51a47de64700affeb8861b356178"
TINY = "localhost/repro-vllm-tiny:0.1"


def cap(folder, name, ext="out"):
    with open(os.path.join(folder, "%s.%s" % (name, ext)), encoding="utf-8") as f:
        return f.read()


def replay_bin(tmp_path, name, mapping):
    """An executable that runs replay.py with ``mapping`` (a real process printing real captures)."""
    path = tmp_path / name
    path.write_text('#!/bin/sh\nexec "%s" "%s" "%s" "$@"\n' % (sys.executable, os.path.join(FIX, "replay.py"), mapping))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


# ------------------------------------------------------------------------------------------------ parsers
def test_docker_inspect_classic_store():
    rec = c.parse_docker_inspect(cap(DOCKER, "image_inspect"))
    assert rec["id"] == CONFIG and rec["config_digest"] == CONFIG and rec["manifest_digest"] is None
    assert rec["repo_digests"] == [] and rec["repo_tags"] == [TINY]
    assert rec["created"] == "2026-11-29T16:22:19.853423172Z"
    assert (rec["architecture"], rec["os"], rec["size"]) == ("amd64", "linux", 1982256)
    assert rec["labels"]["org.opencontainers.image.title"] == "repro-vllm-tiny"
    assert rec["env"] == {"PATH": "/bin", "CUDA_VERSION": "13.0.2", "VLLM_USAGE_SOURCE": "production-docker-image",
                          "HF_TOKEN": "<redacted>", "API_KEY": "<redacted>"}
    assert rec["env_redacted"] == ["API_KEY", "HF_TOKEN"]
    assert "FAKE" not in json.dumps(rec)
    # no repo digest: this image cannot be pulled by digest again
    assert c.pinned_reference(TINY, rec["repo_digests"]) is None


def test_docker_inspect_absent_prints_empty_list():
    assert c.parse_docker_inspect(cap(DOCKER, "inspect_absent")) is None
    assert c.classify_error(cap(DOCKER, "inspect_absent", "err")) == "image_absent"


def test_podman_inspect():
    rec = c.parse_podman_inspect(cap(PODMAN, "image_inspect"))
    assert rec["id"] == CONFIG[len("sha256:"):] and rec["config_digest"] == CONFIG
    assert rec["manifest_digest"] == PODMAN_MANIFEST
    assert rec["repo_digests"] == ["localhost/repro-vllm-tiny@" + PODMAN_MANIFEST]
    assert rec["env"]["HF_TOKEN"] == "<redacted>" and rec["env"]["CUDA_VERSION"] == "13.0.2"
    assert rec["labels"]["io.buildah.version"] == "1.28.2"
    assert c.pinned_reference(TINY, rec["repo_digests"]) == "localhost/repro-vllm-tiny@" + PODMAN_MANIFEST
    # the manifest list resolves to the same image
    assert c.parse_podman_inspect(cap(PODMAN, "inspect_manifest_list"))["config_digest"] == CONFIG


def test_ctr_images_table_with_spaces_in_size():
    rows = c.parse_ctr_images(cap(CTR, "images_ls"))
    assert [row["ref"] for row in rows] == ["docker.io/repro/vllm-tiny:0.1", "localhost/repro-vllm-multi:0.1", TINY]
    tagged, multi, tiny = rows
    assert tagged["labels"] == {"io.cri-containerd.image": "managed"}
    assert multi["type"] == "application/vnd.oci.image.index.v1+json" and multi["digest"] == CTR_INDEX
    assert tiny["digest"] == CTR_MANIFEST and tiny["size"] == "1.0 MiB" and tiny["platforms"] == ["linux/amd64"]
    assert tiny["labels"] == {}
    assert c.parse_ctr_images(cap(CTR, "images_ls_empty")) == []


def test_ctr_content_chain_index_manifest_config():
    index = json.loads(cap(CTR, "content_index"))
    assert c.is_index("application/vnd.oci.image.index.v1+json", index)
    desc = c.pick_manifest(index, "linux", "amd64")
    assert desc["digest"] == CTR_MANIFEST
    assert c.pick_manifest(index, "linux", "arm64") is None
    manifest = json.loads(cap(CTR, "content_manifest"))
    assert not c.is_index("application/vnd.oci.image.manifest.v1+json", manifest)
    assert manifest["config"]["digest"] == CONFIG
    cfg = c.parse_oci_config(cap(CTR, "content_config"))
    assert cfg["created"] == "2026-11-29T16:22:19.853423172Z" and cfg["architecture"] == "amd64"
    assert cfg["env"]["API_KEY"] == "<redacted>" and cfg["labels"]["maintainer"] == "repro.vllm test fixtures"


def test_ctr_version_and_errors():
    assert c.parse_ctr_version(cap(CTR, "version")) == {"client": "1.6.20~ds1", "server": "1.6.20~ds1"}
    assert c.parse_ctr_version(cap(CTR, "version_no_daemon")) == {"client": "1.6.20~ds1", "server": None}
    assert c.classify_error(cap(CTR, "version_no_daemon", "err")) == "daemon_down"
    assert c.classify_error(cap(CTR, "content_missing", "err")) == "image_absent"


def test_docker_and_podman_errors():
    assert c.classify_error(cap(DOCKER, "version_no_daemon", "err")) == "daemon_down"
    assert c.classify_error(cap(DOCKER, "inspect_no_daemon", "err")) == "daemon_down"
    assert c.classify_error(cap(PODMAN, "inspect_absent", "err")) == "image_absent"
    assert c.classify_error(cap(PODMAN, "probe_rlimit", "err")) == "other"


def test_crictl_documented_crio_output():
    rec = c.parse_crictl_inspecti(cap(DOC, "crictl_inspecti_crio"))
    assert rec["config_digest"] == "sha256:83aa35aa1c79e4b6957e018da6e322bfca92bf3b4696a211b42502543c242d6f"
    assert rec["size"] == 1441595 and rec["repo_tags"] == ["docker.io/library/busybox:latest"]
    assert len(rec["repo_digests"]) == 2 and rec["created"] is None  # CRI-O gives no info.imageSpec
    assert c.pinned_reference("busybox", rec["repo_digests"]) == rec["repo_digests"][0]


def test_crictl_info_imagespec_is_the_oci_config():
    """containerd's crictl answer carries the OCI image config as info.imageSpec; fed here with the REAL
    config blob containerd stored (content_config), wrapped the way crictl nests it."""
    doc = json.loads(cap(DOC, "crictl_inspecti_crio"))
    doc["info"] = {"imageSpec": json.loads(cap(CTR, "content_config"))}
    rec = c.parse_crictl_inspecti(json.dumps(doc))
    assert rec["created"] == "2026-11-29T16:22:19.853423172Z" and rec["env"]["HF_TOKEN"] == "<redacted>"


def test_enroot_documented_output():
    assert c.parse_enroot_list(cap(DOC, "enroot_list")) == ["cuda"]
    assert c.parse_enroot_list(cap(DOC, "enroot_list_fancy")) == ["alpine", "busybox", "centos", "ubuntu"]
    assert "nvidia+cuda+10.0-base" in c.enroot_names("docker://$oauthtoken@nvcr.io#nvidia/cuda:10.0-base")


def test_probe_outputs():
    h200 = c.parse_probe(cap(H200, "probe"))
    assert h200["torch"] == "2.11.0+cu130" and h200["torch_cuda"] == "13.0" and h200["device_count"] == 1
    assert h200["python"] == "3.12.3" and h200["vllm"] is None and h200["errors"] == {}
    assert c.parse_probe(cap(H200, "probe_novisible"))["device_count"] == 0
    tiny = c.parse_probe(cap(PODMAN, "probe_tinypy"))
    assert tiny["python"] == "3.11.2" and tiny["torch"] is None
    assert tiny["errors"] == {"torch": "ModuleNotFoundError: No module named 'torch'"}
    assert c.parse_probe(cap(DOCKER, "probe_tinypy")) == tiny
    assert c.parse_probe(cap(PODMAN, "probe_nopython")) is None
    assert c.parse_probe("noise\n" + c.PROBE_MARKER + "{broken\n") is None


@pytest.mark.parametrize("ref,full", [
    ("ubuntu", "docker.io/library/ubuntu:latest"),
    ("vllm/vllm-openai:v0.23.0", "docker.io/vllm/vllm-openai:v0.23.0"),
    (TINY, TINY),
    ("nvcr.io/nvidia/pytorch:25.01-py3", "nvcr.io/nvidia/pytorch:25.01-py3"),
    ("reg.local:5000/a/b", "reg.local:5000/a/b:latest"),
    ("busybox@" + CONFIG, "docker.io/library/busybox@" + CONFIG),
])
def test_normalize_reference(ref, full):
    assert c.normalize_reference(ref) == full


def test_redact_env_rules():
    env, names = c.redact_env(["A_KEY=1", "my_password=x", "NORMAL=1", "PIP_INDEX_URL=https://u:p@host/x",
                               "TOK=hf_FAKEFAKEFAKEFAKEFAKEFAKE", "NOEQ", "EMPTY_TOKEN="])
    assert env == {"A_KEY": "<redacted>", "my_password": "<redacted>", "NORMAL": "1",
                   "PIP_INDEX_URL": "https://u:<redacted>@host/x", "TOK": "<redacted>", "NOEQ": None,
                   "EMPTY_TOKEN": ""}
    assert names == ["A_KEY", "PIP_INDEX_URL", "TOK", "my_password"]


# ------------------------------------------------------------------------------------------------ gather
def test_gather_every_runtime_from_replays(tmp_path):
    bins = {
        "docker": replay_bin(tmp_path, "docker", os.path.join(DOCKER, "replay.json")),
        "podman": replay_bin(tmp_path, "podman", os.path.join(PODMAN, "replay.json")),
        "ctr": replay_bin(tmp_path, "ctr", os.path.join(CTR, "replay.json")),
        "enroot": replay_bin(tmp_path, "enroot", os.path.join(DOC, "replay_enroot.json")),
        "crictl": str(tmp_path / "no-crictl-here"),
    }
    facts, actions = c.gather(TINY, binaries=bins, ctr_namespace="default")
    rt = facts["runtimes"]
    assert rt["docker"]["image"]["config_digest"] == CONFIG and rt["docker"]["server_version"] == "20.10.24+dfsg1"
    assert rt["docker"]["daemon_running"] is True and rt["docker"]["pinned_reference"] is None
    assert rt["podman"]["image"]["manifest_digest"] == PODMAN_MANIFEST and rt["podman"]["version"] == "4.3.1"
    assert rt["ctr"]["image"]["manifest_digest"] == CTR_MANIFEST and rt["ctr"]["image"]["config_digest"] == CONFIG
    assert rt["ctr"]["image"]["env"]["HF_TOKEN"] == "<redacted>" and rt["ctr"]["version"] == "1.6.20~ds1"
    assert rt["crictl"]["present"] is False and "not an executable" in rt["crictl"]["error"]
    assert rt["enroot"]["version"] == "1.1.0" and rt["enroot"]["image_present"] is False
    assert facts["found_in"] == ["docker", "podman", "ctr"]
    assert facts["config_digests"] == [CONFIG]  # one image, whatever the runtime
    assert facts["pinned_reference"] == "localhost/repro-vllm-tiny@" + PODMAN_MANIFEST
    assert facts["by_digest"] is False
    assert all(a["status"] == "ok" for a in actions), actions
    assert "FAKE" not in json.dumps(facts)


def test_gather_ctr_index_and_normalised_name(tmp_path):
    bins = {"ctr": replay_bin(tmp_path, "ctr", os.path.join(CTR, "replay.json"))}
    facts, dummy = c.gather("localhost/repro-vllm-multi:0.1", binaries=bins, runtimes=["ctr"])
    img = facts["runtimes"]["ctr"]["image"]
    if c.host_platform() == ("linux", "amd64"):
        assert img["index_digest"] == CTR_INDEX and img["manifest_digest"] == CTR_MANIFEST
        assert img["config_digest"] == CONFIG
    facts, dummy = c.gather("repro/vllm-tiny:0.1", binaries=bins, runtimes=["ctr"])
    entry = facts["runtimes"]["ctr"]
    assert entry["image"]["repo_tags"] == ["docker.io/repro/vllm-tiny:0.1"]
    assert entry["ctr_labels"] == {"io.cri-containerd.image": "managed"}
    assert entry["pinned_reference"] == "docker.io/repro/vllm-tiny@" + CTR_MANIFEST
    facts, dummy = c.gather("nvcr.io/nvidia/absent:1", binaries=bins, runtimes=["ctr"])
    assert facts["runtimes"]["ctr"]["image_present"] is False and facts["found_in"] == []


def test_gather_daemons_down_are_values_not_failures(tmp_path):
    bins = {"docker": replay_bin(tmp_path, "docker", os.path.join(DOCKER, "replay_no_daemon.json")),
            "ctr": replay_bin(tmp_path, "ctr", os.path.join(CTR, "replay_no_daemon.json"))}
    facts, actions = c.gather(TINY, binaries=bins, runtimes=["docker", "ctr"])
    d = facts["runtimes"]["docker"]
    assert d["present"] and d["daemon_running"] is False and d["status"] == "daemon_unreachable"
    assert d["error"] == cap(DOCKER, "version_no_daemon", "err").strip()
    assert d["version"] == "28.2.2" and d["image_present"] is None
    k = facts["runtimes"]["ctr"]
    assert k["daemon_running"] is False and "failed to dial" in k["error"] and k["version"] == "1.6.20~ds1"
    assert len(actions) == 2  # nothing more is asked of an unreachable daemon


def test_gather_absent_image_and_absent_runtime(tmp_path):
    bins = {"podman": replay_bin(tmp_path, "podman", os.path.join(PODMAN, "replay.json")),
            "docker": replay_bin(tmp_path, "docker", os.path.join(DOCKER, "replay.json"))}
    facts, dummy = c.gather("localhost/absent:1", binaries=bins, runtimes=["podman", "docker"])
    for name in ("podman", "docker"):
        e = facts["runtimes"][name]
        assert e["present"] and e["daemon_running"] and e["image_present"] is False and e["error"] is None
    assert facts["found_in"] == [] and facts["pinned_reference"] is None
    facts, actions = c.gather(TINY, binaries={"enroot": str(tmp_path / "missing")}, runtimes=["enroot"])
    assert facts["runtimes"]["enroot"]["present"] is False and actions == []


def test_gather_crictl_documented(tmp_path):
    bins = {"crictl": replay_bin(tmp_path, "crictl", os.path.join(DOC, "replay_crictl.json"))}
    facts, actions = c.gather("83aa35aa1c79e", binaries=bins, runtimes=["crictl"])
    e = facts["runtimes"]["crictl"]
    assert e["image_present"] and e["image"]["size"] == 1441595 and e["version"] is None
    assert actions[0]["cmd"][1:] == ["--version"] and actions[1]["cmd"][1:] == ["inspecti", "-o", "json", "83aa35aa1c79e"]


def test_gather_enroot_squashfs_file(tmp_path):
    sqsh = tmp_path / "nvidia+cuda+10.0-base.sqsh"
    sqsh.write_bytes(b"hsqs" + b"\0" * 100)
    bins = {"enroot": replay_bin(tmp_path, "enroot", os.path.join(DOC, "replay_enroot.json"))}
    facts, dummy = c.gather(str(sqsh), binaries=bins, runtimes=["enroot"])
    img = facts["runtimes"]["enroot"]["image"]
    assert img["path"] == str(sqsh) and img["size"] == 104
    assert img["file_sha256"] == c.sha256_file(str(sqsh))
    facts, dummy = c.gather("cuda", binaries=bins, runtimes=["enroot"])
    assert facts["runtimes"]["enroot"]["image"]["container"] == "cuda"


def test_gather_hung_runtime_times_out(tmp_path):
    """A runtime that hangs (a stub that sleeps; no output is invented) is a value, not a hung play."""
    hang = tmp_path / "docker"
    hang.write_text("#!/bin/sh\nsleep 30\n")
    hang.chmod(0o755)
    facts, actions = c.gather(TINY, binaries={"docker": str(hang)}, runtimes=["docker"], timeout=0.5)
    e = facts["runtimes"]["docker"]
    assert e["status"] == "timed_out" and "did not finish" in e["error"] and e["image_present"] is None
    assert actions[0]["status"] == "timed_out"


def test_run_probe_from_replays(tmp_path):
    actions = []
    runner = c._Runner(c.run_cmd, 10, actions)
    podman = replay_bin(tmp_path, "podman", os.path.join(PODMAN, "replay.json"))
    ok = c.run_probe("podman", podman, "localhost/repro-vllm-tinypy:0.1", runner)
    assert ok["status"] == "ok" and ok["python"] == "3.11.2" and ok["error"] is None
    nopy = c.run_probe("podman", podman, TINY, runner)
    assert nopy["status"] == "failed" and nopy["rc"] == 127 and "executable file not found" in nopy["error"]
    rl = replay_bin(tmp_path, "podman-rl", os.path.join(PODMAN, "replay_rlimit.json"))
    bad = c.run_probe("podman", rl, "localhost/repro-vllm-tinypy:0.1", runner, ["--ulimit", "nofile=1024:1024"])
    assert bad["rc"] == 126 and "RLIMIT_NOFILE" in bad["error"] and bad["python"] is None
    argv = c.probe_argv("docker", "img", ["--gpus", "all"])
    assert argv[:7] == ["docker", "run", "--rm", "--entrypoint", "python3", "--gpus", "all"]
    assert argv[7:9] == ["img", "-c"]
