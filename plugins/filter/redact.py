# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils.common._redact import load_case_key, redact_data, scan_secrets


def redact(data, key=None, case_dir=None):
    """Mask secrets in a string, list or dict (same rules as the modules use on the managed nodes).

    ``case_dir`` (``<records_root>/<case_id>`` on the controller) redacts with that case's key, read here, so the
    key never becomes a variable: the markers are the case's ``<redacted:KIND:HEX8>``."""
    if key is not None and not isinstance(key, (str, bytes)):
        raise AnsibleFilterError("repro.vllm.redact: key must be a string (the case key), got %s" % type(key).__name__)
    if case_dir:
        if key:
            raise AnsibleFilterError("repro.vllm.redact: give key or case_dir, not both")
        try:
            key = load_case_key(str(case_dir))
        except (OSError, ValueError) as exc:
            raise AnsibleFilterError("repro.vllm.redact: the case key of %s cannot be read: %s" % (case_dir, exc)) from exc
    return redact_data(data, key or None)


def secret_findings(text):
    """``[{'line': n, 'kind': k}, ...]`` for secret shapes still in ``text`` (a scan, nothing is rewritten)."""
    if not isinstance(text, str):
        raise AnsibleFilterError("repro.vllm.secret_findings expects a string, got %s" % type(text).__name__)
    return [{"line": line, "kind": kind} for line, kind in scan_secrets(text)]


class FilterModule:
    """repro.vllm redaction filters."""

    def filters(self):
        return {"redact": redact, "secret_findings": secret_findings}
