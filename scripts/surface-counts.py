#!/usr/bin/env python
"""Count what issue 22 item 7 asks to shrink, in a checkout of this collection (default: this one):
role task lines, set_fact tasks, Jinja expressions that carry logic (in roles/ and playbooks/), filters (public:
no leading underscore and no deprecation in meta/runtime.yml; private: a leading underscore; deprecated names) and
how many places in roles/ and playbooks/ call each.

    python3 scripts/surface-counts.py [TREE] [--json]

An expression "carries logic" when it is more than a variable with plain conversions: it has a test, a comparison,
a boolean operator, a conditional, a loop or a filter other than default/int/bool/string/float/quote/basename/
dirname/to_json/to_nice_json/b64encode/length. A task file's line count includes comments and blank lines.
"""
from __future__ import annotations

import ast
import glob
import json
import os
import re
import sys

PLAIN_FILTERS = {"default", "d", "int", "bool", "string", "float", "quote", "basename", "dirname", "to_json",
                 "to_nice_json", "b64encode", "length", "trim", "lower", "upper"}
EXPR = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.S)
LOGIC = re.compile(r"(\bif\b|\bfor\b|==|!=|<=|>=|\bnot\b|\band\b|\bor\b|\bis\b|\bin\b|[<>])")
FILTER = re.compile(r"\|\s*([A-Za-z_][\w.]*)")


def carries_logic(expr):
    if LOGIC.search(re.sub(r"(['\"]).*?\1", "", expr)):
        return True
    names = [f.split(".")[-1] for f in FILTER.findall(expr)]
    return any(n not in PLAIN_FILTERS for n in names)


def yaml_files(tree, *patterns):
    out = []
    for pat in patterns:
        out += glob.glob(os.path.join(tree, pat), recursive=True)
    return sorted(set(out))


def public_filters(tree):
    """The names the collection's FilterModule.filters() return (the dict literal in that method)."""
    names = []
    for path in sorted(glob.glob(os.path.join(tree, "plugins", "filter", "*.py"))):
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.FunctionDef) and node.name == "filters":
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Dict):
                        names += [k.value for k in sub.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return sorted(set(names))


def deprecated_filters(tree):
    """Filter names meta/runtime.yml deprecates (a redirect to a private name, or a plain deprecation)."""
    path = os.path.join(tree, "meta", "runtime.yml")
    if not os.path.isfile(path):
        return []
    try:
        import yaml
    except ImportError:
        return []
    with open(path) as fh:
        routing = ((yaml.safe_load(fh) or {}).get("plugin_routing") or {}).get("filter") or {}
    return sorted(n for n, e in routing.items() if isinstance(e, dict) and "deprecation" in e)


def counts(tree):
    tasks = yaml_files(tree, "roles/*/tasks/**/*.yml")
    task_lines = sum(len(open(p).read().splitlines()) for p in tasks)
    yaml_all = tasks + yaml_files(tree, "playbooks/*.yml", "roles/*/templates/*.j2")
    text = {p: open(p).read() for p in yaml_all}
    set_facts = sum(len(re.findall(r"^\s*-?\s*ansible\.builtin\.set_fact:", t, re.M)) for p, t in text.items() if p in tasks)
    exprs = [(m.group(1) or m.group(2) or "") for t in text.values() for m in EXPR.finditer(t)]
    logic = sum(1 for e in exprs if carries_logic(e))
    filters = public_filters(tree)
    deprecated = deprecated_filters(tree)
    public = [n for n in filters if not n.startswith("_") and n not in deprecated]
    callers = {}
    for name in filters:
        rx = re.compile(r"repro\.vllm\.%s\b" % re.escape(name))
        callers[name] = sum(len(rx.findall(t)) for t in text.values())
    return {"role_task_lines": task_lines, "role_task_files": len(tasks), "set_fact": set_facts,
            "jinja_expressions": len(exprs), "jinja_with_logic": logic, "filters": len(filters),
            "public_filters": len(public), "private_filters": sum(1 for n in filters if n.startswith("_")),
            "deprecated_filter_names": len(deprecated),
            "filters_with_one_caller_or_none": sum(1 for n in filters if callers[n] <= 1),
            "public_filters_with_one_caller_or_none": sum(1 for n in public if callers[n] <= 1),
            "filter_callers": callers}


def main(argv):
    tree = next((a for a in argv if not a.startswith("--")), os.path.join(os.path.dirname(__file__), ".."))
    res = counts(os.path.abspath(tree))
    if "--json" in argv:
        print(json.dumps(res, indent=2, sort_keys=True))
        return 0
    for key in ("role_task_files", "role_task_lines", "set_fact", "jinja_expressions", "jinja_with_logic",
                "filters", "public_filters", "private_filters", "deprecated_filter_names",
                "filters_with_one_caller_or_none", "public_filters_with_one_caller_or_none"):
        print("%-40s %d" % (key, res[key]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
