#!/usr/bin/env python
"""Count what issues 22 (item 7) and 34 (item 6) ask to shrink, in a checkout of this collection (default: this one):
role task lines, set_fact tasks, Jinja expressions that carry logic (in roles/ and playbooks/), filters (public:
no leading underscore and no deprecation in meta/runtime.yml; private: a leading underscore; deprecated names) and
how many places in roles/ and playbooks/ call each.

Issue 34's figures, every one counted from the files (comments and blank lines included): role and playbook YAML
(tasks, handlers, defaults, vars, meta, playbooks and their vars_files) with and without argument_specs.yml; set_fact in roles and
playbooks; the records-root filter (`_records_root`) in YAML; meta/runtime.yml's lines; logic-carrying Jinja (YAML
and role templates) where bare `when:`/`that:`/`until:`/`failed_when:`/`changed_when:` values count as expressions
too, a quoted one by what its quotes hold; the YAML each playbook reaches (itself, the task files it includes or
imports - `tasks_from`, include/import_tasks -, its vars_files and the defaults/vars/meta, argument_specs.yml included, and
templates of every role it names, followed transitively); plugin Python lines (a filter's YAML doc is not Python)
and the Python files over 1,200 lines. At c6f4d72 this gives the issue's own figures (its 77 `set_fact` counted a
comment that names set_fact).

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


BARE = re.compile(r"^\s*-?\s*(when|that|until|failed_when|changed_when):\s*(.*)$")
ROLE_REF = re.compile(r"(?:^\s*-?\s*(?:name|role):\s*|^\s*-\s+)(?:repro\.vllm\.)([a-z_]+)\s*$", re.M)
TASKS_FROM = re.compile(r"^\s*tasks_from:\s*['\"]?([\w./-]+)", re.M)
INCLUDE = re.compile(r"^\s*-?\s*(?:ansible\.builtin\.)?(?:include_tasks|import_tasks|import_playbook|vars_files):\s*"
                     r"(?:\n\s*file:\s*)?['\"]?([\w./{} -]+?)['\"]?\s*$", re.M)


def unquoted(value):
    """A YAML scalar without its outer quotes (`when: "'x' in y"` is the bare expression 'x' in y)."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def bare_expressions(text):
    """The bare Jinja of when/that/until/failed_when/changed_when: an inline value, or the items of a list below
    (a quoted value counts by what is inside its quotes)."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = BARE.match(line)
        if not m:
            continue
        value = unquoted(m.group(2))
        if value and not value.startswith(("{{", "|", ">", "[")):
            out.append(value)
        elif value.startswith("["):
            out.append(value)
        elif not value:
            indent = len(line) - len(line.lstrip())
            for nxt in lines[i + 1:]:
                if not nxt.strip():
                    continue
                if len(nxt) - len(nxt.lstrip()) <= indent or not nxt.lstrip().startswith("- "):
                    break
                item = unquoted(nxt.lstrip()[2:])
                if not item.startswith("{{"):
                    out.append(item)
    return out


def reached(tree, playbook):
    """Every YAML file a playbook reaches: itself, task files it includes or imports, and for each role it names
    the role's task files named (main.yml without tasks_from), its defaults/vars/meta (argument_specs.yml
    included: Ansible reads it for every role it runs) and its templates (Jinja the play renders); transitively."""
    seen, todo = set(), [playbook]
    roles_done = set()
    while todo:
        path = os.path.normpath(todo.pop())
        if path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        text = open(path).read()
        here = os.path.dirname(path)
        for m in INCLUDE.finditer(text):
            name = m.group(1).strip()
            if "{{" in name:
                continue
            todo.append(os.path.join(here, name))
        for block in re.split(r"\n(?=\s*- )", text):
            for m in ROLE_REF.finditer(block):
                role = m.group(1)
                rdir = os.path.join(tree, "roles", role)
                if not os.path.isdir(rdir):
                    continue
                tf = TASKS_FROM.search(block)
                entry = (tf.group(1) if tf else "main")
                entry = entry if entry.endswith(".yml") else entry + ".yml"
                todo.append(os.path.join(rdir, "tasks", entry))
                if role not in roles_done:
                    roles_done.add(role)
                    for sub in ("defaults", "vars", "meta"):
                        todo.extend(glob.glob(os.path.join(rdir, sub, "*.yml")))
                    todo.extend(glob.glob(os.path.join(rdir, "templates", "*.j2")))
    return sorted(seen)


def plugin_python(tree):
    """(lines, {file: lines}) of plugins/**/*.py; a filter's YAML documentation (plugins/filter/*.yml) is not counted."""
    files = {}
    for path in glob.glob(os.path.join(tree, "plugins", "**", "*.py"), recursive=True):
        files[os.path.relpath(path, tree)] = len(open(path).read().splitlines())
    return sum(files.values()), files


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
    role_yaml = yaml_files(tree, "roles/*/tasks/**/*.yml", "roles/*/handlers/*.yml", "roles/*/defaults/*.yml",
                           "roles/*/vars/*.yml", "roles/*/meta/*.yml", "playbooks/*.yml", "playbooks/vars/*.yml")
    specs = [p for p in role_yaml if p.endswith("argument_specs.yml")]
    lines_of = {p: len(open(p).read().splitlines()) for p in role_yaml}
    yaml_text = {p: open(p).read() for p in role_yaml if p not in specs}
    bare = [e for t in yaml_text.values() for e in bare_expressions(t)]
    jinja_text = list(yaml_text.values()) + [open(p).read() for p in yaml_files(tree, "roles/*/templates/*.j2")]
    braced = [(m.group(1) or m.group(2) or "") for t in jinja_text for m in EXPR.finditer(t)]
    runtime = os.path.join(tree, "meta", "runtime.yml")
    py_total, py_files = plugin_python(tree)
    reach = {}
    for pb in yaml_files(tree, "playbooks/*.yml"):
        files = reached(tree, pb)
        reach[os.path.basename(pb)] = {"files": len(files), "lines": sum(len(open(p).read().splitlines()) for p in files)}
    issue34 = {
        "yaml_lines_without_argument_specs": sum(n for p, n in lines_of.items() if p not in specs),
        "yaml_lines_with_argument_specs": sum(lines_of.values()),
        "set_fact_roles_and_playbooks": sum(len(re.findall(r"^\s*-?\s*ansible\.builtin\.set_fact:", t, re.M))
                                            for t in yaml_text.values()),
        "records_root_filter_in_yaml": sum(len(re.findall(r"repro\.vllm\._records_root\b", t))
                                           for t in yaml_text.values()),
        "runtime_yml_lines": len(open(runtime).read().splitlines()) if os.path.isfile(runtime) else 0,
        "jinja_with_logic_incl_bare": sum(1 for e in braced + bare if carries_logic(e)),
        "playbook_reach": reach,
        "plugin_python_lines": py_total,
        "python_files_over_1200": {f: n for f, n in sorted(py_files.items()) if n > 1200},
    }
    return {"issue34": issue34, "role_task_lines": task_lines, "role_task_files": len(tasks), "set_fact": set_facts,
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
    print("issue 34 (item 6):")
    for key, value in res["issue34"].items():
        if isinstance(value, dict):
            for k, v in value.items():
                print("  %-38s %s" % ("%s %s" % (key, k), v))
        else:
            print("  %-38s %s" % (key, value))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
