"""Round 54 of issue 35 (after the fresh batch issue35aq was frozen and scored; from vLLM's source): vllm/_custom_ops.py
(0.4 -> 0.5) hides a failed import of vllm._C, which then shows as a NameError of its op modules."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


@pytest.mark.parametrize("name", ["vllm_ops", "vllm_cache_ops"])
def test_vllms_op_modules_not_defined_is_an_import_error_of_no_stage_by_itself(name):
    ans = classify_text("NameError: name '%s' is not defined\n" % name)
    assert (ans["stage"], ans["error_class"]) == ("unknown", "import_error")


def test_another_name_not_defined_is_not_that_row():
    ans = classify_text("NameError: name 'my_ops' is not defined\n")
    assert ans["error_class"] != "import_error"


@pytest.mark.parametrize("prefix, want", [
    ("c2012", ("request", "import_error", "low", 12)),
    ("c1612", ("request", "import_error", "low", 17)),
])
def test_round_54_on_the_real_paste_of_each_family(prefix, want):
    assert brief(classify_text(case(prefix))) == want
