"""Round 84 of issue 35 (after the public batch issue35bi was frozen and scored): Gloo's check of this host's address,
and two refusals of the compressed-tensors methods while the model is built, from their sources, each tried on the
real paste whose miss pointed to it."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import os

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files, classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case

GLOO = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "2026-12-01-gloo-wrong-ifname-2nodes")


def test_gloo_without_an_interface_for_this_host_s_address_is_distributed_init():
    assert brief(classify_text(case("c2562"))) == ("distributed_init", "nccl_error", "high", 2)


def test_gloo_told_an_interface_that_is_not_there_keeps_its_own_row():
    # the real two-node capture: GLOO_SOCKET_IFNAME naming no interface ("Unable to find address for:")
    ans = classify_files([os.path.join(GLOO, "node02", "rank1.stderr.log")])
    assert (ans["stage"], ans["error_class"]) == ("distributed_init", "nccl_error")
    assert "Unable to find address for:" in ans["first_error"]["line"]


def test_compressed_tensors_refusing_a_layer_while_the_model_is_built_is_weight_loading():
    assert brief(classify_text(case("c2575"))) == ("weight_loading", "other", "low", 1)
    assert brief(classify_text(case("c2570"))) == ("weight_loading", "other", "low", 1)


def test_an_unknown_answer_asks_for_what_would_place_it():
    # vLLM's wrapper of the engine core's death: the engine core's own first error
    ans = classify_text(case("c13"))
    assert ans["stage"] == "unknown" and "that process's first error" in ans["summary"]
    # a bare PyTorch OOM line: its traceback
    ans = classify_text(case("c50"))
    assert ans["stage"] == "unknown" and "the exception's traceback is not in the log" in ans["summary"]
    # a kubelet's probe: the container's own log, as before
    ans = classify_text(case("c130"))
    assert ans["stage"] == "unknown" and ans["summary"].endswith("kubectl logs --previous or docker logs)")
    for prefix in ("c13", "c50", "c130"):
        assert "stage unknown: the log shows no vLLM start-up line" in classify_text(case(prefix))["summary"]
