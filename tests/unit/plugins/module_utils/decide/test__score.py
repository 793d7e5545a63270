# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The baseline score over real frozen runs: a complete case scores 14, then each item is taken away in turn."""
from __future__ import annotations

import os

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.decide import _score
from ansible_collections.repro.vllm.plugins.module_utils.record._evidence import case_runs

from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import (
    CONTAINERS, case, container_facts, edit, load, real_h200_gpu, save)

PINNED = "localhost/repro-vllm-tiny@sha256:3463a4e2ed3ff2faa1f7c875ee5ed71ad2ab6a28918e698fd0cc9da7e134090b"
BY_TAG = "localhost/repro-vllm-tiny:0.1"
KEYS = {"item", "points", "evidence", "missing", "how"}


def _items(score):
    return {i["item"]: i for i in score["items"]}


def _score_of(path, **kw):
    return _score.score_runs(case_runs(path), profile="cpu-smoke", **kw)


@pytest.fixture
def complete(tmp_path):
    """cpu-ok: fingerprint, minimal run, fingerprint, the same minimal run again (all real). Added here: the
    fingerprint's GPU facts are the module's real answer on the H200 (with the kernel module), the image facts
    come from podman's real captures for an image used by digest, and compatibility.json says pass (the shape the
    compatibility role writes)."""
    path = case(tmp_path, "cpu-ok", ["run-001", "run-002", "run-003", "run-004"])
    fp = os.path.join(path, "run-001", "hosts", "localhost")
    edit(os.path.join(fp, "fingerprint.json"), lambda d: d.update(gpu=real_h200_gpu()))
    save(os.path.join(fp, "container.json"), container_facts(tmp_path, PINNED))
    save(os.path.join(path, "run-001", "compatibility.json"),
         {"profile": "cpu-smoke", "verdict": "pass", "violations": []})
    return path


def test_complete_case_scores_14_in_the_fixed_shape(complete):
    score = _score_of(complete)
    assert set(score) >= {"score", "band", "items"}
    assert [i["item"] for i in score["items"]] == list(_score.ITEMS)
    assert all(set(i) == KEYS for i in score["items"])
    assert all(i["points"] == 2 and i["missing"] is None and i["how"] is None for i in score["items"]), score
    assert score["score"] == 14 and score["band"] == "reproduce"
    items = _items(score)
    assert "run-001/hosts/localhost/fingerprint.json" in items["host_driver"]["evidence"]
    assert "580.159.04" in items["host_driver"]["evidence"]
    assert "run-002/stages.json" in items["first_failure"]["evidence"]
    assert "run-004" in items["repeatability"]["evidence"]


def test_the_real_records_as_they_are(tmp_path):
    """As recorded: the replayed capture has no kernel module line and the server ran from a venv (no image)."""
    score = _score_of(case(tmp_path, "cpu-ok", ["run-001", "run-002", "run-003", "run-004", "run-005"]))
    items = _items(score)
    assert items["host_driver"]["points"] == 0 and "kernel module" in items["host_driver"]["missing"]
    assert items["image"]["points"] == 0 and "repro_vllm_image" in items["image"]["how"]
    assert score["score"] == 10 and score["band"] == "collect"
    assert score["baseline_run"] == "run-002"  # the summary run-005 is not an attempt


def test_host_driver_lost(complete):
    edit(os.path.join(complete, "run-001", "compatibility.json"), lambda d: d.update(verdict="fail", violations=[
        {"host": "localhost", "fact": "driver_branch", "required": ">= 590", "found": "580.159.04",
         "fix": "install driver branch 590 or later"}]))
    item = _items(_score_of(complete))["host_driver"]
    assert item["points"] == 1 and "driver_branch" in item["missing"] and item["how"] == "install driver branch 590 or later"
    os.remove(os.path.join(complete, "run-001", "compatibility.json"))
    item = _items(_score_of(complete))["host_driver"]
    assert item["points"] == 1 and "compatibility" in item["missing"]
    edit(os.path.join(complete, "run-001", "hosts", "localhost", "fingerprint.json"),
         lambda d: d["gpu"]["driver"].update(kernel_module_version=None))
    item = _items(_score_of(complete))["host_driver"]
    assert item["points"] == 0 and "kernel module version of localhost" in item["missing"]


def test_image_lost(complete, tmp_path):
    fp = os.path.join(complete, "run-001", "hosts", "localhost", "container.json")
    save(fp, container_facts(tmp_path, BY_TAG))
    item = _items(_score_of(complete))["image"]
    assert item["points"] == 1 and "by tag" in item["missing"] and "@sha256:" in item["how"]
    os.remove(fp)
    item = _items(_score_of(complete))["image"]
    assert item["points"] == 0 and item["missing"]


def test_command_lost(complete):
    cmd = os.path.join(complete, "run-002", "hosts", "localhost", "command.json")
    edit(cmd, lambda d: d["env_set_by_run"].update(HF_HOME="$(mktemp -d)"))
    item = _items(_score_of(complete))["command"]
    assert item["points"] == 1 and "$(mktemp -d)" in item["missing"]
    edit(cmd, lambda d: d.update(argv=[a for a in d["argv"] if a not in ("--port", "8391")]))
    assert "network" in _items(_score_of(complete))["command"]["missing"]
    os.remove(cmd)
    item = _items(_score_of(complete))["command"]
    assert item["points"] == 0 and "run-002/hosts/localhost/command.json" in item["missing"]


def test_gpu_visibility_lost(complete, tmp_path):
    busy = case(tmp_path, "busy")  # a real fingerprint of the H200 with a foreign process holding 10 GiB
    fp = os.path.join(complete, "run-001", "hosts", "localhost", "fingerprint.json")
    busy_gpu = load(os.path.join(busy, "run-001", "hosts", "localhost", "fingerprint.json"))["gpu"]
    edit(fp, lambda d: d["gpu"].update(gpus=busy_gpu["gpus"], processes=busy_gpu["processes"]))
    item = _items(_score_of(complete))["gpu_visibility"]
    assert item["points"] == 1 and "pid 420" in item["missing"] and "foreign" in item["how"]
    edit(fp, lambda d: d["gpu"].update(gpus=[], present=False))
    assert _items(_score_of(complete))["gpu_visibility"]["points"] == 0


def test_first_failure_request_repeatability_of_a_real_failing_case(tmp_path):
    path = case(tmp_path, "cpu-fail")
    items = _items(_score_of(path))
    ff = items["first_failure"]
    assert ff["points"] == 2 and "stage config (config_error)" in ff["evidence"], ff
    assert items["request"]["points"] == 1 and "not replayed" in items["request"]["missing"]
    assert items["repeatability"]["points"] == 2 and "failed at stage config" in items["repeatability"]["evidence"]


def test_first_failure_lost(tmp_path):
    path = case(tmp_path, "cpu-fail")
    stages = os.path.join(path, "run-002", "stages.json")
    item = _items(_score_of(path))["first_failure"]
    # vLLM's traceback lines carry no stamp: the last stamped line before it bounds the time
    assert "last stamped line" in item["evidence"] and "run-002/hosts/localhost/logs/server.log" in item["evidence"]
    os.remove(os.path.join(path, "run-002", "hosts", "localhost", "logs", "server.log"))
    item = _items(_score_of(path))["first_failure"]
    assert item["points"] == 0 and "timestamp" in item["missing"]
    os.remove(stages)
    item = _items(_score_of(path))["first_failure"]
    assert item["points"] == 0 and "run-002/stages.json" in item["missing"]


def test_request_lost(complete):
    os.remove(os.path.join(complete, "run-002", "request.json"))
    item = _items(_score_of(complete))["request"]
    assert item["points"] == 0 and "repro_vllm_request_body" in item["how"]


def test_repeatability_lost(tmp_path):
    once = case(tmp_path, "cpu-ok", ["run-001", "run-002"])
    item = _items(_score_of(once))["repeatability"]
    assert item["points"] == 0 and "repro_vllm_repeat_clean" in item["how"]


def test_repeatability_when_the_failure_does_not_repeat(tmp_path):
    """run-011 failed (the port was taken by another process); run-007 with the same command passed."""
    path = case(tmp_path, "cpu-ok", ["run-006", "run-007", "run-010", "run-011"])
    score = _score_of(path)
    assert score["baseline_run"] == "run-011"
    item = _items(score)["repeatability"]
    assert item["points"] == 1 and "does not repeat" in item["missing"]


def test_bands_and_fingerprint_only_case(tmp_path):
    bands = [_score.band_of(n) for n in (14, 12, 11, 8, 7, 0)]
    assert bands == ["reproduce", "reproduce", "collect", "collect", "invalid", "invalid"]
    # out of a smaller maximum the floors are 12/14 and 8/14 of it: score x 14 >= 12 x max, score x 14 >= 8 x max
    assert [_score.band_of(n, 10) for n in (10, 9, 8, 6, 5, 0)] == [
        "reproduce", "reproduce", "collect", "collect", "invalid", "invalid"]
    assert [_score.band_of(n, 7) for n in (6, 5, 4, 3)] == ["reproduce", "collect", "collect", "invalid"]
    assert _score.band_of(0, 0) == "invalid"
    score = _score_of(case(tmp_path, "busy"))
    assert score["band"] == "invalid" and score["baseline_run"] is None
    assert _items(score)["command"]["how"].startswith("run playbooks/reproduce.yml")


def test_bad_input():
    with pytest.raises(_score.ScoreError):
        _score.score_runs("not runs")


def test_console_and_sheet(complete):
    score = _score_of(complete)
    assert _score.score_lines(score) == ["summary | case cpu-ok | baseline score 14/14 (reproduce) | no point lost"]
    assert "| host_driver | 2/2 |" in _score.score_markdown(score)


def _profile(name):
    """A shipped profile, read and validated with module_utils alone (ansible-test runs these tests without the
    controller's packages; the compatibility action loads it the same way)."""
    import yaml
    from ansible_collections.repro.vllm.plugins.module_utils.compat import _compat
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "profiles", name + ".yml")
    with open(path) as f:
        return _compat.validate_profile(yaml.safe_load(f), "profiles/%s.yml" % name, builtin=True)


def test_items_that_cannot_apply_under_the_profile(complete):
    """cpu-smoke asks for no GPU: host_driver and gpu_visibility get points null and leave max, whatever the runs
    hold (here a complete H200 fingerprint); a GPU profile scores the same runs on every item."""
    cpu = _score.score_runs(case_runs(complete), profile=_profile("cpu-smoke"))
    items = _items(cpu)
    for name in ("host_driver", "gpu_visibility"):
        assert items[name]["points"] is None and items[name]["missing"] is None and items[name]["how"] is None
        assert "not applicable under profile cpu-smoke" in items[name]["evidence"]
    assert (cpu["score"], cpu["max"], cpu["band"]) == (10, 10, "reproduce")
    gpu = _score.score_runs(case_runs(complete), profile=_profile("kimi-k3-h200"))
    assert (gpu["score"], gpu["max"]) == (14, 14) and all(i["points"] == 2 for i in gpu["items"])
    # only a profile document decides; a bare name (no document) keeps every item
    assert _score_of(complete)["max"] == 14


def test_decided_by_the_profile_never_by_what_the_run_lacked(tmp_path):
    """The real CPU records lack a kernel module line: under a GPU profile that loses host_driver points (0/2, not
    null); under cpu-smoke the item does not apply."""
    path = case(tmp_path, "cpu-ok", ["run-001", "run-002"])
    gpu = _score.score_runs(case_runs(path), profile=_profile("kimi-k3-h200"))
    assert _items(gpu)["host_driver"]["points"] == 0 and gpu["max"] == 14
    assert (gpu["score"], gpu["band"]) == (8, "collect")
    cpu = _score.score_runs(case_runs(path), profile=_profile("cpu-smoke"))
    assert _items(cpu)["host_driver"]["points"] is None and cpu["max"] == 10
    # 6 of 10: 6 x 14 = 84 >= 8 x 10 = 80 -> collect (the same 6 out of 14 would be invalid)
    assert (cpu["score"], cpu["band"]) == (6, "collect") and _score.band_of(6) == "invalid"
    lines = _score.score_lines(cpu)
    assert lines[0] == ("summary | case cpu-ok | baseline score 6/10 (collect) | not applicable under the profile: "
                        "host_driver, gpu_visibility | 4 point(s) lost: image, repeatability")
    lost = {line.split(" | ")[2]: line for line in lines[1:]}
    assert set(lost) == {"lost image 0/2", "lost repeatability 0/2"}
    assert "| missing: no second clean run" in lost["lost repeatability 0/2"]
    assert "| how: run the same attempt again from a clean start" in lost["lost repeatability 0/2"]
    assert all(len(line) < 600 for line in lines)
    md = _score.score_markdown(cpu)
    assert "## Baseline score: 6/10 (collect" in md and "| gpu_visibility | n/a |" in md


def _refused_container(tmp_path, rc_capture="probe_rlimit", runtime="podman"):
    """cpu-podman run-001/002 (real, podman 4.3.1), edited into a container the runtime refused to start: server.json's
    start gets the exit status of the real capture podman-4.3.1/<rc_capture> (126: this VM refuses podman's default
    rlimits), its container.log that capture's stderr, outcome.json/stages.json a failure with no stage."""
    path = case(tmp_path, "cpu-podman", ["run-001", "run-002"])
    run = os.path.join(path, "run-002")
    captured = os.path.join(CONTAINERS, "podman-4.3.1", rc_capture)
    with open(captured + ".rc") as f:
        rc = int(f.read().strip())
    with open(captured + ".err") as f:
        err = f.read()

    def refused(d):
        d["start"].update(exit_code=rc, ready=False, outcome="exited")
        d["container"]["runtime"] = runtime
    edit(os.path.join(run, "hosts", "localhost", "server.json"), refused)
    with open(os.path.join(run, "hosts", "localhost", "logs", "container.log"), "w") as f:
        f.write(err)
    edit(os.path.join(run, "outcome.json"), lambda d: d.update(ok=False, stage="unknown", error_class=None))
    edit(os.path.join(run, "stages.json"), lambda d: d.update(stage="unknown", error_class=None, first_error=None))
    return path, rc


def test_a_container_the_runtime_refused_says_which_variable_helps(tmp_path):
    # issue 32 item 6: "exit 126, stage unknown" and no word of REPRO_VLLM_CONTAINER_ARGS
    path, rc = _refused_container(tmp_path)
    item = _items(_score_of(path))["first_failure"]
    assert rc == 126 and item["points"] == 0
    assert item["how"].startswith("localhost: podman refused to start the server's container (exit 126: the command "
                                  "in the container could not be invoked;")
    assert "repro_vllm_container_args" in item["how"] and "REPRO_VLLM_CONTAINER_ARGS" in item["how"]
    assert item["how"].endswith("keep the complete server log of every node from the first line (the start, not a "
                                "tail) and classify it again; raise VLLM_LOGGING_LEVEL=DEBUG for one run")


@pytest.mark.parametrize("capture,runtime", [("probe_tinypy", "podman"), ("probe_rlimit", "process")])
def test_no_runtime_hint_for_a_command_exit_or_a_process(tmp_path, capture, runtime):
    # rc 0 of a real run, or a server that ran as a process (its exit status is vLLM's own): no runtime hint
    path, _rc = _refused_container(tmp_path, capture, runtime)
    item = _items(_score_of(path))["first_failure"]
    assert "repro_vllm_container_args" not in (item["how"] or "")
