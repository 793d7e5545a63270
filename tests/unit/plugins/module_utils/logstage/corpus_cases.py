# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The classifier tests' one reader of the public corpus's real pastes (tests/fixtures/public-corpus/cases), and the
short forms of an answer the tests compare."""

from __future__ import annotations

import os

CORPUS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "public-corpus", "cases"))


def case(prefix):
    """The text of the corpus case whose file name starts with ``<prefix>-`` (``c377``)."""
    name = [f for f in os.listdir(CORPUS) if f.startswith(prefix + "-")][0]
    with open(os.path.join(CORPUS, name), encoding="utf-8") as fh:
        return fh.read()


def short(ans):
    """An answer as ``(stage, error_class, first error line number)``."""
    return ans["stage"], ans["error_class"], (ans["first_error"] or {}).get("lineno")


def brief(ans):
    """An answer as ``(stage, error_class, confidence, first error line number)``."""
    return ans["stage"], ans["error_class"], ans["confidence"], (ans["first_error"] or {}).get("lineno")
