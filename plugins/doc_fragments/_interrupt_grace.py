# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Note that this doc fragment is **PRIVATE** to the collection. It can have breaking changes at any time.

from __future__ import annotations


class ModuleDocFragment:

    # the interrupt grace of record_log and console (the same code: plugin_utils/play/_callbacks.py install_interrupt_watch)
    DOCUMENTATION = r"""
options:
  interrupt_grace:
    description:
      - Seconds ansible-playbook may take to end after an interrupt (and after its servers were stopped) before
        it is ended. 0 turns the grace off (the servers are still stopped).
    type: float
    default: 30
    env:
      - name: REPRO_VLLM_INTERRUPT_GRACE
    ini:
      - section: repro_vllm
        key: interrupt_grace
"""
