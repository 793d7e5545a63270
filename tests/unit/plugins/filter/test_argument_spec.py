# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbook-level argument spec: the union of the real roles' specs, one type per variable, and every playbook
validating against (at least) every role it runs."""

from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.repro.vllm.plugins.filter.playbook_spec import ROLES, argument_spec, load_role_specs
from ansible_collections.repro.vllm.plugins.plugin_utils.play._argspec import ArgSpecError, merge_role_specs

PLAYBOOKS = os.path.join(os.path.dirname(ROLES), "playbooks")
_ROLE_REF = re.compile(r"\brepro\.vllm\.([a-z_]+)\b")


def _role_refs(path):
    with open(path) as f:
        return set(_ROLE_REF.findall(f.read()))


def _roles_run_by(playbook, specs):
    """Every role of the collection a playbook runs, also through the task files of the roles it runs."""
    todo = {r for r in _role_refs(playbook) if r in specs}
    for line in open(playbook):
        m = re.match(r"\s*ansible\.builtin\.import_playbook:\s*([a-z_]+\.yml)", line)
        if m:
            todo |= _roles_run_by(os.path.join(PLAYBOOKS, m.group(1)), specs)
    seen = set()
    while todo:
        role = todo.pop()
        seen.add(role)
        for base, _dirs, files in os.walk(os.path.join(ROLES, role, "tasks")):
            for name in files:
                todo |= {r for r in _role_refs(os.path.join(base, name)) if r in specs} - seen
    return seen


def _validated_roles(playbook):
    with open(playbook) as f:
        plays = yaml.safe_load(f)
    first = plays[0]
    task = first["tasks"][0]
    # controller-only playbooks check on localhost; those with targets over every target and localhost, once, so
    # that a --limit without localhost still checks
    assert first["hosts"] in ("localhost", "{{ _repro_vllm_hosts_and_controller }}"), first["hosts"]
    assert first["hosts"] == "localhost" or first["vars_files"] == "vars/targets.yml", first
    assert first["gather_facts"] is False and first["any_errors_fatal"] is True
    # the one variable check (issue 34): validate_argument_spec, the first task of every playbook
    assert first["hosts"] == "localhost" or task.get("run_once") is True
    template = task["ansible.builtin.validate_argument_spec"]["argument_spec"]
    m = re.match(r"^\{\{ (\[.*\]) \| repro\.vllm\._argument_spec \}\}$", " ".join(template.split()))
    assert m, template
    return set(yaml.safe_load(m.group(1)))


def test_the_real_roles_merge_without_conflict():
    specs = load_role_specs()
    merged = argument_spec(sorted(specs))
    assert merged["repro_vllm_command_timeout"] == {"type": "float"}  # the modules take seconds as a float
    assert merged["repro_vllm_records_sink"] == {"type": "str"}
    assert all("default" not in o and "required" not in o for o in merged.values())


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(PLAYBOOKS) if n.endswith(".yml")))
def test_every_playbook_validates_first_against_the_roles_it_runs(name):
    path = os.path.join(PLAYBOOKS, name)
    specs = load_role_specs()
    missing = _roles_run_by(path, specs) - _validated_roles(path)
    assert not missing, "%s runs %s but its first task does not validate their variables" % (name, sorted(missing))


def test_a_wrong_type_is_named():
    spec = argument_spec(["record", "minimal_startup", "feature_layer"])
    errors = ArgumentSpecValidator(spec).validate({"repro_vllm_port": "80a", "repro_vllm_case_id": "ok"}).error_messages
    assert len(errors) == 1 and "repro_vllm_port" in errors[0], errors
    # nothing given: nothing required at the playbook level, no default to mistype
    assert ArgumentSpecValidator(argument_spec(sorted(load_role_specs()))).validate({}).error_messages == []


def test_ladder_until_none_is_what_people_type_for_minimal_only():
    # issue 32 item 6: "none" was refused by the gate although the docs call the default "none"
    spec = argument_spec(sorted(load_role_specs()))
    for value in ("", "none", "prefix_caching"):
        assert ArgumentSpecValidator(spec).validate({"repro_vllm_ladder_until": value}).error_messages == [], value
    errors = ArgumentSpecValidator(spec).validate({"repro_vllm_ladder_until": "long_ctx"}).error_messages
    assert len(errors) == 1 and "repro_vllm_ladder_until" in errors[0]


def _doc(**entry_points):
    return {"argument_specs": {ep: {"options": opts} for ep, opts in entry_points.items()}}


def test_merge_keeps_shape_and_drops_what_a_playbook_sets():
    specs = {"a": _doc(main={"x": {"type": "int", "required": True, "default": 3, "description": "x"},
                             "d": {"type": "dict", "options": {"k": {"type": "str", "required": True, "default": "w"}}}}),
             "b": _doc(other={"x": {"type": "int", "description": "again"}, "s": {"type": "str", "no_log": True,
                                                                                  "choices": ["p", "q"]}})}
    assert merge_role_specs(specs, ["a", "b"]) == {
        "x": {"type": "int"}, "d": {"type": "dict", "options": {"k": {"type": "str", "required": True}}},
        "s": {"type": "str", "no_log": True, "choices": ["p", "q"]}}


@pytest.mark.parametrize("other,words", [
    ({"x": {"type": "float"}}, "type: float"),
    ({"x": {"type": "int", "choices": [1, 2]}}, "choices: [1, 2]"),
    ({"x": {"type": "list", "elements": "str"}}, "elements: str"),
])
def test_two_shapes_of_one_variable_fail(other, words):
    specs = {"a": _doc(main={"x": {"type": "int"}}), "b": _doc(main=other)}
    with pytest.raises(ArgSpecError, match="variable x is defined differently in roles/b/meta/argument_specs.yml") as exc:
        merge_role_specs(specs, ["a", "b"])
    assert words in str(exc.value) and "a (main) (type: int)" in str(exc.value)


@pytest.mark.parametrize("roles,words", [
    (["nope"], "role 'nope' has no meta/argument_specs.yml"),
    ([], "non-empty list"),
    ("record", "non-empty list"),
    (["broken"], "no argument_specs mapping"),
])
def test_bad_input_is_named(roles, words):
    with pytest.raises(ArgSpecError, match=re.escape(words)):
        merge_role_specs({"broken": {"something": 1}}, roles)


def test_the_records_root_has_one_default_and_is_resolved_in_python():
    """One records root per play: a role default built from $PWD (or any lookup) would differ from the run's open
    under ansible-runner, so the later runs of a play could land in another root than its first. No role defaults it
    (``records`` is run_record's and the filters' one default, resolved by _record.resolve_root); every task that
    reads it hands it to what resolves it - run_record's ``root``, job_result's ``records_root``, a filter's
    ``records_root=`` - or resolves it with repro.vllm._records_root."""
    defaults = {}
    for role in sorted(os.listdir(ROLES)):
        path = os.path.join(ROLES, role, "defaults", "main.yml")
        if os.path.isfile(path):
            with open(path) as f:
                data = yaml.safe_load(f) or {}
            if "repro_vllm_records_root" in data:
                defaults[role] = data["repro_vllm_records_root"]
    assert defaults == {}
    handed = re.compile(r"(root: \"\{\{ repro_vllm_records_root \| default\(omit\) \}\}\""
                        r"|records_root=repro_vllm_records_root \| default\(none\))")
    unresolved = []
    for base, _dirs, files in os.walk(ROLES):
        if os.path.basename(base) != "tasks":
            continue
        for name in files:
            if not name.endswith(".yml"):
                continue
            with open(os.path.join(base, name)) as f:
                text = handed.sub("", f.read())
            for span in re.finditer(r"\{\{.*?\}\}", text, re.S):
                for m in re.finditer(r"repro_vllm_records_root\b(\s*\|\s*default\(none\)\s*\|\s*repro\.vllm\._records_root)?",
                                     span.group(0)):
                    if not m.group(1):
                        unresolved.append("%s: %s" % (os.path.join(base, name), span.group(0)[:120]))
    assert unresolved == [], unresolved


def _role_defaults():
    """{role: parsed defaults/main.yml} of every role that has one."""
    out = {}
    for role in sorted(os.listdir(ROLES)):
        path = os.path.join(ROLES, role, "defaults", "main.yml")
        if os.path.isfile(path):
            with open(path) as f:
                out[role] = yaml.safe_load(f) or {}
    return out


def test_one_default_per_variable():
    """Issue 34: a variable has one default in every role - every entry point of every argument spec declares the
    same one (no ``default`` is None: "unset"), every role's defaults/main.yml that sets it agrees, and a role's
    defaults/main.yml agrees with its own spec where the spec gives one."""
    specs, defaults = load_role_specs(), _role_defaults()
    declared = {}
    for role, doc in specs.items():
        for entry, spec in doc["argument_specs"].items():
            for name, option in (spec.get("options") or {}).items():
                declared.setdefault(name, {})["%s:%s" % (role, entry)] = option.get("default")
                if "default" in option and name in defaults.get(role, {}):
                    assert defaults[role][name] == option["default"], (
                        "%s: defaults/main.yml has %s: %r, its argument spec (%s) %r"
                        % (role, name, defaults[role][name], entry, option["default"]))
    set_in = {}
    for role, values in defaults.items():
        for name, value in values.items():
            set_in.setdefault(name, {})[role] = value
    two = {name: where for name, where in sorted(declared.items()) if len({repr(v) for v in where.values()}) > 1}
    two.update({"%s (defaults/main.yml)" % name: where for name, where in sorted(set_in.items())
                if len({repr(v) for v in where.values()}) > 1})
    assert not two, "variables with more than one default: %s" % two
    # the test reads the real files: the variables issue 34 named are among them, with the defaults chosen
    assert {declared["repro_vllm_task_timeout"][k] for k in declared["repro_vllm_task_timeout"]} == {600}
    assert set(declared["repro_vllm_profile"].values()) == {None} and "repro_vllm_profile" not in set_in
    assert set(declared["repro_vllm_records_sink"].values()) == {""}
