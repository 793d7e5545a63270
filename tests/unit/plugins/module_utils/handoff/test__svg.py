# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import xml.etree.ElementTree as ET

from ansible_collections.repro.vllm.plugins.module_utils.handoff._svg import line_chart, stage_grid

NS = "{http://www.w3.org/2000/svg}"


def test_line_chart_is_valid_deterministic_and_escaped():
    series = [{"name": "n1 RSS <main>", "points": [(0.0, 100.0), (1.0, 250.5), (2.0, 240.0)]},
              {"name": "n1 GPU 0", "points": [(0.0, 0.0), (2.0, 70000.0)]}]
    marks = [{"x": 0.0, "label": "start"}, {"x": 1.5, "label": "ready & serving"}, {"x": None, "label": "stop"}]
    a = line_chart("run-002 & memory", series, marks)
    assert a == line_chart("run-002 & memory", series, marks)
    root = ET.fromstring(a)
    assert root.tag == NS + "svg"
    assert len(root.findall(NS + "polyline")) == 2
    texts = [t.text for t in root.iter(NS + "text")]
    assert "run-002 & memory" in texts and "ready & serving" in texts and "n1 RSS <main>" in texts
    assert "stop" not in texts  # a mark without a time is not drawn


def test_line_chart_without_samples_says_so():
    root = ET.fromstring(line_chart("empty", [], []))
    assert "no samples recorded" in [t.text for t in root.iter(NS + "text")]


def test_stage_grid_colours_and_star():
    stages = ["environment", "config", "engine_init"]
    rows = [{"label": "run-001 n1", "reached": ["environment", "config", "engine_init"], "failed": None},
            {"label": "run-002 n1", "reached": ["environment", "config", "engine_init"], "failed": "engine_init",
             "first": True, "note": "oom 11-29 15:49:51"}]
    root = ET.fromstring(stage_grid("timeline", stages, rows))
    fills = [r.get("fill") for r in root.iter(NS + "rect")][1:]
    assert fills[:6] == ["#2ca02c"] * 5 + ["#d62728"]
    texts = [t.text for t in root.iter(NS + "text")]
    assert "\u2605 run-002 n1" in texts and "run-001 n1" in texts and "oom 11-29 15:49:51" in texts
