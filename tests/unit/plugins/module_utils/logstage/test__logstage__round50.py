"""Round 50 of issue 35 (after the fresh batch issue35an was frozen and scored; each row from its tool's source):
V0's MQLLMEngine loop logging repr(e), Triton's compile refusals (ptxas, shared memory) as class other, CPython's import
words, a library imported on from vLLM's own module code, and the V2 model runner without pinned memory."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("line", [
    "ERROR 05-20 16:28:24 [engine.py:161] OutOfResources(98304, 49152, 'shared memory')",
    "ERROR 03-01 00:31:53 [engine.py:141] AssertionError()",
    "ERROR 10-11 12:27:29 engine.py:157] RuntimeError('an error that no table knows')",
])
def test_the_mq_engine_loops_repr_is_a_served_step(line):
    # vllm/engine/multiprocessing/engine.py MQLLMEngine.start: logger.exception(repr(e)) around its loops
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["confidence"]) == ("request", "medium")


def test_the_mq_engine_constructions_str_is_not_placed_by_its_file():
    # run_mp_engine logs str(e) of an engine that failed to build: not the engine loop's repr
    ans = classify_text("ERROR 10-11 12:27:29 engine.py:448] an error that no table knows\n")
    assert ans["stage"] != "request"


@pytest.mark.parametrize("text", [
    "ptxas /tmp/tmpab12cd.ptx, line 12; error   : Modifier '.evict_last' cannot be combined with modifier '.cg'\n",
    "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error\n",
    "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 232448, Hardware limit: 101376.\n",
])
def test_a_kernel_triton_cannot_compile_is_class_other_at_least_engine_init(text):
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"]) == ("engine_init", "other")


def test_a_library_imported_on_from_vllms_module_code_is_the_environment():
    frames = [("/venv/lib/python3.11/site-packages/vllm/__init__.py", 3, "from vllm.engine.arg_utils import EngineArgs"),
              ("/venv/lib/python3.11/site-packages/vllm/engine/arg_utils.py", 8, "from vllm.config import CacheConfig"),
              ("/venv/lib/python3.11/site-packages/vllm/config.py", 7, "import torch"),
              ("/venv/lib/python3.11/site-packages/torch/__init__.py", 1537, "from .functional import *"),
              ("/venv/lib/python3.11/site-packages/torch/functional.py", 9, "import torch.nn.functional as F")]
    text = "".join('  File "%s", line %d, in <module>\n    %s\n' % f for f in frames)
    ans = classify_text(text)
    assert (ans["stage"], ans["confidence"]) == ("environment", "medium")
    # the same library chain without vLLM's own module code above it says nothing of vLLM's import
    ans = classify_text("".join('  File "%s", line %d, in <module>\n    %s\n' % f for f in frames[3:]))
    assert ans["stage"] != "environment"


def test_cpythons_import_words_without_the_exception_name():
    ans = classify_text("Import Error: cannot import name 'helper' from partially initialized module 'vllm_x.ops' "
                        "(most likely due to a circular import)\n")
    assert (ans["stage"], ans["error_class"]) == ("environment", "import_error")


def test_the_v2_model_runner_without_pinned_memory_is_cuda_init():
    ans = classify_text("RuntimeError: UVA is not available\n")
    assert (ans["stage"], ans["error_class"], ans["confidence"]) == ("cuda_init", "other", "medium")


@pytest.mark.parametrize("prefix, want", [
    ("c1911", ("request", "other", "medium", 1)),
    ("c1898", ("engine_init", "other", "medium", 1)),
    ("c1646", ("engine_init", "other", "medium", 7)),
    ("c1924", ("environment", "other", "medium", 1)),
    ("c1921", ("environment", "import_error", "medium", 1)),
    ("c1902", ("cuda_init", "other", "medium", 1)),
])
def test_round_50_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
