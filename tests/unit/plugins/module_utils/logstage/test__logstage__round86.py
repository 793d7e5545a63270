"""Round 86 of issue 35 (after the public batch issue35bj was frozen and scored): a Ray node whose processes did not
start in time, and the dynamic loader refusing a library built against a newer glibc, from Ray's and glibc's
sources, each tried on the real paste whose miss pointed to it."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief, case


def test_a_ray_node_timed_out_during_startup_is_the_workers_placement():
    assert brief(classify_text(case("c2582"))) == ("cuda_init", "timeout", "medium", 4)


def test_a_library_needing_a_newer_glibc_is_an_import_error():
    # the paste alone: the import_error class's usual stage (environment, low), as for any library that did not load
    assert brief(classify_text(case("c2584"))) == ("environment", "import_error", "low", 1)
