# -*- coding: utf-8 -*-
"""_callbacks.preload_plugins (both callbacks call it): the collection's filter and action plugins are loaded in the controller's main process,
so a worker forked after it finds them without loading them again (docs/performance.md, issue 8).

Run in a fresh interpreter set up the way ansible-playbook sets up its plugin loaders (the unit test process has
its own collection loader), which forks a child the way Ansible starts a task's worker."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.repro.vllm.plugins.plugin_utils.play import _callbacks

COLLECTIONS = os.path.abspath(os.path.join(os.path.dirname(_callbacks.__file__), *[".."] * 6))

SCRIPT = r"""
import json, os, sys
from ansible.plugins.loader import action_loader, filter_loader, init_plugin_loader
init_plugin_loader([sys.argv[1]])
from ansible_collections.repro.vllm.plugins.plugin_utils.play import _callbacks
if sys.argv[2] == "preload":
    _callbacks.preload_plugins()
    _callbacks.preload_plugins()  # the other callback's call does nothing
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    # a worker: find the filters one task templates and the action every host runs
    before = set(sys.modules)
    found = [filter_loader.get(n) is not None for n in
             ("repro.vllm._workflow_runs", "repro.vllm._service_line", "repro.vllm._argument_spec")]
    found.append(action_loader.get("repro.vllm.host_record", class_only=True) is not None)
    loaded = sorted(m for m in set(sys.modules) - before if m.startswith("ansible_collections.repro"))
    os.write(write, json.dumps({"found": found, "loaded": loaded}).encode())
    os._exit(0)
os.close(write)
with os.fdopen(read) as fh:
    print(fh.read())
os.waitpid(pid, 0)
"""


def _worker(mode):
    proc = subprocess.run([sys.executable, "-c", SCRIPT, COLLECTIONS, mode], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork, like Ansible's workers")
def test_a_worker_forked_after_the_preload_loads_no_plugin_of_the_collection_again():
    without = _worker("none")
    assert all(without["found"])
    # without the preload the worker loads them itself: the cost every task paid before
    assert "ansible_collections.repro.vllm.plugins.action.host_record" in without["loaded"]
    assert any(m.startswith("ansible_collections.repro.vllm.plugins.filter.") for m in without["loaded"])
    with_preload = _worker("preload")
    assert all(with_preload["found"]) and with_preload["loaded"] == []


def test_the_opened_run_is_found_in_a_registered_create_and_in_a_fact():
    import types

    def result(res, register=None):
        return types.SimpleNamespace(_result=res, _task=types.SimpleNamespace(register=register))
    created = {"changed": True, "path": "/r/c/run-001", "run_id": "run-001"}
    # ansible-core 2.21 keeps register as {name: projection}; older releases as the name
    assert _callbacks.opened_run(result(created, {"repro_vllm_run": "_task.polymorphic_result"})) == "/r/c/run-001"
    assert _callbacks.opened_run(result(created, "repro_vllm_run")) == "/r/c/run-001"
    assert _callbacks.opened_run(result(created, {"_repro_vllm_created": "x"})) is None
    assert _callbacks.opened_run(result(dict(created, failed=True), "repro_vllm_run")) is None
    assert _callbacks.opened_run(result({"ansible_facts": {"repro_vllm_run": {"path": "/r/c/run-002"}}})) == "/r/c/run-002"
    assert _callbacks.opened_run(result({"changed": False})) is None
