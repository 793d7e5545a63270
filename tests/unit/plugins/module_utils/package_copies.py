# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Changed copies of a hand-off package, for the tests of the receiving side (the unit tests of _replay and
tests/system/test_replay.py import this one copy). A copy made here is a tamper the test makes, and says so."""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile


def rewrite(src, dest, change):
    """Copy the package ``src`` to ``dest`` member by member through ``change(name, data) -> data`` (the tamper a
    test makes), with a ``dest.sha256`` that matches the changed bytes, so only the runs' manifests can catch it."""
    buf = io.BytesIO()
    with tarfile.open(src, "r:gz") as tin, tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tout:
        for info in tin:
            data = tin.extractfile(info).read() if info.isfile() else None
            if data is not None:
                data = change(info.name, data)
                info.size = len(data)
                tout.addfile(info, io.BytesIO(data))
            else:
                tout.addfile(info)
    raw = gzip.compress(buf.getvalue(), mtime=0)
    with open(dest, "wb") as f:
        f.write(raw)
    with open(dest + ".sha256", "w") as f:
        f.write("%s  %s\n" % (hashlib.sha256(raw).hexdigest(), os.path.basename(dest)))
    return dest
