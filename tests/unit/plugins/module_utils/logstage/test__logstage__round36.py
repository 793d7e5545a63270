"""Round 36 of issue 35 (after the fresh batch issue35ad was frozen and scored; each row from its tool's source): a
notebook cell IPython heads "File <command-N>, line N", asyncio's callback report whose traceback was cut away, the
prompt-length refusal in its own words, the Mamba cache blocks of full decode CUDA graphs, a process group's message
queues, the engine core's structured-output manager.  Paths, pids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/venv/lib/python3.10/site-packages"


def test_a_databricks_cell_header_is_a_frame_header_not_the_exception():
    text = ("AssertionError                            Traceback (most recent call last)\n"
            "File <command-2469377940857761>, line 10\n"
            "---> 10 output = llm.generate([\"Hello\"], sampling_params=sampling_params)\n\n"
            "File %s/vllm/entrypoints/llm.py:157, in LLM.generate(self, prompts, sampling_params)\n"
            "--> 157 return self._run_engine(use_tqdm)\n" % _SP)
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"]) == ("request", "frames")


def test_asyncio_naming_the_engine_loop_with_its_traceback_cut_away_is_an_error_at_request():
    text = ("INFO 01-18 06:58:47 async_llm_engine.py:134] Aborted request cmpl-6bd865032aef41c6b135d86278e38264.\n"
            "Exception in callback functools.partial(<function _raise_exception_on_finish at 0x7f2546afeef0>, "
            "request_tracker=<vllm.engine.async_llm_engine.RequestTracker object at 0x7f254408e9b0>)\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("request", 2)


def test_asyncio_naming_a_callback_no_row_maps_with_nothing_after_it_stays_quiet():
    assert classify_text("Exception in callback functools.partial(<function _on_done at 0x7f00>)\n")["stage"] == "none"


@pytest.mark.parametrize("line, want", [
    ("ValueError: The decoder prompt (length 4926) is longer than ...", ("request", "other")),
    ("ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (614).", ("engine_init", "oom")),
])
def test_messages_of_round_36(line, want):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == want + ("high",)


def test_a_process_groups_single_reader_queue_is_distributed_init():
    text = ("(Worker_TP12 pid=114) ERROR 08-10 23:02:36 [multiproc_executor.py:898]   File \"%s/vllm/distributed/"
            "device_communicators/shm_broadcast.py\", line 852, in create_from_process_group_single_reader\n"
            "(Worker_TP12 pid=114) ERROR 08-10 23:02:36 [multiproc_executor.py:898]     buffer_io = MessageQueue(\n"
            % _SP)
    assert classify_text(text)["stage"] == "distributed_init"


def test_the_engine_cores_structured_output_manager_is_engine_init():
    text = ("ERROR 03-07 16:37:49 [core.py:324]   File \"%s/vllm/v1/engine/core.py\", line 65, in __init__\n"
            "ERROR 03-07 16:37:49 [core.py:324]     self.structured_output_manager = StructuredOutputManager(vllm_config)\n"
            % _SP)
    assert classify_text(text)["stage"] == "engine_init"


@pytest.mark.parametrize("prefix, want", [
    ("c1530", ("request", "other", "high", 1)),          # Databricks' "File <command-N>, line 10"
    ("c1532", ("request", "other", "high", 3)),          # asyncio's header, the traceback cut away
    ("c1533", ("request", "other", "high", 1)),          # "The decoder prompt (length 4926) is longer than ..."
    ("c1540", ("engine_init", "oom", "high", 1)),        # the Mamba cache blocks
    ("c1558", ("distributed_init", "other", "high", 1)),  # create_from_process_group_single_reader
    ("c1552", ("engine_init", "other", "high", 1)),      # StructuredOutputManager(vllm_config)
])
def test_round_36_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
