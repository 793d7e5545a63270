# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.plugin_utils.play import _targets


def target_patterns(value, controller=False, stopped=None):
    """repro_vllm_targets (a pattern, a comma or colon list, a YAML list) as the list of host-pattern terms a play's
    ``hosts:`` takes, with ``localhost`` last when ``controller``; no host when ``stopped`` (_targets.target_patterns)."""
    return _targets.target_patterns(value, controller=bool(controller), stopped=stopped)


class FilterModule:
    """repro_vllm_targets as host-pattern terms."""

    def filters(self):
        return {"target_patterns": target_patterns}
