#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: collective_run
short_description: This node's part of the collective checkpoint, a torch.distributed all-reduce over the job
version_added: 0.1.0
description:
  - Starts C(python -m torch.distributed.run) (torchrun) with this node's rank in a job of O(nnodes) nodes and
    O(nproc_per_node) ranks each, with a static rendezvous at O(master_addr):O(master_port). Every rank runs one
    all-reduce (NCCL on GPUs, gloo on the CPU, see O(backend)) and prints its sum, which is checked.
  - Runs with the Python of the serving venv (O(python)) or inside the serving image (O(container)), so the
    torch, NCCL and driver libraries are those the server will use.
  - C(NCCL_DEBUG=INFO) is set. torchrun's own output goes to C(torchrun.log) in O(log_dir) as it is written;
    each rank's stdout and stderr become C(rank<N>.stdout.log) and C(rank<N>.stderr.log) (N the global rank).
    The worker program is left there as C(allreduce.py). These files are what C(repro.vllm.log_stage) classifies.
  - The whole run is under O(timeout); when it passes, torchrun and every rank (its process group) are killed
    and the result says so. A failing or hanging collective is a result, never a task failure.
  - Every node of the job must run this module at about the same time (one task over all hosts of the play).
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
attributes:
  check_mode:
    support: full
    details:
      - Returns the command and environment it would run; starts nothing and writes nothing.
  diff_mode:
    support: none
options:
  python:
    description:
      - The Python that has torch (the serving venv's C(bin/python)). Ignored with O(container), where the
        image's C(python3) runs.
    type: str
    default: python3
  nnodes:
    description: Number of nodes (hosts) in the job.
    type: int
    required: true
  node_rank:
    description: This node's rank, 0 to O(nnodes) - 1; node 0 hosts the rendezvous.
    type: int
    required: true
  nproc_per_node:
    description: Ranks on this node, normally one per GPU the server will use here (1 on a CPU host).
    type: int
    required: true
  master_addr:
    description: Address of node 0 that every node reaches (the address the server's own rendezvous uses).
    type: str
    required: true
  master_port:
    description: Free TCP port on node 0 for the rendezvous.
    type: int
    default: 29555
  backend:
    description: C(nccl), C(gloo), or C(auto) (NCCL when the worker sees a GPU, else gloo).
    type: str
    choices: [auto, nccl, gloo]
    default: auto
  device_map:
    description:
      - C(local_rank) (local rank N uses GPU N, as a server does), or C(shared) (ranks share the visible GPUs
        round robin; NCCL refuses two ranks of one communicator on one GPU, so this is for tests only).
    type: str
    choices: [local_rank, shared]
    default: local_rank
  timeout:
    description: Seconds the whole run may take on this node before torchrun and its ranks are killed.
    type: float
    default: 300
  init_timeout:
    description: Seconds C(init_process_group) may wait (default O(timeout) - 10).
    type: int
  env:
    description:
      - More environment for torchrun and the ranks, set on top of C(NCCL_DEBUG=INFO) (for example
        C(NCCL_SOCKET_IFNAME), C(GLOO_SOCKET_IFNAME), C(NCCL_IB_HCA), the server's own NCCL settings).
    type: dict
    default: {}
  log_dir:
    description: Folder on this node for the logs (created, owner only); files of an earlier run are refused.
    type: path
    required: true
  container:
    description:
      - Run inside this image instead of O(python) (C(runtime) docker or podman, C(image) the image, best by
        digest, C(run_args) more C(run) options such as C([--gpus, all]) or C([--device, nvidia.com/gpu=all])).
      - The container gets the host network and IPC, O(log_dir) mounted at the same path, and the environment
        by name.
    type: dict
    suboptions:
      runtime:
        description: Container runtime binary.
        type: str
        choices: [docker, podman]
        required: true
      image:
        description: The serving image.
        type: str
        required: true
      run_args:
        description: More options for C(run).
        type: list
        elements: str
        default: []
notes:
  - The roles of this collection call it from C(repro.vllm.collective); see the collection's C(docs/collective.md).
seealso:
  - module: repro.vllm.log_stage
"""

EXAMPLES = r"""
- name: All-reduce over every GPU of every host of the play
  repro.vllm.collective_run:
    python: /opt/vllm/venv/bin/python
    nnodes: "{{ ansible_play_hosts | length }}"
    node_rank: "{{ ansible_play_hosts.index(inventory_hostname) }}"
    nproc_per_node: 8
    master_addr: "{{ hostvars[ansible_play_hosts[0]].ansible_host }}"
    log_dir: /var/tmp/repro-vllm/collective
    env:
      NCCL_SOCKET_IFNAME: eth0
  register: part
"""

RETURN = r"""
ok:
  description: True when torchrun ended 0 and every rank of this node printed the right all-reduce sum.
  type: bool
  returned: always
reason:
  description: Why not ok (timed out, exit code, ranks without a result, wrong sum), else null.
  type: str
  returned: always
status:
  description: How torchrun ended (ok, failed, timed_out, not_found, error); C(planned) in check mode.
  type: str
  returned: always
exit_code:
  description: torchrun's exit code (null when it was killed at the timeout). Not named C(rc), so that a failing
    collective is a result of the task, not a failed task.
  type: int
  returned: always
timed_out:
  description: Whether O(timeout) passed and the run was killed.
  type: bool
  returned: always
ranks:
  description: The global ranks of this node.
  type: list
  elements: int
  returned: always
results:
  description: Each rank's result line (rank, world_size, backend, device, value, expected, ok, init_s,
    allreduce_s, torch, nccl).
  type: list
  elements: dict
  returned: always
logs:
  description: The log files in O(log_dir), torchrun.log first, then rank by rank.
  type: list
  elements: str
  returned: always
record_files:
  description:
    - The log files that exist, as M(repro.vllm.host_record) takes them - C(src) (path on this node) and C(part)
      (C(logs/<file>)).
  type: list
  elements: dict
  returned: always
argv:
  description: The command run (secret-looking values redacted).
  type: list
  elements: str
  returned: always
env:
  description: The environment the run set (secret-looking values redacted).
  type: dict
  returned: always
wall_s:
  description: Seconds the run took.
  type: float
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.repro.vllm.plugins.module_utils.gpu import _collective
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import redact_argv, redact_env


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="str", default="python3"),
            nnodes=dict(type="int", required=True),
            node_rank=dict(type="int", required=True),
            nproc_per_node=dict(type="int", required=True),
            master_addr=dict(type="str", required=True),
            master_port=dict(type="int", default=29555),
            backend=dict(type="str", choices=list(_collective.BACKENDS), default="auto"),
            device_map=dict(type="str", choices=list(_collective.DEVICE_MAPS), default="local_rank"),
            timeout=dict(type="float", default=300.0),
            init_timeout=dict(type="int"),
            env=dict(type="dict", default={}),
            log_dir=dict(type="path", required=True),
            container=dict(type="dict", options=dict(
                runtime=dict(type="str", choices=["docker", "podman"], required=True),
                image=dict(type="str", required=True),
                run_args=dict(type="list", elements="str", default=[]),
            )),
        ),
        supports_check_mode=True,
    )
    p = dict(module.params)
    errs = _collective.validate(p)
    if errs:
        module.fail_json(msg="collective_run: " + "; ".join(errs))
    log_dir = os.path.abspath(p["log_dir"])
    if module.check_mode:
        opts = dict(p, rank_dir=os.path.join(log_dir, ".torchrun"))
        module.exit_json(changed=False, ok=None, reason="check mode: nothing ran", status="planned", exit_code=None,
                         timed_out=False, ranks=[], results=[], logs=[], record_files=[], wall_s=0.0,
                         argv=redact_argv(_collective.torchrun_argv(p["python"], os.path.join(
                             log_dir, _collective.WORKER_NAME), opts)),
                         env=redact_env(_collective.run_env(p)))
    earlier = [n for n in (os.listdir(log_dir) if os.path.isdir(log_dir) else [])
               if n == _collective.TORCHRUN_LOG or n.startswith("rank")]
    if earlier:
        module.fail_json(msg="collective_run: %s already holds the logs of an earlier run (%s); give a new log_dir "
                             "(nothing is overwritten)" % (log_dir, ", ".join(sorted(earlier)[:4])))
    os.makedirs(log_dir, mode=0o700, exist_ok=True)
    res = _collective.run(p)
    # Ansible marks a task failed when its result has a non-zero "rc"; a failing collective is a result here
    res["exit_code"] = res.pop("rc")
    res["argv"] = redact_argv(res["argv"])
    res["env"] = redact_env(res["env"])
    module.exit_json(changed=True, **res)


if __name__ == "__main__":
    main()
