"""Round 38 of issue 35 (after the fresh batch issue35af was frozen and scored; each row from its tool's source): a
traceback cut where a frame imports vLLM (the console script's own import), the model's pipeline-parallel support
check, inductor's code generation.  Paths are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("source", ["from vllm.entrypoints.cli.main import main", "import vllm", "from vllm import LLM",
                                    "from vllm_ascend.platform import NPUPlatform"])
def test_a_traceback_cut_where_a_frame_imports_vllm_is_the_environment(source):
    text = 'Traceback (most recent call last):\n  File "/opt/conda/bin/vllm", line 5, in <module>\n    %s\n' % source
    ans = classify_text(text)
    assert (ans["stage"], ans["confidence"]) == ("environment", "medium")


def test_a_frame_importing_another_package_says_nothing():
    text = 'Traceback (most recent call last):\n  File "/home/u/app.py", line 5, in <module>\n    from vllmx import y\n'
    assert classify_text(text)["stage"] == "unknown"


def test_an_import_of_vllm_followed_by_deeper_frames_is_placed_by_them():
    text = ('Traceback (most recent call last):\n  File "/home/u/serve.py", line 5, in <module>\n    from vllm import LLM\n'
            '  File "/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_worker.py", line 211, in load_model\n'
            "    self.model_runner.load_model()\n")
    assert classify_text(text)["stage"] == "weight_loading"


@pytest.mark.parametrize("line", [
    "NotImplementedError: Pipeline parallelism is only supported for the following  architectures: ['LlamaForCausalLM']",
    "NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement the "
    "`SupportsPP` interface.",
])
def test_the_models_pipeline_parallel_support_check_is_config(line):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == ("config", "config_error")


def test_inductors_code_generation_is_engine_init():
    text = ('  File "/venv/lib/python3.11/site-packages/torch/_inductor/codegen/triton.py", line 3992, in '
            "inductor_meta_common\n"
            '    "backend_hash": torch.utils._triton.triton_hash_with_backend(),\n'
            "RuntimeError: 0 active drivers ([]). There should only be one.\n")
    assert classify_text(text)["stage"] == "engine_init"


@pytest.mark.parametrize("prefix, want", [
    ("c1614", ("environment", "other", "medium", 2)),    # the vllm console script's import, cut
    ("c1628", ("config", "config_error", "high", 2)),    # Pipeline parallelism is only supported for ...
    ("c1599", ("engine_init", "other", "high", 1)),      # torch/_inductor/codegen/triton.py
])
def test_round_38_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
