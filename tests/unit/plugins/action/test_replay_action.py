# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The choices replay.yml takes before the unpack, in the repro.vllm.replay action (plugins/action/replay.py): the
profile (the package's, or the receiver's extra variable as the play reads it back), a profile that is not usable,
too few receiving hosts, a secret option not supplied - each refused before anything is unpacked - and what the
later plays read of the unpack. The packages are made by _handoff.build_package from the real frozen runs in
tests/fixtures/frozen-runs; what a test changes is said where it does it."""

from __future__ import annotations

import os
import shutil
import types

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.repro.vllm.plugins.action import replay as A
from ansible_collections.repro.vllm.plugins.module_utils.handoff import _handoff, _replay
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.decision_records import case as copy_case

PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "profiles")
ATTEMPT = {"run": "run-002", "argv": ["vllm", "serve", "/m", "--port", "8391", "--api-key", "<redacted:api_key:0123abcd>"],
           "env": {}, "request": {"route": "/v1/completions", "body": {}}, "image_digest": None}
KEY = {"--api-key": "FAKE"}


def _smoke_text():
    with open(os.path.join(PROFILES, "cpu-smoke.yml")) as f:
        return f.read()


def _checked(tmp_path, **changes):
    """A checked package (what state=checked returns) whose profile/ file is the collection's cpu-smoke profile."""
    out = {"case_id": "c-replay-x", "case_dir": "/r/c-replay-x", "stamp": "20261201T020202Z", "records_root": "/r",
           "profile_file": str(tmp_path / "c-replay-x" / "package" / "profile" / "cpu-smoke.yml"),
           "profile_text": _smoke_text(), "profile": "kimi-k3-h200", "original_case": "c", "runs": ["run-001", "run-002"],
           "files_checked": 12, "package": {"name": "c-handoff-20261201T031500Z.tar.gz", "sha256": "ab" * 32,
                                            "sha256_file_checked": True},
           "attempt": dict(ATTEMPT, nodes=["n1"], step="minimal", ok=False, stage="config", error_class="config_error")}
    out.update(changes)
    return out


def test_the_package_choice_reads_the_unpacked_file_else_the_checked_text(tmp_path):
    checked = _checked(tmp_path)
    # before the unpack: the text the check returned; the file alone, never a name beside it
    assert A.package_choice(checked) == ({"profile": "", "profile_file": checked["profile_file"],
                                          "source": "package_profile_file"}, None)
    # after it: the file where the unpack put it (the text no longer needed)
    prof = tmp_path / "c-replay-x" / "package" / "profile" / "cpu-smoke.yml"
    prof.parent.mkdir(parents=True)
    shutil.copy(os.path.join(PROFILES, "cpu-smoke.yml"), str(prof))
    assert A.package_choice(dict(checked, profile_text=None))[0]["source"] == "package_profile_file"
    # no file and no text: the manifest's profile, else cpu-smoke
    assert A.package_choice({"profile_file": None, "profile": "kimi-k3-h200"}) == \
        ({"profile": "kimi-k3-h200", "profile_file": "", "source": "package_manifest"}, None)
    assert A.package_choice({"profile_file": str(tmp_path / "gone.yml")})[0] == \
        {"profile": "cpu-smoke", "profile_file": "", "source": "default"}


def test_the_receivers_extra_variable_as_read_back_overrides_the_package(tmp_path):
    """replay.yml's play sets repro_vllm_profile, repro_vllm_profile_file and repro_vllm_case_id empty and hands the
    values it reads back to the action: empty (the inventory's are outranked by the play) is the package's choice;
    a value is an extra variable, the receiver's."""
    checked = _checked(tmp_path)
    own = A.decide(checked, "", "", "", ["node02", "localhost"], secret_args=KEY)
    assert own["profile"] == {"profile": "", "profile_file": checked["profile_file"], "source": "package_profile_file"}
    assert own["console"] == [] and own["ignored_case_id"] is None and own["missing_secrets"] == []
    # an extra repro_vllm_profile: checked as repro.vllm.compatibility checks it, its line on the console
    named = A.decide(checked, "cpu-smoke", "", "", ["node02", "localhost"], secret_args=KEY)
    assert named["profile"] == {"profile": "cpu-smoke", "profile_file": "", "source": "repro_vllm_profile"}
    assert named["console"] == ["compatibility | profile cpu-smoke (profiles/cpu-smoke.yml) is valid"]
    # an extra file always wins, also over a name given beside it (one rule with the compatibility role's)
    mine = tmp_path / "mine.yml"
    mine.write_text(_smoke_text().replace("name: cpu-smoke", "name: mine"))  # the one change: its name
    filed = A.decide(checked, "cpu-smoke", str(mine), "", ["node02"], secret_args=KEY)
    assert filed["profile"] == {"profile": "", "profile_file": str(mine), "source": "repro_vllm_profile_file"}
    assert filed["console"][0].startswith("compatibility | profile mine (")
    # the package's own choice given again changes nothing
    assert A.decide(checked, "", checked["profile_file"], "", ["node02"], secret_args=KEY)["profile"] == own["profile"]
    # a receiver's profile that is not usable is refused before anything is unpacked
    with pytest.raises(AnsibleActionFail, match="compatibility profile refused before any host is touched: .*unknown profile"):
        A.decide(checked, "no-such-profile", "", "", ["node02"], secret_args=KEY)
    with pytest.raises(AnsibleActionFail, match="compatibility profile refused before any host is touched: .*does not exist"):
        A.decide(checked, "", str(tmp_path / "gone.yml"), "", ["node02"], secret_args=KEY)


def test_a_broken_profile_file_of_the_package_is_refused_unless_the_receiver_overrides_it(tmp_path):
    # the change: a value of the wrong type in the package's compatibility profile
    broken = _checked(tmp_path, profile_text=_smoke_text().replace("gpu_count_min: 0", "gpu_count_min: many"))
    with pytest.raises(AnsibleActionFail, match="gpu_count_min.*nothing was unpacked.*repro_vllm_profile=<name>"):
        A.decide(broken, "", "", "", ["node02"], secret_args=KEY)
    # the override its refusal names works: the package's file is not read
    assert A.decide(broken, "cpu-smoke", "", "", ["node02"], secret_args=KEY)["profile"]["profile"] == "cpu-smoke"
    # a file that is not YAML at all: the same
    garbled = _checked(tmp_path, profile_text="name: [unclosed\n")
    with pytest.raises(AnsibleActionFail, match="cannot be read as YAML"):
        A.decide(garbled, "", "", "", ["node02"], secret_args=KEY)
    assert A.decide(garbled, "cpu-smoke", "", "", ["node02"], secret_args=KEY)["profile"]["source"] == "repro_vllm_profile"


def test_too_few_receivers_or_a_secret_option_not_supplied_refuse_before_the_unpack(tmp_path):
    two = _checked(tmp_path, attempt=dict(ATTEMPT, nodes=["n1", "n2"]))
    with pytest.raises(AnsibleActionFail, match=r"ran on 2 node.*but this play has 1 \(node02\).*nothing was unpacked"):
        A.decide(two, "cpu-smoke", "", "", ["node02", "localhost"], secret_args=KEY)
    with pytest.raises(AnsibleActionFail, match="--api-key.*repro_vllm_replay_secret_args.*nothing was unpacked"):
        A.decide(_checked(tmp_path), "cpu-smoke", "", "", ["node02", "localhost"])
    secret = _checked(tmp_path, secret_variable_names=["HF_TOKEN", "WANDB_API_KEY"],
                      attempt=dict(ATTEMPT, nodes=["n1"], env={"HF_TOKEN": "<redacted:hf_token:0123abcd>"}))
    assert A.decide(secret, "", "", "", ["node02", "localhost"], secret_env={"WANDB_API_KEY": "FAKE"},
                    secret_args=KEY)["missing_secrets"] == ["HF_TOKEN"]
    # an extra repro_vllm_case_id is ignored and named; none (the play's empty value) or the replay case itself: nothing
    checked = _checked(tmp_path)
    assert A.decide(checked, "", "", "c", ["node02"], secret_args=KEY)["ignored_case_id"] == "c"
    assert A.decide(checked, "", "", "c-replay-x", ["node02"], secret_args=KEY)["ignored_case_id"] is None
    assert A.decide(checked, "", "", None, ["node02"], secret_args=KEY)["ignored_case_id"] is None


def test_what_the_later_plays_read_of_the_unpack(tmp_path):
    checked = _checked(tmp_path)
    decided = A.decide(checked, "", "", "c", ["node02", "localhost"], secret_args=KEY)
    unpacked = dict(checked, profile_file="/r/c-replay-x/package/profile/cpu-smoke.yml")
    out = A.unpacked(unpacked, decided, ["node02", "localhost"], handed_result={"purpose": "handoff", "case_id": "c"},
                     secret_env={"HF_TOKEN": "FAKE"})
    assert out["profile_vars"] == {"profile": "", "profile_file": unpacked["profile_file"]}
    assert out["node_pairs"] == {"n1": "node02"} and out["secret_env_names"] == ["HF_TOKEN"]
    assert list(out["environment_facts"]) == list(_replay.ENVIRONMENT_FACTS) and "FAKE" not in str(out)
    assert out["lines"] == [
        "replay | the workflow handed on case c (repro_vllm_result of handoff): ignored - a replay makes its own case "
        "c-replay-x and writes nothing into c",
        "replay | repro_vllm_case_id=c ignored (an extra variable: in a workflow, handed on by an earlier node or a "
        "survey) - this replay's case is c-replay-x (replay.json ignored_case_id)",
        "replay | package c-handoff-20261201T031500Z.tar.gz (sha256 %s, checked against its .sha256), 12 files verified "
        "against the manifests of run-001, run-002" % ("ab" * 32),
        "replay | case c unpacked into /r/c-replay-x (origin.json)",
        "replay | replaying run-002 (minimal): failed at config (config_error) in the package; profile "
        "/r/c-replay-x/package/profile/cpu-smoke.yml (package_profile_file)"]
    # check mode: nothing unpacked, the manifest's profile stands in for the package's file
    out = A.unpacked(checked, decided, ["node02", "localhost"], check_mode=True)
    assert out["profile_vars"] == {"profile": "kimi-k3-h200", "profile_file": ""}
    assert out["lines"] == [
        "replay | repro_vllm_case_id=c ignored (an extra variable: in a workflow, handed on by an earlier node or a "
        "survey) - this replay's case is c-replay-x (replay.json ignored_case_id)",
        "replay | check mode: c-handoff-20261201T031500Z.tar.gz checks out (12 files verified against the manifests); "
        "it would be unpacked into /r/c-replay-x and the receivers judged against profile kimi-k3-h200 "
        "(package_profile_file). The receiving hosts are fingerprinted in check mode; the attempt is not replayed."]


def _action(args, check_mode):
    act = A.ActionModule.__new__(A.ActionModule)
    act._task = types.SimpleNamespace(args=dict(args), check_mode=check_mode)
    act._connection = types.SimpleNamespace(transport="local")
    return act


def test_in_check_mode_the_checked_package_answers_and_nothing_is_unpacked(tmp_path):
    """The action on a real package: checked by the module's code, then the unpack task in check mode."""
    case_dir = copy_case(tmp_path / "sender", "cpu-fail")
    pkg = _handoff.build_package(os.path.dirname(case_dir), "cpu-fail", stamp="20261201T010101Z")["path"]
    root = tmp_path / "receiver"
    checked = _replay.unpack(pkg, str(root), stamp="20261201T020202Z", check_mode=True)
    res = _action({"package": pkg, "checked": checked, "profile": "", "profile_file": "", "case_id": "cpu-fail",
                   "hosts": ["node02", "localhost"], "secret_env": {"HF_TOKEN": "FAKE-not-a-token"}}, True).run()
    assert not root.exists()
    assert res["case_id"] == "cpu-fail-replay-20261201T020202Z" and res["changed"] is False
    assert res["ignored_case_id"] == "cpu-fail" and res["node_pairs"] == {"localhost": "node02"}
    assert res["lines"][-1].startswith("replay | check mode: %s checks out" % os.path.basename(pkg))
    assert "FAKE-not-a-token" not in str(res) and res["secret_env_names"] == ["HF_TOKEN"]
    # what the check did not return is refused, naming what it wants
    with pytest.raises(AnsibleActionFail, match="state=checked"):
        _action({"package": pkg, "checked": {"case_id": "x"}}, True).run()
