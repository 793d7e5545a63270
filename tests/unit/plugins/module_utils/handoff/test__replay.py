# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The receiving side of a hand-off (module_utils/handoff/_replay.py) on packages made by _handoff.build_package from the
real frozen runs in tests/fixtures/frozen-runs (cpu-fail: --max-model-len 99999 fails in config; cpu-ok: a healthy
minimal run, then runs on an EDITED r570 capture). What a test changes in a copy is said where it does it."""
from __future__ import annotations

import io
import json
import os
import stat
import tarfile

import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _diff
from ansible_collections.repro.vllm.plugins.module_utils.record import _evidence
from ansible_collections.repro.vllm.plugins.module_utils.handoff import _handoff, _replay

from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import case as copy_case, load
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.package_copies import rewrite


def _package(tmp_path, name, runs=None, as_name=None):
    case_dir = copy_case(tmp_path / "sender", name, runs=runs, as_name=as_name)
    res = _handoff.build_package(os.path.dirname(case_dir), as_name or name, stamp="20261201T010101Z")
    return res


def test_unpack_makes_a_new_case_with_frozen_runs_and_origin(tmp_path):
    pkg = _package(tmp_path, "cpu-fail")
    root = tmp_path / "receiver"
    res = _replay.unpack(pkg["path"], str(root), stamp="20261201T020202Z")
    assert res["records_root"] == str(root) and res["case_dir"] == str(root / res["case_id"])
    assert res["case_id"] == "cpu-fail-replay-20261201T020202Z" and res["original_case"] == "cpu-fail"
    assert res["package"]["sha256"] == pkg["sha256"] and res["package"]["sha256_file_checked"] is True
    assert res["runs"] == ["run-%03d" % n for n in range(1, 7)]
    for rid in res["runs"]:
        assert _replay.verify(os.path.join(res["case_dir"], rid))["ok"]
        assert stat.S_IMODE(os.stat(os.path.join(res["case_dir"], rid, "manifest.json")).st_mode) == 0o444
    origin = load(os.path.join(res["case_dir"], "origin.json"))
    assert origin["package"] == os.path.basename(pkg["path"]) and origin["sha256"] == pkg["sha256"]
    assert origin["original_case"] == "cpu-fail" and origin["runs"] == res["runs"]
    assert os.path.isfile(os.path.join(res["case_dir"], "package", "summary.json"))
    assert not os.path.exists(os.path.join(res["case_dir"], ".unpacking"))
    # a second replay in the same second never collides with the first
    again = _replay.unpack(pkg["path"], str(root), stamp="20261201T020202Z")
    assert again["case_id"] == "cpu-fail-replay-20261201T020202Z-2"
    # the sender's case is untouched
    assert sorted(os.listdir(str(tmp_path / "sender" / "records" / "cpu-fail"))) == sorted(res["runs"] + ["handoff"])


def test_a_changed_member_is_refused_naming_it_and_nothing_is_left(tmp_path):
    pkg = _package(tmp_path, "cpu-fail")

    def change(name, data):  # the tamper: one byte of a frozen run's request body
        return data.replace(b'"tiny"', b'"tinY"', 1) if name.endswith("runs/run-002/request.json") else data

    bad = rewrite(pkg["path"], str(tmp_path / "cpu-fail-handoff-20261201T010101Z.tar.gz"), change)
    root = tmp_path / "receiver"
    with pytest.raises(_replay.ReplayError) as err:
        _replay.unpack(bad, str(root), stamp="20261201T020202Z")
    assert "run-002/request.json" in str(err.value) and "changed" in str(err.value)
    assert os.listdir(str(root)) == []


def test_a_changed_host_part_is_refused(tmp_path):
    pkg = _package(tmp_path, "cpu-fail")

    def change(name, data):  # the tamper: the host part's command, inside its own manifest
        return data.replace(b"99999", b"99998", 1) if name.endswith("run-002/hosts/localhost/command.json") else data

    bad = rewrite(pkg["path"], str(tmp_path / "cpu-fail-handoff-20261201T010101Z.tar.gz"), change)
    with pytest.raises(_replay.ReplayError) as err:
        _replay.unpack(bad, str(tmp_path / "receiver"))
    assert "run-002/hosts/localhost/command.json" in str(err.value)


def test_check_mode_checks_the_manifests_and_writes_nothing(tmp_path):
    pkg = _package(tmp_path, "cpu-fail")
    res = _replay.unpack(pkg["path"], str(tmp_path / "receiver"), check_mode=True)
    assert res["files_checked"] > 0 and res["case_id"].startswith("cpu-fail-replay-")
    assert not (tmp_path / "receiver").exists()

    def change(name, data):  # the tamper: one byte of a frozen run's request body
        return data.replace(b'"tiny"', b'"tinY"', 1) if name.endswith("runs/run-002/request.json") else data

    bad = rewrite(pkg["path"], str(tmp_path / "cpu-fail-handoff-20261201T010101Z.tar.gz"), change)
    with pytest.raises(_replay.ReplayError, match="run-002/request.json"):
        _replay.unpack(bad, str(tmp_path / "receiver"), check_mode=True)


def test_sha256_mismatch_names_the_sha256_file(tmp_path):
    pkg = _package(tmp_path, "cpu-fail")
    with open(pkg["path"], "ab") as f:  # the tamper: bytes appended after the package was made
        f.write(b"\0")
    with pytest.raises(_replay.ReplayError) as err:
        _replay.unpack(pkg["path"], str(tmp_path / "receiver"))
    assert os.path.basename(pkg["path"]) + ".sha256" in str(err.value)
    assert not (tmp_path / "receiver").exists()


def test_unsafe_member_and_foreign_tar_are_refused(tmp_path):
    path = str(tmp_path / "x-handoff-20261201T010101Z.tar.gz")
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("x-handoff/../../etc/passwd")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(_replay.ReplayError) as err:
        _replay.unpack(path, str(tmp_path / "r"))
    assert "x-handoff/../../etc/passwd" in str(err.value)
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("something/else.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(_replay.ReplayError, match="not a hand-off package"):
        _replay.unpack(path, str(tmp_path / "r"))


def test_select_attempt_takes_the_last_failing_else_the_last_good(tmp_path):
    fail = _replay.unpack(_package(tmp_path / "a", "cpu-fail")["path"], str(tmp_path / "r"))
    att = _replay.select_attempt(fail["case_dir"])
    outcome = load(os.path.join(fail["case_dir"], att["run"], "outcome.json"))
    assert outcome["ok"] is False and att["stage"] == "config" and att["error_class"] == "config_error"
    assert att["run"] == "run-005"  # the second reproduce.yml: fingerprint run-004, minimal run-005, summary run-006
    assert att["environment_run_id"] == "run-004"
    assert "--max-model-len" in att["argv"] and att["nodes"] == ["localhost"]
    ok = _replay.unpack(_package(tmp_path / "b", "cpu-ok", runs=["run-001", "run-002", "run-003"])["path"],
                        str(tmp_path / "r"))
    good = _replay.select_attempt(ok["case_dir"])
    assert good["ok"] is True and good["run"] == "run-002" and good["environment_run_id"] == "run-001"


def test_replay_step_keeps_the_command_and_leaves_secrets_to_the_receiver():
    attempt = {"run": "run-002", "argv": ["vllm", "serve", "/m", "--host", "127.0.0.1", "--port", "8391",
                                          "--api-key", "<redacted:api_key:0123abcd>"],
               "env": {"HF_HUB_OFFLINE": "1", "HF_TOKEN": "<redacted:hf_token:89abcdef>"},
               "request": {"route": "/v1/completions", "body": {"model": "tiny"}, "timeout": 60, "repeat": 3},
               "image_digest": None}
    with pytest.raises(_replay.ReplayError) as err:
        _replay.replay_step(attempt)
    assert "--api-key" in str(err.value) and "repro_vllm_replay_secret_args" in str(err.value)
    step = _replay.replay_step(attempt, secret_env={"HF_TOKEN": "x"}, secret_args={"--api-key": "FAKE-key"}, port=9000)
    assert step["argv"] == ["vllm", "serve", "/m", "--host", "127.0.0.1", "--port", "9000", "--api-key", "FAKE-key"]
    assert step["env"] == {"HF_HUB_OFFLINE": "1"} and step["secret_env_needed"] == ["HF_TOKEN"]
    assert step["secret_env_supplied"] == ["HF_TOKEN"] and step["secret_env_missing"] == []
    assert step["port"] == 9000 and step["host"] == "127.0.0.1" and step["request"]["repeat"] == 1
    # a container command runs the image by its digest
    digest = "sha256:" + "a" * 64
    docker = dict(attempt, argv=["docker", "run", "--gpus", "all", "vllm/vllm-openai:v0.9.0", "--model", "/m"],
                  env={}, image_digest=digest)
    assert _replay.replay_step(docker)["argv"][4] == "vllm/vllm-openai@" + digest
    assert _replay.by_digest("reg:5000/v/vllm:1", "reg:5000/v/vllm@" + digest) == "reg:5000/v/vllm@" + digest


def _result(ok, stage, cls, line=None):
    return {"ok": ok, "stage": stage, "error_class": cls,
            "first_error": {"line": line, "file": "/srv/records/c/run-002/hosts/n1/logs/server.log", "context": ["x"]}
            if line else None}


def test_verdicts():
    pkg = _result(False, "config", "config_error", "Value error, max_model_len")
    same = _replay.replay_verdict(pkg, _result(False, "config", "config_error", "Value error, max_model_len"))
    assert same["verdict"] == "reproduced" and same["differences"] == [] and same["missing_secrets"] == []
    assert same["package_verdict"] == same["replay_verdict"] == "fails_at_minimal"
    assert same["package"]["first_error"]["file"] == "run-002/hosts/n1/logs/server.log"
    assert "context" not in same["package"]["first_error"]
    other = _replay.replay_verdict(pkg, _result(False, "weight_loading", "missing_file", "No such file"))
    assert other["verdict"] == "different"
    assert other["package"]["first_error"]["line"] != other["here"]["first_error"]["line"]
    healthy = _replay.replay_verdict(pkg, _result(True, "none", None))
    assert healthy["verdict"] == "not_reproduced" and healthy["here"] == {"stage": "none", "error_class": None,
                                                                          "first_error": None}
    assert (healthy["package_verdict"], healthy["replay_verdict"]) == ("fails_at_minimal", "healthy")
    # a healthy package replayed healthy is reproduced (the answer was not_reproduced before)
    both = _replay.replay_verdict(_result(True, "none", None), _result(True, "none", None))
    assert both["verdict"] == "reproduced" and both["package_verdict"] == both["replay_verdict"] == "healthy"
    assert both["summary"].startswith("reproduced: the package healthy, here healthy")
    assert _replay.replay_verdict(_result(True, "none", None), pkg)["verdict"] == "different"
    assert set(_replay.VERDICTS) == {"reproduced", "different", "not_reproduced"}


@pytest.mark.parametrize("package,here,package_verdict,verdict,pv,rv", [
    # a ladder layer's failure: the replay of that attempt is a failure of the same layer
    (dict(ok=False, stage="config", error_class="config_error", layer="long_context"),
     dict(ok=False, stage="config", error_class="config_error"), None, "reproduced", "fails_at_layer", "fails_at_layer"),
    (dict(ok=False, stage="config", error_class="config_error", layer="long_context"),
     dict(ok=True, stage="none", error_class=None), None, "not_reproduced", "fails_at_layer", "healthy"),
    # the same verdict but another error class is a different failure
    (dict(ok=False, stage="config", error_class="config_error"),
     dict(ok=False, stage="engine_init", error_class="oom"), None, "different", "fails_at_minimal", "fails_at_minimal"),
    # summary.json format 2 names the package's verdict: a boundary is no attempt failure, so it never matches one
    (dict(ok=False, stage="config", error_class="config_error"),
     dict(ok=False, stage="config", error_class="config_error"), "boundary", "different", "boundary", "fails_at_minimal"),
    (dict(ok=False, stage="engine_init", error_class="nccl"),
     dict(ok=True, stage="none", error_class=None), "collective_failed", "not_reproduced", "collective_failed", "healthy"),
    # a package that was only incomplete or refused did not fail: a healthy replay is different, not "not reproduced"
    (dict(ok=False, stage=None, error_class=None), dict(ok=True, stage="none", error_class=None), None, "different",
     "incomplete", "healthy"),
    (dict(ok=False, stage="config", error_class="config_error"), dict(ok=True, stage="none", error_class=None), "refused",
     "different", "refused", "healthy"),
    (dict(ok=True, stage="none", error_class=None), dict(ok=False, stage=None, error_class=None), None, "different",
     "healthy", "incomplete"),
    # an unknown verdict in a summary is not trusted: derived from the attempt
    (dict(ok=True, stage="none", error_class=None), dict(ok=True, stage="none", error_class=None), "splendid",
     "reproduced", "healthy", "healthy"),
])
def test_verdict_mapping(package, here, package_verdict, verdict, pv, rv):
    doc = _replay.replay_verdict(package, here, package_verdict=package_verdict)
    assert (doc["verdict"], doc["package_verdict"], doc["replay_verdict"]) == (verdict, pv, rv)
    assert doc["verdict"] in _replay.VERDICTS
    assert {doc["package_verdict"], doc["replay_verdict"]} <= set(_replay.CASE_VERDICTS)


def test_attempt_case_verdict_is_the_fallback_of_a_format_1_package():
    assert _replay.attempt_case_verdict(None) == "incomplete"
    assert _replay.attempt_case_verdict({"ok": False, "refused": True, "stage": "config"}) == "refused"
    assert _replay.attempt_case_verdict({"ok": False, "stage": "ready", "error_class": "expectation_not_met"},
                                        layer="prefix_cache") == "fails_at_layer"
    fail = {"ok": False, "stage": "config", "error_class": "config_error"}
    assert _replay.package_case_verdict({"format": 1}, fail) == ("fails_at_minimal", "attempt")
    assert _replay.package_case_verdict({"format": 2, "verdict": "boundary"}, fail) == ("boundary", "summary.json")
    assert _replay.package_case_verdict({"format": 2}, fail) == ("fails_at_minimal", "attempt")
    assert _replay.package_case_verdict(None, dict(fail, ok=True)) == ("healthy", "attempt")


def test_missing_secrets_are_named_and_may_explain_a_difference():
    replay = {"secret_variable_names": ["HF_TOKEN", "WANDB_API_KEY", "argv --api-key"],
              "attempt": {"env": {"HF_TOKEN": "<redacted:hf_token:0123abcd>", "VLLM_API_KEY": "<redacted:api_key:89abcdef>",
                                  "HF_HUB_OFFLINE": "1"}}}
    assert _replay.secret_names(replay) == ["HF_TOKEN", "VLLM_API_KEY", "WANDB_API_KEY"]
    assert _replay.missing_secrets(replay, {"HF_TOKEN": "FAKE"}) == ["VLLM_API_KEY", "WANDB_API_KEY"]
    assert _replay.missing_secrets(replay, None) == ["HF_TOKEN", "VLLM_API_KEY", "WANDB_API_KEY"]
    pkg = _result(False, "weight_loading", "auth_error", "401 Unauthorized")
    doc = _replay.replay_verdict(pkg, _result(True, "none", None), missing=["HF_TOKEN"])
    assert doc["verdict"] == "not_reproduced" and doc["missing_secrets"] == ["HF_TOKEN"]
    assert doc["summary"].endswith("the package's secret variable(s) HF_TOKEN not supplied here (repro_vllm_secret_env): "
                                   "the difference may come from them")
    # named, but not blamed, when the failure came back anyway
    same = _replay.replay_verdict(pkg, dict(pkg), missing=["HF_TOKEN"])
    assert same["verdict"] == "reproduced" and "HF_TOKEN not supplied here" in same["summary"]
    assert "may come from them" not in same["summary"]
    assert _replay.replay_verdict(pkg, dict(pkg))["missing_secrets"] == []


def test_another_driver_branch_is_a_difference(tmp_path):
    """cpu-ok run-001 (fingerprint on the real H200 capture, r580) against run-006 (fingerprint on the EDITED r570
    capture): the environment-only run diff names the driver, and not the GPU UUIDs of two hosts."""
    case_dir = copy_case(tmp_path, "cpu-ok", runs=["run-001", "run-006"])
    a = _evidence.read_run(os.path.join(case_dir, "run-001"))
    b = _evidence.read_run(os.path.join(case_dir, "run-006"))
    diff = _diff.run_diff(a, b, facts=_replay.ENVIRONMENT_FACTS)
    variables = [d["variable"] for d in _replay.differences(diff)]
    assert "driver" in variables and "cuda_driver" in variables
    assert not [v for v in variables if v.startswith(("env:", "command:", "request:"))]
    assert "gpu_map" not in variables and diff["facts"] == list(_replay.ENVIRONMENT_FACTS)
    lines = _replay.not_the_same_lines(diff)
    assert any("| driver | package: 580.159.04 | here: 570.172.08" in line for line in lines), lines
    doc = _replay.replay_verdict(_result(True, "none", None), _result(True, "none", None), diff)
    assert doc["verdict"] == "reproduced" and "driver" in doc["summary"]
    # the full run diff is unchanged by the restriction's existence
    assert "facts" not in _diff.run_diff(a, b)
    json.dumps(doc)


# ------------------------------------------------------------------ the choices replay.yml leaves to _replay
def test_choose_profile_from_what_the_package_carries():
    compat = {"name": "kimi-k3-h200", "gpu_models": ["NVIDIA H200"]}
    # a compatibility profile of the package: the file alone (a name beside it was refused: "not both")
    assert _replay.choose_profile("/c/package/profile/kimi.yml", compat, "cpu-smoke") == \
        {"profile": "", "profile_file": "/c/package/profile/kimi.yml", "source": "package_profile_file"}
    # the runs' variables file: its repro_vllm_profile, the file itself is not a profile
    run_vars = {"name": "x", "repro_vllm_profile": "kimi-k3-gb300", "repro_vllm_model": "/m"}
    assert _replay.choose_profile("/c/package/profile/vars.yml", run_vars, "cpu-smoke") == \
        {"profile": "kimi-k3-gb300", "profile_file": "", "source": "package_variables_file"}
    assert _replay.choose_profile("/c/p/vars.yml", {"repro_vllm_model": "/m"}, "kimi-k3-b300")["profile"] == "kimi-k3-b300"
    # no file, or not read: the replayed run's manifest, else cpu-smoke
    assert _replay.choose_profile(None, None, "kimi-k3-h200") == \
        {"profile": "kimi-k3-h200", "profile_file": "", "source": "package_manifest"}
    assert _replay.choose_profile("/c/p/x.yml", None, None) == {"profile": "cpu-smoke", "profile_file": "", "source": "default"}
    for chosen in (_replay.choose_profile("/c/package/profile/kimi.yml", compat, "cpu-smoke"),
                   _replay.choose_profile(None, None, "kimi-k3-h200")):
        assert bool(chosen["profile"]) != bool(chosen["profile_file"])


def test_profile_override_is_the_receivers_extra_variable():
    chosen = {"profile": "", "profile_file": "/c/package/profile/kimi.yml", "source": "package_profile_file"}
    assert _replay.profile_override(chosen, "", "/c/package/profile/kimi.yml") == chosen
    assert _replay.profile_override(chosen, None, None) == chosen
    assert _replay.profile_override(chosen, "cpu-smoke", "/c/package/profile/kimi.yml") == \
        {"profile": "cpu-smoke", "profile_file": "", "source": "repro_vllm_profile"}
    named = {"profile": "kimi-k3-h200", "profile_file": "", "source": "package_manifest"}
    assert _replay.profile_override(named, "kimi-k3-h200", "") == named
    assert _replay.profile_override(named, "kimi-k3-h200", "my.yml") == \
        {"profile": "", "profile_file": "my.yml", "source": "repro_vllm_profile_file"}
    # a file always wins, also over a name given beside it (issue 32 item 6)
    assert _replay.profile_override(named, "cpu-smoke", "my.yml") == \
        {"profile": "", "profile_file": "my.yml", "source": "repro_vllm_profile_file"}


def test_a_checked_package_says_before_the_unpack_what_replay_yml_decides(tmp_path):
    """A package made with a profile file (repro_vllm_handoff_profile_file: the collection's cpu-smoke profile):
    the check returns the attempt, the profile's text and the summary's secret names, and writes nothing."""
    case_dir = copy_case(tmp_path / "sender", "cpu-fail")
    prof = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "profiles", "cpu-smoke.yml")
    pkg = _handoff.build_package(os.path.dirname(case_dir), "cpu-fail", profile_file=prof, stamp="20261201T010101Z")
    root = tmp_path / "receiver"
    checked = _replay.unpack(pkg["path"], str(root), stamp="20261201T020202Z", check_mode=True)
    assert not root.exists()
    assert checked["profile_file"] == os.path.join(str(root), "cpu-fail-replay-20261201T020202Z", "package", "profile",
                                                   "cpu-smoke.yml")
    with open(prof) as f:
        assert checked["profile_text"] == f.read()
    att = checked["attempt"]
    assert att["run"] == "run-005" and att["stage"] == "config" and att["path"] is None and att["environment_run"] is None
    assert checked["profile"] and checked["summary"]["format"] >= 1
    chosen = _replay.choose_profile(checked["profile_file"], {"name": "cpu-smoke"}, checked["profile"])
    assert chosen["source"] == "package_profile_file"
    # unpacked with the check's stamp: the same case, the same file where the check said
    assert checked["stamp"] == "20261201T020202Z"
    unpacked = _replay.unpack(pkg["path"], str(root), stamp=checked["stamp"])
    assert unpacked["case_id"] == checked["case_id"]
    assert unpacked["profile_file"] == checked["profile_file"] and os.path.isfile(unpacked["profile_file"])
    assert _replay.profile_vars(chosen, unpacked) == {"profile": "", "profile_file": unpacked["profile_file"]}


def test_a_package_without_an_attempt_is_refused_before_the_unpack(tmp_path):
    pkg = _package(tmp_path, "cpu-ok", runs=["run-001"])  # the fingerprint run alone
    with pytest.raises(_replay.ReplayError, match="holds no attempt run"):
        _replay.unpack(pkg["path"], str(tmp_path / "receiver"), check_mode=True)
    assert not (tmp_path / "receiver").exists()


def test_node_pairs_take_the_receivers_in_order_never_the_controller_beside_them():
    assert _replay.receivers(["node02", "localhost"]) == ["node02"]
    assert _replay.receivers(["localhost"]) == ["localhost"]
    assert _replay.node_pairs(["node01"], ["node02", "node03", "localhost"]) == {"node01": "node02"}
    assert _replay.node_pairs(["a", "b"], ["node02", "localhost"]) == {"a": "node02"}


def test_attempt_plan_is_the_whole_step_on_the_first_hosts(tmp_path):
    unpacked = _replay.unpack(_package(tmp_path / "a", "cpu-fail")["path"], str(tmp_path / "r"))
    unpacked["attempt"] = _replay.select_attempt(unpacked["case_dir"])
    plan = _replay.attempt_plan(unpacked, ["node02", "node03"])
    step = plan["step"]
    assert step["nodes"] == ["node02"] and step["purpose"] == "replay" and step["argv"] == plan["argv"]
    assert step["expected"] == "the package's result: failed at config (config_error)"
    assert step["previous"]["run"] == "run-005" and step["previous"]["path"] == unpacked["attempt"]["path"]
    assert step["input"] == "replay of cpu-fail/run-005 from package %s (sha256 %s)" % (
        unpacked["package"]["name"], unpacked["package"]["sha256"])
    assert step["request"]["repeat"] == 1 and step["port"] == plan["port"]
    # a process: no container pin, so a moved tag is not allowed
    assert plan["container_pin"] is None and plan["allow_moved_tag"] is False
    pinned = dict(unpacked, attempt=dict(unpacked["attempt"], container={
        "runtime": "podman", "image": "localhost/repro-vllm-cpu:0.32.0", "image_id": "sha256:" + "1" * 64,
        "image_repo_digest": None, "run_ref": "x"}))
    assert _replay.attempt_plan(pinned, ["node02"])["allow_moved_tag"] is True
    with pytest.raises(_replay.ReplayError, match=r"ran on 1 node\(s\) \(localhost\) but this play has 0"):
        _replay.attempt_plan(unpacked, [])


def test_replay_document_names_both_runs_or_is_none_when_nothing_ran(tmp_path):
    unpacked = _replay.unpack(_package(tmp_path / "a", "cpu-fail")["path"], str(tmp_path / "r"))
    unpacked["attempt"] = _replay.select_attempt(unpacked["case_dir"])
    assert _replay.replay_document(unpacked, None) is None
    assert _replay.replay_document(unpacked, {"run": None}) is None
    here = {"run": "run-009", "ok": False, "stage": "config", "error_class": "config_error", "first_error": None}
    doc = _replay.replay_document(unpacked, here, {"hosts": {}, "summary": "no difference"}, case_id="c-replay-x")
    assert doc["verdict"] == "reproduced" and doc["package_run"] == "cpu-fail/run-005"
    # the package is made by this collection's hand-off: its summary.json (format 2) says the case's verdict itself
    assert (doc["package_verdict"], doc["replay_verdict"], doc["package_verdict_from"]) == \
        ("fails_at_minimal", "fails_at_minimal", "summary.json")
    # a format-1 package (no verdict in summary.json): the verdict its replayed attempt supports
    v1 = dict(unpacked, summary={"format": 1})
    assert _replay.replay_document(v1, here, case_id="c-replay-x")["package_verdict_from"] == "attempt"
    assert doc["missing_secrets"] == []
    # a format-2 summary.json names the package's verdict; a secret it names and the receiver left out is listed
    v2 = dict(unpacked, summary={"format": 2, "verdict": "fails_at_minimal"}, secret_variable_names=["HF_TOKEN"])
    doc2 = _replay.replay_document(v2, dict(here, ok=True, stage="none", error_class=None), secret_env={})
    assert doc2["package_verdict_from"] == "summary.json" and doc2["verdict"] == "not_reproduced"
    assert doc2["missing_secrets"] == ["HF_TOKEN"] and doc2["summary"].endswith("the difference may come from them")
    assert _replay.replay_document(v2, here, secret_env={"HF_TOKEN": "FAKE"})["missing_secrets"] == []
    # issue 32 item 4: the environment the receiver added is a difference (names only; values redacted)
    added = _replay.replay_document(v2, dict(here, nodes=["node01"]), {"hosts": {}, "summary": "no difference"},
                                    secret_env={"HF_TOKEN": "FAKE", "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"})
    assert added["differences"] == [{"host": "node01", "variable": "env:VLLM_ALLOW_LONG_MAX_MODEL_LEN", "from": None,
                                     "to": "<redacted>"}]
    assert "not the same here: env:VLLM_ALLOW_LONG_MAX_MODEL_LEN" in added["summary"] and "FAKE" not in str(added)
    assert doc["run"] == "c-replay-x/run-009" and doc["diff"] == "no difference" and doc["origin"] == unpacked["origin"]
    # an extra repro_vllm_case_id the replay ignored is named; none given: null
    assert doc["ignored_case_id"] is None
    assert _replay.replay_document(unpacked, here, case_id="c-replay-x", ignored_case_id="cpu-fail")["ignored_case_id"] == "cpu-fail"
    assert _replay.replay_document(unpacked, here)["diff"] is None
    lines = _replay.unpacked_lines(unpacked, "cpu-smoke")
    assert lines[2] == "replay | replaying run-005 (%s): failed at config (config_error) in the package; profile cpu-smoke" \
        % unpacked["attempt"]["step"]
    assert "checked against its .sha256" in lines[0] and unpacked["case_dir"] in lines[1]


def test_a_package_whose_server_ran_in_a_container_replays_in_that_image_by_id():
    image_id = "sha256:" + "1" * 64
    ran = {"runtime": "podman", "image": "localhost/repro-vllm-cpu:0.32.0", "image_id": image_id,
           "image_repo_digest": "localhost/repro-vllm-cpu@sha256:" + "2" * 64, "run_ref": "x"}
    attempt = {"run": "run-003", "argv": ["vllm", "serve", "/m", "--port", "8011"], "env": {},
               "request": {}, "image_digest": None, "container": ran}
    step = _replay.replay_step(attempt)
    assert step["runtime"] == "podman" and step["image"] == "localhost/repro-vllm-cpu:0.32.0"
    pin = step["container_pin"]
    assert pin["image_id"] == image_id and pin["run_ref"] == image_id and pin["reference"] == step["image"]
    assert pin["pinned_by"] == "the package (run-003)"
    # a production run command keeps its reference (the runtime runs the pinned id), never rewritten to a digest
    run_cmd = dict(attempt, argv=["podman", "run", "--shm-size", "1g", "localhost/repro-vllm-cpu:0.32.0", "/m"])
    step = _replay.replay_step(run_cmd)
    assert step["argv"][4] == "localhost/repro-vllm-cpu:0.32.0" and step["container_pin"]["image_id"] == image_id
    # a process replays as a process
    plain = _replay.replay_step(dict(attempt, container=None))
    assert plain["runtime"] == "process" and plain["container_pin"] is None


def test_judge_is_the_verdict_play_in_one_answer(tmp_path):
    """replay.yml's last play: replay.json, the run sheet's section, the console line (its record added by the
    play) and the classification handed on; none of them when the attempt did not run (check mode)."""
    unpacked = _replay.unpack(_package(tmp_path / "a", "cpu-fail")["path"], str(tmp_path / "r"))
    unpacked["attempt"] = _replay.select_attempt(unpacked["case_dir"])
    # what the unpack of replay.yml added: an extra case id it ignored, the names of the receiver's secret variables
    unpacked.update(ignored_case_id="cpu-fail", secret_env_names=["VLLM_ALLOW_LONG_MAX_MODEL_LEN"])
    nothing = _replay.judge(unpacked, None, case_id="c-replay-x")
    assert nothing == {"replay": None, "section": None, "classification": None,
                       "line": "replay | case c-replay-x | no verdict: the attempt did not run | "}
    here = {"run": "run-009", "ok": False, "stage": "config", "error_class": "config_error", "first_error": None,
            "nodes": ["node02"]}
    diff = {"hosts": {"node01->node02": [{"variable": "driver", "from": "580.159.04", "to": "570.195.03"}]},
            "summary": "1 difference"}
    judged = _replay.judge(unpacked, here, diff, case_id="c-replay-x")
    doc = judged["replay"]
    assert doc == _replay.replay_document(unpacked, here, diff, case_id="c-replay-x", ignored_case_id="cpu-fail",
                                          secret_env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": None})
    assert doc["ignored_case_id"] == "cpu-fail" and doc["run"] == "c-replay-x/run-009"
    assert {"host": "node02", "variable": "env:VLLM_ALLOW_LONG_MAX_MODEL_LEN", "from": None,
            "to": "<redacted>"} in doc["differences"]
    assert judged["line"] == "replay | case c-replay-x | reproduced | %s" % doc["summary"]
    assert judged["section"] == "## Replay\n\n**%s**\n\n%s" % (
        doc["summary"], "replay | what is not the same here | node01->node02 | driver | package: 580.159.04 | here: 570.195.03")
    assert judged["classification"] == {"stage": "config", "error_class": "config_error"}
    # no run diff (it is not made in check mode): the section says nothing differs in what is compared
    assert _replay.judge(unpacked, here, case_id="c")["section"].endswith(
        "replay | what is not the same here: nothing in %s" % ", ".join(_replay.ENVIRONMENT_FACTS))
