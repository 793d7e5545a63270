# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gather() runs the commands that do not depend on each other at once, after nvidia-smi --version (the probe).

The answers are the real captures, given by tests/fixtures/bin/nvidia-smi-replay. Where a test needs to see when
each nvidia-smi process ran, or needs one to hang, the nvidia-smi it calls is a small script written into the
test's tmp_path: it appends its pid, argv and CLOCK_MONOTONIC (the same clock in every process) when it starts and
after an optional sleep, then hands over to the replay for the real answer. These are behaviour tests: they check
which processes ran, their order and overlap, never how long anything took.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import sys

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.gpu import _gpu
from ansible_collections.repro.vllm.plugins.module_utils.gpu._gpu import gather

FIX = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures"))
REPLAY = os.path.join(FIX, "bin", "nvidia-smi-replay")
LDCONFIG = os.path.join(FIX, "bin", "ldconfig-replay")
TWO = os.path.join(FIX, "2026-11-29-580.159.04-2xh200")   # --version, full query, apps, topo, nvlink, -q
ONE = os.path.join(FIX, "2026-11-29-580.159.04-h200")
IDLE = os.path.join(FIX, "h200-1gpu")           # no capture of the full query: the fallback query is taken
BUSY = os.path.join(FIX, "h200-1gpu-busy")      # no --version capture: the default table gives the CUDA version

FAKE = '''#!%(python)s
import json, os, sys, time
argv = sys.argv[1:]
def note(event):
    with open(%(log)r, "a") as fh:
        fh.write(json.dumps({"pid": os.getpid(), "argv": argv, "event": event, "t": time.monotonic()}) + "\\n")
note("start")
time.sleep(%(hang)r if argv[:%(hang_len)d] == %(hang_argv)r else %(sleep)r)
note("end")
os.execv(sys.executable, [sys.executable, %(replay)r] + argv)
'''


def fake_smi(tmp_path, sleep=0.0, hang_argv=None, hang=60.0):
    """An nvidia-smi in tmp_path that notes its start and end, sleeps ``sleep`` seconds (``hang`` when its argv
    starts with ``hang_argv``) and then answers as the replay. Returns (path, log path)."""
    log = tmp_path / "smi.log"
    path = tmp_path / "bin" / "nvidia-smi"
    path.parent.mkdir()
    hang_argv = list(hang_argv or ["(never)"])
    path.write_text(FAKE % {"python": sys.executable, "log": str(log), "sleep": sleep, "hang": hang,
                            "hang_argv": hang_argv, "hang_len": len(hang_argv), "replay": REPLAY})
    path.chmod(0o755)
    return str(path), log


def intervals(log):
    """{pid: {"argv", "start", "end" (None while it slept)}} from the fake's notes, in the order they started."""
    out = {}
    for line in log.read_text().splitlines():
        note = json.loads(line)
        rec = out.setdefault(note["pid"], {"argv": note["argv"], "start": None, "end": None})
        rec[note["event"]] = note["t"]
    return sorted(out.values(), key=lambda r: r["start"])


def options(tmp_path, smi=REPLAY, **extra):
    proc = tmp_path / "proc" / "driver" / "nvidia"
    if not proc.is_dir():
        proc.mkdir(parents=True)
        shutil.copy(os.path.join(IDLE, "proc_driver.txt"), str(proc / "version"))
    opts = {"nvidia_smi_path": smi, "ldconfig_path": LDCONFIG, "proc_root": str(tmp_path / "proc"),
            "dev_root": str(tmp_path / "nodev"), "imex_config_dir": str(tmp_path / "noimex"), "command_timeout": 10}
    opts.update(extra)
    return opts


def without_durations(facts):
    facts = copy.deepcopy(facts)
    facts.pop("duration_ms")
    for cmd in facts["commands"]:
        cmd.pop("duration_ms")
    return facts


def smi_records(facts):
    return [(c["cmd"][1:], c["status"]) for c in facts["commands"] if c["cmd"][0].endswith("nvidia-smi")]


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv("REPRO_VLLM_REPLAY_SLEEP", raising=False)
    monkeypatch.delenv("REPRO_VLLM_REPLAY_LOG", raising=False)


# ------------------------------------------------------------------------ the same facts as one after another

@pytest.mark.parametrize("folder,extra", [
    (TWO, {}),                                            # everything answered, -q read (fabric state reported)
    (TWO, {"own_pids": [1], "fabric_query": "never"}),
    (ONE, {}),
    (IDLE, {}),                                           # the fallback query inside the concurrent chain
    (BUSY, {"extra_query_fields": ["inforom.img"]}),      # the default table after the query, a compute process
    (BUSY, {"gather": ["topology", "nvlink"]}),           # no query; the table alone
])
def test_concurrent_facts_are_the_serial_facts(tmp_path, monkeypatch, folder, extra):
    monkeypatch.setenv("REPRO_VLLM_REPLAY_DIR", folder)
    concurrent = gather(options(tmp_path, **extra))
    serial = gather(options(tmp_path, **extra), workers=0)
    assert without_durations(concurrent) == without_durations(serial)
    assert concurrent["errors"] == [] and concurrent["timed_out"] == [] and concurrent["skipped"] == []


def test_the_real_two_gpu_run_in_its_order(tmp_path, monkeypatch):
    # the order of the records is that of gather() on the real host (module/gpu_facts.json), whatever finished first
    monkeypatch.setenv("REPRO_VLLM_REPLAY_DIR", TWO)
    facts = gather(options(tmp_path))
    with open(os.path.join(TWO, "module", "gpu_facts.json")) as fh:
        real = json.load(fh)
    assert [c["cmd"][1:] for c in facts["commands"]] == [c["cmd"][1:] for c in real["commands"]]
    for key in ("topology", "nvlink", "fabric", "processes", "gpu_count"):
        assert facts[key] == real[key], key


# ------------------------------------------------------------------------------------- they really overlap

def test_probe_alone_then_the_independent_calls_at_once_then_fabric(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_VLLM_REPLAY_DIR", TWO)
    smi, log = fake_smi(tmp_path, sleep=0.3)
    facts = gather(options(tmp_path, smi=smi))
    runs = intervals(log)
    assert [r["argv"][:1] for r in runs][0] == ["--version"] and all(r["end"] for r in runs)
    probe, rest = runs[0], runs[1:]
    # the probe ran alone: every other nvidia-smi started after it ended
    assert all(r["start"] >= probe["end"] for r in rest)
    pool = [r for r in rest if r["argv"] != ["-q"]]
    assert sorted(r["argv"][0].split("=")[0] for r in pool) == [
        "--query-compute-apps", "--query-gpu", "nvlink", "topo"]
    overlapping = [(a["argv"], b["argv"]) for i, a in enumerate(pool) for b in pool[i + 1:] if b["start"] < a["end"]]
    assert overlapping, pool
    # -q depends on the GPUs found: it started after the query (and the rest of the pool) had ended
    fabric = [r for r in rest if r["argv"] == ["-q"]]
    assert len(fabric) == 1 and fabric[0]["start"] >= max(r["end"] for r in pool)
    # one process per record, and the facts of the real answers
    assert len(runs) == len(smi_records(facts))
    assert facts["gpu_count"] == 2 and facts["topology"]["matrix"]["GPU0"]["GPU1"] == "NV18"
    assert facts["fabric"]["source"] == "nvidia-smi -q" and facts["timed_out"] == []


def test_serial_path_never_overlaps(tmp_path, monkeypatch):
    # the comparison above means something only if workers=0 really is one command after another
    monkeypatch.setenv("REPRO_VLLM_REPLAY_DIR", ONE)
    smi, log = fake_smi(tmp_path, sleep=0.05)
    gather(options(tmp_path, smi=smi), workers=0)
    runs = intervals(log)
    assert len(runs) > 3 and all(b["start"] >= a["end"] for a, b in zip(runs, runs[1:]))


# ---------------------------------------------------------------------------------------------- hangs

def test_hung_probe_starts_no_other_nvidia_smi(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_VLLM_REPLAY_DIR", TWO)
    smi, log = fake_smi(tmp_path, hang_argv=["--version"])
    facts = gather(options(tmp_path, smi=smi, command_timeout=1))
    runs = intervals(log)
    assert [r["argv"] for r in runs] == [["--version"]] and runs[0]["end"] is None  # one process, killed asleep
    records = smi_records(facts)
    assert records[0] == (["--version"], "timed_out")
    assert [status for _argv, status in records[1:]] == ["skipped"] * 4   # query, apps, topo, nvlink: as today
    assert facts["timed_out"] == [smi + " --version"] and len(facts["skipped"]) == 4
    assert "timed out earlier" in facts["commands"][1]["msg"]
    assert facts["loader"]["status"] == "ok"  # the commands that are not nvidia-smi still ran
    # the same records and facts as one command after another
    serial = gather(options(tmp_path, smi=smi, command_timeout=1), workers=0)
    assert without_durations(facts) == without_durations(serial)


def test_nvml_failure_of_the_probe_starts_no_other_nvidia_smi(tmp_path, monkeypatch):
    # Not a capture: no host with a broken driver was available. The folder is a copy of the real two-GPU capture
    # whose --version answer is replaced by the line the driver prints on a mismatch (see test_gpu_parsers).
    folder = tmp_path / "mismatch"
    shutil.copytree(TWO, str(folder))
    (folder / "nvsmi_version.txt").write_text("Failed to initialize NVML: Driver/library version mismatch\n")
    (folder / "nvsmi_version.meta").write_text("rc=18 wall_ms=0\n")
    monkeypatch.setenv("REPRO_VLLM_REPLAY_DIR", str(folder))
    smi, log = fake_smi(tmp_path)
    facts = gather(options(tmp_path, smi=smi))
    assert [r["argv"] for r in intervals(log)] == [["--version"]]
    assert smi_records(facts) == [(["--version"], "failed")]
    assert facts["driver"]["nvml_error"] and facts["driver"]["mismatch"] is True
    assert facts["loader"]["status"] == "ok"
    serial = gather(options(tmp_path, smi=smi), workers=0)
    assert without_durations(facts) == without_durations(serial)


def test_one_hung_concurrent_call_stops_later_nvidia_smi_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_VLLM_REPLAY_DIR", TWO)
    smi, log = fake_smi(tmp_path, hang_argv=["topo"])
    facts = gather(options(tmp_path, smi=smi, command_timeout=1, fabric_query="always"))
    topo = "%s topo -m" % smi
    assert smi_records(facts) == [
        (["--version"], "ok"), (["--query-gpu=" + ",".join(_gpu.GPU_QUERY_FIELDS), "--format=csv,noheader,nounits"], "ok"),
        (["--query-compute-apps=" + ",".join(_gpu.APPS_FIELDS), "--format=csv,noheader,nounits"], "ok"),
        (["topo", "-m"], "timed_out"), (["nvlink", "-s"], "ok"), (["-q"], "skipped")]
    assert facts["timed_out"] == [topo] and facts["skipped"] == [smi + " -q"]
    q = [c for c in facts["commands"] if c["cmd"][1:] == ["-q"]][0]
    assert q["msg"] == ("not run: '%s' timed out earlier in this task, and a wedged driver answers no later call"
                        % topo)
    # no nvidia-smi started after the pool: -q never ran
    assert ["-q"] not in [r["argv"] for r in intervals(log)]
    # what the other calls answered is all there
    assert facts["gpu_count"] == 2 and facts["gpu_query"]["status"] == "ok"
    assert facts["processes_summary"]["status"] == "ok" and facts["nvlink"]["state"] == "reported"
    assert facts["topology"]["status"] == "timed_out" and facts["topology"]["parsed"] is False
    assert facts["fabric"]["status"] == "skipped" and facts["fabric"]["source"] == "query-gpu"
    assert facts["loader"]["status"] == "ok" and facts["present"] is True and facts["errors"] == []
