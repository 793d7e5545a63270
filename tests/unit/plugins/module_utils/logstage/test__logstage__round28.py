"""Round 28 of issue 35 (after the fresh batch issue35w was frozen and scored; each row from vLLM's, PyTorch's, NCCL's
or huggingface_hub's source): PyTorch's CUDA init met while a model is built, the layer factory, the multi-modal
profiler, NCCL refusing graph capture, a path taken for a Hub id, and rank-prefixed lines a paste ran together.
Paths, pids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/venv/lib/python3.10/site-packages"


def _frames(*frames):
    return "".join('  File "%s/%s", line 10, in %s\n    x = y()\n' % (_SP, path, func) for path, func in frames)


def test_torch_cuda_init_inside_model_construction_is_weight_loading():
    # CUDA first asked for while a layer is built: the device query's rule, the stage of the frames above it
    text = "Traceback (most recent call last):\n" + _frames(
        ("vllm/model_executor/models/llama.py", "__init__"),
        ("vllm/model_executor/layers/rotary_embedding.py", "__init__"),
        ("torch/cuda/__init__.py", "_lazy_init"))
    assert classify_text(text)["stage"] == "weight_loading"


def test_torch_cuda_init_alone_stays_cuda_init():
    text = "Traceback (most recent call last):\n" + _frames(
        ("vllm/worker/worker.py", "init_device"), ("torch/cuda/__init__.py", "set_device"))
    assert classify_text(text)["stage"] == "cuda_init"


@pytest.mark.parametrize("path, func", [
    ("vllm/model_executor/models/utils.py", "make_layers"),
    ("vllm/model_executor/offloader/base.py", "wrap_modules"),
])
def test_the_layer_factory_is_weight_loading(path, func):
    text = "(EngineCore pid=3) ERROR 01-02 03:04:05 [core.py:9] Traceback (most recent call last):\n" + "".join(
        "(EngineCore pid=3) ERROR 01-02 03:04:05 [core.py:9] " + line + "\n"
        for line in _frames((path, func)).splitlines())
    assert classify_text(text)["stage"] == "weight_loading"


def test_the_multimodal_profiler_is_engine_init():
    text = "Traceback (most recent call last):\n" + _frames(
        ("vllm/multimodal/profiling.py", "get_dummy_processor_inputs"))
    assert classify_text(text)["stage"] == "engine_init"


def test_nccl_refusing_graph_capture_is_engine_init():
    text = ("host:11:11 [0] misc/strongstream.cc:53 NCCL WARN NCCL cannot be captured in a graph if either it wasn't "
            "built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"]) == ("engine_init", "nccl_error")


def test_a_path_taken_for_a_hub_id_is_config():
    text = ("ERROR 01-02 03:04:05 config.py:100] Error retrieving file list: Repo id must be in the form 'repo_name' "
            "or 'namespace/repo_name': '/models/none/'. Use `repo_type` argument if needed\n")
    ans = classify_text(text)
    assert (ans["stage"], ans["error_class"]) == ("config", "missing_file")


def test_rank_prefixed_lines_run_together_are_read_line_by_line():
    lines = ["[rank0]: Traceback (most recent call last):"] + [
        "[rank0]: " + part for part in _frames(("vllm/executor/uniproc_executor.py", "_init_executor"),
                                               ("vllm/worker/worker.py", "load_model")).splitlines()]
    one = " ".join(lines) + "\n"
    assert classify_text(one)["stage"] == classify_text("\n".join(lines) + "\n")["stage"] == "weight_loading"


@pytest.mark.parametrize("prefix, want", [
    ("c1287", ("weight_loading", "other", "high", 1)),    # rotary cache -> torch.cuda._lazy_init, cut
    ("c1270", ("weight_loading", "other", "high", 1)),    # make_layers -> offloader wrap_modules, cut
    ("c1272", ("engine_init", "other", "high", 1)),       # multimodal/profiling.py dummy inputs, cut
    ("c1282", ("engine_init", "nccl_error", "high", 3)),  # NCCL WARN during V0's graph capture
    ("c1281", ("config", "missing_file", "medium", 1)),   # a local path that is not there, read as a Hub id
    ("c1269", ("weight_loading", "other", "high", 1)),    # "[rank0]:" lines a paste ran together
])
def test_round_28_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
