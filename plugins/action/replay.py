# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""repro.vllm.replay on the controller: the records root resolved as for the hand-off (plugins/action/handoff.py)."""

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.action.handoff import ActionModule as _RootResolved


class ActionModule(_RootResolved):
    """The records root resolved in the controller's process, then the module."""
