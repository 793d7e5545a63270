#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: served_process
short_description: Freeze what the failing production vLLM server is - command, environment, image, restarts, logs
version_added: 0.1.0
description:
  - Resolves the production server named by O(service) (the play's C(repro_vllm_service)) to its process and
    returns the content of C(hosts/<host>/service.json) of a fingerprint run plus its logs, without changing
    anything on the host.
  - O(service.kind=pid) reads C(/proc/<pid>); O(service.kind=match) takes the lowest pid whose command line
    matches O(service.pattern) (never this module or its parents); O(service.kind=systemd) reads
    C(systemctl show) (C(NRestarts), C(ExecMainStatus)) and C(journalctl -u); O(service.kind=docker) and
    O(service.kind=podman) read C(container inspect) (C(RestartCount), C(State.ExitCode), the image) and
    C(logs); O(service.kind=kubectl) reads C(kubectl get pod -o json) (C(restartCount),
    C(lastState.terminated.exitCode), C(imageID)) and C(kubectl logs), with C(--previous) after a restart.
  - When the main process is visible in this host's C(/proc) its command line, environment, executable and the
    libcuda files it mapped come from there.
  - Command lines, environments and logs are redacted with the collection's redactor before they are returned;
    logs keep their head and tail up to O(max_log_bytes), the cut is marked in the text and counted in the record.
  - A server that cannot be found, or a tool that is missing or times out, is reported in the result
    (C(record.status) not_found or error, C(record.msg) saying why); the task fails only when O(fail_on_missing).
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
  - repro.vllm._attributes.info_module
  - repro.vllm._command_timeout
attributes:
  idempotent:
    description: Reading the same server again reports no change.
    support: full
options:
  service:
    description:
      - What names the production server (the C(repro_vllm_service) variable).
    type: dict
    required: true
    suboptions:
      kind:
        description: How the server is found.
        type: str
        required: true
        choices: [pid, match, systemd, docker, podman, kubectl]
      pid:
        description: The process id (O(service.kind=pid)).
        type: int
      pattern:
        description: A Python regular expression searched in the command line joined by spaces (O(service.kind=match)).
        type: str
      name:
        description: The systemd unit, the container name or id, or the pod name.
        type: str
      namespace:
        description: The Kubernetes namespace (O(service.kind=kubectl)); default is kubectl's context namespace.
        type: str
      container:
        description: The container of the pod (O(service.kind=kubectl)); default is the pod's first container.
        type: str
      restart_count:
        description:
          - For O(service.kind=pid) and O(service.kind=match), a restart count the operator knows from the
            supervisor (no kernel interface keeps one).
        type: int
      state_file:
        description:
          - "For O(service.kind=pid) and O(service.kind=match), a JSON file a home-made supervisor keeps:
            C({\"restart_count\": <int>, \"exit_codes\": [<int>, ...]}) (the last ten exit codes are kept)."
        type: path
      log_current:
        description: For O(service.kind=pid) and O(service.kind=match), the file the server logs to now.
        type: path
      log_previous:
        description: For O(service.kind=pid) and O(service.kind=match), the log of its previous instance.
        type: path
      binary:
        description: Path of systemctl, docker, podman or kubectl when it is not on C(PATH).
        type: path
  max_log_bytes:
    description: Bytes kept of each log (half from its start, half from its end).
    type: int
    default: 262144
  fail_on_missing:
    description: Fail the task when the server is not found or cannot be read.
    type: bool
    default: false
  proc_root:
    description: Where C(/proc) is mounted (a test or a container with the host's /proc elsewhere).
    type: path
    default: /proc
"""

EXAMPLES = r"""
- name: Freeze the production server run by systemd
  repro.vllm.served_process:
    service:
      kind: systemd
      name: vllm.service
  register: served

- name: Freeze the production pod through the host's kubectl
  repro.vllm.served_process:
    service:
      kind: kubectl
      name: vllm-0
      namespace: inference
    command_timeout: 20

- name: Freeze a bare process by its command line
  repro.vllm.served_process:
    service:
      kind: match
      pattern: 'vllm serve .*--port 8000'
      log_current: /var/log/vllm/server.log
"""

RETURN = r"""
record:
  description:
    - The content of C(service.json). C(restart_count) and C(exit_codes) are what the isolation decision's
      C(restarts) condition reads.
  returned: always
  type: dict
  contains:
    kind: {description: The kind of O(service), type: str, returned: always}
    status: {description: "ok, not_found or error", type: str, returned: always}
    msg: {description: Why the server was not read (null when C(status=ok)), type: str, returned: always}
    pid: {description: The main process id read from /proc (null when not visible here), type: int, returned: always}
    cmdline:
      description: The command line, redacted.
      type: list
      elements: str
      returned: always
    env:
      description: The environment, secret values redacted.
      type: dict
      returned: always
    exe: {description: The executable of the main process, type: str, returned: always}
    image:
      description: "C(reference), C(id) and C(digest) of the image a container or pod runs (null otherwise)"
      type: dict
      returned: always
    libcuda:
      description: "The libcuda files the main process mapped: [{path, version, deleted}] (null when not read)"
      type: list
      elements: dict
      returned: always
    restart_count: {description: Restarts counted by the supervisor (null when unknown), type: int, returned: always}
    exit_codes: {description: Last exit statuses seen (previous and current instance), type: list, elements: int,
                 returned: always}
    signals: {description: Signals that ended the last instance, type: list, elements: int, returned: always}
    state: {description: The supervisor's own state fields, type: dict, returned: always}
    logs:
      description: "Per log (C(current), C(previous)): C(bytes), C(kept_bytes), C(cut_bytes), C(path) in the run, or C(status)
        and C(msg) when it could not be read"
      type: dict
      returned: always
    commands: {description: "Commands run: [{cmd, rc, status}]", type: list, elements: dict, returned: always}
    errors: {description: What could not be read and why, type: list, elements: str, returned: always}
  sample:
    kind: podman
    status: ok
    restart_count: 2
    exit_codes: [3]
    image: {reference: "localhost/repro-vllm-tiny:0.1", digest: "sha256:1976..."}
logs:
  description: The capped, redacted log texts by name (C(current), C(previous)), for run_record to write.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.repro.vllm.plugins.module_utils.container import _container
from ansible_collections.repro.vllm.plugins.module_utils.server import _service
from ansible_collections.repro.vllm.plugins.module_utils.common._cmd import run_cmd


def _docker_digest(record, timeout):
    """docker's container inspect has the image id only: the repo digest comes from container_facts' gather."""
    image = record.get("image") or {}
    if record["kind"] != "docker" or image.get("digest") or not image.get("id"):
        return
    facts, _actions = _container.gather(image["id"], runtimes=("docker",), timeout=timeout)
    image["digest"] = _container.image_digest(facts, image.get("reference"))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            service=dict(type="dict", required=True, options=dict(
                kind=dict(type="str", required=True, choices=list(_service.KINDS)),
                pid=dict(type="int"),
                pattern=dict(type="str"),
                name=dict(type="str"),
                namespace=dict(type="str"),
                container=dict(type="str"),
                restart_count=dict(type="int"),
                state_file=dict(type="path"),
                log_current=dict(type="path"),
                log_previous=dict(type="path"),
                binary=dict(type="path"),
            )),
            max_log_bytes=dict(type="int", default=_service.DEFAULT_LOG_BYTES),
            fail_on_missing=dict(type="bool", default=False),
            proc_root=dict(type="path", default="/proc"),
            command_timeout=dict(type="float", default=10.0),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["command_timeout"] <= 0 or p["max_log_bytes"] < 1024:
        module.fail_json(msg="command_timeout must be positive and max_log_bytes at least 1024")
    spec = dict((k, v) for k, v in p["service"].items() if v is not None)
    try:
        record, logs = _service.gather(
            spec, run=run_cmd, proc_root=p["proc_root"], max_log_bytes=p["max_log_bytes"],
            timeout=p["command_timeout"], binary=spec.get("binary"))
    except _service.ServiceError as exc:
        module.fail_json(msg="%s (fix repro_vllm_service in the inventory or on the command line)" % exc)
    if record["status"] == "ok":
        _docker_digest(record, p["command_timeout"])
    if p["fail_on_missing"] and record["status"] != "ok":
        module.fail_json(msg="production server %s %s: %s" % (record["kind"], record["name"] or record["pid"],
                                                              record["msg"]), record=record, logs=logs)
    module.exit_json(changed=False, record=record, logs=logs)


if __name__ == "__main__":
    main()
