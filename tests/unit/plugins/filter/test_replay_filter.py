# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The replay filters (controller side): errors reach the play as AnsibleFilterError naming the fix, and the
fronts answer what module_utils/handoff/_replay.py answers."""

from __future__ import annotations

import os
import shutil

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter import replay as F

PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "profiles")

ATTEMPT = {"run": "run-002", "argv": ["vllm", "serve", "/m", "--port", "8391", "--api-key", "<redacted:api_key:0123abcd>"],
           "env": {}, "request": {"route": "/v1/completions", "body": {}}, "image_digest": None}


def test_filters_are_registered():
    assert set(F.FilterModule().filters()) == {"_records_root", "_replay_profile", "_replay_plan", "_replay_pairs",
                                               "replay_verdict", "_replay_document", "_replay_unpacked_lines", "_replay_lines",
                                               "_replay_precheck", "_replay_profile_vars"}


def test_records_root_is_resolved_against_the_working_directory_never_pwd(tmp_path, monkeypatch):
    monkeypatch.chdir(str(tmp_path))
    monkeypatch.setenv("PWD", "/somewhere/else")
    assert F.records_root(None) == os.path.join(str(tmp_path), "records")
    assert F.records_root("") == os.path.join(str(tmp_path), "records")
    assert F.records_root("out/rec") == os.path.join(str(tmp_path), "out", "rec")
    assert F.records_root("/srv/records/") == "/srv/records"


def test_replay_profile_reads_the_package_file_when_it_is_there(tmp_path):
    # the collection's own cpu-smoke compatibility profile, as a package would carry it under profile/
    prof = tmp_path / "package" / "profile" / "cpu-smoke.yml"
    prof.parent.mkdir(parents=True)
    shutil.copy(os.path.join(PROFILES, "cpu-smoke.yml"), str(prof))
    # the file alone: never both a name and a file (the compatibility role refuses both)
    assert F.replay_profile({"profile_file": str(prof), "profile": "kimi-k3-h200"}) == \
        {"profile": "", "profile_file": str(prof), "source": "package_profile_file"}
    # no file (and no text of it): the manifest's profile, else cpu-smoke
    assert F.replay_profile({"profile_file": str(tmp_path / "gone.yml")}) == \
        {"profile": "cpu-smoke", "profile_file": "", "source": "default"}
    prof.write_text("name: [unclosed\n")  # the change this test makes: a profile file that is not YAML
    with pytest.raises(AnsibleFilterError, match="cannot be read as YAML"):
        F.replay_profile({"profile_file": str(prof)})


def test_replay_profile_before_the_unpack_reads_the_checked_text_and_takes_the_receivers_override(tmp_path):
    with open(os.path.join(PROFILES, "cpu-smoke.yml")) as f:
        text = f.read()
    checked = {"profile_file": str(tmp_path / "c" / "package" / "profile" / "cpu-smoke.yml"), "profile_text": text,
               "profile": "kimi-k3-h200"}
    chosen = F.replay_profile(checked)
    assert chosen == {"profile": "", "profile_file": checked["profile_file"], "source": "package_profile_file"}
    # replay.yml set both variables to the choice and reads them back: an extra variable shows as another value
    assert F.replay_profile(checked, "cpu-smoke", checked["profile_file"]) == \
        {"profile": "cpu-smoke", "profile_file": "", "source": "repro_vllm_profile"}
    assert F.replay_profile(checked, "", "/mine/p.yml") == \
        {"profile": "", "profile_file": "/mine/p.yml", "source": "repro_vllm_profile_file"}
    assert F.replay_profile(checked, "", checked["profile_file"]) == chosen
    # a file always wins, also over a name given beside it (issue 32 item 6)
    assert F.replay_profile(checked, "cpu-smoke", "/mine/p.yml") == \
        {"profile": "", "profile_file": "/mine/p.yml", "source": "repro_vllm_profile_file"}
    # a package's compatibility profile that is not a valid profile is refused before the unpack, naming the override
    broken = dict(checked, profile_text=text.replace("gpu_count_min: 0", "gpu_count_min: many"))
    with pytest.raises(AnsibleFilterError, match="gpu_count_min.*nothing was unpacked.*repro_vllm_profile=<name>"):
        F.replay_profile(broken)
    # ... and its override works without reading it
    assert F.replay_profile(broken, "cpu-smoke", checked["profile_file"])["profile"] == "cpu-smoke"
    # after the unpack: the file where the unpack put it; in check mode the manifest's profile stands in
    unpacked = {"profile_file": "/r/c-replay-x/package/profile/cpu-smoke.yml", "profile": "kimi-k3-h200"}
    assert F.replay_profile_vars(chosen, unpacked) == {"profile": "", "profile_file": unpacked["profile_file"]}
    assert F.replay_profile_vars(chosen, checked, True) == {"profile": "kimi-k3-h200", "profile_file": ""}
    assert F.replay_profile_vars({"profile": "cpu-smoke", "profile_file": "", "source": "repro_vllm_profile"}, unpacked) == \
        {"profile": "cpu-smoke", "profile_file": ""}


def test_precheck_refuses_before_the_unpack_on_the_receivers_of_the_play():
    with pytest.raises(AnsibleFilterError, match="ran on 2 node.*but this play has 1 \\(node02\\).*nothing was unpacked"):
        F.replay_precheck({"attempt": dict(ATTEMPT, nodes=["n1", "n2"])}, ["node02", "localhost"],
                          secret_args={"--api-key": "FAKE"})
    with pytest.raises(AnsibleFilterError, match="--api-key.*nothing was unpacked"):
        F.replay_precheck({"attempt": dict(ATTEMPT, nodes=["n1"])}, ["node02", "localhost"])
    plan = F.replay_precheck({"attempt": dict(ATTEMPT, nodes=["n1"], env={"HF_TOKEN": "<redacted:hf_token:0123abcd>"}),
                              "secret_variable_names": ["HF_TOKEN", "WANDB_API_KEY"]},
                             ["node02", "localhost"], secret_env={"WANDB_API_KEY": "FAKE"}, secret_args={"--api-key": "FAKE"})
    assert plan["step"]["nodes"] == ["node02"] and plan["missing_secrets"] == ["HF_TOKEN"]
    # the case id read back after replay.yml set it to the replay case: another one is an extra variable, ignored
    assert plan["ignored_case_id"] is None
    checked = {"case_id": "c-replay-x", "attempt": dict(ATTEMPT, nodes=["n1"])}
    assert F.replay_precheck(checked, ["node02"], secret_args={"--api-key": "FAKE"}, case_id="c")["ignored_case_id"] == "c"
    assert F.replay_precheck(checked, ["node02"], secret_args={"--api-key": "FAKE"},
                             case_id="c-replay-x")["ignored_case_id"] is None


UNPACKED = {"case_id": "c-replay-x", "case_dir": "/r/c-replay-x", "original_case": "c", "runs": ["run-001", "run-002"],
            "files_checked": 12, "package": {"name": "c-handoff-20261201T031500Z.tar.gz", "sha256": "ab" * 32,
                                             "sha256_file_checked": True},
            "attempt": dict(ATTEMPT, step="minimal", ok=False, stage="config", error_class="config_error")}


def test_the_lines_after_the_unpack_name_a_case_handed_on_the_missing_secrets_then_the_package():
    plain = F.replay_unpacked_lines(UNPACKED, "cpu-smoke (default)")
    assert len(plain) == 3 and plain[1] == "replay | case c unpacked into /r/c-replay-x (origin.json)"
    handed = "replay | the workflow handed on case c (repro_vllm_result of handoff): ignored - a replay makes its own " \
        "case c-replay-x and writes nothing into c"
    # an extra repro_vllm_case_id (reproduce.yml's node hands it on to every later node): one line naming both cases
    ignored = "replay | repro_vllm_case_id=c ignored (an extra variable: in a workflow, handed on by an earlier node or " \
        "a survey) - this replay's case is c-replay-x (replay.json ignored_case_id)"
    missing = "replay | WARNING: the package names the secret variable(s) HF_TOKEN, WANDB_API_KEY and this replay does " \
        "not supply them: the replay starts without them, and a different answer may come from that. Supply them with " \
        "-e '{\"repro_vllm_secret_env\": {\"NAME\": \"...\"}}' (never through the package)."
    lines = F.replay_unpacked_lines(UNPACKED, "cpu-smoke (default)", handed_result={"purpose": "handoff", "case_id": "c"},
                                    ignored_case_id="c", missing=["HF_TOKEN", "WANDB_API_KEY"])
    assert lines == [handed, ignored, missing] + plain
    # the replay case itself given as the extra variable is not ignored; nothing handed on: nothing to say
    assert F.replay_unpacked_lines(UNPACKED, "cpu-smoke (default)", ignored_case_id="c-replay-x") == plain
    # check mode: what would be unpacked, and the profile the receivers would be judged against
    assert F.replay_unpacked_lines(UNPACKED, "h200-1gpu (package_manifest)", check_mode=True) == [
        "replay | check mode: c-handoff-20261201T031500Z.tar.gz checks out (12 files verified against the manifests); "
        "it would be unpacked into /r/c-replay-x and the receivers judged against profile h200-1gpu (package_manifest). "
        "The receiving hosts are fingerprinted in check mode; the attempt is not replayed."]


def test_replay_plan_stops_on_too_few_hosts_naming_them():
    with pytest.raises(AnsibleFilterError, match="replay_plan: .* ran on 2 node.*but this play has 1 \\(node02\\)"):
        F.replay_plan({"attempt": dict(ATTEMPT, nodes=["n1", "n2"])}, ["node02"])
    plan = F.replay_plan({"attempt": dict(ATTEMPT, nodes=["n1"], ok=True)}, ["node02"], secret_args={"--api-key": "FAKE"})
    assert plan["step"]["nodes"] == ["node02"] and plan["step"]["expected"] == "the package's result: healthy"
    assert F.replay_pairs(["n1"], ["node02", "localhost"]) == {"n1": "node02"}
    assert F.replay_document({}, None) is None


def test_a_secret_in_the_command_not_supplied_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="repro_vllm_replay_secret_args"):
        F.replay_plan({"attempt": dict(ATTEMPT, nodes=["n1"], ok=True)}, ["node02"])
    plan = F.replay_plan({"attempt": dict(ATTEMPT, nodes=["n1"], ok=True)}, ["node02"], secret_args={"--api-key": "FAKE"},
                         port="")
    assert plan["step"]["port"] == 8391 and plan["step"]["argv"][-1] == "FAKE"


def test_verdict_and_lines():
    bad = {"ok": False, "stage": "config", "error_class": "config_error", "first_error": None}
    assert F.replay_verdict(bad, dict(bad))["verdict"] == "reproduced"
    with pytest.raises(AnsibleFilterError):
        F.replay_verdict(bad, None)
    diff = {"hosts": {"n1->n2": [{"variable": "driver", "from": "580.159.04", "to": "570.195.03"}]}}
    assert F.replay_lines(diff) == ["replay | what is not the same here | n1->n2 | driver | package: 580.159.04 | here: 570.195.03"]
    assert "nothing" in F.replay_lines({"hosts": {}})[0]
