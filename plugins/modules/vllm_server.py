#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Why one file (over 1,000 lines): half of it is the module's documentation (DOCUMENTATION, EXAMPLES, RETURN), which
# ansible-doc and the sanity tests read from here; the code is the four states' flow, the process group and the
# supervisor live in module_utils/server/_server.py.

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_server
short_description: Start, check and stop a vLLM server as one process group, with readiness and log stage
version_added: 0.1.0
description:
  - Starts a server command (a bare C(vllm serve ...), or C(docker run ...) or C(podman run ...); only O(argv) differs)
    in its own session and process group, fully detached from the module so that it outlives the task, with an
    explicit environment, and its stdout and stderr streamed to O(log_path).
  - Waits until C(GET /health) answers 200 and then C(GET /v1/models) answers 200, or the server process dies, or
    O(ready_timeout) passes. On a timeout the whole group is stopped and checked for leftovers.
  - A small supervisor process (in a session of its own) stays the server's parent, records its exit code next to
    O(state_file) and samples the memory of the server's session once a second into C(memory.jsonl) beside
    O(log_path) (sum of VmRSS of every process in the session, and per-GPU C(memory.used) from C(nvidia-smi) when it
    exists). It ends by itself when no process of the session is left.
  - O(state=stopped) sends SIGTERM to the API server (the session leader) first, so that vLLM shuts its engine
    core and workers down itself, then SIGTERM to the whole group for what is left, sends SIGKILL to what is still
    there after O(stop_grace) seconds, and then scans
    C(/proc) for any process of the session (vLLM's C(VLLM::EngineCore) and C(VLLM::Worker) survive a kill of the
    API server alone) and reports them in RV(remaining_pids), which must be empty.
  - O(state=checked) reports whether the server still runs, its C(/health) status and the log's classification.
    A server that became ready and later exited is a failure even with exit code 0 (vLLM exits 0 after
    C(EngineDeadError)).
  - The log is classified with the collection's log classifier (the same logic as the M(repro.vllm.log_stage)
    module) into the first failing stage and error class.
  - Secrets are never returned. Environment values whose names contain TOKEN, SECRET, PASSWORD or KEY and the value
    after C(--api-key) are replaced by C(<redacted>).
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
  - repro.vllm._command_timeout
attributes:
  check_mode:
    support: full
    details:
      - Plans only; returns the argv and environment it would use and starts or stops nothing.
  diff_mode:
    support: none
options:
  state:
    description:
      - V(started) starts the server (unless the one in O(state_file) still runs) and waits for readiness.
      - V(stopped) stops the whole process group recorded in O(state_file).
      - V(checked) reports liveness, C(/health) and the log classification of the server in O(state_file).
      - V(swept) looks at every run lease in O(lease_dir) before an attempt starts (no server is started) - servers
        whose lease ran out are stopped and released (RV(cleaned)); live servers of other runs are never touched and
        are returned in RV(live), and in RV(conflicts) when they hold this attempt's API port (from O(argv)) or GPUs
        (C(CUDA_VISIBLE_DEVICES) of O(env); on a host with GPU device nodes, C(/dev/nvidia<N>)). With O(only_run_uid), that run's servers are
        stopped whatever their lease (playbooks/stop.yml).
    type: str
    choices: [started, stopped, checked, swept]
    default: started
  argv:
    description:
      - The server command as a list, run without a shell, for example C([vllm, serve, /models/tiny, --port, "8011"]).
      - Required with O(state=started).
      - Put an API key in O(secret_env) as C(VLLM_API_KEY) rather than as C(--api-key) here, so it never shows in
        the task's invocation arguments (a C(--api-key) value is redacted from the results either way).
    type: list
    elements: str
  env:
    description:
      - Environment variables for the server, on top of the inherited ones in O(inherit_env).
      - For this CPU build an explicit KV size is needed, for example C(VLLM_CPU_KVCACHE_SPACE=1).
    type: dict
    default: {}
  secret_env:
    description:
      - Like O(env), for secret values (C(HF_TOKEN), C(VLLM_API_KEY)); masked in the task output and always returned
        as C(<redacted>).
      - Ansible masks every occurrence of these values anywhere in the result (a value C(1) turns C(exit_code) into
        C(VALUE_SPECIFIED_IN_NO_LOG_PARAMETER)); when the result is recorded, use O(secret_env_file) instead.
    type: dict
    default: {}
  secret_env_file:
    description:
      - A JSON object file of secret variables (names and values) for the server, like O(secret_env), written by the
        play (mode 0600, C(no_log)) under the run's own folder. The module reads it and removes it before the
        server starts, so the values are never module parameters and no_log masking never rewrites the result;
        the variables are returned as C(<redacted>), and a value of 8 characters or more (not only digits) is
        redacted wherever it appears in the result.
    type: path
  inherit_env:
    description:
      - Names of variables copied from the module's own environment. Nothing else is inherited.
    type: list
    elements: str
    default: [PATH, HOME, LANG, LC_ALL, TMPDIR]
  log_path:
    description:
      - File that receives the server's stdout and stderr (truncated at each start). Its folder is created.
      - Required with O(state=started); with the other states it locates the default O(state_file).
      - The memory samples go to C(memory.jsonl) in the same folder.
    type: path
  state_file:
    description:
      - JSON file with pid, process group, session, argv, log path and start time of the server, so that a later
        task with O(state=stopped) or O(state=checked) finds it.
      - Defaults to C(vllm_server.state.json) in the folder of O(log_path).
    type: path
  base_url:
    description:
      - Base URL of the server for the readiness probes.
      - Defaults to the C(--host)/C(--port) in O(argv) (vLLM's defaults 0.0.0.0 and 8000; 0.0.0.0 is probed as
        127.0.0.1). Set it for container commands whose published port differs.
    type: str
  chdir:
    description:
      - Working directory of the server. Defaults to the folder of O(log_path).
    type: path
  ready_timeout:
    description:
      - Seconds from the start until the server must answer C(/health) and C(/v1/models) with 200.
      - When they pass, the whole group is stopped and RV(outcome) is V(timeout).
    type: float
    default: 600
  stop_grace:
    description:
      - Seconds between SIGTERM and SIGKILL when stopping the group (also used after a readiness timeout).
    type: float
    default: 10
  exit_wait:
    description:
      - With O(state=checked), seconds to wait for a server that answers C(/health) with something other than 200
        to exit, so that its exit code can be reported (vLLM shuts itself down about 2 s after its engine died).
    type: float
    default: 5
  memory_interval:
    description:
      - Seconds between memory samples written to C(memory.jsonl). V(0) turns sampling off.
    type: float
    default: 1
  nvidia_smi_path:
    description:
      - The C(nvidia-smi) used for per-GPU memory samples. Found on C(PATH) when not given; no GPU samples when absent.
    type: path
  node:
    description:
      - Name of this node in the classification (for multi-node timelines). Defaults to none.
    type: str
  classify:
    description:
      - Classify the log with the collection's classifier and return the answer (RV(classification), RV(stage)...).
      - Set V(false) when the caller classifies every node's log once itself (the reproduction does, with the cutoff
        RV(log_lines) of the last liveness check); the module then only reports RV(log_lines) and RV(log_bytes).
    type: bool
    default: true
  lease:
    description:
      - Seconds the server may run without the play coming back (V(0), the default, - no lease).
      - With a lease the supervisor stops the whole group (SIGTERM to the API server, then the group, SIGKILL after
        O(stop_grace)) once the lease has passed without a renewal, without any controller - a play cancelled with
        Ctrl-C, an AWX job cancel or SIGKILL to C(ansible-playbook) leaves no server holding the GPUs.
      - O(state=started) sets it to O(lease) when the controller's heartbeat renews it (O(heartbeat)), else to
        O(ready_timeout) plus O(lease), and to O(lease) once the server is ready; O(state=checked) with a lease renews
        it; M(repro.vllm.api_request) renews it with its C(lease_file) option before each request. What the
        supervisor stopped is reported in RV(lease_expired).
      - The controller's heartbeat (this module's action, with O(lease_file) and O(state_file)) renews it every
        O(lease)/4 seconds while the play's process lives, over the task's own connection, so a start that waits
        minutes for readiness is never cut short while the controller lives; it stops the server at once (its lease
        ends, the supervisor stops the group) when the play gets SIGINT or SIGTERM, or when the play's process is
        gone. When the controller dies with its heartbeat (SIGKILL to the process group, a lost AWX node), the
        server runs at most O(lease) seconds more.
    type: float
    default: 0
  heartbeat:
    description:
      - Set by this module's action when the controller's heartbeat renews the lease (not for playbooks to set); the
        start then leases only O(lease) seconds instead of O(ready_timeout) plus O(lease).
    type: bool
    default: false
  check_port:
    description:
      - With O(state=started), test before the start that the server's API port (from O(argv)) can be bound; when
        anything holds it nothing is started and the result is RV(outcome=port_in_use), stage C(environment).
      - V(false) lets vLLM meet the busy port itself (its own C([Errno 98]) failure, as the classifier's tests need).
    type: bool
    default: true
  lease_file:
    description:
      - The run's host-wide lease file, C(<lease_dir>/<run_uid>.json), one entry per O(node). Without it the lease
        is C(<state_file>.lease) (servers started by releases before schema 3).
      - With O(state=stopped) the node's entry is released once no process of the server is left.
    type: path
  lease_info:
    description:
      - What the run lease records of this run and server, so that another play on the host can name it - the
        run's C(run_uid), C(case_id), C(run_id), C(controller), C(started) (unix time) and the server's C(port),
        C(gpus) (kept from O(env)'s C(CUDA_VISIBLE_DEVICES) when not given).
    type: dict
  lease_dir:
    description:
      - With O(state=swept), the host-wide folder of run leases (the role default C(/var/tmp/repro-vllm/.leases)).
    type: path
    default: /var/tmp/repro-vllm/.leases
  run_uid:
    description: With O(state=swept), this attempt's own run, never looked at.
    type: str
  only_run_uid:
    description: With O(state=swept), stop the servers of this run alone, whether their lease is live or not.
    type: str
  container:
    description:
      - Run the server in a container of its exact image instead of as a process (issue "the server in its exact
        image"). Without it, or with O(container.runtime=process), a O(argv) that is itself C(docker run IMAGE ...)
        or C(podman run IMAGE ...) still runs in that runtime and image.
      - The container is C(<runtime> run --name repro-vllm-<run_uid>-<node>) of the image pinned by digest (the
        repo digest where the runtime lists one, else the image id), labelled C(repro.vllm.run_uid), C(.case),
        C(.run), C(.controller) and C(.node), with every variable of O(env)/O(secret_env) passed as C(-e NAME)
        (never a value on the command line), the GPUs of C(CUDA_VISIBLE_DEVICES) passed by the runtime's own means,
        every existing host path of O(argv) mounted read-only at the same path, and host networking unless
        O(container.args) names a network.
      - O(state=stopped), the lease and O(state=swept) stop (C(stop -t)) and remove the container by name and by
        its run label, after its log (C(logs --timestamps)) is saved as C(container.log) beside O(log_path).
    type: dict
    suboptions:
      runtime:
        description: V(podman), V(docker), or V(process) (the server runs as a process unless O(argv) is a run command).
        type: str
        choices: [process, podman, docker]
        default: process
      image:
        description: The image reference (C(repro_vllm_image)); a run command in O(argv) names its own.
        type: str
      executable:
        description: Path of the runtime's client; found on C(PATH) when not given.
        type: path
      args:
        description:
          - More C(run) arguments (C(repro_vllm_container_args)), for example C(--shm-size 1g), C(--ipc=host), or the
            engine flags a host needs such as C(--cgroup-manager cgroupfs). Recorded with the run.
        type: list
        elements: str
        default: []
      pin:
        description:
          - The image as the play resolved it first - the fingerprint's C(repro_vllm_container) facts
            (M(repro.vllm.container_facts)) or the C(pin) of RV(container) of an earlier attempt of the play. The attempt runs
            that image; when the reference now names another image (a tag moved), the start is refused (RV(outcome)
            V(refused), and a conflict with O(state=swept)) unless O(container.allow_moved_tag).
          - Without it the image the reference names now is pinned, and returned in the C(pin) of RV(container).
        type: dict
      allow_moved_tag:
        description: Run the pinned image even though the reference now names another one (both are recorded).
        type: bool
        default: false
      labels:
        description: The run's labels - C(run_uid), C(case), C(run), C(controller); C(run_uid) is required.
        type: dict
      probe:
        description:
          - Once the server is ready, look from inside the container (C(exec ... python3)) at the GPUs,
            C(CUDA_VISIBLE_DEVICES) and the libcuda the server mapped.
        type: bool
        default: true
  fail_on_error:
    description:
      - Fail the task when the server did not become ready (O(state=started)), failed after it was ready
        (O(state=checked)) or left processes behind (O(state=stopped)). The full result is returned either way.
      - Set V(false) to record a failing start as data and go on.
    type: bool
    default: true
notes:
  - The server runs as the user the module runs as. Processes that leave the session themselves (a daemon that calls
    C(setsid)) cannot be tracked; vLLM's processes do not.
  - With C(docker run) or C(podman run) the processes in the session are the client's; use C(--rm) and keep the
    default signal proxying so that the SIGTERM reaches the container.
seealso:
  - module: repro.vllm.api_request
  - module: repro.vllm.log_stage
"""

EXAMPLES = r"""
- name: Start the tiny model on CPU and wait until it serves
  repro.vllm.vllm_server:
    argv: [vllm, serve, /srv/models/tiny, --host, 127.0.0.1, --port, "8011", --max-model-len, "512",
           --served-model-name, tiny, --enforce-eager]
    env:
      VLLM_CPU_KVCACHE_SPACE: "1"
      HF_HUB_OFFLINE: "1"
    secret_env:
      HF_TOKEN: "{{ vault_hf_token }}"
    log_path: /var/tmp/repro/run-001/server.log
    ready_timeout: 300
    fail_on_error: false
  register: server

- name: Show where it failed
  ansible.builtin.debug:
    msg: "{{ server.outcome }} at stage {{ server.stage }} ({{ server.error_class }}): {{ server.first_error.line | default('') }}"

- name: After the requests, check that the engine is still alive
  repro.vllm.vllm_server:
    state: checked
    log_path: /var/tmp/repro/run-001/server.log

- name: Stop the whole process group and prove nothing is left
  repro.vllm.vllm_server:
    state: stopped
    log_path: /var/tmp/repro/run-001/server.log
    stop_grace: 15
"""

RETURN = r"""
outcome:
  description:
    - V(ready), V(exited) or V(timeout) for O(state=started) (V(running) when it was already running, V(port_in_use)
      when its port was taken, V(refused) when the image's tag moved since the play pinned it);
      V(running), V(unhealthy) or V(exited) for O(state=checked); V(stopped) or V(not_running) for O(state=stopped);
      V(planned) in check mode.
  returned: always
  type: str
  sample: ready
ready:
  description: Whether the server answered C(/health) and C(/v1/models) with 200 (O(state=started)), or is running and
    healthy now (O(state=checked)).
  returned: always
  type: bool
failed_after_ready:
  description: The server had been ready and then died or stopped answering C(/health) with 200 (exit code 0 included).
  returned: always
  type: bool
alive:
  description: Whether the server process was alive when the module returned.
  returned: always
  type: bool
exit_code:
  description: Exit code of the server process (negative for a signal), or null while it runs or when unknown.
  returned: always
  type: int
exit_signal:
  description: Signal name when RV(exit_code) is negative, else null.
  returned: always
  type: str
pid:
  description: PID of the server process; it is also the process group and session id.
  returned: always
  type: int
pgid:
  description: Process group id of the server.
  returned: always
  type: int
sid:
  description: Session id of the server.
  returned: always
  type: int
supervisor_pid:
  description: PID of the supervisor that reaps the server and samples memory.
  returned: always
  type: int
time_to_ready_s:
  description: Seconds from the start until C(/v1/models) answered 200 (null when not ready).
  returned: always
  type: float
line:
  description: The start as the attempt's progress line says it - C(server <outcome>), the time to ready, the exit
    code, and that a start which does not serve is judged when the run closes (not kept in server.json).
  returned: with O(state=started)
  type: str
health_status:
  description: Last HTTP status of C(/health), null when nothing answered.
  returned: always
  type: int
models_status:
  description: Last HTTP status of C(/v1/models), null when not reached.
  returned: always
  type: int
last_probe_error:
  description: The last connection error of the readiness probes (for example C(Connection refused)).
  returned: always
  type: str
base_url:
  description: Base URL that was probed.
  returned: always
  type: str
argv:
  description: The server command, with secret argument values redacted.
  returned: always
  type: list
  elements: str
env:
  description: The complete environment given to the server (inherited names and O(env)/O(secret_env)), secrets redacted.
  returned: always
  type: dict
inherited_env_names:
  description: Names copied from the module's environment through O(inherit_env).
  returned: always
  type: list
  elements: str
log_path:
  description: The server log.
  returned: always
  type: str
state_file:
  description: The state file written at start and read by the other states.
  returned: always
  type: str
memory_path:
  description: The C(memory.jsonl) the supervisor writes (one JSON object a line, keys C(t), C(rss_bytes), C(pids),
    C(gpus)).
  returned: always
  type: str
memory:
  description: Summary of C(memory.jsonl) so far.
  returned: always
  type: dict
  contains:
    samples:
      description: Number of samples.
      type: int
    peak_rss_bytes:
      description: Highest sum of VmRSS over the session.
      type: int
    gpu_peak_mib:
      description: Highest C(memory.used) per GPU index (MiB); empty without C(nvidia-smi).
      type: dict
    last:
      description: The last sample.
      type: dict
    path:
      description: The file read.
      type: str
stage:
  description: First failing stage from the log classifier (C(none) when no failure), null when no classifier answer.
  returned: always
  type: str
  sample: config
error_class:
  description: Error class from the log classifier, null when none.
  returned: always
  type: str
  sample: config_error
first_error:
  description: The classifier's first error (line, file, lineno, timestamp, process, node), null when none.
  returned: always
  type: dict
classification:
  description: The classifier's whole answer (stage, error_class, first_error, oom, stages_reached, consequences,
    timeline), null when it was not available.
  returned: always
  type: dict
classification_error:
  description: Why there is no classification, null when there is one.
  returned: always
  type: str
stage_marks:
  description: First line of each stage with its timestamp, from the classifier's timeline (to mark the memory series).
  returned: always
  type: list
  elements: dict
log_lines:
  description:
    - Lines of the server log when this call looked at it (a last line still being written counts). At the last
      O(state=checked) of an attempt this is the cutoff after which the log holds what the stop caused.
    - Redaction keeps every line, so the count holds for the record's redacted copy too.
  returned: always
  type: int
log_bytes:
  description: Size of the server log in bytes when this call looked at it.
  returned: always
  type: int
lease_until:
  description: Unix time the server's lease now runs to, null without a lease or when not renewed by this call.
  returned: always
  type: float
port_in_use:
  description:
    - With O(state=started), what holds the server's API port when it could not be bound before the start
      (host, port, error, holders with pid, comm and cmdline); nothing was started, RV(outcome) is C(port_in_use),
      RV(stage) C(environment) and RV(error_class) C(port_in_use). Null when the port was free.
  returned: always
  type: dict
cleaned:
  description: With O(state=swept), the abandoned servers stopped or found stopped (run_uid, case_id, run_id, node, pid, outcome, line).
  returned: when O(state=swept)
  type: list
  elements: dict
conflicts:
  description:
    - With O(state=swept), live servers of other runs that hold this attempt's port or GPUs - run_uid, case_id,
      run_id, controller, started, lease_until, holds, and a C(line) that says how to stop it.
  returned: when O(state=swept)
  type: list
  elements: dict
refusal:
  description:
    - With O(state=swept), why this attempt may not start (the message that names what RV(conflicts) hold), null
      when nothing holds what it needs.
  returned: when O(state=swept)
  type: str
lines:
  description: With O(state=swept), the progress lines - C(cleaned:) and the line of each of RV(cleaned), then RV(refusal).
  returned: when O(state=swept)
  type: list
  elements: str
live:
  description: With O(state=swept), every live server of another run on this host.
  returned: when O(state=swept)
  type: list
  elements: dict
lease_expired:
  description:
    - What the supervisor did when the lease ran out (expired_at, lease_until, renewed_at, renewed_by, processes it
      found, the stop), null when the lease never ran out.
  returned: always
  type: dict
remaining_pids:
  description: Processes of the server's session still alive at the end of a stop (must be empty), or, for the
    other states, the live processes of the session.
  returned: always
  type: list
  elements: int
remaining:
  description: The same processes with ppid, pgid, sid, comm and command line.
  returned: always
  type: list
  elements: dict
stop:
  description: Details of a stop (signals sent, processes found before, seconds), null when nothing was stopped.
  returned: always
  type: dict
container:
  description:
    - With a container runtime, what ran - C(runtime), C(runtime_version), C(name), C(id) (the container's),
      C(image) (the reference), C(image_repo_digest) (null when the runtime lists none), C(image_id), C(run_ref)
      (what was started, a digest or an id), C(pinned_by), C(pin) (keep it for the play's next attempts), C(tag_moved),
      C(args) (every C(run) argument the attempt added or kept), C(user_args) (O(container.args) and the production
      command's kept run options), C(dropped) (production run options the attempt sets
      itself), C(probe) (the in-container view), C(log_path) (C(container.log)) and C(stop); null for a process.
  returned: always
  type: dict
actions:
  description: What the module did or, in check mode, would do.
  returned: always
  type: list
  elements: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.repro.vllm.plugins.module_utils.server import _lease
from ansible_collections.repro.vllm.plugins.module_utils.common import _redact
from ansible_collections.repro.vllm.plugins.module_utils.container import _runtime as rtm
from ansible_collections.repro.vllm.plugins.module_utils.server import _server as srv


def _state_file(params):
    if params["state_file"]:
        return params["state_file"]
    if params["log_path"]:
        return os.path.join(os.path.dirname(os.path.abspath(params["log_path"])), "vllm_server.state.json")
    return None


def _base_result(state_file=None, log_path=None):
    return {
        "changed": False, "outcome": None, "ready": False, "failed_after_ready": False, "alive": False,
        "exit_code": None, "exit_signal": None, "pid": None, "pgid": None, "sid": None, "supervisor_pid": None,
        "time_to_ready_s": None, "health_status": None, "models_status": None, "last_probe_error": None,
        "base_url": None, "argv": [], "env": {}, "inherited_env_names": [], "log_path": log_path,
        "state_file": state_file, "memory_path": None, "memory": None, "stage": None, "error_class": None,
        "first_error": None, "classification": None, "classification_error": None, "stage_marks": [],
        "remaining_pids": [], "remaining": [], "stop": None, "actions": [], "log_lines": None, "log_bytes": None,
        "lease_until": None, "lease_expired": None, "port_in_use": None, "container": None,
    }


def _fill_from_state(result, st):
    for key in ("pid", "pgid", "sid", "supervisor_pid", "base_url", "argv", "env", "inherited_env_names",
                "log_path", "memory_path", "time_to_ready_s"):
        if st.get(key) is not None:
            result[key] = st[key]


def _read_back(result, log_path, node, classify):
    """The log's size and, unless ``classify`` is false, its classification; then the memory summary."""
    result["log_lines"], result["log_bytes"] = srv.log_size(log_path)
    if classify:
        answer, result["stage_marks"], result["classification_error"] = srv.classify_log(log_path, node=node)
        result["classification"] = answer
        if answer:
            result.update(stage=answer.get("stage"), error_class=answer.get("error_class"),
                          first_error=answer.get("first_error"))
    else:
        result["classification_error"] = "not classified here (classify=false): the play classifies every node's log once"
    _memory(result)


def _exit(result, exit_rec):
    if exit_rec:
        result["exit_code"] = exit_rec.get("exit_code")
        result["exit_signal"] = exit_rec.get("exit_signal")


def _members(st):
    return srv.session_members(st["sid"], st["pgid"], st.get("start_ticks"))


def _first_line(result):
    fe = result.get("first_error") or {}
    line = fe.get("line") if isinstance(fe, dict) else None
    return (": %s" % line.strip()[:300]) if line else ""


def _where(result):
    if result.get("stage"):
        return " (stage %s, class %s)" % (result["stage"], result.get("error_class"))
    return ""


def _memory(result):
    if result.get("memory_path"):
        result["memory"] = srv.read_memory(result["memory_path"])


# the runtime's client needs these where they are set (rootless podman's runtime dir, a remote engine)
_CLIENT_ENV = ("XDG_RUNTIME_DIR", "DOCKER_HOST", "DOCKER_CONFIG", "CONTAINER_HOST", "CONTAINERS_CONF")


def _container_plan(module, argv, env_names, result):
    """The container this start runs (None for a process): the command read for the runtime, the image pinned,
    a moved tag, the name and labels, and the ``run`` argv. Fails the task on a conflicting or unusable request."""
    p = module.params
    c = p["container"] or {}
    try:
        spec = rtm.split_command(argv, c.get("runtime"), c.get("image") or None)
    except (rtm.RuntimeSpecError, ValueError) as exc:
        module.fail_json(msg="vllm_server: refused: %s" % exc, **result)
    if spec is None:
        return None
    labels = dict((k, v) for k, v in (c.get("labels") or {}).items() if v not in (None, ""))
    if not labels.get("run_uid"):
        module.fail_json(msg="vllm_server: container.labels.run_uid is required with a container runtime (the run's "
                         "run_uid names and labels the container)", **result)
    rt = rtm.Runtime(spec["runtime"], c.get("executable"), timeout=max(30.0, p["command_timeout"]))
    if not rt.binary:
        module.fail_json(msg="vllm_server: the container runtime %s is not on this host's PATH (%s); install it, give "
                         "container.executable, or run the server as a process (repro_vllm_server_runtime: process)"
                         % (spec["runtime"], os.environ.get("PATH", "")), **result)
    now = rt.resolve(spec["image"])
    pin = rtm.pin_from_facts(spec["runtime"], spec["image"], c.get("pin"))
    if pin is None and now is None:
        fill = (spec["runtime"], spec["image"], spec["runtime"], spec["image"], spec["runtime"])
        module.fail_json(msg="vllm_server: %s does not hold the image %s on this host; bring it first (%s pull %s, or "
                         "%s load -i <file> from a saved image)" % fill, **result)
    if pin is None:
        pin = dict(now, runtime=spec["runtime"], pinned_by="first attempt")
    elif now is None or now.get("image_id") != pin.get("image_id"):
        # the pinned image must be on this host (a replay of a package's image, a tag moved since the fingerprint)
        if pin.get("image_id") and rt.image_record(pin["image_id"]) is None:
            module.fail_json(msg="vllm_server: %s does not hold the image %s (%s, pinned by %s) on this host; bring that "
                             "image (on a host that has it: %s save -o image.tar %s; here: %s load -i image.tar), or "
                             "start a new play to pin what %s names here"
                             % (spec["runtime"], pin["image_id"], pin.get("image_repo_digest") or pin.get("reference"),
                                pin.get("pinned_by") or "the play", spec["runtime"],
                                pin.get("image_repo_digest") or pin["image_id"], spec["runtime"], spec["image"]), **result)
    moved = rtm.moved_tag(pin, now)
    name = rtm.container_name(labels["run_uid"], p["node"] or labels.get("node"))
    labels["node"] = p["node"] or labels.get("node") or ""
    full_labels = rtm.run_labels(labels["run_uid"], labels.get("case"), labels.get("run"), labels.get("controller"),
                                 labels.get("node"))
    gpus = srv.visible_gpus(p["env"])
    run_argv = rtm.run_argv(rt.binary, spec, pin["run_ref"], name, full_labels, rtm.container_env_names(env_names),
                            gpus=gpus, host_has_gpus=bool(srv.host_gpu_devices()), container_args=c.get("args"))
    record = {"runtime": spec["runtime"], "binary": rt.binary, "name": name, "id": None, "image": spec["image"],
              "image_repo_digest": pin.get("image_repo_digest"), "image_id": pin.get("image_id"),
              "run_ref": pin["run_ref"], "pinned_by": pin.get("pinned_by"), "pin": pin, "tag_moved": moved,
              "args": _redact.redact_argv(run_argv[2:run_argv.index(pin["run_ref"])]), "dropped": spec["dropped"],
              "user_args": _redact.redact_argv([str(a) for a in c.get("args") or []] + list(spec["options"])),
              "labels": full_labels, "probe": None, "runtime_version": None, "log_path": None, "stop": None,
              # what ran, whole: the hand-off's startup command of a container run
              "argv": _redact.redact_argv(run_argv)}
    return {"spec": spec, "rt": rt, "argv": run_argv, "record": record, "moved": moved}


def _container_seen(plan, result, probe):
    """What ran: the container's id and the image it runs (by id, then its repo digest), the runtime's version and
    the in-container probe."""
    rt, rec = plan["rt"], plan["record"]
    seen = rt.inspect(rec["name"])
    if seen:
        rec["id"] = seen.get("id")
        if seen.get("image_id"):
            # the image the container runs, by its id: its repo digest as the runtime lists it now
            ran = rt.image_record(seen["image_id"])
            rec["image_id"] = seen["image_id"]
            rec["image_repo_digest"] = rtm.pinned_reference(rec["image"], (ran or {}).get("repo_digests") or [])
    rec["runtime_version"] = rt.version()
    if probe and seen and seen.get("running"):
        rec["probe"] = rt.probe(rec["name"])
    result["container"] = rec


def take_secret_file(path, check_mode=False):
    """The secret environment in ``path`` (a JSON object of names and values the play wrote, 0600, with no_log),
    read once and removed at once: ``(env, error)``. The values never pass through the module's parameters, so
    Ansible's no_log masking never rewrites the result that becomes server.json."""
    if not path:
        return {}, None
    try:
        with open(path, "r", encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        if check_mode and isinstance(exc, FileNotFoundError):
            return {}, None
        return {}, "vllm_server: cannot read secret_env_file %s: %s" % (path, type(exc).__name__)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    if not isinstance(data, dict):
        return {}, "vllm_server: secret_env_file %s holds no JSON object of names and values" % path
    return {str(k): "" if v is None else str(v) for k, v in data.items()}, None


def started_line(result):
    """The attempt's progress line for a start (RV(line))."""
    line = "server %s" % result.get("outcome", "?")
    if result.get("time_to_ready_s") is not None:
        line += " in %s s" % result["time_to_ready_s"]
    if result.get("exit_code") is not None:
        line += " (exit %s)" % result["exit_code"]
    return line + ("" if result.get("ready") else " (the stage is judged when the run closes)")


def run_started(module, result, state_file, file_secrets=None):
    p = module.params
    argv = [str(a) for a in (p["argv"] or [])]
    if not argv:
        module.fail_json(msg="vllm_server: argv is required with state=started (the server command as a list)", **result)
    if not p["log_path"]:
        module.fail_json(msg="vllm_server: log_path is required with state=started", **result)
    log_path = os.path.abspath(p["log_path"])
    log_dir = os.path.dirname(log_path)
    extra = dict(p["env"] or {})
    extra.update(p["secret_env"] or {})
    extra.update(file_secrets or {})
    plan = _container_plan(module, argv, sorted(extra), result)
    inherit = list(p["inherit_env"]) + ([k for k in _CLIENT_ENV if k not in p["inherit_env"]] if plan else [])
    env, inherited = srv.build_env(extra, inherit)
    vllm_argv = plan["spec"]["vllm_argv"] if plan else argv
    if plan:
        argv = plan["argv"]
        result["container"] = plan["record"]
        plan["record"]["log_path"] = os.path.join(log_dir, "container.log")
        if plan["moved"] and not (p["container"] or {}).get("allow_moved_tag"):
            result.update(outcome="refused", changed=False, argv=_redact.redact_argv(argv))
            result["msg"] = "vllm_server: refused: %s" % rtm.moved_line(plan["moved"])
            return
    base_url = (p["base_url"] or srv.derive_base_url(vllm_argv)).rstrip("/")
    red_argv = _redact.redact_argv(argv)
    result.update(argv=red_argv, env=_redact.redact_declared(_redact.redact_env(env), file_secrets),
                  inherited_env_names=inherited, base_url=base_url,
                  log_path=log_path, memory_path=os.path.join(log_dir, "memory.jsonl"))

    # already running (idempotence)
    st = srv.read_json(state_file)
    if st and st.get("pid") and srv.pid_alive(st["pid"], st.get("start_ticks")) and not st.get("stopped"):
        if st.get("argv") != red_argv:
            other = " ".join(st.get("argv") or [])
            module.fail_json(msg="vllm_server: a different server from %s still runs (pid %s, argv %s); stop it with "
                             "state=stopped first, or use another log_path/state_file" % (state_file, st["pid"], other),
                             **result)
        _fill_from_state(result, st)
        result.update(outcome="running", alive=True, ready=bool(st.get("ready")))
        result["remaining_pids"] = [m["pid"] for m in _members(st)]
        result["actions"].append("already running as pid %s; nothing started" % st["pid"])
        _memory(result)
        return

    exe = argv[0]
    if os.sep not in exe:
        found = None
        for d in env.get("PATH", "").split(os.pathsep):
            cand = os.path.join(d, exe)
            if d and os.path.isfile(cand) and os.access(cand, os.X_OK):
                found = cand
                break
        if found is None:
            module.fail_json(msg="vllm_server: %s not found in the server's PATH (%s); give argv[0] as an absolute "
                             "path or add its folder to PATH through env" % (exe, env.get("PATH", "")), **result)
    elif not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        module.fail_json(msg="vllm_server: %s is not an executable file; fix argv[0]" % exe, **result)

    cwd = p["chdir"] or log_dir
    result["actions"].append("start %s in a new session (cwd %s, log %s)" % (" ".join(red_argv), cwd, log_path))
    result["actions"].append("wait for GET %s/health 200 then %s/v1/models 200 (timeout %ss)"
                             % (base_url, base_url, p["ready_timeout"]))
    result["changed"] = True
    if module.check_mode:
        result["outcome"] = "planned"
        return

    try:
        os.makedirs(log_dir, exist_ok=True)
        if p["chdir"] is None:
            os.makedirs(cwd, exist_ok=True)
        if os.path.dirname(state_file):
            os.makedirs(os.path.dirname(state_file), exist_ok=True)
    except OSError as exc:
        module.fail_json(msg="vllm_server: cannot create %s: %s; choose a writable log_path/state_file" % (log_dir, exc),
                         **result)
    listen = srv.listen_port(vllm_argv)
    busy = srv.port_in_use(*listen) if listen and p["check_port"] else None
    if busy:
        # named before anything starts: never a start that "times out" on a port another program holds
        holders = ", ".join("pid %s %s" % (h["pid"], (h.get("cmdline") or h.get("comm") or "")[:120])
                            for h in busy["holders"]) or "a process this user cannot see"
        result.update(outcome="port_in_use", stage="environment", error_class="port_in_use", port_in_use=busy,
                      changed=False)
        result["msg"] = ("vllm_server: port %s on %s is already in use (%s) by %s; nothing was started. Stop that "
                         "program or give the attempt another port (repro_vllm_port)" % (busy["port"], busy["host"],
                                                                                         busy["error"], holders))
        return
    nvidia_smi = srv.find_nvidia_smi(p["nvidia_smi_path"])
    container = None
    if plan:
        container = {"runtime": plan["record"]["runtime"], "binary": plan["record"]["binary"],
                     "name": plan["record"]["name"]}
    lease_file = p["lease_file"] or srv.lease_file_for(state_file)
    node = p["node"] or ""
    if p["lease"] > 0:
        # the lease (or the controller's heartbeat) covers the wait for readiness; the supervisor stops the group
        # when nobody renews it
        first = p["lease"] if p["heartbeat"] else p["ready_timeout"] + p["lease"]
        result["lease_until"] = _renew(p, lease_file, state_file, first, "vllm_server start",
                                       dict(_lease_info(p, env, listen, container), state_file=state_file,
                                            log_path=log_path))
    if plan:
        if plan["rt"].exists(container["name"]):
            # the same run_uid and node: a container this run left from a start the play retried
            plan["rt"].call(["rm", "-f", container["name"]], timeout=60.0)
            result["actions"].append("removed this run's earlier container %s" % container["name"])
    try:
        info = srv.spawn(argv, env, log_path, cwd, state_file, result["memory_path"],
                         interval=p["memory_interval"], nvidia_smi=nvidia_smi,
                         gpu_timeout=p["command_timeout"], lease=p["lease"] > 0, stop_grace=p["stop_grace"],
                         lease_file=lease_file, node=node, container=container)
    except OSError as exc:
        module.fail_json(msg="vllm_server: could not start %s (log %s): %s" % (exe, log_path, exc), **result)
    if "error" in info:
        module.fail_json(msg="vllm_server: could not start %s: %s; check argv[0] and chdir %s"
                         % (exe, info["error"], cwd), **result)
    pid = info["pid"]
    result.update(pid=pid, pgid=pid, sid=pid, supervisor_pid=info["supervisor_pid"])
    st = {"pid": pid, "pgid": pid, "sid": pid, "start_ticks": info.get("start_ticks"),
          "supervisor_pid": info["supervisor_pid"], "argv": red_argv, "env": result["env"],
          "inherited_env_names": inherited, "base_url": base_url, "log_path": log_path,
          "memory_path": result["memory_path"], "started_at": round(info["started_at"], 3), "ready": False,
          "time_to_ready_s": None, "stopped": False, "node": p["node"], "container": container}
    srv.write_json_atomic(state_file, st)
    if p["lease"] > 0 and p["lease_file"]:
        _lease.update_node(lease_file, node, pid=pid, container=container)

    headers = {}
    key = srv.api_key_from(vllm_argv, env)
    if key:
        headers["Authorization"] = "Bearer %s" % key
    waited = srv.wait_ready(base_url, pid, info.get("start_ticks"), srv.exit_file_for(state_file), info["t0"],
                            p["ready_timeout"], headers=headers)
    result.update(outcome=waited["outcome"], health_status=waited["health_status"],
                  models_status=waited["models_status"], last_probe_error=waited["last_probe_error"])
    if plan:
        _container_seen(plan, result, (p["container"] or {}).get("probe", True) and waited["outcome"] == "ready")
    if waited["outcome"] == "ready":
        result.update(ready=True, alive=True, time_to_ready_s=waited["time_to_ready_s"])
        if p["lease"] > 0:
            result["lease_until"] = _renew(p, lease_file, state_file, p["lease"], "vllm_server ready")
        st.update(ready=True, time_to_ready_s=waited["time_to_ready_s"])
        srv.write_json_atomic(state_file, st)
    else:
        # exited or timed out: stop whatever is left of the group and prove it is gone
        if plan:
            plan["record"]["stop"] = srv.stop_container(container, p["stop_grace"], plan["record"]["log_path"])
        stop = srv.stop_group(pid, pid, info.get("start_ticks"), p["stop_grace"])
        result["stop"] = stop
        if stop["signalled"]:
            result["actions"].append("sent %s to process group %s" % (" then ".join(stop["signalled"]), pid))
        result["remaining"] = stop["remaining"]
        result["remaining_pids"] = [m["pid"] for m in stop["remaining"]]
        _exit(result, waited["exit"] or srv.wait_exit_record(srv.exit_file_for(state_file), 5.0))
        st.update(stopped=bool(stop["signalled"]))
        srv.write_json_atomic(state_file, st)
    srv.reap_quietly(info["supervisor_pid"])
    _read_back(result, log_path, p["node"], p["classify"])
    if result["ready"]:
        return
    if waited["outcome"] == "timeout":
        result["msg"] = ("vllm_server: %s was not ready within %ss (last /health: %s, last error: %s); the whole process "
                         "group %s was stopped (%s) and %s. See %s%s%s. Raise ready_timeout if the start was only slow."
                         % (exe, p["ready_timeout"], result["health_status"], result["last_probe_error"], pid,
                            " then ".join(result["stop"]["signalled"]) or "it had already exited",
                            "no process of it is left" if not result["remaining_pids"]
                            else "processes %s are STILL alive" % result["remaining_pids"],
                            log_path, _where(result), _first_line(result)))
    else:
        fill = (exe, result["exit_code"], _where(result), _first_line(result), log_path)
        result["msg"] = ("vllm_server: %s exited with code %s before it was ready%s%s. Full log: %s; fix the cause "
                         "named there and start again." % fill)


def run_checked(module, result, state_file):
    p = module.params
    st = srv.read_json(state_file)
    if not st or not st.get("pid"):
        module.fail_json(msg="vllm_server: no server state in %s; start it with state=started (same log_path or "
                         "state_file) first" % state_file, **result)
    _fill_from_state(result, st)
    fill = (st["pid"], st.get("base_url"), st.get("log_path"))
    result["actions"].append("check pid %s, GET %s/health, classify %s" % fill)
    exit_file = srv.exit_file_for(state_file)
    alive = srv.pid_alive(st["pid"], st.get("start_ticks"))
    health = None
    if alive:
        health, err = srv.http_get(st["base_url"] + srv.HEALTH_ROUTE, 5.0)
        result["last_probe_error"] = err
        if health != 200 and p["exit_wait"] > 0:
            deadline = srv.time.monotonic() + p["exit_wait"]
            while srv.time.monotonic() < deadline and srv.pid_alive(st["pid"], st.get("start_ticks")):
                srv.time.sleep(0.1)
            alive = srv.pid_alive(st["pid"], st.get("start_ticks"))
    if not alive:
        _exit(result, srv.wait_exit_record(exit_file, 3.0))
    members = _members(st)
    result.update(alive=alive, health_status=health, remaining=srv.describe(members),
                  remaining_pids=[m["pid"] for m in members])
    result["ready"] = bool(alive and health == 200)
    if not alive:
        result["outcome"] = "exited"
    else:
        result["outcome"] = "running" if health == 200 else "unhealthy"
    _read_back(result, st["log_path"], p["node"] or st.get("node"), p["classify"])
    result["lease_expired"] = srv.read_json(srv.lease_expired_file_for(state_file))
    if p["lease"] > 0 and alive and not result["lease_expired"]:
        result["lease_until"] = _renew(p, p["lease_file"] or srv.lease_file_for(state_file), state_file, p["lease"],
                                       "vllm_server check")
    was_ready = bool(st.get("ready")) and not st.get("stopped")
    engine_dead = result.get("error_class") == "engine_dead"
    result["failed_after_ready"] = bool(was_ready and (not alive or health != 200 or engine_dead))
    if result["failed_after_ready"]:
        result["msg"] = ("vllm_server: the server in %s was ready and then %s (exit code %s%s)%s%s. A vLLM server exits "
                         "with 0 after its engine died, so this is a failure. Log: %s"
                         % (state_file, "exited" if not alive else "answers /health with %s" % health,
                            result["exit_code"], ", %s" % result["exit_signal"] if result["exit_signal"] else "",
                            _where(result), _first_line(result), st["log_path"]))
    elif not st.get("ready") and not alive:
        result["msg"] = "vllm_server: the server in %s never became ready and is not running" % state_file


def run_stopped(module, result, state_file):
    p = module.params
    st = srv.read_json(state_file)
    if not st or not st.get("pid"):
        result["outcome"] = "not_running"
        result["actions"].append("no state in %s; nothing to stop" % state_file)
        _release(module, result)
        return
    _fill_from_state(result, st)
    result["lease_expired"] = srv.read_json(srv.lease_expired_file_for(state_file))
    container = st.get("container")
    if container:
        # the container first, by name (its client ends with it); its log is saved before it is removed
        logs = os.path.join(os.path.dirname(st["log_path"]), "container.log")
        result["container"] = dict(container, log_path=logs, stop=None)
        if not module.check_mode:
            result["container"]["stop"] = srv.stop_container(container, p["stop_grace"], logs)
            result["changed"] = result["changed"] or result["container"]["stop"]["existed"]
    members = _members(st)
    exit_file = srv.exit_file_for(state_file)
    if not members:
        result["outcome"] = "stopped" if result["changed"] else "not_running"
        _exit(result, srv.read_json(exit_file))
        result["actions"].append("no process of session %s is left; nothing to stop" % st["sid"])
        _memory(result)
        if not (container and (result["container"]["stop"] or {}).get("existed")
                and not result["container"]["stop"]["removed"]):
            _release(module, result)
        return
    result["changed"] = True
    result["actions"].append("SIGTERM to the API server %s, then to process group %s, SIGKILL after %ss, then "
                             "scan /proc for session %s" % (st["pid"], st["pgid"], p["stop_grace"], st["sid"]))
    if module.check_mode:
        result["outcome"] = "planned"
        result["remaining"] = srv.describe(members)
        result["remaining_pids"] = [m["pid"] for m in members]
        return
    stop = srv.stop_group(st["sid"], st["pgid"], st.get("start_ticks"), p["stop_grace"])
    result["stop"] = stop
    result["remaining"] = stop["remaining"]
    result["remaining_pids"] = [m["pid"] for m in stop["remaining"]]
    _exit(result, srv.wait_exit_record(exit_file, 5.0))
    st.update(stopped=True, stopped_at=round(srv.time.time(), 3))
    srv.write_json_atomic(state_file, st)
    result["outcome"] = "stopped"
    _read_back(result, st["log_path"], p["node"] or st.get("node"), p["classify"])
    left = container and result["container"]["stop"] and result["container"]["stop"]["existed"] and \
        not result["container"]["stop"]["removed"]
    if not result["remaining_pids"] and not left:
        _release(module, result)
    if left:
        result["msg"] = ("vllm_server: the container %s could not be removed (%s); remove it by hand (%s rm -f %s)"
                         % (container["name"], "; ".join(result["container"]["stop"]["errors"]), container["runtime"],
                            container["name"]))
    if result["remaining_pids"]:
        fill = (result["remaining_pids"], st["sid"], result["remaining"])
        result["msg"] = ("vllm_server: processes %s of session %s are still alive after SIGKILL (%s); they may be in "
                         "uninterruptible I/O (state D) or owned by another user" % fill)


def _lease_info(p, env, listen, container=None):
    info = dict(p["lease_info"] or {})
    if listen and info.get("port") is None:
        info["port"] = listen[1]
    if "gpus" not in info:
        info["gpus"] = srv.visible_gpus(env)
    info.setdefault("host", p["node"])
    if container:
        info["container"] = container
    return info


def _renew(p, lease_file, state_file, seconds, by, info=None):
    if p["lease_file"]:
        return _lease.renew_node(lease_file, p["node"] or "", seconds, by=by, info=info)
    return _lease.renew_lease(srv.lease_file_for(state_file), seconds, by=by)


def _release(module, result):
    """The server is gone: this node no longer holds anything under the run's lease."""
    p = module.params
    if p["lease_file"] and not module.check_mode:
        _lease.release_node(p["lease_file"], p["node"] or "")
        result["actions"].append("released %s's entry of %s" % (p["node"], p["lease_file"]))


def run_swept(module, result):
    p = module.params
    argv = [str(a) for a in (p["argv"] or [])]
    plan = _container_plan(module, argv, sorted(p["env"] or {}), result) if argv else None
    if plan:
        argv = plan["spec"]["vllm_argv"]
        result["container"] = plan["record"]
    listen = srv.listen_port(argv) if argv else None
    gpus = srv.visible_gpus(p["env"])
    host_has_gpus = bool(srv.host_gpu_devices())
    swept = srv.sweep_leases(p["lease_dir"], p["run_uid"], port=listen[1] if listen else None, gpus=gpus,
                             host_has_gpus=host_has_gpus, grace=p["stop_grace"], check_mode=module.check_mode,
                             only_run_uid=p["only_run_uid"])
    if plan and plan["moved"] and not (p["container"] or {}).get("allow_moved_tag"):
        swept["conflicts"].append({"holds": ["image %s moved" % plan["moved"]["reference"]],
                                   "tag_moved": plan["moved"], "line": rtm.moved_line(plan["moved"])})
    result.update(swept)
    result["changed"] = bool(swept["cleaned"])
    result["remaining_pids"] = [pid for c in swept["cleaned"] for pid in c["remaining_pids"]]
    result["outcome"] = "conflict" if swept["conflicts"] else "swept"
    if result["remaining_pids"]:
        result["msg"] = ("vllm_server: processes %s of abandoned servers are still alive after SIGKILL; stop them by "
                         "hand (kill -9) before the next run" % result["remaining_pids"])
    elif swept["conflicts"]:
        result["msg"] = "vllm_server: refused: " + "; ".join(c["line"] for c in swept["conflicts"])
    result["refusal"] = result["msg"] if swept["conflicts"] else None
    result["lines"] = ["cleaned: %s" % c["line"] for c in result["cleaned"]]
    if result["refusal"]:
        result["lines"].append(result["refusal"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="started", choices=["started", "stopped", "checked", "swept"]),
            argv=dict(type="list", elements="str"),
            env=dict(type="dict", default={}),
            secret_env=dict(type="dict", default={}, no_log=True),
            secret_env_file=dict(type="path"),
            inherit_env=dict(type="list", elements="str", default=list(srv.DEFAULT_INHERIT_ENV)),
            log_path=dict(type="path"),
            state_file=dict(type="path"),
            base_url=dict(type="str"),
            chdir=dict(type="path"),
            ready_timeout=dict(type="float", default=600.0),
            stop_grace=dict(type="float", default=10.0),
            exit_wait=dict(type="float", default=5.0),
            memory_interval=dict(type="float", default=1.0),
            nvidia_smi_path=dict(type="path"),
            node=dict(type="str"),
            fail_on_error=dict(type="bool", default=True),
            command_timeout=dict(type="float", default=10.0),
            classify=dict(type="bool", default=True),
            lease=dict(type="float", default=0.0),
            heartbeat=dict(type="bool", default=False),
            check_port=dict(type="bool", default=True),
            lease_file=dict(type="path"),
            lease_info=dict(type="dict"),
            lease_dir=dict(type="path", default=_lease.DEFAULT_LEASE_DIR),
            run_uid=dict(type="str"),
            only_run_uid=dict(type="str"),
            container=dict(type="dict", options=dict(
                runtime=dict(type="str", default="process", choices=["process", "podman", "docker"]),
                image=dict(type="str"),
                executable=dict(type="path"),
                args=dict(type="list", elements="str", default=[]),
                pin=dict(type="dict"),
                allow_moved_tag=dict(type="bool", default=False),
                labels=dict(type="dict"),
                probe=dict(type="bool", default=True),
            )),
        ),
        required_if=[("state", "started", ("argv", "log_path")), ("state", "swept", ("run_uid", "only_run_uid"), True)],
        supports_check_mode=True,
    )
    state = module.params["state"]
    if state != "swept" and not (module.params["log_path"] or module.params["state_file"]):
        module.fail_json(msg="vllm_server: one of log_path or state_file is required with state=%s" % state)
    state_file = _state_file(module.params)
    result = _base_result(state_file=state_file, log_path=module.params["log_path"])
    if state == "swept":
        run_swept(module, result)
        failed = bool(result["remaining_pids"] or result["conflicts"])
    elif state == "started":
        secrets, error = take_secret_file(module.params["secret_env_file"], module.check_mode)
        if error:
            module.fail_json(msg=error, **result)
        try:
            run_started(module, result, state_file, file_secrets=secrets)
            result["line"] = started_line(result)
        finally:
            # the result names the secret variables, never a value (the env itself is redacted where it is set)
            result.update(_redact.redact_declared(result, secrets))
        failed = not result["ready"] and result["outcome"] not in ("planned",)
    elif state == "checked":
        run_checked(module, result, state_file)
        failed = result["failed_after_ready"]
    else:
        run_stopped(module, result, state_file)
        failed = bool(result["remaining_pids"])
    if failed and module.params["fail_on_error"]:
        fill = (state, result["outcome"], result["log_path"])
        result.setdefault("msg", "vllm_server: state=%s failed (outcome %s); see %s" % fill)
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
