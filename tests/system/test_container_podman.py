# -*- coding: utf-8 -*-
"""container_facts against a real podman engine (Debian's podman 4.3.1 where it is installed): an image built
here from this machine's own python3 (FROM scratch), inspected, and probed by digest with the probe script.
Where podman is missing or cannot build or run a container, an ad-hoc run skips saying why; under tests/run-all.sh
(scripts/setup-test-deps.sh installs podman and runc) it fails saying why (tests/real_parts.py)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid

import pytest

from conftest import PODMAN_GLOBAL, ROOT, missing

sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "plugins", "modules"))
from module_process import run_module  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.repro.vllm.plugins.modules import container_facts  # noqa: E402

PODMAN = shutil.which("podman")
# this VM's hybrid cgroups need cgroupfs and runc (conftest.PODMAN_GLOBAL), and rlimits no higher than the hard ones
# (fixtures README)
GLOBAL = PODMAN_GLOBAL
RUN_ARGS = GLOBAL + ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1000:1000"]


def _libs(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return [w for line in out.splitlines() for w in line.split() if w.startswith("/")]


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    if not PODMAN:
        missing("podman", "no podman on PATH")
    ctx = tmp_path_factory.mktemp("podman-ctx")
    rootfs = ctx / "rootfs"
    py = os.path.realpath(shutil.which("python3"))
    for path in [py] + _libs(py):
        dest = rootfs / path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, str(dest))
    if py != "/usr/bin/python3":
        (rootfs / "usr" / "bin").mkdir(parents=True, exist_ok=True)
        os.rename(str(rootfs / py.lstrip("/")), str(rootfs / "usr" / "bin" / "python3"))
    stdlib = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    # the probe reads the driver through ctypes: its extension's libraries (libffi) too
    ctypes_so = subprocess.run([py, "-c", "import _ctypes; print(_ctypes.__file__)"], capture_output=True, text=True,
                               check=False).stdout.strip()
    for path in (_libs(ctypes_so) if ctypes_so.endswith(".so") else []):
        dest = rootfs / path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists():
            shutil.copy(path, str(dest))
    shutil.copytree(stdlib, str(rootfs / stdlib.lstrip("/")), ignore=shutil.ignore_patterns("test", "__pycache__"))
    (ctx / "Containerfile").write_text("FROM scratch\nCOPY rootfs/ /\nENV PATH=/usr/bin HF_TOKEN=hf_FAKEFAKEFAKEFAKE\n")
    tag = "localhost/repro-vllm-test-%s:0.1" % uuid.uuid4().hex[:8]
    build = subprocess.run([PODMAN] + GLOBAL + ["build", "-q", "-t", tag, str(ctx)], capture_output=True,
                           text=True, timeout=300, check=False)
    if build.returncode != 0:
        said = build.stderr.strip()[-300:]
        missing("podman", "podman %s build answered rc %d: %s" % (" ".join(GLOBAL), build.returncode, said))
    smoke = subprocess.run([PODMAN, "run", "--rm"] + RUN_ARGS + ["--entrypoint", "python3", tag, "-c", "print(1)"],
                           capture_output=True, text=True, timeout=120, check=False)
    if smoke.returncode != 0:
        subprocess.run([PODMAN, "rmi", "-f", tag], capture_output=True, timeout=120, check=False)
        said = smoke.stderr.strip()[-300:]
        missing("podman", "podman run %s answered rc %d: %s" % (" ".join(RUN_ARGS), smoke.returncode, said))
    yield tag
    subprocess.run([PODMAN, "rmi", "-f", tag], capture_output=True, timeout=120, check=False)


def test_real_podman_probe_by_digest(image, tmp_path):
    res = run_module(container_facts, tmp_path, image=image, runtimes=["podman"], probe=True,
                     probe_run_args=RUN_ARGS, probe_timeout=120)
    facts = res["ansible_facts"]["repro_vllm_container"]
    assert facts["found_in"] == ["podman"], facts["runtimes"]["podman"]
    rec = facts["runtimes"]["podman"]["image"]
    assert rec["repo_digests"] and rec["config_digest"].startswith("sha256:")
    probe = facts["probe"]
    # the probe ran the image by its repo digest, not by the tag
    assert probe["reference_kind"] == "repo_digest" and probe["reference"] == rec["repo_digests"][0]
    assert probe["reference"] in probe["cmd"] and image not in probe["cmd"]
    assert probe["status"] == "ok", probe
    host_py = os.path.realpath(shutil.which("python3"))
    version = subprocess.run([host_py, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert probe["python"] == version
    assert probe["python_executable"] == "/usr/bin/python3"
    # no torch, no driver in this image: said as such, not guessed
    assert probe["torch"] is None and "torch" in probe["errors"]
    assert probe["device_count"] is None and probe["cuda_driver"] is None and "libcuda" in probe["errors"]["cuda_driver"]
    assert probe["libcuda_path"] is None
    assert "hf_FAKEFAKEFAKEFAKE" not in str(res)  # the image's env is redacted
