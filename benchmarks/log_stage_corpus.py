# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Accuracy of the log_stage classifier on the public corpus (tests/fixtures/public-corpus), against a naive
baseline.

Each case is a real log pasted in a public vLLM issue, labelled by hand (stage, error class, the line(s) of the
root-cause record) before the classifier was run on it; see the corpus README.  Three figures per classifier:

* **stage**: the answer's ``stage`` equals the label;
* **class**: the answer's ``error_class`` equals the label;
* **line**: the answer's ``first_error.lineno`` is one of the labelled lines (the exception line, or a line of
  the same record such as pydantic's ``Value error, ...`` detail).

The naive baseline is what a person grepping would do: the first line that matches
``error|exception|traceback|fatal|failed`` (case-insensitive) is the error; its class and stage come from a few
keywords of that line (``out of memory`` -> oom / engine_init, ``NCCL`` -> nccl_error / distributed_init, ...,
otherwise other / unknown).

A second baseline, ``always_request``, answers stage ``request`` for every case (no class, no line): on a corpus
where most pastes come from serving failures it is the bar a stage figure has to clear.

Every case has a ``split`` (``dev``: the cases the rules were written from; ``test``: cases labelled blind and
fixed before any rule change, never used to write rules); ``--split`` scores one of them (default: all).
``--confusion`` prints the stage confusion table (label rows, classifier answer columns).

Beside the three figures: how often the classifier answers ``unknown`` or ``none`` on cases whose label is a stage
(``unplaced``), and for each ``confidence`` how many of its answers have the right stage (``high right`` 54/56).
``--batch`` scores the cases of one batch (``issue35``: c205-c269; ``issue35b``: c277-c320; ``issue35c``: c326-c358;
``issue35d``: c384-c408; ``issue35e``: c414-c444; ``issue35f``: c459-c487; ``issue35g``: c488-c519; ``issue35h``: c520-c549) or
the ones before the first batch (``before``).

``--labels paste`` scores the cases a blind audit looked at (``paste_stage``, ``paste_error_class``, ``paste_note``
in index.json; see the corpus README) against what their paste alone shows instead of their gatherer's label: the
two differ where an excerpt ends before its exception and the gatherer took the stage or class from the thread.

usage: python benchmarks/log_stage_corpus.py [--corpus DIR] [--split dev|test|all] [--batch all|before|issue35|...|issue35bd]
                                             [--labels thread|paste] [--json out.json] [--verbose] [--confusion]

Adding a case is one step (``--add``): the log is copied verbatim into ``cases/``, its label and provenance go to
``index.json`` (a public paste: ``--url`` and ``--comment``; a capture of this project, e.g. a failure frozen on
the H200: ``--capture`` names the fixture it came from, and ``--comment`` who made it and when)::

    python benchmarks/log_stage_corpus.py --add tests/fixtures/h200-1gpu/fail_x/server.log --capture \
        --comment "H200 run of 2026-12-05, issue 30" --stage engine_init --error-class oom --lines 812 \
        --why "the KV-cache check of determine_available_memory" [--split dev] [--cause-stage STAGE]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(ROOT, "tests", "fixtures", "public-corpus")

_COLL = []


def _coll_parent():
    """A directory holding ansible_collections/repro/vllm that points at this checkout (made once)."""
    if _COLL:
        return _COLL[0]
    parent = os.path.abspath(os.path.join(ROOT, "..", "..", ".."))
    if os.path.basename(os.path.dirname(os.path.dirname(ROOT))) == "ansible_collections":
        _COLL.append(parent)
        return parent
    tmp = tempfile.mkdtemp(prefix="log-stage-corpus-coll.")
    os.makedirs(os.path.join(tmp, "ansible_collections", "repro"))
    os.symlink(ROOT, os.path.join(tmp, "ansible_collections", "repro", "vllm"))
    _COLL.append(tmp)
    atexit.register(shutil.rmtree, tmp, True)
    return tmp


# --- the naive baseline ---------------------------------------------------------------------------------------

_NAIVE_LINE = re.compile(r"(?i)error|exception|traceback|fatal|failed")
_NAIVE_KEYS = (
    ("out of memory", "oom", "engine_init"),
    ("nccl", "nccl_error", "distributed_init"),
    ("cuda error", "cuda_error", "cuda_init"),
    ("timed out", "timeout", "unknown"),
    ("address already in use", "port_in_use", "environment"),
    ("no module named", "import_error", "environment"),
    ("validation error", "config_error", "config"),
    ("model weights", "missing_file", "weight_loading"),
)


def naive(text):
    """(stage, error_class, lineno) of the first line that looks like an error, or ("none", None, None)."""
    for n, line in enumerate(text.splitlines(), 1):
        if _NAIVE_LINE.search(line):
            low = line.lower()
            for key, cls, stage in _NAIVE_KEYS:
                if key in low:
                    return stage, cls, n
            return "unknown", "other", n
    return "none", None, None


# --- scoring --------------------------------------------------------------------------------------------------

def load(corpus=CORPUS, split="all", batch="all", labels="thread"):
    """The corpus index (a dict with ``cases``), each case with its text read in as ``text``; ``split`` keeps only
    the cases of that split (``dev`` / ``test``; ``all`` keeps every case); ``batch`` keeps the cases of one batch
    (a case's ``batch`` key, e.g. ``issue35``) or ``before`` the ones without a batch key. ``labels="paste"`` scores
    an audited case against what its paste alone shows (``paste_stage``, ``paste_error_class``; a null class leaves
    the case out of the class figure) instead of its gatherer's label."""
    with open(os.path.join(corpus, "index.json"), encoding="utf-8") as fh:
        index = json.load(fh)
    if split != "all":
        index["cases"] = [c for c in index["cases"] if c.get("split") == split]
    if batch == "before":
        index["cases"] = [c for c in index["cases"] if not c.get("batch")]
    elif batch != "all":
        index["cases"] = [c for c in index["cases"] if c.get("batch") == batch]
    for case in index["cases"]:
        if labels == "paste" and "paste_stage" in case:
            case["stage"], case["error_class"] = case["paste_stage"], case["paste_error_class"]
        with open(os.path.join(corpus, case["file"]), "rb") as fh:
            case["text"] = fh.read().decode("utf-8", "replace")
    return index


def answer(text):
    """The log_stage classifier's whole answer for one pasted log."""
    sys.path.insert(0, _coll_parent())
    from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text  # noqa: E402
    return classify_text(text)


def classify(text, ans=None):
    """(stage, error_class, lineno, stage_basis) of the log_stage classifier for one pasted log."""
    ans = ans or answer(text)
    fe = ans["first_error"] or {}
    return ans["stage"], ans["error_class"], fe.get("lineno"), ans.get("stage_basis")


def score(index):
    """Per-case results and the totals for the classifier and the naive baseline."""
    rows = []
    totals = {"classifier": [0, 0, 0], "naive": [0, 0, 0], "always_request": [0, 0, 0]}
    counted = [0, 0, 0]  # cases each figure is taken over (a case whose paste shows no class has no class label)
    confidence = {}
    unplaced = [0, 0]
    for case in index["cases"]:
        ans = answer(case["text"])
        got = classify(case["text"], ans)
        base = naive(case["text"])
        row = {"id": case["id"], "split": case.get("split"), "label": [case["stage"], case["error_class"], case["lines"]],
               "classifier": list(got), "naive": list(base), "confidence": ans.get("confidence")}
        if case["stage"] not in ("unknown", "none"):
            unplaced[1] += 1
            unplaced[0] += 1 if got[0] in ("unknown", "none") else 0
        if ans.get("confidence"):
            cell = confidence.setdefault(ans["confidence"], [0, 0])
            cell[0] += 1 if got[0] == case["stage"] else 0
            cell[1] += 1
        has_class = case["error_class"] is not None or "paste_stage" not in case
        for i, take in enumerate((True, has_class, True)):
            counted[i] += 1 if take else 0
        for name, ans in (("classifier", got), ("naive", base), ("always_request", ("request", None, None))):
            ok = [ans[0] == case["stage"], ans[1] == case["error_class"] if has_class else None, ans[2] in case["lines"]]
            row[name + "_ok"] = ok
            for i, hit in enumerate(ok):
                totals[name][i] += 1 if hit else 0
        rows.append(row)
    den = [c or 1 for c in counted]
    summary = dict((name, {"stage": t[0] / den[0], "class": t[1] / den[1], "line": t[2] / den[2], "hits": t,
                           "cases": len(rows), "counted": counted}) for name, t in totals.items())
    # unplaced: [answered unknown/none, cases labelled with a stage]; confidence: {level: [right stage, answers]}
    summary["classifier"].update({"unplaced": unplaced, "confidence": confidence})
    return rows, summary


def confusion(rows):
    """Stage confusion counts of the classifier: {label stage: {answered stage: n}}."""
    table = {}
    for row in rows:
        cell = table.setdefault(row["label"][0], {})
        cell[row["classifier"][0]] = cell.get(row["classifier"][0], 0) + 1
    return table


def add_case(corpus, path, stage, error_class, lines, why, split="dev", url=None, comment=None, capture=False,
             cause_stage=None, slug=None):
    """Copy ``path`` into the corpus as a new case labelled as given; returns the new case's index entry."""
    sys.path.insert(0, _coll_parent())
    from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import (  # noqa: E402
        ANSWER_STAGES, ERROR_CLASSES)
    with open(os.path.join(corpus, "index.json"), encoding="utf-8") as fh:
        index = json.load(fh)
    with open(path, "rb") as fh:
        data = fh.read()
    n_lines = len(data.decode("utf-8", "replace").splitlines())
    problems = []
    if stage not in ANSWER_STAGES or error_class not in ERROR_CLASSES:
        problems.append("stage and error class must be in the vocabulary (docs/classifier.md)")
    if cause_stage is not None and (cause_stage not in ANSWER_STAGES[:8] or cause_stage == stage):
        problems.append("cause_stage must be an earlier stage than stage")
    if not lines or not all(1 <= n <= n_lines for n in lines):
        problems.append("lines must be line numbers of the file (1..%d)" % n_lines)
    if split not in ("dev", "test") or not why or not comment:
        problems.append("split must be dev or test; why and comment are required")
    if capture:
        rel = os.path.relpath(os.path.abspath(path), ROOT)
        if not rel.startswith(os.path.join("tests", "fixtures") + os.sep) or rel.startswith(os.path.relpath(corpus, ROOT)):
            problems.append("a capture is a file under tests/fixtures (outside the corpus)")
        url = None
    else:
        m = re.match(r"https://github\.com/([^/]+/[^/]+)/(issues|pull)/(\d+)", url or "")
        if m is None:
            problems.append("a public paste needs --url https://github.com/OWNER/REPO/issues|pull/N")
        elif any(c.get("url") == url for c in index["cases"]):
            problems.append("another case already comes from %s (a thread gives one split only)" % url)
    if problems:
        raise SystemExit("not added: " + "; ".join(problems))
    number = 1 + max(int(re.match(r"c(\d+)", c["id"]).group(1)) for c in index["cases"])
    name = re.sub(r"[^a-z0-9]+", "-", (slug or os.path.splitext(os.path.basename(path))[0]).lower()).strip("-")
    cid = "c%03d-%s-%s" % (number, stage.replace("_", "-"), name)
    with open(os.path.join(corpus, "cases", cid + ".log"), "wb") as fh:
        fh.write(data)
    if capture:
        entry = {"capture": rel, "repository": "repro.vllm (this project)", "thread": "capture", "url": None}
    else:
        entry = {"repository": m.group(1), "url": url,
                 "thread": ("issue #%s" if m.group(2) == "issues" else "pull request #%s") % m.group(3)}
    entry.update({"cause_stage": cause_stage, "comment": comment, "error_class": error_class,
                  "file": "cases/%s.log" % cid, "id": cid, "lines": sorted(set(lines)), "split": split,
                  "stage": stage, "why": why})
    index["cases"].append(dict(sorted(entry.items())))
    with open(os.path.join(corpus, "index.json"), "w", encoding="utf-8") as fh:
        json.dump(index, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    return entry


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=CORPUS)
    ap.add_argument("--json", help="write per-case results and totals here")
    ap.add_argument("--verbose", action="store_true", help="print every case, not only the misses")
    ap.add_argument("--split", choices=("dev", "test", "all"), default="all", help="score only this split")
    ap.add_argument("--confusion", action="store_true", help="print the stage confusion table")
    ap.add_argument("--batch", default="all", help="score one batch (issue35, issue35b, ..., issue35bd) or the cases without a batch (before)")
    ap.add_argument("--labels", choices=("thread", "paste"), default="thread",
                    help="score audited cases against what the paste alone shows (paste_stage/paste_error_class)")
    ap.add_argument("--add", metavar="LOG", help="add this log as a case (see the module doc) instead of scoring")
    ap.add_argument("--stage")
    ap.add_argument("--error-class")
    ap.add_argument("--lines", help="the root-cause line(s), comma-separated")
    ap.add_argument("--why")
    ap.add_argument("--url")
    ap.add_argument("--comment")
    ap.add_argument("--capture", action="store_true", help="the log is a capture under tests/fixtures")
    ap.add_argument("--cause-stage")
    ap.add_argument("--slug")
    args = ap.parse_args(argv)
    if args.add:
        entry = add_case(args.corpus, args.add, args.stage, args.error_class,
                         [int(x) for x in (args.lines or "").split(",") if x.strip()], args.why,
                         "test" if args.split == "test" else "dev", args.url, args.comment, args.capture,
                         args.cause_stage, args.slug)
        print("added %s (%s split)" % (entry["id"], entry["split"]))
        return 0
    index = load(args.corpus, args.split, args.batch, args.labels)
    rows, summary = score(index)
    for row in rows:
        miss = False in row["classifier_ok"]
        if miss or args.verbose:
            lab, got = row["label"], row["classifier"]
            print("%s %-48s label %s/%s/%s got %s/%s/%s (%s)" % (
                "MISS" if miss else "ok  ", row["id"], lab[0], lab[1], ",".join(str(x) for x in lab[2]),
                got[0], got[1], got[2], got[3]))
    n = summary["classifier"]["cases"]
    print("\n%d cases (split: %s, batch: %s, labels: %s%s)" % (
        n, args.split, args.batch, args.labels, "" if summary["classifier"]["counted"][1] == n
        else "; class over the %d whose paste shows one" % summary["classifier"]["counted"][1]))
    print("%-15s %8s %8s %8s" % ("", "stage", "class", "line"))
    for name in ("classifier", "naive", "always_request"):
        s = summary[name]
        if name == "always_request":
            print("%-15s %7.1f%% %8s %8s" % (name, 100 * s["stage"], "-", "-"))
        else:
            print("%-15s %7.1f%% %7.1f%% %7.1f%%" % (name, 100 * s["stage"], 100 * s["class"], 100 * s["line"]))
    c = summary["classifier"]
    print("classifier unknown/none on %d of %d cases labelled with a stage (%.1f%%)"
          % (c["unplaced"][0], c["unplaced"][1], 100.0 * c["unplaced"][0] / (c["unplaced"][1] or 1)))
    for level in ("high", "medium", "low"):
        right, total = c["confidence"].get(level, [0, 0])
        print("confidence %-6s stage right %d of %d (%.1f%%)" % (level, right, total, 100.0 * right / (total or 1)))
    if args.confusion:
        table = confusion(rows)
        answers = sorted(set(a for cell in table.values() for a in cell))
        print("\nstage confusion (rows: label, columns: classifier)")
        print("%-17s" % "" + "".join("%-9s" % a[:8] for a in answers))
        for label in sorted(table):
            print("%-17s" % label + "".join("%-9s" % (table[label].get(a, "") or ".") for a in answers))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"split": args.split, "summary": summary, "cases": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
