# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import os

import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.plugin_utils.play._argspec import ArgSpecError, merge_role_specs

# plugins/filter/ -> the collection root (a checkout or an installed copy alike)
ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


# libyaml's loader where PyYAML has it: the specs are read at the start of every playbook, before anything else
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_role_specs(roles_dir=ROLES, only=None):
    """{role: parsed meta/argument_specs.yml} of every role of the collection (of the roles in ``only`` when given:
    a playbook's check reads only the specs of the roles it runs)."""
    specs = {}
    for role in sorted(os.listdir(roles_dir)):
        if only is not None and role not in only:
            continue
        path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                specs[role] = yaml.load(f, Loader=_LOADER)  # nosec B506 - a safe loader (CSafeLoader or SafeLoader)
    return specs


def argument_spec(roles):
    roles = list(roles) if isinstance(roles, (list, tuple)) else roles
    try:
        only = set(roles) if isinstance(roles, list) and all(isinstance(r, str) for r in roles) else None
        return merge_role_specs(load_role_specs(only=only), roles)
    except (ArgSpecError, OSError, yaml.YAMLError) as exc:
        raise AnsibleFilterError("repro.vllm._argument_spec: %s" % exc) from exc


class FilterModule:
    def filters(self):
        return {"_argument_spec": argument_spec}
