"""Round 43 of issue 35 (from the test split's unknown answers, each from its tool's source): abseil's failure-signal
report and faulthandler's ``Fatal Python error`` after it are one crash, the report with the Python stack the
failure; the V2 model runner's CUDA graph capture (vllm/v1/worker/gpu/) is engine init; a call a condition opens
names its step; the 0.5 RPC front's bind and the OpenAI handlers' constructors are api_ready.  Paths are
invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

_SP = "/opt/venv/lib/python3.12/site-packages"
_DUMP = ("(RayWorkerWrapper pid=24036) *** SIGSEGV received at time=1721904360 on cpu 140 ***\n"
         "(RayWorkerWrapper pid=24036) PC: @     0x7f17f832d44a  (unknown)  addProxyOpIfNeeded()\n"
         "(RayWorkerWrapper pid=24036)     @     0x7f1bc25d8090   36407536  (unknown)\n"
         "(RayWorkerWrapper pid=24036) [2024-07-25 10:46:00,050 E 24036 24036] logging.cc:440: *** SIGSEGV received "
         "at time=1721904360 on cpu 140 ***\n")


def test_faulthandlers_report_after_abseils_is_the_failure_placed_by_its_stack():
    text = _DUMP + ("(RayWorkerWrapper pid=24036) Fatal Python error: Segmentation fault\n"
                    "(RayWorkerWrapper pid=24036)\n"
                    "(RayWorkerWrapper pid=24036) Stack (most recent call first):\n"
                    '(RayWorkerWrapper pid=24036)   File "%s/vllm/worker/model_runner.py", line 725 in capture_model\n'
                    % _SP)
    ans = classify_text(text)
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("engine_init", 5)


def test_abseils_report_alone_stays_the_failure():
    ans = classify_text(_DUMP)
    assert (ans["stage"], ans["first_error"]["lineno"]) == ("unknown", 1)


def test_an_earlier_error_of_its_own_is_not_dropped():
    text = ("RuntimeError: CUDA error: an illegal memory access was encountered\n" + "x\n" * 50 + _DUMP +
            "Fatal Python error: Segmentation fault\n")
    assert classify_text(text)["first_error"]["lineno"] == 1


@pytest.mark.parametrize("path, func", [
    ("vllm/v1/worker/gpu/cudagraph_utils.py", "capture"),
    ("vllm/v1/worker/gpu/spec_decode/target_dependent_ar/cudagraph_utils.py", "capture"),
    ("vllm/v1/worker/gpu/model_states/interface.py", "capture_inner_cudagraphs"),
])
def test_the_v2_model_runners_graph_capture_is_engine_init(path, func):
    text = ('  File "%s/%s", line 360, in %s\n    forward_fn(CUDAGraphMode.NONE)\n' % (_SP, path, func))
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"]) == ("engine_init", "frames")


def test_a_call_a_condition_opens_names_its_step():
    # api_server.py 0.5-0.6 build_async_engine_client: "if (model_is_embedding(args.model, ...": ModelConfig(...)
    text = ('  File "%s/vllm/entrypoints/openai/api_server.py", line 100, in build_async_engine_client\n'
            "    if (model_is_embedding(args.model, args.trust_remote_code)\n" % _SP)
    ans = classify_text(text)
    assert (ans["stage"], ans["stage_basis"]) == ("config", "frames")


def test_the_rpc_fronts_bind_after_its_engine_was_built_is_api_ready():
    text = ('  File "%s/vllm/entrypoints/openai/rpc/server.py", line 35, in __init__\n'
            '    self.socket.bind(f"tcp://127.0.0.1:{port}")\n' % _SP)
    assert classify_text(text)["stage"] == "api_ready"


@pytest.mark.parametrize("path, want", [
    ("vllm/entrypoints/openai/serving_responses.py", "api_ready"),           # <= 0.14
    ("vllm/entrypoints/openai/chat_completion/serving.py", "api_ready"),     # 0.20+
    ("vllm/entrypoints/openai/responses/context.py", None),                  # a request's context: not listed
    ("vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py", None),    # built per request
])
def test_an_openai_handlers_constructor_is_api_ready(path, want):
    text = ('  File "%s/%s", line 130, in __init__\n    self.setup()\n' % (_SP, path))
    ans = classify_text(text)
    assert (ans["stage"] if ans["stage_basis"] == "frames" else None) == want


@pytest.mark.parametrize("prefix, want", [
    ("c1640", ("api_ready", "other", "high", 25)),        # OpenAIServingResponses.__init__ loading harmony's vocab
    ("c1093", ("config", "other", "high", 1)),            # build_async_engine_client -> if (model_is_embedding(
    ("c1128", ("api_ready", "other", "high", 1)),         # the RPC server's zmq bind (0.5.5)
    ("c1606", ("engine_init", "other", "medium", 11)),   # abseil's dump, then faulthandler's stack in capture_model
    ("c1607", ("unknown", "other", None, 9)),             # the same without a placing stack: faulthandler's line
    ("c1567", ("engine_init", "other", "high", 1)),       # the V2 runner's speculator graph capture
])
def test_round_43_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
