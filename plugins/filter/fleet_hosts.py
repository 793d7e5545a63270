# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils._fleet import (
    fleet_close, fleet_summary, host_summary, host_summary_line, service_hosts)


class FilterModule:
    """Per-host summary filters used by the record and fingerprint roles."""

    def filters(self):
        return {"_host_summary": host_summary, "_host_summary_line": host_summary_line, "_fleet_summary": fleet_summary,
                "_service_hosts": service_hosts, "_fleet_close": fleet_close}
