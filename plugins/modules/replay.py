#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: replay
short_description: Check a hand-off package and unpack it into a new replay case
version_added: 0.2.0
description:
  - The first step of C(playbooks/replay.yml), on the controller. Checks the package's sha256 against the
    C(<name>.sha256) beside it (when there is one), every member path with the hand-off's own rules (relative, no
    C(..), no links, one C(<case>-handoff/) top folder) and every run, and each host part holding a manifest,
    against its C(manifest.json). A tampered package is refused with the member or the sha256 file named, and
    leaves nothing behind.
  - Unpacks into a NEW case C(<case>-replay-<YYYYMMDDTHHMMSSZ>) under O(records_root) (C(-2), C(-3)... when that
    name is taken) - the runs as they were frozen (read-only), the package's own files (C(summary.json),
    C(summary.md), C(profile/), pictures) under C(package/), and C(origin.json) with the package name, its
    sha256, the original case and its runs. The original case and its runs are never touched.
  - Returns the attempt to replay (the last failing attempt of the package, else its last good one) and the run
    the receiver's fingerprint is compared with.
  - Given O(checked), the unpack first takes the choices C(playbooks/replay.yml) makes before it (the profile, enough
    receiving hosts, every secret option of the command, an extra case id ignored) and refuses with nothing
    unpacked; O(state=judged) returns the verdict (C(replay.json)) of the replayed attempt.
  - Runs on the controller (C(delegate_to=localhost)); Python standard library only.
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
attributes:
  check_mode:
    support: full
    details:
      - Checks the sha256 and the member paths and returns the case name it would make; unpacks nothing. With
        O(checked), the checked package answers and nothing is read again.
  diff_mode:
    support: none
  idempotent:
    description: When run again with the same arguments, the module reports no change.
    support: none
    details:
      - Every call makes a new replay case.
options:
  package:
    description: The hand-off package (C(.tar.gz)) made by C(playbooks/handoff.yml); required unless O(state=judged).
    type: path
  records_root:
    description: The controller directory that holds one folder per case (C(records) when not given); the case is made here.
    type: path
  stamp:
    description: The UTC time in the replay case's name (C(YYYYMMDDTHHMMSSZ)); now when not given.
    type: str
  state:
    description:
      - C(unpacked) checks the package and unpacks it into the new case.
      - C(checked) checks it in a scratch folder outside O(records_root) that is removed again, and returns what
        C(playbooks/replay.yml) decides before the unpack (the attempt, the profile, the secret variables), so a
        package refused for any of those leaves nothing behind. Check mode does the same.
      - C(judged) compares the replayed attempt O(replayed) with the package's (O(unpacked)) and returns the verdict.
    type: str
    choices: [unpacked, checked, judged]
    default: unpacked
  checked:
    description:
      - What O(state=checked) returned. The unpack then decides first, on the controller, and refuses with nothing
        unpacked - the profile (the package's choice, unless O(profile) or O(profile_file) names another), a
        package's profile file that is not a valid profile when it is used, a receiver's profile that is not usable
        (as C(repro.vllm.compatibility) checks it), fewer receiving O(hosts) than the attempt had nodes, a redacted
        option of the command not in O(secret_args). O(records_root) and O(stamp) are the check's.
    type: dict
  profile:
    description:
      - With O(checked), the receiver's profile name (an extra C(repro_vllm_profile)); empty or the package's own
        choice leaves the package's.
    type: str
  profile_file:
    description: With O(checked), the receiver's profile file (an extra C(repro_vllm_profile_file)); it wins over a name.
    type: str
  case_id:
    description:
      - With O(checked), an extra C(repro_vllm_case_id), ignored and named (RV(ignored_case_id)) unless it is the
        replay case. With O(state=judged), the replay case.
    type: str
  hosts:
    description: The hosts of the play (the controller beside them is not a receiver); with O(checked).
    type: list
    elements: str
  secret_env:
    description: With O(checked), the receiver's secret environment (C(repro_vllm_secret_env)); only its names are read.
    type: dict
  secret_args:
    description: Values for the redacted options of the package's command (C(repro_vllm_replay_secret_args)).
    type: dict
  port:
    description: The port the replay serves on (C(repro_vllm_replay_port)); the package's when not given.
    type: int
  handed_result:
    description: The C(repro_vllm_result) an earlier workflow node handed on (named on the console, ignored).
    type: dict
  unpacked:
    description: With O(state=judged), what the unpack returned.
    type: dict
  replayed:
    description: With O(state=judged), the replayed attempt (C(_repro_vllm_attempt) of the attempt role), or null.
    type: dict
  diff:
    description: With O(state=judged), the run diff of the package's environment against the receiver's.
    type: dict
"""

EXAMPLES = r"""
- name: Unpack the package into a replay case
  repro.vllm.replay:
    package: /srv/incoming/gb300-oom-handoff-20261201T031500Z.tar.gz
    records_root: /srv/repro/records
  delegate_to: localhost
  run_once: true
  register: unpacked
"""

RETURN = r"""
case_id:
  description: The replay case made (or that would be made in check mode).
  returned: always
  type: str
  sample: gb300-oom-replay-20261201T101500Z
stamp:
  description: The UTC time in its name; give it to the unpack after a check, so both name the same case.
  returned: always
  type: str
  sample: 20261201T101500Z
case_dir:
  description: Its folder on the controller.
  returned: always
  type: str
records_root:
  description: The records root, resolved (absolute).
  returned: always
  type: str
original_case:
  description: The case the package was made from.
  returned: always
  type: str
runs:
  description: The runs of the package, each verified against its manifest.
  returned: always
  type: list
  elements: str
package:
  description: C(name), C(path), C(sha256) and C(sha256_file_checked) (true, or null when no C(.sha256) lay beside it).
  returned: always
  type: dict
profile_file:
  description: The unpacked C(profile/<file>) of the package, or null.
  returned: always
  type: str
profile:
  description: The compatibility profile the replayed attempt was judged against (its manifest), or null.
  returned: success
  type: str
profile_text:
  description: The text of the package's C(profile/<file>) (null when there is none, or when it is over 256 KiB).
  returned: success and O(state=checked) or check mode
  type: str
summary:
  description:
    - From the package's C(summary.json) - C(format), C(verdict), C(verdict_detail), C(verdict_sentence) (format 2;
      null in a format-1 package).
  returned: success
  type: dict
secret_variable_names:
  description: Names (never values) of the secret variables the package's summary lists.
  returned: success
  type: list
  elements: str
attempt:
  description:
    - The attempt replayed - C(run), C(step), C(nodes), C(argv), C(env) (redacted as in the package), C(request),
      C(image), C(image_digest), C(ok), C(stage), C(error_class), C(first_error), C(identity),
      C(environment_run) (the package run the receiver's fingerprint is compared with).
  returned: success (its paths null with O(state=checked) or in check mode)
  type: dict
files_checked:
  description: Files whose size and sha256 were verified against the manifests.
  returned: always
  type: int
origin:
  description: The content of C(origin.json).
  returned: success and not in check mode
  type: dict
profile_vars:
  description: C(profile) and C(profile_file), the variables the roles judge the receivers with (the package's
    file where the unpack put it; in check mode the profile its manifest names stands in for it).
  returned: success and O(checked) given
  type: dict
profile_source:
  description:
    - Where that profile comes from - C(package_profile_file), C(package_variables_file), C(package_manifest),
      C(default), C(repro_vllm_profile) or C(repro_vllm_profile_file).
  returned: success and O(checked) given
  type: str
ignored_case_id:
  description: The extra C(repro_vllm_case_id) the replay ignored, or null.
  returned: success and O(checked) given
  type: str
missing_secrets:
  description: The package's secret variables O(secret_env) does not supply.
  returned: success and O(checked) given
  type: list
  elements: str
secret_env_names:
  description: The names (never the values) of O(secret_env), for the verdict.
  returned: success and O(checked) given
  type: list
  elements: str
lines:
  description: The console lines after the unpack (a case handed on or given and ignored, the secrets not
    supplied, where the package came from and what is replayed; in check mode what would be).
  returned: success and O(checked) given
  type: list
  elements: str
node_pairs:
  description: The package's nodes paired in order with the receiving O(hosts) (C(package node -> receiving host)).
  returned: success and O(checked) given
  type: dict
environment_facts:
  description: The environment facts of the run diff a replay compares.
  returned: success and O(checked) given
  type: list
  elements: str
console:
  description: The compatibility check's line of a receiver's profile (printed by the console callback).
  returned: success and O(checked) given
  type: list
  elements: str
replay:
  description: The content of C(replay.json) (its keys in C(docs/replay.md)), or null when the attempt did not run.
  returned: O(state=judged)
  type: dict
section:
  description: The replay's section of the run sheet (C(## Replay), the summary, what is not the same here).
  returned: O(state=judged)
  type: str
line:
  description: The console's verdict line, without the record it is written into.
  returned: O(state=judged)
  type: str
classification:
  description: C(stage) and C(error_class) of the replayed attempt, or null when none ran.
  returned: O(state=judged)
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.repro.vllm.plugins.module_utils.record import _evidence
from ansible_collections.repro.vllm.plugins.module_utils.handoff import _replay
from ansible_collections.repro.vllm.plugins.module_utils.record._record import RecordError


def main():
    module = AnsibleModule(
        argument_spec=dict(
            package=dict(type="path"),
            records_root=dict(type="path"),
            stamp=dict(type="str"),
            state=dict(type="str", choices=["unpacked", "checked", "judged"], default="unpacked"),
            # the choices before the unpack (the action takes them and runs the module without)
            checked=dict(type="dict"),
            profile=dict(type="str"),
            profile_file=dict(type="str"),
            case_id=dict(type="str"),
            hosts=dict(type="list", elements="str"),
            secret_env=dict(type="dict", no_log=True),
            secret_args=dict(type="dict", no_log=True),
            port=dict(type="int"),
            handed_result=dict(type="dict"),
            # the verdict
            unpacked=dict(type="dict"),
            replayed=dict(type="dict"),
            diff=dict(type="dict"),
        ),
        required_if=[("state", "unpacked", ["package"]), ("state", "checked", ["package"]),
                     ("state", "judged", ["unpacked"])],
        supports_check_mode=True,
    )
    p = module.params
    if p["state"] == "judged":
        if "attempt" not in p["unpacked"]:
            module.fail_json(msg="replay | unpacked must be what repro.vllm.replay returned (it has no attempt)")
        module.exit_json(changed=False, **_replay.judge(p["unpacked"], p["replayed"], p["diff"], case_id=p["case_id"]))
    checked = module.check_mode or p["state"] == "checked"
    try:
        res = _replay.unpack(p["package"], p["records_root"], stamp=p["stamp"], check_mode=checked)
        out = dict(changed=not checked, case_id=res["case_id"], case_dir=res["case_dir"], stamp=res["stamp"],
                   records_root=res["records_root"],
                   original_case=res["original_case"], runs=res["runs"], package=res["package"],
                   profile_file=res["profile_file"], files_checked=res["files_checked"])
        if checked:
            out.update(attempt=res["attempt"], profile=res["profile"], profile_text=res["profile_text"])
        else:
            attempt = _replay.select_attempt(res["case_dir"], res["runs"])
            manifest = _evidence.read_run(attempt["path"])["metadata"]
            out.update(attempt=attempt, origin=res["origin"], profile=manifest.get("profile"))
        summary = res["summary"] or {}
        out.update(secret_variable_names=sorted(summary.get("secret_variable_names") or []),
                   summary={k: summary.get(k) for k in ("format", "verdict", "verdict_detail", "verdict_sentence")})
        module.exit_json(**out)
    except (_replay.ReplayError, RecordError, _evidence.EvidenceError) as exc:
        module.fail_json(msg="replay | %s" % exc)
    except OSError as exc:
        module.fail_json(msg="replay of %s: %s (path %s)" % (p["package"], exc.strerror or exc, exc.filename))


if __name__ == "__main__":
    main()
