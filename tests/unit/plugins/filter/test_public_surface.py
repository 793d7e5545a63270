# -*- coding: utf-8 -*-
"""The collection's public filters are the short list docs/architecture.md names ("Public filters"); every other
filter has a private name (a leading underscore). The old public names of the private filters and the deprecated
``leftover_report`` are gone in 0.2.0 (issue 34): meta/runtime.yml routes no filter.

The loader test runs in a fresh interpreter set up the way ansible-playbook sets up its plugin loaders."""
from __future__ import annotations

import ast
import glob
import json
import os
import re
import subprocess
import sys

import yaml

from ansible_collections.repro.vllm.plugins.filter import record_diff

ROOT = os.path.abspath(os.path.join(os.path.dirname(record_diff.__file__), "..", ".."))
COLLECTIONS = os.path.abspath(os.path.join(ROOT, *[".."] * 3))


def _filter_names():
    names = []
    for path in sorted(glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py"))):
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.FunctionDef) and node.name == "filters":
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Dict):
                        names += [k.value for k in sub.keys]
    return names


def _documented_public():
    """The names in docs/architecture.md's "Public filters" table."""
    text = open(os.path.join(ROOT, "docs", "architecture.md")).read()
    section = text.split("### Public filters", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", section, re.M))


def test_public_filters_are_the_documented_short_list():
    public = {n for n in _filter_names() if not n.startswith("_")}
    assert public == _documented_public()
    assert len(public) <= 15


def test_every_private_filter_has_its_documentation_under_its_own_name():
    for name in _filter_names():
        doc = os.path.join(ROOT, "plugins", "filter", name + ".yml")
        assert os.path.isfile(doc), name
        with open(doc) as fh:
            assert yaml.safe_load(fh)["DOCUMENTATION"]["name"] == name


def test_runtime_routes_no_filter_and_deprecates_nothing():
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as fh:
        runtime = yaml.safe_load(fh)
    assert "plugin_routing" not in runtime
    assert "deprecat" not in open(os.path.join(ROOT, "meta", "runtime.yml")).read()


SCRIPT = r"""
import json, sys
from ansible.plugins.loader import filter_loader, init_plugin_loader
init_plugin_loader([sys.argv[1]])
old = filter_loader.get("repro.vllm.records_root")
new = filter_loader.get("repro.vllm._records_root")
print(json.dumps({"old": old is not None, "new": new is not None, "value": new.j2_function("/tmp/x")}))
"""


def test_an_old_public_name_is_gone_through_ansible_cores_loader():
    proc = subprocess.run([sys.executable, "-c", SCRIPT, COLLECTIONS], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not res["old"] and res["new"]
    assert res["value"] == "/tmp/x"
