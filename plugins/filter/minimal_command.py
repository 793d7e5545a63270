# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller fronts of the collection's one vLLM command reader (plugins/module_utils/ladder/_command.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils.ladder import _command


def _argv(value, what):
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise AnsibleFilterError("%s: give the command as a list of arguments (got %s)" % (what, type(value).__name__))
    return [str(a) for a in value]


def minimal_command(argv, env=None, keep=None, keep_env=None, model_config=None, trust_remote_code="auto", port=None):
    """Derive the minimal command from a production command; see _command.derive_minimal."""
    try:
        return _command.derive_minimal(_argv(argv, "minimal_command"), env=env or {}, keep=keep or (),
                                       keep_env=keep_env or (), model_config=model_config,
                                       trust_remote_code=trust_remote_code,
                                       port=None if port in (None, "") else port)
    except _command.CommandError as exc:
        raise AnsibleFilterError("minimal_command: %s" % exc)


class FilterModule:
    """repro.vllm server command helpers."""

    def filters(self):
        return {"minimal_command": minimal_command}
