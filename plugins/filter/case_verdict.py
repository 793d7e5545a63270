# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import os

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils.decide._verdict import VerdictError, case_verdict as _case_verdict


def case_verdict(path, runs=None, exclude=None):
    """The verdict of the case's latest play (module_utils/decide/_verdict.py); ``path`` is the case folder or a run in it.
    ``exclude``: run ids left out (the run still being written, e.g. the summary run whose notes say the verdict).
    ``line``: the console's closing line, ``verdict | <verdict> | <sentence>``."""
    if not isinstance(path, str) or not path:
        raise AnsibleFilterError("case_verdict: give the case folder (<records_root>/<case_id>) or a run folder in it")
    path = path.rstrip("/")
    if os.path.basename(path).startswith("run-") and os.path.isfile(os.path.join(path, "manifest.json")):
        path = os.path.dirname(path)
    try:
        ans = _case_verdict(path, runs=list(runs or []) or None, exclude=list(exclude or []))
    except VerdictError as exc:
        raise AnsibleFilterError("case_verdict: %s" % exc) from exc
    return dict(ans, line="verdict | %s | %s" % (ans["verdict"], ans["verdict_sentence"]))


class FilterModule:
    def filters(self):
        return {"case_verdict": case_verdict}
