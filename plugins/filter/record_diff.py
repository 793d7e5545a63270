# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What differs between two runs (the one-variable check of the ladder), and the identity of a run it compares.

An identity is ``{"hosts": {host: {driver, cuda_driver, kernel_module, image, image_digest, gpu_map,
visible_devices, env, command}}, "request": {route, concurrency, timeout, body}}``; ``record_identity`` builds the
host part from the facts the roles have, ``record_diff`` compares two identities item by item.
"""

from __future__ import annotations

import fnmatch

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.module_utils._command import CommandError, option_map
from ansible_collections.repro.vllm.plugins.module_utils._container import image_digest
from ansible_collections.repro.vllm.plugins.module_utils._redact import redact_data, redact_text

# the variables compared, in the order a report lists them
VARIABLES = ("hosts", "driver", "image_digest", "gpu_map", "env", "command", "request")


def record_identity(gpu_facts, command, env=None, image=None, container=None):
    """The part of a run's identity that belongs to one host.

    ``gpu_facts`` is the ``repro_vllm_gpu`` fact of ``repro.vllm.gpu_facts`` (or an empty dict), ``command`` the
    server argv, ``env`` the server environment the run sets (without inherited variables and without one-run
    debug variables), ``image`` the image reference and ``container`` the ``repro_vllm_container`` fact.
    """
    gpu = gpu_facts or {}
    if not isinstance(gpu, dict):
        raise AnsibleFilterError("record_identity: gpu_facts must be the repro_vllm_gpu fact (a dict), got %s"
                                 % type(gpu).__name__)
    driver = gpu.get("driver") or {}
    gpus = []
    for g in gpu.get("gpus") or []:
        gpus.append({"index": g.get("index"), "uuid": g.get("uuid"), "name": g.get("name"),
                     "pci_bus_id": g.get("pci_bus_id")})
    visible = (gpu.get("visible_devices") or {}).get("cuda_visible_devices")
    env = dict(env or {})
    if "CUDA_VISIBLE_DEVICES" in env:
        visible = env["CUDA_VISIBLE_DEVICES"]
    return {
        "gpu_present": bool(gpu.get("present")),
        "driver": driver.get("reported_version") or driver.get("userspace_version"),
        "kernel_module": driver.get("kernel_module_version"),
        "cuda_driver": driver.get("cuda_driver_version"),
        "image": image or None,
        "image_digest": image_digest(container, image),
        "gpu_map": gpus,
        "visible_devices": visible,
        "env": redact_data({str(k): str(v) for k, v in env.items()}),
        "command": redact_data([str(a) for a in command or []]),
    }


def _change(variable, key, before, after, host=None):
    return {"variable": variable, "key": key, "host": host, "before": before, "after": after}


def _dict_changes(variable, before, after, host):
    out = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        if b != a:
            out.append(_change(variable, key, b, a, host))
    return out


def _command_changes(before, after, host):
    try:
        bm, am = option_map(before or []), option_map(after or [])
    except CommandError:
        # not a command the collection can read option by option: compare it whole
        return [] if before == after else [_change("command", "<argv>", before, after, host)]
    return _dict_changes("command", bm, am, host)


def _host_changes(host, before, after):
    out = []
    for key in ("driver", "kernel_module", "cuda_driver"):
        if before.get(key) != after.get(key):
            out.append(_change("driver", key, before.get(key), after.get(key), host))
    if before.get("image_digest") != after.get("image_digest") or before.get("image") != after.get("image"):
        out.append(_change("image_digest", "image", "%s (%s)" % (before.get("image"), before.get("image_digest")),
                           "%s (%s)" % (after.get("image"), after.get("image_digest")), host))
    if before.get("gpu_map") != after.get("gpu_map"):
        out.append(_change("gpu_map", "gpus", before.get("gpu_map"), after.get("gpu_map"), host))
    if before.get("visible_devices") != after.get("visible_devices"):
        out.append(_change("gpu_map", "visible_devices", before.get("visible_devices"), after.get("visible_devices"),
                           host))
    out.extend(_dict_changes("env", before.get("env") or {}, after.get("env") or {}, host))
    out.extend(_command_changes(before.get("command"), after.get("command"), host))
    return out


def _request_changes(before, after):
    out = []
    for key in ("route", "concurrency", "timeout", "base_url"):
        if (before or {}).get(key) != (after or {}).get(key):
            out.append(_change("request", key, (before or {}).get(key), (after or {}).get(key)))
    bb = (before or {}).get("body")
    ab = (after or {}).get("body")
    if isinstance(bb, dict) and isinstance(ab, dict):
        out.extend(_dict_changes("request", bb, ab, None))
    elif bb != ab:
        out.append(_change("request", "body", bb, ab))
    return out


def _key_of(change):
    return "%s:%s" % (change["variable"], change["key"])


def record_diff(current, previous, allowed=None, previous_run=None):
    """Compare two run identities.

    ``allowed`` lists what the step may change, as ``variable:key`` shell patterns (``command:--enable-prefix-caching``,
    ``request:max_tokens``, ``env:NCCL_*``). Every change not matched is ``unexpected``; ``one_variable`` is true
    when there is none. With no ``previous`` (the first run of a case) there is nothing to compare:
    ``baseline`` is true and the list of changes is empty.
    """
    if current is None or not isinstance(current, dict):
        raise AnsibleFilterError("record_diff: the input must be a run identity (a dict with hosts and request)")
    allowed = [str(a) for a in (allowed or [])]
    result = {"previous_run": previous_run, "baseline": previous is None, "allowed": allowed, "changes": [],
              "variables": [], "count": 0, "unexpected": [], "unexpected_variables": [], "one_variable": True,
              "summary": ""}
    if previous is None:
        result["summary"] = "first run of the case: nothing to compare"
        return result
    if not isinstance(previous, dict):
        raise AnsibleFilterError("record_diff: previous must be a run identity (a dict) or null")
    changes = []
    ch, ph = current.get("hosts") or {}, previous.get("hosts") or {}
    if sorted(ch) != sorted(ph):
        changes.append(_change("hosts", "inventory", sorted(ph), sorted(ch)))
    for host in sorted(set(ch) & set(ph)):
        changes.extend(_host_changes(host, ph[host] or {}, ch[host] or {}))
    changes.extend(_request_changes(previous.get("request"), current.get("request")))
    unexpected = [c for c in changes if not any(fnmatch.fnmatchcase(_key_of(c), pat) for pat in allowed)]
    variables = [v for v in VARIABLES if any(c["variable"] == v for c in changes)]
    result.update(changes=changes, count=len(changes), variables=variables, unexpected=unexpected,
                  unexpected_variables=[v for v in VARIABLES if any(c["variable"] == v for c in unexpected)],
                  one_variable=not unexpected)
    if not changes:
        result["summary"] = "no change against %s" % (previous_run or "the previous run")
    else:
        keys = ", ".join(sorted({_key_of(c) for c in changes}))
        result["summary"] = "%d change(s) against %s: %s" % (len(changes), previous_run or "the previous run", keys)
        if unexpected:
            result["summary"] += "; NOT part of the step: %s" % ", ".join(sorted({_key_of(c) for c in unexpected}))
    return result


def record_scrub(data):
    """Mask secret shapes in every string of a JSON-like value, keys left as they are.

    For what goes into a record but is not an environment: request bodies, answers, log lines. The key-name rules of
    ``repro.vllm.redact`` would mask counts such as ``max_tokens`` or ``usage.prompt_tokens`` there.
    """
    if isinstance(data, dict):
        return {k: record_scrub(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [record_scrub(v) for v in data]
    if isinstance(data, str):
        return redact_text(data)
    return data


class FilterModule:
    """repro.vllm run comparison."""

    def filters(self):
        return {"record_diff": record_diff, "record_identity": record_identity, "record_scrub": record_scrub}
