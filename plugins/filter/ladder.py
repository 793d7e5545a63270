# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter fronts of the ladder (module_utils/ladder/_ladder.py): the ladder's decisions - the ladder a play climbs, a
layer's plan (with its step) and its judgement, the last good run, the minimal start's plan (with its step) and
whether a finding fails the job (the exit rule)."""

from __future__ import annotations

import base64
import json
import os

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter.judge import _mapping
from ansible_collections.repro.vllm.plugins.filter.minimal_command import minimal_command
from ansible_collections.repro.vllm.plugins.plugin_utils.close import _exitrule
from ansible_collections.repro.vllm.plugins.plugin_utils.decide import _diff
from ansible_collections.repro.vllm.plugins.module_utils.ladder import _ladder
from ansible_collections.repro.vllm.plugins.module_utils.ladder._command import CommandError


def ladder_start(values, attempt=None, resume=None, **inputs):
    """The ladder a play climbs, fixed before its first layer (_ladder.start of _ladder.layers_data: the layers as
    data from ``values``, the variables they read by name without ``repro_vllm_``), with ``last_good``: the run it climbs
    from, the run ``resume`` names (repro_vllm_ladder_resume, :func:`_resumed_run`) when given, else ``attempt`` (the
    minimal start's) when it is a good run; without either it fails, saying what is needed."""
    try:
        good = _resumed_run(resume) if resume else _ladder.last_good(attempt)
        if good is None:
            raise _ladder.LadderError("there is no last good run to climb from (the minimal start and the single request "
                                      "must pass first, or set repro_vllm_ladder_resume to a good run's folder)")
        return dict(_ladder.start(_ladder.layers_data(values), good, **inputs), last_good=good)
    except _ladder.LadderError as exc:
        raise AnsibleFilterError("feature_layer: %s" % exc)


def _resumed_run(folder):
    """The run to continue from (repro_vllm_ladder_resume: a run an earlier play froze; a relative one under the
    controller's working directory, as the records root is), read from its outcome.json and changes.json (its
    identity); it must be a good run (_ladder.last_good)."""
    read = {}
    for name in ("outcome.json", "changes.json"):
        try:
            with open(os.path.join(folder, name)) as handle:
                read[name] = json.load(handle)
        except (OSError, ValueError) as exc:
            raise _ladder.LadderError("repro_vllm_ladder_resume: cannot read %s of %s (%s); give the folder of a "
                                      "run an earlier play froze" % (name, folder, exc))
    return _ladder.last_good(read["outcome.json"], resumed_from=folder, changes=read["changes.json"])


def last_good(attempt):
    """The attempt when it is a good run, else none (_ladder.last_good)."""
    return _ladder.last_good(attempt)


def layer_plan(name, ladder, last_good=None, stopped=False):
    """One layer of the window: does it go on, why it is skipped, its step; see _ladder.layer_plan."""
    try:
        return _ladder.layer_plan(name, ladder, last_good, stopped=stopped)
    except (_ladder.LadderError, CommandError) as exc:
        raise AnsibleFilterError("feature_layer: %s" % exc)


def layer_judged(plan, attempt=None, last_good=None, base=None):
    """A layer's row, the stop, the next last good run and the rollback's step; see _ladder.layer_judged."""
    try:
        return _ladder.layer_judged(plan, attempt, last_good, base)
    except (_ladder.LadderError, CommandError) as exc:
        raise AnsibleFilterError("feature_layer: %s" % exc)


def job_exit(verdict, variables=None, violations=0):
    """The exit rule (plugin_utils/close/_exitrule.py) on reproduce.yml's verdict: ``{fails, why, ...}`` - a failed run (the
    finding), a refusal or ``violations`` (a compatibility boundary, before any attempt: the verdict is none) fails
    the job unless ``variables`` (repro_vllm_record_only) say record only."""
    if verdict is not None and not isinstance(verdict, dict):
        raise AnsibleFilterError("job_exit: the input must be the play's verdict (a dict) or none")
    verdict = verdict or {}
    line = verdict.get("line") or "see the run"
    try:
        out = _exitrule.job_exit(variables, violations=int(violations or 0),
                                 finding=line if verdict.get("finding") is not None else None,
                                 refused=line if verdict.get("refused") else None)
    except _exitrule.ExitRuleError as exc:
        raise AnsibleFilterError("job_exit: %s" % exc) from exc
    return out


def one_variable_gate(step, identities, case_id=None):
    """The run's identity (``identities``: each node's part, in the order of the step's nodes, with the step's request
    but its ``repeat``), its diff against the last good run (``step.previous``; _diff.record_diff) and whether the
    attempt may start (_ladder.one_variable_gate): ``{identity, diff, refused, attempt, line}``."""
    step = _mapping(step, "the input (the step)", "one_variable_gate")
    previous = step.get("previous") or {}
    identity = {"hosts": dict(zip(step.get("nodes") or [], identities or [])),
                "request": dict((k, v) for k, v in (step.get("request") or {}).items() if k != "repeat")}
    try:
        diff = _diff.record_diff(identity, previous.get("identity"), allowed=step.get("allowed", []),
                                 previous_run=previous.get("run"))
    except _diff.DiffError as exc:
        raise AnsibleFilterError("one_variable_gate: %s" % exc)
    return dict(_ladder.one_variable_gate(step, diff, case_id), identity=identity, diff=diff)


def minimal_plan(play_hosts, inputs, model_config_raw=None, host_name=None, request=None, previous=None):
    """The minimal start from ``inputs`` (nnodes and _ladder.minimal_plan's keywords), in two calls. Without
    ``model_config_raw``: ``{nodes, model_ref, read_config, unplannable, secret}`` (the first nnodes hosts, the model
    loaded, whether its config.json is read on the head, why nothing can be planned or None, whether the plan holds
    secrets - a production command or a secret environment: the play hides it). With it (the head's slurp, read or
    not): also minimal_plan's answer, its lines prefixed ``reproduce | <host_name> |``, and ``step``: the minimal
    step (_ladder.build_step) with the fixed ``request`` and the run to compare with (``previous``; none for the
    first run of a case), or None without a request (a plan for a resumed ladder)."""
    inputs = dict(inputs or {})
    nnodes = _ladder._as_int(inputs.pop("nnodes", 1))
    hosts = [str(h) for h in play_hosts or []]
    nodes = hosts[:max(nnodes, 0)]
    trust = str(inputs.get("trust_remote_code", "auto"))
    out = {"nodes": nodes, "model_ref": None, "read_config": False, "unplannable": None,
           "secret": bool(inputs.get("production_argv") or inputs.get("secret_env"))}
    if nnodes < 1 or len(nodes) != nnodes:
        out["unplannable"] = ("repro_vllm_nnodes is %s but the play has only %d host(s) (%s); add the worker nodes to "
                              "the inventory or lower repro_vllm_nnodes" % (nnodes, len(hosts), ", ".join(hosts)))
        return out
    argv = inputs.get("production_argv") or []
    if not inputs.get("model") and not argv:
        out["unplannable"] = _ladder.NO_MODEL
        return out
    out["model_ref"] = minimal_command(argv, env=inputs.get("production_env"), keep=inputs.get("keep"),
                                       keep_env=inputs.get("keep_env"), trust_remote_code="true")["model"] \
        if argv else str(inputs.get("model"))
    out["read_config"] = trust.lower() == "auto" and out["model_ref"][:1] in ("/", ".", "~")
    if model_config_raw is None:
        return out
    config = {}
    content = model_config_raw.get("content") if isinstance(model_config_raw, dict) else None
    if content:
        try:
            config = json.loads(base64.b64decode(content).decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise AnsibleFilterError("minimal_startup: the model's config.json (%s/config.json on the head) is not JSON: "
                                     "%s; fix the file, or set repro_vllm_trust_remote_code to true or false"
                                     % (out["model_ref"], exc))
    inputs.update(model=str(inputs.get("model", "")), vllm_bin=str(inputs.get("vllm_bin", "vllm")),
                  allow_unknown=_ladder._as_bool(inputs.get("allow_unknown", False)))
    try:
        out.update(_ladder.minimal_plan(nodes, out["model_ref"], model_config=config, **inputs))
        out["step"] = None if request is None else _ladder.build_step(
            "minimal", base=out["base"], request=request, previous=previous)
    except (_ladder.LadderError, CommandError) as exc:
        raise AnsibleFilterError("minimal_startup: %s" % exc)
    if host_name:
        out["lines"] = ["reproduce | %s | %s" % (host_name, line) for line in out["lines"]]
    return out


class FilterModule:
    """repro.vllm ladder: its steps and its decisions."""

    def filters(self):
        return {"_ladder_start": ladder_start, "_last_good": last_good, "_layer_plan": layer_plan,
                "_layer_judged": layer_judged, "_job_exit": job_exit,
                "_one_variable_gate": one_variable_gate, "_minimal_plan": minimal_plan}
