#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: job_result
short_description: Hand a job's result to the next node of an AWX workflow (set_stats), in one task on the controller
version_added: 0.2.0
description:
  - The end of every playbook of this collection (the C(repro.vllm.result) role) - the runs of this call are added to
    the job's runs (kept on the controller as the fact C(_repro_vllm_result_job_runs) of C(localhost)), the decision
    files at the root of those runs are read (C(compatibility.json), C(score.json), ...), and the workflow artifacts
    C(repro_vllm_result) (and C(repro_vllm_case_id), C(repro_vllm_package) where they apply) are handed on as
    C(set_stats) does (not per host, not aggregated - the last call of the job names every run of it).
    docs/awx.md says what each key means.
  - Fails after handing the result on when O(sink_error) says a run did not reach the records sink.
  - This is an action plugin; it always runs on the controller. It is the result role's plumbing, not an interface
    for playbooks of your own (docs/architecture.md, "Public surface").
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
  - repro.vllm._attributes.INFO_MODULE
options:
  purpose:
    description: The playbook's purpose (fingerprint, reproduce, audit, diff, handoff, replay, ...).
    type: str
    required: true
  case_id:
    description: The case.
    type: str
    required: true
  runs:
    description: The runs this call adds to the job's runs (controller paths, in order).
    type: list
    elements: str
    default: []
  job_runs:
    description: The job's runs so far (the C(_repro_vllm_result_job_runs) fact of C(localhost)).
    type: list
    elements: str
    default: []
  fields:
    description: The playbook's own verdict fields of C(repro_vllm_result) (docs/awx.md); they win over the files'.
    type: dict
    default: {}
  package:
    description: The hand-off package's path, where the job made one.
    type: str
    default: ""
  records_root:
    description: The controller folder of all cases (a relative one is taken against the controller's working directory, as the run's open takes it).
    type: str
    default: records
  sink:
    description: The records sink (C(<inventory host>:<absolute path>)), empty when there is none.
    type: str
    default: ""
  sink_error:
    description: Why not every run reached the records sink (empty when every run did).
    type: str
    default: ""
seealso:
  - module: repro.vllm.run_record
"""

EXAMPLES = r"""
- name: Result | hand it to the next workflow node
  repro.vllm.job_result:
    purpose: fingerprint
    case_id: "{{ repro_vllm_case_id }}"
    runs: "{{ [repro_vllm_run.path] }}"
    job_runs: "{{ hostvars['localhost']['_repro_vllm_result_job_runs'] | default([]) }}"
  delegate_to: localhost
  delegate_facts: true
  run_once: true
"""

RETURN = r"""
result:
  description: What is handed on - C(repro_vllm_result) and, where they apply, C(repro_vllm_case_id) and C(repro_vllm_package).
  returned: always
  type: dict
ansible_facts:
  description: C(_repro_vllm_result_job_runs) - the job's runs with this call's (set on C(localhost) with C(delegate_facts)).
  returned: always
  type: dict
console:
  description: The line the console prints (purpose, case, how many runs, the last, the sink and the package).
  returned: always
  type: list
  elements: str
"""
