# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How often the log_stage classifier's answer changes when a public corpus case reaches it the way a collector or
a paste wraps a log (the wrappers of tests/unit/plugins/module_utils/logstage/test__logstage__wrappers.py:
``docker compose logs``, ``kubectl logs --timestamps`` / ``--prefix``, journald, ``srun --label``, pdsh, a markdown
fence, ...).

For each wrapper: the cases whose (stage, error class, first error line) differ from the answer on the case as
pasted - the lines a wrapper puts above the log are taken off the line number (the test's LINE_SHIFT; where the log's
lines all become one, stage and class alone are compared). Nothing here is a label: a changed answer is a
robustness defect whether the plain answer was right or not.

usage: python benchmarks/log_stage_wrapped.py [--split dev|test|all] [--wrapper NAME ...] [--verbose]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import log_stage_corpus as corpus  # noqa: E402

_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "unit", "plugins", "module_utils",
                      "logstage", "test__logstage__wrappers.py")


def wrappers():
    """The unit test's wrappers (name -> function of the log's bytes) and what each does to line numbers (name -> the
    lines it puts above the log, None where the log's lines all become one)."""
    sys.path.insert(0, corpus._coll_parent())
    spec = importlib.util.spec_from_file_location("logstage_wrappers", _TESTS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.WRAPPERS, mod.LINE_SHIFT


def _key(ans, shift=0):
    line = (ans["first_error"] or {}).get("lineno")
    if shift is None:
        return ans["stage"], ans["error_class"]
    return ans["stage"], ans["error_class"], line - shift if line else line


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--split", choices=("dev", "test", "all"), default="all")
    ap.add_argument("--wrapper", action="append", help="only these wrappers (default: every one)")
    ap.add_argument("--verbose", action="store_true", help="print each changed case")
    args = ap.parse_args(argv)
    wraps, shifts = wrappers()
    names = args.wrapper or sorted(wraps)
    cases = corpus.load(split=args.split)["cases"]
    changed = dict((name, 0) for name in names)
    for case in cases:
        data = case["text"].encode("utf-8")
        ans = corpus.answer(data)
        for name in names:
            plain = _key(ans, 0 if shifts.get(name, 0) is not None else None)
            got = _key(corpus.answer(wraps[name](data)), shifts.get(name, 0))
            if got != plain:
                changed[name] += 1
                if args.verbose:
                    print("CHANGED %-16s %s %s -> %s" % (name, case["id"], list(plain), list(got)))
    print("%d cases (split: %s)" % (len(cases), args.split))
    for name in names:
        print("%-28s answer changed on %4d (%.1f%%)" % (name, changed[name], 100.0 * changed[name] / max(1, len(cases))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
