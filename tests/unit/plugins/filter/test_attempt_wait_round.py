# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The attempt role's wait_round.yml as ansible-playbook runs it: two local hosts, each with a start job (a stand-in
module that answers as vllm_server's start does: ``ready``, ``outcome``), the real rounds and the real filter.

The wait's state is a lazy variable of the round's block, read again at each task. A skipped task still registers:
when the collect of a stopped node's job registered under the round's own name, the nodes where it was skipped lost
their round's answer before the wait was read for the last time, and a two-node step that served was taken for one
that never finished starting (the head sent no request; test_reproduce_multinode.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from ansible_collections.repro.vllm.plugins.filter import attempt

COLLECTIONS = os.path.abspath(os.path.join(os.path.dirname(attempt.__file__), *[".."] * 5))
WAIT_ROUND = os.path.join(COLLECTIONS, "ansible_collections", "repro", "vllm", "roles", "attempt", "tasks",
                          "wait_round.yml")

# a start job's stand-in: after `sleep` seconds, vllm_server's answer for a server that serves or ended
FAKE_START = """#!/usr/bin/python
import json, sys, time
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec=dict(sleep=dict(type="float"), ready=dict(type="bool")))
time.sleep(module.params["sleep"])
ready = module.params["ready"]
module.exit_json(changed=True, ready=ready, outcome="ready" if ready else "exited", exit_code=None if ready else 1)
"""

PLAY = """
- name: One multi-node wait
  hosts: all
  gather_facts: false
  vars:
    _repro_vllm_step: {nodes: [node01, node02], name: minimal}
    repro_vllm_wait_round_s: 2
    repro_vllm_stop_grace: 1
    repro_vllm_task_timeout: 60
    repro_vllm_run: {run_id: run-001, remote: {lease_file: "{{ out }}/{{ inventory_hostname }}.lease"}}
    _repro_vllm_state_file: "{{ out }}/{{ inventory_hostname }}.state.json"
  tasks:
    - name: What the attempt starts with (main.yml)
      ansible.builtin.set_fact:
        _repro_vllm_started: null
        _repro_vllm_wait_done: false
        _repro_vllm_job_collected: null

    - name: This node's start job, not waited for
      fake_start:
        sleep: "{{ sleep[inventory_hostname] }}"
        ready: "{{ ready[inventory_hostname] }}"
      async: 120
      poll: 0
      register: _start

    - name: The rounds
      ansible.builtin.include_tasks: "{{ wait_round }}"
      loop: [0, 1, 2, 3, 4]
      loop_control:
        loop_var: _repro_vllm_round
      vars:
        _repro_vllm_job: "{{ _start.ansible_job_id }}"

    - name: What the wait found
      ansible.builtin.copy:
        content: "{{ {'started': _repro_vllm_started, 'done': _repro_vllm_wait_done} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0600"
"""


PLAYBOOK = "import sys; from ansible.cli.playbook import main; sys.argv[0] = 'ansible-playbook'; main()"


def _wait(tmp_path, sleep, ready):
    """Run the rounds; each node's ``_repro_vllm_started`` and ``_repro_vllm_wait_done`` after them."""
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "fake_start.py").write_text(FAKE_START)
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    (tmp_path / "inventory.yml").write_text(json.dumps({"all": {"hosts": {
        "node01": {"ansible_connection": "local"}, "node02": {"ansible_connection": "local"}}}}))
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
               ANSIBLE_LIBRARY=str(tmp_path / "library"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default")
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    extra = {"ansible_python_interpreter": sys.executable, "out": str(out), "wait_round": WAIT_ROUND,
             "sleep": sleep, "ready": ready}
    # ansible-playbook's own entry point through this interpreter (ansible-test's units environment has no
    # "python -m ansible" entry points)
    proc = subprocess.run([sys.executable, "-c", PLAYBOOK, "-i", str(tmp_path / "inventory.yml"),
                           "-e", json.dumps(extra), str(tmp_path / "play.yml")],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    found = {}
    for node in ("node01", "node02"):
        with open(str(out / ("%s.json" % node))) as f:
            found[node] = json.load(f)
    return found


def test_a_step_that_served_is_found_serving_after_the_skipped_collect(tmp_path):
    found = _wait(tmp_path, {"node01": 0, "node02": 0}, {"node01": True, "node02": True})
    for node in ("node01", "node02"):
        assert found[node]["done"] is True
        started = found[node]["started"]
        assert started is not None, "%s: the round's answer was lost" % node
        assert (started["finished"], started["ready"], started["outcome"]) == (1, True, "ready")


def test_a_node_stopped_because_another_ended_first_has_its_collected_start(tmp_path):
    # node02's server ends at once; node01 still starts when the round ends: it is stopped, and its job is collected
    found = _wait(tmp_path, {"node01": 6, "node02": 0}, {"node01": True, "node02": False})
    assert found["node01"]["done"] is True and found["node02"]["done"] is True
    assert (found["node02"]["started"]["ready"], found["node02"]["started"]["outcome"]) == (False, "exited")
    # the stand-in ignores the stop: its job ends after its sleep, and the collect reads that end
    assert found["node01"]["started"] is not None and found["node01"]["started"]["finished"] == 1
