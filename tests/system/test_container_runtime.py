# -*- coding: utf-8 -*-
"""The server in its exact image (issue 25), on REAL podman and the REAL CPU vLLM in localhost/repro-vllm-cpu:0.32.0
(scripts/build-vllm-cpu-image.sh): reproduce.yml with repro_vllm_server_runtime=podman.

- The ladder to prefix_caching runs in the image: every attempt's record names the image that ran (its id and repo
  digest as pinned by the play's fingerprint), the in-container probe and the container's timestamped log, vLLM's
  collect_env comes from inside the image, the verdict is the process runtime's (healthy), and no container is left.
  Its hand-off replayed on the same host runs in the package's image (by image id) and answers `reproduced`.
- The image's tag moves to another build while the play runs: the next attempt is refused, naming both images.
- SIGKILL of the play and of the runtime's client with the server up: the container is stopped and removed once the
  lease has run out, by the supervisor, without any play.
"""
from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import time
import uuid

from conftest import PODMAN_GLOBAL, ROOT, free_port, run_playbook, task_results

from test_reproduce_cancel import _drain, _start, _wait_for

INVENTORY = os.path.join(ROOT, "inventories", "localhost")
# what this VM needs beyond podman's defaults (docs/container.md): its global flags, rlimits no higher than the hard
# ones, and a /dev/shm the CPU worker fits in
CONTAINER_ARGS = list(PODMAN_GLOBAL) + ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1000:1000",
                                        "--shm-size", "1g"]


def _podman(*args, check=True, timeout=120):
    return subprocess.run(["podman"] + list(args), capture_output=True, text=True, timeout=timeout, check=check)


def _image_id(ref):
    return "sha256:" + _podman("image", "inspect", "--format", "{{.Id}}", ref).stdout.strip()


def _containers(label):
    out = _podman("ps", "-a", "--format", "{{.Names}}", "--filter", "label=" + label).stdout
    return [line for line in out.split() if line]


def _play(work, port, case, image, lease=120, until="prefix_caching", fingerprint=True):
    return _start(work, port, case, lease, repro_vllm_fingerprint=fingerprint, repro_vllm_ladder_until=until,
                  repro_vllm_request_timeout=120, repro_vllm_server_runtime="podman", repro_vllm_image=image,
                  repro_vllm_container_args=CONTAINER_ARGS,
                  # two starts at once on 2 cores (xdist) take longer than the inventory's 300 s at times
                  repro_vllm_ready_timeout=600)


def _json(path):
    with open(str(path)) as f:
        return json.load(f)


def _attempts(case_dir):
    return sorted(p for p in case_dir.iterdir() if (p / "outcome.json").is_file())


def test_the_ladder_runs_in_the_pinned_image_and_records_what_ran(vllm_cpu_image, tmp_path):
    case = "podman-ladder-%s" % uuid.uuid4().hex[:6]
    proc, lines = _play(tmp_path, free_port(), case, vllm_cpu_image)
    seen = []
    try:
        _drain(proc, lines, seen, timeout=1500)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = "\n".join(seen)
    assert proc.returncode == 0, text[-4000:]
    assert "verdict | healthy" in text, text[-3000:]
    image_id = _image_id(vllm_cpu_image)
    runs = _attempts(tmp_path / "records" / case)
    assert [_json(r / "outcome.json")["step"] for r in runs] == ["minimal", "prefix_caching"], runs
    for run in runs:
        host = run / "hosts" / "localhost"
        ran = _json(host / "server.json")["container"]
        assert ran["runtime"] == "podman" and ran["name"].startswith("repro-vllm-") and ran["id"]
        # the image the fingerprint pinned, run by its repo digest, and seen running by its id
        assert ran["image"] == vllm_cpu_image and ran["image_id"] == image_id and ran["pinned_by"] == "fingerprint"
        assert "@sha256:" in ran["run_ref"] and ran["image_repo_digest"] == ran["run_ref"]
        assert ran["tag_moved"] is None and ran["runtime_version"]
        assert "libcuda" in ran["probe"] and "cuda_visible_devices" in ran["probe"], ran["probe"]
        assert ran["stop"]["existed"] and ran["stop"]["removed"] and ran["stop"]["logs_saved"]
        log = (host / "logs" / "container.log").read_text()
        assert log.startswith("20") and "T" in log.split(" ", 1)[0], log[:200]  # the runtime's timestamps
        assert _json(host / "manifest.json")
    env = _json(runs[0] / "hosts" / "localhost" / "collect_env.json")
    assert env["status"] == "ok" and env["python"].startswith("python3 in localhost/repro-vllm-cpu@sha256:"), env
    assert _containers("repro.vllm.case=%s" % case) == []

    # the hand-off of this container case, replayed on the same host: in the package's image, matched by image id
    common = {"repro_vllm_container_args": CONTAINER_ARGS}
    h = run_playbook(tmp_path, "playbooks/handoff.yml", INVENTORY,
                     dict(common, repro_vllm_records_root=str(tmp_path / "records"), repro_vllm_case_id=case),
                     ident="handoff")
    assert h.status == "successful", h.stdout.read()[-4000:]
    package = [res for _h, ev, res in task_results(h, "Handoff | pack") if ev == "runner_on_ok"][0]["package"]
    r = run_playbook(tmp_path, "playbooks/replay.yml", INVENTORY,
                     dict(common, repro_vllm_records_root=str(tmp_path / "receiver"),
                          repro_vllm_remote_root=str(tmp_path / "remote"), repro_vllm_package=package,
                          repro_vllm_replay_port=free_port()), ident="replay")
    out = r.stdout.read()
    assert r.status == "successful", out[-5000:]
    replayed = [p for p in (tmp_path / "receiver").iterdir() if p.name.startswith(case + "-replay-")]
    assert len(replayed) == 1, list((tmp_path / "receiver").iterdir())
    doc = _json(sorted(replayed[0].glob("run-*/replay.json"))[-1])
    assert doc["verdict"] == "reproduced", doc
    attempt = _attempts(replayed[0])[-1]
    again = _json(attempt / "hosts" / "localhost" / "server.json")["container"]
    assert again["image_id"] == image_id and again["run_ref"] == image_id, again
    assert again["pinned_by"].startswith("the package ("), again


def test_a_tag_moved_during_the_play_is_refused_naming_both_images(vllm_cpu_image, tmp_path):
    case = "podman-moved-%s" % uuid.uuid4().hex[:6]
    # a tag of this test's own, so that moving it touches no other test
    tag = "localhost/repro-vllm-moved-%s:t" % uuid.uuid4().hex[:8]
    other = "localhost/repro-vllm-other-%s:t" % uuid.uuid4().hex[:8]
    _podman("tag", vllm_cpu_image, tag)
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "Containerfile").write_text("FROM %s\nLABEL repro.vllm.test.rebuilt=%s\n" % (vllm_cpu_image, case))
    _podman(*(PODMAN_GLOBAL + ["build", "-q", "-t", other, str(ctx)]), timeout=600)
    pinned, rebuilt = _image_id(tag), _image_id(other)
    assert pinned != rebuilt
    proc, lines = _play(tmp_path, free_port(), case, tag)
    seen = []
    try:
        deadline = time.monotonic() + 900
        while not _containers("repro.vllm.case=%s" % case):  # the minimal attempt's container is up
            assert time.monotonic() < deadline and proc.poll() is None, "\n".join(seen[-40:])
            time.sleep(1)
        _podman("tag", other, tag)  # the tag now names another build
        _drain(proc, lines, seen, timeout=1200)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _podman("rmi", tag, other, check=False)
    text = "\n".join(seen)
    runs = _attempts(tmp_path / "records" / case)
    assert len(runs) == 2, text[-3000:]
    first, second = runs
    assert _json(first / "outcome.json")["ok"] is True, text[-3000:]
    assert _json(first / "hosts" / "localhost" / "server.json")["container"]["image_id"] == pinned
    assert _json(second / "manifest.json")["metadata"]["status"] == "refused", text[-3000:]
    refusal = _json(second / "hosts" / "localhost" / "server.json")["refusal"]
    assert pinned in refusal and rebuilt in refusal and "repro_vllm_allow_moved_tag" in refusal, refusal
    assert pinned in text and rebuilt in text
    assert _containers("repro.vllm.case=%s" % case) == []


def test_sigkill_of_play_and_client_leaves_no_container_after_the_lease(vllm_cpu_image, tmp_path):
    case = "podman-kill-%s" % uuid.uuid4().hex[:6]
    lease = 20
    proc, lines = _play(tmp_path, free_port(), case, vllm_cpu_image, lease=lease, until="", fingerprint=False)
    seen = []
    try:
        _wait_for(lines, "minimal | server ready", 900, seen)
        names = _containers("repro.vllm.case=%s" % case)
        assert len(names) == 1, names
        os.killpg(proc.pid, signal.SIGKILL)
        # the runtime's client too (a lost node agent): nothing but the supervisor and the lease is left
        clients = subprocess.run(["pgrep", "-f", "run --name %s " % names[0]], capture_output=True, text=True,
                                 check=False).stdout.split()
        assert clients, "no podman client of %s found" % names[0]
        for pid in clients:
            os.kill(int(pid), signal.SIGKILL)
        # the container outlives its client; the server's heartbeat sees the play gone and ends the lease at once
        # (docs/method.md, what stops the server), so it may be gone already: at the latest the lease ends it
        deadline = time.monotonic() + lease + 90
        while _containers("repro.vllm.case=%s" % case) and time.monotonic() < deadline:
            time.sleep(2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    left = _containers("repro.vllm.case=%s" % case)
    for name in left:
        _podman("rm", "-f", name, check=False)
    assert left == [], "the container outlived its lease by 90 s"
    expired = glob.glob(str(tmp_path / "remote" / "runs" / "*" / ".state" / "localhost" / "*.lease-expired"))
    assert expired, os.listdir(str(tmp_path / "remote"))
    record = _json(expired[0])
    assert record["container"]["existed"] and record["container"]["removed"], record
