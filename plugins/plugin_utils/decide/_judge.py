"""The method's judgement of one attempt, in one place (the ``repro.vllm.attempt_*`` filters front it).

- ``metric_total``: one counter of vLLM's Prometheus ``/metrics`` text, summed over its label sets.
- ``prefix_cache_evidence``: the prefix-caching checkpoint from three ``/metrics`` snapshots, the answers and the
  server log lines written during the requests (vLLM's ``Prefix cache hit rate`` stats line).
- ``memory_compare``: memory of the server's process group (and GPUs) before and after a checkpoint.
- ``layer_observation``: what came back against a layer's expected observation (``same_text``,
  ``completion_tokens``, ``prompt_over``; ``tool_call`` and ``json_schema``: the fields of a tool call or of a
  structured-output answer are there and have the shape the request asked for - never what they mean).
- ``step_checkpoint``: which of the two a step's checks ask for (none without checks).
- ``answered_by``: which part wrote one HTTP answer that came through a gateway: the proxy's own error page
  (``gateway``) or the server's JSON answer passed through (``server``).
- ``attempt_verdict``: ok or failed, the stage, the error class (the classifier's vocabulary plus ``http_error``)
  and the ``component`` (``server``, ``gateway``, ``client``) that answered or failed.
- ``reproduction_finding``: the play's closing classification (a ladder layer's status, its skip rule and the
  rollback's row are the ladder's decisions: ``_ladder.py``).
- ``repeat_target`` and ``repeat_comparison``: which attempt a second clean run repeats, and whether the repeat
  ended at the same stage with the same error class (``repeat.json``).

Standard library only; every input is the plain data the modules return (``vllm_server``, ``api_request``,
``log_stage``), so the same code judges a live attempt and a replayed record.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import json
import math
import os
import re

from ansible_collections.repro.vllm.plugins.module_utils.ladder import _ladder

# The classifier's error classes (docs/architecture.md) plus the one the verdict adds: a non-2xx answer while no
# server log shows a failure.
ERROR_CLASSES = ("oom", "cuda_error", "nccl_error", "driver_mismatch", "config_error", "timeout", "missing_file",
                 "import_error", "port_in_use", "illegal_memory_access", "engine_dead", "other",
                 "container_error", "image_pull", "scheduling", "http_error")
COMPONENTS = ("server", "gateway", "client")
NO_FAILURE = ("none", None, "")

# Prometheus text exposition: ``name{label="v",...} value [timestamp]`` or ``name value [timestamp]``.
_SAMPLE_RX = re.compile(r'^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?P<labels>\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?'
                        r'\s+(?P<value>\S+)(?:\s+-?\d+)?\s*$')
_HIT_RATE_RX = re.compile(r"Prefix cache hit rate: ([0-9.]+)%")
_TIMEOUT_RX = re.compile(r"timed? ?out", re.I)

# A reverse proxy's own error page: nginx (and its forks) sign the page's footer with their name, and every common
# proxy titles the page with the status ("<title>504 Gateway Time-out</title>"). vLLM answers every route with JSON.
_PROXY_SIGNATURE_RX = re.compile(r"<center>\s*((?:nginx|openresty|tengine)[^<]*)</center>", re.I)
_PAGE_TITLE_RX = re.compile(r"<title>\s*(\d{3}\b[^<]*)</title>", re.I)
_PROXY_STATUSES = (502, 503, 504)

PREFIX_QUERIES = "vllm:prefix_cache_queries_total"
PREFIX_HITS = "vllm:prefix_cache_hits_total"


def metric_total(text, name):
    """Sum of every sample of metric ``name`` in Prometheus text; None when the metric is not there at all."""
    if not text:
        return None
    total = None
    for line in str(text).splitlines():
        if not line.startswith(name):
            continue
        m = _SAMPLE_RX.match(line.strip())
        if not m or m.group("name") != name:
            continue
        try:
            value = float(m.group("value"))
        except ValueError:
            continue
        if math.isnan(value):
            continue
        total = (total or 0.0) + value
    return total


def _first_text(exchanges, label):
    for ex in exchanges or []:
        if ex.get("label") == label:
            for r in ex.get("responses") or []:
                if r.get("text"):
                    return r["text"]
    return None


def _bodies(exchanges, label=None, prefix=None):
    out = []
    for ex in exchanges or []:
        lab = ex.get("label") or ""
        if (label is not None and lab != label) or (prefix is not None and not lab.startswith(prefix)):
            continue
        for r in ex.get("responses") or []:
            out.append(r.get("body") if isinstance(r.get("body"), dict) else {})
    return out


def _choice(body):
    choices = body.get("choices") or [{}]
    return choices[0] if isinstance(choices[0], dict) else {}


def _text_of(body):
    ch = _choice(body)
    if "text" in ch:
        return ch.get("text")
    msg = ch.get("message") or {}
    return msg.get("content") if isinstance(msg, dict) else None


def _usage(body, key):
    usage = body.get("usage") or {}
    value = usage.get(key) if isinstance(usage, dict) else None
    return int(value) if isinstance(value, (int, float)) else None


def _delta(after, before):
    if after is None or before is None:
        return None
    return int(round(after - before))


def _mib(value):
    return None if value is None else int(round(value / 1048576.0))


def _memory_last(checked):
    mem = (checked or {}).get("memory") or {}
    return mem.get("last") or {}


def memory_compare(before, after, rss_growth_limit_mib=512, gpu_growth_limit_mib=512):
    """Memory of the server before and after (``vllm_server`` ``state=checked`` answers or their ``memory.last``).

    ``flat`` is true when neither the process group's RSS nor any GPU's used memory grew by more than its limit
    (vLLM sizes the KV cache at start; serving should not grow either). None when a sample is missing.
    """
    b = before if isinstance(before, dict) and "rss_bytes" in before else _memory_last(before)
    a = after if isinstance(after, dict) and "rss_bytes" in after else _memory_last(after)
    rss_b, rss_a = b.get("rss_bytes"), a.get("rss_bytes")
    out = {"before_rss_bytes": rss_b, "after_rss_bytes": rss_a, "rss_delta_bytes": None, "gpus": [],
           "before_gpus": b.get("gpus"), "after_gpus": a.get("gpus"), "flat": None,
           "limits_mib": {"rss": rss_growth_limit_mib, "gpu": gpu_growth_limit_mib}, "summary": "memory not sampled"}
    if rss_b is None or rss_a is None:
        return out
    out["rss_delta_bytes"] = int(rss_a) - int(rss_b)
    grew = []
    if out["rss_delta_bytes"] > rss_growth_limit_mib * 1048576:
        grew.append("RSS +%d MiB" % _mib(out["rss_delta_bytes"]))
    gb = dict((str(g.get("index")), g.get("memory_used_mib")) for g in (b.get("gpus") or []))
    for g in a.get("gpus") or []:
        idx = str(g.get("index"))
        used_a, used_b = g.get("memory_used_mib"), gb.get(idx)
        delta = None if used_a is None or used_b is None else int(used_a) - int(used_b)
        out["gpus"].append({"index": idx, "before_mib": used_b, "after_mib": used_a, "delta_mib": delta})
        if delta is not None and delta > gpu_growth_limit_mib:
            grew.append("GPU %s +%d MiB" % (idx, delta))
    out["flat"] = not grew
    out["summary"] = "RSS %d -> %d MiB%s; %s" % (
        _mib(rss_b), _mib(rss_a),
        "".join("; GPU %s %s -> %s MiB" % (g["index"], g["before_mib"], g["after_mib"]) for g in out["gpus"]),
        "flat" if not grew else "GREW: " + ", ".join(grew))
    return out


def prefix_cache_evidence(exchanges, block_size, memory_before=None, memory_after=None):
    """The prefix-caching checkpoint from what the attempt exchanged with the server.

    ``exchanges`` are the attempt's exchanges (``label``: ``metrics-before``, ``request`` (the fixed request sent
    twice), ``metrics-repeat``, ``shared-prefix-a``/``-b``, ``metrics-after``; each with ``responses`` and
    ``log_text``). vLLM counts prefix-cache queries and hits in tokens and caches whole blocks only, so a repeated
    prompt shorter than one block never hits; two prompts sharing at least one block must hit at least one block.
    """
    block = int(block_size)
    snaps = {}
    for key, label in (("before", "metrics-before"), ("after_repeat", "metrics-repeat"),
                       ("after_shared_prefix", "metrics-after")):
        text = _first_text(exchanges, label)
        snaps[key] = {"queries": metric_total(text, PREFIX_QUERIES), "hits": metric_total(text, PREFIX_HITS),
                      "exported": text is not None}
    fixed = _bodies(exchanges, label="request")
    shared = _bodies(exchanges, prefix="shared-prefix-")
    fixed_tokens = _usage(fixed[0], "prompt_tokens") if fixed else None
    shared_tokens = _usage(shared[0], "prompt_tokens") if shared else None
    texts = [_text_of(b) for b in fixed]
    same_text = len(texts) >= 2 and len(set(texts)) == 1
    repeat_hits = _delta(snaps["after_repeat"]["hits"], snaps["before"]["hits"])
    shared_hits = _delta(snaps["after_shared_prefix"]["hits"], snaps["after_repeat"]["hits"])
    log_text = "\n".join(ex.get("log_text") or "" for ex in exchanges or [])
    rate_lines = [ln for ln in log_text.splitlines() if _HIT_RATE_RX.search(ln)]
    rates = [float(_HIT_RATE_RX.search(ln).group(1)) for ln in rate_lines]
    short = fixed_tokens is not None and fixed_tokens < block
    counters = snaps["before"]["hits"] is not None
    reasons = []
    if not same_text:
        reasons.append("the repeated request did not give the same text twice" if len(texts) >= 2
                       else "the repeated request did not answer twice")
    if not counters:
        reasons.append("/metrics has no %s counter" % PREFIX_HITS)
    else:
        if shared_hits is None or shared_hits < block:
            reasons.append("the shared prefix hit %s tokens, less than one block of %d" % (shared_hits, block))
        if not short and (repeat_hits is None or repeat_hits < block):
            reasons.append("the repeated request (%s tokens) hit %s tokens, less than one block of %d"
                           % (fixed_tokens, repeat_hits, block))
    memory = memory_compare(memory_before, memory_after)
    if memory["flat"] is False:
        reasons.append("memory grew: %s" % memory["summary"])
    met = not reasons
    summary = ("repeated request: %s of %s prompt tokens from the cache%s, same text %s; shared prefix: %s of %s "
               "tokens from the cache (block %d); log hit rate %s; %s" % (
                   repeat_hits, fixed_tokens, " (shorter than one block)" if short else "", same_text, shared_hits,
                   shared_tokens, block, ("%s%%" % rates[-1]) if rates else "not logged", memory["summary"]))
    return {
        "kind": "prefix_cache",
        "block_size": block,
        "counters": dict((k, {"queries": v["queries"], "hits": v["hits"]}) for k, v in snaps.items()),
        "repeat": {"prompt_tokens": fixed_tokens, "hit_tokens": repeat_hits, "same_text": same_text,
                   "note": ("the fixed prompt has %s tokens, less than one block of %d: it cannot hit the cache"
                            % (fixed_tokens, block)) if short else "the fixed prompt spans at least one block"},
        "shared_prefix": {"prompt_tokens": shared_tokens, "hit_tokens": shared_hits},
        "log_hit_rate_percent": rates[-1] if rates else None,
        "log_hit_rate_line": rate_lines[-1] if rate_lines else None,
        "memory": memory,
        "expectation_met": met,
        "reasons": reasons,
        "summary": summary,
    }


_JSON_TYPES = {"object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,), "null": (type(None),),
               "integer": (int,), "number": (int, float)}


def schema_shape_errors(value, schema, path="$"):
    """Where ``value`` does not have the shape ``schema`` (a JSON schema) asks for: ``type``, ``required``,
    ``properties``, ``additionalProperties: false``, ``items``, ``enum``. Nothing about what the values mean; keywords
    outside these are not checked. Returns a list of readable errors (empty: the shape fits)."""
    if not isinstance(schema, dict):
        return []
    errors = []
    want = schema.get("type")
    types = want if isinstance(want, list) else [want] if want else []
    if types:
        fits = any(isinstance(value, _JSON_TYPES.get(t, ())) and not (t in ("integer", "number") and isinstance(
            value, bool)) for t in types)
        if not fits:
            return ["%s is %s, not %s" % (path, type(value).__name__, "/".join(str(t) for t in types))]
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s is not one of the enum values" % path)
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key in schema.get("required") or []:
            if key not in value:
                errors.append("%s has no required field %r" % (path, key))
        if schema.get("additionalProperties") is False:
            errors.extend("%s has a field the schema does not allow: %r" % (path, k) for k in value if k not in props)
        for key, sub in props.items():
            if key in value:
                errors.extend(schema_shape_errors(value[key], sub, "%s.%s" % (path, key)))
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errors.extend(schema_shape_errors(item, schema["items"], "%s[%d]" % (path, i)))
    return errors


def _loads(text):
    try:
        return json.loads(text), None
    except (TypeError, ValueError) as exc:
        return None, "not JSON (%s)" % exc


def tool_call_evidence(exchanges, label="request"):
    """The tool calls of the answers to a chat request with ``tools``: every 2xx answer must carry
    ``choices[0].message.tool_calls``, each with an ``id``, ``type`` function, a ``function.name`` among the request's
    tools (the named one when ``tool_choice`` names a function) and ``function.arguments`` a JSON object of the
    shape of that tool's ``parameters``. Returns ``{answers, calls, problems, ok}``."""
    calls, problems, answers = [], [], 0
    for ex in exchanges or []:
        if ex.get("label") != label:
            continue
        body = ex.get("body") if isinstance(ex.get("body"), dict) else {}
        tools = dict(((t.get("function") or {}).get("name"), (t.get("function") or {}).get("parameters"))
                     for t in body.get("tools") or [] if isinstance(t, dict))
        choice = body.get("tool_choice")
        forced = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
        if not tools:
            problems.append("%s: the request has no tools" % label)
        for r in ex.get("responses") or []:
            status = r.get("status")
            if status is None or not 200 <= int(status) < 300:
                continue
            answers += 1
            msg = _choice(r.get("body") if isinstance(r.get("body"), dict) else {}).get("message") or {}
            got = msg.get("tool_calls") if isinstance(msg, dict) else None
            if not got:
                problems.append("%s: a %s answer has no message.tool_calls (content: %r)"
                                % (label, status, (msg.get("content") if isinstance(msg, dict) else None)))
                continue
            for call in got:
                fn = (call or {}).get("function") or {}
                name, args = fn.get("name"), fn.get("arguments")
                parsed, err = _loads(args) if isinstance(args, str) else (args, None)
                shape = err and [err] or schema_shape_errors(parsed, tools.get(name) or {"type": "object"})
                entry = {"id": call.get("id"), "type": call.get("type"), "name": name, "arguments": args,
                         "shape_errors": shape}
                calls.append(entry)
                if not call.get("id") or call.get("type") != "function":
                    problems.append("%s: a tool call without id or type function" % label)
                if name not in tools:
                    problems.append("%s: tool call to %r, which the request does not define" % (label, name))
                elif forced and name != forced:
                    problems.append("%s: tool call to %r, but tool_choice named %r" % (label, name, forced))
                problems.extend("%s: %s arguments: %s" % (label, name, e) for e in shape)
    if answers == 0:
        problems.append("%s: no 2xx answer" % label)
    return {"answers": answers, "calls": calls, "problems": problems, "ok": not problems}


def json_schema_evidence(exchanges, label="structured_output"):
    """The answers to a structured-output request (``response_format`` ``json_schema``): every 2xx answer's
    ``message.content`` (or ``text``) must be JSON of the schema's shape. Returns ``{answers, documents, problems,
    ok}``."""
    documents, problems, answers = [], [], 0
    for ex in exchanges or []:
        if ex.get("label") != label:
            continue
        body = ex.get("body") if isinstance(ex.get("body"), dict) else {}
        rf = body.get("response_format") or {}
        schema = (rf.get("json_schema") or {}).get("schema") if isinstance(rf, dict) else None
        if schema is None:
            schema = ((body.get("structured_outputs") or {}).get("json") if isinstance(
                body.get("structured_outputs"), dict) else None)
        if not isinstance(schema, dict):
            problems.append("%s: the request has no JSON schema (response_format.json_schema.schema)" % label)
            schema = {}
        for r in ex.get("responses") or []:
            status = r.get("status")
            if status is None or not 200 <= int(status) < 300:
                continue
            answers += 1
            rbody = r.get("body") if isinstance(r.get("body"), dict) else {}
            text = _text_of(rbody)
            parsed, err = _loads(text)
            shape = [err] if err else schema_shape_errors(parsed, schema)
            documents.append({"content": text, "finish_reason": _choice(rbody).get("finish_reason"),
                              "shape_errors": shape})
            problems.extend("%s: content %s" % (label, e) for e in shape)
    if answers == 0:
        problems.append("%s: no 2xx answer" % label)
    return {"answers": answers, "documents": documents, "problems": problems, "ok": not problems}


def step_checkpoint(step, exchanges, memory_before=None, memory_after=None):
    """What the step's checks saw (the head, after its requests): None without checks; with the ``prefix_cache``
    check the prefix-caching evidence (the KV block size from ``step.prefix.block_size``; the memory answers of
    vllm_server state=checked before and after), else the layer's expected observation (its request's
    ``max_tokens``, its ``prompt_over``)."""
    checks = list(step.get("checks") or [])
    if not checks:
        return None
    if "prefix_cache" in checks:
        return prefix_cache_evidence(exchanges, (step.get("prefix") or {}).get("block_size"),
                                     memory_before=memory_before, memory_after=memory_after)
    body = (step.get("request") or {}).get("body") or {}
    return layer_observation(exchanges, checks, max_tokens=body.get("max_tokens"), prompt_over=step.get("prompt_over", 0))


def layer_observation(exchanges, checks, max_tokens=None, prompt_over=0, label="request"):
    """A layer's expected observation against the answers to the fixed request (``label``)."""
    bodies = _bodies(exchanges, label=label)
    texts = [_text_of(b) for b in bodies]
    completion = [_usage(b, "completion_tokens") for b in bodies]
    prompt = [_usage(b, "prompt_tokens") for b in bodies]
    finish = [_choice(b).get("finish_reason") for b in bodies]
    results = {}
    checks = list(checks or [])
    if "same_text" in checks:
        results["same_text"] = len(texts) > 0 and len(set(texts)) == 1
    if "completion_tokens" in checks:
        want = int(max_tokens or 0)
        results["completion_tokens"] = len(completion) > 0 and set(completion) == {want}
    if "prompt_over" in checks:
        known = [p for p in prompt if p is not None]
        results["prompt_over"] = len(known) == len(prompt) > 0 and min(known) > int(prompt_over or 0)
    evidence = {}
    if "tool_call" in checks:
        evidence["tool_call"] = tool_call_evidence(exchanges, label=label)
        results["tool_call"] = evidence["tool_call"]["ok"]
    if "json_schema" in checks:
        evidence["json_schema"] = json_schema_evidence(exchanges)
        results["json_schema"] = evidence["json_schema"]["ok"]
    unknown = [c for c in checks if c not in ("same_text", "completion_tokens", "prompt_over", "prefix_cache",
                                              "tool_call", "json_schema")]
    for c in unknown:
        results[c] = False
    out = {
        "kind": "observation",
        "checks": checks,
        "answers": len(bodies),
        "texts_distinct": len(set(texts)),
        "completion_tokens": completion,
        "prompt_tokens": prompt,
        "finish_reasons": finish,
        "results": results,
        "unknown_checks": unknown,
        "expectation_met": all(results.values()) if results else None,
        "summary": ", ".join("%s: %s" % (k, v) for k, v in sorted(results.items())) or "no check",
    }
    out.update(evidence)
    return out


def _node_cutoff(alive):
    """Lines the node's log had at its last liveness check (``log_lines``; older answers: the timeline's count)."""
    alive = alive or {}
    if alive.get("log_lines") is not None:
        return int(alive["log_lines"])
    timeline = ((alive.get("classification") or {}).get("timeline") or [{}])
    lines = (timeline[0] or {}).get("lines") if timeline else None
    return int(lines) if lines is not None else None


def answered_by(response, via_gateway=False):
    """Which part wrote one answer (an ``api_request`` response record: ``status``, ``headers``, ``body``, ``text``).

    Returns ``{component, evidence}``; ``component`` is None when no HTTP answer came. On the direct path the server
    answered. Through a gateway, a JSON body is the server's answer passed through (vLLM answers every route, its
    errors included, with JSON - ``{"error": "Unauthorized"}`` for a missing key); an HTML page, the proxy's
    signature on it, or a proxy status (502/503/504) without a JSON body is the gateway's own answer.
    """
    response = response or {}
    status = response.get("status")
    headers = dict((str(k).lower(), str(v)) for k, v in (response.get("headers") or {}).items())
    if status is None:
        return {"component": None, "evidence": "no HTTP answer: %s" % (response.get("error") or "none")}
    if not via_gateway:
        return {"component": "server", "evidence": "%s answered directly" % status}
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    seen = ", ".join("%s: %s" % (k, headers[k]) for k in ("server", "content-type", "via") if k in headers)
    seen = " (%s)" % seen if seen else ""
    text = response.get("text") or ""
    if isinstance(response.get("body"), (dict, list)):
        return {"component": "server",
                "evidence": "%s with a JSON body: the server's answer passed through the gateway%s" % (status, seen)}
    signature = _PROXY_SIGNATURE_RX.search(text)
    title = _PAGE_TITLE_RX.search(text)
    if signature or title or ctype == "text/html":
        what = "signed %s" % signature.group(1).strip() if signature else (
            "titled '%s'" % title.group(1).strip() if title else "text/html")
        return {"component": "gateway", "evidence": "%s: the gateway's own error page, %s%s" % (status, what, seen)}
    if int(status) in _PROXY_STATUSES:
        return {"component": "gateway",
                "evidence": "%s without the server's JSON body: written by the gateway%s" % (status, seen)}
    return {"component": "server", "evidence": "%s passed through the gateway%s" % (status, seen)}


def answers(exchanges, via_gateway=False):
    """``answered_by`` for every copy of every request sent, in the order sent."""
    out = []
    for ex in exchanges or []:
        for i, resp in enumerate(ex.get("responses") or []):
            found = answered_by(resp, via_gateway)
            out.append({"label": ex.get("label"), "index": ex.get("index"), "copy": i, "status": resp.get("status"),
                        "component": found["component"], "evidence": found["evidence"]})
    return out


def _gateway_failure(sent):
    """error_class and component of the first failed answer through a gateway, judged by who wrote it; None when
    no failed copy has an HTTP answer."""
    for ans in answers(sent, via_gateway=True):
        status = ans["status"]
        if status is None or 200 <= int(status) < 300:
            continue
        if ans["component"] == "gateway":
            # the proxy's own 504: its read timeout ran out before the server answered
            return ("timeout" if int(status) == 504 else "http_error"), "gateway"
        return "http_error", "server"
    return None


def _request_failure(sent, via_gateway):
    """error_class and component of a failed request while no log shows a failure."""
    if via_gateway:
        judged = _gateway_failure(sent)
        if judged:
            return judged
    errors = [e for ex in sent for e in (ex.get("errors") or []) if e]
    statuses = [s for ex in sent for s in (ex.get("statuses") or [])]
    bad = [s for s in statuses if s is None or not 200 <= int(s) < 300]
    if any(_TIMEOUT_RX.search(str(e)) for e in errors):
        return "timeout", "gateway" if via_gateway else "server"
    answered = [s for s in bad if s is not None]
    if not answered:
        # no HTTP answer at all (refused, reset) from a server that is up: the path is what failed
        return "other", "gateway" if via_gateway else "client"
    if via_gateway and any(int(s) in (502, 503, 504) for s in answered):
        return "http_error", "gateway"
    if all(400 <= int(s) < 500 for s in answered):
        return "http_error", "client"
    return "http_error", "gateway" if via_gateway else "server"


def attempt_verdict(step, stages, nodes, exchanges=None, checkpoint=None, check_mode=False, via_gateway=False):
    """Judge one attempt.

    ``step``: the step (``name``, ``nodes``, ``rollback_of`` ...). ``stages``: the ``log_stage`` answer over every
    node's log (with ``after_stop`` when the classifier was given the cutoff). ``nodes``: per node
    ``{started, alive, stopped, task_error}`` (``vllm_server`` answers at start, at the last liveness check and at
    the stop). ``exchanges``: the requests sent. ``checkpoint``: the layer's evidence (``expectation_met``).
    """
    step = step or {}
    stages = stages or {}
    nodes = nodes or {}
    names = list(step.get("nodes") or nodes.keys())
    exchanges = [ex for ex in (exchanges or []) if not ex.get("skipped")]
    started = dict((n, (nodes.get(n) or {}).get("started") or {}) for n in names)
    alive = dict((n, (nodes.get(n) or {}).get("alive") or {}) for n in names)
    ready = bool(names) and all(bool(started[n].get("ready")) for n in names)
    request_ok = bool(exchanges) and all(bool(ex.get("ok")) for ex in exchanges)
    statuses = [s for ex in exchanges for s in (ex.get("statuses") or [])]
    failed_after_ready = any(bool(alive[n].get("failed_after_ready")) for n in names)
    task_errors = ["%s: %s" % (n, (nodes.get(n) or {}).get("task_error")) for n in names
                   if (nodes.get(n) or {}).get("task_error")]
    cutoffs = dict((n, _node_cutoff(alive[n])) for n in names)

    # the stop cutoff: an error logged after the last liveness check was logged while the play stopped the server
    fe = stages.get("first_error") or None
    cls_stage = stages.get("stage")
    after_stop = list(stages.get("after_stop") or [])
    if "after_stop" not in stages and fe:
        cut = cutoffs.get(fe.get("node") or "") if fe.get("node") else (
            cutoffs.get(names[0]) if len(names) == 1 else None)
        if cut is not None and fe.get("lineno") is not None and int(fe["lineno"]) > cut:
            after_stop = [dict(fe, lines_when_last_alive=cut)]
            fe, cls_stage = None, "none"

    outcomes = dict((n, started[n].get("outcome") or "not started") for n in names)
    refusals = ["%s: %s" % (n, (nodes.get(n) or {}).get("refusal")) for n in names if (nodes.get(n) or {}).get("refusal")]
    if refusals and not check_mode:
        # another live run holds what this attempt needs: nothing was started, the run is refused (not a stage)
        return {"ok": False, "ready": False, "refused": True, "refusal": refusals, "status": "refused",
                "stage": None, "error_class": None, "component": None, "classifier_stage": None,
                "classifier_summary": "", "first_error": None, "after_stop": [], "lines_when_last_alive": {},
                "start_outcomes": outcomes, "time_to_ready_s": dict((n, None) for n in names), "request_ok": False,
                "statuses": [], "failed_after_ready": False, "task_errors": task_errors, "expectation_met": None,
                "earlier_state_returned": None, "answered_by": [],
                "summary": "%s %s: REFUSED | %s" % (step.get("run") or "-", step.get("name") or "-", "; ".join(refusals))}
    stage, error_class, component = "none", None, "gateway" if via_gateway else "server"
    port_busy = [n for n in names if outcomes[n] == "port_in_use"]
    if check_mode:
        stage = "none"
    elif port_busy:
        # named before the start (vllm_server's bind test), never a start that timed out
        stage, error_class, component = "environment", "port_in_use", "server"
        fe = {"line": (started[port_busy[0]].get("msg") or "port in use")[:400], "node": port_busy[0],
              "file": None, "lineno": None, "timestamp": None, "process": None}
    elif cls_stage not in NO_FAILURE:
        stage, error_class, component = cls_stage, stages.get("error_class") or "other", "server"
    elif not ready:
        stage = stages.get("last_stage") or "unknown"
        error_class = "timeout" if "timeout" in outcomes.values() or not any(
            o in ("exited", "died") for o in outcomes.values()) else "other"
        component = "server"
    elif not request_ok and exchanges:
        stage = "request"
        error_class, component = _request_failure(exchanges, via_gateway)
    elif not exchanges:
        stage, error_class, component = "request", "other", "client"
    elif failed_after_ready:
        stage, error_class, component = "request", "engine_dead", "server"
    ok = stage == "none" and (request_ok or check_mode) and not failed_after_ready and not task_errors
    expectation = (checkpoint or {}).get("expectation_met") if checkpoint else None
    rollback_of = step.get("rollback_of")
    earlier = (ok and stage == rollback_of.get("good_stage")) if rollback_of else None

    classifier_summary = stages.get("summary") or ""
    if after_stop and cls_stage in NO_FAILURE:
        classifier_summary = ("no failure while the server was serving; %d error line(s) logged after the last "
                              "liveness check, while this play stopped the server (shutdown noise, not counted): %s"
                              % (len(after_stop), (after_stop[0].get("line") or "")[:200]))
    parts = ["%s %s: %s" % (step.get("run") or "-", step.get("name") or "-", "ok" if ok else "FAILED"),
             "stage %s%s" % (stage, (" (%s, %s)" % (error_class, component)) if error_class else ""),
             "ready %s" % ready, "request %s" % (",".join(str(s) for s in statuses) or "-")]
    if expectation is not None:
        parts.append("expectation %s" % ("met" if expectation else "NOT met"))
    if via_gateway and stage == "request":
        failed = [a for a in answers(exchanges, True) if a["status"] is not None and not 200 <= int(a["status"]) < 300]
        if failed:
            parts.append("%s answered %s: %s" % (failed[0]["component"], failed[0]["label"], failed[0]["evidence"]))
    if fe and stage not in NO_FAILURE:
        parts.append("first error: %s" % (fe.get("line") or "")[:200])
    if after_stop:
        parts.append("an error logged during the stop is not counted")
    if rollback_of:
        parts.append("earlier state came back: %s" % ("yes" if earlier else "NO"))
    return {
        "ok": bool(ok),
        "status": "ok" if ok else "failed",
        "ready": ready,
        "stage": stage,
        "error_class": error_class,
        "component": component,
        "classifier_stage": stages.get("stage"),
        "classifier_summary": classifier_summary,
        "first_error": fe if stage not in NO_FAILURE else None,
        "after_stop": after_stop,
        "lines_when_last_alive": cutoffs,
        "start_outcomes": outcomes,
        "time_to_ready_s": dict((n, started[n].get("time_to_ready_s")) for n in names),
        "request_ok": request_ok,
        "statuses": statuses,
        "failed_after_ready": failed_after_ready,
        "task_errors": task_errors,
        "expectation_met": expectation,
        "earlier_state_returned": earlier,
        "answered_by": answers(exchanges, via_gateway) if via_gateway else [],
        "summary": " | ".join(parts),
    }


def reproduction_summary(runs, ladder=None, stop_reason=""):
    """reproduce.yml's closing summary: the finding (reproduction_finding) with every run's summary line
    (``runs``), the ladder's rows (``ladder``, each layer's; then a rollback's, from its run: did the earlier state
    come back, _ladder.rollback_status) and why it stopped, the console's closing line (``line``) and the lines that
    list every run and ladder layer (``lines``), the folders of the runs recorded (``paths``)."""
    runs = list(runs or [])
    ladder = list(ladder or []) + [_ladder.rollback_status(r) for r in runs if r.get("purpose") == "rollback"]
    finding = reproduction_finding(runs)
    out = dict(finding, runs=[r.get("summary") for r in runs], ladder=ladder, ladder_stopped=stop_reason)
    out["line"] = "reproduce | case %s | record %s (last run %s) | classification: %s" % (
        finding["case_id"], finding["record"] or "-", finding["last_run_id"] or "-", finding["classification"])
    out["lines"] = out["runs"] + ["%s: %s" % (row.get("layer"), row.get("status")) for row in ladder]
    out["paths"] = [r["path"] for r in runs if r.get("path")]
    return out


def reproduction_result(verdict):
    """The fields reproduce.yml hands to the next workflow node (repro_vllm_result): the classification, the
    finding's line, refused, why the ladder stopped and the second clean run - all none without a verdict."""
    if verdict is None:
        return {"classification": None, "finding": None, "refused": None, "ladder_stopped": None, "repeat": None}
    repeat = verdict.get("repeat")
    return {
        "classification": {"stage": verdict.get("stage"), "error_class": verdict.get("error_class")},
        "finding": verdict.get("line"),
        "refused": verdict.get("refused"),
        "ladder_stopped": verdict.get("ladder_stopped"),
        "repeat": None if repeat is None else dict((k, repeat.get(k)) for k in
                                                   ("run", "repeats", "same_stage", "same_error_class", "repeated")),
    }


def reproduction_finding(runs):
    """The play's closing classification: the first failed run (rollbacks and refusals aside), the refusals and
    the last rollback."""
    runs = list(runs or [])
    failed = [r for r in runs if not r.get("refused") and not r.get("ok") and r.get("purpose") != "rollback"]
    refusals = [r for r in runs if r.get("refused")]
    rollbacks = [r for r in runs if r.get("purpose") == "rollback"]
    finding = failed[0] if failed else None
    recorded = [r for r in runs if r.get("path")]
    if finding:
        fe = finding.get("first_error") or {}
        line = "stage %s (%s, %s) at %s in %s%s" % (
            finding.get("stage"), finding.get("error_class") or "-", finding.get("component") or "-",
            finding.get("step"), finding.get("run") or "-", (": " + (fe.get("line") or "")[:200]) if fe else "")
        if rollbacks:
            line += " | rollback: the earlier state %s (%s)" % (
                "came back" if rollbacks[-1].get("earlier_state_returned") else "did NOT come back",
                rollbacks[-1].get("run"))
    elif refusals:
        line = refusals[-1].get("summary", "refused")
    else:
        line = "none: every step passed (%s)" % " -> ".join(str(r.get("step")) for r in runs)
    repeats = [r for r in runs if r.get("purpose") == "repeat" and r.get("repeat")]
    if repeats:
        line += " | second clean run: %s" % repeats[-1]["repeat"]["summary"]
    cases = [r.get("case_id") for r in runs if r.get("case_id")]
    return {
        "case_id": cases[0] if cases else None,
        "record": os.path.dirname(recorded[-1]["path"]) if recorded else None,
        "finding": finding,
        "stage": finding.get("stage") if finding else "none",
        "error_class": finding.get("error_class") if finding else None,
        "component": finding.get("component") if finding else None,
        "refused": bool(refusals),
        "last_run": recorded[-1].get("path") if recorded else None,
        "last_run_id": recorded[-1].get("run") if recorded else None,
        "classification": line,
        "repeat": repeats[-1]["repeat"] if repeats else None,
    }


# what a second clean run repeats: never a rollback or another repeat (they rerun an earlier command themselves)
_NOT_REPEATED = ("rollback", "repeat")
# parts of a first-error line that differ from start to start without the error being another one
_VOLATILE_RX = re.compile(r"\d{2,4}[-/]\d{2}(?:[-/]\d{2,4})?[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?|\bpid=\d+|\b0x[0-9a-fA-F]+"
                          r"|\bpid \d+|\[rank\d+\]:?")


def repeat_target(runs):
    """The attempt of a play that a second clean run repeats.

    ``runs``: the play's attempts in order (the attempt role's ``_repro_vllm_runs``). The play's finding - its
    first failed attempt, rollbacks and refusals aside, as ``reproduction_finding`` picks it - else its minimal
    attempt, else its first attempt that ran. Returns ``{"attempt", "run", "step", "reason"}`` or None when no
    attempt ran (every step refused, or none made).
    """
    ran = [r for r in runs or [] if isinstance(r, dict) and not r.get("refused") and r.get("run")
           and r.get("purpose") not in _NOT_REPEATED]
    failed = [r for r in ran if not r.get("ok")]
    minimal = [r for r in ran if r.get("step") == "minimal"]
    if failed:
        pick, reason = failed[0], "the attempt that failed (stage %s, %s)" % (
            failed[0].get("stage"), failed[0].get("error_class") or "no error class")
    elif minimal:
        pick, reason = minimal[0], "the minimal attempt (nothing failed)"
    elif ran:
        pick, reason = ran[0], "the first attempt of the play (nothing failed, no minimal start in this play)"
    else:
        return None
    return {"attempt": pick, "run": pick.get("run"), "step": pick.get("step"), "reason": reason}


def _error_text(first_error):
    if not first_error or not first_error.get("line"):
        return None
    return " ".join(_VOLATILE_RX.sub("", str(first_error["line"])).split())


def _repeat_side(attempt):
    fe = attempt.get("first_error") or None
    return {"run": attempt.get("run"), "step": attempt.get("step"), "stage": attempt.get("stage"),
            "error_class": attempt.get("error_class"), "ok": bool(attempt.get("ok")),
            "first_error": {k: fe.get(k) for k in ("node", "line", "lineno", "timestamp", "stage", "error_class")}
            if fe else None}


def repeat_comparison(original, repeat):
    """``repeat.json``: did a second clean run end like the attempt it repeats.

    ``original`` and ``repeat``: two attempts (the attempt role's facts, or the ``outcome.json`` of two runs - the
    same keys: ``run``, ``step``, ``stage``, ``error_class``, ``ok``, ``first_error``). ``same_stage`` and
    ``same_error_class`` compare the verdicts; ``same_first_error`` the first error's text with timestamps, pids
    and addresses taken out (None when neither failed); ``repeated`` is true when stage, error class and
    ok/failed all match (the failure repeated, or both passed).
    """
    a, b = _repeat_side(original or {}), _repeat_side(repeat or {})
    same_stage = a["stage"] == b["stage"]
    same_class = a["error_class"] == b["error_class"]
    ta, tb = _error_text(a["first_error"]), _error_text(b["first_error"])
    same_text = None if ta is None and tb is None else ta == tb
    repeated = same_stage and same_class and a["ok"] == b["ok"]

    def said(side):
        if side["ok"]:
            return "passed (stage %s)" % (side["stage"] or "none")
        return "failed at stage %s (%s)" % (side["stage"], side["error_class"] or "no error class")

    if repeated:
        summary = "%s %s like %s: %s" % (b["run"], said(b), a["run"], "the failure repeated" if not a["ok"]
                                         else "both passed")
    else:
        summary = "%s %s, %s %s: the result did NOT repeat" % (a["run"], said(a), b["run"], said(b))
    return {"repeats": a["run"], "run": b["run"], "step": a["step"], "same_stage": same_stage,
            "same_error_class": same_class, "same_first_error": same_text, "repeated": repeated,
            "a": a, "b": b, "summary": summary}
