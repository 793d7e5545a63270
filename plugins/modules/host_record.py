#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_record
short_description: Record one host's part of the open run on the controller, in one task
version_added: 0.1.0
description:
  - The one record path of the collection. In one task per host it runs one module execution on the host that
    gathers what the part needs (O(gather)) and prepares the host files a stage names (O(files)), brings them
    back through the connection with their sha256 checked, writes the part into C(<run_path>/<part_dir>/) on
    the controller, scans it once more for secret shapes, freezes it (its own C(manifest.json)) and verifies it.
  - This is an action plugin with a module of the same name; the module side runs on the host, the rest on
    the controller. Use it as a normal task on the host (no C(delegate_to)).
  - What leaves the host is redacted there, with the collection's one redactor. The controller does not
    rewrite anything; a part that still holds a secret shape is not written and the host is recorded as
    failed, naming the file, the line numbers and the kind of secret (never the secret).
  - Host files larger than O(log_max_bytes) keep their head and tail; the manifest entry of the file records
    C(cut) (offset, length and sha256 of the bytes left out) and C(original) (size and sha256 of the whole file).
  - Results up to O(inline_max_bytes) travel inside the module result, so no folder is created on the host.
    Larger ones are written into a staging folder created for this call only (C(tempfile.mkdtemp) under
    O(staging_root), an id in its name, never an existing folder), fetched, verified on the controller and
    then removed from the host. With C(become), files always travel inline (the connection user may not read
    the become user's folder).
  - A failed host keeps its real error in C(failed.json) (the module's message, its stderr and exception tail,
    redacted); an unreachable or lost host gets C(unreachable.json). Both are frozen like any part, and the
    task reports the failure; use C(ignore_errors) and C(ignore_unreachable) so the host stays in the play and
    the run can be closed.
  - Argument check on the controller - O(command_timeout) must be smaller than the task's C(timeout).
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
attributes:
  check_mode:
    support: full
    details:
      - Gathers on the host and reports what would be written; nothing is written on the host or controller.
  diff_mode:
    support: none
  idempotent:
    description: When run again with the same arguments, the module reports no change.
    support: none
    details:
      - Each call records a new part; a part that is already frozen is refused.
options:
  run_path:
    description:
      - The open (not frozen) run on the controller, the C(path) that C(repro.vllm.run_record) returns with C(state=create).
    type: path
    required: true
  part_dir:
    description:
      - Folder of this host's part inside the run. Default C(hosts/<inventory_hostname>).
    type: str
  stage:
    description:
      - Name of the stage recording this part (C(fingerprint), C(minimal), ...); goes into the part's manifest.
    type: str
    default: fingerprint
  gather:
    description:
      - What the module gathers on the host. C(basics) - OS, kernel, Python and the redacted environment
        (C(env.json)); C(gpu) - the facts of C(repro.vllm.gpu_facts); C(container) - the facts of
        C(repro.vllm.container_facts) for O(image) (C(container.json)); C(collect_env) - vLLM's own report of the
        serving environment for O(collect_env_argv) (C(collect_env.json)). C(fingerprint.json) is written when
        C(basics) or C(gpu) is gathered.
    type: list
    elements: str
    choices: [basics, gpu, container, collect_env]
    default: []
  collect_env_argv:
    description:
      - With C(collect_env) in O(gather), the server command whose vLLM reports its environment - its C(vllm)'s own
        C(vllm collect-env) subcommand first (works through a site's wrapper script), then C(python -m vllm.collect_env)
        with the interpreter of its C(vllm) script or the command's own python (a CLI without the subcommand).
        C(collect_env.json) says which ran (C(via), C(command), C(tried)). A command that runs an image (docker,
        podman, ...) is skipped with the reason. The output is redacted on the host and written as C(collect_env.json).
    type: list
    elements: str
    default: []
  collect_env_container:
    description:
      - The server's container as M(repro.vllm.vllm_server) returned it (C(runtime), C(binary), C(run_ref), C(args)).
        With it, C(python3 -m vllm.collect_env) runs in a new container of the same image and arguments
        (C(run --rm --entrypoint python3)), so the report is the image's, whatever O(collect_env_argv) says.
    type: dict
  collect_env_timeout:
    description: Seconds C(vllm.collect_env) may run (it imports torch; about 7 s on an H200 host).
    type: float
    default: 120
  image:
    description:
      - Image reference whose digests C(container) records. Empty - C(container.json) says it was skipped.
    type: str
    default: ""
  nvidia_smi_path:
    description:
      - nvidia-smi to use; empty means found on PATH.
    type: str
    default: ""
  command_timeout:
    description:
      - Seconds each external command on the host may run before its process group is killed.
    type: float
    default: 10
  data:
    description:
      - Parts computed on the controller, written as JSON. Keys are paths relative to O(part_dir) (for example
        C(command.json)); values are redacted with the collection's redactor before they are written.
    type: dict
    default: {}
  secrets:
    description:
      - The values the operator declared secret (C(repro_vllm_secret_env), names and values), read on the controller
        only (never sent to the host). Every part is redacted of them whatever their name or shape - the variable's
        own value always (a key of that name, C(NAME=value), a JSON pair of that name), the value by itself anywhere
        only when it has 8 characters or more and is not only digits (docs/handoff.md, section Declared secrets).
    type: dict
    default: {}
  files:
    description:
      - Host files to bring back into the part (server logs, the memory trace).
    type: list
    elements: dict
    default: []
    suboptions:
      src:
        description: Absolute path of the file on the host.
        type: str
        required: true
      part:
        description: Path relative to O(part_dir) (for example C(logs/server.log)).
        type: str
        required: true
      required:
        description: A missing file fails the host; otherwise it is listed in C(missing_files) of the result.
        type: bool
        default: false
      redact:
        description: Mask secret shapes on the host before the file leaves it. Turn off only for binary data.
        type: bool
        default: true
  remove_src:
    description:
      - Paths on the host to remove after the part is frozen and verified on the controller (for example the
        stage's own state folder). Name only what the stage itself created.
    type: list
    elements: str
    default: []
  remove_empty_parents:
    description:
      - After O(remove_src), also remove this many levels of their parent folders that are left empty (an attempt
        removes C(runs/<run_uid>/hosts/<host>) and C(runs/<run_uid>/.state/<host>), then C(runs/<run_uid>) once
        both are gone). A folder that still holds anything is kept.
    type: int
    default: 0
  cleanup:
    description:
      - Used by the action's own second call, after the controller verified its copy - the staging folder
        and O(remove_src) to remove. Do not set it in a task.
    type: list
    elements: str
    default: []
  redact_key:
    description:
      - Set by the action from the case's redaction key (C(<records_root>/<case_id>/.redact.key) on the controller),
        so what the host redacts carries stable markers C(<redacted:kind:hex8>) (equal secrets, equal markers).
        Passed as a no_log argument and never written on the host. Do not set it in a task.
    type: str
    default: ""
  staging_label:
    description:
      - Readable part of the staging folder's name (the action passes C(<case_id>-<run_id>-<host>)); the
        folder name always ends in a random id.
    type: str
    default: ""
  log_max_bytes:
    description:
      - Largest size in bytes kept of one host file; above it the head and tail are kept (together this many
        bytes) and the cut is recorded in the manifest. Role variable C(repro_vllm_log_max_bytes).
    type: int
    default: 67108864
  inline_max_bytes:
    description:
      - Files up to this size (after capping and redaction) travel inside the module result; larger ones go
        through a staging folder.
    type: int
    default: 4194304
  staging_root:
    description:
      - Folder on the host under which the per-call staging folder is created when one is needed. Empty - the
        host's temporary directory.
    type: str
    default: ""
  metadata:
    description:
      - Extra data stored under C(metadata) in the part's manifest.
    type: dict
    default: {}
  service:
    description:
      - The production server of this host (the play's C(repro_vllm_service), docs/decisions.md). When set, the
        action first runs M(repro.vllm.served_process) on the host (read only) and writes its record as
        C(service.json) and the server's capped, redacted logs (C(logs/service-current.log),
        C(logs/service-previous.log)) into this host's part, with the rest of the part; the console gets the
        server's line. Empty - nothing is read.
    type: dict
    default: {}
  service_command_timeout:
    description:
      - Seconds each command that reads O(service) may run; must be smaller than the task timeout. Unset - 15
        (the controller side's default, the same as the C(repro.vllm.service) role's).
    type: float
  service_max_log_bytes:
    description:
      - Bytes kept of each log of O(service) (head and tail). Unset - 262144.
    type: int
  service_required:
    description:
      - Record the host as failed (C(failed.json), the reason) when O(service) is not found or cannot be read.
        Unset or false - its C(service.json) says C(not_found) or C(error) and the host is fingerprinted as usual.
    type: bool
notes:
  - The part's C(manifest.json) holds C(schema_version), C(case_id) and C(run_id) (the run's own, from
    O(run_path)), C(collection_version) (read from the collection's C(galaxy.yml) on the controller),
    C(metadata.host), C(metadata.stage) and C(metadata.status).
seealso:
  - module: repro.vllm.run_record
  - module: repro.vllm.gpu_facts
  - name: Records layout
    description: docs/records.md of this collection.
    link: https://example.invalid/repro/vllm/blob/main/docs/records.md
"""

EXAMPLES = r"""
- name: Fingerprint this host into the open run (one task per host)
  repro.vllm.host_record:
    run_path: "{{ repro_vllm_run.path }}"
    stage: fingerprint
    gather: [basics, gpu, container]
    image: "{{ repro_vllm_image }}"
    command_timeout: 10
  timeout: 180
  ignore_errors: true
  ignore_unreachable: true
  register: _repro_vllm_host_record

- name: Bring back a stage's server log and memory trace, capped at 64 MiB each
  repro.vllm.host_record:
    run_path: "{{ run.path }}"
    part_dir: "hosts/{{ inventory_hostname }}"
    stage: minimal
    data:
      command.json: "{{ command_record }}"
    files:
      - src: "{{ state_dir }}/server.log"
        part: logs/server.log
        required: true
      - src: "{{ state_dir }}/memory.jsonl"
        part: memory.jsonl
    remove_src:
      - "{{ state_dir }}"
    log_max_bytes: "{{ repro_vllm_log_max_bytes }}"
"""

RETURN = r"""
console:
  description: The console's lines of this part (the production server's, when O(service) was read).
  returned: always
  type: list
  elements: str
  sample: ["service | node01 | systemd ok | pid 4242 | restarts 3 | last exit codes [1]"]
service_status:
  description: C(ok), C(not_found) or C(error) - the production server's status in C(service.json).
  returned: when O(service) is set and the part was recorded
  type: str
  sample: ok
host_status:
  description: C(ok), C(degraded) (facts recorded, but a command hung or failed - see RV(reasons)), C(failed) or C(unreachable).
  returned: always
  type: str
  sample: degraded
reasons:
  description: Why the host is not C(ok).
  returned: always
  type: list
  elements: str
  sample: ["timed out: /usr/bin/nvidia-smi --version (command timeout 3.0s)"]
part_path:
  description: Absolute path of the host's part on the controller.
  returned: always
  type: str
  sample: /srv/records/case1/run-004/hosts/node01
files:
  description: Every file of the part with C(path), C(size), C(sha256) and, for a capped host file, C(cut) and C(original).
  returned: when the part was written
  type: list
  elements: dict
missing_files:
  description: Optional host files that did not exist.
  returned: always
  type: list
  elements: str
summary:
  description: The per-host line of the fleet table (host, status, driver, GPUs, image digest, foreign processes, timed out).
  returned: always
  type: dict
collection_version:
  description: Version of this collection, read from its galaxy.yml.
  returned: always
  type: str
  sample: 0.1.0
staging:
  description: The staging folder used on the host and whether it was removed, or null when none was needed.
  returned: always
  type: dict
"""

import os
import shutil
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.repro.vllm.plugins.module_utils.record import _hostrecord


def _gather_container(image, timeout):
    from ansible_collections.repro.vllm.plugins.module_utils.container import _container

    facts, actions = _container.gather(image, timeout=timeout)
    facts["timed_out"] = [a.get("cmd") for a in actions if a.get("status") == "timed_out"]
    facts["commands"] = actions
    return facts


def main():
    module = AnsibleModule(
        argument_spec=dict(
            _hostrecord.HOST_SPEC,
            # the module's own: the action's second call (cleanup), its staging folder's label, the case's key
            staging_label=dict(type="str", default=""),
            cleanup=dict(type="list", elements="str", default=[]),
            redact_key=dict(type="str", default="", no_log=True),
            # read by the action on the controller; accepted here so one argument spec documents them all
            **_hostrecord.CONTROLLER_SPEC
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["cleanup"]:
        # second call of the action: the controller verified its copy; remove what it names
        removed, errors = [], []
        for path in p["cleanup"]:
            if module.check_mode:
                continue
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                elif os.path.lexists(path):
                    os.unlink(path)
                removed.append(path)
            except OSError as exc:
                errors.append("%s: %s" % (path, exc.strerror or exc))
        for path in list(removed):
            parent = os.path.dirname(path.rstrip("/"))
            for _level in range(max(0, p["remove_empty_parents"])):
                try:
                    os.rmdir(parent)  # only an empty folder goes
                except OSError:
                    break
                removed.append(parent)
                parent = os.path.dirname(parent)
        module.exit_json(changed=bool(removed), removed=removed, errors=errors)
    if p["command_timeout"] <= 0:
        module.fail_json(msg="command_timeout=%s is not a positive number of seconds" % p["command_timeout"])
    if p["log_max_bytes"] < 1024:
        module.fail_json(msg="log_max_bytes=%s is too small; keep at least 1024 bytes of each file" % p["log_max_bytes"])
    out = {"changed": False}
    try:
        if "basics" in p["gather"]:
            out["basics"] = _hostrecord.basics(key=p["redact_key"] or None)
        if "gpu" in p["gather"]:
            from ansible_collections.repro.vllm.plugins.module_utils.gpu._gpu import gather as gpu_gather

            out["gpu"] = gpu_gather({"nvidia_smi_path": p["nvidia_smi_path"] or None,
                                     "command_timeout": p["command_timeout"]})
        if "container" in p["gather"]:
            out["container"] = (_gather_container(p["image"].strip(), p["command_timeout"]) if p["image"].strip()
                                else {"skipped": True, "reason": "no image given (repro_vllm_image)"})
        if "collect_env" in p["gather"]:
            out["collect_env"] = _hostrecord.collect_env(p["collect_env_argv"], p["collect_env_timeout"],
                                                         key=p["redact_key"] or None,
                                                         container=p["collect_env_container"])
        stage = {"path": None}

        def stage_dir():
            if stage["path"] is None:
                stage["path"] = _hostrecord.new_staging_dir(p["staging_root"] or None, p["staging_label"])
            return stage["path"]

        out["files"] = [_hostrecord.prepare_file(spec, p["log_max_bytes"], p["inline_max_bytes"], stage_dir,
                                                 check_mode=module.check_mode, key=p["redact_key"] or None)
                        for spec in p["files"]]
        out["staging_dir"] = stage["path"]
    except Exception as exc:  # pylint: disable=broad-except
        module.fail_json(msg="host_record on the host failed: %s: %s" % (type(exc).__name__, exc),
                         exception=traceback.format_exc())
    module.exit_json(**out)


if __name__ == "__main__":
    main()
