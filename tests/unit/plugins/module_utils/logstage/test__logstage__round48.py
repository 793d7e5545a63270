"""Round 48 of issue 35 (after the fresh batch issue35al was frozen and scored; each row from its tool's source):
huggingface_hub's gated-repository words, vLLM's placeholder for a missing extra, Triton's fp8 type refusal, the
command line's parse_args frame, and a vLLM record whose closing bracket a paste mangled.  Paths are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_parse import Line, parse_line
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/opt/venv/lib/python3.12/site-packages"


@pytest.mark.parametrize("line, want", [
    ("Cannot access gated repo for url https://huggingface.co/org/model/resolve/main/config.json.",
     ("config", "other")),
    ("ModuleNotFoundError: Please install vllm[audio] for audio support", ("environment", "import_error")),
    ("ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', "
     "'fp8e5')\")", ("engine_init", "config_error")),
])
def test_messages_of_round_48(line, want):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == want


def test_the_command_lines_parsing_is_config():
    text = ('  File "%s/vllm/entrypoints/cli/main.py", line 48, in main\n    args = parser.parse_args()\n'
            '  File "%s/vllm/utils/argparse_utils.py", line 1391, in parse_args\n    raise ValueError(\n'
            "ValueError: With `vllm serve`, you should provide the model as a positional argument.\n" % (_SP, _SP))
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"]) == ("config", "frames")


def test_a_record_whose_closing_bracket_a_paste_mangled_is_read():
    line = Line()
    parse_line("(Worker_TP0 pid=783) ERROR 07-25 17:50:33 [multiproc_executor.py:1007[]     output = func(*args)", line)
    want = ("vllm", "multiproc_executor.py", "1007", "    output = func(*args)")
    assert (line.fmt, line.rec[2], line.rec[3], line.msg) == want


@pytest.mark.parametrize("prefix, want", [
    ("c1834", ("config", "other", "medium", 1)),            # the Hub's gated-repository words
    ("c1844", ("config", "config_error", "high", 10)),      # FlexibleArgumentParser.parse_args
    ("c1837", ("request", "other", "medium", 8)),           # mangled brackets after a served request
])
def test_round_48_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
