# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import os

import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils._argspec import ArgSpecError, merge_role_specs

# plugins/filter/ -> the collection root (a checkout or an installed copy alike)
ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


def load_role_specs(roles_dir=ROLES):
    """{role: parsed meta/argument_specs.yml} of every role of the collection."""
    specs = {}
    for role in sorted(os.listdir(roles_dir)):
        path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
        if os.path.isfile(path):
            with open(path) as f:
                specs[role] = yaml.safe_load(f)
    return specs


def argument_spec(roles):
    try:
        return merge_role_specs(load_role_specs(), list(roles) if isinstance(roles, (list, tuple)) else roles)
    except (ArgSpecError, OSError, yaml.YAMLError) as exc:
        raise AnsibleFilterError("repro.vllm._argument_spec: %s" % exc) from exc


class FilterModule:
    def filters(self):
        return {"_argument_spec": argument_spec}
