"""The close of one attempt, decided in one place (issue 22 items 6 and 7): was it refused, what the one
classification of every node's log is given, the attempt's verdict and its record, the run-level parts that go into
the run, the status and the manifest metadata it is frozen with.

``run_record state=close kind=attempt`` (its action) reads the play's values and calls ``close``, then writes,
freezes and verifies what it returns.
Standard library only (plus the collection's own module_utils).
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import os

from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _judge
from ansible_collections.repro.vllm.plugins.plugin_utils.decide._diff import record_scrub
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import load_case_key, redact_data

CLIENT = "repro.vllm.api_request (Python urllib, one fixed route, fixed timeout)"
# keys of the log_stage module's result that are Ansible's, not the classification
RESULT_KEYS = ("changed", "failed", "invocation")


class AttemptCloseError(Exception):
    """A value the close needs is missing or has the wrong shape; the message names it."""


def _mapping(value, what):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AttemptCloseError("%s must be a mapping, got %s" % (what, type(value).__name__))
    return value


def refused(nodes, refusals):
    """True when a node of the step was refused before anything started (another live run holds its port or GPUs):
    ``refusals`` maps node -> its refusal (None or empty when it was not refused)."""
    refusals = refusals or {}
    return any(refusals.get(node) for node in nodes)


def log_paths(run_path, nodes):
    """Each node's server log in the open run, in the order of ``nodes``."""
    return [os.path.join(run_path, "hosts", node, "logs", "server.log") for node in nodes]


def log_until(nodes, reports):
    """The stop cutoff of each node's log: its line count at the server's last liveness check (the ``alive`` answer
    of vllm_server, ``log_lines``), None where there was no check. What the log holds after it was printed while the
    play stopped the server (log_stage's ``after_stop``), never the failure."""
    out = []
    for node in nodes:
        alive = ((reports or {}).get(node) or {}).get("alive") or {}
        out.append(alive.get("log_lines") if isinstance(alive, dict) else None)
    return out


def _facts(step, run_id, run_path, case_id, identity, diff, checkpoint, debug):
    return {
        "case_id": case_id,
        "run": run_id,
        "path": run_path,
        "step": step.get("name"),
        "purpose": step.get("purpose"),
        "layer": step.get("layer"),
        "refused": False,
        "nodes": step.get("nodes"),
        "expected": step.get("expected"),
        "checkpoint": checkpoint,
        "debug": bool(debug),
        "rollback_of": step.get("rollback_of"),
        "repeat_of": step.get("repeat_of"),
        "layers_applied": step.get("layers_applied", []),
        "identity": identity,
        "changes": diff,
        "argv": step.get("argv"),
        "env": step.get("env"),
        "request": step.get("request"),
    }


def judge(step, run_id, run_path, case_id, stages, reports, exchanges, checkpoint, identity=None, diff=None,
          debug=False, check_mode=False):
    """The attempt as outcome.json and the play keep it: the step's facts with the verdict of
    ``_judge.attempt_verdict`` over them, and (a second clean run) ``repeat``, how it compares with the run it
    repeats (``_judge.repeat_comparison``). ``stages`` is the one classification (empty when nothing was
    classified: check mode, a refused attempt); ``reports`` maps node -> what the node reported (None = nothing)."""
    step = _mapping(step, "the step")
    nodes = list(step.get("nodes") or [])
    verdict = _judge.attempt_verdict(dict(step, run=run_id), _mapping(stages, "stages"),
                                     {node: (reports or {}).get(node) or {} for node in nodes},
                                     list(exchanges or []), checkpoint=checkpoint or None, check_mode=bool(check_mode),
                                     via_gateway=bool(step.get("via_gateway", False)))
    attempt = dict(_facts(step, run_id, run_path, case_id, identity, diff, checkpoint, debug), **verdict)
    if step.get("repeat_of") is not None and not check_mode:
        previous = step.get("previous")
        if not isinstance(previous, dict):
            raise AttemptCloseError("the step repeats %r but has no previous attempt (step.previous) to compare with"
                                    % (step.get("repeat_of"),))
        attempt["repeat"] = _judge.repeat_comparison(previous, attempt)
    return attempt


def _as_int(value):
    """As Jinja's ``int`` filter reads a number: 0 when it is none."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _as_float(value):
    """As Jinja's ``float`` filter reads a number: 0.0 when it is none."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _first_sent(exchanges):
    for ex in exchanges or []:
        if ex.get("label") == "request":
            return ex.get("request")
    return None


def parts(step, attempt, run_path, stages, exchanges, api_url=None, identity=None, diff=None, was_refused=False,
          case_key=None):
    """The run-level parts of the attempt's run, in the order they are written: stages.json (not for a refused
    attempt, which classified nothing), request.json, changes.json, repeat.json (a second clean run),
    outcome.json, responses/<label>-<NN>.json (one per request sent) and the checkpoint's evidence
    (prefix_cache.json or observation.json). Every part is scrubbed of secret shapes (``record_scrub``); the
    outcome's argv and env are redacted with the case's key (``case_key``) first."""
    step = _mapping(step, "the step")
    request = _mapping(step.get("request"), "the step's request")
    previous = step.get("previous") or {}
    out = []
    if not was_refused:
        answer = {k: v for k, v in _mapping(stages, "stages").items() if k not in RESULT_KEYS}
        out.append({"part": "stages.json", "json": record_scrub(answer)})
    out.append({"part": "request.json", "json": {
        "route": request.get("route"),
        "base_url": request.get("base_url") or api_url,
        "concurrency": request.get("concurrency", 1),
        "timeout": request.get("timeout"),
        "repeat": request.get("repeat", 1),
        "body": record_scrub(request.get("body")),
        "client": CLIENT,
        "sent": _first_sent(exchanges),
    }})
    out.append({"part": "changes.json", "json": record_scrub({
        "previous_run": previous.get("run"),
        "previous_path": previous.get("path"),
        "step": step.get("name"),
        "changed_variable": step.get("changed", []),
        "diff": diff,
        "current": identity,
        "previous": previous.get("identity"),
    })})
    if attempt.get("repeat") is not None:
        out.append({"part": "repeat.json", "json": record_scrub(attempt["repeat"])})
    outcome = {k: v for k, v in attempt.items() if k not in ("identity", "changes")}
    outcome["argv"] = redact_data(attempt.get("argv"), case_key or None)
    outcome["env"] = redact_data(attempt.get("env"), case_key or None)
    out.append({"part": "outcome.json", "json": record_scrub(outcome)})
    for ex in exchanges or []:
        if ex.get("skipped"):
            continue
        out.append({"part": "responses/%s-%02d.json" % (ex.get("label"), _as_int(ex.get("index"))),
                    "json": record_scrub(ex)})
    checkpoint = attempt.get("checkpoint")
    if checkpoint is not None:
        kind = checkpoint.get("kind") if isinstance(checkpoint, dict) else None
        out.append({"part": "prefix_cache.json" if kind == "prefix_cache" else "observation.json", "json": checkpoint})
    return out


def freeze_args(step, attempt, case_id):
    """The status (``ok``, ``failed``, ``refused``: the verdict's) and the manifest metadata the run is frozen with;
    a second clean run names the run it repeats (``repeats``)."""
    status = attempt["status"] if "status" in attempt else ("ok" if attempt.get("ok") else "failed")
    metadata = {"case_id": case_id, "purpose": step.get("purpose"), "step": step.get("name"),
                "hosts": step.get("nodes")}
    repeat_of = step.get("repeat_of")
    if repeat_of is not None:
        metadata["repeats"] = repeat_of.get("run") if isinstance(repeat_of, dict) else None
    return {"status": status, "metadata": metadata}


def kept_step(step):
    """The step as the play remembers it (a second clean run repeats it): without the attempt it compared with."""
    return {k: v for k, v in step.items() if k != "previous"}


def case_key_of(run_path):
    """The case's redaction key (the case folder is the run's parent), as repro.vllm.redact(case_dir=...) reads it."""
    return load_case_key(os.path.dirname(run_path))


def _text(value):
    """A value as Ansible's templating prints it into a text (the run sheet used to be a template): none as
    nothing."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _join(values, sep):
    return sep.join(_text(v) for v in values or [])


def profile_text(identity):
    """The run sheet's profile cell from the identity the run's open recorded: the name and where it came from."""
    identity = identity or {}
    if not identity.get("profile_source"):
        return "unknown (the run's open did not record it)"
    return "%s (%s)" % (identity.get("profile") or "none", identity["profile_source"])


def notes(step, attempt, case_id, profile, diff=None, debug_on=False, debug_env=None, argv=None, case_key=None):
    """notes.md, the run sheet of the attempt's run: the step (input condition, changed variable, expected, rollback),
    what was observed, the head node's command and the environment (redacted with the case's key), and the files."""
    s, a = step, attempt
    nodes = list(s.get("nodes") or [])
    debug = ("on for this run only: " + ", ".join(_text(k) for k in (debug_env or {}))) if debug_on else "off"
    env = redact_data(s.get("env"), case_key or None) or {}
    command = redact_data(argv if argv is not None else s.get("argv"), case_key or None) or []
    lines = [
        "# Run sheet: %s / %s — %s" % (_text(case_id), _text(a.get("run")), _text(s.get("name"))),
        "",
        "| | |",
        "|---|---|",
        "| purpose | %s |" % _text(s.get("purpose")),
        "| profile | %s |" % _text(profile),
        "| nodes | %s (head: %s) |" % (_join(nodes, ", "), _text(nodes[0]) if nodes else ""),
        "| input condition | %s |" % _text(s.get("input")),
        "| changed variable | %s |" % (_join(s.get("changed", []), ", ") or "none (baseline)"),
        "| compared with | %s |" % _text((diff or {}).get("summary")),
        "| debug logging | %s |" % debug,
        "| expected | %s |" % _text(s.get("expected")),
        "| observed | %s |" % _text(a.get("summary")).replace("|", "\\|"),
        "| rollback | %s |" % _text(s.get("rollback")),
        "",
        "## Command (head, secrets redacted)",
        "",
        "```",
        _join(command, " "),
        "```",
        "",
        "Environment set by the run: %s" % (" ".join("%s=%s" % (_text(k), _text(v)) for k, v in env.items()) or "(none)"),
        "",
        "## Observed",
        "",
    ]
    ready_in = a.get("time_to_ready_s") or {}
    start = []
    for node, outcome in (a.get("start_outcomes") or {}).items():
        seconds = ready_in.get(node)
        start.append("%s %s%s" % (_text(node), _text(outcome), "" if seconds is None else " in %s s" % _text(seconds)))
    lines.append("- start: " + "; ".join(start))
    lines.append("- classifier: %s" % _text(a.get("classifier_summary")))
    alive_lines = a.get("lines_when_last_alive") or {}
    for e in a.get("after_stop") or []:
        lines.append("- not counted: `%s` (%s, line %s) was logged after the last liveness check (%s lines), while this "
                     "play stopped the server" % (_text(e.get("line")), _text(e.get("node")), _text(e.get("lineno")),
                                                  _text(alive_lines.get(e.get("node"), "?"))))
    error = (" (%s, %s)" % (_text(a.get("error_class")), _text(a.get("component")))) if a.get("error_class") else ""
    lines.append("- stage of this attempt: %s%s; answered by: %s" % (_text(a.get("stage")), error, _text(a.get("component"))))
    lines.append("- request: %s%s" % (_join(a.get("statuses"), ", ") or "not sent",
                                      " — failed after it was ready" if a.get("failed_after_ready") else ""))
    if a.get("task_errors"):
        lines.append("- task errors: %s" % _join(a["task_errors"], "; "))
    checkpoint = a.get("checkpoint")
    if checkpoint:
        kind = "prefix-caching checkpoint" if checkpoint.get("kind") == "prefix_cache" else "expected observation"
        lines.append("- %s: %s" % (kind, _text(checkpoint.get("summary"))))
    repeat = a.get("repeat")
    if repeat:
        lines.append("- second clean run of %s (%s): same stage %s, same error class %s — %s (`repeat.json`)"
                     % (_text(repeat.get("repeats")), _text(repeat.get("step")), "yes" if repeat.get("same_stage") else "NO",
                        "yes" if repeat.get("same_error_class") else "NO", _text(repeat.get("summary"))))
    back = a.get("rollback_of")
    if back:
        lines.append("- rollback of %s (%s, stage %s): the earlier state of %s (stage %s) %s"
                     % (_text(back.get("layer")), _text(back.get("failed_run")), _text(back.get("failed_stage")),
                        _text(back.get("good_run")), _text(back.get("good_stage")),
                        "came back" if a.get("earlier_state_returned") else "did NOT come back"))
    extra = ", `repeat.json`" if repeat else ""
    if checkpoint:
        extra += ", `prefix_cache.json`" if checkpoint.get("kind") == "prefix_cache" else ", `observation.json`"
    lines += ["",
              "Files: `hosts/<host>/command.json`, `hosts/<host>/logs/server.log`, `hosts/<host>/memory.jsonl`, "
              "`hosts/<host>/server.json`,",
              "`stages.json`, `request.json`, `responses/`, `changes.json`, `outcome.json`%s." % extra]
    return "\n".join(lines) + "\n"


# keys of a vllm_server result that stay out of server.json (the classification is the run's, env and argv are in
# command.json, the progress line is the console's, the rest is Ansible's or the async job's)
SERVER_DROP = ("classification", "invocation", "env", "argv", "line", "ansible_job_id", "results_file", "started",
               "finished", "changed", "failed")
DEBUG_NOTE = "one run only; the next run starts without these variables"


def sends(requests, api_url):
    """The head's sends in order (node_plan's ``requests``; one request ``repeat`` times one after the other in the
    same server process): each its request with ``index`` (the repeat, from 1), ``method`` (POST unless it says),
    ``body`` (a POST's only), ``base_url`` (the request's, else the server's ``api_url``), ``concurrency``,
    ``settle`` (the log's settling time), ``max_body_bytes``, ``send_key`` (whether the gateway's key goes with it)
    and ``task_timeout`` (twice its timeout and a minute: the task's own limit)."""
    out = []
    for request in requests or []:
        request = _mapping(request, "a request")
        send = dict(request, method=request.get("method", "POST"), base_url=request.get("base_url") or api_url,
                    concurrency=request.get("concurrency", 1), settle=request.get("settle", 0.3),
                    max_body_bytes=request.get("max_body_bytes", 65536),
                    send_key=_truthy(request.get("send_key", False)),
                    task_timeout=int(_as_float(request.get("timeout")) * 2 + 60))
        if send["method"] != "POST":
            send.pop("body", None)
        out += [dict(send, index=index) for index in range(1, _as_int(request.get("repeat", 1)) + 1)]
    return out


def exchanges(results):
    """What came back from the head's sends (``results``: the loop of api_request over ``sends``, each with its send
    as ``item``), one exchange per send as the close reads them: the request, the answers and the server log's lines
    while it ran (``log_window``, ``log_text``)."""
    out = []
    for res in results or []:
        request = _mapping(res.get("item"), "a send (the result's item)")
        method = request.get("method", "POST")
        window = res.get("log_slice") or {}
        out.append({"label": request.get("label"), "index": request.get("index"), "route": request.get("route"),
                    "method": method, "body": request.get("body") if method == "POST" else None,
                    "request": res.get("request", {}), "ok": res.get("ok", False), "statuses": res.get("statuses", []),
                    "latencies": res.get("latencies", []), "errors": res.get("errors", []),
                    "wall_s": res.get("wall_s"), "responses": res.get("responses", []),
                    "log_window": {"start_offset": window.get("start_offset"), "end_offset": window.get("end_offset")},
                    "log_text": window.get("text", ""), "skipped": res.get("skipped", False)})
    return out


def requests_seen(step, results, memory_before=None, memory_after=None):
    """What the head's requests showed (``results``: api_request's loop over ``sends``; the memory answers of
    vllm_server state=checked around the prefix-caching sequence): ``exchanges``, ``checkpoint`` (what the step's
    checks saw, _judge.step_checkpoint; None without checks or without a send) and the progress ``lines`` (after
    ``<run> ``): per request its statuses, time, concurrency and repeats."""
    step = _mapping(step, "the step")
    seen = exchanges(results)
    checks = list(step.get("checks") or [])
    if "prefix_cache" in checks and seen:
        block = (step.get("prefix") or {}).get("block_size")
        try:
            block = int(block)
        except (TypeError, ValueError):
            raise AttemptCloseError("prefix.block_size must be a number of tokens, got %r" % (block,))
        if block < 1:
            raise AttemptCloseError("prefix.block_size must be at least 1, got %d" % block)
    checkpoint = _judge.step_checkpoint(step, seen, memory_before=memory_before,
                                        memory_after=memory_after) if seen else None
    lines, requests = [], []
    for res in results or []:
        request = res.get("item") or {}
        if not requests or request.get("index") == 1:  # a request's first repeat
            requests.append((request, []))
        requests[-1][1].append(res)
    for request, sent in requests:
        lines.append("%s | %s: %s in %s s (%s at once, %s time(s))" % (
            step.get("name"), request.get("label"), ",".join(str(s) for r in sent for s in r.get("statuses") or []),
            round(sum(_as_float(r.get("wall_s")) for r in sent), 2), request.get("concurrency", 1),
            request.get("repeat", 1)))
    return {"exchanges": seen, "checkpoint": checkpoint, "lines": lines}


def node_report(plan, step, started=None, alive=None, stopped=None, task_error=None, refusal=None, sent=None,
                memory_before=None, memory_after=None):
    """What one node reports to the attempt's close (run_record's ``inputs.reports``; ``plan``: its node_plan): its
    server's answers at the start, after the requests and at the stop (without Ansible's ``invocation``), the failed
    task, the sweep's refusal and, the head's, what its requests showed (``requests_seen`` of ``sent``, api_request's
    loop; nothing when it sent none) with the API and the command it sent them to."""
    plan = _mapping(plan, "the node's plan")
    results = sent.get("results") if isinstance(sent, dict) else None
    seen = requests_seen(step, results, memory_before=memory_before, memory_after=memory_after)
    return {"started": started, "alive": alive,
            "stopped": {k: v for k, v in stopped.items() if k != "invocation"} if isinstance(stopped, dict) else stopped,
            "task_error": task_error, "refusal": refusal, "exchanges": seen["exchanges"],
            "checkpoint": seen["checkpoint"], "api_url": plan.get("api_url"), "argv": plan.get("argv")}


def _kept(result):
    return {k: v for k, v in (result or {}).items() if k not in SERVER_DROP} if isinstance(result, dict) else {}


def host_parts(host, step, is_head=False, rank=-1, argv=None, debug_env=None, secret_env=None, started=None,
               alive=None, stopped=None, task_error=None, leftovers=None, run_uid=None, refusal=None, sweep=None,
               gateway_logs=None, derived=None, base=None, inherit_env=None, log_path=None, host_dir=None,
               collect_env=False):
    """One node's part of the attempt's run, as collect.yml hands it to host_record: ``command`` (command.json: the
    node's place, the command and environment as started, debug logging, the gateway's logs, the minimal command's
    derivation), ``server`` (server.json: vllm_server's answers at start, after the requests and at the stop, the
    sweep's leftovers and live runs, the refusal), ``files`` (the server log, the memory series, the gateway's logs
    on the head), ``gather`` (vLLM's collect_env, once per play: the head of the minimal start) and
    ``collect_env_container`` (the container the server ran in, for collect_env inside its image; None for a process)."""
    step = _mapping(step, "the step")
    debug_env = dict(debug_env or {})
    started_env = (started or {}).get("env") if isinstance(started, dict) else None
    gateway = {}
    if is_head and _truthy(step.get("via_gateway", False)):
        for i, path in enumerate(gateway_logs or [], 1):
            gateway["logs/gateway/%d-%s" % (i, os.path.basename(str(path)))] = path
    minimal = step.get("name") == "minimal"
    command = {
        "host": host,
        "step": step.get("name"),
        "layer": step.get("layer"),
        "role": "head" if is_head else "worker",
        "node_rank": int(rank),
        "nodes": step.get("nodes"),
        "argv": [a if isinstance(a, str) else str(a) for a in argv or []],
        "env_set_by_run": _merged(step.get("env"), debug_env),
        "secret_env_names": list((secret_env or {}).keys()),
        "env": _merged(started_env, step.get("env"), debug_env, secret_env) if started_env else {},
        "inherited_env_names": (started.get("inherited_env_names", inherit_env) if isinstance(started, dict)
                                else inherit_env),
        "debug": {"on": len(debug_env) > 0, "variables": debug_env, "trace_function": "VLLM_TRACE_FUNCTION" in debug_env,
                  "note": DEBUG_NOTE},
        "gateway_logs": gateway,
        "minimal_derivation": (derived or (base or {}).get("derived")) if minimal else None,
    }
    server = {
        "start": _kept(started),
        "after_requests": _kept(alive),
        "stop": _kept(stopped),
        "task_error": task_error,
        "leftovers_cleaned": leftovers,
        "run_uid": run_uid,
        "refusal": refusal,
        "other_live_runs": (sweep or {}).get("live", []) if isinstance(sweep, dict) else [],
        # what ran, with a container runtime (vllm_server's record: the image by id and repo digest, the in-container
        # probe), with how the container was stopped; null for a process
        "container": _ran_container(started, stopped),
    }
    pid = started.get("pid") if isinstance(started, dict) else None
    files = [{"src": log_path, "part": "logs/server.log", "required": pid is not None},
             {"src": "%s/logs/memory.jsonl" % host_dir, "part": "memory.jsonl"}]
    if server["container"]:
        # the runtime's own log with its timestamps, saved when the container was stopped
        files.append({"src": "%s/logs/container.log" % host_dir, "part": "logs/container.log"})
    files += [{"part": part, "src": src} for part, src in gateway.items()]
    return {"command": command, "server": server, "files": files, "gateway_logs": gateway,
            "gather": ["collect_env"] if collect_env and is_head and minimal else [],
            "collect_env_container": ((started.get("container") if isinstance(started, dict) else None) or None)}


def _ran_container(started, stopped):
    ran = started.get("container") if isinstance(started, dict) else None
    if not isinstance(ran, dict):
        return None
    stop = (stopped.get("container") or {}).get("stop") if isinstance(stopped, dict) else None
    return dict(ran, stop=stop if stop is not None else ran.get("stop"))


def _merged(*dicts):
    """Ansible's ``combine``: later keys win."""
    out = {}
    for d in dicts:
        out.update(d or {})
    return out


def _truthy(value):
    """As Ansible's ``bool`` filter reads a flag."""
    if isinstance(value, str):
        return value.strip().lower() in ("yes", "on", "1", "true", "y", "t")
    return bool(value)


# what the head node reports besides its server (the requests and what they showed): read from its report, kept
# out of the reports the verdict reads
HEAD_KEYS = ("exchanges", "checkpoint", "api_url", "argv")


def close(step, run_id, run_path, case_id, reports, identity=None, diff=None, debug=False, debug_env=None,
          profile=None, check_mode=False):
    """The whole decision of an attempt's close, on the controller: what each node of the step reported
    (``reports``: node -> its report, run_record's declared ``inputs.reports``: ``started``, ``alive``, ``stopped``,
    ``task_error``, ``refusal``; the head node's also ``exchanges``, ``checkpoint``, ``api_url``, ``argv``), one
    classification of every node's log together (module_utils/logstage/_logstage.py), the verdict (:func:`judge`), the parts
    with the run sheet (``profile``: its profile cell) and the freeze's status and metadata. Writes nothing. Raises
    AttemptCloseError (a wrong input) or LogStageError (a log that cannot be classified)."""
    nodes = list(step.get("nodes") or [])
    if not nodes:
        raise AttemptCloseError("the step %r names no node" % (step.get("name"),))
    head = nodes[0]
    given = dict((node, (reports or {}).get(node) or None) for node in nodes)
    head_report = given[head] or {}
    reports = dict((node, dict((k, v) for k, v in r.items() if k not in HEAD_KEYS) if isinstance(r, dict) else r)
                   for node, r in given.items())
    refusals = dict((node, (r or {}).get("refusal")) for node, r in reports.items())
    exchanges = head_report.get("exchanges") or []
    checkpoint = head_report.get("checkpoint")
    was_refused = refused(nodes, refusals)
    stages = {}
    if not (check_mode or was_refused):
        stages = classify_files(log_paths(run_path, nodes), nodes=nodes, until=log_until(nodes, reports))
    attempt = judge(step, run_id, run_path, case_id, stages, reports, exchanges, checkpoint, identity=identity,
                    diff=diff, debug=debug, check_mode=check_mode)
    written = []
    if not check_mode:
        try:
            key = case_key_of(run_path)
        except (OSError, ValueError) as exc:
            raise AttemptCloseError("the case key of %s cannot be read: %s" % (run_path, exc)) from exc
        written = parts(step, attempt, run_path, stages, exchanges, api_url=head_report.get("api_url"),
                        identity=identity, diff=diff, was_refused=was_refused, case_key=key)
        written.append({"part": "notes.md", "content": notes(
            step, attempt, case_id, profile, diff=diff, debug_on=debug, debug_env=debug_env,
            argv=head_report.get("argv"), case_key=key)})
    return dict(freeze_args(step, attempt, case_id), parts=written, refused=was_refused, stages=stages,
                attempt=attempt, step=kept_step(step))
