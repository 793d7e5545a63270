"""Round 32 of issue 35 (after the fresh batch issue35z was frozen and scored; each row from its tool's source): a
marker another process prints in the same second as a worker's error does not prove that worker went on, the serve
command's argument checks, the custom all-reduce's P2P check in a subprocess, Ray's actor that a node cannot import.
Paths, pids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/venv/lib/python3.12/site-packages"
_OOM = ("(VllmWorkerProcess pid=12) ERROR 10-03 18:29:17 multiproc_worker_utils.py:231] torch.OutOfMemoryError: CUDA "
        "out of memory. Tried to allocate 60.00 MiB.\n")


def test_another_process_in_the_same_second_does_not_recover_a_workers_error():
    text = _OOM + "INFO 10-03 18:29:17 weight_utils.py:242] Using model weights format ['*.bin']\n"
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"]) == ("unknown", "oom")


def test_a_later_second_still_recovers_it():
    text = _OOM + "INFO 10-03 18:29:25 weight_utils.py:242] Using model weights format ['*.bin']\n"
    assert classify_text(text)["stage"] == "none"


def test_the_serve_commands_argument_checks_are_config():
    text = ("Traceback (most recent call last):\n"
            '  File "%s/vllm/entrypoints/openai/api_server.py", line 1119, in <module>\n'
            "    validate_parsed_serve_args(args)\n"
            '  File "%s/vllm/entrypoints/openai/cli_args.py", line 280, in validate_parsed_serve_args\n'
            "    validate_chat_template(args.chat_template)\n" % (_SP, _SP))
    assert classify_text(text)["stage"] == "config"


@pytest.mark.parametrize("line, want", [
    ("subprocess.CalledProcessError: Command '['/venv/bin/python', '%s/vllm/distributed/device_communicators/"
     "custom_all_reduce_utils.py']' returned non-zero exit status 1." % _SP, ("distributed_init", "other")),
    ("(TemporaryActor pid=9) RuntimeError: The actor with name RayWorkerVllm failed to import on the worker. This may "
     "be because needed library dependencies are not installed in the worker environment:",
     ("environment", "import_error")),
])
def test_messages_of_round_32(line, want):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == want


@pytest.mark.parametrize("prefix, want", [
    ("c1408", ("unknown", "oom", None, 1)),                  # a worker's OOM beside the others' weight-format lines
    ("c1412", ("distributed_init", "other", "high", 1)),     # the P2P check's CalledProcessError
    ("c1413", ("config", "other", "medium", 2)),             # compose (the line; the label: the traceback, 6)
])
def test_round_32_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
