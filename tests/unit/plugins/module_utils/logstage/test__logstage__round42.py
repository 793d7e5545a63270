"""Round 42 of issue 35 (after the fresh batch issue35ai was frozen and scored; each from its tool's source or
documentation): a vLLM record whose date carries the year (Python's default asctime, as a logging config that keeps
vLLM's format but not its datefmt writes it), the blank record after a chain line that opens a paste, and the shell's
segmentation-fault report in other locales (glibc's strsignal).  Paths are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_parse import Line, parse_line
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/opt/venv/lib/python3.12/site-packages"


@pytest.mark.parametrize("text", [
    "(Worker_TP0 pid=84) ERROR 2026-03-02 22:27:34.901 [multiproc_executor.py:863] WorkerProc hit an exception.",
    "(Worker_TP0 pid=84) ERROR 2026-03-02 22:27:34,901 [multiproc_executor.py:863] WorkerProc hit an exception.",
    "ERROR 2026-03-02 22:27:34,901 [multiproc_executor.py:863] WorkerProc hit an exception.",
])
def test_a_record_dated_with_the_year_is_a_vllm_record(text):
    line = Line()
    parse_line(text, line)
    assert (line.fmt, line.ts, line.rec[2]) == ("vllm", "03-02 22:27:34", "multiproc_executor.py")


def test_a_traceback_logged_with_such_records_is_read_as_one():
    rec = "(EngineCore_DP0 pid=7) ERROR 2026-03-02 22:27:34,901 [core.py:900] "
    text = "".join(rec + line + "\n" for line in (
        "EngineCore failed to start.",
        "Traceback (most recent call last):",
        '  File "%s/vllm/v1/engine/core.py", line 112, in __init__' % _SP,
        "    num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."))
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("engine_init", "oom", 5)


def test_a_paste_that_opens_at_a_chain_line_starts_its_cut_traceback_at_the_traceback_line():
    rec = "(EngineCore_DP0 pid=7) ERROR 02-13 17:19:01 [core.py:900] "
    text = "".join(rec + line + "\n" for line in (
        "The above exception was the direct cause of the following exception:", "",
        "Traceback (most recent call last):",
        '  File "%s/vllm/v1/engine/core.py", line 891, in run_engine_core' % _SP,
        "    engine_core.run_busy_loop()"))
    ans = classify_text(text)
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("request", 3)


def test_an_empty_record_that_no_chain_line_precedes_still_opens_a_traceback():
    rec = "(EngineCore_DP0 pid=7) ERROR 02-13 17:19:01 [core.py:900] "
    text = "".join(rec + line + "\n" for line in (
        "", "Traceback (most recent call last):",
        '  File "%s/vllm/v1/engine/core.py", line 891, in run_engine_core' % _SP,
        "    engine_core.run_busy_loop()"))
    assert classify_text(text)["first_error"]["lineno"] == 1


def test_the_cause_of_a_chain_cut_above_is_placed_by_the_traceback_it_caused():
    # "raise ... from ...": the second traceback's frames are the ones the first exception was raised under
    rec = "(EngineCore_DP0 pid=7) ERROR 02-03 22:43:35 [core.py:968] "
    text = "".join(rec + line + "\n" for line in (
        "    raise TimeoutError", "TimeoutError", "",
        "The above exception was the direct cause of the following exception:", "",
        "Traceback (most recent call last):",
        '  File "%s/vllm/v1/engine/core.py", line 959, in run_engine_core' % _SP,
        "    engine_core.run_busy_loop()",
        '  File "%s/vllm/v1/engine/core.py", line 986, in run_busy_loop' % _SP,
        "    self._process_engine_step()"))
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("request", "timeout", 2)


@pytest.mark.parametrize("line", [
    "\u6bb5\u9519\u8bef (\u6838\u5fc3\u5df2\u8f6c\u50a8)",
    "Speicherzugriffsfehler (Speicherabzug geschrieben)",
    "Erreur de segmentation (core dumped)",
    "\u30bb\u30b0\u30e1\u30f3\u30c6\u30fc\u30b7\u30e7\u30f3\u9055\u53cd\u3067\u3059 (\u30b3\u30a2\u30c0\u30f3\u30d7)",
    "\u041e\u0448\u0438\u0431\u043a\u0430 \u0441\u0435\u0433\u043c\u0435\u043d\u0442\u0438\u0440\u043e\u0432\u0430\u043d\u0438\u044f",
])
def test_the_shells_segfault_report_in_other_locales_is_a_failure(line):
    ans = classify_text("Started engine process with PID 118001\n" + line + "\n")
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("unknown", "other", 2)


@pytest.mark.parametrize("prefix, want", [
    ("c1730", ("request", "timeout", "high", 2)),   # the busy loop's TimeoutError, its traceback cut above
    ("c1711", ("unknown", "other", None, 3)),        # year-dated records from a chain line: the Traceback line
    ("c1724", ("unknown", "other", None, 2)),        # the shell's segfault in a Chinese locale
])
def test_round_42_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
