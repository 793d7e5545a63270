"""The console's closing table: one row per targeted host, with the host's real status from the record, for every
playbook (controller side, standard library only; the ``repro.vllm.console`` callback gathers the evidence).

Statuses (docs/architecture.md, "The closing table"), first match wins for a host:

* ``not matched``: repro_vllm_targets named it and it matched nothing (``_targets.not_matched``);
* an attempt of the host (reproduce.yml, replay.yml): ``failed`` at its step (with the rollback), ``refused`` at its
  step, else ``ok`` through its last step;
* the host's entry in the run's record (fleet.json: ``repro.vllm.host_record``'s summary): ``unreachable``,
  ``failed`` (``lost`` in fleet.json: no result came back), ``degraded`` (a command hung: facts recorded);
* ``violation``: the compatibility judge found a violation of the host; ``drift``: the audit found the host drifted;
* ``ok``: its record entry is ok (and no violation, no drift, and none of its own later tasks failed or lost it);
* no record entry: ``unreachable`` or ``failed`` from what its own tasks did, ``ok`` when its own tasks ran and
  passed, else ``not recorded`` (targeted, never looked at: never ``ok``).

Failures of the controller's own tasks (run once, or delegated to localhost: the open, the judge, the freeze, the
close's checks) never land on the host Ansible happened to run them for; they are the ``controller`` row. A violation
of the job as a whole (no host) is the ``job`` row.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.
from __future__ import annotations

STATUSES = ("ok", "violation", "drift", "degraded", "unreachable", "failed", "refused", "not matched", "not recorded")

CONTROLLER = "controller"
JOB = "job"


def _cut(text, limit=60):
    text = str(text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _row(host, status, where=None, stage=None, error_class=None, record=None, detail=None):
    return {"host": host, "status": status, "where": where, "stage": stage, "error_class": error_class,
            "record": record, "detail": detail}


def _attempt_row(host, mine, record):
    failed = [a for a in mine if not a.get("refused") and not a.get("ok") and a.get("purpose") != "rollback"]
    refused = [a for a in mine if a.get("refused")]
    rollbacks = [a for a in mine if a.get("purpose") == "rollback"]
    recorded = [a for a in mine if a.get("path")]
    if failed:
        a = failed[0]
        where = "at %s" % a.get("step")
        if rollbacks:
            where += ", rollback %s" % ("came back" if rollbacks[-1].get("earlier_state_returned") else "did NOT come back")
        error_class = a.get("error_class")
        if a.get("component") and error_class:
            error_class = "%s (%s)" % (error_class, a["component"])
        return _row(host, "failed", where, a.get("stage"), error_class, a.get("path") or record)
    if refused:
        return _row(host, "refused", "at %s" % refused[-1].get("step"), None, None,
                    recorded[-1].get("path") if recorded else record)
    where = "through %s" % mine[-1].get("step")
    unmet = [a.get("step") for a in mine if a.get("expectation_met") is False]
    if unmet:
        where += ", expectation NOT met at %s" % ", ".join(unmet)
    return _row(host, "ok", where, "none", None, recorded[-1].get("path") if recorded else record)


def closing_rows(targets=(), not_matched=(), fleet=(), compatibility=None, drifted=(), attempts=(),
                 unreachable=(), failed=None, ran=(), records=None, controller_errors=()):
    """The closing table's rows, in order: every targeted host, then the ``job`` and ``controller`` rows.

    ``targets``: the hosts the job targeted, in order (the hosts of each opened run); ``not_matched``: ``[{name,
    reason}]`` of the open's refusal; ``fleet``: fleet.json ``hosts`` entries ({host, status, detail}), a later one
    winning; ``compatibility``: the judge's document ({violations: [{host, fact}]}); ``drifted``: the audit's
    drifted hosts; ``attempts``: the judged attempts (``_repro_vllm_attempt``: step, nodes, ok, refused, purpose,
    stage, error_class, component, path); ``unreachable``: hosts the connection lost; ``failed``: {host: task} of
    the hosts' own failed tasks; ``ran``: hosts whose own tasks ran (rows of their own only when no run named its
    hosts and no attempt or miss did); ``records``: {host: run path};
    ``controller_errors``: ``[{task, msg}]`` of the controller's failed tasks.

    Each row: ``{host, status, where, stage, error_class, record, detail}``, ``status`` one of STATUSES."""
    records = records or {}
    failed = failed or {}
    unreachable = set(unreachable or [])
    missed = {m["name"]: m for m in not_matched or []}
    entries = {}
    for entry in fleet or []:
        if isinstance(entry, dict) and entry.get("host"):
            entries[entry["host"]] = entry
    violations = {}
    job_violations = []
    for v in (compatibility or {}).get("violations") or []:
        if v.get("host"):
            violations.setdefault(v["host"], []).append(v.get("fact"))
        else:
            job_violations.append(v.get("fact"))
    drifted = set(drifted or [])

    order = []
    for host in list(targets or []) + [a_node for a in attempts or [] for a_node in a.get("nodes") or []] \
            + list(missed) + list(entries):
        if host not in order:
            order.append(host)
    # no run named its hosts (a play of the collective or the hand-off): the hosts whose own tasks ran; and any host
    # that failed a task of its own or was lost
    for host in (list(ran or []) if not order else []) + sorted(failed) + sorted(unreachable):
        if host not in order:
            order.append(host)

    rows = []
    for host in order:
        record = records.get(host)
        mine = [a for a in attempts or [] if host in (a.get("nodes") or [])]
        entry = entries.get(host)
        if host in missed:
            row = _row(host, "not matched", error_class=missed[host].get("reason"), detail=missed[host].get("reason"))
        elif mine:
            row = _attempt_row(host, mine, record)
            if host in unreachable:
                row["where"] = (row["where"] or "") + " (then unreachable)"
        elif entry is not None:
            status = {"lost": "failed"}.get(entry.get("status"), entry.get("status") or "failed")
            if status == "ok" and host in unreachable:
                row = _row(host, "unreachable", record=record, detail="unreachable after it was recorded")
            elif status == "ok" and host in failed:
                row = _row(host, "failed", error_class="task: %s" % _cut(failed[host]), record=record)
            elif status == "ok" and host in violations:
                row = _row(host, "violation", error_class=", ".join(violations[host]), record=record)
            elif status == "ok" and host in drifted:
                row = _row(host, "drift", record=record)
            elif status in STATUSES:
                row = _row(host, status, record=record, detail=entry.get("detail"))
            else:
                row = _row(host, "failed", record=record, detail="%s: %s" % (entry.get("status"), entry.get("detail")))
        elif host in unreachable:
            row = _row(host, "unreachable", record=record)
        elif host in failed:
            row = _row(host, "failed", error_class="task: %s" % _cut(failed[host]), record=record)
        elif host in violations:
            row = _row(host, "violation", error_class=", ".join(violations[host]), record=record)
        elif host in drifted:
            row = _row(host, "drift", record=record)
        elif host in (ran or []):
            row = _row(host, "ok", record=record)
        else:
            row = _row(host, "not recorded", record=record)
        rows.append(row)
    if job_violations:
        rows.append(_row(JOB, "violation", error_class=", ".join(job_violations)))
    if controller_errors:
        first = controller_errors[0]
        rows.append(_row(CONTROLLER, "failed", error_class="task: %s" % _cut(first.get("task")), detail=first.get("msg"),
                         where=("(+%d more)" % (len(controller_errors) - 1)) if len(controller_errors) > 1 else None))
    return rows


def row_cells(row):
    """One row as the table's cells: host, status (upper case unless ok, with where), stage, error class, record."""
    status = row["status"] if row["status"] == "ok" else row["status"].upper()
    if row.get("where"):
        status = "%s %s" % (status, row["where"])
    return (row["host"], status, row.get("stage") or "-", row.get("error_class") or "-", row.get("record") or "-")


HEAD = ("host", "status", "stage", "error class", "record")


def table_lines(rows):
    """The closing table as text lines (a blank line, the head, one line per row; none without rows): what the
    console prints at the end of the job and what a fleet close hands back for any display (AWX's)."""
    cells = [row_cells(r) for r in rows or []]
    if not cells:
        return []
    widths = [max(len(str(r[i])) for r in cells + [HEAD]) for i in range(4)]
    fmt = "  ".join("%%-%ds" % w for w in widths) + "  %s"
    return [""] + [fmt % HEAD] + [fmt % r for r in cells]


def shown(result):
    """``result`` of one of this collection's actions, made visible under any stdout callback: its ``console`` lines
    and its ``closing`` table as ``msg`` (``closing`` then only there), and the result shown (``_ansible_verbose_always``, as debug's), so Ansible's
    default display - and AWX's, which replaces the stdout callback - prints them as the task's result. The
    ``repro.vllm.console`` callback prints ``console`` itself, its own table at the end, and no result dump (so
    nothing twice). A failed result keeps its own ``msg`` (the reason) and is shown indented, its ``console`` and
    ``closing`` one line a row."""
    lines = [str(line) for line in list(result.get("console") or []) + list(result.get("closing") or [])]
    if lines:
        if not result.get("failed"):
            result["msg"] = lines
            result.pop("closing", None)  # in msg: the table once in the dump
        # a failed result too: shown one key and one line a row (indented), not as one line of JSON
        result["_ansible_verbose_always"] = True
    return result
