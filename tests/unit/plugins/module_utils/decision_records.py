# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared helpers of the decision tests: copies of the real frozen runs in tests/fixtures/frozen-runs (made by
fingerprint.yml and reproduce.yml on the real CPU vLLM with nvidia-smi replaying real H200 captures; see the README
there) into a writable case folder, and the few changes a test makes to one, each named where it is made."""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures")
RECORDS = os.path.join(FIXTURES, "frozen-runs")
H200_MODULE = os.path.join(FIXTURES, "2026-11-29-580.159.04-h200", "module", "gpu_facts.json")
CONTAINERS = os.path.join(FIXTURES, "containers")


def writable(path):
    for base, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(base, name)
            os.chmod(full, os.stat(full).st_mode | stat.S_IWUSR)
    os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)


def case(tmp_path, name, runs=None, as_name=None):
    """Copy fixture case ``name`` (only ``runs`` when given) to tmp_path/records/<as_name or name>; its path."""
    src = os.path.join(RECORDS, name)
    dest = os.path.join(str(tmp_path), "records", as_name or name)
    os.makedirs(dest, exist_ok=True)
    for run in sorted(os.listdir(src)):
        if not run.startswith("run-") or (runs is not None and run not in runs):
            continue
        shutil.copytree(os.path.join(src, run), os.path.join(dest, run))
    writable(dest)
    return dest


def load(path):
    with open(path) as f:
        return json.load(f)


def save(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)


def edit(path, func):
    data = load(path)
    func(data)
    save(path, data)


def real_h200_gpu():
    """gpu_facts as the module returned it on the lent H200 (kernel module read from /proc there)."""
    return load(H200_MODULE)


def container_facts(tmp_path, reference, mapping=None):
    """container_facts gathered by the real code from podman's real captures (replay stub, see containers/README)."""
    from ansible_collections.repro.vllm.plugins.module_utils.container import _container
    mapping = mapping or os.path.join(CONTAINERS, "podman-4.3.1", "replay.json")
    stub = os.path.join(str(tmp_path), "podman-%d" % abs(hash(mapping)))
    with open(stub, "w") as f:
        f.write('#!/bin/sh\nexec "%s" "%s" "%s" "$@"\n' % (
            sys.executable, os.path.join(CONTAINERS, "replay.py"), mapping))
    os.chmod(stub, 0o755)
    facts, _actions = _container.gather(reference, binaries={"podman": stub}, runtimes=["podman"])
    facts["probe"] = None
    return facts
