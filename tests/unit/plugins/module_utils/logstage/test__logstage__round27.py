"""Round 27 of issue 35 (after the fresh batch issue35v was frozen and scored; each row from its tool's format): a
Ray actor whose class name is private, ESC spelt out as less shows it, and IPython's header of a wrapper exception
that names its cause.  Paths, pids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/venv/lib/python3.10/site-packages"


def test_a_private_actor_class_is_a_process_tag():
    # V0's Ray engine actor (engine_use_ray) is "_AsyncLLMEngine": its tag is the process, its lines a traceback's
    text = "".join("(_AsyncLLMEngine pid=7) " + line + "\n" for line in (
        '  File "%s/vllm/model_executor/models/opt.py", line 106, in forward' % _SP,
        "    attn_output = self.attn(q, k, v)"))
    ans = classify_text(text)
    assert (ans["stage"], ans["first_error"]["process"]) == ("request", "_AsyncLLMEngine")


def test_esc_spelt_out_is_read_as_the_control_character():
    line = ("ESC[1;36m(VllmWorker pid=168)ESC[0;0m ERROR 08-12 14:37:42 [multiproc_executor.py:559] RuntimeError: "
            "CUDA error: an illegal memory access was encountered\n")
    ans = classify_text(line)
    assert (ans["first_error"]["process"], ans["first_error"]["timestamp"]) == ("VllmWorker", "08-12 14:37:42")
    assert ans["error_class"] == "illegal_memory_access"


def test_ipython_names_a_wrapper_exception_with_its_cause():
    text = ("RayTaskError(KeyError)                    Traceback (most recent call last)\n"
            "Cell In[2], line 1\n----> 1 llm = LLM(model='m', tensor_parallel_size=2)\n\n"
            "File %s/vllm/model_executor/model_loader/loader.py:401, in DefaultModelLoader.load_model(self)\n"
            "--> 401     model.load_weights(weights)\n\n"
            "RayTaskError(KeyError): ray::RayWorkerVllm.execute_method() (pid=9, ip=10.0.0.2)\n" % _SP)
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"]) == ("weight_loading", "frames")


@pytest.mark.parametrize("prefix, want", [
    ("c1240", ("request", "other", "low", 1)),            # _AsyncLLMEngine's forward frames, cut at both ends
    ("c1231", ("unknown", "other", None, 1)),             # a notebook's RayTaskError(KeyError) cut at from_engine_args
])
def test_round_27_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
