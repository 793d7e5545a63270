#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: container_facts
short_description: Resolve a container image reference to its digests, config, labels and env on every runtime
version_added: 0.1.0
description:
  - Looks up one image reference in each container runtime found on the host (docker, podman, crictl,
    ctr (containerd) and enroot) and returns what identifies the bytes that ran - repo digests, manifest
    and index digests, the config digest (image ID) - plus created time, labels, environment and platform.
  - A runtime that is not installed is reported as C(present=false); one whose daemon is not running is
    reported with C(daemon_running=false) and the runtime's own error text; a runtime without the image has
    C(image_present=false). None of these fail the task.
  - Environment values whose names contain C(TOKEN), C(SECRET), C(PASSWORD) or C(KEY), token-looking values
    and URL credentials are replaced by C(<redacted>).
  - Optionally (O(probe=true)) runs the image's own C(python3) once (C(docker|podman run --rm)) to report the
    Python, torch, torch CUDA runtime, vLLM and FlashInfer versions and the visible GPU count.
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
  - repro.vllm._attributes.facts
  - repro.vllm._attributes.facts_module
  - repro.vllm._command_timeout
attributes:
  idempotent:
    description: When run again with the same arguments, the module reports no change.
    support: full
options:
  image:
    description:
      - The image reference as the server is started with, for example C(vllm/vllm-openai:v0.23.0),
        C(nvcr.io/nvidia/pytorch@sha256:...), or for enroot a C(.sqsh) file path or container name.
    type: str
    required: true
  runtimes:
    description:
      - Runtimes to ask, in this order.
    type: list
    elements: str
    choices: [docker, podman, crictl, ctr, enroot]
    default: [docker, podman, crictl, ctr, enroot]
  docker_executable:
    description: Path of the docker client. Default is C(docker) on C(PATH).
    type: path
  podman_executable:
    description: Path of podman. Default is C(podman) on C(PATH).
    type: path
  crictl_executable:
    description: Path of crictl. Default is C(crictl) on C(PATH).
    type: path
  ctr_executable:
    description: Path of containerd's C(ctr). Default is C(ctr) on C(PATH).
    type: path
  enroot_executable:
    description: Path of enroot. Default is C(enroot) on C(PATH).
    type: path
  ctr_address:
    description: containerd socket for C(ctr --address). Default is ctr's own (C(/run/containerd/containerd.sock)).
    type: str
  ctr_namespace:
    description: containerd namespace to look in. Kubernetes keeps its images in C(k8s.io).
    type: str
    default: k8s.io
  crictl_endpoint:
    description: CRI image endpoint for C(crictl --image-endpoint). Default is crictl's configuration.
    type: str
  probe:
    description:
      - Run the image's C(python3) once to report Python, torch, torch CUDA runtime, vLLM and FlashInfer
        versions, the GPU count torch sees, the CUDA driver version the container sees (null when no driver was
        put into it), the libcuda file it mapped and the visible-devices variables inside. Off by default; in
        check mode it is only planned.
      - The probe uses C(--entrypoint python3), so images whose entrypoint is C(vllm serve) work.
    type: bool
    default: false
  probe_runtime:
    description:
      - Runtime for the probe. Default is the first of docker, podman that has the image.
    type: str
    choices: [docker, podman]
  probe_run_args:
    description:
      - Extra arguments put after C(run --rm) in the probe command, for example C([--gpus, all]) for docker,
        C([--device, nvidia.com/gpu=all]) for podman with CDI, or C(--ulimit) settings on hosts that refuse
        the runtime's default rlimits.
    type: list
    elements: str
    default: []
  probe_by_digest:
    description:
      - Run the probe on the image by digest - the repo digest the runtime reported (C(repo@sha256:...)), else its
        image id (C(sha256:...)) - so it sees exactly the image recorded, not what the tag points to by then.
      - The probe result says which (C(reference), C(reference_kind) C(repo_digest), C(image_id) or C(reference)).
    type: bool
    default: true
  probe_timeout:
    description:
      - Seconds the probe container may run (importing torch and starting a container take longer than
        the other commands).
    type: float
    default: 180
notes:
  - The runtime commands run even in check mode; they only read. The probe starts a container and is
    therefore only planned in check mode.
  - Docker's classic store reports the config digest as C(Id) and has no repo digest for an image that was
    built or loaded locally and never pushed or pulled; such a run cannot be pinned by digest.
seealso:
  - module: repro.vllm.gpu_facts
"""

EXAMPLES = r"""
- name: Resolve the serving image on every runtime of the node
  repro.vllm.container_facts:
    image: vllm/vllm-openai:v0.23.0

- name: Pin the run to what was found
  ansible.builtin.debug:
    msg: "{{ ansible_facts.repro_vllm_container.pinned_reference | default('not pullable by digest', true) }}"

- name: Probe the versions inside the image with the GPUs visible (docker)
  repro.vllm.container_facts:
    image: vllm/vllm-openai:v0.23.0
    runtimes: [docker]
    probe: true
    probe_run_args: [--gpus, all]

- name: Kubernetes node - look in containerd's k8s.io namespace only
  repro.vllm.container_facts:
    image: nvcr.io/nvidia/pytorch:25.01-py3
    runtimes: [crictl, ctr]
    ctr_namespace: k8s.io
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: complex
  contains:
    repro_vllm_container:
      description: What every runtime knows about the image.
      returned: always
      type: complex
      contains:
        reference:
          description: The O(image) asked for.
          returned: always
          type: str
          sample: vllm/vllm-openai:v0.23.0
        found_in:
          description: Runtimes that have the image.
          returned: always
          type: list
          elements: str
          sample: [docker]
        repo_digests:
          description: All repo digests (C(repo@sha256:...)) found, without duplicates.
          returned: always
          type: list
          elements: str
          sample: ["docker.io/vllm/vllm-openai@sha256:0123abcd..."]
        config_digests:
          description:
            - Distinct config digests (image IDs) found. More than one means the runtimes hold different
              images under the same reference.
          returned: always
          type: list
          elements: str
          sample: ["sha256:e391a3994d242d7e40f04c24b59ef5140f403af837bf2981c01bd0da2cd373b6"]
        pinned_reference:
          description:
            - A C(repo@sha256:...) reference that pulls exactly this image again, or null when no runtime has
              a repo digest for it.
          returned: always
          type: str
          sample: docker.io/vllm/vllm-openai@sha256:0123abcd...
        by_digest:
          description: Whether O(image) itself is a digest reference.
          returned: always
          type: bool
          sample: false
        runtimes:
          description:
            - One entry per runtime in O(runtimes), each with C(present), C(binary), C(version),
              C(daemon_running) (null when the runtime has no daemon or it was not reached), C(image_present)
              (null when it could not be asked), C(image), C(pinned_reference), C(status) (C(ok),
              C(not_found), C(daemon_unreachable), C(timed_out), C(failed)) and C(error) (the runtime's own
              error text, secrets redacted).
            - C(image) has C(id), C(config_digest), C(manifest_digest), C(index_digest), C(repo_digests),
              C(repo_tags), C(created), C(labels), C(env) (redacted), C(env_redacted) (names),
              C(architecture), C(os) and C(size); enroot adds C(path) and C(file_sha256) for a squashfs file
              or C(container) for a container name.
            - docker and ctr add C(server_version); ctr adds C(namespace), C(platforms) and C(ctr_labels).
          returned: always
          type: dict
          sample:
            docker:
              present: true
              binary: /usr/local/bin/docker
              version: 28.2.2
              server_version: null
              daemon_running: false
              image_present: null
              image: null
              pinned_reference: null
              status: daemon_unreachable
              error: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?
            enroot:
              present: false
              binary: null
              version: null
              daemon_running: null
              image_present: null
              image: null
              pinned_reference: null
              status: not_found
              error: null
        probe:
          description:
            - Null unless O(probe=true). Then C(ran) (false in check mode or when no runtime has the image),
              C(planned), C(runtime), C(cmd), C(reference) and C(reference_kind) (what ran, see
              O(probe_by_digest)), C(status), C(rc), C(error) and the values the image reported - C(python),
              C(python_executable), C(torch), C(torch_cuda), C(vllm), C(flashinfer), C(device_count),
              C(cuda_driver), C(libcuda_path), C(visible_devices) and C(errors) (per-item errors).
          returned: always
          type: dict
          sample:
            ran: true
            runtime: docker
            status: ok
            python: 3.12.3
            torch: 2.11.0+cu130
            torch_cuda: "13.0"
            vllm: null
            flashinfer: null
            device_count: 1
            errors: {}
actions:
  description: Every command run (or planned, for the probe in check mode), with rc, status and duration.
  returned: always
  type: list
  elements: dict
  sample: [{"cmd": ["docker", "version", "--format", "{{json .}}"], "rc": 1, "status": "failed", "duration_ms": 41}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.repro.vllm.plugins.module_utils.container import _container
from ansible_collections.repro.vllm.plugins.module_utils.common._cmd import run_cmd, summary


def _probe(module, facts, actions):
    p = module.params
    order = [p["probe_runtime"]] if p["probe_runtime"] else ["docker", "podman"]
    chosen = None
    for name in order:
        entry = facts["runtimes"].get(name)
        if entry is None and p["probe_runtime"]:
            # asked for a runtime that was not gathered: look it up now
            binary = _container.find_binary(name, p["%s_executable" % name])
            entry = {"binary": binary, "image_present": bool(binary)}
        if entry and entry.get("binary") and entry.get("image_present"):
            chosen = (name, entry["binary"])
            break
    if chosen is None:
        return {"ran": False, "planned": False, "runtime": None, "cmd": None, "status": None, "rc": None,
                "error": "no %s with the image %s; the probe needs one of them" % (" or ".join(order), p["image"])}
    name, binary = chosen
    ref, how = p["image"], "reference"
    if p["probe_by_digest"]:
        ref, how = _container.probe_reference(p["image"], (facts["runtimes"].get(name) or {}).get("image"))
    argv = _container.probe_argv(binary, ref, p["probe_run_args"])
    if module.check_mode:
        actions.append({"cmd": argv, "rc": None, "status": "planned", "duration_ms": 0,
                        "timeout": p["probe_timeout"], "truncated": False, "msg": "check mode: not run"})
        return {"ran": False, "planned": True, "runtime": name, "cmd": argv, "status": None, "rc": None,
                "error": None, "reference": ref, "reference_kind": how}

    def runner(cmd):
        res = run_cmd(cmd, timeout=p["probe_timeout"])
        actions.append(summary(res))
        return res

    out = _container.run_probe(name, binary, ref, runner, p["probe_run_args"])
    out.update(planned=True, cmd=argv, reference=ref, reference_kind=how)
    return out


def main():
    rt_choices = list(_container.RUNTIMES)
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type="str", required=True),
            runtimes=dict(type="list", elements="str", choices=rt_choices, default=rt_choices),
            docker_executable=dict(type="path"),
            podman_executable=dict(type="path"),
            crictl_executable=dict(type="path"),
            ctr_executable=dict(type="path"),
            enroot_executable=dict(type="path"),
            ctr_address=dict(type="str"),
            ctr_namespace=dict(type="str", default="k8s.io"),
            crictl_endpoint=dict(type="str"),
            probe=dict(type="bool", default=False),
            probe_runtime=dict(type="str", choices=["docker", "podman"]),
            probe_run_args=dict(type="list", elements="str", default=[]),
            probe_timeout=dict(type="float", default=180.0),
            probe_by_digest=dict(type="bool", default=True),
            command_timeout=dict(type="float", default=10.0),
        ),
        supports_check_mode=True,
    )
    p = module.params
    image = p["image"].strip()
    if not image:
        module.fail_json(msg="image must be a non-empty image reference (for example vllm/vllm-openai:v0.23.0)")
    if p["command_timeout"] <= 0 or p["probe_timeout"] <= 0:
        module.fail_json(msg="command_timeout and probe_timeout must be positive numbers of seconds")
    binaries = dict((name, p["%s_executable" % name]) for name in _container.RUNTIMES)
    facts, actions = _container.gather(
        image, binaries=binaries, runtimes=p["runtimes"], timeout=p["command_timeout"],
        ctr_address=p["ctr_address"], ctr_namespace=p["ctr_namespace"], crictl_endpoint=p["crictl_endpoint"])
    facts["probe"] = _probe(module, facts, actions) if p["probe"] else None
    module.exit_json(changed=False, ansible_facts={"repro_vllm_container": facts}, actions=actions)


if __name__ == "__main__":
    main()
