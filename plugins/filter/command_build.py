# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter fronts of the command reader's builders (module_utils/_command.py): the minimal command from its parts and
whether a model's config asks for custom code. The roles use these instead of building argv in Jinja."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils import _command


def minimal_build(program, model, host=None, port=None, served_model_name=None, tensor_parallel_size=1,
                  pipeline_parallel_size=1, data_parallel_size=1, trust_remote_code=False, platform_args=None):
    """``_command.build_minimal`` - the minimal command (argv) from its parts."""
    if isinstance(program, str):
        program = [program]
    if not isinstance(program, (list, tuple)) or not program:
        raise AnsibleFilterError("minimal_build: the input must be the program as a list, e.g. ['vllm', 'serve']")
    if not model:
        raise AnsibleFilterError("minimal_build: model is empty; set repro_vllm_model (a model folder or hub id)")
    try:
        return _command.build_minimal(list(program), model, host=host or None, port=port or None,
                                      served_model_name=served_model_name or None,
                                      tensor_parallel_size=tensor_parallel_size,
                                      pipeline_parallel_size=pipeline_parallel_size,
                                      data_parallel_size=data_parallel_size,
                                      trust_remote_code=bool(trust_remote_code),
                                      platform_args=[str(a) for a in platform_args or []])
    except _command.CommandError as exc:
        raise AnsibleFilterError("minimal_build: %s" % exc)


def needs_remote_code(model_config, setting="auto"):
    """Whether the start needs ``--trust-remote-code``; see _command.remote_code_setting."""
    try:
        return _command.remote_code_setting(model_config, setting)
    except _command.CommandError as exc:
        raise AnsibleFilterError("needs_remote_code: %s" % exc)


def node_placement(nodes, node, master_addr="", master_port=None):
    """``_command.node_placement`` for ``node`` among ``nodes`` (the step's nodes, the head first)."""
    nodes = list(nodes or [])
    if node not in nodes:
        raise AnsibleFilterError("node_placement: %s is not one of the step's nodes %s" % (node, nodes))
    try:
        return _command.node_placement(len(nodes), nodes.index(node), master_addr or None,
                                       master_port=master_port if master_port not in (None, "") else None)
    except (_command.CommandError, ValueError) as exc:
        raise AnsibleFilterError("node_placement: %s" % exc)


class FilterModule:
    """repro.vllm command builders."""

    def filters(self):
        return {"_minimal_build": minimal_build, "_needs_remote_code": needs_remote_code, "_node_placement": node_placement}
