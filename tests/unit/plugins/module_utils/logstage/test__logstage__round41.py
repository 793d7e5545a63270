"""Round 41 of issue 35 (after the fresh batch issue35ah was frozen and scored; each row from its tool's source):
pytest's frame lines (``path/x.py:12: in func``, _pytest/_code/code.py) open a traceback of a paste that starts with
them, and V0's KV pipes and lookup buffers move a scheduled request's KV cache.  Paths are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_parse import frame_line
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = ".venv/lib/python3.12/site-packages"


@pytest.mark.parametrize("line, path, func", [
    ("tests/test_x.py:5: in <module>", "tests/test_x.py", "<module>"),
    ("%s/vllm/v1/utils.py:14: in <module>" % _SP, "%s/vllm/v1/utils.py" % _SP, "<module>"),
    ("/opt/venv/lib/python3.12/site-packages/vllm/entrypoints/llm.py:343: in __init__",
     "/opt/venv/lib/python3.12/site-packages/vllm/entrypoints/llm.py", "__init__"),
])
def test_a_pytest_frame_line_is_a_frame(line, path, func):
    m = frame_line(line)
    assert (m.group("path"), m.group("func")) == (path, func)


@pytest.mark.parametrize("line", [
    "/usr/lib/python3.12/site-packages/vllm/v1/engine/core_client.py:554: EngineDeadError",  # pytest's last location
    "see docs/setup.py:12: in the notes",
    "ERROR 10-01 12:00:00 [core.py:12] in <module> the engine",
])
def test_other_lines_with_a_file_and_number_are_no_frame(line):
    assert frame_line(line) is None


def test_pytest_collection_stopped_inside_vllms_imports_is_the_environment():
    text = ("_______________ ERROR collecting tests/test_plugin.py ________________\n"
            "tests/test_plugin.py:5: in <module>\n"
            "    from my_plugin.scheduler import PluginScheduler\n"
            "%s/my_plugin/scheduler.py:10: in <module>\n"
            "    from vllm.v1.request import Request\n"
            "%s/vllm/v1/request.py:12: in <module>\n"
            "    from vllm.v1.utils import ConstantList\n"
            "%s/vllm/v1/utils.py:14: in <module>\n" % (_SP, _SP, _SP))
    ans = classify_text(text)
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("environment", 1)


def test_a_later_tests_frames_do_not_outrank_the_error_of_an_earlier_test():
    # pytest reports each failed test apart: frames after an error belong to another test's report
    text = ("E           vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace "
            "(above) for the root cause.\n"
            "\n"
            "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core_client.py:554: EngineDeadError\n"
            "________________ test_second ________________\n"
            "/opt/venv/lib/python3.12/site-packages/vllm/entrypoints/llm.py:469: in generate\n"
            "    self._validate_and_add_requests(\n")
    ans = classify_text(text)
    assert (ans["error_class"], ans["first_error"]["lineno"]) == ("engine_dead", 1)


@pytest.mark.parametrize("func", ["_recv_impl", "recv_tensor", "transfer_sync", "send_bytes"])
def test_a_v0_kv_pipes_data_path_is_a_request(func):
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3/vllm/distributed/kv_transfer/kv_pipe/mooncake_pipe.py", line 246, in %s\n'
            "    data = self.transfer_engine.recv_bytes()\n"
            "Exception: Transfer Return Error\n" % func)
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"]) == ("request", "frames")


def test_building_a_kv_pipe_is_not_a_request():
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3/vllm/distributed/kv_transfer/kv_pipe/mooncake_pipe.py", line 61, in __init__\n'
            "    self.engine.initialize(local_url, metadata_server, protocol, device_name)\n"
            "RuntimeError: Mooncake initialization failed\n")
    assert classify_text(text)["stage"] != "request"


@pytest.mark.parametrize("prefix, want", [
    ("c1686", ("request", "other", "high", 9)),         # the Mooncake pipe's receive thread
    ("c1689", ("environment", "other", "medium", 1)),   # pytest's collection through vLLM's imports
    ("c158", ("request", "engine_dead", "medium", 6)),  # dev: an earlier test's EngineDeadError keeps its place
])
def test_round_41_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
