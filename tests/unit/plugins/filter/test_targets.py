# -*- coding: utf-8 -*-
"""repro_vllm_targets as host-pattern terms (_targets.split_targets, the target_patterns filter) and the named
hosts that match nothing (_targets.not_matched), checked against Ansible's own reading of the same patterns."""
from __future__ import annotations

import pytest

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader

from ansible_collections.repro.vllm.plugins.filter.targets import target_patterns
from ansible_collections.repro.vllm.plugins.plugin_utils.play import _targets

GROUPS = {"all": ["ok1", "ok2", "old", "node03", "fe80::1"], "ungrouped": ["fe80::1"],
          "fleet": ["ok1", "ok2", "old", "node03"], "rack1": ["ok1", "old"], "empty": []}


@pytest.mark.parametrize("value, terms", [
    ("vllm_nodes", ["vllm_nodes"]),                                   # one pattern
    ("ok1,ok2,old", ["ok1", "ok2", "old"]),                           # a comma list (an AWX survey's text)
    ("ok1, ok2 , old ", ["ok1", "ok2", "old"]),                       # with spaces
    ("ok1:ok2:old", ["ok1", "ok2", "old"]),                           # a colon list
    (["ok1", "ok2", "old"], ["ok1", "ok2", "old"]),                   # a YAML list
    (["ok1,ok2", "old:node03"], ["ok1", "ok2", "old", "node03"]),     # mixed
    ("ok1,ok2,old:localhost", ["ok1", "ok2", "old", "localhost"]),    # the case Ansible read as 3 terms
    ("fleet:!old", ["fleet", "!old"]),                                # exclusion
    ("fleet:&rack1", ["fleet", "&rack1"]),                            # intersection
    ("!old", ["all", "!old"]),                                        # only an exclusion: all hosts less it
    ("&rack1,!old", ["all", "&rack1", "!old"]),
    ("ok*,node0?", ["ok*", "node0?"]),                                # wildcards
    ("~ok[12]", ["~ok[12]"]),                                         # regex
    ("~node(?:03|04),ok1", ["~node(?:03|04)", "ok1"]),                # a regex keeps its colons
    ("fleet[0:1]:old", ["fleet[0:1]", "old"]),                        # a range subscript keeps its colon
    ("fe80::1", ["fe80::1"]),                                         # an IPv6 address stays whole
    ("ok1,ok1:ok2", ["ok1", "ok2"]),                                  # each term once
    (None, ["all"]),
    ("", []),
    ([], []),
])
def test_split_targets(value, terms):
    assert _targets.split_targets(value) == terms


def test_the_filter_puts_the_controller_last():
    assert target_patterns("ok1,ok2,old", controller=True) == ["ok1", "ok2", "old", "localhost"]
    assert target_patterns(["!old"], controller=True) == ["all", "!old", "localhost"]
    assert target_patterns("localhost", controller=True) == ["localhost"]
    # a later play after the method stopped (record only): no host at all, the controller neither
    assert target_patterns("ok1,ok2", controller=True, stopped="boundary") == ["all", "!all"]
    assert target_patterns("ok1,ok2", stopped="") == ["ok1", "ok2"]
    assert target_patterns("ok1:ok2") == ["ok1", "ok2"]


def _ansible_hosts(terms):
    """What Ansible's own inventory makes of the list the playbooks hand a play's hosts."""
    inv = InventoryManager(DataLoader(), parse=False)
    for group, hosts in GROUPS.items():
        inv.add_group(group)
        for host in hosts:
            inv.add_host(host, group=group)
    return sorted(h.name for h in inv.get_hosts(pattern=terms))


@pytest.mark.parametrize("value, hosts", [
    ("ok1,ok2,old", ["localhost", "ok1", "ok2", "old"]),
    ("ok1,ok2,old:localhost", ["localhost", "ok1", "ok2", "old"]),
    (["ok1", "old:node03"], ["localhost", "node03", "ok1", "old"]),
    ("fleet:!old", ["localhost", "node03", "ok1", "ok2"]),
    ("!old", ["fe80::1", "localhost", "node03", "ok1", "ok2"]),
    ("~ok[12],old", ["localhost", "ok1", "ok2", "old"]),
])
def test_every_named_host_is_in_the_play_as_ansible_reads_it(value, hosts):
    assert _ansible_hosts(target_patterns(value, controller=True)) == hosts


@pytest.mark.parametrize("term, kind", [
    ("ok1", "name"), ("fleet", "name"), ("!old", "exclude"), ("&rack1", "intersect"), ("~ok.*", "regex"),
    ("ok*", "wildcard"), ("node0?", "wildcard"), ("fleet[0]", "subscript"), ("fleet[0:1]", "subscript"),
])
def test_term_kind(term, kind):
    assert _targets.term_kind(term) == kind


def test_not_matched_names_only_named_hosts_that_match_nothing():
    play = ["ok1", "ok2", "localhost"]
    assert _targets.not_matched("ok1,ok2,old-r570", GROUPS, play) == [{"name": "old-r570", "reason": "not_in_inventory"}]
    # groups (an empty one too), wildcards, regexes, exclusions, intersections and subscripts name no host
    assert _targets.not_matched("fleet,empty,ok*,~nothing.*,!gone,&rack9,fleet[7],all", GROUPS, play) == []
    # the implicit localhost and its other names are always there
    assert _targets.not_matched("localhost,127.0.0.1", GROUPS, play) == []
    # several misses, in order, each once
    assert [m["name"] for m in _targets.not_matched(["x1", "ok1:x2", "x1"], GROUPS, play)] == ["x1", "x2"]


def test_not_matched_under_a_limit():
    play = ["ok1", "ok2", "localhost"]
    # --limit leaves node03 out of the play: named, it is a miss (outside_limit)
    assert _targets.not_matched("ok1,ok2,node03", GROUPS, play, limit="ok1,ok2,localhost") == [
        {"name": "node03", "reason": "outside_limit"}]
    # without a limit a host missing from the play was left out by the pattern itself
    assert _targets.not_matched("ok1,ok2,node03:!node03", GROUPS, play) == []
    # the pattern's own exclusion or intersection leaves it out, under a limit too: not a miss
    assert _targets.not_matched("ok1,ok2,node03,!node03", GROUPS, play, limit="ok*") == []
    assert _targets.not_matched("ok1,node03,&rack1", GROUPS, ["ok1", "localhost"], limit="ok1") == []
    assert _targets.not_matched("ok1,node03,!node0*", GROUPS, play, limit="ok*") == []
    assert _targets.not_matched("ok1,node03,!~node.*", GROUPS, play, limit="ok*") == []
    # in the play: fine whatever the limit
    assert _targets.not_matched("ok1,ok2", GROUPS, play, limit="ok1,ok2") == []


def test_not_matched_message_names_each_host_the_targets_and_the_limit():
    missed = [{"name": "old", "reason": "not_in_inventory"}, {"name": "node03", "reason": "outside_limit"}]
    msg = _targets.not_matched_message(missed, "ok1,ok2,old:node03", limit="ok1,ok2")
    assert msg.startswith("repro_vllm_targets names 2 host(s) that match nothing: old (not a host or group of the "
                          "inventory), node03 (in the inventory, left out by --limit ok1,ok2)")
    assert "targets read as 'ok1,ok2,old,node03' within --limit ok1,ok2; no run was opened" in msg
    assert msg.endswith("or widen --limit")
    assert "--limit" not in _targets.not_matched_message(missed[:1], "ok1,old")
