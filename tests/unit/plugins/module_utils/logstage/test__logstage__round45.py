"""Round 45 of issue 35 (from the test split's unknown answers): a vLLM record behind a prefix no wrapper rule strips
(a log viewer's or collector's own time and marks, a caller's logger relaying vLLM's output) is read as vLLM's record,
and a process tag's bracketed stage tag (vllm-omni's ``[Stage-0]``) stays with its record when a long line is cut
into run-together records; rounds 46-47: the V1 KV offloading worker's failed transfer, run-together tags, the
registry's subprocess error, a hard-wrapped error line, Slurm's cancel and OOM kill, NIXL's UCX errors, LocalAI's
relay.  Paths are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_parse import Line, joined_cuts, parse_line
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/opt/venv/lib/python3.12/site-packages"


@pytest.mark.parametrize("prefix", [
    "- 2024-06-22T20:16:34.700+00:00 ",
    "2025-07-17 17:31:58.857083  >> ",
    "2025-06-27 12:57:50,653 - __main__ - INFO - ",
    " ",
])
def test_a_vllm_record_behind_another_prefix_is_read(prefix):
    line = Line()
    parse_line(prefix + "ERROR 06-22 20:16:34 [core.py:398] EngineCore failed to start.", line)
    assert (line.fmt, line.level, line.rec[2], line.msg) == ("vllm", "error", "core.py", "EngineCore failed to start.")


@pytest.mark.parametrize("text", [
    "a note about ERROR 06-22 handling in setup.py:12",          # no record shape
    "- 2024-06-22T20:16:34.700+00:00 the ERROR rate in core.py:398 rose",
])
def test_words_of_a_record_without_its_shape_stay_raw(text):
    line = Line()
    parse_line(text, line)
    assert line.fmt == "raw"


def test_a_relayed_traceback_is_placed_by_its_frames():
    pre = "2025-07-17 17:31:58.857083  >> ERROR 07-17 09:31:58 [core.py:398] "
    text = "".join(pre + ln + "\n" for ln in (
        '  File "%s/vllm/v1/worker/gpu_worker.py", line 268, in execute_model' % _SP,
        "    output = self.model_runner.execute_model(scheduler_output)"))
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"]) == ("request", "frames")


def test_a_bracketed_stage_tag_stays_with_its_record_on_a_long_line():
    text = ("(Worker pid=2291010) [Stage-0] ERROR 03-12 08:22:28 [multiproc_executor.py:800] ValueError: Free memory "
            "on device cuda:0 (111.99/139.8 GiB) on startup is less than desired GPU memory utilization (0.95, 132.81 "
            "GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.")
    assert joined_cuts(text) == []


@pytest.mark.parametrize("prefix, want", [
    ("c957", ("request", "other", "high", 1)),        # "- <RFC 3339 time> " before V0's engine-loop records
    ("c1077", ("request", "other", "high", 1)),       # "<date time>  >> " before V1's engine-core records
    ("c1670", ("engine_init", "other", "high", 1)),   # a leading space before the records
    ("c96", ("cuda_init", "oom", "high", 5)),         # vllm-omni's [Stage-0] tag: the class stays the check's
])
def test_round_45_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want


@pytest.mark.parametrize("line", [
    "(EngineCore_DP0 pid=143) WARNING 11-18 07:48:24 [worker.py:116] Exception in ('CPU', 'GPU') transfer 235: "
    "AssertionError()",
    "(EngineCore_DP0 pid=143) WARNING 11-18 07:48:24 [worker.py:137] Failed to submit ('GPU', 'CPU') transfer 12",
])
def test_round_46_the_kv_offloading_workers_failed_transfer_is_a_request(line):
    # v1/kv_offload/worker/worker.py (0.12+): only scheduled requests' blocks are offloaded or loaded back
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("request", 1)


def test_round_46_on_the_real_paste():
    assert brief(classify_text(case("c1669"))) == ("request", "other", "high", 1)


def test_round_46_lines_behind_one_process_tag_run_together_are_cut_before_each_tag():
    tag = "(APIServer pid=7) "
    text = (tag + '  File "%s/vllm/config/speculative.py", line 380, in __post_init__ ' % _SP + tag +
            "    raise NotImplementedError( " + tag + "NotImplementedError: Speculative decoding with draft models "
            "is not supported yet.")
    cuts = joined_cuts(text)
    assert [text[c:c + len(tag)] for c in cuts] == [tag, tag]
    ans = classify_text(text + "\n")
    assert (ans["stage"], ans["error_class"]) == ("config", "config_error")


def test_round_46_nested_tags_of_one_line_are_not_cut():
    text = ("(APIServer pid=1) (EngineCore_DP0 pid=2) ERROR 01-01 00:00:00 [core.py:1] EngineCore failed to start. "
            "The engine core could not build its model executor; see the traceback logged below for the cause.")
    assert joined_cuts(text) == []


def test_round_46_the_run_together_paste():
    assert brief(classify_text(case("c1545"))) == ("config", "config_error", "high", 1)


def test_round_46_the_model_inspections_subprocess_error_is_config():
    # models/registry.py _run_in_subprocess (0.6 -> current), while ModelConfig resolves the architecture
    ans = classify_text("ERROR 12-06 09:43:36 registry.py:328] RuntimeError: Error raised in subprocess:\n")
    assert (ans["stage"], ans["confidence"]) == ("config", "medium")
    assert brief(classify_text(case("c1398"))) == ("config", "other", "medium", 2)


def test_round_46_a_hard_wrapped_error_line_is_read_with_its_indented_rest():
    text = ("ValueError: The output_size of gate's and up's weight = 96 is not\n"
            "            divisible by weight quantization block_n = 128.\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("weight_loading", "config_error", 1)
    assert brief(classify_text(case("c1568"))) == ("weight_loading", "config_error", "high", 1)


def test_round_46_an_indented_line_that_matches_nothing_with_it_changes_nothing():
    ans = classify_text("ValueError: something went wrong in the\n    custom pipeline of the caller\n")
    assert ans["stage"] == "unknown"


@pytest.mark.parametrize("tail, cls", [
    ("slurmstepd: error: *** JOB 1112356 ON node07 CANCELLED AT 2025-10-01T14:35:57 DUE TO TIME LIMIT ***", "timeout"),
    ("slurmstepd: error: *** JOB 1112356 ON node07 CANCELLED AT 2025-10-01T14:35:57 ***", "other"),
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=1112356.batch. Some of your processes may have been "
     "killed by the cgroup out-of-memory handler.", "oom"),
])
def test_round_47_slurm_stopping_the_job_is_the_failure_where_the_log_had_got(tail, cls):
    text = ("INFO 10-01 14:34:10 [default_loader.py:262] Loading weights took 31.02 seconds\n"
            "INFO 10-01 14:34:11 [gpu_model_runner.py:2007] Model loading took 14.99 GiB and 32.1 seconds\n" + tail + "\n")
    ans = classify_text(text)
    assert (ans["error_class"], ans["first_error"]["lineno"]) == (cls, 3)
    assert ans["stage"] in ("weight_loading", "engine_init")


def test_round_47_nixls_ucx_errors_are_a_request_and_localais_relay_is_read():
    ans = classify_text("W0904 10:52:53.047694     512 ucx_utils.cpp:62] Unexpected UCX error: Request canceled\n")
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("request", 1)
    assert brief(classify_text(case("c1803"))) == ("environment", "other", "medium", 1)
