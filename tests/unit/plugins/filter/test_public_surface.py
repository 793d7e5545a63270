# -*- coding: utf-8 -*-
"""The collection's public filters are the short list docs/architecture.md names ("Public filters"); every other
filter has a private name (a leading underscore) and its old public name still resolves, for one release, through a
redirect with a deprecation in meta/runtime.yml (issue 22 item 7).

The loader test runs in a fresh interpreter set up the way ansible-playbook sets up its plugin loaders, and resolves
the old names through ansible-core's own routing."""
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


def _routing():
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as fh:
        return yaml.safe_load(fh)["plugin_routing"]["filter"]


def _documented_public():
    """The names in docs/architecture.md's "Public filters" table."""
    text = open(os.path.join(ROOT, "docs", "architecture.md")).read()
    section = text.split("### Public filters", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", section, re.M))


def test_public_filters_are_the_documented_short_list():
    names = _filter_names()
    routing = _routing()
    public = {n for n in names if not n.startswith("_") and "deprecation" not in routing.get(n, {})}
    assert public == _documented_public()
    assert len(public) <= 15


def test_every_private_filter_has_its_documentation_under_its_own_name():
    for name in _filter_names():
        doc = os.path.join(ROOT, "plugins", "filter", name + ".yml")
        assert os.path.isfile(doc), name
        with open(doc) as fh:
            assert yaml.safe_load(fh)["DOCUMENTATION"]["name"] == name


def test_every_old_name_redirects_to_its_private_filter_with_a_deprecation():
    names = set(_filter_names())
    redirected = {old: entry for old, entry in _routing().items() if "redirect" in entry}
    # the 44 names that were public before issue 22; private filters added since never had a public name
    assert len(redirected) == 44
    for old, entry in redirected.items():
        assert entry["redirect"] == "repro.vllm._" + old and "_" + old in names, old
        assert old not in names, old  # the old name lives only in the routing
        assert entry["deprecation"]["removal_version"] and entry["deprecation"]["warning_text"], old


SCRIPT = r"""
import json, sys
from ansible.plugins.loader import filter_loader, init_plugin_loader
from ansible.utils.display import Display
init_plugin_loader([sys.argv[1]])
warned = []
Display.deprecated = lambda self, msg, *a, **k: warned.append(msg)
old = filter_loader.get("repro.vllm.records_root")
new = filter_loader.get("repro.vllm._records_root")
print(json.dumps({"old": old is not None, "new": new is not None, "same": old.j2_function is new.j2_function,
                  "value": old.j2_function("/tmp/x"), "warned": warned}))
"""


def test_an_old_name_still_works_and_warns_through_ansible_cores_loader():
    proc = subprocess.run([sys.executable, "-c", SCRIPT, COLLECTIONS], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["old"] and res["new"] and res["same"]
    assert res["value"] == "/tmp/x"
    assert len(res["warned"]) == 1 and "repro.vllm.records_root" in res["warned"][0] and "deprecated" in res["warned"][0]


def test_no_filter_file_has_a_routed_name():
    """ansible-core finds a collection filter by loading every file of plugins/filter by its own name, through the
    same routing: a file named like a redirected filter would be redirected itself and its filters lost."""
    files = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py"))}
    assert not files & {old for old, entry in _routing().items() if "redirect" in entry}


def test_the_preload_leaves_the_deprecated_names_out():
    """A play that never calls a deprecated name prints no deprecation warning for it: the callbacks' preload looks
    up only the live names."""
    from ansible_collections.repro.vllm.plugins.callback import record_log
    deprecated = record_log._deprecated_filters()  # pylint: disable=protected-access
    assert "leftover_report" in deprecated and "records_root" in deprecated
    assert not {n for n in _filter_names() if n.startswith("_")} & deprecated
