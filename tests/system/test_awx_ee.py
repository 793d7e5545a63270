# -*- coding: utf-8 -*-
"""The execution environment, as far as it goes without a container engine: `ansible-builder introspect` reads the
installed collection's needs (meta/execution-environment.yml -> meta/bindep.txt), and `ansible-builder create`
writes a build context whose Containerfile starts from the pinned base image, installs this collection from its
built artifact and puts the EE's ansible.cfg (record_log callback) where Ansible reads it."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tarfile

import yaml

from conftest import ROOT

BIN = os.path.dirname(sys.executable)
EE_DIR = os.path.join(ROOT, "execution-environment")


def _run(args, **kw):
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False, **kw)
    assert done.returncode == 0, "%s\n%s\n%s" % (args, done.stdout, done.stderr)
    return done.stdout


def test_introspect_finds_the_collections_system_needs(tmp_path):
    dist, dest = tmp_path / "dist", tmp_path / "dest"
    _run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(dist), ROOT])
    tarball = glob.glob(str(dist / "repro-vllm-*.tar.gz"))[0]
    _run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--force", "-p", str(dest), tarball])
    out = _run([os.path.join(BIN, "ansible-builder"), "introspect", "--sanitize", str(dest)])
    # every line of meta/bindep.txt, attributed to the collection (introspection reads it relative to the
    # collection root: a wrong path there fails here)
    with open(os.path.join(ROOT, "meta", "bindep.txt")) as f:
        wanted = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert wanted, "meta/bindep.txt lists nothing"
    found = yaml.safe_load(out)["system"]
    assert found == ["%s  # from collection repro.vllm" % line for line in wanted], out


def test_create_writes_a_context_from_the_pinned_base_with_this_collection(tmp_path):
    ctx = tmp_path / "context"
    _run([os.path.join(EE_DIR, "create-context.sh"), str(ctx)],
         env=dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", "")))
    containerfile = (ctx / "Containerfile").read_text()
    with open(os.path.join(EE_DIR, "execution-environment.yml")) as f:
        definition = yaml.safe_load(f)
    assert definition["version"] == 3
    base = definition["images"]["base_image"]["name"]
    assert re.fullmatch(r"[\w./-]+@sha256:[0-9a-f]{64}", base), "the base image must be pinned by digest: %s" % base
    assert 'ARG EE_BASE_IMAGE="%s"' % base in containerfile
    # the collection artifact in the context is this checkout's, at galaxy.yml's version
    with open(os.path.join(ROOT, "galaxy.yml")) as f:
        version = yaml.safe_load(f)["version"]
    with tarfile.open(str(ctx / "_build" / "collections" / "repro-vllm.tar.gz")) as tar:
        manifest = yaml.safe_load(tar.extractfile("MANIFEST.json"))
        names = tar.getnames()
    assert (manifest["collection_info"]["namespace"], manifest["collection_info"]["name"]) == ("repro", "vllm")
    assert manifest["collection_info"]["version"] == version
    assert "meta/bindep.txt" in names and "meta/execution-environment.yml" in names
    reqs = yaml.safe_load((ctx / "_build" / "requirements.yml").read_text())
    assert reqs["collections"] == [{"name": "collections/repro-vllm.tar.gz", "type": "file"}]
    assert re.search(r"ansible-galaxy collection install .*-r requirements.yml", containerfile)
    # introspection runs in the build and installs what bindep lists; the EE's ansible.cfg lands in /etc/ansible
    assert "introspect" in containerfile and "install-from-bindep" in containerfile
    assert "COPY _build/configs/ansible.cfg /etc/ansible/ansible.cfg" in containerfile
    cfg = (ctx / "_build" / "configs" / "ansible.cfg").read_text()
    assert re.search(r"^callbacks_enabled\s*=\s*repro\.vllm\.record_log$", cfg, re.M)
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core==' in containerfile and "ansible-runner==" in containerfile
