# -*- coding: utf-8 -*-
"""Issue 32 item 4: a declared secret never corrupts a record and never leaks, whatever its name or shape.

playbooks/reproduce.yml (fingerprint, the minimal start with its one request: one real CPU vLLM start each) runs
twice through ansible-runner on localhost: once without secrets, once with ``repro_vllm_secret_env`` holding a
single character, a digit-only value, a host-name-like value and a value under a plain name (CORP_CREDS). Every
frozen file of the second must equal the first after normalising what differs between any two runs (run ids,
times, pids, durations, sizes, digests: every digit run and long hex run), apart from the planted variables
themselves. The run without secrets says "minimal only" as ``repro_vllm_ladder_until: none``, the other as ``""``.
Before this, Ansible's no_log masking rewrote every "1" of server.json and terminal.log (exit_code,
the port, 127.0.0.1) and CORP_CREDS was written in clear into command.json. All secrets here are obviously fake.
"""
from __future__ import annotations

import json
import os
import re

import pytest

from conftest import ROOT, free_port, run_playbook

INVENTORY = os.path.join(ROOT, "inventories", "localhost")
CASE = "secrets"
PLANTED = {
    "REPRO_TEST_ONE": "1",                            # single character: Ansible masked every "1" of the result
    "REPRO_TEST_DIGITS": "2026",                      # digit-only: every year, port and count holds digits
    "REPRO_TEST_HOST": "vault-7.corp.invalid",        # host-name-like
    "CORP_CREDS": "corp-FAKE-credential-for-tests",   # a plain name: not a secret by its name or shape
}
_HEX = re.compile(r"[0-9a-f]{8,}")
# a redaction marker's id is an HMAC under the run's own key: another hex run in every run, all digits in about one
# of forty (a CI run failed on it once), so it is normalised as an id whatever its digits
_MARKER_ID = re.compile(r"(<redacted:[a-z0-9_]+:)[0-9a-f]{8,64}>")
_DIGITS = re.compile(r"[0-9]+")
# the planted variables themselves inside a result the play log shows ("NAME": "<redacted>")
_PLANTED_ITEM = re.compile(r'"(?:%s)": "<redacted[^"]*>", ' % "|".join(PLANTED))
# vLLM's own shutdown noise, which comes in some stops and not in others of the same server (an EngineDeadError
# logged while the play stops it; the classifier leaves it out as after_stop): not a difference the secrets made
_METHODS = re.compile(r"Methods: ([A-Z, ]+)$")
# what differs between any two runs and is not the run's own: vLLM's shutdown noise (after_stop, below). Other plays'
# servers on the host (the sweep's "live" and "cleaned", server.json's "other_live_runs" and "leftovers_cleaned") are
# kept out by a lease folder of the test's own (repro_vllm_lease_dir): parallel tests' runs come and go between the two
_OTHERS = ("after_stop",)
_RESULT_LINE = re.compile(r"^(?P<head>\S+ (?:ok|changed|failed|fatal): \[[^\]]+\]) (?P<json>\{.*\})$")
_AFTER_STOP = ((re.compile(r" \\?\| an error logged during the stop is not counted"), ""),
               (re.compile(r"; N error line\(s\) after the stop \(shutdown noise, see after_stop\)"), ""),
               (re.compile(r"no failure while the server was serving; N error line\(s\) logged after the last liveness "
                           r"check, .*$"), "no failure found; API ready since N-N N:N:N"))


def _reproduce(work, secrets, lease_dir):
    # "minimal only", written both ways (issue 32 item 6: none is what people type): the two runs must still agree
    v = {"repro_vllm_records_root": str(work / "records"), "repro_vllm_case_id": CASE, "repro_vllm_lease_dir": lease_dir,
         "repro_vllm_remote_root": str(work / "remote"), "repro_vllm_port": free_port(),
         "repro_vllm_ladder_until": "" if secrets else "none"}
    if secrets:
        v["repro_vllm_secret_env"] = dict(secrets)
    return run_playbook(work, "playbooks/reproduce.yml", INVENTORY, v, ident="run")


@pytest.fixture(scope="module")
def two_runs(real_vllm, tmp_path_factory):
    out = {}
    lease_dir = str(tmp_path_factory.mktemp("leases"))
    for name, secrets in (("plain", None), ("secret", PLANTED)):
        work = tmp_path_factory.mktemp(name)
        r = _reproduce(work, secrets, lease_dir)
        out[name] = {"runner": r, "out": r.stdout.read(), "work": work}
    return out


def _text(s, work):
    s = _MARKER_ID.sub(r"\1H>", _PLANTED_ITEM.sub("", s.replace(str(work), "<WORK>")))
    s = _DIGITS.sub("N", _HEX.sub(lambda m: m.group(0) if m.group(0).isdigit() else "H", s))
    for rx, to in _AFTER_STOP:
        s = rx.sub(to, s)
    # vLLM lists a route's methods from a set: GET, HEAD in one start, HEAD, GET in another
    return _METHODS.sub(lambda m: "Methods: " + ", ".join(sorted(m.group(1).split(", "))), s)


def _line(line, work):
    """A text line normalised; a task result the play log holds as JSON is normalised as data."""
    m = _RESULT_LINE.match(line)
    if m:
        try:
            data = json.loads(m.group("json"))
        except ValueError:
            data = None
        if isinstance(data, dict):
            return _text(m.group("head"), work) + " " + json.dumps(_norm(data, work), sort_keys=True)
    return _text(line, work)


def _norm(value, work):
    """Run ids, times, pids, durations, sizes and digests normalised; the planted variables themselves left out."""
    if isinstance(value, dict):
        return {_text(k, work): _norm(v, work) for k, v in value.items() if k not in PLANTED and k not in _OTHERS}
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and "cmdline" in v for v in value):
            return _processes(value, work)
        return [_norm(v, work) for v in value if not (isinstance(v, str) and v in PLANTED)]
    if isinstance(value, str):
        return _text(value, work)
    if isinstance(value, bool) or value is None:
        return value
    return "N"


def _processes(procs, work):
    """A list of processes as the set of what they are. Their order follows pids, which wrap on a busy machine (a
    worker can hold a lower pid than its parent), and a vLLM child shows its parent's command line until it has set
    its own title (VLLM::Worker, VLLM::EngineCore): which of the two a snapshot catches is timing, not the secrets.
    Every child of the server is written as the server's command line; a masked character would still show there."""
    server = [p for p in procs if " serve " in str(p.get("cmdline", ""))]
    out = []
    for p in procs:
        p = dict(p)
        if server and (str(p.get("cmdline", "")).startswith("VLLM::") or str(p.get("comm", "")).startswith("VLLM::")):
            p["cmdline"], p["comm"] = server[0]["cmdline"], server[0].get("comm")
        out.append(json.dumps(_norm(p, work), sort_keys=True))
    return [json.loads(x) for x in sorted(set(out))]


def _frozen(work):
    """{relative path: normalised content} of every frozen file of the case (JSON as data, text as its set of
    lines: two servers print their periodic lines a different number of times)."""
    base = work / "records" / CASE
    files = {}
    for root, _dirs, names in os.walk(str(base)):
        for name in names:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, str(base))
            if rel.startswith(".") or "/" not in rel:  # the case key and the case's own indexes are not records
                continue
            with open(path, "rb") as f:
                raw = f.read().decode("utf-8", errors="replace")
            if name.endswith(".json"):
                files[rel] = _norm(json.loads(raw), work)
                continue
            lines = raw.splitlines()
            if name == "server.log":  # the log while the server served: what follows the stop is vLLM's noise
                with open(os.path.join(root, "..", "..", "..", "outcome.json")) as f:
                    lines = lines[:int(json.load(f)["lines_when_last_alive"][os.path.basename(os.path.dirname(root))])]
            # the task that writes the secret file runs only when there are secrets (its result hidden: no_log)
            files[rel] = sorted({_line(line, work) for line in lines if not line.endswith("(output hidden: no_log)")
                                 and not line.startswith("- not counted: ")})
    return files, base


def _differences(a, b, where=""):
    """Where two normalised values differ: [(path, a's value, b's value)], each value cut to 500 characters."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), "%s/%s" % (where, k))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, "%s[%d]" % (where, i))]
    if a == b:
        return []
    return [(where or "/", json.dumps(a, sort_keys=True)[:500], json.dumps(b, sort_keys=True)[:500])]


def test_secrets_reached_no_record_changed_and_none_leaked(two_runs):
    plain, secret = two_runs["plain"], two_runs["secret"]
    assert plain["runner"].status == "successful", plain["out"][-4000:]
    assert secret["runner"].status == "successful", secret["out"][-4000:]
    a, _base = _frozen(plain["work"])
    b, base = _frozen(secret["work"])
    assert sorted(a) == sorted(b)
    changed = {}
    for rel in sorted(a):
        if a[rel] != b[rel]:
            changed[rel] = _differences(a[rel], b[rel])
    assert not changed, "frozen files differ beyond the planted variables: %s" % json.dumps(changed, indent=1)
    # nothing was masked and no value leaked, anywhere
    unambiguous = [v for v in PLANTED.values() if len(v) >= 8]
    for root, _dirs, names in os.walk(str(base)):
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                text = f.read().decode("utf-8", errors="replace")
            assert "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" not in text and "********" not in text, name
            for value in unambiguous:
                assert value not in text, "%s holds a declared secret in clear" % os.path.join(root, name)
    assert all(v not in secret["out"] for v in unambiguous)
    # the declared variables are in the attempt's command.json, every one redacted by the case key
    commands = [os.path.join(r, "command.json") for r, _d, n in os.walk(str(base)) if "command.json" in n]
    assert commands
    for path in commands:
        with open(path) as f:
            cmd = json.load(f)
        assert sorted(cmd["secret_env_names"]) == sorted(PLANTED)
        for name in PLANTED:
            assert re.fullmatch(r"<redacted:declared_secret:[0-9a-f]{8}>", cmd["env"][name]), (name, cmd["env"][name])
    # nothing of the secret file is left on the host
    assert not [n for _r, _d, names in os.walk(str(secret["work"] / "remote")) for n in names if "secret" in n]
