"""The one rule for a job's exit status, applied at the end of every playbook (docs/method.md, "Exit status").

The job fails (ansible-playbook rc 2; AWX ``failed``) when what it found says something is wrong: a compatibility
violation of a host or of the job, a host that drifted from its reference (audit.yml), a host that is not complete in
its run (unreachable, lost, degraded), a failure the reproduction found, a step the ladder refused. It fails after
every run is frozen and the result is handed on. ``repro_vllm_record_only: true`` makes such a job only record: it
ends successful and says on the console what it would have failed on. An error of the job itself (the judge could not
read a host's part, a run that cannot close) fails it always. An interrupt is not decided here: ansible-core ends
with rc 99 (AWX ``canceled``).
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean

RECORD_ONLY = "repro_vllm_record_only"


class ExitRuleError(ValueError):
    """A value that is not a boolean."""


def _bool(name, value):
    try:
        return boolean(value, strict=True)
    except TypeError as exc:
        raise ExitRuleError("%s must be a boolean, not %r" % (name, value)) from exc


def record_only(variables):
    """``repro_vllm_record_only`` from the job's variables (``{name: value}``): false when it is missing, None or
    empty (a survey left empty, a variable defaulted to none in Jinja)."""
    value = (variables or {}).get(RECORD_ONLY)
    return False if value is None or value == "" else _bool(RECORD_ONLY, value)


def job_exit(variables=None, violations=0, drifted=(), incomplete=(), finding=None, refused=None, errors=()):
    """Whether the job fails at its end, and why. ``variables``: the job's ``repro_vllm_record_only``
    (record_only); ``violations``: how many compatibility violations the run's judge found; ``drifted``: the hosts
    that drifted from their reference; ``incomplete``: the hosts not complete in the run; ``finding``: the failure
    the reproduction found (its line), ``refused``: the step the ladder refused (its line); ``errors``: errors of the
    job itself (always fail).

    Returns ``{fails, record_only, why, recorded, errors, lines}``: ``why`` the reasons it fails
    (``errors`` included), ``recorded`` the reasons it would fail but only records, ``lines`` the console's lines
    (``exit | ...``)."""
    only = record_only(variables)
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
    lines = []
    if recorded:
        lines.append("exit | record only (%s): the job does not fail on %s" % (RECORD_ONLY, "; ".join(recorded)))
    return {"fails": bool(why), "record_only": only, "why": why, "recorded": recorded, "errors": errors,
            "lines": lines}
