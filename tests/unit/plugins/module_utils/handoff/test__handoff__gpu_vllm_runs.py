# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The method on a real GPU: runs frozen by reproduce.yml on the lent H200 (vLLM 0.26.0, driver 580.159.04,
tests/fixtures/2026-12-04-580.159.04-h200-vllm-0.26.0, README there) read by today's code - the classifier on
every failure's server log, the case verdict and its sentence, the baseline score under h200-1gpu, the hand-off of
a GPU case, and replay's and diff's comparison of two GPU runs. CI has no GPU: every test reads frozen records."""
from __future__ import annotations

import json
import os
import shutil
import tarfile

import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _diff
from ansible_collections.repro.vllm.plugins.module_utils.record import _evidence
from ansible_collections.repro.vllm.plugins.module_utils.handoff import _handoff, _replay
from ansible_collections.repro.vllm.plugins.module_utils.logstage import _logstage
from ansible_collections.repro.vllm.plugins.module_utils.decide import _score, _verdict

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = os.path.join(HERE, "..", "..", "..", "..", "fixtures", "2026-12-04-580.159.04-h200-vllm-0.26.0")
RECORDS = os.path.join(CAPTURE, "runs")
HOST = "h200"


def _copy(tmp_path, case):
    dest = tmp_path / "records" / case
    shutil.copytree(os.path.join(RECORDS, case), str(dest))
    for base, dirs, files in os.walk(str(dest)):
        for name in dirs + files:
            os.chmod(os.path.join(base, name), 0o755 if name in dirs else 0o644)
    return tmp_path / "records"


def _log(case, run="run-002"):
    return os.path.join(RECORDS, case, run, "hosts", HOST, "logs", "server.log")


def _json(*parts):
    with open(os.path.join(RECORDS, *parts)) as f:
        return json.load(f)


# case -> (stage, error class, the first error line starts with, the case verdict's sentence after the case id)
FAILURES = {
    "gpu-kv-cache-too-small": (
        "engine_init", "oom", "ValueError: No available memory for the cache blocks.",
        "fails at the minimal start: oom (stage engine_init, run-002; rollback not applicable)"),
    "gpu-max-model-len-beyond-cache": (
        "engine_init", "oom", "ValueError: To serve at least one request with the model's max seq len (2048)",
        "fails at the minimal start: oom (stage engine_init, run-002; rollback not applicable)"),
    "gpu-foreign-process-allowed": (
        "cuda_init", "oom", "ValueError: Free memory on device cuda:0 (18.77/139.8 GiB) on startup is less than "
        "desired GPU memory utilization (0.3, 41.94 GiB).",
        "fails at the minimal start: oom (stage cuda_init, run-002; rollback not applicable)"),
    "gpu-invisible-device": (
        "cuda_init", "cuda_error", "vllm.third_party.pynvml.NVMLError_InvalidArgument: Invalid Argument",
        "fails at the minimal start: cuda_error (stage cuda_init, run-002; rollback not applicable)"),
    "gpu-tensor-parallel-2-on-1": (
        "config", "config_error", "Value error, World size (2) is larger than the number of available GPUs (1)",
        "fails at the minimal start: config_error (stage config, run-002; rollback not applicable)"),
    "gpu-weight-shard-damaged": (
        "weight_loading", "missing_file", "safetensors._safetensors_rust.SafetensorError: Error while deserializing "
        "header: incomplete metadata, file not fully covered",
        "fails at the minimal start: missing_file (stage weight_loading, run-002; rollback not applicable)"),
    "gpu-weight-shard-missing": (
        "weight_loading", "missing_file", "RuntimeError: Cannot find any model weights with",
        "fails at the minimal start: missing_file (stage weight_loading, run-002; rollback not applicable)"),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_each_gpu_failure_is_classified_from_its_frozen_log(case):
    stage, cls, first, _sentence = FAILURES[case]
    ans = _logstage.classify_files([_log(case)])
    got = (ans["stage"], ans["error_class"])
    assert got == (stage, cls), (case, got, ans["first_error"]["line"])
    assert ans["first_error"]["line"].startswith(first), ans["first_error"]["line"]
    assert ans["confidence"] in ("high", "medium")
    if cls == "oom":
        # where the memory ran out, and that the weights did load (a sizing problem, not a model too big)
        assert ans["oom"]["occurred"] and ans["oom"]["stage"] == stage
        assert ans["oom"]["memory_sizing"] is (stage == "engine_init")


# the verdict is the one the play froze (stages.json of the run): the classifier of that day placed the invisible
# device in config (the innermost frames were vLLM's model config asking the platform for the GPU's capability);
# today's classifier places it in cuda_init (above), and a new play of the case would say so
FROZEN_SENTENCE = {"gpu-invisible-device": "fails at the minimal start: config_error (stage config, run-002; "
                                           "rollback not applicable)"}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_each_gpu_failure_has_one_verdict_and_sentence(case):
    sentence = FROZEN_SENTENCE.get(case, FAILURES[case][3])
    ans = _verdict.case_verdict(os.path.join(RECORDS, case))
    assert ans["verdict"] == "fails_at_minimal"
    assert ans["verdict_sentence"] == "case %s %s" % (case, sentence)


def test_the_foreign_process_is_named_at_the_boundary_and_in_the_allowed_case():
    """Another job holding 120 GiB of the H200: without repro_vllm_allow_foreign the case stops at the boundary
    before vLLM starts, naming the process; allowed, vLLM's own start check fails in cuda_init with the free memory
    the fingerprint saw."""
    boundary = _verdict.case_verdict(os.path.join(RECORDS, "gpu-foreign-process-boundary"))
    assert boundary["verdict"] == "boundary"
    assert boundary["verdict_sentence"] == (
        "case gpu-foreign-process-boundary stops at the compatibility boundary: foreign_processes (profile h200-1gpu, "
        "run-001; vLLM was not started)")
    comp = _json("gpu-foreign-process-boundary", "run-001", "compatibility.json")
    (violation,) = comp["violations"]
    assert violation["fact"] == "foreign_processes" and violation["host"] == HOST
    assert "python3 on GPU 0 (123398 MiB)" in violation["found"]
    later = [r for r in os.listdir(os.path.join(RECORDS, "gpu-foreign-process-boundary")) if r != "run-001"]
    assert later == []  # vLLM was never started: no attempt run
    allowed = _json("gpu-foreign-process-allowed", "run-001", "compatibility.json")
    assert allowed["verdict"] == "pass" and [n["fact"] for n in allowed["notes"]] == ["foreign_processes"]
    fp = _json("gpu-foreign-process-allowed", "run-001", "hosts", HOST, "fingerprint.json")
    (gpu,) = fp["gpu"]["gpus"]
    (held,) = fp["gpu"]["processes"]
    assert held["attribution"] == "foreign" and held["used_memory_mib"] == 123398 and "H200" in gpu["name"]


def test_cuda_graph_capture_is_healthy_with_its_time_and_memory():
    ans = _logstage.classify_files([_log("gpu-cuda-graphs")])
    assert ans["stage"] == "none" and ans["error_class"] is None
    text = open(_log("gpu-cuda-graphs")).read()
    assert "Capturing CUDA graphs (PIECEWISE)" in text and "Graph capturing finished in 1 secs, took 0.11 GiB" in text
    assert "--enforce-eager" not in _json("gpu-cuda-graphs", "run-002", "hosts", HOST, "command.json")["argv"]
    verdict = _verdict.case_verdict(os.path.join(RECORDS, "gpu-cuda-graphs"))
    assert verdict["verdict"] == "healthy"
    server = _json("gpu-cuda-graphs", "run-002", "hosts", HOST, "server.json")
    eager = _json("h200-ladder", "run-002", "hosts", HOST, "server.json")
    # torch.compile and the capture make the start slower than the eager minimal start of the ladder
    assert server["start"]["time_to_ready_s"] > eager["start"]["time_to_ready_s"]


def test_the_gpu_ladder_is_healthy_through_every_layer_one_gpu_holds():
    ans = _verdict.case_verdict(os.path.join(RECORDS, "h200-ladder"))
    assert ans["verdict"] == "healthy"
    assert ans["verdict_sentence"] == (
        "case h200-ladder is healthy: every attempt passed (minimal -> prefix_caching -> long_context -> output_limit "
        "-> concurrency_2 -> concurrency_n -> tool_calling; last run-008)")
    # GPU memory sampled beside the RSS in every attempt; the 0.3 of the H200 taken once the engine was up
    for n in range(2, 9):
        with open(os.path.join(RECORDS, "h200-ladder", "run-%03d" % n, "hosts", HOST, "memory.jsonl")) as f:
            samples = [json.loads(line) for line in f if line.strip()]
        assert samples and all(s["gpus"] and s["gpus"][0]["index"] == 0 for s in samples)
        assert max(s["gpus"][0]["memory_used_mib"] for s in samples) > 40000
    pc = _json("h200-ladder", "run-003", "prefix_cache.json")
    assert pc["expectation_met"] and pc["counters"]["after_shared_prefix"]["hits"] >= 128
    # vLLM's own report came from the wrapper's CLI subcommand (its #! line is /bin/sh)
    ce = _json("h200-ladder", "run-002", "hosts", HOST, "collect_env.json")
    assert ce["status"] == "ok" and ce["via"] == "vllm collect-env"
    assert "PyTorch version              : 2.11.0+cu130" in ce["output"] and "NVIDIA H200" in ce["output"]


def test_the_score_of_the_gpu_ladder_scores_the_gpu_items():
    runs = [_evidence.read_run(os.path.join(RECORDS, "h200-ladder", "run-%03d" % n)) for n in range(1, 9)]
    profile = {"name": "h200-1gpu", "gpu_models": ["H200"], "gpu_count_min": 1, "gpus_per_host": 1,
               "image_cuda": None, "driver_branch_min": 580}
    doc = _score.score_runs(runs, profile)
    items = {i["item"]: i for i in doc["items"]}
    assert items["host_driver"]["points"] == 2 and "580.159.04" in items["host_driver"]["evidence"]
    assert items["gpu_visibility"]["points"] == 2 and "NVIDIA H200" in items["gpu_visibility"]["evidence"]
    assert doc["max"] == 14 and doc["score"] == 10
    frozen = _json("h200-ladder", "run-009", "score.json")
    assert (frozen["score"], frozen["max"], frozen["band"]) == (doc["score"], doc["max"], doc["band"])


def test_the_hand_off_of_a_gpu_failure(tmp_path):
    root = _copy(tmp_path, "gpu-kv-cache-too-small")
    res = _handoff.build_package(str(root), "gpu-kv-cache-too-small", stamp="20261204T000000Z")
    top = "gpu-kv-cache-too-small-handoff"
    with tarfile.open(res["path"], "r:gz") as tar:
        md = tar.extractfile("%s/summary.md" % top).read().decode()
        summary = json.loads(tar.extractfile("%s/summary.json" % top).read().decode())
    assert summary["verdict"] == "fails_at_minimal"
    assert summary["verdict_detail"]["stage"] == "engine_init" and summary["verdict_detail"]["error_class"] == "oom"
    items = summary["items"]
    assert items["first_exception"]["file"] == "runs/run-002/hosts/h200/logs/server.log"
    assert "No available memory for the cache blocks" in md
    assert "0.001" in items["command"]["hosts"][HOST]["argv"]
    assert items["gpus"]["value"] != "unknown" and "H200" in json.dumps(items["gpus"])


def _attempt(case):
    return _replay.select_attempt(os.path.join(RECORDS, case))


def test_replay_compares_gpu_runs():
    """What replay answers when the receiver's attempt is another frozen GPU run: the same failure, another
    stage, and healthy."""
    kv = _attempt("gpu-kv-cache-too-small")
    same = _replay.replay_verdict(kv, _attempt("gpu-max-model-len-beyond-cache"))
    assert same["verdict"] == "reproduced" and same["here"]["stage"] == "engine_init"
    other = _replay.replay_verdict(kv, _attempt("gpu-foreign-process-allowed"))
    assert other["verdict"] == "different" and other["here"]["stage"] == "cuda_init"
    healthy = _replay.replay_verdict(kv, _attempt("gpu-cuda-graphs"))
    assert healthy["verdict"] == "not_reproduced"


def test_diff_names_the_one_change_between_two_gpu_starts():
    a = _evidence.read_run(os.path.join(RECORDS, "h200-ladder", "run-002"))
    b = _evidence.read_run(os.path.join(RECORDS, "gpu-kv-cache-too-small", "run-002"))
    diff = _diff.run_diff(a, b)
    changes = [(e["variable"], e["from"], e["to"]) for e in diff["hosts"][HOST]]
    assert any("gpu-memory-utilization" in v and f == "0.3" and t == "0.001" for v, f, t in changes), changes
