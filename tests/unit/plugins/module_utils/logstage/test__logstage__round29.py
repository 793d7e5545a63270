"""Round 29 of issue 35 (from vLLM's source, with the families of read test cases the paste itself places): a
caller's call of one of LLM's request methods into vLLM's code, the Ray cluster's GPU count in its older words,
and initialize_model_parallel's world-size check.  Paths, pids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/venv/lib/python3.11/site-packages"


@pytest.mark.parametrize("call", ["outputs = llm.generate(prompts, params)", "out = model.encode(texts)",
                                  "r = llm.chat(messages)", "s = llm.score(a, b)"])
def test_a_call_of_an_llm_request_method_into_vllm_is_request(call):
    text = ('Traceback (most recent call last):\n  File "/home/u/run.py", line 9, in <module>\n    %s\n'
            '  File "%s/vllm/utils.py", line 1032, in inner\n' % (call, _SP))
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"]) == ("request", "frames")


def test_building_the_llm_is_not_a_request():
    text = ('Traceback (most recent call last):\n  File "/home/u/run.py", line 9, in <module>\n    llm = LLM(model="m")\n'
            '  File "%s/vllm/utils.py", line 1032, in inner\n' % _SP)
    assert classify_text(text)["stage"] != "request"


def test_the_call_must_go_into_vllm():
    # transformers' own generate: the next frame is not vLLM's
    text = ('Traceback (most recent call last):\n  File "/home/u/run.py", line 9, in <module>\n'
            '    out = model.generate(ids)\n  File "%s/transformers/generation/utils.py", line 2, in generate\n' % _SP)
    assert classify_text(text)["stage"] != "request"


def test_ipython_context_lines_around_the_arrow_are_not_the_call():
    text = ("RuntimeError                              Traceback (most recent call last)\nCell In[3], line 2\n"
            "      1 llm = LLM(model='m')\n----> 2 x = 1 + f()\n      3 out = llm.generate(p)\n\n"
            "File %s/vllm/utils.py:1063, in inner(*args, **kwargs)\n" % _SP)
    assert classify_text(text)["stage"] != "request"


@pytest.mark.parametrize("line, want", [
    ("ValueError: The number of required GPUs exceeds the total number of available GPUs in the cluster.",
     ("cuda_init", "other", "high")),
    ("RuntimeError: world_size (4) is not equal to tensor_model_parallel_size (2) x pipeline_model_parallel_size (1)",
     ("distributed_init", "config_error", "high")),
])
def test_messages_of_round_29(line, want):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == want


@pytest.mark.parametrize("prefix, want", [
    ("c979", ("request", "other", "high", 1)),               # [rank0]: a script's model.encode into vllm/utils.py
    ("c1089", ("request", "other", "high", 2)),              # IPython: ----> model.encode(prompts), then vLLM's wrapper
    ("c807", ("cuda_init", "other", "high", 1)),             # Ray: more GPUs asked for than the cluster has
    ("c1234", ("distributed_init", "config_error", "high", 1)),  # torchrun's 8 processes, tp 1 x pp 1
])
def test_round_29_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
