"""The pre-change fleet audit: every host against a saved baseline run, else against the profile, else the spread.

``audit`` reads one fingerprint run (the audit run) and compares each host's facts with the same host in the
baseline run when one is given (drift); without one it names nobody drifted and reports the facts the hosts do not
agree on (the spread); compatibility violations come from the profile's judge (compatibility.json).
``host_isolation`` makes the isolation decision of each host against its previous run of the case.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import json

from ansible_collections.repro.vllm.plugins.module_utils.record._evidence import cite, host_view, run_hosts
from ansible_collections.repro.vllm.plugins.plugin_utils.decide._isolation import decide

# the facts compared, in report order (names as host_view has them)
AUDIT_FACTS = ("driver", "kernel_module", "cuda_driver", "gpu_model", "gpu_count", "compute_capability", "os",
               "kernel", "image", "image_digest", "image_vllm", "image_torch", "image_cuda")


class AuditError(ValueError):
    """Input that is not a run."""


def _key(value):
    return json.dumps(value, sort_keys=True)


def majority(views, facts=AUDIT_FACTS):
    """``{fact: value}`` held by more than half of ``views`` (hosts that answered); facts without one are left out."""
    out = {}
    if not views:
        return out
    for fact in facts:
        counts = {}
        for view in views.values():
            k = _key(view.get(fact))
            counts[k] = counts.get(k, 0) + 1
        best, n = max(counts.items(), key=lambda kv: kv[1])
        if n * 2 > len(views):
            out[fact] = json.loads(best)
    return out


def spread(views, facts=AUDIT_FACTS):
    """``{fact: [{value, hosts}]}`` of every fact the hosts of ``views`` (hosts that answered) do not agree on, the
    values in the order of the hosts; facts all hosts agree on are left out. Nobody is named drifted by it."""
    out = {}
    for fact in facts:
        groups = []
        for host, view in views.items():
            value = view.get(fact)
            group = next((g for g in groups if _key(g["value"]) == _key(value)), None)
            if group is None:
                groups.append({"value": value, "hosts": [host]})
            else:
                group["hosts"].append(host)
        if len(groups) > 1:
            out[fact] = groups
    return out


def audit(run, baseline=None, compatibility=None, facts=AUDIT_FACTS):
    """audit.json for the audit run ``run`` (``read_run``), with an optional baseline run and compatibility.json.

    Drift is measured against the baseline when there is one (a host whose fact differs from the same host in the
    baseline drifted); without one the reference is the profile (compatibility.json's violations) when the run was
    judged, and the hosts' differences are reported as a ``spread``, naming nobody drifted: which value is right is
    not for the majority to say (after 2 of 3 nodes dropped to another driver the healthy one would be "drifted").
    ``verdict``: ``violation`` (a compatibility violation of a host or the job), else ``drift`` (a host drifted from
    its baseline), else ``clean``. ``majority`` stays as information (the value most hosts hold), never a reference."""
    if not isinstance(run, dict) or "hosts" not in run:
        raise AuditError("audit: the audit run must be read with read_run")
    names = run_hosts(run)
    views = {h: host_view(run, h) for h in names}
    ok = {h: v for h, v in views.items() if v["status"] == "ok"}
    major = majority(ok, facts)
    base_views = {}
    if baseline is not None:
        for h in names:
            bv = host_view(baseline, h)
            if bv["status"] == "ok":
                base_views[h] = bv
    violations = (compatibility or {}).get("violations") or []
    hosts = {}
    for h in names:
        view = views[h]
        entry = {"status": view["status"] or "missing", "drift": [],
                 "facts": {f: view.get(f) for f in facts} if view["status"] == "ok" else None,
                 "source": view["sources"].get("driver") or cite(run, h),
                 "violations": [v for v in violations if v.get("host") == h]}
        if view["status"] == "ok" and baseline is not None:
            bv = base_views.get(h)
            if bv is None:
                entry["drift"].append({"fact": "host", "found": "present", "baseline": "absent"})
            else:
                entry["drift"] = [{"fact": f, "found": view.get(f), "baseline": bv.get(f)} for f in facts
                                  if view.get(f) != bv.get(f)]
        hosts[h] = entry
    drifted = [h for h in names if hosts[h]["drift"]]
    job_violations = [v for v in violations if v.get("host") is None]
    if baseline is not None:
        reference = "baseline"
    elif compatibility:
        reference = "profile"
    else:
        reference = "none"
    result = {
        "hosts": hosts,
        "majority": major,
        "reference": reference,
        "spread": spread(ok, facts),
        "baseline_run": "%s/%s" % (baseline["case"], baseline["run"]) if baseline is not None else None,
        "audit_run": "%s/%s" % (run["case"], run["run"]),
        "drifted": drifted,
        "unreachable": [h for h in names if views[h]["status"] != "ok"],
        "violations": len(violations),
        "job_violations": job_violations,
        "verdict": "violation" if violations else "drift" if drifted else "clean",
    }
    return result


def _values(groups):
    return "; ".join("%s on %s" % (g["value"], ", ".join(g["hosts"])) for g in groups)


def drift_lines(result):
    """One line per host that drifted from its baseline or has a compatibility violation (and one for the job), one
    per fact the hosts do not agree on (the spread, naming nobody drifted), one per host not looked at, and last the
    verdict line."""
    lines = []
    for h, entry in sorted(result["hosts"].items()):
        if not entry["drift"] and not entry["violations"]:
            continue
        bits = ["%s %s (baseline %s)" % (d["fact"], d["found"], d.get("baseline")) for d in entry["drift"]]
        for v in entry["violations"]:
            bits.append("violation %s: found %s, required %s" % (v.get("fact"), v.get("found"), v.get("required")))
        lines.append("audit | %s | %s | %s" % (h, "DRIFT" if entry["drift"] else "VIOLATION", "; ".join(bits)))
    for v in result.get("job_violations") or []:
        lines.append("audit | job | VIOLATION | %s: found %s, required %s; fix: %s" % (
            v.get("fact"), v.get("found"), v.get("required"), v.get("fix")))
    if result.get("reference") != "baseline":
        why = {"profile": "measured against the profile; no baseline, so no host is named drifted",
               "none": "no baseline and no profile: which value is right is not said"}[result.get("reference") or "none"]
        for fact, groups in sorted((result.get("spread") or {}).items()):
            lines.append("audit | spread | %s: %s (%s; give repro_vllm_audit_baseline)" % (fact, _values(groups), why))
    # a host the audit could not look at is never reported as matching anything
    for h in result.get("unreachable") or []:
        status = (result["hosts"].get(h) or {}).get("status") or "missing"
        lines.append("audit | %s | NOT AUDITED | %s: no fingerprint of it in the run, so neither drift nor a match "
                     "can be said" % (h, status))
    reference = {"baseline": "against the baseline %s" % result.get("baseline_run"),
                 "profile": "no baseline: against the profile", "none": "no baseline and no profile"}
    lines.append("audit | verdict %s | %d compatibility violation(s), %d host(s) drifted, %d fact(s) spread, %d host(s) "
                 "not audited (%s)" % (result["verdict"], result["violations"], len(result["drifted"]),
                                       len(result.get("spread") or {}), len(result.get("unreachable") or []),
                                       reference.get(result.get("reference"), reference["none"])))
    return lines


def _md(value):
    text = "-" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def audit_markdown(result, isolation=None):
    """audit.md: verdict, the majority, one line per host, the drift table, the isolation decisions."""
    out = ["# Fleet audit %s" % result["audit_run"], ""]
    out.append("Verdict: **%s** - %d host(s) drifted, %d compatibility violation(s), %d host(s) did not answer." % (
        result["verdict"], len(result["drifted"]), result["violations"], len(result["unreachable"])))
    if result["baseline_run"]:
        out.append("Baseline run: %s (drift is measured against it)." % result["baseline_run"])
    else:
        out.append("No baseline run: no host is named drifted; %s." % (
            "the hosts are measured against the profile (compatibility.json)" if result.get("reference") == "profile"
            else "no profile either, so the differences below are a spread, not a verdict"))
    if result.get("spread"):
        out += ["", "## Spread (facts the hosts do not agree on)", "", "| fact | values |", "|---|---|"]
        out += ["| %s | %s |" % (f, _md(_values(g))) for f, g in sorted(result["spread"].items())]
    out += ["", "## Majority (information only, never a reference)", "", "| fact | value |", "|---|---|"]
    out += ["| %s | %s |" % (f, _md(v)) for f, v in result["majority"].items()]
    out += ["", "## Hosts", "", "| host | status | drift | violations |", "|---|---|---|---|"]
    for h, e in sorted(result["hosts"].items()):
        out.append("| %s | %s | %s | %d |" % (_md(h), e["status"], ", ".join(d["fact"] for d in e["drift"]) or "-",
                                              len(e["violations"])))
    rows = [(h, d) for h, e in sorted(result["hosts"].items()) for d in e["drift"]]
    if rows:
        out += ["", "## Drift (against the baseline)", "", "| host | fact | found | baseline |", "|---|---|---|---|"]
        for h, d in rows:
            out.append("| %s | %s | %s | %s |" % (_md(h), d["fact"], _md(d["found"]), _md(d.get("baseline"))))
    violations = [(h, v) for h, e in sorted(result["hosts"].items()) for v in e["violations"]]
    violations += [(None, v) for v in result.get("job_violations") or []]
    if violations:
        out += ["", "## Compatibility violations", "", "| host | fact | required | found | fix |", "|---|---|---|---|---|"]
        for h, v in violations:
            cells = (_md(h or "job"), _md(v.get("fact")), _md(v.get("required")), _md(v.get("found")),
                     _md(v.get("fix")))
            out.append("| %s | %s | %s | %s | %s |" % cells)
    if isolation is not None:
        out += ["", "## Isolation", "", "Decision: **%s**" % isolation["decision"], ""]
        for r in isolation["reasons"]:
            out.append("- `%s` %s: %s" % (r["condition"], r["host"] or "job", r["evidence"]))
    return "\n".join(out) + "\n"


def host_isolation(current, previous_runs, must_keep_serving=False):
    """The isolation decision of each host of ``current`` against its latest run among ``previous_runs``.

    Returns isolation.json with ``hosts`` ({host: {decision, previous_run}}) added.
    """
    reasons = []
    per_host = {}
    for h in run_hosts(current):
        prev = [r for r in previous_runs if h in r["hosts"] and host_view(r, h)["status"] == "ok"
                and r["path"] != current["path"]]
        runs = ([prev[-1]] if prev else []) + [current]
        got = decide(runs, hosts=[h])["reasons"]
        reasons += got
        per_host[h] = {"decision": "move" if got else "stay",
                       "previous_run": "%s/%s" % (prev[-1]["case"], prev[-1]["run"]) if prev else None}
    if must_keep_serving:
        reasons += decide([], must_keep_serving=True)["reasons"]
    return {"decision": "move" if reasons else "stay", "reasons": reasons, "hosts": per_host,
            "runs": ["%s/%s" % (current["case"], current["run"])]}
