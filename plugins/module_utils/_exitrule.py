# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one rule for a job's exit status, applied at the end of every playbook (docs/method.md, "Exit status").

The job fails (ansible-playbook rc 2; AWX ``failed``) when what it found says something is wrong: a compatibility
violation of a host or of the job, a host that drifted from its reference (audit.yml), a host that is not complete in
its run (unreachable, lost, degraded), a failure the reproduction found, a step the ladder refused. It fails after
every run is frozen and the result is handed on. ``repro_vllm_record_only: true`` makes such a job only record: it
ends successful and says on the console what it would have failed on. An error of the job itself (the judge could not
read a host's part, a run that cannot close) fails it always. An interrupt is not decided here: ansible-core ends
with rc 99 (AWX ``canceled``).

The names it replaces are still read until the release after 0.2.0, each with a deprecation warning naming
``repro_vllm_record_only``; ``repro_vllm_record_only`` wins when it is given. Each old name said "fail on X" (true) or
"do not" (false); the job now fails on all of them together, so an old name that said "do not fail" means record
only and one that said "fail" means not record only; when old names disagree, record only wins (an operator who
turned one failure off kept a job green on purpose, and gets the same until they set the new name):

==============================  ======  ==========================
old name                        value   repro_vllm_record_only
==============================  ======  ==========================
repro_vllm_audit_strict         true    false
repro_vllm_audit_strict         false   true
repro_vllm_fail_on_incomplete   true    false
repro_vllm_fail_on_incomplete   false   true
repro_vllm_fail_on_finding      true    false
repro_vllm_fail_on_finding      false   true
==============================  ======  ==========================
"""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean

RECORD_ONLY = "repro_vllm_record_only"
# the old names, each read as "fail on it" (true) or not; removed in the release after 0.2.0
DEPRECATED = ("repro_vllm_audit_strict", "repro_vllm_fail_on_incomplete", "repro_vllm_fail_on_finding")
REMOVED_IN = "0.3.0"


class ExitRuleError(ValueError):
    """A value that is not a boolean."""


def _bool(name, value):
    try:
        return boolean(value, strict=True)
    except TypeError as exc:
        raise ExitRuleError("%s must be a boolean, not %r" % (name, value)) from exc


def record_only(variables):
    """``(record_only, deprecations)`` from the job's variables (``{name: value}``; a missing name or None is not
    given): ``repro_vllm_record_only`` when given, else what the old names given say (table above), else false.
    ``deprecations``: one sentence per old name given."""
    # None or "" (a survey left empty, a variable defaulted to none in Jinja): not given
    variables = dict((k, v) for k, v in (variables or {}).items() if v is not None and v != "")
    given = {n: variables[n] for n in DEPRECATED if n in variables}
    deprecations = []
    new = variables.get(RECORD_ONLY)
    for name, value in sorted(given.items()):
        fails = _bool(name, value)
        deprecations.append("%s is deprecated and is removed in %s: use %s (%s=%s is read as %s=%s%s)" % (
            name, REMOVED_IN, RECORD_ONLY, name, str(fails).lower(), RECORD_ONLY, str(not fails).lower(),
            "; ignored, %s is given" % RECORD_ONLY if new is not None else ""))
    if new is not None:
        return _bool(RECORD_ONLY, new), deprecations
    return any(not _bool(n, v) for n, v in given.items()), deprecations


def job_exit(variables=None, violations=0, drifted=(), incomplete=(), finding=None, refused=None, errors=()):
    """Whether the job fails at its end, and why. ``variables``: the job's ``repro_vllm_record_only`` and old names
    (record_only); ``violations``: how many compatibility violations the run's judge found; ``drifted``: the hosts
    that drifted from their reference; ``incomplete``: the hosts not complete in the run; ``finding``: the failure
    the reproduction found (its line), ``refused``: the step the ladder refused (its line); ``errors``: errors of the
    job itself (always fail).

    Returns ``{fails, record_only, why, recorded, errors, deprecations, lines}``: ``why`` the reasons it fails
    (``errors`` included), ``recorded`` the reasons it would fail but only records, ``lines`` the console's lines
    (``exit | ...``)."""
    only, deprecations = record_only(variables)
    reasons = []
    if violations:
        reasons.append("%d compatibility violation(s)" % violations)
    if drifted:
        reasons.append("drift: %s" % ", ".join(str(h) for h in drifted))
    if incomplete:
        reasons.append("not every host is complete in it: %s" % ", ".join(str(h) for h in incomplete))
    if finding:
        reasons.append("a failure was found: %s" % finding)
    if refused:
        reasons.append("a step was refused: %s" % refused)
    errors = [str(e) for e in errors or [] if e]
    why = errors + ([] if only else reasons)
    recorded = reasons if only else []
    lines = ["WARNING: %s" % d for d in deprecations]
    if recorded:
        lines.append("exit | record only (%s): the job does not fail on %s" % (RECORD_ONLY, "; ".join(recorded)))
    return {"fails": bool(why), "record_only": only, "why": why, "recorded": recorded, "errors": errors,
            "deprecations": deprecations, "lines": lines}
