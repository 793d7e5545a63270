"""``repro_vllm_targets``: what the user wrote, as the host-pattern terms every playbook's ``hosts:`` takes, and
which host it names that matches nothing (controller side, standard library only).

The value may be one Ansible pattern (``vllm_nodes``, ``vllm_nodes:!node03``), a comma list (``ok1,ok2,old``, as
people type it and as an AWX survey hands it on), a colon list (``ok1:ok2``), a YAML list, or any mix of these.
Ansible itself splits a string on its commas only when it has one, so ``ok1,ok2,old:localhost`` was three terms, the
last one (``old:localhost``) matching nothing; :func:`split_targets` gives each term on its own, and the playbooks
hand Ansible that list (plus ``localhost``), so every named host is in the play.

A *named* term (no ``!``/``&``/``~`` prefix, no ``*``/``?`` wildcard, no ``[...]`` subscript) that is neither a group
nor a host of the inventory, or a host that ``--limit`` leaves out, is a target that matches nothing:
:func:`not_matched` finds them, :func:`not_matched_message` says so, and the run's open (``repro.vllm.run_record``
``state=create``) fails with it before any run is created.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.
from __future__ import annotations

import fnmatch
import re

# the names Ansible gives an implicit localhost (ansible.constants.LOCALHOST)
LOCALHOST = ("localhost", "127.0.0.1", "::1")

# one term of a colon list, as Ansible reads one: anything but whitespace, ':' and brackets, or a whole [..] part
_COLON_TERM = re.compile(r"(?:[^\s:\[\]]|\[[^\]]*\])+")
_IPV6 = re.compile(r"^[!&]?\[?[0-9A-Fa-f]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*\]?$")


def _colon_split(piece):
    """One comma-free piece as its terms: an IPv6 address and a regex (``~``, which may hold ``:``) stay whole; any
    other piece is a colon list (a ``[1:3]`` range stays in its term)."""
    piece = piece.strip()
    if not piece:
        return []
    if _IPV6.match(piece) or piece.lstrip("!&").startswith("~"):
        return [piece]
    return _COLON_TERM.findall(piece)


def split_targets(value):
    """The host-pattern terms of ``repro_vllm_targets``, in order, each once.

    ``None`` is ``['all']`` (the playbooks' default); an empty string or list is ``[]`` (nothing targeted). A string
    is split on its commas, and each piece on its colons (except an IPv6 address and a ``~regex``); a list's items
    are split the same way. Surrounding whitespace goes. A value with only ``!``/``&`` terms keeps Ansible's meaning
    (all hosts, then those terms): ``all`` is put first, so adding ``localhost`` after it changes nothing."""
    if value is None:
        return ["all"]
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    terms = []
    for item in items:
        if item is None:
            continue
        if isinstance(item, (list, tuple)):
            found = split_targets(item)
        else:
            found = [t for piece in str(item).split(",") for t in _colon_split(piece)]
        for term in found:
            if term not in terms:
                terms.append(term)
    if terms and not any(term_kind(t) not in ("exclude", "intersect") for t in terms):
        terms.insert(0, "all")
    return terms


# the terms of a play that must not run: every host, then every host taken away (no host matched, the play is skipped)
NO_HOSTS = ["all", "!all"]


def target_patterns(value, controller=False, stopped=None):
    """The list a play's ``hosts:`` takes: :func:`split_targets`, then ``localhost`` when ``controller`` (the plays
    whose tasks run once on the controller), after the targets so that a ``!`` term never removes it. ``stopped``
    (where an earlier play stopped the method and the job only records: ``boundary``) gives :data:`NO_HOSTS`, so a
    later play of the playbook runs on no host."""
    if stopped:
        return list(NO_HOSTS)
    terms = split_targets(value)
    if controller and "localhost" not in terms:
        terms.append("localhost")
    return terms


def term_kind(term):
    """What a term is: ``exclude`` (``!x``), ``intersect`` (``&x``), ``regex`` (``~x``), ``wildcard`` (``*`` or
    ``?``), ``subscript`` (``x[0]``, ``x[1:3]``, ``x[ab]``) or ``name`` (a host or group name)."""
    if term.startswith("!"):
        return "exclude"
    if term.startswith("&"):
        return "intersect"
    if term.startswith("~"):
        return "regex"
    if "*" in term or "?" in term:
        return "wildcard"
    if "[" in term:
        return "subscript"
    return "name"


def _members(term, groups):
    """The inventory hosts one positive term (no prefix) stands for, as Ansible matches it: a group's hosts, a host,
    or the hosts and groups' hosts a wildcard or regex matches. Subscripts are left to Ansible (None: unknown)."""
    kind = term_kind(term)
    hosts = list(groups.get("all") or [])
    if kind == "subscript":
        return None
    if kind == "name":
        if term in groups:
            return set(groups[term] or [])
        return {term} if term in hosts or term in LOCALHOST else set()
    try:
        rx = re.compile(term[1:]) if kind == "regex" else re.compile(fnmatch.translate(term))
    except re.error:
        return None
    out = {h for h in hosts if rx.match(h)}
    for name, members in groups.items():
        if rx.match(name):
            out.update(members or [])
    return out


def _left_out_by_pattern(host, terms, groups):
    """True when the pattern's own ``!`` or ``&`` terms leave ``host`` out (the user's choice, not a miss)."""
    for term in terms:
        kind = term_kind(term)
        if kind not in ("exclude", "intersect"):
            continue
        members = _members(term[1:], groups)
        if members is None:
            continue
        if kind == "exclude" and host in members:
            return True
        if kind == "intersect" and host not in members:
            return True
    return False


def not_matched(value, groups, play_hosts=None, limit=None):
    """The named hosts of ``value`` (repro_vllm_targets) that match nothing, in order: ``[{name, reason}]``.

    ``groups`` is Ansible's ``groups`` (every group's hosts, ``all`` included, before ``--limit``); ``play_hosts`` the
    hosts the play really has (``ansible_play_hosts_all``) and ``limit`` the ``--limit`` (``ansible_limit``). A
    named term that is a group is never a miss (an empty group is the "no host at all" check's business). A name
    that is neither a group nor an inventory host is ``not_in_inventory``; a host of the inventory that ``--limit``
    leaves out of the play (and the pattern's own ``!``/``&`` terms do not) is ``outside_limit``. Exclusions,
    intersections, wildcards, regexes and subscripts name no host and are never reported."""
    groups = groups or {}
    terms = split_targets(value)
    hosts = set(groups.get("all") or [])
    for members in groups.values():
        hosts.update(members or [])
    out = []
    for term in terms:
        if term_kind(term) != "name" or term in groups or term == "all":
            continue
        if term not in hosts and term not in LOCALHOST:
            out.append({"name": term, "reason": "not_in_inventory"})
        elif (play_hosts is not None and limit and term not in play_hosts
              and not _left_out_by_pattern(term, terms, groups)):
            out.append({"name": term, "reason": "outside_limit"})
    return out


def missed_names(missed, limit=None):
    """``old (not a host or group of the inventory), node03 (in the inventory, left out by --limit x)``."""
    parts = []
    for m in missed:
        if m["reason"] == "outside_limit":
            parts.append("%s (in the inventory, left out by --limit %s)" % (m["name"], limit))
        else:
            parts.append("%s (not a host or group of the inventory)" % m["name"])
    return ", ".join(parts)


def not_matched_message(missed, value, limit=None):
    """Why the job stops before any run opens: every named target that matches nothing, the pattern, the limit."""
    pattern = ",".join(split_targets(value))
    return ("repro_vllm_targets names %d host(s) that match nothing: %s; targets read as '%s'%s; no run was opened. "
            "Fix the name in repro_vllm_targets (list the inventory with 'ansible-inventory -i <inventory> --graph')%s"
            % (len(missed), missed_names(missed, limit), pattern, (" within --limit %s" % limit) if limit else "",
               " or widen --limit" if any(m["reason"] == "outside_limit" for m in missed) else ""))
