"""Round 49 of issue 35 (after the fresh batch issue35am was frozen and scored; each row from its tool's source): the
KV connectors' worker side without its transfer library (NIXL, Mooncake) and Ray's memory monitor's advice line."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("line", [
    "(EngineCore_DP1 pid=754) ERROR 01-12 17:11:19 [core.py:936] RuntimeError: NIXL is not available",
    "RuntimeError: Mooncake is not available",
])
def test_a_kv_connector_without_its_library_is_distributed_init(line):
    ans = classify_text(line + "\n")
    assert (ans["stage"], ans["error_class"]) == ("distributed_init", "import_error")


def test_the_import_time_warning_alone_is_no_failure():
    # nixl_connector.py logs it at WARNING when the module is imported without nixl; the connector may be unused
    ans = classify_text("WARNING 01-12 17:11:01 [nixl_connector.py:56] NIXL is not available\n")
    assert ans["stage"] == "none"


def test_rays_memory_monitor_advice_line_is_an_oom():
    ans = classify_text("Refer to the documentation on how to address the out of memory issue: "
                        "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html.\n")
    assert (ans["error_class"], ans["first_error"]["lineno"]) == ("oom", 1)


@pytest.mark.parametrize("prefix, want", [
    ("c1858", ("distributed_init", "import_error", "high", 3)),
    ("c1861", ("unknown", "oom", None, 11)),
])
def test_round_49_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
