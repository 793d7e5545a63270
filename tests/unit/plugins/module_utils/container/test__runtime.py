# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_runtime: the attempt's container command (names, labels, GPUs by the runtime's own means, mounts, the pinned
image) and the runtime's answers, read from real podman 4.3.1 and docker 28.2.2 captures (tests/fixtures/containers,
provenance in its README). The GPU flags cannot run here (no GPU runtime on these machines): the argv is the test."""

from __future__ import annotations

import os

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.container import _runtime as rt

FIX = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "containers"))
PODMAN = os.path.join(FIX, "podman-4.3.1")
DOCKER = os.path.join(FIX, "docker-cli-28.2.2")
REF = "localhost/repro-vllm-cpu:0.32.0"


def cap(folder, name, ext="out"):
    with open(os.path.join(folder, "%s.%s" % (name, ext)), encoding="utf-8") as f:
        return f.read()


def answer(folder, name):
    rc = int(cap(folder, name, "rc").strip())
    return {"status": "ok" if rc == 0 else "failed", "rc": rc, "stdout": cap(folder, name),
            "stderr": cap(folder, name, "err"), "msg": ""}


class Replay(object):
    """A runner that answers runtime calls with captured answers, keyed by the subcommand."""

    def __init__(self, folder, table):
        self.folder, self.table, self.calls = folder, table, []

    def __call__(self, argv, timeout=None, env=None):
        self.calls.append(argv[1:])
        for key, name in self.table:
            if argv[1:1 + len(key)] == list(key):
                return answer(self.folder, name)
        return {"status": "failed", "rc": 99, "stdout": "", "stderr": "unmapped %s" % argv[1:], "msg": ""}


# ------------------------------------------------------------------------------------------- names and labels
def test_container_name_is_the_run_uid_and_a_safe_host_part():
    assert rt.container_name("0123456789abcdef", "gpu-node-01") == "repro-vllm-0123456789abcdef-gpu-node-01"
    assert rt.container_name("0123456789abcdef", "10.0.0.5:2222/x y") == "repro-vllm-0123456789abcdef-10.0.0.5-2222-x-y"
    assert rt.container_name("0123456789abcdef", "") == "repro-vllm-0123456789abcdef-node"


def test_labels_leave_out_what_is_unknown():
    labels = rt.run_labels("0123456789abcdef", "case-a", "run-002", None, "h1")
    assert labels == {"repro.vllm.run_uid": "0123456789abcdef", "repro.vllm.case": "case-a",
                      "repro.vllm.run": "run-002", "repro.vllm.node": "h1"}


# ------------------------------------------------------------------------------------------- the command
def test_a_bare_command_with_a_runtime_runs_vllm_serve_as_the_entrypoint():
    spec = rt.split_command(["/opt/venv/bin/vllm", "serve", "/models/tiny", "--port", "8011"], "podman", REF)
    assert spec["runtime"] == "podman" and spec["image"] == REF
    assert spec["entrypoint"] == "vllm"
    assert spec["args"] == ["serve", "/models/tiny", "--port", "8011"]
    assert spec["vllm_argv"] == ["vllm", "serve", "/models/tiny", "--port", "8011"]


def test_process_without_a_run_command_is_no_container():
    assert rt.split_command(["vllm", "serve", "/m"], "process", "") is None
    assert rt.split_command(["vllm", "serve", "/m"], None, REF) is None  # the image is only recorded


def test_a_production_run_command_sets_runtime_and_image_and_keeps_its_options():
    argv = ["docker", "run", "--rm", "-d", "--name", "prod", "--shm-size", "8g", "-e", "HF_TOKEN", "--ipc=host",
            "vllm/vllm-openai:v0.11.0", "moonshotai/Kimi-K2", "--tensor-parallel-size", "8"]
    spec = rt.split_command(argv, "process", "")
    assert spec["runtime"] == "docker" and spec["image"] == "vllm/vllm-openai:v0.11.0"
    assert spec["options"] == ["--shm-size", "8g", "--ipc=host"]
    assert spec["dropped"] == ["--rm", "-d", "--name", "prod", "-e", "HF_TOKEN"]
    # the image's own entrypoint (vllm serve) runs: nothing is put before the model
    assert spec["entrypoint"] is None
    assert spec["args"] == ["moonshotai/Kimi-K2", "--tensor-parallel-size", "8"]
    assert spec["vllm_argv"][:3] == ["vllm", "serve", "moonshotai/Kimi-K2"]


@pytest.mark.parametrize("runtime,image,words", [
    ("podman", "", "repro_vllm_server_runtime is podman but the production command is a docker run"),
    (None, "vllm/vllm-openai:latest", "repro_vllm_image is vllm/vllm-openai:latest but the production command runs"),
])
def test_a_variable_that_contradicts_the_run_command_is_refused(runtime, image, words):
    argv = ["docker", "run", "vllm/vllm-openai:v0.11.0", "/m"]
    with pytest.raises(rt.RuntimeSpecError) as err:
        rt.split_command(argv, runtime, image)
    assert words in str(err.value)


def test_a_container_runtime_without_an_image_is_refused():
    with pytest.raises(rt.RuntimeSpecError) as err:
        rt.split_command(["vllm", "serve", "/m"], "docker", "")
    assert "set repro_vllm_image" in str(err.value)


# ------------------------------------------------------------------------------------------- GPUs and the run argv
@pytest.mark.parametrize("runtime,gpus,expected", [
    ("docker", None, ["--gpus", "all"]),
    ("docker", ["2", "3"], ["--gpus", '"device=2,3"']),
    ("docker", ["GPU-1a2b"], ["--gpus", '"device=GPU-1a2b"']),
    ("podman", None, ["--device", "nvidia.com/gpu=all"]),
    ("podman", ["2", "3"], ["--device", "nvidia.com/gpu=2", "--device", "nvidia.com/gpu=3"]),
])
def test_gpus_are_passed_by_the_runtimes_own_means_only_the_assigned(runtime, gpus, expected):
    assert rt.gpu_args(runtime, gpus, host_has_gpus=True) == expected


def test_no_gpu_flags_on_a_host_without_gpu_devices():
    assert rt.gpu_args("docker", None, host_has_gpus=False) == []
    assert rt.gpu_args("podman", ["0"], host_has_gpus=False) == []


def test_run_argv_names_labels_env_by_name_mounts_and_the_pinned_image(tmp_path):
    model = tmp_path / "models" / "tiny"
    model.mkdir(parents=True)
    template = tmp_path / "t.jinja"
    template.write_text("x")
    spec = rt.split_command(["vllm", "serve", str(model), "--chat-template=%s" % template, "--port", "8011",
                             "--download-dir", "/nonexistent/x"], "podman", REF)
    env = {"HF_TOKEN": "hf_FAKEFAKE", "VLLM_CPU_KVCACHE_SPACE": "1", "CUDA_VISIBLE_DEVICES": "1,3", "PATH": "/bin"}
    argv = rt.run_argv("/usr/bin/podman", spec, "localhost/repro-vllm-cpu@sha256:" + "a" * 64,
                       rt.container_name("0123456789abcdef", "h1"), rt.run_labels("0123456789abcdef", "c", "run-001"),
                       rt.container_env_names(env), gpus=["1", "3"], host_has_gpus=True,
                       container_args=["--shm-size", "1g"])
    assert argv[:4] == ["/usr/bin/podman", "run", "--name", "repro-vllm-0123456789abcdef-h1"]
    assert argv[4:6] == ["--network", "host"]
    assert "--rm" not in argv  # the log is read before the container is removed
    text = " ".join(argv)
    assert "--label repro.vllm.run_uid=0123456789abcdef" in text
    # values never on the command line; the GPU selection is the runtime's, not a variable inside
    assert "-e HF_TOKEN" in text and "hf_FAKEFAKE" not in text and "CUDA_VISIBLE_DEVICES" not in text
    assert "-e PATH" not in text
    assert "--device nvidia.com/gpu=1 --device nvidia.com/gpu=3" in text
    assert "-v %s:%s:ro" % (model, model) in text and "-v %s:%s:ro" % (template, template) in text
    assert "/nonexistent" not in text.split("--entrypoint", maxsplit=1)[0]
    i = argv.index("localhost/repro-vllm-cpu@sha256:" + "a" * 64)
    assert argv[i - 2:i] == ["--entrypoint", "vllm"] and argv[i + 1] == "serve"
    assert argv[argv.index("--shm-size") + 1] == "1g"


def test_a_network_in_the_callers_arguments_replaces_host_networking():
    spec = rt.split_command(["podman", "run", "--network=slirp4netns", REF, "/m"], None, None)
    argv = rt.run_argv("podman", spec, "sha256:" + "b" * 64, "n", {}, [])
    assert "host" not in argv and "--network=slirp4netns" in argv


# ------------------------------------------------------------------------------------------- the runtimes' answers
def test_podman_container_inspect_running_and_exited():
    run = rt.parse_container_inspect(cap(PODMAN, "container_inspect"))
    assert run["name"] == "repro-vllm-00112233aabbccdd-node1"
    assert run["running"] is True and run["pid"] > 0
    assert run["image_id"] == "sha256:023eaa2548efd7e7f0560d5b7a773ba43f849a5d2daba9d441650667f6d8cdba"
    assert run["image"] == REF
    assert run["labels"]["repro.vllm.run_uid"] == "00112233aabbccdd"
    gone = rt.parse_container_inspect(cap(PODMAN, "container_inspect_exited"))
    assert gone["running"] is False and gone["exit_code"] == 137 and gone["pid"] is None
    assert rt.parse_container_inspect(cap(PODMAN, "container_inspect_absent")) is None


def test_docker_container_inspect_running_and_exited():
    run = rt.parse_container_inspect(cap(DOCKER, "container_inspect"))
    assert run["name"] == "repro-vllm-00112233aabbccdd-node1"  # docker's leading "/" dropped
    assert run["running"] is True and run["pid"] > 0
    assert run["image_id"] == "sha256:bdb80adbb7d311ea33fd134bde8cfe81048bb1383604315cf4fe0688bb371048"
    assert run["image"] == "localhost/repro-vllm-bb:0.1"
    assert run["labels"]["repro.vllm.case"] == "capture"
    assert rt.parse_container_inspect(cap(DOCKER, "container_inspect_exited"))["exit_code"] == 137
    assert rt.parse_container_inspect(cap(DOCKER, "container_inspect_absent")) is None


def test_image_identity_prefers_the_repo_digest_then_the_image_id():
    podman = rt.image_identity("podman", REF, rt.parse_image_inspect("podman", cap(PODMAN, "image_inspect_vllm_cpu")))
    assert podman["image_repo_digest"] == ("localhost/repro-vllm-cpu@sha256:"
                                           "525e4a9c26173c0de3f3ea6d654b9debac206d3d94dc8a7a223e779337bcd927")
    assert podman["run_ref"] == podman["image_repo_digest"] and podman["by"] == "repo_digest"
    assert podman["image_id"] == "sha256:023eaa2548efd7e7f0560d5b7a773ba43f849a5d2daba9d441650667f6d8cdba"
    # a docker image loaded or imported, never pulled, has no repo digest: it runs by image id
    docker = rt.image_identity("docker", "localhost/repro-vllm-bb:0.1",
                               rt.parse_image_inspect("docker", cap(DOCKER, "image_inspect_bb")))
    assert docker["image_repo_digest"] is None and docker["by"] == "image_id"
    assert docker["run_ref"] == "sha256:bdb80adbb7d311ea33fd134bde8cfe81048bb1383604315cf4fe0688bb371048"


def test_the_in_container_probe_and_its_failure():
    probe = rt.parse_probe(cap(PODMAN, "exec_probe"))
    assert probe["cuda_visible_devices"] == "0" and probe["libcuda"] == [] and probe["gpus"] is None
    runner = Replay(DOCKER, [(("exec",), "exec_probe_nopython")])
    out = rt.Runtime("docker", "/usr/bin/docker", run=runner).probe("repro-vllm-00112233aabbccdd-node1")
    assert "docker exec repro-vllm-00112233aabbccdd-node1 python3 answered 126" in out["error"]


@pytest.mark.parametrize("folder,runtime", [(PODMAN, "podman"), (DOCKER, "docker")])
def test_stop_saves_nothing_it_cannot_and_removes(folder, runtime, tmp_path):
    runner = Replay(folder, [(("stop",), "stop"), (("rm",), "rm"), (("logs",), "version_client")])
    out = rt.Runtime(runtime, "/bin/" + runtime, run=runner).stop("n", 2, logs_path=str(tmp_path / "c.log"))
    assert out["stopped"] and out["removed"] and out["logs_saved"]
    assert [c[0] for c in runner.calls] == ["stop", "logs", "rm"]
    assert runner.calls[0] == ["stop", "-t", "2", "n"]


@pytest.mark.parametrize("folder,runtime", [(PODMAN, "podman"), (DOCKER, "docker")])
def test_containers_are_found_by_the_run_label(folder, runtime):
    runner = Replay(folder, [(("ps",), "ps_label")])
    ids = rt.Runtime(runtime, "/bin/" + runtime, run=runner).labelled("00112233aabbccdd")
    assert len(ids) == 1 and len(ids[0]) == 64
    assert runner.calls[0][-1] == "label=repro.vllm.run_uid=00112233aabbccdd"


# ------------------------------------------------------------------------------------------- the pin
def _facts(image_id):
    return {"reference": REF, "runtimes": {"podman": {"image_present": True, "image": {
        "id": image_id, "config_digest": "sha256:" + image_id, "repo_digests": ["localhost/repro-vllm-cpu@sha256:" + "c" * 64]}}}}


def test_the_pin_comes_from_the_fingerprints_facts_or_an_earlier_attempt():
    pin = rt.pin_from_facts("podman", REF, _facts("1" * 64))
    assert pin["image_id"] == "sha256:" + "1" * 64 and pin["pinned_by"] == "fingerprint"
    assert pin["run_ref"] == "localhost/repro-vllm-cpu@sha256:" + "c" * 64
    assert rt.pin_from_facts("podman", REF, pin) == pin  # the next attempt keeps it
    assert rt.pin_from_facts("docker", REF, _facts("1" * 64)) is None  # another runtime's facts
    assert rt.pin_from_facts("podman", "other:1", _facts("1" * 64)) is None  # another image's facts


def test_a_moved_tag_names_both_images():
    pin = rt.pin_from_facts("podman", REF, _facts("1" * 64))
    now = rt.image_identity("podman", REF, rt.parse_image_inspect("podman", cap(PODMAN, "image_inspect_vllm_cpu")))
    moved = rt.moved_tag(pin, now)
    assert moved["pinned_image_id"] == "sha256:" + "1" * 64
    assert moved["now_image_id"].startswith("sha256:023eaa25")
    line = rt.moved_line(moved)
    assert "sha256:" + "1" * 64 in line and "sha256:023eaa25" in line and "repro_vllm_allow_moved_tag" in line
    assert rt.moved_tag(now, now) is None


def test_the_identity_digest_is_the_same_before_and_after_the_pin_with_several_tags():
    """An image with two tags lists two repo digests: the fingerprint's facts and the attempt's pin name the same one
    (the reference's own repository), so the one-variable check sees no image change between attempts."""
    from ansible_collections.repro.vllm.plugins.module_utils.container._container import image_digest, pinned_reference
    ref = "localhost/repro-vllm-moved-1234:t"
    digests = ["localhost/repro-vllm-cpu@sha256:" + "a" * 64, "localhost/repro-vllm-moved-1234@sha256:" + "a" * 64]
    facts = {"reference": ref, "repo_digests": digests, "config_digests": ["sha256:" + "1" * 64],
             "pinned_reference": pinned_reference(ref, digests),
             "runtimes": {"podman": {"image_present": True, "image": {
                 "id": "1" * 64, "config_digest": "sha256:" + "1" * 64, "repo_digests": digests}}}}
    pin = rt.pin_from_facts("podman", ref, facts)
    assert image_digest(facts) == image_digest(pin) == "localhost/repro-vllm-moved-1234@sha256:" + "a" * 64


def test_the_containers_timestamped_log_classifies_like_the_streamed_server_log():
    """frozen-runs/cpu-podman run-002: logs/server.log (the client's stream) and logs/container.log (``podman logs
    --timestamps``, every line behind the runtime's RFC 3339 time) give the same answer."""
    from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files
    logs = os.path.join(os.path.dirname(FIX), "frozen-runs", "cpu-podman", "run-002", "hosts", "localhost", "logs")
    streamed = classify_files([os.path.join(logs, "server.log")])
    stamped = classify_files([os.path.join(logs, "container.log")])
    with open(os.path.join(logs, "container.log")) as f:
        assert f.readline()[:4] == "2026" and "T" in f.readline()[:11]
    assert stamped["stage"] == streamed["stage"] == "none"
    assert stamped["stages_reached"] == streamed["stages_reached"]
    marks = {m["stage"]: m["timestamp"] for m in stamped["timeline"][0]["stage_marks"]}
    same = {m["stage"]: m["timestamp"] for m in streamed["timeline"][0]["stage_marks"]}
    assert list(marks) == list(same)
    # every startup stage at the same second; the first request's mark (an access line without a vLLM time) takes
    # its time from a neighbouring line, and podman's log merges stdout and stderr in another order than the stream
    assert {k: v for k, v in marks.items() if k != "request"} == {k: v for k, v in same.items() if k != "request"}


def test_the_collective_checkpoint_follows_the_servers_runtime_and_pinned_image():
    facts = {"reference": REF, "pinned_reference": "localhost/repro-vllm-cpu@sha256:" + "a" * 64}
    assert rt.collective_container("podman", REF, ["--shm-size", "1g"], facts) == {
        "runtime": "podman", "image": "localhost/repro-vllm-cpu@sha256:" + "a" * 64, "run_args": ["--shm-size", "1g"]}
    # facts of another reference: the reference itself; a process or no image: no container
    assert rt.collective_container("docker", "vllm/vllm-openai:v0.11.0", None, facts)["image"] == "vllm/vllm-openai:v0.11.0"
    assert rt.collective_container("process", REF, [], facts) == {}
    assert rt.collective_container("podman", "", [], facts) == {}
