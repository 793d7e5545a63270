# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one verdict of a case (module_utils/decide/_verdict.py) and the hand-off that states it, on REAL frozen runs made by
this collection's playbooks (tests/fixtures/frozen-runs, README there): the compatibility boundary of kimi-k3-h200
on the replayed H200 capture, a failure at the minimal start, a failure at ladder layer long_context with its
rollback and a second clean run, healthy plays.  Each case is copied to a temporary folder first; where a test
changes a copy (an incomplete run added, an outcome edited) the test says so."""
from __future__ import annotations

import json
import os
import shutil
import tarfile

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.record import _evidence, _record
from ansible_collections.repro.vllm.plugins.module_utils.handoff import _handoff, _summary_md
from ansible_collections.repro.vllm.plugins.module_utils.decide import _score, _verdict

HERE = os.path.dirname(os.path.abspath(__file__))
FROZEN = os.path.join(HERE, "..", "..", "..", "..", "fixtures", "frozen-runs")


def _copy(tmp_path, case, runs=None):
    root = tmp_path / "records"
    dest = root / case
    dest.mkdir(parents=True)
    for name in sorted(os.listdir(os.path.join(FROZEN, case))):
        if name.startswith("run-") and (runs is None or name in runs):
            shutil.copytree(os.path.join(FROZEN, case, name), str(dest / name))
    return root


def _pack(root, case, runs=None):
    res = _handoff.build_package(str(root), case, runs=runs, stamp="20261202T000000Z")
    with tarfile.open(res["path"], "r:gz") as tar:
        md = tar.extractfile("%s-handoff/summary.md" % case).read().decode()
        summary = json.loads(tar.extractfile("%s-handoff/summary.json" % case).read().decode())
    return res, md, summary


def test_vocabulary_is_closed_and_ordered():
    assert _verdict.VERDICTS == ("boundary", "collective_failed", "fails_at_minimal", "fails_at_layer", "refused",
                                 "incomplete", "healthy")


def test_boundary_from_the_real_h200_capture_with_kimi_k3_h200(tmp_path):
    root = _copy(tmp_path, "kimi-boundary")
    ans = _verdict.case_verdict(str(root / "kimi-boundary"))
    assert ans["verdict"] == "boundary"
    assert ans["verdict_detail"] == {"layer": None, "stage": None, "error_class": None, "run": "run-001",
                                     "rollback": "not_applicable", "facts": ["gpu_count", "gpus_per_host"]}
    assert ans["verdict_sentence"].startswith(
        "case kimi-boundary stops at the compatibility boundary: gpu_count, gpus_per_host (profile kimi-k3-h200")
    res, md, summary = _pack(root, "kimi-boundary")
    first = md.splitlines()[0]
    assert first == "# [Compatibility boundary]: " + ans["verdict_sentence"]
    assert "every attempt passed" not in md
    assert summary["format"] == 2 and summary["verdict"] == "boundary"
    assert summary["verdict_detail"] == ans["verdict_detail"] and summary["verdict_sentence"] == ans["verdict_sentence"]
    # the violations (fact, required, found, fix) lead the hand-off, before the environment
    head = md.split("## Your current environment")[0]
    assert "| fact | host | required | found | fix |" in head
    assert "| gpus_per_host | localhost | exactly 8 GPUs on each host | 1 GPUs |" in head
    assert "| gpu_count | job | at least 16 H200 GPUs across the job |" in head
    assert [v["fact"] for v in summary["compatibility"]["violations"]] == ["gpus_per_host", "gpu_count"]
    # nothing was started: those items say not applicable, never unknown
    items = summary["items"]
    assert items["rollback"]["value"] == "not applicable" and items["repeat"]["value"] == "not applicable"
    assert items["first_exception"]["value"] == "not applicable" and items["command"]["value"] == "not applicable"
    # the environment tables appear once (the details block), items 1-4 point at it
    assert md.count("| host | driver | kernel module |") == 1


def test_fails_at_minimal_with_history(tmp_path):
    root = _copy(tmp_path, "cpu-fail")
    res, md, summary = _pack(root, "cpu-fail")
    assert summary["verdict"] == "fails_at_minimal"
    assert summary["verdict_detail"] == {"layer": None, "stage": "config", "error_class": "config_error",
                                         "run": "run-005", "rollback": "not_applicable", "facts": []}
    assert md.splitlines()[0] == ("# [Configuration refused by vLLM]: case cpu-fail fails at the minimal start: "
                                  "config_error (stage config, "
                                  "run-005; rollback not applicable)")
    # the latest play is run-004..006; the first reproduce.yml is history below it
    assert summary["play"]["play_id"] == "run-004" and summary["play"]["runs"] == ["run-004", "run-005", "run-006"]
    assert [(h["play_id"], h["verdict"]) for h in summary["history"]] == [("run-001", "fails_at_minimal")]
    assert "Earlier plays of this case" in md
    items = summary["items"]
    assert items["rollback"]["value"] == "not applicable"
    assert items["repeat"]["value"] == "not tried" and items["repeat"]["failed_run"] == "run-005"
    assert items["command"]["run"] == "run-005" and "99999" in items["command"]["hosts"]["localhost"]["argv"]
    # sources are paths inside the package, never the controller's
    blob = json.dumps(summary)
    assert "/srv/records" not in blob
    assert items["first_exception"]["file"] == "runs/run-005/hosts/localhost/logs/server.log"
    assert items["first_exception"]["source"] == "runs/run-005/stages.json"
    # the first exception's time: the same answer the score gives (the last stamped line before the traceback)
    run = _evidence.read_run(str(root / "cpu-fail" / "run-005"))
    stamp = _score.first_error_stamp(run, run["parts"]["stages.json"]["first_error"])
    assert stamp and items["first_exception"]["timestamp"] == _handoff.package_path(stamp)


def test_fails_at_layer_with_rollback_and_a_repeated_failure(tmp_path):
    root = _copy(tmp_path, "cpu-layer")
    res, md, summary = _pack(root, "cpu-layer")
    assert summary["verdict"] == "fails_at_layer"
    assert summary["verdict_detail"] == {"layer": "long_context", "stage": "config", "error_class": "config_error",
                                         "run": "run-004", "rollback": "returned", "facts": []}
    assert md.splitlines()[0].startswith(
        "# [Configuration refused by vLLM]: case cpu-layer fails at ladder layer long_context: config_error (stage "
        "config, run-004; ")
    items = summary["items"]
    # the command item: the argv that failed, as started, with the production command's derivation beside it
    cmd = items["command"]
    assert cmd["run"] == "run-004" and cmd["failed"] is True
    argv = cmd["hosts"]["localhost"]["argv"]
    assert argv[argv.index("--max-model-len") + 1] == "99999999"
    prod = cmd["production"]
    assert prod["value"] == "recorded" and prod["run"] == "run-002"
    assert prod["removed"]["long_context"][0]["item"] == "--max-model-len 99999999"
    assert prod["removed"]["prefix_cache"][0]["layer"] == "prefix_caching"
    assert "removed: long_context" in md and "the command that failed, as started" in md
    # rollback run-005 came back; run-006 is the second clean run of the failure and failed the same way
    assert items["rollback"]["value"] == "returned" and items["rollback"]["runs"][0]["run"] == "run-005"
    assert items["repeat"]["value"] == "yes"
    assert [(r["run"], r["repeats"], r["declared"]) for r in items["repeat"]["runs"]] == [("run-006", "run-004", True)]
    assert items["first_exception"]["run"] == "run-004"
    assert items["first_exception"]["timestamp"].startswith("12-02 04:00:39 (last stamped line 10 before line 53 of "
                                                            "runs/run-004/hosts/localhost/logs/server.log")


def test_expectation_not_met_is_a_layer_failure(tmp_path):
    # EDITED copy: run-003 (prefix_caching, served) gets expectation_met false, as a layer that served without a
    # prefix-cache hit records it; only _verdict reads it here (the manifest no longer matches, so no package)
    root = _copy(tmp_path, "cpu-layer", runs=["run-001", "run-002", "run-003"])
    path = root / "cpu-layer" / "run-003" / "outcome.json"
    outcome = json.loads(path.read_text())
    assert outcome["ok"] is True and outcome["layer"] == "prefix_caching"
    outcome["expectation_met"] = False
    os.chmod(str(path), 0o644)
    path.write_text(json.dumps(outcome))
    ans = _verdict.case_verdict(str(root / "cpu-layer"))
    assert ans["verdict"] == "fails_at_layer"
    assert ans["verdict_detail"] == {"layer": "prefix_caching", "stage": None, "error_class": "expectation_not_met",
                                     "run": "run-003", "rollback": None, "facts": []}


def test_healthy_play(tmp_path):
    root = _copy(tmp_path, "cpu-ok", runs=["run-001", "run-002", "run-003", "run-004", "run-005"])
    res, md, summary = _pack(root, "cpu-ok")
    assert summary["verdict"] == "healthy"
    assert summary["verdict_detail"] == {"layer": None, "stage": None, "error_class": None, "run": "run-004",
                                         "rollback": "not_applicable", "facts": []}
    assert md.splitlines()[0] == "# [No failure]: case cpu-ok is healthy: every attempt passed (minimal; last run-004)"
    items = summary["items"]
    # healthy repeats are not counted: there is no failure to reproduce
    assert items["repeat"]["value"] == "not applicable" and items["rollback"]["value"] == "not applicable"
    assert summary["history"][0]["verdict"] == "healthy"


def test_incomplete_run_both_shapes(tmp_path):
    root = _copy(tmp_path, "cpu-ok", runs=["run-001", "run-002", "run-003", "run-004", "run-005"])
    case = root / "cpu-ok"
    # a run left open by a killed play (the shape before issue 22: a run folder without manifest.json)
    (case / "run-006").mkdir()
    ans = _verdict.case_verdict(str(case))
    assert ans["verdict"] == "incomplete" and ans["verdict_detail"]["run"] == "run-006"
    assert ans["play"]["play_id"] == "run-003"
    shutil.rmtree(str(case / "run-006"))
    # the shape of issue 22: the run sealed incomplete, metadata.status says so
    run = _record.create_run(str(root), "cpu-ok")
    _record.write_part(run["path"], "notes.md", content="sealed by the next play\n")
    _record.freeze(run["path"], "0.1.0", case_id="cpu-ok", run_id=run["run_id"],
                   metadata={"case_id": "cpu-ok", "purpose": "minimal_startup", "step": "minimal",
                             "status": "incomplete", "seal_reason": "interrupted"})
    res, md, summary = _pack(root, "cpu-ok")
    assert summary["verdict"] == "incomplete"
    assert summary["verdict_detail"] == {"layer": None, "stage": None, "error_class": None, "run": "run-006",
                                         "rollback": None, "facts": []}
    assert md.splitlines()[0] == ("# [Incomplete run]: case cpu-ok is incomplete: run-006 (minimal) was not finished: "
                                  "interrupted")


def test_status_from_the_manifest_first_else_derived():
    base = {"run": "run-002", "frozen": True, "metadata": {}, "parts": {"outcome.json": {"ok": False}}}
    assert _verdict.run_status(base) == "failed"
    assert _verdict.run_status(dict(base, metadata={"status": "refused"})) == "refused"
    assert _verdict.run_status(dict(base, parts={"outcome.json": {"ok": False, "refused": True}})) == "refused"
    assert _verdict.run_status(dict(base, frozen=False, parts={})) == "incomplete"
    refused = dict(base, parts={"outcome.json": {"ok": False, "refused": True, "step": "long_context",
                                                 "layer": "long_context", "summary": "two variables at once"}})
    ans = _verdict.verdict_of_runs([refused], "c")
    assert ans["verdict"] == "refused" and ans["verdict_detail"]["layer"] == "long_context"
    # issue 22's shape: the refusal is the run's status (its outcome need not say it)
    sealed = dict(base, metadata={"status": "refused", "step": "minimal"}, parts={"outcome.json": {"ok": False}})
    assert _verdict.verdict_of_runs([sealed], "c")["verdict"] == "refused"


def test_one_step_chooser_for_the_verdict_and_the_hand_off(tmp_path):
    # one order: outcome.json, changes.json, the manifest's step, the purpose; the hand-off shows "-" for none
    run = {"run": "run-003", "frozen": True, "metadata": {"step": "c", "purpose": "feature_layer"},
           "parts": {"outcome.json": {"step": "a"}, "changes.json": {"step": "b"}}}
    answers = []
    for drop in ("outcome.json", "changes.json", "metadata.step", "metadata.purpose"):
        answers.append((_verdict.run_step(run), _handoff._step(run)))
        if drop.startswith("metadata."):
            run["metadata"].pop(drop.split(".", 1)[1])
        else:
            run["parts"].pop(drop)
    answers.append((_verdict.run_step(run), _handoff._step(run)))
    assert answers == [("a", "a"), ("b", "b"), ("c", "c"), ("feature_layer", "feature_layer"), (None, "-")]
    coll = {"run": "run-004", "frozen": True, "metadata": {}, "parts": {"collective.json": {"ok": True}}}
    assert _verdict.run_step(coll) == _handoff._step(coll) == "collective"
    # on real frozen runs the two answer the same for every run
    for case in ("cpu-layer", "cpu-ok", "kimi-boundary"):
        for real in _verdict.case_runs(str(_copy(tmp_path, case) / case)):
            assert _handoff._step(real) == (_verdict.run_step(real) or "-")


def test_play_id_from_the_manifest_when_recorded():
    runs = [{"run": "run-%03d" % i, "frozen": True, "metadata": {"play_id": pid, "purpose": purpose}, "parts": {}}
            for i, (pid, purpose) in enumerate([("a", "fingerprint"), ("a", "summary"), ("b", "minimal_startup")], 1)]
    groups = _verdict.plays(runs)
    got = [(g["play_id"], [r["run"] for r in g["runs"]]) for g in groups]
    assert got == [("a", ["run-001", "run-002"]), ("b", ["run-003"])]


@pytest.mark.parametrize("case", ["busy", "slurm", "fp-h200"])
def test_fingerprint_only_cases_are_healthy_and_say_nothing_started(case, tmp_path):
    ans = _verdict.case_verdict(str(_copy(tmp_path, case) / case))
    assert ans["verdict"] == "healthy" and "no server was started" in ans["verdict_sentence"]


def test_derivation_with_secret_options_passes_the_scan():
    # the shape derive_minimal gives for a production command with --api-key and a kept --hf-token (both redacted)
    from ansible_collections.repro.vllm.plugins.module_utils.ladder._command import derive_minimal
    from ansible_collections.repro.vllm.plugins.module_utils.common._redact import scan_secrets
    argv = ["vllm", "serve", "/m", "--port", "8000", "--api-key", "sk-proj-" + "FAKE" * 8, "--hf-token",
            "hf_" + "FAKE" * 8, "--frobnicate-level", "3"]
    der = derive_minimal(argv, keep=["--hf-token"])
    prod = {"value": "recorded", "run": "run-002", "source": "runs/run-002/hosts/h/command.json", "kept":
            [e["item"] for e in der["kept"]], "removed": der["removed"], "unknown": ["--frobnicate-level 3"],
            "warnings": der["warnings"] + ["a warning naming --api-key <redacted>, then more"]}
    md = _summary_md._production_md(prod)
    assert "| removed: gateway | --api-key <redacted> | gateway |" in md and "- --frobnicate-level 3" in md
    assert scan_secrets(md) == [], md


@pytest.mark.parametrize("verdict,stage,error_class,prefix", [
    ("fails_at_minimal", "weight_loading", "weights_missing", "[Bug]: "),
    ("fails_at_layer", "request", "engine_dead", "[Bug]: "),
    ("fails_at_minimal", "config", "config_error", "[Configuration refused by vLLM]: "),
    ("fails_at_minimal", "environment", "port_in_use", "[Host environment]: "),
    ("boundary", None, None, "[Compatibility boundary]: "),
    ("collective_failed", "distributed_init", "nccl_error", "[Collective check failed]: "),
    ("refused", None, None, "[Refused before start]: "),
    ("incomplete", None, None, "[Incomplete run]: "),
    ("healthy", None, None, "[No failure]: "),
])
def test_the_title_says_what_the_verdict_is_and_bug_only_for_a_failure_in_vllm(verdict, stage, error_class, prefix):
    # issue 32 item 5: every title started [Bug]:, also a boundary stop where vLLM never started
    ans = {"verdict": verdict, "verdict_detail": {"stage": stage, "error_class": error_class}, "verdict_sentence": "S"}
    assert _verdict.title(ans) == prefix + "S"
    assert [v for v in _verdict.VERDICTS if v not in dict(_verdict.TITLES)] == []
