# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""A started server's lease on its node: ``<state_file>.lease`` holds ``{"until": unix time, ...}``.

The server's supervisor (module_utils/_server.py) stops the whole process group once ``until`` has passed; the
play renews it (vllm_server start and check, api_request before each request). What the supervisor stopped is
written once to ``<state_file>.lease-expired``. Standard library only.
"""

from __future__ import annotations

import json
import os
import time


def write_json_atomic(path, data):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    os.rename(tmp, path)


def lease_file_for(state_file):
    return state_file + ".lease"


def lease_expired_file_for(state_file):
    return state_file + ".lease-expired"


def renew_lease(lease_file, seconds, by=None):
    """Move the lease to ``seconds`` from now; returns the new ``until`` (unix time)."""
    now = time.time()
    until = round(now + float(seconds), 3)
    write_json_atomic(lease_file, {"until": until, "renewed_at": round(now, 3), "seconds": float(seconds), "by": by})
    return until
