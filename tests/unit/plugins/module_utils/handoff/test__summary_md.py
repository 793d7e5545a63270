# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_summary_md: the pieces summary.md is written with (a whole package's summary.md is read back in
test__handoff.py, built from real runs)."""

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.common._redact import scan_secrets
from ansible_collections.repro.vllm.plugins.module_utils.handoff import _summary_md as md


def test_a_table_cell_never_breaks_the_table():
    table = md._md_table(["a", "b"], [["x|y", "two\nlines"], [None, ""]])
    assert table.splitlines() == ["| a | b |", "|---|---|", "| x\\|y | two lines |", "| - | - |"]


def test_a_fence_is_longer_than_any_fence_inside_the_text():
    assert md._fence("```\ncode\n```", "text") == "````text\n```\ncode\n```\n````"


def test_a_redaction_marker_stays_a_marker_in_the_shell_line():
    line = md.quote_argv(["vllm", "serve", "/m", "--api-key", "<redacted:secret_flag:0123abcd>", "two words"])
    assert line == "vllm serve /m --api-key <redacted:secret_flag:0123abcd> 'two words'"
    assert scan_secrets(line) == []


def test_the_stage_timeline_marks_the_failed_stage_and_the_first_failure():
    rows = [{"label": "run-002 minimal n1", "first": True, "reached": ["config", "cuda_init"], "failed": "cuda_init",
             "failed_at": "12-05 10:00:03", "marks": [{"stage": "config", "timestamp": "12-05 10:00:01"}]}]
    chart = md.timeline_mermaid(rows).splitlines()
    assert chart[1] == '  subgraph r0["* run-002 minimal n1"]'
    assert '    r0s0["config 12-05 10:00:01"]' in chart and '    r0s1["FAILED cuda_init 12-05 10:00:03"]' in chart
    assert "    r0s0 --> r0s1" in chart and chart[-1] == "  style r0s1 fill:#f8d0d0,stroke:#d62728"


def test_a_memory_chart_holds_at_most_its_points_each_series_at_the_nearest_sample():
    rss = {"name": "n1 RSS", "points": [(float(t), float(t)) for t in range(200)]}
    gpu = {"name": "n1 GPU 0", "points": [(0.0, 5.0), (150.0, 7.0)]}
    chart = md.memory_mermaid("run-002 memory", [rss, gpu, {"name": "empty", "points": []}]).splitlines()
    xs = chart[2].split("[", 1)[1].rstrip("]").split(", ")
    assert len(xs) == md.MAX_MEMORY_POINTS and xs[0] == '"0"' and xs[-1] == '"199"'
    lines = [c for c in chart if c.startswith("  line [")]
    assert len(lines) == 2 and lines[1].split("[", 1)[1].rstrip("]").split(", ")[-1] == "7.0"
    assert md.memory_mermaid("nothing", [{"name": "empty", "points": []}]) is None


def test_an_unknown_item_says_how_to_get_it():
    assert md._item_md("image", {"value": "unknown", "how": "set repro_vllm_image"}) == (
        "**unknown** - how to get it: set repro_vllm_image")
    assert md._item_md("repeat", {"value": "not tried", "how": "run it again"}) == (
        "Reproduced by a second clean run: **not tried** - run it again")
