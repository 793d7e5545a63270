#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: handoff
short_description: Pack a case's frozen runs into one deterministic, redacted hand-off package
version_added: 0.1.0
description:
  - C(state=pack) verifies every selected run against its C(manifest.json) (a tampered run stops the package,
    naming the run and the file), reads the runs into the facts of vLLM's bug report (C(summary.md),
    C(summary.json)), draws the stage timeline and memory pictures (SVG, plus Mermaid blocks in C(summary.md)),
    lists what kinds were redacted where (C(redactions.json)), scans every member for secret shapes and refuses
    to pack on any finding (naming file and line; the frozen runs are never rewritten), then writes
    C(<case_id>-handoff-<YYYYMMDDTHHMMSSZ>.tar.gz) and its C(.sha256) under C(<records_root>/<case_id>/handoff/).
  - The package is deterministic. Sorted members under C(<case_id>-handoff/), fixed times, owners and modes, gzip
    without a name or time. The same runs give the same sha256 whatever the time in the file name.
  - C(state=check) reads a package back. Its C(.sha256) must match, every member path must be safe and no member
    may hold a secret shape.
  - Runs on the controller (C(delegate_to=localhost)); Python standard library only.
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
attributes:
  check_mode:
    support: full
    details:
      - Verifies, summarises and scans, and returns the name it would write; writes nothing.
  diff_mode:
    support: none
  idempotent:
    description: When run again with the same arguments, the module reports no change.
    support: none
    details:
      - C(pack) writes a new package each time (a new name, the same sha256 for the same runs); C(check) changes nothing.
options:
  state:
    description: Pack a case, or check a package that exists.
    type: str
    choices: [pack, check]
    default: pack
  records_root:
    description: The controller directory that holds one folder per case (C(records) when not given).
    type: path
  case_id:
    description: The case to pack. Required with O(state=pack).
    type: str
  runs:
    description: The C(run-NNN) to pack; all runs of the case when empty.
    type: list
    elements: str
    default: []
  profile_file:
    description: The user's profile file (variables file) the runs were made with; it travels in the package.
    type: path
  path:
    description: The package to read back with O(state=check).
    type: path
  stamp:
    description:
      - The time in the package name (C(YYYYMMDDTHHMMSSZ)); now (UTC) when not given. It does not change the
        package's bytes.
    type: str
"""

EXAMPLES = r"""
- name: Pack case gb300-oom
  repro.vllm.handoff:
    records_root: /srv/repro/records
    case_id: gb300-oom
  delegate_to: localhost
  run_once: true
  register: pkg

- name: Read it back
  repro.vllm.handoff:
    state: check
    path: "{{ pkg.package }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
package:
  description: The package written (or that would be written in check mode); with O(state=check), the one read.
  returned: always
  type: str
  sample: /srv/repro/records/gb300-oom/handoff/gb300-oom-handoff-20261201T031500Z.tar.gz
sha256:
  description: The package's sha256 (null in check mode).
  returned: always
  type: str
sha256_path:
  description: The C(.sha256) file beside the package.
  returned: when O(state=pack)
  type: str
runs:
  description: The runs packed, each verified first.
  returned: when O(state=pack)
  type: list
  elements: str
files_checked:
  description: Files whose size and sha256 were verified against the manifests.
  returned: when O(state=pack)
  type: int
members:
  description: Member paths of the package, in order.
  returned: always
  type: list
  elements: str
unknown:
  description: The bug-report items the runs do not answer, each with how to get it.
  returned: when O(state=pack)
  type: list
  elements: dict
redactions:
  description: Every redaction marker in the packed runs (file, line, kind).
  returned: when O(state=pack)
  type: list
  elements: dict
secret_variable_names:
  description: Names (never values) of the secret variables the command and request need.
  returned: when O(state=pack)
  type: list
  elements: str
verdict:
  description:
    - The one verdict of the case's latest play (C(summary.json) C(verdict)), first match wins - C(boundary),
      C(collective_failed), C(fails_at_minimal), C(fails_at_layer), C(refused), C(incomplete), C(healthy).
  returned: when O(state=pack)
  type: str
verdict_detail:
  description: C(layer), C(stage), C(error_class), C(run), C(rollback), C(facts) of the verdict (null where they do not apply).
  returned: when O(state=pack)
  type: dict
verdict_sentence:
  description: The verdict in one sentence, the title of C(summary.md) after its prefix by verdict (C([Bug]:) only for a failure in vLLM; docs/handoff.md).
  returned: when O(state=pack)
  type: str
host_files_missing:
  description:
    - Packed runs sealed without the files of some of their hosts (an interrupted run sealed here or by a play that
      could not reach its hosts) - C(run), C(run_uid), C(hosts) and C(line), which says where the files are and how
      to get them.
  returned: when O(state=pack)
  type: list
  elements: dict
problems:
  description: What O(state=check) found wrong (empty when the package is sound).
  returned: when O(state=check)
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.repro.vllm.plugins.module_utils.record import _evidence
from ansible_collections.repro.vllm.plugins.module_utils.handoff import _handoff, _summary_md
from ansible_collections.repro.vllm.plugins.module_utils.record._record import DEFAULT_ROOT, RecordError, resolve_root


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="pack", choices=["pack", "check"]),
            records_root=dict(type="path"),
            case_id=dict(type="str"),
            runs=dict(type="list", elements="str", default=[]),
            profile_file=dict(type="path"),
            path=dict(type="path"),
            stamp=dict(type="str"),
        ),
        required_if=[("state", "pack", ("case_id",)), ("state", "check", ("path",))],
        supports_check_mode=True,
    )
    p = module.params
    try:
        if p["state"] == "check":
            res = _handoff.check_package(p["path"])
            out = dict(changed=False, package=p["path"], sha256=res["sha256"], members=res["members"],
                       problems=res["problems"])
            if not res["ok"]:
                module.fail_json(msg="package %s does not check out: %s" % (p["path"], "; ".join(res["problems"][:10])),
                                 **out)
            module.exit_json(**out)
        root = resolve_root(p["records_root"] or DEFAULT_ROOT)
        if not os.path.isdir(os.path.join(root, p["case_id"])):
            module.fail_json(msg="No case %s under %s: give -e repro_vllm_case_id=<case> and -e repro_vllm_records_root=<dir> "
                                 "of an earlier playbooks/reproduce.yml." % (p["case_id"], root))
        res = _handoff.build_package(root, p["case_id"], runs=p["runs"] or None,
                                     profile_file=p["profile_file"], stamp=p["stamp"], check_mode=module.check_mode)
        items = res["summary"]["items"]
        unknown = [{"item": key, "how": items[key].get("how")} for key, _label in _summary_md.ITEMS
                   if items[key].get("value") == "unknown"]
        module.exit_json(changed=True, package=res["path"], sha256=res["sha256"], sha256_path=res["sha256_path"],
                         runs=res["runs"], files_checked=res["files_checked"], members=res["members"],
                         unknown=unknown, redactions=res["redactions"],
                         secret_variable_names=res["summary"]["secret_variable_names"],
                         verdict=res["summary"]["verdict"], verdict_detail=res["summary"]["verdict_detail"],
                         verdict_sentence=res["summary"]["verdict_sentence"],
                         host_files_missing=res["host_files_missing"])
    except (_handoff.HandoffError, RecordError, _evidence.EvidenceError) as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg="handoff %s: %s (path %s)" % (p["state"], exc.strerror or exc, exc.filename))


if __name__ == "__main__":
    main()
