#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: compatibility
short_description: Judge the hosts of an open run against a compatibility profile (controller side)
version_added: 0.1.0
description:
  - The second step of the method. Reads every host's C(hosts/<host>/fingerprint.json) and C(container.json) from
    the open run on the controller and checks each host and the job as a whole against a profile of the
    collection (C(profiles/<name>.yml)) or the user's own profile file.
  - Returns the C(compatibility.json) document (profile, verdict, violations, notes) and one console line per
    violation and note. It writes the file into the run only with O(write), and it never fails on a failed
    boundary; the C(repro.vllm.compatibility) role stops the method after the run is frozen.
  - O(state=profile) only resolves and validates the profile, before any host is touched.
  - An unknown profile name or a malformed profile file fails the task with a message naming the key. Given both,
    O(profile_file) wins and the console says so.
  - The fact vocabulary, the profile keys and the matrix are described in docs/compatibility.md.
  - This is an action plugin; it always runs on the controller.
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
  - repro.vllm._attributes.INFO_MODULE
options:
  state:
    description:
      - C(check) judges the run's hosts; C(profile) only loads and validates the profile.
    type: str
    choices: [check, profile]
    default: check
  profile:
    description:
      - Name of a profile shipped with the collection (C(kimi-k3-gb300), C(kimi-k3-b300), C(kimi-k3-h200),
        C(h200-1gpu), C(cpu-smoke)). Ignored when O(profile_file) is given. When neither is given, C(cpu-smoke).
    type: str
  profile_file:
    description:
      - A profile of the user's own (YAML), with the keys of docs/compatibility.md. A relative path is taken from
        the controller's working directory. Wins over O(profile) (an inventory's name).
    type: path
  run_path:
    description:
      - The open run on the controller. Required with O(state=check).
      - In check mode a run that was not created is skipped.
    type: path
  hosts:
    description:
      - The hosts of the job, in order. A host without C(fingerprint.json) in the run is noted as unknown and
        counts no GPU.
    type: list
    elements: str
    default: []
  allow_foreign:
    description:
      - Foreign compute processes or memory in use on the GPUs the server will use become a note instead of a
        C(foreign_processes) violation.
    type: bool
    default: false
  enabled:
    description:
      - Whether this run is judged at all. V(false) loads nothing and returns C(verdict=unchecked), so a caller
        can register the answer of "is this run judged" and the profile check in one task.
    type: bool
    default: true
  write:
    description:
      - With O(state=check), write the document as C(compatibility.json) into O(run_path), atomically and as
        M(repro.vllm.run_record) writes a part (a part with other bytes already there is refused).
    type: bool
    default: false
notes:
  - Model tokens of a profile are matched as whole words of the GPU name (C(B200) never matches C(NVIDIA GB200)).
seealso:
  - module: repro.vllm.gpu_facts
  - module: repro.vllm.container_facts
  - module: repro.vllm.run_record
"""

EXAMPLES = r"""
- name: Validate the profile before any host is touched
  repro.vllm.compatibility:
    state: profile
    profile: kimi-k3-gb300

- name: Judge the fingerprinted hosts of the open run
  repro.vllm.compatibility:
    run_path: "{{ repro_vllm_run.path }}"
    hosts: "{{ groups['vllm_nodes'] }}"
    profile_file: profiles/my-h200-cu130.yml
  register: compat

- name: Judge them and write compatibility.json into the open run in the same task
  repro.vllm.compatibility:
    run_path: "{{ repro_vllm_run.path }}"
    hosts: "{{ groups['vllm_nodes'] }}"
    profile: kimi-k3-gb300
    write: true
"""

RETURN = r"""
profile:
  description: The resolved profile (normalised keys, its origin file and the sources of its rows).
  returned: unless O(enabled=false)
  type: dict
compatibility:
  description:
    - The compatibility.json document. C(verdict) is C(pass) or C(fail); each violation has C(host) (null for the
      job as a whole), C(fact), C(required), C(found) and C(fix); each note has C(host), C(fact) and C(note).
  returned: when O(state=check)
  type: dict
  sample:
    profile: kimi-k3-h200
    verdict: fail
    violations:
      - host: node02
        fact: driver_branch
        required: ">= r580 (profile kimi-k3-h200)"
        found: "r570 (570.195.03, userspace)"
        fix: install an r580 or newer datacenter driver on node02 and reboot
    notes:
      - host: null
        fact: gpu_count
        note: "profile kimi-k3-h200: gpu_count_min is uncertain: derived ..."
verdict:
  description: C(pass) or C(fail); C(unchecked) when O(enabled=false) or, in check mode, when the run was not created.
  returned: when O(state=check), or O(enabled=false)
  type: str
lines:
  description: Console lines, the first a summary, then one per violation (host, fact, required, found, fix) and note.
  returned: when O(state=check), or O(enabled=false)
  type: list
  elements: str
judged:
  description:
    - The profile the run is judged against, as every run of the play records it (manifest C(metadata.profile) and
      C(metadata.profile_source)); register this result and give it to M(repro.vllm.run_record)'s O(profile).
    - C(name) is null and C(source) is C(not judged) when O(enabled=false); C(source) is C(shipped) for a profile of
      the collection's profiles/ folder and C(file) for O(profile_file).
  returned: always
  type: dict
  sample: {"name": "kimi-k3-h200", "source": "shipped"}
console:
  description:
    - The lines the console prints - with O(state=profile), which profile and from where; with O(state=check),
      RV(lines) prefixed C(compatibility |).
  returned: when O(enabled=true)
  type: list
  elements: str
enabled:
  description: O(enabled), as given.
  returned: always
  type: bool
run_path:
  description: O(run_path), as given.
  returned: always
  type: str
written:
  description: The part written with O(write) (C(part), C(sha256), C(size)).
  returned: when O(write) and the run was judged
  type: dict
"""
