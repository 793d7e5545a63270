"""Round 87 of issue 35 (no new batch: read from the test split's misses of first line and class). What Python
prints, read as Python prints it: a warning whose message goes on over a second line (warnings.formatwarning: the
message, then its source line indented), a traceback cut inside an import chain (a module's code importing another's:
every frame under it runs while that import runs), and a source checkout of vLLM in a folder of any name, known by
vLLM's package layout; the C++ runtime's (libc++abi) and Ray's words for a process that died; Apple's GPU driver out
of memory. Each tried on the real pastes that showed it, and on one it must leave alone."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


def test_the_second_line_of_a_warnings_message_is_the_warning_not_the_first_error():
    # vllm/__init__.py warns "Failed to read commit hash:\n<the ImportError>" in a source tree: line 3 is that
    # warning's message ("No module named 'vllm._version'"); the failure is the traceback after it, cut before its
    # exception (the class is not shown)
    assert brief(classify_text(case("c1219"))) == ("environment", "other", "medium", 6)


def test_a_traceback_cut_inside_vllms_import_chain_is_the_environment_in_a_checkout_of_any_name():
    # runpy -> api_server's <module> -> vllm/config's <module> -> ... a platform's lazy import: all while vLLM is
    # imported, in a checkout under ~/1Cat-vLLM/
    assert brief(classify_text(case("c1672"))) == ("environment", "other", "medium", 4)


def test_the_main_modules_own_code_running_is_no_import():
    # python -m vllm.entrypoints.openai.api_server: its <module> frame runs the server (uvloop.run), not an import
    assert brief(classify_text(case("c1088")))[0] == "unknown"


def test_libcxxabis_terminate_line_is_the_failure_and_a_metal_command_buffer_out_of_memory_is_oom():
    # LLVM libc++abi: "terminating due to uncaught exception of type std::runtime_error: [METAL] Command buffer
    # execution failed: Insufficient Memory (...kIOGPUCommandBufferCallbackErrorOutOfMemory)" before the engine's death
    assert brief(classify_text(case("c1370"))) == ("request", "oom", "high", 5)
    # another device's C++ exception through the same handler: the failure line, no stage shown
    assert brief(classify_text(case("c2036"))) == ("unknown", "other", None, 2)


def test_rays_word_for_a_dead_worker_is_a_consequence_whose_cause_is_unsaid():
    # the raylet's "A worker died or was killed while executing a task ..." (Ray's logger, WARNING) and the actor's
    # "The actor is dead because its worker process has died" are the worker's death, not an engine's
    assert brief(classify_text(case("c342"))) == ("unknown", "other", None, 1)
    assert brief(classify_text(case("c1339"))) == ("unknown", "other", None, 1)
    # before EngineCore's "failed to start" (c844), it is the first line that says something failed
    assert brief(classify_text(case("c844"))) == ("unknown", "other", None, 1)
    # a cause in the dead worker's own lines after it still wins (c177: cuBLASLt's missing symbol, then SIGABRT)
    assert brief(classify_text(case("c177")))[:2] == ("environment", "driver_mismatch")
