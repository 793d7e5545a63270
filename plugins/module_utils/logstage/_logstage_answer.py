"""The answer of the log_stage classifier, built from the scans of its files (``_logstage._Scan``).

The root cause is the first candidate error of the first non-empty tier (failures, error lines, victims,
consequences, a 5xx access line, a cut traceback), ordered by time across files; every other error is a
consequence.  Beside it: how far each file got (``timeline``), the OOM reading, whether the cross-file order can
be trusted, what was printed after a file's stop cutoff (``after_stop``) and the one-line summary.  The keys are
the contract documented in ``docs/classifier.md`` and the ``log_stage`` module's RETURN.

Standard library only; imports on Python 3.9.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import re

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_rules import (
    ACCESS_ERROR, BASIS_FRAMES, BASIS_INFERRED, BASIS_MARKERS, CONF_HIGH, CONF_MEDIUM, CONSEQUENCE, CUT_TRACEBACK,
    DIAGNOSTIC, ERROR_LINE, ERROR_WORDS, FAILURE, HEADER, STAGES, UNKNOWN_MISSING, UNKNOWN_NEXT, VICTIM,
    WEAK_CONSEQUENCE)
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_parse import STOP_RX, cut

MAX_AFTER_STOP = 30                 # errors kept per answer from after a file's ``until`` cutoff
_MAX_CONSEQUENCES = 30
_TIE_SECONDS = 2.0                  # vLLM timestamps have one-second resolution


def _public_error(c):
    if c is None:
        return None
    out = {
        "line": c["line"], "file": c["file"], "lineno": c["lineno"], "timestamp": c["timestamp"],
        "process": c["process"], "node": c["node"], "stage": c["stage"], "error_class": c["cls"],
        "kind": KIND_NAME.get(c["kind"], c["kind"]), "stage_basis": c.get("basis"),
        "confidence": c.get("conf"), "cause_stage": c.get("cause"),
    }
    if c.get("pid"):
        out["pid"] = int(c["pid"]) if str(c["pid"]).isdigit() else c["pid"]
    if c.get("hint"):
        out["hint"] = c["hint"]
    if c.get("context") and len(c["context"]) > 1:
        out["context"] = list(c["context"])
    return out


# the kind of an error as the answer names it
KIND_NAME = {FAILURE: "failure", ERROR_LINE: "error_line", VICTIM: "victim", CONSEQUENCE: "consequence",
             WEAK_CONSEQUENCE: "consequence", DIAGNOSTIC: "consequence", HEADER: "failure",
             ACCESS_ERROR: "error_line", CUT_TRACEBACK: "error_line", ERROR_WORDS: "error_line"}


def _sort_key(c):
    t = c["tkey"]
    return (0 if t is not None else 1, t if t is not None else 0.0, 1 if c.get("copy") else 0, c["index"], c["lineno"])


_TEE_PROC_RX = re.compile(r"^default\d+$")


def _share_times(scans):
    """An error line without any time in its file (a rank's plain stderr) takes the time of the same line in a
    file that has one - torchrun's ``--tee`` copy of the rank's output (``[default<N>]:``), bounded by torchrun's
    own timestamped lines - so that the rank's own file, given first, names the error. Where the node names carry
    a host (``<host>/rank<N>``), only a copy on the same host lends its time: the same line on another host is
    another event."""
    def host(sc):
        node = str(sc.node)
        return node.split("/", 1)[0] if "/" in node else None

    timed = {}
    for sc in scans:
        for c in sc.cands:
            if c["tkey"] is not None and (host(sc) is not None or _TEE_PROC_RX.match(str(c["process"] or ""))):
                timed.setdefault((host(sc), c["line"]), c)
    for sc in scans:
        for c in sc.cands:
            if c["tkey"] is None:
                other = timed.get((host(sc), c["line"]))
                if other is not None:
                    c["tkey"] = other["tkey"]
                    c["tkey_after"] = other.get("tkey_after") or not other["tkey_own"]
                    other["copy"] = True  # at the same time, the rank's own file names the error


# the kinds that can be the root cause, tier by tier: the first tier with a candidate holds it
_ROOT_TIERS = (FAILURE, ERROR_LINE, VICTIM, CONSEQUENCE, DIAGNOSTIC, ACCESS_ERROR, CUT_TRACEBACK, ERROR_WORDS)


_MESSAGE_RX = re.compile(r"(?:Error|Exception|Exit|Failure|Failed)(?:\([\w.]*\))?: (?P<msg>.{24,})$")


def _mark_relays(cands):
    """An error line that repeats, later in its file, the message of an exception already there (an application's
    ``logger.error(f"Error: {e}")`` around vLLM's call) is that exception relayed, not an error of its own: it is
    marked ``relay`` and never taken as the root cause."""
    seen = []
    for c in sorted(cands, key=lambda c: c["lineno"]):
        if c["kind"] == ERROR_LINE and any(m in c["line"] for m in seen):
            c["relay"] = True
        m = _MESSAGE_RX.search(c["line"].rstrip())
        if m and c["kind"] != ERROR_LINE:
            seen.append(m.group("msg").strip())


def _first(cands, kind):
    """The candidate of ``kind`` on the earliest line of its file, or None."""
    mine = [c for c in cands if c["kind"] == kind and not c.get("relay")]
    return min(mine, key=lambda c: c["lineno"]) if mine else None


_LOCAL_CLOCK = {"c10": "vllm"}      # timestamp kinds written on the same clock as vLLM's own records
_ENGINE_START_FAILED_RX = re.compile(r"Engine core initialization failed|EngineCore failed to start")
_INCIDENT_LINES = 40                # without timestamps: records this close to the error in its file are its incident


_EXCEPTION_LINE_RX = re.compile(r"^(?:\w+\.)*\w*(?:Error|Exception)\b")
# vLLM's and Ray's reports of another process's failure (the signatures' wrappers of the engine core, the workers,
# Ray's actors); an orchestrator's report of a container (a probe, a back-off) keeps the general advice
_PROCESS_WRAPPER_RX = re.compile(r"Engine core initialization failed|EngineCore (?:failed|encountered)|Worker failed "
                                 r"with error|WorkerProc (?:initialization )?failed|ActorDiedError|RayActorError|"
                                 r"EngineDeadError|died unexpectedly|Engine loop has died|RayTaskError")


def _unknown_kind(root):
    """What an ``unknown`` root cause is, for what its answer asks next (UNKNOWN_NEXT): ``wrapper`` (vLLM's or Ray's
    report of another process's failure), ``bare`` (a Python exception line with no traceback above it), else None."""
    if _PROCESS_WRAPPER_RX.search(root["line"]) is not None:
        return "wrapper"
    context = root.get("context") or ()
    if root["kind"] == FAILURE and _EXCEPTION_LINE_RX.match(root["line"].strip()) is not None and \
            not any(line.startswith("Traceback") or line.lstrip().startswith("File ") for line in context):
        return "bare"
    return None


def _placed_by_neighbour(root, cands):
    """A root cause that shows no stage of its own takes one from a neighbour in its file (confidence ``medium``):

    1. its own traceback, printed cut just after it (``logger.exception``, asyncio's "Exception in callback"): at most
       3 lines below, that traceback's stage and basis;
    2. else another record of the same incident that proves its stage by frames or the log's markers (confidence
       ``high``) - the API server's wrapper that saw the engine die while it served (``AsyncLLM output_handler
       failed``, a request's ``EngineDeadError``), a worker's traceback through ``load_model``: such a record reports
       where its process was when the failure reached it, so the failure happened in that stage (basis
       ``inferred``). The same incident: each record on a timestamp of its own within the timestamps' resolution
       (``_TIE_SECONDS``), or, where neither has any timestamp, at most ``_INCIDENT_LINES`` lines after the error;
       the nearest wins."""
    mine = [c for c in cands if c is not root and c["index"] == root["index"] and c["stage"] not in ("unknown", None)]
    cut_tb = [c for c in mine if c["kind"] == CUT_TRACEBACK and 0 < c["lineno"] - root["lineno"] <= 3]
    if cut_tb:
        root.update(stage=cut_tb[0]["stage"], basis=cut_tb[0]["basis"], conf=CONF_MEDIUM, srank=cut_tb[0]["srank"])
        return

    def same_incident(c):
        # (round 85) ... or the dead engine's report to a request (EngineDeadError, V0's AsyncEngineDeadError: the
        # client raises it only for an engine that had started; one that dies starting is "Engine core
        # initialization failed"), placed at request by its row where no marker says otherwise
        served = c["kind"] in (CONSEQUENCE, WEAK_CONSEQUENCE) and c["cls"] == "engine_dead" and c["stage"] == "request"
        if not served and (c.get("conf") != CONF_HIGH or c.get("basis") not in (BASIS_FRAMES, BASIS_MARKERS)):
            return False
        near = c["lineno"] - root["lineno"]
        # (round 35: a wrapper reporting the engine's death reports a failure that came before it, whatever the
        # order in which two processes' output reached the file: the C++ runtime's abort of the engine core is often
        # flushed after the API server's EngineDeadError - a bare line there borrows the wrapper's second)
        before = c["kind"] in (CONSEQUENCE, WEAK_CONSEQUENCE) and c["cls"] == "engine_dead" and \
            0 < -near <= _INCIDENT_LINES
        if root["tkey"] is not None and c["tkey"] is not None:
            # each on its own timestamp: a line that borrows the time of a record above it may be another story
            # (round 83) ... or the dead engine's wrapper just above, whose time is only borrowed from the line under it
            # (a C++ runtime's abort stamped by c10's logger under a traceback that carries no time)
            return (c["tkey_own"] and (root["tkey_own"] or before) and abs(c["tkey"] - root["tkey"]) <= _TIE_SECONDS) or \
                (before and not c["tkey_own"])
        if root["tkey"] is not None or c["tkey"] is not None:
            # (round 83) one of the two without a time: only the dead engine's wrapper just above still tells
            return before
        return 0 < near <= _INCIDENT_LINES or before
    found = [c for c in mine if same_incident(c)]
    if found:
        c = min(found, key=lambda c: abs(c["lineno"] - root["lineno"]))
        root.update(stage=c["stage"], basis=BASIS_INFERRED, conf=CONF_MEDIUM, srank=c["srank"])
        return
    # 3. (round 81) a worker's answer to the executor's RPC ("Worker failed with error '...'", multiproc_executor.py
    #    collective_rpc) and, after it, the engine core's start-up failing ("Engine core initialization failed"): a
    #    worker process sets its device up and loads the weights in its own constructor (WorkerProc.__init__, 0.8 ->
    #    0.3x) and reports those failures as "WorkerProc failed to start"; the RPCs of the start-up are the engine's
    #    KV-cache and warm-up steps (determine_available_memory, initialize_from_config, compile_or_warm_up_model).
    #    The engine core's own record of it ("EngineCore failed to start.", core.py run_engine_core) heads the traceback
    #    that ends in the RPC's error, the API server's wrapper comes after it: either, in the same file
    if "Worker failed with error " in root["line"] and (
            any(_ENGINE_START_FAILED_RX.search(line) for line in root.get("context") or ()) or
            any(c["index"] == root["index"] and c is not root and _ENGINE_START_FAILED_RX.search(c["line"]) for c in cands)):
        root.update(stage="engine_init", basis=BASIS_INFERRED, conf=CONF_MEDIUM, srank=STAGES.index("engine_init"))


def build_answer(scans):
    _share_times(scans)
    for sc in scans:
        _mark_relays(sc.cands)
    root = None
    firsts = []
    for kind in _ROOT_TIERS:
        firsts = [c for c in (_first(sc.cands, kind) for sc in scans) if c is not None]
        if firsts:
            root = min(firsts, key=_sort_key)
            break
    all_cands = sorted((c for sc in scans for c in sc.cands), key=_sort_key)

    # uncertainty of the cross-file order
    why = []
    if root is not None and len([sc for sc in scans if sc.cands]) > 1:
        # a copy of the root's own line (torchrun's tee of the rank's output) is no rival
        rivals = [c for c in firsts if c is not root and c["index"] != root["index"] and c["line"] != root["line"]]
        if root["tkey"] is None:
            why.append("the first error has no timestamp; files were taken in the order given")
        elif root.get("tkey_after"):
            why.append("the first error line has no timestamp of its own nor one before it in its file; the first "
                       "timestamp after it (a time it happened before) was used")
        elif not root["tkey_own"]:
            why.append("the first error line has no timestamp of its own; the last timestamp before it was used")
        for c in rivals:
            if c["tkey"] is None:
                why.append("%s: its first error has no timestamp" % c["node"])
            elif root["tkey"] is not None and abs(c["tkey"] - root["tkey"]) <= _TIE_SECONDS:
                why.append("%s failed within %.0f s of %s (log timestamps have one-second resolution)"
                           % (c["node"], _TIE_SECONDS, root["node"]))
        sources = set(s for sc in scans if sc.cands for s in sc.ts_sources)
        # (round 83) c10's logger and vLLM's formatter both write the host's local time without a year: one kind
        if len(set(_LOCAL_CLOCK.get(s, s)[:7] for s in sources if s)) > 1:
            why.append("the files carry timestamps of different kinds (%s); clocks or time zones may differ"
                       % ", ".join(sorted(s for s in sources if s)))
    uncertain = bool(why)

    if root is not None and root["stage"] == "unknown":
        _placed_by_neighbour(root, all_cands)
    reached = set(r for sc in scans for r in sc.reached)
    if root is not None and root["srank"] >= 0:
        reached.add(root["srank"])
    stages_reached = [STAGES[r] for r in sorted(reached) if r >= 0]
    last_rank = max([sc.ctx for sc in scans] + [-1])
    last_stage = STAGES[last_rank] if last_rank >= 0 else None

    oom_c = next((c for c in all_cands if c["oom"]), None)
    oom = {"occurred": oom_c is not None, "stage": oom_c["stage"] if oom_c else None}
    if oom_c is not None:
        oom["line"] = oom_c["line"]
        oom["memory_sizing"] = oom_c["stage"] in ("engine_init", "request")
        if oom_c["stage"] in ("environment", "config", "cuda_init", "distributed_init"):
            oom["note"] = "out of memory before the weights were loaded: memory is held elsewhere, not a sizing problem"
        elif oom_c["stage"] == "weight_loading":
            oom["note"] = "the weights do not fit in the memory left for them"
        elif oom_c["stage"] in ("engine_init", "request"):
            oom["note"] = "weights fit; profiling, KV cache, CUDA graphs or a batch did not (a memory-sizing problem)"
        else:
            oom["note"] = "the log does not show in which stage the memory ran out"

    consequences = []
    for c in all_cands:
        if c is root:
            continue
        if len(consequences) >= _MAX_CONSEQUENCES:
            break
        consequences.append({"file": c["file"], "node": c["node"], "lineno": c["lineno"], "line": c["line"],
                             "timestamp": c["timestamp"], "kind": KIND_NAME.get(c["kind"], c["kind"]),
                             "error_class": c["cls"], "stage": c["stage"]})

    timeline = []
    for sc in scans:
        own = next((c for c in (_first(sc.cands, kind) for kind in _ROOT_TIERS) if c is not None), None)
        timeline.append({
            "node": sc.node, "file": sc.file, "lines": sc.lines,
            "first_timestamp": sc.first_ts, "last_timestamp": sc.last_ts,
            "stage_reached": STAGES[sc.ctx] if sc.ctx >= 0 else None,
            "stage_since": sc.ctx_since,
            "ready": sc.ready, "ready_timestamp": sc.ready_ts,
            "first_error": _public_error(own),
            "stage_marks": list(sc.stage_marks),
            "recovered_errors": [_public_error(c) for c in sc.recovered],
            "hints": list(sc.hints),
            "until": sc.until,
        })

    after_stop = sorted((c for sc in scans for c in sc.after_stop),
                        key=lambda c: (0 if c["tkey"] is not None else 1, c["tkey"] or 0.0, c["index"], c["lineno"]))
    after_stop = [dict((k, v) for k, v in c.items() if k not in ("tkey", "index")) for c in after_stop]

    ans = {
        "stage": root["stage"] if root else "none",
        "stage_basis": root["basis"] if root else None,
        "confidence": root.get("conf") if root else None,
        "cause_stage": root.get("cause") if root else None,
        "error_class": root["cls"] if root else None,
        "first_error": _public_error(root),
        "oom": oom,
        "stages_reached": stages_reached,
        "last_stage": last_stage,
        "consequences": consequences,
        "timeline": timeline,
        "order_uncertain": uncertain,
        "order_uncertain_why": "; ".join(why) if why else None,
        "after_stop": after_stop[:MAX_AFTER_STOP],
    }
    if root is not None:
        ans["summary"] = "%s failed (%s) on %s%s: %s" % (
            root["stage"], root["cls"], root["node"],
            " at %s" % root["timestamp"] if root["timestamp"] else "", cut(root["line"], 200))
        if root["stage"] == "unknown":
            ans["summary"] += "; " + UNKNOWN_MISSING + UNKNOWN_NEXT.get(_unknown_kind(root), "")
    else:
        ready = [sc for sc in scans if sc.ready]
        if ready:
            ans["summary"] = "no failure found; API ready since %s" % (ready[0].ready_ts or "start")
        elif last_stage is not None:
            since = next(sc.ctx_since for sc in scans if sc.ctx == last_rank)
            open_on, done_on = _comm_nodes(scans)
            if done_on and not open_on:
                # every NCCL communicator that was set up was destroyed again: the program ended its
                # distributed work (a collective check, or a clean shutdown before readiness)
                ans["summary"] = ("no failure found; last stage %s: NCCL communicators initialised and destroyed "
                                  "again on %s" % (last_stage, ", ".join(done_on)))
            else:
                ans["summary"] = "no failure found; stuck in %s%s" % (last_stage, " since %s" % since if since else "")
                if open_on:
                    ans["summary"] += "; NCCL communicator init started and never completed on %s" % ", ".join(open_on)
        else:
            ans["summary"] = "no failure found and no vLLM stage marker seen"
        stop = _external_stop(all_cands)
        if stop is not None:
            ans["summary"] += "; stopped from outside by signal %s (%s line %d)" % stop
    if after_stop:
        ans["summary"] += "; %d error line(s) after the stop (shutdown noise, see after_stop)" % len(after_stop)
    return ans


def _comm_nodes(scans):
    """Nodes with an NCCL communicator whose init never completed, and the nodes whose communicators were all
    initialised and destroyed again (empty unless that holds for every communicator of every file); each list
    in file order, without repeats."""
    open_on, done_on = [], []
    all_done = True
    for sc in scans:
        states = set(sc.comms.values())
        if "started" in states and sc.node not in open_on:
            open_on.append(sc.node)
        if states - {"destroyed"}:
            all_done = False
        elif states and sc.node not in done_on:
            done_on.append(sc.node)
    return open_on, done_on if all_done else []


def _external_stop(cands):
    """(signal, node, lineno) of the first line saying that the launcher itself was stopped by a signal."""
    for c in cands:
        if c["kind"] == WEAK_CONSEQUENCE:
            m = STOP_RX.search(c["line"])
            if m is not None:
                return (m.group(1) or m.group(2), c["node"], c["lineno"])
    return None
