#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Dev-time helper (issue 35, round three): list the messages vLLM raises, with the stage each belongs to, from a
vLLM source tree, for the classifier's message table (plugins/module_utils/logstage/_logstage_messages.py).

It reads the tree with :mod:`ast` (nothing is imported or run), finds every ``raise SomeError("literal ...")`` /
``raise SomeError(f"literal {x} ...")`` in the modules below, and keeps the literal text before the first
placeholder (the part every instance of the message shares).  The stage comes from the function that raises it
where the frame map (``FRAMES`` of _logstage_frames.py) knows it, else from the module (``MODULE_STAGES``).  A
prefix raised under two different stages, or shorter than ``MIN_PREFIX`` characters, is dropped: it would not say
where, and so is one raised in a function that a module of another stage also calls (``get_quant_config``: the
config and the loader), in any of the trees read.  Output: one tab-separated row per message (stage, class, exception type, prefix, file:function), sorted.

Run it on one or more checkouts (``git worktree``-free: ``git archive v0.10.0 | tar -x -C /tmp/v0.10``, or an
installed ``site-packages``); a prefix must agree on its stage in every tree it appears in::

    python scripts/vllm_raise_messages.py /tmp/vllm-0.10/vllm /tmp/vllm-0.32/vllm > /tmp/messages.tsv
    python scripts/vllm_raise_messages.py --python /tmp/vllm-0.32/vllm   # the rows of MESSAGES

The sdist of a release holds the same Python files (``https://pypi.org/simple/vllm/`` names ``vllm-X.tar.gz``):
``tar -xzf vllm-0.6.0.tar.gz --wildcards '*/vllm/*.py'``.

What is committed is the table of prefixes it prints (reviewed by hand), not vLLM's code.
"""

from __future__ import annotations

import ast
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "plugins", "module_utils", "logstage"))

from _logstage_frames import FRAMES  # noqa: E402  (standard library only; imported by path, not as the collection)

MIN_PREFIX = 24
MAX_PREFIX = 64     # what the table keeps of a longer message: enough to tell it apart
# (path prefix inside the vllm package, stage, class): the first that matches wins; modules not listed are skipped
MODULE_STAGES = (
    ("config/", "config", "config_error"),
    ("config.py", "config", "config_error"),
    ("engine/arg_utils.py", "config", "config_error"),
    ("entrypoints/openai/cli_args.py", "config", "config_error"),
    ("transformers_utils/config.py", "config", "config_error"),
    ("model_executor/model_loader/", "weight_loading", "other"),
    ("distributed/parallel_state.py", "distributed_init", "other"),
    ("distributed/device_communicators/", "distributed_init", "other"),
    ("v1/core/kv_cache_utils.py", "engine_init", "other"),
    # modules of several stages: only a function the frame map places counts (init_device, load_model,
    # determine_available_memory, profile_run, initialize_kv_cache, capture_model, execute_model, the handlers)
    ("worker/", None, "other"),
    ("v1/worker/", None, "other"),
    # round 58: the V1 input processor's checks of a request (processor.py 0.8 -> 0.11, input_processor.py 0.12 ->):
    # only its _validate* functions, which process_inputs runs for each request (REQUEST_FUNC_RX)
    ("v1/engine/processor.py", "request", "other"),
    ("v1/engine/input_processor.py", "request", "other"),
    ("v1/engine/", None, "other"),
    ("v1/executor/", None, "other"),
    ("executor/", None, "other"),
    ("engine/", None, "other"),
    ("entrypoints/openai/", None, "other"),
)
# a raise counts only inside a function the frame map places, or one whose name says it runs while its stage does
# (building, checking, loading); helpers that also run later (the KV block pool's popleft, a communicator's send,
# the multi-modal cache's put, get_current_vllm_config) are left out
STARTUP_FUNC_RX = re.compile(r"^_{0,2}(?:post_init|init|verify|validate|check|create|from_|get_and_verify|resolve|"
                             r"set_default|load|prepare|get_quant_config|auto_fit|determine|initialize)")

# in a module whose stage is request, the functions that run for each request (not its constructor)
REQUEST_FUNC_RX = re.compile(r"^_validate")


def _frame_stage(func, path):
    for f, part, stage, _src in FRAMES:
        if f == func and part in path:
            return stage
    return None


def _prefix(node):
    """The literal text before the first placeholder of a raise's first argument, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                parts.append(v.value)
            else:
                break
        text = "".join(parts)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        return _prefix(node.left)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _prefix(node.func.value).split("{", 1)[0] if _prefix(node.func.value) else None
    else:
        return None
    text = re.split(r"%[sdrif]|%\(", text, maxsplit=1)[0]
    return " ".join(text.split())


def _module_stage(rel):
    for part, stage, cls in MODULE_STAGES:
        if rel.startswith(part):
            return stage, cls
    return None


# modules under the listed paths that serve requests, not their stage (the multi-modal cache's shared memory)
SKIP = ("distributed/device_communicators/shm_object_storage.py",)


def _modules(tree_root):
    """(relative path, stage and class, parsed tree) of the listed modules."""
    for dirpath, _dirs, files in os.walk(tree_root):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, tree_root).replace(os.sep, "/")
            mod = _module_stage(rel)
            if mod is None or rel in SKIP:
                continue
            try:
                with open(path, encoding="utf-8") as fh:
                    yield rel, mod, ast.parse(fh.read())
            except (SyntaxError, UnicodeDecodeError):
                continue


def _callers(modules):
    """Function name -> the module stages that call it (a helper the config and a loader both call says neither)."""
    calls = {}
    for _rel, mod, tree in modules:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                if name:
                    calls.setdefault(name, set()).add(mod[0])
    return calls


def scan(tree_root):
    """Yield (stage, class, exception type, prefix, where) for each raise of the listed modules."""
    modules = list(_modules(tree_root))
    calls = _callers(modules)
    for rel, mod, tree in modules:
        if tree is not None:
            for func in ast.walk(tree):
                if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                # a function another stage's module also calls: its messages say no one stage (in any tree) - except
                # one the frame map places at config (create_engine_config, verify_with_parallel_config): whoever calls
                # it (the tensorizer's own engine, say), it builds or checks the config (issue 35, round 33)
                shared = not func.name.startswith("__") and calls.get(func.name, set()) - {mod[0], None}
                for node in ast.walk(func):
                    if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call) or not node.exc.args:
                        continue
                    exc = node.exc.func
                    exc_name = exc.id if isinstance(exc, ast.Name) else getattr(exc, "attr", None)
                    if not exc_name or exc_name == "NotImplementedError":
                        continue
                    prefix = _prefix(node.exc.args[0])
                    if not prefix or len(prefix) < MIN_PREFIX:
                        continue
                    framed = _frame_stage(func.name, "vllm/" + rel)
                    stage = framed if framed == "config" else "?" if shared else framed
                    if stage is None:
                        words = REQUEST_FUNC_RX if mod[0] == "request" else STARTUP_FUNC_RX
                        if mod[0] is None or words.match(func.name) is None:
                            continue
                        stage = mod[0]
                    yield stage, mod[1] if stage == mod[0] else "other", exc_name, prefix, "%s:%s" % (rel, func.name)


def main(argv):
    as_python = "--python" in argv
    rows = {}
    for root in [a for a in argv[1:] if a != "--python"]:
        for stage, cls, exc, prefix, where in scan(root):
            rows.setdefault(prefix, set()).add((stage, cls, exc, where))
    out = []
    for prefix, found in rows.items():
        stages = set(f[0] for f in found)
        if len(stages) != 1 or "?" in stages:
            continue
        stage, cls, exc, where = sorted(found)[0]
        out.append((stage, cls, exc, prefix, where))
    # two messages the cut to MAX_PREFIX makes equal: one row when they agree on the stage, none when they do not
    cut = {}
    for stage, _cls, _exc, prefix, _where in out:
        cut.setdefault(prefix[:MAX_PREFIX].rstrip(), set()).add(stage)
    done = set()
    for stage, cls, exc, prefix, where in sorted(out):
        short = prefix[:MAX_PREFIX].rstrip()
        if as_python and (len(cut[short]) != 1 or short in done):
            continue
        done.add(short)
        if as_python:
            # the rows of MESSAGES in plugins/module_utils/logstage/_logstage_messages.py
            print("    (%r, %r, %r,\n     %r)," % (short, stage, cls, "%s %s" % (exc, where)))
        else:
            print("\t".join((stage, cls, exc, prefix, where)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
