"""summary.md of the hand-off package: its facts (``summary.json``, built by ``_handoff.collect_facts``) written in
the shape of vLLM's bug report - the environment in ``<details>``, the 13 items answered, tables, long logs folded,
the stage timeline and memory traces as Mermaid pictures beside the SVGs. Controller side, standard library only.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import json
import os
import re
import shlex

from ansible_collections.repro.vllm.plugins.module_utils.record import _evidence
from ansible_collections.repro.vllm.plugins.module_utils.decide import _verdict
from ansible_collections.repro.vllm.plugins.module_utils.decide._score import score_markdown

ITEMS = (
    ("host_driver", "Host driver"),
    ("image", "Image digest"),
    ("versions", "vLLM and runtime versions"),
    ("gpus", "GPU count, names and visibility"),
    ("command", "Full startup command"),
    ("environment", "Relevant environment (redacted)"),
    ("model", "Model revision or local weight identifier"),
    ("request", "Fixed request body"),
    ("first_exception", "First exception with timestamp"),
    ("stage", "Stage classification"),
    ("changes", "One-variable change table across runs"),
    ("rollback", "Result after rollback"),
    ("repeat", "Second clean run"),
)
MAX_LOG_EXCERPT_LINES = 80
MAX_MEMORY_POINTS = 60

# where each variable of the server's environment came from (summary.json items.environment.hosts.<h>.from)
ENV_SOURCES = {
    "run": "set by the run",
    "production": "the production environment (repro_vllm_production_env)",
    "secret": "the secret environment (repro_vllm_secret_env)",
    "inherited": "inherited",
}

# who writes score.json and isolation.json: reproduce.yml's last play (the decide role, a summary run of the case);
# playbooks/diff.yml writes diff.json and diff.md, not these
SUMMARY_RUN_HOW = ("run playbooks/reproduce.yml on this case: its last play (\"Reproduce | baseline score and isolation "
                   "decision\", the decide role) writes %s into a summary run of the case")

# a redaction marker directly followed by punctuation (``<redacted>,``) reads as a value to the secret scan
_MARKER_END_RE = re.compile(r"(<redacted(?::[a-z0-9_]+(?::[0-9a-f]{8,64})?)?>)(?=\S)")


def quote_argv(argv):
    return " ".join(shlex.quote(str(a)) if not str(a).startswith("<redacted") else str(a) for a in argv)


def _md_cell(value):
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ").strip() or "-"


def _md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _col in header) + "|"]
    for row in rows:
        out.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
    return "\n".join(out)


def _fence(text, lang="text"):
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return "%s%s\n%s\n%s" % (ticks, lang, text.rstrip("\n"), ticks)


def _details(summary, body):
    return "<details>\n<summary>%s</summary>\n\n%s\n\n</details>" % (summary, body)


def _mermaid_label(text):
    return re.sub(r"\s+", " ", re.sub(r"[\"<>{}\[\]()|#;`]", " ", str(text))).strip() or "-"


def _line_list(lines, limit=20):
    return ", ".join(str(n) for n in lines[:limit]) + (" ... (%d lines)" % len(lines) if len(lines) > limit else "")


def _one_variable(row):
    if row.get("one_variable") is None:
        return "-"
    if row["one_variable"]:
        return "yes"
    return "NO (%s)" % ", ".join(str(u) for u in row.get("unexpected") or []) or "NO"


def timeline_mermaid(rows):
    """A Mermaid flowchart: per run and node, the stages reached in order, the failing one red."""
    out = ["flowchart LR"]
    for i, row in enumerate(rows):
        out.append('  subgraph r%d["%s"]' % (i, _mermaid_label(("* " if row["first"] else "") + row["label"])))
        out.append("    direction LR")
        ids = []
        times = {}
        for mark in row["marks"]:
            times.setdefault(mark.get("stage"), mark.get("timestamp"))
        if row["failed"] and row.get("failed_at"):
            times[row["failed"]] = row["failed_at"]
        for j, stage in enumerate(row["reached"]):
            nid = "r%ds%d" % (i, j)
            label = stage if not times.get(stage) else "%s %s" % (stage, times[stage])
            if stage == row["failed"]:
                label = "FAILED %s" % label
            out.append('    %s["%s"]' % (nid, _mermaid_label(label)))
            ids.append((nid, stage))
        if len(ids) > 1:
            out.append("    " + " --> ".join(n for n, _s in ids))
        out.append("  end")
        for nid, stage in ids:
            if stage == row["failed"]:
                out.append("  style %s fill:#f8d0d0,stroke:#d62728" % nid)
    return "\n".join(out)


def _resample(points, limit=MAX_MEMORY_POINTS):
    if len(points) <= limit:
        return points
    step = (len(points) - 1) / float(limit - 1)
    return [points[int(round(i * step))] for i in range(limit)]


def memory_mermaid(title, series):
    """A Mermaid xychart (GitHub renders ``xychart-beta``): each series resampled to at most 60 points."""
    usable = [s for s in series if s["points"]]
    if not usable:
        return None
    base = _resample(usable[0]["points"])
    xs = [p[0] for p in base]
    out = ["xychart-beta", '  title "%s"' % _mermaid_label(title),
           '  x-axis "seconds since start" [%s]' % ", ".join('"%s"' % int(round(x)) for x in xs),
           '  y-axis "MiB"']
    for s in usable:
        pts = s["points"]
        vals = []
        for x in xs:  # nearest sample of this series to each x of the first one
            best = min(pts, key=lambda p, x=x: abs(p[0] - x))
            vals.append("%.1f" % best[1])
        out.append("  line [%s]" % ", ".join(vals))
    return "\n".join(out)


def render_markdown(facts, pics, runs, redactions):
    """summary.md: vLLM's bug report shape (environment in <details>, then the bug), every item answered."""
    items = facts["items"]
    out = ["# %s" % _verdict.title(facts), ""]  # the same sentence as summary.json and the console
    out.append("Hand-off of case `%s` made by repro.vllm from %d frozen run(s), every one verified against its "
               "manifest. Secrets are redacted on the hosts before anything is fetched: `<redacted:KIND:HEX>` (equal markers "
               "mean equal values within this case) or a plain `<redacted>`. "
               "`summary.json` holds the same facts for machines." % (facts["case_id"], len(facts["runs"])))
    out += ["", _verdict_md(facts)]
    out += ["", "## Your current environment", ""]
    env_body = []
    for key in ("host_driver", "image", "versions", "gpus"):
        env_body.append("### %s\n\n%s" % (dict(ITEMS)[key], _item_md(key, items[key])))
    out.append(_details("Environment: driver, image, versions, GPUs", "\n\n".join(env_body)))
    out += ["", "## \U0001f41b Describe the bug", ""]
    out.append(_describe(facts))
    env_keys = ("host_driver", "image", "versions", "gpus")
    for n, (key, label) in enumerate(ITEMS, 1):
        body = ("In **Your current environment** above (printed once)." if key in env_keys else _item_md(key, items[key]))
        out += ["", "### %d. %s" % (n, label), "", body]
    out += ["", "## Pictures", "", "### Stage timeline per node", ""]
    out.append("![stage timeline](pictures/stage-timeline.svg)")
    if pics["timeline_rows"]:
        out += ["", "```mermaid", timeline_mermaid(pics["timeline_rows"]), "```"]
    else:
        out += ["", "unknown - no attempt run has a stages.json: run playbooks/reproduce.yml"]
    out += ["", "### Memory over each run", ""]
    if not pics["memory"]:
        out.append("unknown - no memory.jsonl in these runs: vllm_server samples memory when started by "
                   "playbooks/reproduce.yml (memory_interval > 0)")
    for mem in pics["memory"]:
        out += ["#### %s %s" % (mem["run"], mem["host"]), "", "![memory %s %s](%s)" % (mem["run"], mem["host"], mem["file"]), ""]
        if mem["mermaid"]:
            out += ["```mermaid", mem["mermaid"], "```", ""]
        out.append(_md_table(["mark", "seconds since start"], [[m["label"], m["seconds"]] for m in mem["marks"]]))
        out.append("")
        out.append("Peak: " + ", ".join("%s %.1f MiB" % (k, v) for k, v in sorted(mem["peak_mib"].items())))
    out += ["", "## Baseline score and isolation", ""]
    score = facts.get("score")
    if score and isinstance(score.get("items"), list) and isinstance(score.get("score"), int):
        out.append(score_markdown(score).replace("## Baseline score", "Baseline score", 1).rstrip("\n"))
        out.append("")
        out.append("(`%s`)" % score["source"])
    elif score:
        out.append("Baseline score: %s (`%s`)" % (score.get("score", "unknown"), score["source"]))
    else:
        out.append("Baseline score: unknown - how to get it: %s" % SUMMARY_RUN_HOW % "score.json")
    iso = facts.get("isolation")
    out.append("")
    if iso and isinstance(iso.get("reasons"), list):
        out.append("Isolation decision: **%s** (`%s`)" % (iso.get("decision"), iso["source"]))
        if iso["reasons"]:
            out.append("")
            out.append(_md_table(["condition", "host", "evidence"],
                                 [[r.get("condition"), r.get("host") or "job", r.get("evidence")]
                                  for r in iso["reasons"] if isinstance(r, dict)]))
        else:
            out.append("")
            out.append("No isolation condition holds.")
    else:
        out.append("Isolation decision: unknown - how to get it: %s" % SUMMARY_RUN_HOW % "isolation.json")
    out += ["", "## To run it again", ""]
    ran_in = sorted({(v.get("image"), v.get("image_id")) for v in
                     ((facts.get("items") or {}).get("image") or {}).get("hosts", {}).values()
                     if isinstance(v, dict) and v.get("image_id")})
    for ref, image_id in ran_in:
        out.append("The server ran in the image `%s` (id `%s`): playbooks/replay.yml runs that image by its id. Where the "
                   "receiving host does not hold it, bring it (`podman save -o image.tar %s` on a host that has it, "
                   "`podman load -i image.tar` on the receiver; `docker save`/`docker load` alike)."
                   % (ref, image_id, image_id))
        out.append("")
    names = facts.get("secret_variable_names") or []
    out.append("Secrets the command and request need (names only; set them yourself): %s"
               % (", ".join("`%s`" % n for n in names) if names else "none recorded"))
    prof = facts.get("profile_file")
    out.append("")
    out.append("Profile file: %s" % ("`%s` (in this package)" % prof if prof else "none used"))
    run_rows = [[r["run"], r.get("play") or "-", r["step"], r["created"], ", ".join(r["hosts"]), r["stage"] or "-",
                 r["error_class"] or "-", "-" if r["ok"] is None else ("ok" if r["ok"] else "failed"), r.get("status")]
                for r in facts["runs"]]
    out += ["", "## Runs", "", _md_table(["run", "play", "step", "created", "hosts", "stage", "error class", "result",
                                          "status"], run_rows)]
    excerpt = _log_excerpt(runs, facts)
    if excerpt:
        src, start, text = excerpt
        out += ["", _details("Log excerpt: %s from line %d" % (src, start), _fence(text, "text"))]
    out += ["", _details("What was redacted where (%d markers)" % sum(len(v) for v in redactions.values()),
                         _md_table(["file", "lines", "kinds"],
                                   [[f, _line_list(sorted({x[0] for x in v})),
                                     ", ".join(sorted({x[1] for x in v}))] for f, v in sorted(redactions.items())])
                         if redactions else "nothing was redacted")]
    return "\n".join(out) + "\n"


def _describe(facts):
    items = facts["items"]
    first = items.get("first_exception") or {}
    play = set((facts.get("play") or {}).get("runs") or [r["run"] for r in facts["runs"]])
    attempts = [r for r in facts["runs"] if r["attempt"] and r["run"] in play]
    bits = ["%s." % str(facts.get("verdict_sentence") or "").rstrip(".")]
    bits += ["%d attempt run(s) in this play: %s." % (len(attempts), ", ".join(
        "%s %s %s" % (r["run"], r["step"], "ok" if r["ok"] else "failed at %s (%s)" % (r["stage"], r["error_class"]))
        for r in attempts) or "none")]
    if first.get("value") == "found":
        bits.append("The first exception across all nodes and runs: `%s` on %s at %s (stage %s)."
                    % (_md_cell(first.get("line"))[:300], first.get("node"), first.get("timestamp") or "an unknown time",
                       first.get("stage")))
    bits.append("The failure reproduced by a second clean run: %s." % items["repeat"]["value"])
    return " ".join(bits)


def _verdict_md(facts):
    """The verdict paragraph: the sentence, its detail, the boundary's violations first, earlier plays below."""
    d = facts.get("verdict_detail") or {}
    out = ["**Verdict: `%s`** - %s" % (facts.get("verdict"), facts.get("verdict_sentence")), ""]
    out.append(_md_table(["layer", "stage", "error class", "run", "rollback", "facts"],
                         [[d.get("layer") or "-", d.get("stage") or "-", d.get("error_class") or "-", d.get("run") or "-",
                           (d.get("rollback") or "unknown").replace("_", " "), ", ".join(d.get("facts") or []) or "-"]]))
    compat = facts.get("compatibility")
    if facts.get("verdict") == "boundary" and compat:
        out += ["", "### Compatibility boundary: profile `%s` (`%s`)" % (compat.get("profile"), compat.get("source")), ""]
        out.append(_md_table(["fact", "host", "required", "found", "fix"],
                             [[v.get("fact"), v.get("host") or "job", v.get("required"), v.get("found"), v.get("fix")]
                              for v in compat.get("violations") or []]))
        out += ["", "vLLM was not started: the method stops at a failed compatibility boundary."]
    elif compat:
        out += ["", "Compatibility: **%s** against profile `%s` (`%s`)"
                % (compat.get("verdict"), compat.get("profile"), compat.get("source"))]
    play = facts.get("play") or {}
    if play:
        out += ["", "Play `%s`: %s (%s)." % (play.get("play_id"), ", ".join(play.get("runs") or []), play.get("how"))]
    if facts.get("history"):
        out += ["", "Earlier plays of this case (history, newest first):", ""]
        out.append(_md_table(["play", "runs", "verdict", "sentence"],
                             [[h["play_id"], ", ".join(h["runs"]), h["verdict"], h["verdict_sentence"]]
                              for h in facts["history"]]))
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------ summary.md
def _item_md(key, item):
    """Markdown body of one of the 13 items."""
    if item.get("value") == "unknown" and key != "command":
        return "**unknown** - how to get it: %s" % item.get("how")
    if item.get("value") in ("not applicable", "none", "not tried") and key not in ("command",):
        text = "**%s** - %s" % (item["value"], item.get("note") or item.get("how"))
        return text if item["value"] != "not tried" else "Reproduced by a second clean run: " + text
    lines = []
    hosts = item.get("hosts")
    if key == "host_driver":
        lines.append(_md_table(["host", "driver", "kernel module", "CUDA (driver)", "OS", "kernel", "source"],
                               [[h, v.get("driver") or "unknown", v.get("kernel_module") or "unknown",
                                 v.get("cuda_driver") or "unknown", v.get("os") or "unknown", v.get("kernel") or "unknown",
                                 v.get("source")] for h, v in sorted(hosts.items())]))
    elif key == "image":
        lines.append(_md_table(["host", "image", "digest", "run by digest", "source"],
                               [[h, v.get("image"), v.get("digest") or "unknown (no container)", v.get("by_digest"),
                                 v.get("source")] for h, v in sorted(hosts.items())]))
    elif key == "versions":
        rows = []
        for h, v in sorted(hosts.items()):
            for name in sorted(v):
                rows.append([h, name, v[name]["value"], v[name]["source"]])
            for name in ("vllm", "torch"):
                if name not in v:
                    rows.append([h, name, "unknown - run `python -m vllm.collect_env` in the serving environment (or "
                                 "keep repro_vllm_collect_env on: reproduce.yml embeds it)", "-"])
        lines.append(_md_table(["host", "component", "version", "source"], rows))
        ce = item.get("collect_env") or {}
        if ce.get("value") == "unknown":
            lines.append("vLLM's `collect_env` output: **unknown** - how to get it: %s" % ce.get("how"))
        elif ce.get("value"):
            lines.append(_details("vLLM's `collect_env` output on %s (%s)" % (ce.get("host"), ce.get("source")),
                                  _fence(ce["value"])))
    elif key == "gpus":
        lines.append(_md_table(["host", "count", "names", "CUDA_VISIBLE_DEVICES", "compute capability",
                                "foreign processes", "source"],
                               [[h, v.get("count"), v.get("names") or "none", v.get("visible_devices") or "(not set)",
                                 v.get("compute_capability") or "-", len(v.get("foreign_processes") or []),
                                 v.get("source")] for h, v in sorted(hosts.items())]))
    elif key == "command":
        if item.get("value") == "unknown":
            lines.append("**unknown** - how to get it: %s" % item.get("how"))
        elif item.get("value") == "not applicable":
            lines.append("**not applicable** - %s" % item.get("note"))
        for h, v in sorted((hosts or {}).items()):
            what = "the command that failed, as started" if item.get("failed") else "the command as started"
            if v.get("vllm_argv"):
                what += " (the server in its container, by the image's digest)"
            lines.append("`%s`, %s (%s, `%s`):\n\n%s" % (h, what, v["run"], v["source"], _fence(v["shell"], "bash")))
        lines.append(_production_md(item.get("production") or {}))
    elif key == "environment":
        for h, v in sorted(hosts.items()):
            origin = {name: source for source, names in (v.get("from") or {}).items() for name in names}
            rows = [[k, val, ENV_SOURCES[origin.get(k, "run")]] for k, val in sorted((v.get("set_by_run") or {}).items())]
            rows += [[k, val, ENV_SOURCES[origin.get(k, "inherited")]] for k, val in sorted((v.get("inherited") or {}).items())
                     if k not in (v.get("set_by_run") or {})]
            lines.append("`%s` (`%s`):\n\n%s" % (h, v["source"], _md_table(["variable", "value", "from"], rows)))
    elif key == "model":
        lines.append(_md_table(["host", "model", "revision", "local weights", "source"],
                               [[h, v["model"], v["revision"] or "unknown", v["local"], v["source"]]
                                for h, v in sorted(hosts.items())]))
        if item.get("how"):
            lines.append("Revision **unknown** - how to get it: %s" % item["how"])
    elif key == "request":
        lines.append("`%s %s` through %s, timeout %s s, concurrency %s (`%s`):" % (
            "POST", item.get("route"), item.get("client"), item.get("timeout"), item.get("concurrency"), item["source"]))
        lines.append(_fence(json.dumps(item.get("body"), indent=2, sort_keys=True), "json"))
    elif key == "first_exception":
        if item.get("value") == "none":
            lines.append(item["note"])
        else:
            lines.append(_md_table(["run", "stage", "error class", "timestamp", "node", "process", "where"],
                                   [[item["run"], item["stage"], item["error_class"], item.get("timestamp") or "unknown",
                                     item.get("node"), item.get("process") or "-",
                                     "%s:%s" % (item.get("file"), item.get("lineno"))]]))
            lines.append(_fence(str(item.get("line") or ""), "text"))
            if item.get("how"):
                lines.append("Timestamp **unknown** - how to get it: %s" % item["how"])
    elif key == "stage":
        lines.append(_md_table(["run", "step", "stage", "error class", "result", "stages reached", "source"],
                               [[r["run"], r["step"], r["stage"], r["error_class"] or "-",
                                 "ok" if r["ok"] else "failed", " > ".join(r["stages_reached"]) or "-", r["source"]]
                                for r in item["runs"]]))
    elif key == "changes":
        lines.append(_md_table(["run", "step", "after", "the one variable changed", "what differs (record_diff)",
                                "one variable", "stage", "result"],
                               [[r["run"], r["step"], r["previous"] or "-",
                                 " ".join(str(c) for c in r["changed_variable"]) or "(baseline)",
                                 "; ".join(r["differences"]) or "nothing", _one_variable(r), r["stage"],
                                 "ok" if r["ok"] else "failed"]
                                for r in item["runs"]]))
    elif key == "rollback":
        lines.append("Rollback: **%s**" % item["value"].replace("_", " "))
        lines.append(_md_table(["run", "step", "stage", "error class", "result", "earlier state returned", "summary",
                                "source"],
                               [[r["run"], r["step"], r["stage"], r["error_class"] or "-",
                                 "ok" if r["ok"] else "failed", r.get("earlier_state_returned"), r["summary"],
                                 r["source"]] for r in item.get("runs") or []]))
    elif key == "repeat":
        lines.append("The failure of %s reproduced by a second clean run: **%s**" % (item.get("failed_run"), item["value"]))
        lines.append(_md_table(["run", "repeats", "stage", "error class", "same stage", "same error class", "source"],
                               [[r["run"], r["repeats"], r["stage"], r["error_class"] or "-", r["same_stage"],
                                 r["same_error_class"], r["source"]] for r in item.get("runs") or []]))
    return "\n\n".join(lines)


def _production_md(prod):
    """The production command beside the command that ran: its derivation (removed by category, unknown options)."""
    if prod.get("value") != "recorded":
        return "Production command: **%s** - %s" % (prod.get("value", "unknown"), prod.get("note") or prod.get("how"))
    out = ["Production command: derived into the minimal command in %s (`%s`)." % (prod["run"], prod["source"])]
    if prod.get("argv"):
        out.append(_fence(quote_argv(prod["argv"]), "bash"))
    # one item a row, never quoted or followed by punctuation: a redaction marker stays a marker to the scan
    rows = [["kept", k, "-", "part of the minimal command"] for k in prod.get("kept") or []]
    for cat, entries in sorted((prod.get("removed") or {}).items()):
        rows += [["removed: " + cat, e["item"], e.get("layer") or "-", e.get("why") or "-"] for e in entries]
    out.append(_md_table(["derivation", "item", "ladder layer", "why"], rows))
    if prod.get("unknown"):
        out.append("Options this collection does not know (removed from the minimal command):")
        out.append("\n".join("- %s" % u for u in prod["unknown"]))
    for w in prod.get("warnings") or []:
        if not str(w).startswith("options this collection does not know"):  # listed above, one a line
            out.append("Warning: %s" % _MARKER_END_RE.sub(r"\1 ", str(w)))
    return "\n\n".join(out)


def _log_excerpt(runs, facts):
    """The first failing node's log around the first exception (or the head of the last run's log)."""
    first = facts["items"].get("first_exception") or {}
    for run in runs:
        if first.get("run") and run["run"] != first["run"]:
            continue
        for host in _evidence.run_hosts(run):
            for rel in _evidence.host_logs(run, host):
                if first.get("file") and os.path.basename(rel) != os.path.basename(str(first["file"])):
                    continue
                text = _evidence.read_log_tail(run, host, rel)
                lines = text.splitlines()
                if first.get("lineno"):
                    at = int(first["lineno"])
                    lo, hi = max(0, at - 40), min(len(lines), at + 40)
                else:
                    lo, hi = max(0, len(lines) - MAX_LOG_EXCERPT_LINES), len(lines)
                return _evidence.cite(run, host, rel), lo + 1, "\n".join(lines[lo:hi])
    return None
