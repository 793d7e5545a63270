"""One argument spec for a whole playbook, made from the roles' own ``meta/argument_specs.yml``.

A playbook's first task validates every variable the job was given (extra variables, survey answers, what a
workflow hands on) with ``ansible.builtin.validate_argument_spec`` before any run is opened or host contacted.
The spec is not written a second time: it is the union of the options of every entry point of the roles the
playbook uses.  Within that union a variable has one type; two roles that disagree are an error here (the unit
tests run this over the real roles), not a silent pick.

What is left out, because at the playbook level it is not the user's to give or would be wrong:

* ``required`` of a top-level option: a playbook sets such variables itself (``vars:`` of an include);
* ``default`` at every level: the roles' defaults files hold the values; several specs document a default in
  words ("records/ under the current directory"), which is no value of the option's type;
* descriptions.

Suboptions keep ``required`` (a dict that is given must be complete) and ``choices``/``elements``/``no_log``.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

# What decides whether two definitions of one variable agree.
_SHAPE_KEYS = ("type", "elements", "choices")
# What is kept of a definition.
_KEEP = ("type", "elements", "choices", "no_log", "options", "aliases")


class ArgSpecError(ValueError):
    """The roles' specs cannot be merged; ``str()`` names the variable, the roles and the fix."""


def _shape(option):
    return tuple((key, repr(option.get(key))) for key in _SHAPE_KEYS)


def _show(option):
    return ", ".join("%s: %s" % (key, option[key]) for key in _SHAPE_KEYS if key in option) or "no type"


def _strip(option, top):
    out = {key: option[key] for key in _KEEP if key in option}
    if not top and option.get("required"):
        out["required"] = True
    if "options" in out:
        out["options"] = {name: _strip(sub or {}, False) for name, sub in (out["options"] or {}).items()}
    out.setdefault("type", "raw" if "options" not in out else "dict")
    return out


def merge_role_specs(role_specs, roles):
    """``role_specs``: {role: parsed ``meta/argument_specs.yml``}; ``roles``: the roles a playbook uses.

    Return {variable: definition} for ``ansible.builtin.validate_argument_spec``.  Raise ArgSpecError for an
    unknown role, a spec without ``argument_specs`` or two definitions of one variable of different shapes."""
    if not isinstance(roles, (list, tuple)) or not roles or not all(isinstance(r, str) for r in roles):
        raise ArgSpecError("roles must be a non-empty list of role names of this collection, got %r" % (roles,))
    merged = {}
    where = {}
    for role in roles:
        if role not in role_specs:
            raise ArgSpecError("role %r has no meta/argument_specs.yml in this collection (known: %s)"
                               % (role, ", ".join(sorted(role_specs)) or "none"))
        doc = role_specs[role]
        entry_points = (doc or {}).get("argument_specs") if isinstance(doc, dict) else None
        if not isinstance(entry_points, dict):
            raise ArgSpecError("roles/%s/meta/argument_specs.yml has no argument_specs mapping" % role)
        for entry, spec in sorted(entry_points.items()):
            for name, option in sorted(((spec or {}).get("options") or {}).items()):
                option = option or {}
                origin = "%s (%s)" % (role, entry)
                if name in merged:
                    if _shape(option) != where[name][1]:
                        raise ArgSpecError(
                            "variable %s is defined differently in roles/%s/meta/argument_specs.yml, entry point %s "
                            "(%s) and in %s (%s); give it one type, elements and choices in every role"
                            % (name, role, entry, _show(option), where[name][0], where[name][2]))
                    continue
                merged[name] = _strip(option, True)
                where[name] = (origin, _shape(option), _show(option))
    return merged
