# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small restarting supervisor for the system test of the production-server freeze.

``python supervisor.py STATE_FILE LOG_DIR -- ARGV...`` starts ARGV in a session of its own with stdout and stderr
in LOG_DIR/current.log; when it dies, the log becomes previous.log, the leftovers of its session are killed, the
exit code (128+signal for a signal, as a shell reports it) is appended to STATE_FILE
(``{"restart_count", "exit_codes", "pid"}``, written atomically) and ARGV is started again. SIGTERM stops the
child's session and the supervisor. At most 5 restarts, so a broken command cannot spin forever.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

MAX_RESTARTS = 5


def write_state(path, state):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.replace(tmp, path)


def kill_session(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def main(argv):
    state_file, log_dir, sep = argv[1], argv[2], argv[3]
    if sep != "--":
        raise SystemExit("usage: supervisor.py STATE_FILE LOG_DIR -- ARGV...")
    command = argv[4:]
    state = {"restart_count": 0, "exit_codes": [], "pid": None, "supervisor_pid": os.getpid()}
    child = {"proc": None}

    def stop(_signum, _frame):
        if child["proc"] is not None:
            kill_session(child["proc"].pid)
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    current = os.path.join(log_dir, "current.log")
    while True:
        with open(current, "ab") as log:
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        child["proc"] = proc
        state["pid"] = proc.pid
        write_state(state_file, state)
        rc = proc.wait()
        kill_session(proc.pid)
        state["exit_codes"].append(128 - rc if rc < 0 else rc)
        state["pid"] = None
        os.replace(current, os.path.join(log_dir, "previous.log"))
        if state["restart_count"] >= MAX_RESTARTS:
            write_state(state_file, state)
            return 1
        state["restart_count"] += 1
        write_state(state_file, state)
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
