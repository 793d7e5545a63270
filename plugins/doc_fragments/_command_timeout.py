# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Note that this doc fragment is **PRIVATE** to the collection. It can have breaking changes at any time.

from __future__ import annotations


class ModuleDocFragment:

    DOCUMENTATION = r"""
options:
  command_timeout:
    description:
      - Seconds each external command may run before it is killed (with its whole process group).
      - A command that hits it is reported with status C(timed_out) in the result, never as a hung task.
    type: float
    default: 10
"""
