# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Note that this doc fragment is **PRIVATE** to the collection. It can have breaking changes at any time.

from __future__ import annotations


class ModuleDocFragment:

    # the interrupt grace of record_log and console (the same code: record_log's install_interrupt_watch)
    DOCUMENTATION = r"""
options:
  interrupt_grace:
    description:
      - Seconds ansible-playbook may take to end after an interrupt (and after its servers were stopped) before
        it is ended. 0 turns the grace off (the servers are still stopped).
      - C(REPRO_VLLM_CONSOLE_INTERRUPT_GRACE) and the C([repro_vllm_console]) section are the names of 0.1.0, when
        the console callback held this option.
    type: float
    default: 30
    env:
      - name: REPRO_VLLM_INTERRUPT_GRACE
      - name: REPRO_VLLM_CONSOLE_INTERRUPT_GRACE
    ini:
      - section: repro_vllm
        key: interrupt_grace
      - section: repro_vllm_console
        key: interrupt_grace
"""
