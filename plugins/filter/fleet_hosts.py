# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.plugin_utils.close._closing import closing_rows, table_lines
from ansible_collections.repro.vllm.plugins.module_utils.server._service import progress_line, record_parts


def service_parts(served, prefix):
    """The parts a ``served_process`` result writes into the open run, named under ``prefix`` (``hosts/<host>``)."""
    served = served or {}
    return [dict(p, part="%s/%s" % (prefix.rstrip("/"), p["part"]))
            for p in record_parts(served.get("record") or {}, served.get("logs") or {})]


def service_line(record, host):
    """The console's line for a host's production server record."""
    return progress_line(host, record)


def closing_table(attempts, fleet=None, compatibility=None):
    """The closing table's lines (plugin_utils/close/_closing.py) of the play's attempts and the fingerprint run's hosts,
    for a display that has no table of its own (AWX's)."""
    return table_lines(closing_rows(fleet=fleet or [], compatibility=compatibility or None,
                                    attempts=[a for a in attempts or [] if isinstance(a, dict)]))


class FilterModule:
    """Per-host summary filters used by the record, fingerprint and service roles."""

    def filters(self):
        return {"_service_parts": service_parts, "_service_line": service_line, "_closing_table": closing_table}
