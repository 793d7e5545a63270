"""The ladder in one place (issue 22 item 6): every step the attempt role runs, and every decision of the ladder.

* ``build_step(kind, **inputs)``: the one builder of ``_repro_vllm_step`` for each kind - ``minimal``, ``layer``,
  ``rollback``, ``repeat``, ``replay`` - against one schema (``STEP_KEYS``, defaults in ``STEP_DEFAULTS``): every
  key is always there. The roles (minimal_startup, feature_layer, repeat) reach it through their plans' filters
  (``_minimal_plan``, ``_layer_plan``, ``_repeat_plan``); the replay's plan (``_replay.attempt_plan``) calls it directly.
* ``is_good`` / ``last_good``: the one definition of a run the ladder climbs from (an attempt that was not refused
  and is ok); a run an earlier play left (``repro_vllm_ladder_resume``) is read with the same rule.
* ``window``: which layers this play climbs (up to ``repro_vllm_ladder_until``, after the last layer the last good
  run already has).
* ``layer_skip``: why a layer cannot run here; ``judge_layer``: a layer's status, whether the ladder stops, whether
  its run is the new last good one and its result row; ``rollback_status``: the row of a rollback.
* ``start``, ``layer_plan``, ``layer_judged``: what feature_layer asks, one call each - the ladder a play climbs
  (layers in order, window), one layer's plan (does it go on, its skip reason, its step) and its judgement (the row,
  the stop, the next last good run, the rollback's step).

Controller side; Python standard library only (plus the collection's own module_utils).
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import json

from ansible_collections.repro.vllm.plugins.module_utils.ladder import _command
from ansible_collections.repro.vllm.plugins.module_utils.ladder._command import apply_layers
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import redact_data

KINDS = ("minimal", "layer", "rollback", "repeat", "replay")

# Every key of a step (roles/attempt/meta/argument_specs.yml documents them) in one order.
STEP_KEYS = ("name", "purpose", "layer", "nodes", "host", "port", "argv", "env", "request", "checks", "prompt_over",
             "prefix", "allowed", "changed", "expected", "rollback", "input", "previous", "enforce_one_variable",
             "via_gateway", "probes", "layers_applied", "rollback_of", "repeat_of", "debug_as")

# What a key is when a kind does not set it: what the attempt role and the attempt's close read for a missing key
# (``| default([])``, ``.get(key)``). ``debug_as`` (the name repro_vllm_debug_step matches) defaults to the step's name.
STEP_DEFAULTS = {
    "layer": None, "checks": [], "prompt_over": 0, "prefix": None, "allowed": [], "changed": [], "previous": None,
    "enforce_one_variable": False, "via_gateway": False, "probes": [], "layers_applied": [], "rollback_of": None,
    "repeat_of": None,
}

# The inputs of each kind: required, then optional.
INPUTS = {
    "minimal": (("base", "request", "previous"), ()),
    "layer": (("layer", "last_good", "base", "request", "ladder", "play_hosts"), ("overrides", "production", "prefix")),
    "rollback": (("layer", "failed", "last_good", "base"), ()),
    "repeat": (("original", "target"), ()),
    "replay": (("attempt", "plan", "nodes"), ("original_case", "package")),
}

WHAT = {
    "base": "the planned minimal command (_repro_vllm_base: nodes, host, port, argv, env, derived)",
    "request": "the fixed request (_repro_vllm_base_request)",
    "previous": "the run to compare with (the case's latest run with an identity; none for the first run of a case)",
    "layer": "the ladder layer (its data with the overrides)",
    "last_good": "the last good run (_repro_vllm_last_good)",
    "ladder": "the ladder's layers as data (_repro_vllm_ladder)",
    "play_hosts": "the hosts of the play (ansible_play_hosts_all)",
    "failed": "the attempt of the layer that changed the stage (_repro_vllm_attempt)",
    "original": "the step of the run repeated (_repro_vllm_steps[run])",
    "target": "the attempt to repeat (_judge.repeat_target)",
    "attempt": "the package's attempt (its outcome.json)",
    "plan": "replay_step's answer (argv, env, host, port, request)",
    "nodes": "the receiving hosts the attempt runs on",
}


class LadderError(Exception):
    """A step that cannot be built or a ladder decision on inputs of the wrong shape; the message names them."""


def _mapping(value, what):
    if not isinstance(value, dict):
        raise LadderError("%s must be a mapping, got %s" % (what, type(value).__name__))
    return value


def _key(mapping, key, what):
    """``mapping[key]``, or a LadderError naming what lacks it."""
    if key not in mapping:
        raise LadderError("%s has no %s" % (what, key))
    return mapping[key]


def _as_int(value):
    """As Jinja's ``int`` filter reads a number: a float's whole part, 0 when it is no number."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def complete(step):
    """The step with every key of the schema: the defaults where it has none (``debug_as``: its name)."""
    out = dict((k, list(v) if isinstance(v, list) else v) for k, v in STEP_DEFAULTS.items())
    out.update(step)
    out.setdefault("debug_as", out.get("name"))
    missing = [k for k in STEP_KEYS if k not in out]
    if missing:
        raise LadderError("the %s step lacks %s" % (out.get("name"), ", ".join(missing)))
    return out


def build_step(kind, **inputs):
    """The step (``_repro_vllm_step``) of ``kind`` from its inputs (``INPUTS``); every key of ``STEP_KEYS``.

    Raises LadderError for an unknown kind, a missing or unknown input, or an input without a key the kind reads."""
    if kind not in INPUTS:
        raise LadderError("no step kind %r; the kinds are %s" % (kind, ", ".join(KINDS)))
    required, optional = INPUTS[kind]
    missing = [name for name in required if name not in inputs]
    if missing:
        raise LadderError("a %s step needs %s" % (kind, "; ".join("%s (%s)" % (n, WHAT[n]) for n in missing)))
    unknown = sorted(set(inputs) - set(required) - set(optional))
    if unknown:
        raise LadderError("a %s step takes %s; not %s" % (kind, ", ".join(required + optional), ", ".join(unknown)))
    return complete(_BUILDERS[kind](**inputs))


def _minimal(base, request, previous):
    base = _mapping(base, "base (%s)" % WHAT["base"])
    request = _mapping(request, "request (%s)" % WHAT["request"])
    nodes = _key(base, "nodes", "base")
    derived = base.get("derived")
    made = ("the minimal command derived from the production command (%d categories removed)"
            % len(derived.get("removed") or {}) if derived else "the minimal command built from the variables")
    return {
        "name": "minimal", "purpose": "minimal_startup", "layer": None, "nodes": nodes,
        "host": _key(base, "host", "base"), "port": _key(base, "port", "base"), "argv": _key(base, "argv", "base"),
        "env": _key(base, "env", "base"), "request": request, "checks": [], "allowed": [], "changed": [],
        "expected": "The smallest command proves device discovery, weight loading, engine init and API readiness "
                    "(/health and /v1/models 200), and the fixed request answers 2xx.",
        "rollback": "none (this is the baseline every layer builds on)",
        "input": "%s on %d node(s); fixed request %s" % (made, len(nodes), _key(request, "route", "request")),
        "previous": previous, "enforce_one_variable": False, "via_gateway": False, "layers_applied": [],
    }


def _layer(layer, last_good, base, request, ladder, play_hosts, overrides=None, production=None, prefix=None):
    layer = _mapping(layer, "layer (%s)" % WHAT["layer"])
    last_good = _mapping(last_good, "last_good (%s)" % WHAT["last_good"])
    base = _mapping(base, "base (%s)" % WHAT["base"])
    name = _key(layer, "name", "the layer")
    applied = list(_key(last_good, "layers_applied", "the last good run") or [])
    plan = apply_layers({"argv": _key(base, "argv", "base"), "env": _key(base, "env", "base"), "request": request},
                        list(ladder or []), applied + [name], overrides=overrides or {}, production=production or None)
    prefix = dict(prefix or {})
    return {
        "name": name, "purpose": "feature_layer", "layer": name,
        "nodes": list(play_hosts or []) if "requires_nodes" in layer else _key(last_good, "nodes", "the last good run"),
        "host": _key(base, "host", "base"), "port": _key(base, "port", "base"),
        "argv": plan["argv"], "env": plan["env"], "request": plan["request"],
        "checks": layer.get("checks", []), "prompt_over": layer.get("prompt_over", 0),
        "prefix": {"block_size": _as_int(prefix.get("block_size")), "shared_text": prefix.get("shared_text"),
                   "log_wait_s": prefix.get("log_wait_s")},
        "allowed": plan["allowed"], "changed": ["%s:" % name] + list(plan["changed"]),
        "expected": _key(layer, "expected", "the layer %s" % name), "rollback": _key(layer, "rollback", "the layer %s" % name),
        "input": "the last good run %s (%s) plus the layer %s" % (
            _key(last_good, "run", "the last good run"),
            ("layers: " + ", ".join(str(a) for a in applied)) if applied else "the minimal command", name),
        "previous": last_good, "enforce_one_variable": True, "via_gateway": "gateway" in plan["layers_applied"],
        "probes": layer.get("probes", []) if name == "gateway" else [],
        "layers_applied": plan["layers_applied"],
    }


def _rollback(layer, failed, last_good, base):
    name = _key(layer, "name", "the layer") if isinstance(layer, dict) else layer
    failed = _mapping(failed, "failed (%s)" % WHAT["failed"])
    good = _mapping(last_good, "last_good (%s)" % WHAT["last_good"])
    base = _mapping(base, "base (%s)" % WHAT["base"])
    what = "the last good run"
    run, stage = _key(good, "run", what), _key(good, "stage", what)
    applied = _key(good, "layers_applied", what)
    return {
        "name": "rollback", "purpose": "rollback", "layer": name, "nodes": _key(good, "nodes", what),
        "host": _key(base, "host", "base"), "port": _key(base, "port", "base"),
        "argv": _key(good, "argv", what), "env": _key(good, "env", what), "request": _key(good, "request", what),
        "checks": [], "allowed": [], "changed": ["rollback of %s: none against %s" % (name, run)],
        "expected": "The last good command of %s behaves as it did: stage %s, the request answers 2xx." % (run, stage),
        "rollback": "none (this is the rollback)",
        "input": "%s (%s) changed the stage from %s to %s; rerun the last good command of %s unchanged" % (
            name, failed.get("run"), stage, failed.get("stage"), run),
        "previous": good, "enforce_one_variable": False, "via_gateway": "gateway" in (applied or []),
        "layers_applied": applied,
        "rollback_of": {"layer": name, "failed_run": failed.get("run"), "failed_stage": failed.get("stage"),
                        "good_run": run, "good_stage": stage},
    }


def _repeat(original, target):
    orig = _mapping(original, "original (%s)" % WHAT["original"])
    target = _mapping(target, "target (%s)" % WHAT["target"])
    t = _mapping(_key(target, "attempt", "the repeat target"), "the attempt to repeat")
    reason = target.get("reason")
    run = _key(t, "run", "the attempt to repeat")
    result = ("passed (stage %s)" % t.get("stage") if t.get("ok")
              else "failed at stage %s (%s)" % (t.get("stage"), t.get("error_class") or "no error class"))
    step = dict(orig)
    step.update({
        "name": "repeat", "purpose": "repeat", "previous": t, "allowed": [], "enforce_one_variable": False,
        "rollback_of": None, "debug_as": orig.get("debug_as", orig.get("name")),
        "changed": ["none: a second clean run of %s" % run],
        "expected": "the same stage and error class as %s: %s" % (run, result),
        "rollback": "none (a second clean run changes nothing)",
        "input": "the command, environment and request of %s (%s) unchanged, from a clean start (a new process; the "
                 "server of %s was stopped and its port is free): %s" % (run, t.get("step"), run, reason),
        "repeat_of": {"run": run, "path": t.get("path"), "step": t.get("step"), "stage": t.get("stage"),
                      "error_class": t.get("error_class"), "ok": t.get("ok"), "reason": reason},
    })
    return step


def attempt_text(attempt):
    """``healthy`` or ``failed at <stage> (<class>)`` for an attempt."""
    if attempt.get("ok"):
        return "healthy"
    return "failed at %s (%s)" % (attempt.get("stage") or "-", attempt.get("error_class") or "-")


def _replay(attempt, plan, nodes, original_case=None, package=None):
    attempt = _mapping(attempt, "attempt (%s)" % WHAT["attempt"])
    plan = _mapping(plan, "plan (%s)" % WHAT["plan"])
    package = package or {}
    run = _key(attempt, "run", "the package's attempt")
    return {
        "name": "replay", "purpose": "replay", "layer": None, "nodes": list(nodes),
        "host": _key(plan, "host", "the plan"), "port": _key(plan, "port", "the plan"),
        "argv": _key(plan, "argv", "the plan"), "env": _key(plan, "env", "the plan"),
        "request": _key(plan, "request", "the plan"), "checks": [], "allowed": [], "changed": [],
        "expected": "the package's result: %s" % attempt_text(attempt),
        "rollback": "none (a replay changes nothing on purpose)",
        "input": "replay of %s/%s from package %s (sha256 %s)" % (
            original_case, run, package.get("name"), package.get("sha256")),
        "previous": {"run": run, "path": attempt.get("path"), "identity": attempt.get("identity")},
        "enforce_one_variable": False, "via_gateway": False, "layers_applied": [],
    }


_BUILDERS = {"minimal": _minimal, "layer": _layer, "rollback": _rollback, "repeat": _repeat, "replay": _replay}


# ------------------------------------------------------------------------------------------- the ladder's decisions
def is_good(attempt):
    """The one definition of a good run, one the ladder climbs from: an attempt that was not refused and is ok."""
    return isinstance(attempt, dict) and not attempt.get("refused") and bool(attempt.get("ok"))


def last_good(attempt, resumed_from=None, changes=None):
    """The last good run after ``attempt``: the attempt itself when it is good (``is_good``), else None.

    With ``resumed_from`` (repro_vllm_ladder_resume, a run folder an earlier play froze), ``attempt`` is that run's
    outcome.json and ``changes`` its changes.json: the run must be good (LadderError otherwise) and is returned as
    the last good run, with the identity it was compared by (``changes.current``)."""
    if resumed_from in (None, ""):
        return attempt if is_good(attempt) else None
    outcome = _mapping(attempt, "%s/outcome.json" % resumed_from)
    if not is_good(outcome):
        raise LadderError("%s is not a good run (stage %s, %s); continue from the last run whose outcome.json says ok"
                          % (resumed_from, outcome.get("stage"), outcome.get("summary")))
    what = "%s/outcome.json" % resumed_from
    return {
        "run": _key(outcome, "run", what), "path": resumed_from,
        "identity": _key(_mapping(changes, "%s/changes.json" % resumed_from), "current", "%s/changes.json" % resumed_from),
        "stage": _key(outcome, "stage", what), "error_class": _key(outcome, "error_class", what),
        "layers_applied": outcome.get("layers_applied") or [], "nodes": _key(outcome, "nodes", what),
        "request": _key(outcome, "request", what), "argv": _key(outcome, "argv", what), "env": _key(outcome, "env", what),
    }


def minimal_only(until):
    """Does ``repro_vllm_ladder_until`` mean "no layer, stop after the single request": empty, null or ``none``."""
    return until is None or str(until).strip().lower() in ("", "none")


def window(names, until, applied=None):
    """The layers this play climbs, in order: after the last layer the last good run already has (``applied``, its
    layers_applied: none for a minimal start) up to ``until`` (repro_vllm_ladder_until; empty or ``none``, what
    people type: no layer, the minimal start and its single request only)."""
    names = list(names or [])
    if minimal_only(until):
        return []
    if until not in names:
        raise LadderError("repro_vllm_ladder_until is '%s', which is no ladder layer; use one of %s (or leave it empty "
                          "or none to stop after the single request)" % (until, ", ".join(names)))
    applied = list(applied or [])
    if applied and applied[-1] not in names:
        raise LadderError("the last good run has the layer %s, which is no ladder layer (%s)"
                          % (applied[-1], ", ".join(names)))
    start = names.index(applied[-1]) if applied else -1
    return names[start + 1:names.index(until) + 1]


def layer_skip(layer, skip=None, derived=None, values=None, play_hosts=0, last_good_nodes=0):
    """Why a ladder layer cannot run here, or "" when it can: the first of these that holds.

    ``layer``: the layer's data with its overrides (name, production_only, requires - variable -> value, or names
    whose values ``values`` gives -, requires_nodes); ``skip``: the names repro_vllm_ladder_skip leaves out;
    ``derived``: the production command's derivation the ladder uses, or None (its ``layers``' items stand in for the
    variables a layer requires: empty, None or missing is unset); ``play_hosts``: hosts in the play;
    ``last_good_nodes``: nodes the last good run spans.
    """
    layer = layer or {}
    name = layer.get("name")
    from_production = list(((derived or {}).get("layers") or {}).get(name) or [])
    if name in (skip or []):
        return "left out by repro_vllm_ladder_skip"
    if layer.get("production_only") and not from_production:
        return "the production command has nothing for it" + (
            "" if derived else " (no production command, or repro_vllm_ladder_production is false)")
    requires = layer.get("requires") or []
    given = dict(values or {}, **requires) if isinstance(requires, dict) else dict(values or {})
    unset = [] if from_production else [v for v in requires if not given.get(v)]
    if unset:
        return "needs %s to be set" % ", ".join(unset)
    needs = int(layer.get("requires_nodes") or 0)
    if play_hosts < needs:
        return "needs %d hosts in the play; it has %d" % (needs, play_hosts)
    if "requires_nodes" in layer and last_good_nodes >= play_hosts:
        return "the last good run already spans %d nodes" % last_good_nodes
    return ""


def judge_layer(attempt, good):
    """A ladder layer judged from its attempt and the last good run (``good``):

    ``status`` - ``refused`` (the one-variable check refused it), ``failed`` (not good, or another stage than the
    last good run's), ``unexpected`` (good, but the expected observation was not met) or ``ok``; ``stop`` (true for
    refused and failed: the ladder stops, a failed layer is rolled back), ``stop_reason``, ``is_last_good`` (the
    attempt is the run the next layer climbs from: ok and unexpected), ``last_good`` (that run: the attempt, else
    ``good`` as it was) and ``row``, the ladder's result row."""
    attempt, prior = attempt or {}, good
    good = good or {}
    if attempt.get("refused"):
        status = "refused"
        reason = "refused: %s" % attempt.get("summary", "")
    elif not is_good(attempt) or attempt.get("stage") != good.get("stage"):
        status = "failed"
        reason = "the failure stage changed from %s to %s at %s" % (
            good.get("stage"), attempt.get("stage"), attempt.get("layer") or attempt.get("step"))
    elif attempt.get("expectation_met") is False:
        status, reason = "unexpected", ""
    else:
        status, reason = "ok", ""
    row = {"layer": attempt.get("layer"), "status": status, "run": attempt.get("run"), "stage": attempt.get("stage"),
           "error_class": attempt.get("error_class"), "component": attempt.get("component"),
           "reason": attempt.get("summary")}
    climbs = status in ("ok", "unexpected")
    return {"status": status, "stop": status in ("refused", "failed"), "stop_reason": reason, "is_last_good": climbs,
            "last_good": attempt if climbs else prior, "row": row}


def rollback_status(attempt):
    """The ladder's result row of a rollback attempt: ok when the earlier state came back, else failed."""
    attempt = attempt or {}
    back = bool(attempt.get("earlier_state_returned"))
    return {"layer": "rollback", "status": "ok" if back else "failed", "run": attempt.get("run"),
            "stage": attempt.get("stage"), "error_class": attempt.get("error_class"),
            "earlier_state_returned": attempt.get("earlier_state_returned"),
            "reason": ("the earlier state came back: " if back else "the earlier state did NOT come back: ")
            + str(attempt.get("summary") or "")}


# ------------------------------------------------------------------------------------------- the ladder as data
# The variables the layers read (feature_layer's defaults and argument specs), by name without ``repro_vllm_``.
LAYER_VALUES = ("prefix_block_size", "long_context_len", "long_context_prompt", "long_context_prompt_over",
                "output_limit_tokens", "concurrency_n", "tool_call_parser", "tool_chat_template",
                "structured_outputs_config", "tool_calling_request", "structured_output_request", "multi_node_args",
                "multi_node_env", "gateway_url", "gateway_api_key", "gateway_probes")


def layers_data(values):
    """The ladder as data, layer name -> fields (docs/method.md "The ladder"), from ``values`` (``LAYER_VALUES``,
    each the variable's value; a missing one is unset). Each layer is ONE variable on top of the last good run: the
    options it sets (``args``; an option left empty is not set - ``_command.apply_layers``), the environment it adds
    (``env``), what it changes in the fixed request (``request`` merged into the body, or the body itself with
    ``request_mode: replace``; ``concurrency``, ``route``, ``base_url``), what must be set for it to run
    (``requires``: variable -> its value; ``requires_nodes``), what to look at (``checks``), the expected observation
    and the rollback. The order is ``_command.LADDER_ORDER``; repro_vllm_ladder_overrides replaces fields per layer."""
    given = _mapping(values or {}, "the ladder's values (variable name without repro_vllm_ -> value)")
    unknown = sorted(set(given) - set(LAYER_VALUES))
    if unknown:
        raise LadderError("%s is no variable the ladder's layers read; they read %s"
                          % (", ".join(unknown), ", ".join(LAYER_VALUES)))
    v = dict((k, given.get(k)) for k in LAYER_VALUES)
    rerun = " (rerun the last good command)."
    tokens, over, parser = v["output_limit_tokens"], v["long_context_prompt_over"], v["tool_call_parser"]
    schema = bool(v["structured_output_request"])
    outputs = v["structured_outputs_config"]
    env, probes, key = v["multi_node_env"] or {}, v["gateway_probes"] or [], v["gateway_api_key"] or ""
    return {
        "prefix_caching": {
            "args": ["--enable-prefix-caching"], "checks": ["prefix_cache"],
            "expected": "The same request twice in one process: identical answers, and /metrics "
                        "vllm:prefix_cache_hits_total grows by whole blocks of %s tokens for the repeated shared prefix "
                        "(a prompt shorter than one block never hits); the stats log line shows a non-zero prefix cache "
                        "hit rate; memory stays flat." % v["prefix_block_size"],
            "rollback": "Drop --enable-prefix-caching" + rerun},
        "long_context": {
            "args": ["--max-model-len", v["long_context_len"]], "request": {"prompt": v["long_context_prompt"]},
            "requires": {"repro_vllm_long_context_len": v["long_context_len"]}, "checks": ["prompt_over"],
            "prompt_over": over,
            "expected": "--max-model-len %s starts, and a prompt longer than %s tokens is accepted (2xx, "
                        "usage.prompt_tokens above that) while the server stays healthy." % (v["long_context_len"], over),
            "rollback": "Restore the previous --max-model-len and the previous prompt" + rerun},
        "output_limit": {
            "request": {"max_tokens": _as_int(tokens), "ignore_eos": True}, "checks": ["completion_tokens"],
            "expected": "The answer runs to max_tokens=%s (finish_reason length, usage.completion_tokens %s) within "
                        "the request timeout." % (tokens, tokens),
            "rollback": "Restore the previous max_tokens" + rerun},
        "concurrency_2": {
            "concurrency": 2, "checks": ["same_text"],
            "expected": "2 identical copies sent at the same moment both answer 2xx with the same text (temperature "
                        "0); the server stays healthy.",
            "rollback": "Send one copy at a time again" + rerun},
        "concurrency_n": {
            "concurrency": _as_int(v["concurrency_n"]), "checks": ["same_text"],
            "expected": "%s identical copies sent at the same moment all answer 2xx with the same text; the server "
                        "stays healthy." % v["concurrency_n"],
            "rollback": "Go back to 2 copies at once" + rerun},
        "tool_calling": {
            "args": ["--enable-auto-tool-choice", "--tool-call-parser", parser, "--chat-template",
                     v["tool_chat_template"], "--structured-outputs-config",
                     # the option takes JSON: a mapping given as a variable is written as JSON, not as Python's repr
                     json.dumps(outputs) if isinstance(outputs, dict) else "" if outputs is None else str(outputs)],
            "route": "/v1/chat/completions", "request": v["tool_calling_request"], "request_mode": "replace",
            "extra_requests": [{"label": "structured_output", "body": v["structured_output_request"]}],
            "requires": {"repro_vllm_tool_call_parser": parser},
            "checks": ["tool_call"] + (["json_schema"] if schema else []),
            "expected": "The server starts with --enable-auto-tool-choice and the %s parser; the chat request with a "
                        "tool definition and a forced tool_choice answers 2xx with message.tool_calls (an id, type "
                        "function, the named function, arguments a JSON object of the tool's parameters' shape)%s; the "
                        "server stays healthy. The text's meaning is not judged." % (parser, (
                            "; the structured-output request (response_format json_schema) answers 2xx with content "
                            "that is JSON of the schema's shape") if schema else ""),
            "rollback": "Drop --enable-auto-tool-choice, --tool-call-parser (and --chat-template) and send the "
                        "previous request" + rerun},
        # no options of its own: exactly the production command's options this collection does not know, as
        # written (repro_vllm_allow_unknown_options: true; the minimal start left them out); skipped without any
        "unknown_options": {
            "production_only": True,
            "expected": "The last good command plus the production command's options this collection does not know "
                        "starts, every node's log reaches the same stage, and the request of the last good run "
                        "answers 2xx as it did.",
            "rollback": "Drop the unknown options again" + rerun},
        # the transport the recipe names (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME, VLLM_HOST_IP ...) is the layer's
        # env and its options (--all2all-backend ...) its args; the placement every node gets from the attempt and the
        # new hosts are the move _command allows a layer with requires_nodes
        "multi_node": {
            "requires_nodes": 2, "args": v["multi_node_args"] or [], "env": env,
            "expected": "The head and the --headless workers (vLLM's own launcher: --nnodes, --node-rank, "
                        "--master-addr) start together%s, every node's log reaches the same stage, and the fixed "
                        "request answers 2xx." % ((" with " + ", ".join(env)) if env else ""),
            "rollback": "Go back to the nodes of the last good run" + rerun},
        # the server takes the key (--api-key) and the request goes through the gateway with it; the key is a secret
        # (no_log), masked in every record
        "gateway": {
            "args": ["--api-key", key], "base_url": v["gateway_url"], "probes": probes,
            "requires": {"repro_vllm_gateway_url": v["gateway_url"]},
            "expected": "The fixed request sent through the gateway%s answers 2xx like the direct request, written by "
                        "the server (a JSON answer passed through, not the gateway's own page)%s." % (
                            " with the API key" if key else "",
                            ("; so do the probes " + ", ".join(str(p.get("label")) for p in probes)) if probes else ""),
            "rollback": "Drop --api-key and send the request to the server directly again" + rerun},
    }


# ------------------------------------------------------------------------- feature_layer's calls, one per decision
def start(data, last_good, until=None, base=None, request=None, play_hosts=(), production=True, overrides=None,
          skip=None, prefix=None):
    """The ladder a play climbs (feature_layer's ``_repro_vllm_ladder``): ``layers`` (``data``, name -> fields, in
    ``_command.LADDER_ORDER``; another name is a LadderError), ``window`` (after ``last_good``'s layers up to
    ``until``), ``production`` (``base.derived`` when repro_vllm_ladder_production is on, else None) and what each
    layer's plan reads: ``base``, ``request``, ``play_hosts``, ``overrides``, ``skip``, ``prefix``."""
    data = _mapping(data or {}, "the ladder data (layer name -> fields)")
    unknown = sorted(set(data) - set(_command.LADDER_ORDER))
    if unknown:
        raise LadderError("%s is no ladder layer; the ladder is %s" % (", ".join(unknown), ", ".join(_command.LADDER_ORDER)))
    layers = [dict(data[name] or {}, name=name) for name in _command.LADDER_ORDER if name in data]
    base = _mapping(base or {}, "base (%s)" % WHAT["base"])
    good = _mapping(last_good or {}, "last_good (%s)" % WHAT["last_good"])
    return {"layers": layers, "window": window([x["name"] for x in layers], until, good.get("layers_applied")),
            "production": base.get("derived") or None if _as_bool(production) else None, "base": base,
            "request": request, "play_hosts": list(play_hosts or []), "overrides": dict(overrides or {}),
            "skip": list(skip or []), "prefix": dict(prefix or {})}


def layer_plan(name, ladder, last_good, stopped=False):
    """One layer of ``ladder`` (``start``'s answer): ``go`` (not stopped), ``layer`` (its data and override),
    ``skip`` (``layer_skip``), ``runs``/``skipped`` (go and not/skip) and ``step`` (None unless it runs)."""
    ladder = _mapping(ladder, "the ladder (start's answer)")
    found = [x for x in _key(ladder, "layers", "the ladder") if x.get("name") == name]
    if not found:
        raise LadderError("%s is no layer of this ladder" % name)
    layer = dict(found[0], **(ladder.get("overrides", {}).get(name) or {}))
    plan = {"name": name, "go": not _as_bool(stopped), "layer": layer, "skip": "", "step": None}
    if plan["go"]:
        good = _mapping(last_good, "last_good (%s)" % WHAT["last_good"])
        plan["skip"] = layer_skip(layer, skip=ladder.get("skip"), derived=ladder.get("production"),
                                  play_hosts=len(ladder.get("play_hosts") or []),
                                  last_good_nodes=len(good.get("nodes") or []))
        if not plan["skip"]:
            plan["step"] = build_step("layer", layer=layer, last_good=good, base=ladder.get("base"),
                                      request=ladder.get("request"), ladder=ladder["layers"],
                                      play_hosts=ladder.get("play_hosts"), overrides=ladder.get("overrides"),
                                      production=ladder.get("production"), prefix=ladder.get("prefix"))
    plan.update(runs=plan["go"] and not plan["skip"], skipped=plan["go"] and bool(plan["skip"]))
    return plan


def layer_judged(plan, attempt, last_good, base):
    """A layer that went on (``plan``: ``layer_plan``'s): its ``row`` (skipped, else ``judge_layer``'s), ``stop``,
    ``stop_reason``, ``last_good``, ``rollback`` (it failed: the last good command again) and ``step`` (the
    rollback's, else the layer's own)."""
    plan = _mapping(plan, "the layer's plan (layer_plan's answer)")
    if plan.get("skip"):
        return {"row": {"layer": plan.get("name"), "status": "skipped", "run": None, "reason": plan["skip"]},
                "stop": False, "stop_reason": "", "last_good": last_good, "rollback": False, "step": plan.get("step")}
    judged = judge_layer(_mapping(attempt, "the layer's attempt"), _mapping(last_good, "the last good run"))
    rollback = judged["status"] == "failed"
    return {"row": judged["row"], "stop": judged["stop"], "stop_reason": judged["stop_reason"],
            "last_good": judged["last_good"], "rollback": rollback,
            "step": build_step("rollback", layer=plan.get("layer"), failed=attempt, last_good=last_good, base=base)
            if rollback else plan.get("step")}


# the one run's diagnostic environment (repro_vllm_debug); VLLM_TRACE_FUNCTION only when asked for as well
DEBUG_ENV = {"VLLM_LOGGING_LEVEL": "DEBUG", "CUDA_LAUNCH_BLOCKING": "1", "NCCL_DEBUG": "TRACE"}


def _as_bool(value):
    """As Ansible's ``bool`` filter reads a value."""
    if isinstance(value, bool):
        return value
    return (value.lower() if isinstance(value, str) else value) in ("yes", "on", "1", "true", 1)


# the prefix-caching check's /metrics snapshots, and the endings of its two prompts that share a prefix
_METRICS = {"method": "GET", "route": "/metrics", "timeout": 30, "max_body_bytes": 4194304}
_ENDINGS = (("a", "First ending: the end."), ("b", "Second ending: another end."))


def step_requests(step):
    """The requests the head sends in one server, in order (each the step's request with its ``label``): the fixed
    request (with the gateway's key when the step goes through it), the gateway layer's probes (the same request
    another way: with the key unless the probe says not, at the probe's ``base_url`` if it has one) and the step's
    further requests (``request.extra``: each once, one at a time). With the ``prefix_cache`` check its sequence
    instead: /metrics, the fixed request twice in the same process, /metrics, two requests that share a prefix of at
    least one KV block (``prefix.shared_text``) with different endings (the second waits ``prefix.log_wait_s`` for
    the stats log line, which the server writes every 10 s), /metrics."""
    step = step or {}
    request = step.get("request") or {}
    if "prefix_cache" in (step.get("checks") or []):
        prefix = step.get("prefix") or {}
        shared = [dict(request, label="shared-prefix-" + end, concurrency=1,
                       settle=prefix.get("log_wait_s") if end == "b" else 0.3,
                       body=dict(request.get("body") or {}, prompt="%s%s" % (prefix.get("shared_text"), text)))
                  for end, text in _ENDINGS]
        return ([dict(_METRICS, label="metrics-before"), dict(request, label="request", repeat=2),
                 dict(_METRICS, label="metrics-repeat")] + shared + [dict(_METRICS, label="metrics-after")])
    out = [dict(request, label="request", send_key=step.get("via_gateway", False))]
    for probe in step.get("probes") or []:
        out.append(dict(request, label=probe.get("label"), send_key=_as_bool(probe.get("send_key", True)),
                        base_url=probe.get("base_url") or request.get("base_url")))
    for extra in request.get("extra") or []:
        out.append(dict(dict(request, concurrency=1, repeat=1), **extra))
    return out


def node_plan(step, node, master_addr=None, master_port=None, debug=False, debug_step=None, trace_function=False,
              ready_timeout=0, wait_round_s=10):
    """One node's place in an attempt's step: ``in_step``, ``is_head``, ``rank`` (-1 outside the step), ``argv``
    (the step's command with this node's launcher options, ``node_placement``; None outside the step), ``master_addr``
    (the head's address the workers reach, as given), ``api_url``
    (the server's API as the head reaches it: a wildcard or empty host is 127.0.0.1), ``debug_on`` and ``debug_env``
    (the diagnostic environment, only for the step ``debug_step`` names: a second clean run keeps the setting of the
    step it repeats, ``debug_as``), the head's ``requests`` (``step_requests``; none on another node), ``line``, its
    place as the attempt's progress line says it, ``single`` and ``multi`` (how its server starts: alone and waited
    for, or with the other nodes' and then waited for in ``wait_rounds``, the rounds of ``wait_round_s`` seconds
    that ``ready_timeout`` allows and two more; none for one node). Raises CommandError for a placement that cannot
    be built."""
    step = step or {}
    nodes = [str(n) for n in step.get("nodes") or []]
    in_step = str(node) in nodes
    rank = nodes.index(str(node)) if in_step else -1
    debug_on = bool(debug) and debug_step == step.get("debug_as", step.get("name"))
    env = dict(DEBUG_ENV, **({"VLLM_TRACE_FUNCTION": "1"} if trace_function else {})) if debug_on else {}
    argv = None
    if in_step:
        placement = _command.node_placement(len(nodes), rank, master_addr or None,
                                            master_port=None if master_port in (None, "") else master_port)
        argv = _command.apply_options([str(a) for a in step.get("argv") or []], args=placement)
    host = step.get("host")
    api_url = "http://%s:%s" % ("127.0.0.1" if host in ("0.0.0.0", "", None) else host, step.get("port"))
    line = ("rank %d%s" % (rank, " (head)" if rank == 0 else " (--headless worker)")) if in_step else "not part of this step"
    if in_step and env:
        line += " | DEBUG logging for this run only: " + ", ".join(env)
    multi = in_step and len(nodes) > 1
    rounds = -(-int(float(ready_timeout or 0)) // max(int(wait_round_s or 10), 1)) + 2 if multi else 0
    return {"in_step": in_step, "is_head": in_step and rank == 0, "rank": rank, "argv": argv,
            "master_addr": master_addr or None, "api_url": api_url, "debug_on": debug_on, "debug_env": env,
            "requests": step_requests(step) if in_step and rank == 0 else [], "line": line,
            "single": in_step and len(nodes) == 1, "multi": multi, "wait_rounds": list(range(rounds))}


def wait_round(nodes, statuses, collected=None):
    """One round of a multi-node start's wait (the attempt role's wait_round.yml), from each node's start job
    (``statuses``: async_status's answers in the order of ``nodes``; one that is not a dict has not finished):
    ``started`` (node -> its finished start's result, else None), ``failed`` (the nodes whose server ended without
    serving), ``failed_outcome`` (the first of them's outcome), ``stop`` (the nodes still starting when one failed:
    their servers are stopped now, so a node failing first is not hidden behind the others' time-outs) and ``done``
    (a node failed, or every start finished), from the round's answers alone. ``collected``: each node's answer of
    the collect that reads a stopped node's job once it ended (skipped elsewhere: registered under a name of its
    own, since a skipped task still registers); it is a node's start result where the round found that same job
    still running (never an answer of an earlier attempt's job)."""
    nodes = [str(n) for n in nodes or []]

    def answers(values):
        values = list(values or [])
        return [values[i] if i < len(values) and isinstance(values[i], dict) else {} for i in range(len(nodes))]

    statuses, collected = answers(statuses), answers(collected)
    started, failed = {}, []
    for node, status in zip(nodes, statuses):
        started[node] = status if _as_bool(status.get("finished", False)) else None
        if started[node] is not None and not _as_bool(status.get("ready", False)):
            failed.append(node)
    pending = [node for node in nodes if started[node] is None]
    for node, status, late in zip(nodes, statuses, collected):
        if (started[node] is None and _as_bool(late.get("finished", False)) and status.get("ansible_job_id")
                and late.get("ansible_job_id") == status.get("ansible_job_id")):
            started[node] = late
    return {"started": started, "failed": failed,
            "failed_outcome": started[failed[0]].get("outcome", "?") if failed else None,
            "stop": pending if failed else [], "done": bool(failed) or not pending}


def one_variable_gate(step, diff, case_id=None):
    """May this step start? A step that must change only its one variable (``enforce_one_variable``: a ladder layer
    against the last good run) is refused when the record diff against that run (``record_diff``'s answer) finds
    more. Returns ``{"refused", "attempt", "line"}``: the refused attempt's record (what the attempt role hands on
    for a run it never opened) and its console line, both None when the step may start."""
    step = step or {}
    diff = diff or {}
    if not step.get("enforce_one_variable") or diff.get("one_variable"):
        return {"refused": False, "attempt": None, "line": None}
    seen = []
    for item in diff.get("unexpected") or []:
        name = "%s:%s" % (item.get("variable"), item.get("key"))
        if name not in seen:
            seen.append(name)
    summary = "refused: %s would differ from the last good run %s in more than its one variable: %s" % (
        step.get("name"), (step.get("previous") or {}).get("run"), ", ".join(seen))
    attempt = {"case_id": case_id, "step": step.get("name"), "nodes": step.get("nodes"), "layer": step.get("layer"),
               "refused": True, "run": None, "path": None, "ok": False, "stage": None, "error_class": None,
               "summary": summary, "diff": diff}
    return {"refused": True, "attempt": attempt, "line": summary}


NO_MODEL = ("set repro_vllm_model (a model directory or hub id on the nodes), or repro_vllm_production_argv (the "
            "production command as a list) to derive the minimal command from it")


def _strings(mapping):
    return dict((k, str(v)) for k, v in (mapping or {}).items())


def minimal_plan(nodes, model_ref, model="", model_config=None, trust_remote_code="auto", vllm_bin="vllm",
                 host="127.0.0.1", port=8000, served_model_name="", tensor_parallel_size=1, pipeline_parallel_size=1,
                 data_parallel_size=1, platform_args=(), server_env=None, secret_env=None, production_argv=(),
                 production_env=None, keep=(), keep_env=(), allow_unknown=False):
    """The base of every attempt (what minimal_startup plans; nothing is started): the minimal command from the
    variables, or derived from the production command (``production_argv``: what it removes comes back one ladder
    layer at a time), with the platform options and the server environment on top; ``--trust-remote-code`` only when
    the model's config.json (``model_config``, read on the head; empty when not read) asks for custom code, unless
    ``trust_remote_code`` forces it. Returns ``{base, derived, secret_env, lines, refusal}``: ``lines`` say what the
    derivation removed (console, without the host prefix), ``refusal`` why the plan may not start (options this
    collection does not know, unless ``allow_unknown``; a minimal command that carries a ladder feature), else None.
    Raises LadderError when neither a model nor a production command is given or a command cannot be read."""
    config = model_config if isinstance(model_config, dict) else {}
    try:
        trc = _command.remote_code_setting(config, trust_remote_code)
        env = _strings(server_env)
        if production_argv:
            derived = _command.derive_minimal([str(a) for a in production_argv], env=production_env or {},
                                              keep=keep or (), keep_env=keep_env or (), model_config=config,
                                              trust_remote_code=str(trust_remote_code),
                                              port=None if port in (None, "") else port)
            argv = _command.apply_options(derived["argv"], args=[str(a) for a in platform_args or ()])
            env = dict(derived["env"], **env)
            secrets = dict(derived["secret_env"], **(secret_env or {}))
            lines = _command.derivation_lines(derived, argv=argv, allow_unknown=bool(allow_unknown))
            refusal = _command.unknown_refusal(derived, allow=bool(allow_unknown))
        else:
            if not model:
                raise LadderError(NO_MODEL)
            derived, lines, refusal, secrets = None, [], None, dict(secret_env or {})
            argv = _command.build_minimal([str(vllm_bin), "serve"], str(model), host=host or None, port=port or None,
                                          served_model_name=served_model_name or None,
                                          tensor_parallel_size=tensor_parallel_size,
                                          pipeline_parallel_size=pipeline_parallel_size,
                                          data_parallel_size=data_parallel_size, trust_remote_code=trc,
                                          platform_args=[str(a) for a in platform_args or ()])
        held = _command.refused_options(argv, platform_flags=keep or ()) + _command.refused_env(env, allowed=keep_env or ())
    except _command.CommandError as exc:
        raise LadderError(str(exc))
    if refusal is None and held:
        layers = []
        for item in held:
            if item["layer"] not in layers:
                layers.append(item["layer"])
        refusal = ("the minimal command may hold only the model, address, parallel layout and platform options (engine "
                   "tuning, a context length), but it holds %s, which belong to the ladder layers %s. Remove them from "
                   "repro_vllm_platform_args / repro_vllm_server_env (the ladder adds them one at a time), or keep one "
                   "on purpose with repro_vllm_minimal_keep / repro_vllm_minimal_keep_env."
                   % ([h.get("item", h.get("name")) for h in held], layers))
    base = {"nodes": list(nodes), "argv": argv, "env": env, "model": model_ref, "trust_remote_code": trc,
            "model_config_read": len(config) > 0,
            # with the production command itself, as given (redacted), so the hand-off shows it beside the one that ran
            "derived": redact_data(dict(derived, production_argv=list(production_argv))) if derived is not None else None,
            "port": int(port), "host": host}
    return {"base": base, "derived": derived, "secret_env": secrets, "lines": lines, "refusal": refusal}
