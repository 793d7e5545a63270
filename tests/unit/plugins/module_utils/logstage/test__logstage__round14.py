"""Round 14 of issue 35: vLLM's record of which a paste kept only the bracketed file (its level and date dropped).
The samples are written from vLLM's logger format; messages and ids are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_parse import Line, parse_line


def test_a_record_that_kept_only_its_file_is_read_as_its_message():
    line = Line()
    parse_line("[serving_chat.py:1001] ValueError: the request could not be rendered", line)
    assert line.msg == "ValueError: the request could not be rendered" and line.rec[2] == "serving_chat.py"
    assert line.level == "raw"
    # its exception is found and the serving file places it, at medium (the level is not known)
    ans = classify_text("[serving_chat.py:1001] ValueError: the request could not be rendered\n")
    assert (ans["stage"], ans["confidence"], ans["first_error"]["lineno"]) == ("request", "medium", 1)


def test_an_info_message_that_kept_only_its_file_is_no_failure():
    ans = classify_text("[gpu_worker.py:298] Available KV cache memory: 16.23 GiB\n")
    assert ans["stage"] == "none" and ans["first_error"] is None
    # a bracketed C++ file of PyTorch's c10 log stays c10's
    line = Line()
    parse_line("[W socket.cpp:663] [c10d] The client socket has failed to connect", line)
    assert line.rec == ("c10", "socket.cpp")
