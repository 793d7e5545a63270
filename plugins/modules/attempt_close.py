#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: attempt_close
short_description: Decide the close of one attempt - classification, verdict, run-level parts, status (controller side)
version_added: 0.1.0
description:
  - The decisions of an attempt's close, in one Python place (C(plugins/module_utils/_attempt.py)), for the
    C(repro.vllm.attempt) role. It reads what each node of the step reported from the play's host variables
    (C(_repro_vllm_node_report), C(_repro_vllm_refusal); the first node's C(_repro_vllm_exchanges),
    C(_repro_vllm_checkpoint) and C(_repro_vllm_api_url)), classifies every node's C(hosts/<node>/logs/server.log)
    together once, with each node's stop cutoff (as M(repro.vllm.log_stage) does; not for a refused attempt or in
    check mode), judges the attempt (the filter C(repro.vllm.attempt_verdict)'s function) and, for a second clean
    run, compares it with the run it repeats.
  - Returns the attempt (the content of C(outcome.json) before redaction), the run-level parts to write
    (C(stages.json), C(request.json), C(changes.json), C(repeat.json), C(outcome.json), C(responses/*),
    C(prefix_cache.json) or C(observation.json), and the run sheet C(notes.md) with the head node's command
    C(_repro_vllm_node_argv)), already scrubbed and redacted, and the C(status) and C(metadata)
    the run is frozen with. It writes nothing; M(repro.vllm.run_record) C(state=close) C(kind=attempt) decides the
    same (the one function behind both) and writes, freezes and verifies the run in the same task - the attempt
    role closes with that.
  - This is an action plugin; it always runs on the controller. It is the attempt role's plumbing, not an interface
    for playbooks of your own (docs/architecture.md, "Public surface").
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
  - repro.vllm._attributes.INFO_MODULE
options:
  step:
    description:
      - The attempt's step (C(_repro_vllm_step)) - C(name), C(purpose), C(nodes), C(expected), C(argv), C(env),
        C(request), and where they apply C(layer), C(rollback_of), C(repeat_of), C(previous), C(changed),
        C(layers_applied), C(via_gateway).
    type: dict
    required: true
  run_id:
    description: The run's id (C(run-NNN)).
    type: str
    required: true
  run_path:
    description: The open run on the controller; its parent is the case folder whose key redacts argv and env.
    type: path
    required: true
  case_id:
    description: The case.
    type: str
    required: true
  identity:
    description: The run's identity as the step planned it (C(changes.json) C(current)).
    type: raw
  diff:
    description: The comparison with the previous run (C(changes.json) C(diff)).
    type: raw
  debug:
    description: Whether debug logging was on for this run.
    type: bool
    default: false
  debug_env:
    description: The debug variables set for this run only (their names go into the run sheet).
    type: dict
seealso:
  - module: repro.vllm.log_stage
  - module: repro.vllm.run_record
"""

EXAMPLES = r"""
- name: Close | classify, judge and say what goes into the record
  repro.vllm.attempt_close:
    step: "{{ _repro_vllm_step }}"
    run_id: "{{ _repro_vllm_run_id }}"
    run_path: "{{ _repro_vllm_run_path }}"
    case_id: "{{ repro_vllm_case_id }}"
  register: _repro_vllm_close
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
refused:
  description: Whether a node of the step was refused before anything started (a live run holds its port or GPUs).
  returned: always
  type: bool
stages:
  description: The one classification of every node's log (the log_stage answer); empty when nothing was classified.
  returned: always
  type: dict
attempt:
  description: The attempt - the step's facts and the verdict (docs/architecture.md, C(outcome.json)), with C(repeat).
  returned: always
  type: dict
parts:
  description: The run-level parts, each C(part) and C(json), in the order they are written; empty in check mode.
  returned: always
  type: list
  elements: dict
status:
  description: The status the run is frozen with - C(ok), C(failed) or C(refused).
  returned: always
  type: str
metadata:
  description:
    - The manifest metadata - C(case_id), C(purpose), C(step), C(hosts), and C(repeats). The freeze adds the profile
      judged and the collection version the run's open recorded.
  returned: always
  type: dict
step:
  description: The step as the play remembers it (without C(previous)).
  returned: always
  type: dict
"""
