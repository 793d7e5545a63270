# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils._redact import redact_data


def redact(data):
    """Mask secrets in a string, list or dict (same rules as the modules use on the managed nodes)."""
    return redact_data(data)


class FilterModule:
    """repro.vllm redaction filter."""

    def filters(self):
        return {"redact": redact}
