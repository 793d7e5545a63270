"""Round 11 of issue 35: asyncio's record header.  CPython's Future.__del__ (asyncio/futures.py) hands an exception
nobody retrieved to the loop's default_exception_handler (asyncio/base_events.py), which logs the message
("Future exception was never retrieved" / "Task exception was never retrieved"), then "future: <repr>", then the
traceback (exc_info).  And kubectl describe's indented fields (kubectl/pkg/describe: two spaces a level, a tabwriter
padding "Reason:" to a column), which are no source lines of a traceback.  The samples are written from those
sources; the paths and names are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text

VL = "/opt/venv/lib/python3.12/site-packages/vllm"
CUT = ("Traceback (most recent call last):\n"
       '  File "%s/engine/async_llm_engine.py", line 900, in generate\n' % VL +
       "    async for output in await self.add_request(\n"
       '  File "%s/engine/async_llm_engine.py", line 110, in generator\n' % VL +
       "    raise result\n")


@pytest.mark.parametrize("header", [
    "Future exception was never retrieved\nfuture: <Future finished exception=RuntimeError('boom')>\n",
    "Task exception was never retrieved\nfuture: <Task finished name='Task-3' coro=<Loop.run() done, defined at "
    "/opt/x.py:10> exception=RuntimeError('boom')>\n",
])
def test_a_cut_traceback_under_asyncios_header_starts_at_the_header(header):
    ans = classify_text(header + CUT)
    assert ans["first_error"]["lineno"] == 1


def test_the_future_line_alone_starts_the_record():
    ans = classify_text("future: <Future finished exception=RuntimeError('boom')>\n" + CUT)
    assert ans["first_error"]["lineno"] == 1


def test_not_when_another_line_comes_between_the_header_and_its_traceback():
    ans = classify_text("Future exception was never retrieved\nsomething else\n" + CUT)
    assert ans["first_error"]["lineno"] == 3


def test_a_pasted_exception_under_the_header_stays_the_line_reported():
    text = ("Task exception was never retrieved\nfuture: <Task finished name='Task-3' coro=<f() done> "
            "exception=RuntimeError('boom')>\n" + CUT + "RuntimeError: boom\n")
    assert classify_text(text)["first_error"]["lineno"] == 8


def test_multiprocessings_header_is_read_as_before():
    text = ("Process SpawnProcess-1:\n"
            "Traceback (most recent call last):\n"
            '  File "%s/worker/worker.py", line 229, in determine_num_available_blocks\n' % VL +
            "    self.model_runner.profile_run()\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("engine_init", 1)


DESCRIBE = ("Containers:\n"
            "  server:\n"
            "    Image:          vllm/vllm-openai:v0.9.0\n"
            "    State:          Waiting\n"
            "      Reason:       CrashLoopBackOff\n"
            "    Last State:     Terminated\n"
            "      Reason:       OOMKilled\n"
            "      Exit Code:    137\n"
            "    Ready:          False\n"
            "    Restart Count:  4\n")


def test_kubectl_describes_indented_reason_is_read_as_the_containers_state():
    ans = classify_text(DESCRIBE)
    assert (ans["error_class"], ans["first_error"]["lineno"]) == ("oom", 7)


def test_kubectl_describes_scheduling_message_is_read():
    text = ("Conditions:\n"
            "  Type              Status\n"
            "  PodScheduled      False\n"
            "Events:\n"
            "    Message:       0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\n")
    assert classify_text(text)["stage"] == "environment"
