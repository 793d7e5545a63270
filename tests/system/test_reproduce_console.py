# -*- coding: utf-8 -*-
"""The collection's callbacks for real, through ansible-playbook on localhost: the operator's console
(repro.vllm.console: quiet stream, failures, closing table, the full stream at -v, AWX through ansible-runner) and
the record_log notification callback (terminal.log inside the open run, redacted, closed before the freeze)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import COLLECTIONS, ROOT, run_playbook

FAKE_TOKEN = "hf_" + "FAKE" * 8

PLAY = """
- name: Console | a reproduction in small
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Open a run
      repro.vllm.run_record:
        state: create
        root: "{{ root }}"
        case_id: console
        hosts: [localhost]
        purpose: console-test
        # the action hands back its console line (where the run is); no debug task repeats it
        announce: true
      register: created

    - name: The run of this play
      ansible.builtin.set_fact:
        repro_vllm_run: {path: "{{ created.path }}", run_id: "{{ created.run_id }}"}

    - name: A task an operator does not need to see
      ansible.builtin.command: echo plumbing-output
      changed_when: false

    - name: Attempt | progress
      ansible.builtin.debug:
        msg: "reproduce | localhost | {{ created.run_id }} minimal | server ready in 3.1 s"

    - name: Leftovers | progress
      ansible.builtin.debug:
        msg: "reproduce | localhost | cleaned: {{ item }}"
      loop: [server of run-000, server of run-00x]

    - name: A secret the record must never show
      ansible.builtin.debug:
        msg: "token {{ token }}"

    - name: The judged attempt
      ansible.builtin.set_fact:
        _repro_vllm_attempt:
          step: long_context
          run: "{{ created.run_id }}"
          path: "{{ created.path }}"
          nodes: [localhost]
          ok: false
          refused: false
          purpose: feature_layer
          stage: config
          error_class: config_error
          component: server

    - name: A failing task, rescued
      block:
        - name: Fails on purpose
          ansible.builtin.fail:
            msg: the server on localhost did not start; see its log
      rescue:
        - name: Rescued
          ansible.builtin.debug:
            msg: rescued

    - name: Freeze the run
      repro.vllm.run_record:
        state: freeze
        path: "{{ created.path }}"
        collection_version: 0.1.0

    - name: After the freeze (never in terminal.log)
      ansible.builtin.debug:
        msg: after-freeze
"""


def _run(tmp_path, *args, env=None):
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    full_env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
                    ANSIBLE_NOCOLOR="1")
    full_env.update(env or {})
    bin_dir = os.path.dirname(sys.executable)
    cmd = [os.path.join(bin_dir, "ansible-playbook"), "-i", "localhost,", "-c", "local",
           "-e", json.dumps({"root": str(tmp_path / "records"), "token": FAKE_TOKEN,
                             "ansible_python_interpreter": sys.executable}), str(play)] + list(args)
    proc = subprocess.run(cmd, cwd=str(tmp_path), env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=300, check=False)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def test_console_default_verbosity_shows_progress_failures_and_table(tmp_path):
    rc, out = _run(tmp_path)
    assert rc == 0, out
    lines = out.splitlines()
    assert "== Console | a reproduction in small" in lines
    assert "reproduce | localhost | run-001 minimal | server ready in 3.1 s" in lines
    # an action's console lines are printed as they are (run_record's open, announced), nothing else of its result
    opened = [line for line in lines if line.startswith("record | console-test run run-001 of case console for 1 host(s): ")]
    assert len(opened) == 1 and "(profile none, not judged; records root " in opened[0], out
    assert "localhost | FAILED | Fails on purpose | the server on localhost did not start; see its log" in lines
    assert "TASK [" not in out and "plumbing-output" not in out and "ok: [localhost]" not in out
    # a progress task with a loop: one line per item, not the loop's own "All items completed"
    assert "reproduce | localhost | cleaned: server of run-000" in lines
    assert "reproduce | localhost | cleaned: server of run-00x" in lines and "All items completed" not in out
    table = lines.index(next(line for line in lines if line.startswith("host ")))
    assert lines[table].split() == ["host", "status", "stage", "error", "class", "record"]
    row = lines[table + 1].split()
    assert row[:7] == ["localhost", "FAILED", "at", "long_context", "config", "config_error", "(server)"]
    assert row[7].endswith("/records/console/run-001")
    assert any(line.startswith("recap localhost: ok=") for line in lines)
    assert len(lines) < 18, out


def test_console_verbose_is_the_full_stream(tmp_path):
    rc, out = _run(tmp_path, "-v")
    assert rc == 0, out
    assert "TASK [A task an operator does not need to see]" in out and "plumbing-output" in out
    assert "PLAY RECAP" in out
    assert "localhost  FAILED at long_context" in out  # the table at -v too


def test_console_under_ansible_runner_as_awx_runs_it(tmp_path):
    play = tmp_path / "project" / "play.yml"
    play.parent.mkdir()
    play.write_text(PLAY)
    inv = tmp_path / "inventory.ini"
    inv.write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    r = run_playbook(tmp_path, str(play), str(inv), {"root": str(tmp_path / "records"), "token": FAKE_TOKEN},
                     ident="awx", envvars={"ANSIBLE_STDOUT_CALLBACK": "repro.vllm.console"})
    out = r.stdout.read()
    assert r.status == "successful", out
    assert "reproduce | localhost | run-001 minimal | server ready in 3.1 s" in out
    assert "TASK [" not in out and "localhost  FAILED at long_context" in out
    # the job events AWX stores are all still there
    assert any(ev.get("event") == "runner_on_ok" for ev in r.events)


def test_record_log_writes_the_run_redacted_and_stops_at_the_freeze(tmp_path):
    rc, out = _run(tmp_path)
    assert rc == 0, out
    log = (tmp_path / "records" / "console" / "run-001" / "terminal.log").read_text()
    # lines before the run was opened are kept and written first
    assert log.index("TASK [Open a run]") < log.index("TASK [A task an operator does not need to see]")
    assert "plumbing-output" in log  # the full stream, not the console's quiet one
    assert FAKE_TOKEN not in log and "token " in log
    assert "failed: [localhost]" in log and "the server on localhost did not start" in log
    assert log.rstrip().endswith("the run is being frozen; terminal.log ends here")
    assert "after-freeze" not in log
    manifest = json.loads((tmp_path / "records" / "console" / "run-001" / "manifest.json").read_text())
    assert "terminal.log" in {f["path"] for f in manifest["files"]}
