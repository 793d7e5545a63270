"""The one verdict of a case: what happened in its latest play, in a closed vocabulary and one sentence.

``case_verdict(case_dir)`` (or ``verdict_of_runs(runs)`` on runs read with ``read_light``) reads only what a run
says about itself at its root - ``manifest.json`` (``metadata.status``, ``metadata.play_id`` when the run has them),
``compatibility.json``, ``collective.json``, ``outcome.json``, ``repeat.json`` - never a host folder, so it is cheap
for a job of a thousand hosts.  It answers::

    {"verdict": one of VERDICTS, "verdict_detail": {layer, stage, error_class, run, rollback, facts},
     "verdict_sentence": "...", "play": {"play_id", "runs", "how"}, "history": [earlier plays, newest first]}

**The play.**  A run made before issue 22 records no play id.  Until runs carry ``metadata.play_id`` (used when
present), a play is the fingerprint run that opens it (reproduce.yml and fingerprint.yml open every play with one;
audit.yml's run is its own play) and every run after it up to the next such run; runs before the case's first
fingerprint run form one play.  The play id is then the first run's id (``run-004``).  A ladder resumed with
``repro_vllm_ladder_resume`` makes no fingerprint run, so it belongs to the play it continues.

**The vocabulary**, first match wins:

``boundary``           a fingerprint/audit run's ``compatibility.json`` says ``fail``: facts are its violated facts.
``collective_failed``  a collective run's ``collective.json`` says ``ok: false``.
``fails_at_minimal``   the minimal start (or a replayed start with no layer) failed.
``fails_at_layer``     a ladder layer failed, or served without meeting its expectation (``expectation_met: false``:
                       error class ``expectation_not_met``); rollback says whether the earlier state came back.
``refused``            a step was refused before anything started (outcome ``refused`` or status ``refused``).
``incomplete``         a run was left open (no manifest) or sealed ``incomplete``.
``healthy``            none of the above.

Rollbacks and second clean runs never decide the verdict: a rollback answers ``rollback`` of the layer it undoes,
a repeat answers the hand-off's repeat item.  Run status: ``metadata.status`` when the manifest has it (``ok``,
``failed``, ``refused``, ``incomplete``), else derived from outcome.json / the manifest as ``run_status`` says.

Python standard library only (controller: filters, the hand-off module, the workflow result).
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import os
import re

from ansible_collections.repro.vllm.plugins.module_utils.record import _evidence
from ansible_collections.repro.vllm.plugins.module_utils.ladder._command import EXTRA_LAYER_ORDER, LADDER_ORDER

VERDICTS = ("boundary", "collective_failed", "fails_at_minimal", "fails_at_layer", "refused", "incomplete", "healthy")
STATUSES = ("ok", "failed", "refused", "incomplete")
PLAY_OPENERS = ("fingerprint", "audit")
_RUN_RE = re.compile(r"^run-([0-9]{3,})$")
_PARTS = ("compatibility.json", "collective.json", "outcome.json", "repeat.json")


class VerdictError(Exception):
    """A case folder that cannot be read; the message names the folder or file."""


def _load(path):
    """A run's JSON part (None when absent), read the one way records are read (_evidence)."""
    try:
        return _evidence._load_json(path)  # pylint: disable=protected-access
    except _evidence.EvidenceError as exc:
        raise VerdictError(str(exc))


def read_light(path):
    """A run's root only: dict(run, path, frozen, metadata, created, parts) - no host folder is read."""
    manifest = _load(os.path.join(path, "manifest.json"))
    parts = {}
    for name in _PARTS:
        data = _load(os.path.join(path, name))
        if isinstance(data, dict):
            parts[name] = data
    return {"run": os.path.basename(path.rstrip("/")), "path": path, "frozen": isinstance(manifest, dict),
            "metadata": ((manifest or {}).get("metadata") or {}) if isinstance(manifest, dict) else {},
            "created": (manifest or {}).get("created") if isinstance(manifest, dict) else None, "parts": parts}


def case_runs(case_dir):
    """Every run-NNN folder of a case, oldest first, read with read_light."""
    if not os.path.isdir(case_dir):
        raise VerdictError("%s is not a case folder (expected <records_root>/<case_id> holding run-NNN)" % case_dir)
    names = sorted((int(m.group(1)), n) for n in os.listdir(case_dir)
                   for m in [_RUN_RE.match(n)] if m and os.path.isdir(os.path.join(case_dir, n)))
    return [read_light(os.path.join(case_dir, n)) for _num, n in names]


def _purpose(run):
    meta = run.get("metadata") or {}
    outcome = (run.get("parts") or {}).get("outcome.json") or {}
    if meta.get("purpose") or outcome.get("purpose"):
        return meta.get("purpose") or outcome.get("purpose")
    if "collective.json" in (run.get("parts") or {}):
        return "collective"
    return None


def _layer(run):
    """The ladder layer an attempt tried: outcome.json ``layer``, else its step when the step is a layer's name."""
    outcome = (run.get("parts") or {}).get("outcome.json") or {}
    if outcome.get("layer"):
        return str(outcome["layer"])
    step = run_step(run)
    return step if step in LADDER_ORDER + EXTRA_LAYER_ORDER + ["unknown_options"] else None


def run_step(run):
    """The step a run made - the one chooser (the verdict and the hand-off): outcome.json ``step``, else
    changes.json ``step``, else the manifest's ``metadata.step`` (an attempt writes the same step name in all three;
    the order matters only for a run missing some), else its purpose (``_purpose``); None when it has none."""
    parts = run.get("parts") or {}
    for found in ((parts.get("outcome.json") or {}).get("step"), (parts.get("changes.json") or {}).get("step"),
                  (run.get("metadata") or {}).get("step")):
        if found:
            return found
    return _purpose(run)


def run_status(run):
    """ok | failed | refused | incomplete: ``metadata.status`` when recorded, else derived (runs made before it)."""
    meta = run.get("metadata") or {}
    if meta.get("status") in STATUSES:
        return meta["status"]
    if not run.get("frozen"):
        return "incomplete"
    parts = run.get("parts") or {}
    outcome = parts.get("outcome.json")
    if isinstance(outcome, dict):
        if outcome.get("refused"):
            return "refused"
        return "ok" if outcome.get("ok") else "failed"
    coll = parts.get("collective.json")
    if isinstance(coll, dict) and coll.get("ok") is False:
        return "failed"
    return "ok"


def plays(runs):
    """[{play_id, runs: [run ...], how}] oldest first (see the module's docstring for what a play is)."""
    out = []
    for run in runs:
        meta = run.get("metadata") or {}
        pid = meta.get("play_id")
        if pid:
            if out and out[-1]["play_id"] == pid:
                out[-1]["runs"].append(run)
            else:
                out.append({"play_id": str(pid), "runs": [run], "how": "metadata.play_id"})
            continue
        if not out or _purpose(run) in PLAY_OPENERS or out[-1]["how"] == "metadata.play_id":
            out.append({"play_id": run["run"], "runs": [run],
                        "how": "no play id recorded: the runs from %s (%s) to the next fingerprint or audit run"
                               % (run["run"], _purpose(run) or "no purpose")})
        else:
            out[-1]["runs"].append(run)
    return out


def _detail(layer=None, stage=None, error_class=None, run=None, rollback="not_applicable", facts=None):
    return {"layer": layer, "stage": stage, "error_class": error_class, "run": run, "rollback": rollback,
            "facts": list(facts or [])}


def _is_rollback(run):
    outcome = (run.get("parts") or {}).get("outcome.json") or {}
    return _purpose(run) == "rollback" or bool(outcome.get("rollback_of"))


def _is_repeat(run):
    outcome = (run.get("parts") or {}).get("outcome.json") or {}
    return _purpose(run) == "repeat" or "repeat.json" in (run.get("parts") or {}) or bool(outcome.get("repeat_of"))


def _repeats(run):
    """The run id a second clean run repeats (repeat.json ``repeats``, outcome.json ``repeat_of``, the manifest)."""
    parts = run.get("parts") or {}
    for value in ((parts.get("repeat.json") or {}).get("repeats"), (parts.get("outcome.json") or {}).get("repeat_of"),
                  (run.get("metadata") or {}).get("repeats")):
        if isinstance(value, dict):
            value = value.get("run")
        if value:
            return str(value)
    return None


def _rollback_of(failed, runs):
    """returned | not_returned for the rollback run that undoes ``failed``; None when no rollback run was made."""
    after = False
    for run in runs:
        if run is failed:
            after = True
            continue
        if not after or not _is_rollback(run):
            continue
        outcome = run["parts"].get("outcome.json") or {}
        of = outcome.get("rollback_of")
        if isinstance(of, dict) and of.get("failed_run") not in (None, failed["run"]):
            continue
        returned = outcome.get("earlier_state_returned")
        if returned is None:
            returned = bool(outcome.get("ok"))
        return "returned" if returned else "not_returned"
    return None


def verdict_of_runs(runs, case_id=None):
    """The verdict of one play's runs (read_light answers, oldest first): dict(verdict, verdict_detail, verdict_sentence)."""
    case_id = case_id or ((runs[0].get("metadata") or {}).get("case_id") if runs else None) or "-"
    attempts = [r for r in runs if isinstance(r["parts"].get("outcome.json"), dict)]

    for run in runs:
        compat = run["parts"].get("compatibility.json")
        if isinstance(compat, dict) and compat.get("verdict") == "fail":
            facts = sorted({str(v.get("fact")) for v in compat.get("violations") or [] if isinstance(v, dict)
                            and v.get("fact")})
            return _answer("boundary", _detail(run=run["run"], facts=facts), case_id,
                           "case %s stops at the compatibility boundary: %s (profile %s, %s; vLLM was not started)"
                           % (case_id, ", ".join(facts) or "violations", compat.get("profile") or "-", run["run"]))

    for run in runs:
        coll = run["parts"].get("collective.json")
        if isinstance(coll, dict) and coll.get("ok") is False:
            d = _detail(stage=coll.get("stage"), error_class=coll.get("error_class"), run=run["run"])
            return _answer("collective_failed", d, case_id,
                           "case %s fails at the collective checkpoint: %s (stage %s, %s; vLLM was not started)"
                           % (case_id, d["error_class"] or "no error class", d["stage"] or "unknown", run["run"]))

    here = {r["run"] for r in runs}
    # a second clean run of an attempt of this play answers the repeat, not the verdict; one that repeats a run of
    # an earlier play is this play's own attempt
    deciding = [r for r in attempts if not _is_rollback(r) and not (_is_repeat(r) and _repeats(r) in here)
                and run_status(r) not in ("refused", "incomplete")]
    for run in deciding:
        outcome = run["parts"]["outcome.json"]
        if _layer(run) or outcome.get("ok"):
            continue
        d = _detail(stage=outcome.get("stage"), error_class=outcome.get("error_class"), run=run["run"])
        return _answer("fails_at_minimal", d, case_id,
                       "case %s fails at the minimal start: %s (stage %s, %s; rollback not applicable)"
                       % (case_id, d["error_class"] or "no error class", d["stage"] or "unknown", run["run"]))

    for run in deciding:
        outcome = run["parts"]["outcome.json"]
        layer = _layer(run)
        if not layer:
            continue
        if outcome.get("ok") and outcome.get("expectation_met") is not False:
            continue
        unmet = bool(outcome.get("ok"))
        rollback = _rollback_of(run, runs)
        d = _detail(layer=str(layer), stage=None if unmet else outcome.get("stage"),
                    error_class="expectation_not_met" if unmet else outcome.get("error_class"), run=run["run"],
                    rollback=rollback)
        where = ("it served, but its expectation was not met" if unmet else
                 "stage %s" % (d["stage"] or "unknown"))
        back = {"returned": "the rollback returned the earlier state",
                "not_returned": "the rollback did NOT return the earlier state",
                None: "no rollback run"}[rollback]
        return _answer("fails_at_layer", d, case_id, "case %s fails at ladder layer %s: %s (%s, %s; %s)"
                       % (case_id, layer, d["error_class"] or "no error class", where, run["run"], back))

    for run in runs:
        if run_status(run) == "refused":
            outcome = run["parts"].get("outcome.json") or {}
            d = _detail(layer=_layer(run), run=run["run"])
            why = outcome.get("refusal") or outcome.get("reason") or outcome.get("summary") or "see its notes.md"
            return _answer("refused", d, case_id, "case %s: step %s was refused before anything started (%s): %s"
                           % (case_id, run_step(run) or "-", run["run"], _one_line(why)))

    for run in runs:
        if run_status(run) == "incomplete":
            meta = run.get("metadata") or {}
            why = meta.get("seal_reason") or ("no manifest.json: the play that opened it stopped before freezing it"
                                              if not run.get("frozen") else "sealed incomplete")
            return _answer("incomplete", _detail(run=run["run"], rollback=None), case_id,
                           "case %s is incomplete: %s (%s) was not finished: %s" % (case_id, run["run"], run_step(run) or "-",
                                                                                    why))

    served = [r for r in attempts if not _is_rollback(r)]
    last = served[-1]["run"] if served else (runs[-1]["run"] if runs else None)
    if served:
        steps = []
        for r in served:
            s = run_step(r)
            if s and s not in steps:
                steps.append(s)
        text = "case %s is healthy: every attempt passed (%s; last %s)" % (case_id, " -> ".join(steps), last)
    else:
        text = "case %s is healthy: nothing failed and no server was started (%s)" % (case_id, last or "no run")
    return _answer("healthy", _detail(run=last), case_id, text)


def _one_line(text, limit=240):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _answer(verdict, detail, case_id, sentence):
    return {"verdict": verdict, "verdict_detail": detail, "verdict_sentence": sentence}


def verdict_of_case(runs, case_id):
    """The verdict of the latest play of ``runs`` (a case's runs, oldest first: read_light or _evidence.read_run
    answers), with ``play`` (play_id, runs, how) and ``history`` (the earlier plays' verdicts, newest first)."""
    groups = plays(runs)
    if not groups:
        ans = _answer("incomplete", _detail(rollback=None), case_id, "case %s is incomplete: it has no run" % case_id)
        ans.update(play=None, history=[])
        return ans
    latest = groups[-1]
    ans = verdict_of_runs(latest["runs"], case_id)
    ans["play"] = {"play_id": latest["play_id"], "runs": [r["run"] for r in latest["runs"]], "how": latest["how"]}
    history = []
    for g in reversed(groups[:-1]):
        h = verdict_of_runs(g["runs"], case_id)
        history.append({"play_id": g["play_id"], "runs": [r["run"] for r in g["runs"]], "verdict": h["verdict"],
                        "verdict_detail": h["verdict_detail"], "verdict_sentence": h["verdict_sentence"]})
    ans["history"] = history
    return ans


def case_verdict(case_dir, runs=None, exclude=None):
    """The verdict of the case folder's latest play (verdict_of_case); ``runs`` (run ids) limits the case to those
    runs (the hand-off's repro_vllm_handoff_runs), ``exclude`` leaves runs out (one still being written)."""
    case_dir = os.path.abspath(str(case_dir))
    every = case_runs(case_dir)
    if runs:
        every = [r for r in every if r["run"] in runs]
    if exclude:
        every = [r for r in every if r["run"] not in exclude]
    return verdict_of_case(every, os.path.basename(case_dir))


# summary.md's title by verdict (public: docs/handoff.md, "The title"): [Bug] only for a failure in vLLM; a stop the
# method made, a configuration vLLM refused by design, an unfinished run or a healthy case say what they are
TITLES = (
    ("fails_at_minimal", "Bug"),
    ("fails_at_layer", "Bug"),
    ("config_refused", "Configuration refused by vLLM"),
    ("host_environment", "Host environment"),
    ("boundary", "Compatibility boundary"),
    ("collective_failed", "Collective check failed"),
    ("refused", "Refused before start"),
    ("incomplete", "Incomplete run"),
    ("healthy", "No failure"),
)
CONFIG_STAGE = "config"


def title_kind(answer):
    """The row of TITLES for a verdict. A failure is a bug of vLLM's unless it is vLLM refusing its configuration by
    design (stage ``config``, error class ``config_error``: its message names what allows it) - ``config_refused`` -
    or the host's environment before vLLM's own code ran (stage ``environment``: a port in use, no executable) -
    ``host_environment``."""
    verdict = (answer or {}).get("verdict")
    detail = (answer or {}).get("verdict_detail") or {}
    if verdict in ("fails_at_minimal", "fails_at_layer"):
        if detail.get("stage") == CONFIG_STAGE and detail.get("error_class") == "config_error":
            return "config_refused"
        if detail.get("stage") == "environment":
            return "host_environment"
    return verdict if verdict in dict(TITLES) else "incomplete"


def title(answer):
    """summary.md's first line (without the ``# ``): ``[<title by verdict>]: <the verdict sentence>`` (TITLES)."""
    return "[%s]: %s" % (dict(TITLES)[title_kind(answer)], answer.get("verdict_sentence"))
