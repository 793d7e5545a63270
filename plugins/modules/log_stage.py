#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: log_stage
short_description: Classify vLLM logs into the first failing start-up stage
version_added: 0.1.0
description:
  - Reads one or many logs (one per node, rank or container) on the managed node and answers in which stage the
    run failed first (V(environment), V(config), V(cuda_init), V(distributed_init), V(weight_loading),
    V(engine_init), V(api_ready), V(request)), with which error class, and on which line; V(none) when no
    failure is found (with the last stage reached, useful for hangs), V(unknown) for a failure that cannot be
    placed.
  - The root cause is the earliest failure in time across all files; wrapper errors (C(Engine core initialization
    failed), C(EngineDeadError) after an earlier error, torchrun C(ChildFailedError), NCCL watchdog timeouts on
    surviving ranks) are returned as RV(consequences).
  - Places a failure by the message's own meaning where it is unambiguous, else by the vLLM functions in its
    traceback (also a traceback cut from a paste), else by the log's stage markers, and never before the furthest
    stage the log proves reached; RV(stage_basis) says which.
  - Understands the vLLM log formats from 0.5 to 0.33, PyTorch c10/NCCL/torchrun lines, CUDA and container-runtime
    errors, and strips ANSI colours, CR/LF, C(docker compose), C(kubectl logs --timestamps), journald and Ray
    wrappers first, and what a tool that gathered the log or a paste put around its lines (C(grep -n), C(cat -n),
    C(kubectl logs --prefix), C(srun --label), pdsh, the CRI and Docker JSON files of a node, C(journalctl -o json),
    syslog, Ansible's task result, a log viewer's time, an indentation, a quote or a fence). A log of any size is
    read once, in blocks, with bounded memory; C(.gz) files are read as compressed logs.
  - The same classifier is used by the P(repro.vllm.log_stage#filter) filter and by the roles of this collection,
    so all give the same answer. The rules are described in the collection's C(docs/classifier.md).
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
  - repro.vllm._attributes.info_module
options:
  paths:
    description:
      - Log files to classify, one per node, rank or container. A directory is expanded to the files under it
        (sorted, recursively, hidden files skipped).
    type: list
    elements: path
    required: true
  nodes:
    description:
      - Names for the entries of O(paths), in the same order (a directory's files all get its name). Without it
        a file is named by its base name (or its path relative to the directory it was found in).
    type: list
    elements: str
  until:
    description:
      - Per-file stop cutoff counted in lines, one entry per entry of O(paths) in the same order, V(null) for no
        cutoff. It is the number of lines the file had when the server was last seen alive (the size that
        P(repro.vllm.vllm_server#module) reports at its last liveness check).
      - Errors on later lines were printed while the server was being stopped (shutdown noise after TERM). They are
        returned in RV(after_stop) and are never the failure; the stage markers of later lines still count as
        progress.
      - A traceback that began before the cutoff belongs to the run even when its exception line comes later.
      - A cutoff cannot be given for a directory entry of O(paths); list its files instead.
    type: list
    elements: raw
notes:
  - Timestamps printed by vLLM carry no year and no time zone. Files are ordered by them as well as they allow;
    RV(order_uncertain) says when the order between nodes cannot be trusted and why.
seealso:
  - plugin: repro.vllm.log_stage
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Classify the server log captured on each node
  repro.vllm.log_stage:
    paths:
      - /var/log/vllm/server.log
  register: stage

- name: Classify the logs of a two-node run, naming the nodes
  repro.vllm.log_stage:
    paths:
      - /srv/records/case1/run-003/hosts/gpu-a01/logs/server.log
      - /srv/records/case1/run-003/hosts/gpu-a02/logs/server.log
    nodes: [gpu-a01, gpu-a02]
  register: stage

- name: Classify a stopped server's log; errors printed after the last liveness check are shutdown noise
  repro.vllm.log_stage:
    paths: [/var/log/vllm/server.log]
    until: [412]
  register: stage

- name: Stop when the run did not get past distributed init
  ansible.builtin.assert:
    that: stage.stage not in ['environment', 'config', 'cuda_init', 'distributed_init']
    fail_msg: "{{ stage.summary }}"

# ad hoc:  ansible localhost -m repro.vllm.log_stage -a 'paths=server.log'
"""

RETURN = r"""
stage:
  description: The first failing stage, V(none) when no failure was found, V(unknown) when it cannot be placed.
  type: str
  returned: always
  sample: weight_loading
stage_basis:
  description:
    - Why RV(stage) was chosen. V(message) - the error's own meaning (a config validation error, a driver too old,
      the KV-cache check) or the worker method a logger line names; V(frames) - the vLLM functions in its
      traceback; V(markers) - the furthest stage the log's own start-up lines prove reached; V(inferred) - none of
      these, read from what the error shows (serving-only frames such as the model's forward pass, the sampler,
      attention backends, request handlers and tool parsers; the file of its vLLM logger record; its words; the
      sequence number and size of a collective that timed out).
    - Null when RV(stage) is V(none) or V(unknown). RV(first_error) carries the same key.
  type: str
  returned: always
  sample: frames
confidence:
  description:
    - How sure RV(stage) is. V(high) - the message's fixed meaning, mapped traceback frames, a named worker method
      or the log's markers; V(medium) - a signature's or error class's usual stage without markers, or an inferred
      stage from serving-only frames, a serving file's logger record, a 5xx answer's neighbour or a collective's
      numbers; V(low) - the error's words alone.
    - Null when RV(stage) is V(none) or V(unknown). RV(first_error) carries the same key.
  type: str
  returned: always
  sample: high
cause_stage:
  description:
    - An earlier stage that the first error's message names as its cause, while RV(stage) stays where the failure
      surfaced - V(environment) for a driver or library mismatch (no kernel image for this GPU, PTX from a newer
      toolchain, an undefined symbol, a missing module, a driver too old) or a too small or full C(/dev/shm) (vLLM's
      shared-memory broadcast, the CPU backend's SHMManager, NCCL's shm segments).
    - Null when the message names no earlier cause (or the cause is RV(stage) itself). RV(first_error) carries
      the same key.
  type: str
  returned: always
  sample: environment
error_class:
  description:
    - Class of the first failure (V(oom), V(cuda_error), V(nccl_error), V(driver_mismatch), V(config_error),
      V(timeout), V(missing_file), V(import_error), V(port_in_use), V(illegal_memory_access), V(engine_dead),
      V(other), V(container_error), V(image_pull), V(scheduling)); null when RV(stage) is V(none).
  type: str
  returned: always
  sample: oom
first_error:
  description: The root-cause line; null when RV(stage) is V(none).
  type: dict
  returned: always
  contains:
    line:
      description: The line (message part, wrappers and vLLM prefix removed).
      type: str
    file:
      description: The file it was found in.
      type: str
    lineno:
      description: Line number in that file (1-based).
      type: int
    timestamp:
      description: The timestamp printed on the line or its log record, as printed; null if it has none.
      type: str
    process:
      description: Process that wrote it (C(EngineCore_DP0), C(Worker_TP3), C(rank2), C(pid 979), ...) or null.
      type: str
    node:
      description: Node name of the file.
      type: str
    pid:
      description: Process id when the line carries one.
      type: int
    stage:
      description: Same as RV(stage).
      type: str
    error_class:
      description: Same as RV(error_class).
      type: str
    kind:
      description:
        - V(failure), V(error_line) (an error line without a known signature, or a request answered with a
          server error - a 5xx access line, which stands in only when the log shows nothing else), V(victim) or
          V(consequence).
      type: str
    stage_basis:
      description: Same meaning as RV(stage_basis), for this error.
      type: str
    confidence:
      description: Same meaning as RV(confidence), for this error.
      type: str
    cause_stage:
      description: Same meaning as RV(cause_stage), for this error.
      type: str
    hint:
      description: What the signature usually means, when known.
      type: str
    context:
      description: Up to 12 lines around the error (header, exception, message lines).
      type: list
      elements: str
oom:
  description: Whether memory ran out anywhere, and in which stage (before the weights means memory held elsewhere).
  type: dict
  returned: always
  contains:
    occurred:
      description: True when an out-of-memory error was seen.
      type: bool
    stage:
      description: Stage of the first out-of-memory error, or null.
      type: str
    memory_sizing:
      description: True when it happened after the weights loaded (profiling, KV cache, CUDA graphs, serving).
      type: bool
    line:
      description: The out-of-memory line.
      type: str
    note:
      description: How to read this out-of-memory error.
      type: str
stages_reached:
  description: Stages the logs show, in stage order (including the failing one).
  type: list
  elements: str
  returned: always
  sample: [environment, config, cuda_init, distributed_init, weight_loading]
last_stage:
  description: The furthest stage any log reached (useful for V(none) answers, e.g. a hang), or null.
  type: str
  returned: always
consequences:
  description: The other errors, in time order (wrappers, victims on other ranks, later failures), at most 30.
  type: list
  elements: dict
  returned: always
  contains:
    file:
      description: File of the line.
      type: str
    node:
      description: Node of the file.
      type: str
    lineno:
      description: Line number.
      type: int
    line:
      description: The line.
      type: str
    timestamp:
      description: Its timestamp as printed, or null.
      type: str
    kind:
      description: V(consequence), V(victim), V(failure) or V(error_line).
      type: str
    error_class:
      description: Its error class.
      type: str
    stage:
      description: The stage it would be placed in.
      type: str
timeline:
  description: One entry per file.
  type: list
  elements: dict
  returned: always
  contains:
    node:
      description: Node name.
      type: str
    file:
      description: The file.
      type: str
    lines:
      description: Lines read.
      type: int
    first_timestamp:
      description: First timestamp in the file, as printed.
      type: str
    last_timestamp:
      description: Last timestamp in the file, as printed.
      type: str
    stage_reached:
      description: Furthest stage in this file.
      type: str
    stage_since:
      description: Timestamp at which that stage began.
      type: str
    ready:
      description: Whether the API server reported readiness (uvicorn C(Application startup complete)).
      type: bool
    ready_timestamp:
      description: When it did.
      type: str
    first_error:
      description: This file's first error (same fields as RV(first_error)), or null.
      type: dict
    stage_marks:
      description: First line at which each stage was seen, in file order (C(stage), C(timestamp), C(lineno)).
      type: list
      elements: dict
    recovered_errors:
      description: Errors after which this log still progressed to a later stage (they did not stop the run).
      type: list
      elements: dict
    hints:
      description: Warnings and hang hints seen (for example C(No available shared memory broadcast block)).
      type: list
      elements: dict
    until:
      description: The O(until) cutoff used for this file, or null.
      type: int
order_uncertain:
  description: True when the order between files (nodes) cannot be trusted; see RV(order_uncertain_why).
  type: bool
  returned: always
order_uncertain_why:
  description: Why the cross-node order is uncertain, or null.
  type: str
  returned: always
after_stop:
  description:
    - Errors found after a file's O(until) cutoff (shutdown noise), in time order; empty without a cutoff.
    - Each has C(file), C(node), C(lineno), C(line), C(timestamp), C(process), C(error_class) and C(kind).
  type: list
  elements: dict
  returned: always
  sample:
    - file: /srv/records/case1/run-003/hosts/gpu-a01/logs/server.log
      node: gpu-a01
      lineno: 117
      line: "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. ..."
      timestamp: "11-29 15:53:05"
      process: APIServer
      error_class: engine_dead
      kind: consequence
summary:
  description: One line, for example C(stuck in distributed_init since 08-25 08:25:45).
  type: str
  returned: always
changed:
  description: Always false; the logs are only read.
  type: bool
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import LogStageError, classify_files


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type="list", elements="path", required=True),
            nodes=dict(type="list", elements="str"),
            until=dict(type="list", elements="raw"),
        ),
        supports_check_mode=True,
    )
    paths = module.params["paths"]
    nodes = module.params["nodes"]
    if not paths:
        module.fail_json(msg="log_stage: paths is empty; give the log files (or directories) to classify")
    if nodes and len(nodes) != len(paths):
        module.fail_json(msg="log_stage: nodes has %d names for %d paths; give one name per path or none"
                         % (len(nodes), len(paths)))
    until = module.params["until"]
    if until is not None and len(until) != len(paths):
        module.fail_json(msg="log_stage: until has %d entries for %d paths; give one line count (or null) per path"
                         % (len(until), len(paths)))
    try:
        answer = classify_files(paths, nodes=nodes, until=until)
    except LogStageError as exc:
        module.fail_json(msg="log_stage: %s" % exc)
    module.exit_json(changed=False, **answer)


if __name__ == "__main__":
    main()
