# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller fronts of the collection's one vLLM command reader (plugins/module_utils/_command.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils import _command


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


def _derived(value, what):
    if not isinstance(value, dict) or "removed" not in value:
        raise AnsibleFilterError("%s: the input must be a minimal_command answer (a dict with removed)" % what)
    return value


def derivation_lines(derived, host=None, argv=None, allow_unknown=False):
    """Console lines of a derivation (``reproduce | <host> | minimal | ...``); see _command.derivation_lines."""
    lines = _command.derivation_lines(_derived(derived, "derivation_lines"),
                                      argv=[str(a) for a in argv] if argv else None,
                                      allow_unknown=bool(allow_unknown))
    return ["reproduce | %s | %s" % (host, line) for line in lines] if host else lines


def unknown_refusal(derived, allow=False):
    """The refusal text of unknown production options, or an empty string; see _command.unknown_refusal."""
    return _command.unknown_refusal(_derived(derived, "unknown_refusal"), allow=bool(allow)) or ""


def command_apply(argv, args=None, remove=None):
    """Set-or-replace options (a ladder layer's) in a command."""
    try:
        return _command.apply_options(_argv(argv, "command_apply"), args=[str(a) for a in args or []],
                                      remove=[str(a) for a in remove or []])
    except _command.CommandError as exc:
        raise AnsibleFilterError("command_apply: %s" % exc)


def command_refused(argv, env=None, platform_flags=None, allowed_env=None):
    """What a minimal command may not hold: options and environment variables that belong to a ladder layer."""
    try:
        options = _command.refused_options(_argv(argv, "command_refused"), platform_flags=platform_flags or ())
    except _command.CommandError as exc:
        raise AnsibleFilterError("command_refused: %s" % exc)
    variables = _command.refused_env(env or {}, allowed=allowed_env or ())
    return {"options": options, "env": variables, "count": len(options) + len(variables)}


def ladder_apply(base, layers, names, overrides=None, production=None):
    """The run that has the ladder layers ``names`` on top of ``base``; see _command.apply_layers."""
    if not isinstance(base, dict) or "argv" not in base:
        raise AnsibleFilterError("ladder_apply: the input must be a dict with argv, env and request")
    try:
        return _command.apply_layers(base, layers or [], list(names or []), overrides=overrides or {},
                                     production=production or None)
    except _command.CommandError as exc:
        raise AnsibleFilterError("ladder_apply: %s" % exc)


class FilterModule:
    """repro.vllm server command helpers."""

    def filters(self):
        return {"minimal_command": minimal_command, "_command_apply": command_apply, "_command_refused": command_refused,
                "_ladder_apply": ladder_apply, "_derivation_lines": derivation_lines, "_unknown_refusal": unknown_refusal}
