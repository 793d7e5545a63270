"""What differs between two runs.

Two uses, one comparison per kind of fact:

* the ladder's one-variable check (``record_identity`` / ``record_diff``): the identity of the run about to be made
  against the last good run, with the changes the step may make;
* the run diff of ``playbooks/diff.yml`` (``run_diff``): any two frozen runs, also of two cases (an isolated
  reproduction against production), per host - driver, kernel module, CUDA driver, image and its digest, vLLM /
  torch / CUDA inside the image, GPU map, visible devices, foreign GPU processes, each command flag, each
  environment key (redacted), the request body - with more than one changed variable flagged as causal ambiguity.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import fnmatch
import json

from ansible_collections.repro.vllm.plugins.module_utils.ladder._command import CommandError, option_map
from ansible_collections.repro.vllm.plugins.module_utils.container._container import image_digest
from ansible_collections.repro.vllm.plugins.module_utils.record._evidence import host_view, run_hosts
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import redact_data, redact_env, redact_text

# the variables of the one-variable check, in the order a report lists them
VARIABLES = ("hosts", "driver", "image_digest", "gpu_map", "env", "command", "request")

# the run diff's facts compared one to one, in report order (command, env and request are per key)
RUN_FACTS = (
    ("driver", "driver"), ("kernel_module", "driver"), ("cuda_driver", "driver"),
    ("image", "image"), ("image_digest", "image"), ("image_vllm", "image"), ("image_torch", "image"),
    ("image_cuda", "image"), ("gpu_map", "gpus"), ("visible_devices", "gpus"),
)
# facts only a restricted comparison (``facts=``) asks for: two hosts of one kind have other GPU UUIDs and bus ids,
# so a replay on another host compares the model and the count, not the map
EXTRA_FACTS = (("gpu_model", "gpus"), ("gpu_count", "gpus"))

# facts that move together with one cause: a driver install changes version, kernel module and CUDA driver version
# at once, a rebuilt image its digest and the versions inside. For causal ambiguity they count as one variable.
CAUSE_OF = {"kernel_module": "driver", "cuda_driver": "driver", "image_digest": "image", "image_vllm": "image",
            "image_torch": "image", "image_cuda": "image"}


class DiffError(ValueError):
    """Input that is not a run identity or a run."""


# ---------------------------------------------------------------------------------------- one-variable check
def record_identity(gpu_facts, command, env=None, image=None, container=None):
    """The part of a run's identity that belongs to one host.

    ``gpu_facts`` is the ``repro_vllm_gpu`` fact of ``repro.vllm.gpu_facts`` (or an empty dict), ``command`` the
    server argv, ``env`` the server environment the run sets (without inherited variables and without one-run
    debug variables), ``image`` the image reference and ``container`` the ``repro_vllm_container`` fact.
    """
    gpu = gpu_facts or {}
    if not isinstance(gpu, dict):
        raise DiffError("record_identity: gpu_facts must be the repro_vllm_gpu fact (a dict), got %s"
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


def command_changes(before, after):
    """``[(flag, before, after)]`` of two argv, option by option in any order (the whole argv when unreadable)."""
    try:
        bm, am = option_map(before or []), option_map(after or [])
    except CommandError:
        return [] if before == after else [("<argv>", before, after)]
    return [(k, bm.get(k), am.get(k)) for k in sorted(set(bm) | set(am)) if bm.get(k) != am.get(k)]


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
    for key, b, a in command_changes(before.get("command"), after.get("command")):
        out.append(_change("command", key, b, a, host))
    return out


def request_changes(before, after):
    """``[(key, before, after)]`` of two fixed requests: route, concurrency, timeout, base URL, the further requests
    of the run (``extra``), each body field."""
    before, after = before or {}, after or {}
    out = []
    for key in ("route", "concurrency", "timeout", "base_url", "extra"):
        if before.get(key) != after.get(key):
            out.append((key, before.get(key), after.get(key)))
    bb, ab = before.get("body"), after.get("body")
    if isinstance(bb, dict) and isinstance(ab, dict):
        out.extend((k, bb.get(k), ab.get(k)) for k in sorted(set(bb) | set(ab)) if bb.get(k) != ab.get(k))
    elif bb != ab:
        out.append(("body", bb, ab))
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
        raise DiffError("record_diff: the input must be a run identity (a dict with hosts and request)")
    allowed = [str(a) for a in (allowed or [])]
    result = {"previous_run": previous_run, "baseline": previous is None, "allowed": allowed, "changes": [],
              "variables": [], "count": 0, "unexpected": [], "unexpected_variables": [], "one_variable": True,
              "summary": ""}
    if previous is None:
        result["summary"] = "first run of the case: nothing to compare"
        return result
    if not isinstance(previous, dict):
        raise DiffError("record_diff: previous must be a run identity (a dict) or null")
    changes = []
    ch, ph = current.get("hosts") or {}, previous.get("hosts") or {}
    if sorted(ch) != sorted(ph):
        changes.append(_change("hosts", "inventory", sorted(ph), sorted(ch)))
    for host in sorted(set(ch) & set(ph)):
        changes.extend(_host_changes(host, ph[host] or {}, ch[host] or {}))
    changes.extend(_change("request", k, b, a) for k, b, a in request_changes(previous.get("request"),
                                                                              current.get("request")))
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


# ------------------------------------------------------------------------------------------------- run diff
def run_label(run):
    """``<case>/<run>``: how diff.json names a run (never a path of the controller)."""
    return "%s/%s" % (run["case"], run["run"])


def pair_hosts(a_run, b_run, host_map=None):
    """``[(label, host in a, host in b)]``.

    Same names pair with each other. ``host_map`` (``{host in a: host in b}``) pairs hosts of two cases on purpose;
    without it, two runs of one host each pair those two hosts (an isolated reproduction against production).
    A host found on one side only pairs with None. The label is the host name, or ``a-host->b-host`` when the
    names differ.
    """
    a_hosts, b_hosts = run_hosts(a_run), run_hosts(b_run)
    mapping = dict(host_map or {})
    if not mapping and len(a_hosts) == 1 and len(b_hosts) == 1 and a_hosts != b_hosts:
        mapping = {a_hosts[0]: b_hosts[0]}
    pairs, used_b = [], set()
    for ha in a_hosts:
        hb = mapping.get(ha, ha if ha in b_hosts else None)
        if hb is not None and hb not in b_hosts:
            raise DiffError("host %s of %s is mapped to %s, which %s does not have (its hosts: %s)"
                            % (ha, run_label(a_run), hb, run_label(b_run), ", ".join(b_hosts) or "none"))
        if hb is not None:
            used_b.add(hb)
        pairs.append((ha if hb in (None, ha) else "%s->%s" % (ha, hb), ha, hb))
    for hb in b_hosts:
        if hb not in used_b:
            pairs.append((hb, None, hb))
    return pairs


def _foreign_set(view):
    return sorted("%s on %s" % (p.get("name") or "pid %s" % p.get("pid"), p.get("gpu_uuid"))
                  for p in view["foreign_processes"] or [])


def _entry(variable, before, after):
    return {"variable": variable, "from": before, "to": after}


def host_diff(va, vb, facts=None):
    """``(entries, not_compared)`` for one host pair; a fact is compared only when both runs recorded it.

    ``facts`` restricts the comparison to those fact names (of RUN_FACTS, EXTRA_FACTS, ``foreign_processes``,
    ``command``, ``env``); None compares RUN_FACTS, foreign processes, the command and the environment."""
    entries, not_compared = [], []
    wanted = None if facts is None else set(facts)
    table = RUN_FACTS if wanted is None else [f for f in RUN_FACTS + EXTRA_FACTS if f[0] in wanted]
    for fact, group in table:
        if group not in va["sources"] or group not in vb["sources"]:
            if group in va["sources"] or group in vb["sources"]:
                not_compared.append(fact)
            continue
        if va[fact] != vb[fact]:
            entries.append(_entry(fact, va[fact], vb[fact]))
    # foreign processes live in fingerprints only (an attempt's identity has none)
    fa, fb = va["foreign_processes"], vb["foreign_processes"]
    if wanted is not None and "foreign_processes" not in wanted:
        pass
    elif fa is not None and fb is not None:
        if _foreign_set(va) != _foreign_set(vb):
            entries.append(_entry("foreign_processes", _foreign_set(va), _foreign_set(vb)))
    elif fa is not None or fb is not None:
        not_compared.append("foreign_processes")
    if wanted is not None and "command" not in wanted:
        pass
    elif va["argv"] is not None and vb["argv"] is not None:
        for flag, b, a in command_changes(redact_data(va["argv"]), redact_data(vb["argv"])):
            entries.append(_entry("command:%s" % flag, b, a))
    elif va["argv"] is not None or vb["argv"] is not None:
        not_compared.append("command")
    # like with like: the server environment of two attempts, else the hosts' environments of two fingerprints
    if wanted is not None and "env" not in wanted:
        ea = eb = None
    elif va["env"] is not None and vb["env"] is not None:
        ea, eb = redact_env(va["env"]), redact_env(vb["env"])
    elif va["host_env"] is not None and vb["host_env"] is not None:
        ea, eb = redact_env(va["host_env"]), redact_env(vb["host_env"])
    else:
        ea = eb = None
        if any(v[k] is not None for v in (va, vb) for k in ("env", "host_env")):
            not_compared.append("env")
    if ea is not None:
        for key in sorted(set(ea) | set(eb)):
            if ea.get(key) != eb.get(key):
                entries.append(_entry("env:%s" % key, ea.get(key), eb.get(key)))
    return entries, not_compared


def run_diff(a_run, b_run, host_map=None, facts=None):
    """Compare two runs read with ``_evidence.read_run`` (from ``a`` to ``b``).

    Returns ``{"a", "b", "hosts": {host: [{"variable", "from", "to"}]}, "ambiguous", "variables", "count",
    "not_compared", "summary"}``. ``variable`` is a fact name (``driver``, ``image_digest``, ``gpu_map``,
    ``foreign_processes``, ...) or ``command:<flag>``, ``env:<NAME>``, ``request:<field>``; the request is a
    run-level fact and is listed under the first host of the pair list. ``causes`` groups the variables that one
    cause moves together (CAUSE_OF: the driver, the image). ``ambiguous`` is true when more than one cause changed
    (the same change on every node of a job counts once): an effect between the two runs cannot be put on one.
    ``facts`` restricts what is compared (host_diff); the request is compared only when ``facts`` is None or
    names ``request`` (a replay compares the environment only: it sends the package's request by construction).
    """
    for run in (a_run, b_run):
        if not isinstance(run, dict) or "hosts" not in run or "parts" not in run:
            raise DiffError("run_diff: both runs must be read with read_run (a dict with hosts and parts)")
    hosts, not_compared = {}, {}
    pairs = pair_hosts(a_run, b_run, host_map)
    for label, ha, hb in pairs:
        if ha is None or hb is None:
            hosts[label] = [_entry("host", ha is not None and "present" or "absent",
                                   hb is not None and "present" or "absent")]
            continue
        entries, skipped = host_diff(host_view(a_run, ha), host_view(b_run, hb), facts=facts)
        hosts[label] = entries
        if skipped:
            not_compared[label] = skipped
    ra, rb = a_run["parts"].get("request.json"), b_run["parts"].get("request.json")
    if pairs and (facts is None or "request" in facts):
        head = pairs[0][0]
        if ra is not None and rb is not None:
            for key, b, a in request_changes(record_scrub(ra), record_scrub(rb)):
                hosts[head].append(_entry("request:%s" % key, b, a))
        elif ra is not None or rb is not None:
            not_compared.setdefault(head, []).append("request")
    variables, causes = [], []
    for entries in hosts.values():
        for e in entries:
            if e["variable"] not in variables:
                variables.append(e["variable"])
            cause = CAUSE_OF.get(e["variable"], e["variable"])
            if cause not in causes:
                causes.append(cause)
    count = sum(len(v) for v in hosts.values())
    ambiguous = len(causes) > 1
    a_label, b_label = run_label(a_run), run_label(b_run)
    if not variables:
        summary = "no change between %s and %s" % (a_label, b_label)
    elif ambiguous:
        summary = ("%d variables changed between %s and %s (%s): CAUSAL AMBIGUITY - a difference in behaviour "
                   "cannot be put on one of them" % (len(causes), a_label, b_label, ", ".join(causes)))
    else:
        summary = "one variable changed between %s and %s: %s (%s)" % (
            a_label, b_label, causes[0], ", ".join(variables))
    out = {"a": a_label, "b": b_label, "hosts": hosts, "ambiguous": ambiguous, "variables": variables,
           "causes": causes, "count": count, "not_compared": not_compared, "summary": summary}
    if facts is not None:
        out["facts"] = list(facts)
    return out


def _cell(value):
    if value is None:
        return "-"
    if isinstance(value, (list, dict)):
        value = json.dumps(value, sort_keys=True)
    text = str(value).replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 160 else text[:157] + "..."


def diff_table_lines(diff):
    """One console line per host and change (the play prints these)."""
    lines = [diff["summary"]]
    for host in sorted(diff["hosts"]):
        entries = diff["hosts"][host]
        if not entries:
            lines.append("%s | no change" % host)
        for e in entries:
            lines.append("%s | %s | %s -> %s" % (host, e["variable"], _cell(e["from"]), _cell(e["to"])))
    return lines


def diff_markdown(diff):
    """diff.md: the two runs, the verdict, one table per host."""
    out = ["# Run diff: %s -> %s" % (diff["a"], diff["b"]), ""]
    out.append("**%s**" % diff["summary"])
    out.append("")
    if diff["ambiguous"]:
        out.append("More than one variable changed: a change in the failure between these runs cannot be put on one "
                   "cause. Repeat with one variable at a time (reproduce.yml's ladder) before drawing a conclusion.")
        out.append("")
    for host in sorted(diff["hosts"]):
        out.append("## %s" % host)
        out.append("")
        entries = diff["hosts"][host]
        if not entries:
            out.append("No change.")
        else:
            out.append("| variable | from | to |")
            out.append("|---|---|---|")
            for e in entries:
                out.append("| %s | %s | %s |" % (_cell(e["variable"]), _cell(e["from"]), _cell(e["to"])))
        skipped = diff["not_compared"].get(host)
        if skipped:
            out.append("")
            out.append("Not compared (recorded in one run only): %s" % ", ".join(skipped))
        out.append("")
    return "\n".join(out)
