#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_facts
short_description: NVIDIA GPU, driver, topology and fabric facts of a host, every command under a timeout
version_added: 0.1.0
description:
  - Collects what decides whether a vLLM server can use the GPUs of a host, for the compatibility stage and
    for the run record. Nothing on the host is changed.
  - The driver as the kernel module (C(/proc/driver/nvidia/version), open or proprietary flavour) and as
    userspace (C(nvidia-smi --version)), the CUDA version the driver supports, and a driver/library mismatch
    with its evidence.
  - Every GPU from one C(nvidia-smi --query-gpu) call (index, UUID, name, bus id, memory, persistence mode,
    compute mode, MIG current/pending, ECC mode and error counts, compute capability, clocks, power, PCIe,
    fabric state). If the driver refuses that call (an unknown field), one more call with a smaller set of
    long-standing fields is made and the result says so.
  - Compute processes with the GPU they use, each attributed to the workload, to foreign work, or left
    unattributed with the reason. The driver may report a pid of another pid namespace (a container, or a
    sandbox whose namespace this host does not see), so the pid is looked up here directly and among the
    inner-namespace pids of every process (C(/proc/<pid>/status) C(NSpid)), and the program name must agree.
    A process found and equal to, or descended from, a pid in O(own_pids) is the workload's; found otherwise it is
    foreign; not found it is unattributed, never guessed foreign.
  - The driver actually in use (C(driver_in_use)), since an upgraded package is no proof that a running process
    uses the new driver. The kernel module version, the libcuda the loader cache resolves, and the libcuda file
    each running workload process (O(own_pids) and descendants) and each placed compute process mapped
    (C(/proc/<pid>/maps)), compared. A library from a CUDA forward-compatibility folder is reported, not
    counted as a mismatch.
  - C(nvidia-smi topo -m) raw and as a matrix, C(nvidia-smi nvlink -s) (no output means no NVLink),
    the fabric state and clique of each GPU, IMEX tools and configuration, C(/dev/nvidia*) nodes, the
    libcuda/libnccl/libnvidia-ml entries of the loader cache, and the container toolkit version.
  - Cheap reads come first. Each command has its own timeout. C(nvidia-smi --version) runs first and alone;
    once it answered (no timeout, no NVML failure), the commands that need nothing else (the GPU query, the
    compute processes, C(topo -m), C(nvlink -s), C(ldconfig -p), C(nvidia-imex-ctl -N), the toolkit versions)
    run at once, and C(nvidia-smi -q) after them when the GPUs found call for it. The facts and the order of
    C(commands) are those of one command after another.
  - After the first C(nvidia-smi) call that times out no further C(nvidia-smi) call is started (a wedged driver
    answers none) and the skipped calls are listed.
  - A missing tool, a command that fails or times out, and a host without NVIDIA driver are values in the
    result (C(present=false) with a C(reason)), never a task failure.
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
  - repro.vllm._attributes.facts
  - repro.vllm._attributes.facts_module
  - repro.vllm._command_timeout
options:
  command_timeout:
    description:
      - Seconds each external command may run before it is killed (with its whole process group).
      - A command that hits it is reported with status C(timed_out) in the result, never as a hung task.
      - One C(nvidia-smi --query-gpu) call takes about 25 ms on a healthy H200 host and C(nvidia-smi -q)
        about 120 ms, so the default leaves a wide margin.
    type: float
    default: 5
  nvidia_smi_path:
    description:
      - Path of the C(nvidia-smi) binary. By default it is looked up on E(PATH), then in C(/usr/bin),
        C(/usr/sbin), C(/bin) and C(/sbin).
      - A path that is not an executable file is reported as not found; no other binary is tried then.
    type: path
  ldconfig_path:
    description:
      - Path of the C(ldconfig) binary whose cache listing (C(ldconfig -p)) is read. By default it is looked
        up on E(PATH), then in C(/sbin) and C(/usr/sbin).
    type: path
  proc_root:
    description:
      - Where procfs is mounted; the kernel module version is read from C(<proc_root>/driver/nvidia/version).
    type: path
    default: /proc
  dev_root:
    description:
      - Where the device nodes are; C(<dev_root>/nvidia*) and C(<dev_root>/nvidia-caps-imex-channels) are listed.
    type: path
    default: /dev
  imex_config_dir:
    description:
      - Folder of the IMEX configuration; the presence of C(config.cfg) and C(nodes_config.cfg) is reported and
        the latter is returned raw.
    type: path
    default: /etc/nvidia-imex
  own_pids:
    description:
      - Process ids that belong to the workload under test (their descendants are the workload's too).
      - A compute process found here that is neither is foreign; one the driver lists but that cannot be placed
        in this host's view is unattributed.
    type: list
    elements: int
    default: []
  gather:
    description:
      - Sections to collect. C(driver) is always collected because C(present) depends on it.
      - C(processes) and C(fabric) need the GPU query and make it even when C(gpus) is not listed.
      - The keys of sections not collected are still returned, empty.
    type: list
    elements: str
    default: [all]
    choices: [all, driver, gpus, processes, topology, nvlink, fabric, imex, visible_devices, device_nodes, loader,
              container_toolkit]
  extra_query_fields:
    description:
      - More C(--query-gpu) field names to ask for in the same call (see C(nvidia-smi --help-query-gpu));
        their raw values are returned in each GPU's C(extra).
      - A field the driver refuses makes the module fall back to the small field set, as any refused query does.
    type: list
    elements: str
    default: []
  fabric_query:
    description:
      - When to read C(nvidia-smi -q) for the clique id and cluster UUID of each GPU.
      - V(auto) reads it only when a GPU reports a fabric state (NVLink-fabric systems such as GB200/GB300
        NVL72 or NVSwitch HGX); PCIe GPUs report none and the call is saved.
      - This driver branch refuses C(nvidia-smi -q -d FABRIC), so the whole C(-q) output is read.
    type: str
    choices: [auto, always, never]
    default: auto
notes:
  - The gathering code lives in the collection's C(_gpu) module_utils and imports without Ansible, so the same
    code runs on a GPU host that has no Ansible installed.
  - Outputs this collection has no real capture of (NVLink link lines, C(nvidia-imex-ctl -N),
    C(nvidia-ctk --version)) are returned raw and not parsed.
seealso:
  - name: nvidia-smi documentation
    description: Field names of C(--query-gpu) and C(--query-compute-apps).
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Gather GPU facts
  repro.vllm.gpu_facts:

- name: Fail early when another job holds memory on this host's GPUs
  repro.vllm.gpu_facts:
    own_pids: [4242]
- name: Check for foreign GPU processes
  ansible.builtin.assert:
    that: ansible_facts.repro_vllm_gpu.processes_summary.foreign_process_count == 0
    fail_msg: "{{ ansible_facts.repro_vllm_gpu.gpus | map(attribute='foreign_processes') | list }}"

- name: Only the cheap sections, with a short timeout for a suspect node
  repro.vllm.gpu_facts:
    gather: [driver, gpus, visible_devices, device_nodes]
    command_timeout: 2

- name: Report the driver/library mismatch evidence
  ansible.builtin.debug:
    var: ansible_facts.repro_vllm_gpu.driver.mismatch_evidence
  when: ansible_facts.repro_vllm_gpu.driver.mismatch
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    repro_vllm_gpu:
      description: The GPU facts. Every key below is always present; a value that could not be found is null.
      returned: always
      type: dict
      contains:
        present:
          description: Whether an NVIDIA driver or GPU was found (kernel module loaded, or nvidia-smi answered).
          returned: always
          type: bool
          sample: true
        reason:
          description: Why C(present) is false (null when it is true).
          returned: always
          type: str
          sample: "nvidia-smi not found on PATH or in /usr/bin, /usr/sbin, /bin, /sbin;
            /proc/driver/nvidia/version does not exist (no NVIDIA kernel module loaded)"
        nvidia_smi_path:
          description: The nvidia-smi binary used, null when none was found.
          returned: always
          type: str
        gathered:
          description: The sections collected.
          returned: always
          type: list
          elements: str
        driver_in_use:
          description:
            - The driver actually in use. C(kernel_module_version); C(userspace_version) (the libcuda version the
              loader cache resolves, or nvidia-smi's when it resolves none) with C(userspace_versions) and
              C(userspace_source); C(processes), one per running process that mapped libcuda or whose maps could
              not be read (pid, source C(workload) or C(compute_process), libcuda_path, libcuda_version,
              forward_compat, deleted, all_libcuda, error); C(mismatch) and its C(evidence);
              C(processes_truncated) when more than 64 processes qualified.
          returned: always
          type: dict
          sample:
            kernel_module_version: 580.159.04
            userspace_version: 580.159.04
            processes:
              - pid: 510
                libcuda_path: /usr/local/nvidia/lib64/libcuda.so.580.159.04
                libcuda_version: 580.159.04
            mismatch: false
        driver:
          description: The driver as kernel module and as userspace.
          returned: always
          type: dict
          contains:
            userspace_version:
              description: C(NVIDIA-SMI version) of C(nvidia-smi --version) (or of the table header).
              type: str
              returned: always
              sample: 580.159.04
            nvml_version:
              description: C(NVML version) of C(nvidia-smi --version).
              type: str
              returned: always
              sample: "580.159"
            reported_version:
              description: The driver version nvidia-smi reports (C(DRIVER version), else the query's C(driver_version)).
              type: str
              returned: always
            kernel_module_version:
              description: Version in the C(NVRM version) line of C(<proc_root>/driver/nvidia/version).
              type: str
              returned: always
              sample: 580.159.04
            kernel_module_flavor:
              description: C(open) (NVIDIA UNIX Open Kernel Module) or C(proprietary).
              type: str
              returned: always
              sample: open
            kernel_module_line:
              description: The C(NVRM version) line as read.
              type: str
              returned: always
            kernel_module_source:
              description: The file it was read from.
              type: str
              returned: always
            cuda_driver_version:
              description: The highest CUDA version this driver supports (C(CUDA Version)).
              type: str
              returned: always
              sample: "13.0"
            cuda_driver_version_source:
              description: The command it came from.
              type: str
              returned: always
            nvml_error:
              description: The NVML initialisation failure line nvidia-smi printed, if any.
              type: str
              returned: always
            mismatch:
              description: True when nvidia-smi printed C(Failed to initialize NVML... Driver/library version mismatch)
                or the userspace and kernel module versions differ.
              type: bool
              returned: always
            mismatch_checked:
              description: Whether both sides were seen (or the mismatch message was), so that a false C(mismatch) means something.
              type: bool
              returned: always
            mismatch_evidence:
              description: The lines and versions behind C(mismatch).
              type: list
              elements: str
              returned: always
        gpu_count:
          description: Number of GPUs in C(gpus).
          returned: always
          type: int
          sample: 1
        gpus:
          description:
            - One dict per GPU from the C(--query-gpu) call. Keys of fields not asked (fallback) or not available
              (C([N/A]), C([Not Supported])) are null; their raw values are in C(unavailable).
            - Also C(serial), C(driver_version), C(vbios_version), C(memory_reserved_mib), C(retired_pages_pending),
              C(remapped_rows) (pending, failure, uncorrectable), C(gpu_recovery_action), C(pstate),
              C(temperature_gpu_c), C(power_draw_w), C(power_limit_w), C(clocks_sm_mhz), C(clocks_max_sm_mhz),
              C(clocks_event_reasons_active), C(pcie) (gen_current, gen_max, width_current, width_max),
              C(addressing_mode), C(c2c_mode), C(fabric) (state, status) and C(platform) (chassis_serial_number,
              slot_number, tray_index, host_id, module_id).
          returned: always
          type: list
          elements: dict
          contains:
            index:
              description: nvidia-smi index.
              type: int
              returned: always
            uuid:
              description: GPU UUID.
              type: str
              returned: always
              sample: GPU-28c213c1-bcca-1fbe-60ef-e9178d887fc7
            name:
              description: Product name.
              type: str
              returned: always
              sample: NVIDIA H200
            pci_bus_id:
              description: PCI bus id.
              type: str
              returned: always
              sample: "00000000:00:06.0"
            memory_total_mib:
              description: Total memory in MiB.
              type: int
              returned: always
              sample: 143771
            memory_used_mib:
              description: Used memory in MiB.
              type: int
              returned: always
            memory_free_mib:
              description: Free memory in MiB.
              type: int
              returned: always
            persistence_mode:
              description: Persistence mode enabled.
              type: bool
              returned: always
            compute_mode:
              description: Compute mode (C(Default), C(Exclusive_Process), C(Prohibited)).
              type: str
              returned: always
            compute_cap:
              description: Compute capability.
              type: str
              returned: always
              sample: "9.0"
            mig_mode:
              description: MIG mode, C(current) and C(pending) (true when enabled).
              type: dict
              returned: always
            ecc:
              description: C(mode_current), C(mode_pending), C(uncorrected_volatile_total),
                C(uncorrected_aggregate_total), C(corrected_volatile_total).
              type: dict
              returned: always
            foreign_processes:
              description:
                - Compute processes on this GPU that are not the workload's (pid, process_name, used_memory_mib,
                  attribution, reason, local_pid). C(attribution) is C(foreign) or C(unattributed); only the
                  former is known to be someone else's work.
              type: list
              elements: dict
              returned: always
            foreign_memory_mib:
              description: Memory those processes use.
              type: int
              returned: always
            unaccounted_memory_mib:
              description: Used memory that no listed compute process accounts for (processes in other PID
                namespaces are not listed).
              type: int
              returned: always
            unavailable:
              description: Query fields whose value was not available, with the raw value.
              type: dict
              returned: always
              sample: {"retired_pages.pending": "[N/A]"}
            extra:
              description: Raw values of O(extra_query_fields).
              type: dict
              returned: always
        gpu_query:
          description: How the GPU query went.
          returned: always
          type: dict
          contains:
            status:
              description: Run status of the last query call (ok, failed, timed_out, not_found, skipped).
              type: str
              returned: always
            fields:
              description: The fields of the call whose answer was used.
              type: list
              elements: str
              returned: always
            fallback_used:
              description: Whether the full query was refused and the small field set was used.
              type: bool
              returned: always
            fallback_reason:
              description: Why (status, rc and the first line printed).
              type: str
              returned: always
            rejected_field:
              description: The field named in C(Field "..." is not a valid field to query.), if printed.
              type: str
              returned: always
            errors:
              description: Output lines that could not be read as a GPU (lineno, line, reason).
              type: list
              elements: dict
              returned: always
        processes:
          description:
            - Compute processes (pid, process_name, gpu_uuid, used_memory_mib, gpu_index, own, attribution, reason,
              local_pid).
            - C(attribution) is C(workload), C(foreign) or C(unattributed); C(reason) says how it was decided;
              C(local_pid) is the process's pid in this host's view when it was found (it differs from C(pid) when
              the driver reports an inner-namespace pid), else null.
          returned: always
          type: list
          elements: dict
        processes_summary:
          description: status, process_count, foreign_process_count, foreign_memory_mib,
            gpus_with_foreign_processes, unattributed_processes (pids on no GPU of the query), own_pids, errors and
            attribution_counts (how many processes are workload, foreign, unattributed).
          returned: always
          type: dict
        topology:
          description: C(nvidia-smi topo -m) as status, raw, devices, matrix (row, column, link type),
            affinity (cpu_affinity, numa_affinity, gpu_numa_id per GPU row), nics (NIC legend) and parsed.
          returned: always
          type: dict
        nvlink:
          description: C(nvidia-smi nvlink -s) as status, raw and state (no_links when it printed nothing,
            reported when it printed links, else the run status).
          returned: always
          type: dict
        fabric:
          description: Fabric state per GPU (index, uuid, bus_id, state, status, clique_id, cluster_uuid, health),
            source, state_reported, attached (every GPU Completed, Success and a non-zero cluster UUID; false when
            no GPU reports a state; null when unknown), cliques and status.
          returned: always
          type: dict
        imex:
          description: installed, daemon_path, ctl_path, config_dir, config_present, nodes_config_present,
            nodes_config_raw, channels (entries of C(<dev_root>/nvidia-caps-imex-channels)), ctl_status and
            ctl_output (C(nvidia-imex-ctl -N), raw).
          returned: always
          type: dict
        visible_devices:
          description: cuda_visible_devices, nvidia_visible_devices, nvidia_driver_capabilities, cuda_device_order,
            nvidia_imex_channels (null when unset) and cuda_visible_devices_list, from the module's environment.
          returned: always
          type: dict
        device_nodes:
          description: C(<dev_root>/nvidia*) entries and the entries of such folders (path, type, major, minor, mode).
          returned: always
          type: list
          elements: dict
        loader:
          description: status, ldconfig_path, the libcuda, libnccl and libnvidia_ml entries of C(ldconfig -p)
            (name, flags, path), libcuda_resolved (path, target, version for files that exist) and entries_read.
          returned: always
          type: dict
        container_toolkit:
          description: nvidia_ctk and nvidia_container_cli, each with path, status and version_line (first line
            of C(--version), raw).
          returned: always
          type: dict
        commands:
          description: Every command run or skipped (cmd, rc, status, duration_ms, timeout, truncated, msg).
          returned: always
          type: list
          elements: dict
        timed_out:
          description: Commands that hit O(command_timeout).
          returned: always
          type: list
          elements: str
        not_found:
          description: Binaries that were looked for and not found.
          returned: always
          type: list
          elements: str
        skipped:
          description: nvidia-smi calls not made because an earlier one timed out.
          returned: always
          type: list
          elements: str
        errors:
          description: Sections that failed with an unexpected error (section, error); empty normally.
          returned: always
          type: list
          elements: dict
        duration_ms:
          description: Time the whole gathering took.
          returned: always
          type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.repro.vllm.plugins.module_utils.gpu._gpu import DEFAULT_TIMEOUT, SECTIONS, gather


def main():
    module = AnsibleModule(
        argument_spec=dict(
            command_timeout=dict(type="float", default=DEFAULT_TIMEOUT),
            nvidia_smi_path=dict(type="path"),
            ldconfig_path=dict(type="path"),
            proc_root=dict(type="path", default="/proc"),
            dev_root=dict(type="path", default="/dev"),
            imex_config_dir=dict(type="path", default="/etc/nvidia-imex"),
            own_pids=dict(type="list", elements="int", default=[]),
            gather=dict(type="list", elements="str", default=["all"], choices=["all"] + list(SECTIONS)),
            extra_query_fields=dict(type="list", elements="str", default=[]),
            fabric_query=dict(type="str", default="auto", choices=["auto", "always", "never"]),
        ),
        supports_check_mode=True,
    )
    if module.params["command_timeout"] <= 0:
        module.fail_json(msg="gpu_facts: command_timeout=%s is not a positive number of seconds; set it to e.g. 5"
                             % module.params["command_timeout"])
    facts = gather(dict(module.params))
    module.exit_json(changed=False, ansible_facts={"repro_vllm_gpu": facts})


if __name__ == "__main__":
    main()
