# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_facts module end to end, with nvidia-smi answered by tests/fixtures/bin/nvidia-smi-replay from the
real H200 captures (a real process per call, real timeouts, real files under a temporary proc_root).

Faulty inputs are made at test time by altering copies of real captures in a temporary folder; each such
test says which capture it altered and how.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.repro.vllm.plugins.module_utils.gpu import _gpu
from ansible_collections.repro.vllm.plugins.modules import gpu_facts

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))
STUB = os.path.join(FIXTURES, "bin", "nvidia-smi-replay")
LDCONFIG_STUB = os.path.join(FIXTURES, "bin", "ldconfig-replay")
IDLE = os.path.join(FIXTURES, "h200-1gpu")
BUSY = os.path.join(FIXTURES, "h200-1gpu-busy")
IDLE_UUID = "GPU-28c213c1-bcca-1fbe-60ef-e9178d887fc7"
BUSY_UUID = "GPU-91ad0855-a280-e24b-1e44-5e7b819cac29"
PRIMARY_ARGV = ["--query-gpu=" + ",".join(_gpu.GPU_QUERY_FIELDS), "--format=csv,noheader,nounits"]


def run_module(args, capsys):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            gpu_facts.main()
    out = json.loads(capsys.readouterr().out)
    return exc.value.code, out


@pytest.fixture
def proc_root(tmp_path):
    """A proc_root holding a copy of the real /proc/driver/nvidia/version of the H200 host."""
    root = tmp_path / "proc"
    (root / "driver" / "nvidia").mkdir(parents=True)
    shutil.copyfile(os.path.join(IDLE, "proc_driver.txt"), str(root / "driver" / "nvidia" / "version"))
    return root


@pytest.fixture
def replay(monkeypatch, tmp_path):
    """Point the replay stub at a capture folder; returns the call log path."""
    log = tmp_path / "calls.log"
    monkeypatch.setenv("REPRO_VLLM_REPLAY_LOG", str(log))
    monkeypatch.delenv("REPRO_VLLM_REPLAY_SLEEP", raising=False)
    for var in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"):
        monkeypatch.delenv(var, raising=False)

    def use(folder):
        monkeypatch.setenv("REPRO_VLLM_REPLAY_DIR", str(folder))
        return log
    return use


def base_args(tmp_path, proc_root=None, **extra):
    (tmp_path / "dev").mkdir(exist_ok=True)
    args = {"nvidia_smi_path": STUB, "ldconfig_path": LDCONFIG_STUB, "dev_root": str(tmp_path / "dev"),
            "proc_root": str(proc_root or tmp_path / "no-proc"), "imex_config_dir": str(tmp_path / "no-imex")}
    args.update(extra)
    return args


def copy_folder(src, tmp_path, name):
    dst = tmp_path / name
    shutil.copytree(src, str(dst))
    return dst


def materialize_primary(folder):
    """Save, as an exact capture in ``folder`` (a temporary copy), the stub's answer to the module's full query,
    so that a test can then alter that text. Returns the bytes."""
    res = subprocess.run([STUB] + PRIMARY_ARGV, env=dict(os.environ, REPRO_VLLM_REPLAY_DIR=str(folder)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert res.returncode == 0, res.stderr
    (folder / "primary.cmd").write_text("nvidia-smi " + " ".join(PRIMARY_ARGV) + " ")
    (folder / "primary.meta").write_text("rc=0 wall_ms=0\n")
    return res.stdout


def calls(log):
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# ------------------------------------------------------------------------------------------------ healthy, busy

def test_healthy_idle_h200(tmp_path, proc_root, replay, capsys, monkeypatch):
    replay(IDLE)
    monkeypatch.setenv("NVIDIA_VISIBLE_DEVICES", "0")
    rc, out = run_module(base_args(tmp_path, proc_root), capsys)
    assert rc == 0 and out["changed"] is False
    f = out["ansible_facts"]["repro_vllm_gpu"]
    assert set(f) == set(_gpu.empty_facts())
    assert f["present"] is True and f["reason"] is None
    drv = f["driver"]
    assert (drv["kernel_module_version"], drv["kernel_module_flavor"]) == ("580.159.04", "open")
    assert drv["userspace_version"] == "580.159.04" and drv["nvml_version"] == "580.159"
    assert drv["cuda_driver_version"] == "13.0"
    assert drv["mismatch"] is False and drv["mismatch_checked"] is True and drv["mismatch_evidence"] == []
    assert f["gpu_count"] == 1
    gpu = f["gpus"][0]
    assert (gpu["uuid"], gpu["name"], gpu["pci_bus_id"]) == (IDLE_UUID, "NVIDIA H200", "00000000:00:06.0")
    assert (gpu["memory_total_mib"], gpu["memory_used_mib"], gpu["compute_cap"]) == (143771, 0, "9.0")
    assert gpu["persistence_mode"] is True and gpu["mig_mode"]["current"] is False
    # this capture folder holds only a 20-field query: the full query cannot be replayed from it, so the
    # module takes its fallback (the reason is the stub's own line, not the driver's)
    assert f["gpu_query"]["fallback_used"] is True and "nvidia-smi-replay:" in f["gpu_query"]["fallback_reason"]
    assert f["gpu_query"]["fields"] == list(_gpu.GPU_QUERY_SAFE_FIELDS)
    assert f["processes"] == [] and gpu["foreign_processes"] == [] and gpu["foreign_memory_mib"] == 0
    assert f["topology"]["matrix"] == {"GPU0": {"GPU0": "X"}}
    assert f["fabric"]["attached"] is False
    assert f["loader"]["status"] == "ok" and len(f["loader"]["libcuda"]) == 4
    assert f["visible_devices"]["nvidia_visible_devices"] == "0"
    assert f["timed_out"] == [] and f["errors"] == []
    # no capture of "nvidia-smi nvlink -s" exists: the stub's refusal is recorded as a failed command
    assert f["nvlink"]["state"] == "failed"
    assert all(c["status"] in ("ok", "failed", "not_found") for c in f["commands"])


def test_busy_h200_foreign_process(tmp_path, proc_root, replay, capsys):
    log = replay(BUSY)
    rc, out = run_module(base_args(tmp_path, proc_root), capsys)
    f = out["ansible_facts"]["repro_vllm_gpu"]
    assert rc == 0 and f["present"] is True
    assert f["gpu_query"]["fallback_used"] is False  # every field answered by the real all-fields capture
    gpu = f["gpus"][0]
    assert gpu["uuid"] == BUSY_UUID and gpu["memory_used_mib"] == 10767
    assert gpu["mig_mode"] == {"current": False, "pending": False}
    assert gpu["ecc"]["mode_current"] is True and gpu["ecc"]["uncorrected_volatile_total"] == 0
    # the replayed driver names pid 420, which is no process under this test's proc_root: listed beside the
    # workload, but unattributed (never called foreign on a guess)
    listed = gpu["foreign_processes"]
    assert [(p["pid"], p["process_name"], p["used_memory_mib"]) for p in listed] == [(420, "python3", 10758)]
    assert listed[0]["attribution"] == "unattributed" and listed[0]["local_pid"] is None
    assert "not a process here" in listed[0]["reason"]
    assert f["processes_summary"]["attribution_counts"] == {"workload": 0, "foreign": 0, "unattributed": 1}
    assert gpu["foreign_memory_mib"] == 10758
    assert f["processes_summary"]["foreign_process_count"] == 1
    assert f["processes"][0]["gpu_index"] == 0 and f["processes"][0]["own"] is False
    # this folder has no --version capture: the CUDA version comes from the default table instead
    assert f["driver"]["cuda_driver_version"] == "13.0"
    assert f["driver"]["cuda_driver_version_source"] == "nvidia-smi"
    assert [] in calls(log)


def test_busy_h200_own_pid_is_not_foreign(tmp_path, proc_root, replay, capsys):
    replay(BUSY)
    _rc, out = run_module(base_args(tmp_path, proc_root, own_pids=[420]), capsys)
    f = out["ansible_facts"]["repro_vllm_gpu"]
    assert f["gpus"][0]["foreign_processes"] == [] and f["gpus"][0]["foreign_memory_mib"] == 0
    assert f["processes"][0]["own"] is True
    assert f["processes_summary"]["own_pids"] == [420]


# ------------------------------------------------------------------------------------------------ hung, missing

def test_hung_nvidia_smi_is_called_once_and_bounded(tmp_path, proc_root, replay, capsys, monkeypatch):
    log = replay(IDLE)
    monkeypatch.setenv("REPRO_VLLM_REPLAY_SLEEP", "30")
    start = time.monotonic()
    rc, out = run_module(base_args(tmp_path, proc_root, command_timeout=0.5), capsys)
    elapsed = time.monotonic() - start
    f = out["ansible_facts"]["repro_vllm_gpu"]
    assert rc == 0
    assert elapsed < 6, elapsed  # one timeout (0.5 s) and the kill, not one per nvidia-smi call
    assert len(calls(log)) == 1
    # the ldconfig stub sleeps too: a command other than nvidia-smi still runs, under its own timeout
    assert f["timed_out"] == ["%s --version" % STUB, "%s -p" % LDCONFIG_STUB]
    assert f["skipped"] and all(s.startswith(STUB) for s in f["skipped"])
    smi = [c for c in f["commands"] if c["cmd"][0] == STUB]
    assert smi[0]["status"] == "timed_out" and all(c["status"] == "skipped" for c in smi[1:])
    assert f["gpu_query"]["status"] == "skipped" and f["gpus"] == []
    # the kernel module is there: present, with the hang recorded
    assert f["present"] is True and f["driver"]["kernel_module_version"] == "580.159.04"


def test_hung_nvidia_smi_without_kernel_module(tmp_path, replay, capsys, monkeypatch):
    replay(IDLE)
    monkeypatch.setenv("REPRO_VLLM_REPLAY_SLEEP", "30")
    _rc, out = run_module(base_args(tmp_path, None, command_timeout=0.3, gather=["gpus"]), capsys)
    f = out["ansible_facts"]["repro_vllm_gpu"]
    assert f["present"] is False and "timed out" in f["reason"] and "does not exist" in f["reason"]


def test_missing_nvidia_smi_and_no_proc(tmp_path, replay, capsys, monkeypatch):
    replay(IDLE)
    for d in ("/usr/bin", "/usr/sbin", "/bin", "/sbin"):
        if os.path.exists(os.path.join(d, "nvidia-smi")):
            pytest.skip("this machine has a real nvidia-smi in %s" % d)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    args = base_args(tmp_path, None)
    del args["nvidia_smi_path"]
    rc, out = run_module(args, capsys)
    f = out["ansible_facts"]["repro_vllm_gpu"]
    assert rc == 0 and f["present"] is False
    assert "nvidia-smi not found" in f["reason"]
    assert os.path.join(str(tmp_path / "no-proc"), "driver", "nvidia", "version") in f["reason"]
    assert "nvidia-smi" in f["not_found"] and f["nvidia_smi_path"] is None
    assert f["gpus"] == [] and f["gpu_count"] == 0
    assert set(f) == set(_gpu.empty_facts())


def test_explicit_path_that_is_not_executable(tmp_path, replay, capsys):
    replay(IDLE)
    _rc, out = run_module(base_args(tmp_path, None, nvidia_smi_path=str(tmp_path / "nope")), capsys)
    f = out["ansible_facts"]["repro_vllm_gpu"]
    assert f["present"] is False and "is not an executable file" in f["reason"]


# ------------------------------------------------------------------------------------------------ faulty outputs

def test_truncated_csv(tmp_path, proc_root, replay, capsys):
    # faulty input made here: a copy of h200-1gpu-busy whose answer to the full query (the columns of the real
    # all-fields capture) is cut in the middle of the line
    folder = copy_folder(BUSY, tmp_path, "busy-truncated")
    text = materialize_primary(folder)
    (folder / "primary.txt").write_bytes(text[:text.index(b"NVIDIA H200") + 8])
    replay(folder)
    rc, out = run_module(base_args(tmp_path, proc_root), capsys)
    f = out["ansible_facts"]["repro_vllm_gpu"]
    assert rc == 0 and f["gpus"] == [] and f["gpu_count"] == 0
    assert len(f["gpu_query"]["errors"]) == 1 and "fields were asked" in f["gpu_query"]["errors"][0]["reason"]
    assert f["present"] is True  # the kernel module says so
    # the process still is listed, with no GPU to attribute it to
    assert f["processes_summary"]["unattributed_processes"] == [420]


def test_non_utf8_bytes(tmp_path, proc_root, replay, capsys):
    # faulty input made here: bytes that are not UTF-8 put into the product name of a copy of the real answer
    folder = copy_folder(BUSY, tmp_path, "busy-bytes")
    text = materialize_primary(folder)
    (folder / "primary.txt").write_bytes(text.replace(b"NVIDIA H200", b"NVIDIA \xff\xc3H200"))
    replay(folder)
    rc, out = run_module(base_args(tmp_path, proc_root), capsys)
    gpu = out["ansible_facts"]["repro_vllm_gpu"]["gpus"][0]
    assert rc == 0
    assert gpu["name"].startswith(u"NVIDIA \ufffd") and gpu["name"].endswith("H200")
    assert gpu["memory_total_mib"] == 143771 and gpu["uuid"] == BUSY_UUID


def test_driver_rejecting_a_field_falls_back(tmp_path, proc_root, replay, capsys):
    # the stub gives the real driver's answer to an unknown field (capture bad_field: exit 2)
    log = replay(BUSY)
    _rc, out = run_module(base_args(tmp_path, proc_root, extra_query_fields=["not.a.field"]), capsys)
    f = out["ansible_facts"]["repro_vllm_gpu"]
    q = f["gpu_query"]
    assert q["fallback_used"] is True and q["rejected_field"] == "not.a.field"
    assert 'Field "not.a.field" is not a valid field to query.' in q["fallback_reason"]
    assert q["fields"] == list(_gpu.GPU_QUERY_SAFE_FIELDS) and q["status"] == "ok"
    gpu = f["gpus"][0]
    assert gpu["memory_used_mib"] == 10767 and gpu["ecc"]["mode_current"] is None  # not in the small set
    queries = [c for c in calls(log) if c and c[0].startswith("--query-gpu=")]
    assert len(queries) == 2


def test_extra_field_returned_raw(tmp_path, proc_root, replay, capsys):
    replay(BUSY)
    _rc, out = run_module(base_args(tmp_path, proc_root, extra_query_fields=["inforom.img", "index"]), capsys)
    gpu = out["ansible_facts"]["repro_vllm_gpu"]["gpus"][0]
    assert gpu["extra"] == {"inforom.img": "G520.0282.02.02"} and gpu["index"] == 0


def test_kernel_and_userspace_versions_differ(tmp_path, replay, capsys):
    # faulty input made here: a copy of the real /proc/driver/nvidia/version with another version number
    root = tmp_path / "proc-old"
    (root / "driver" / "nvidia").mkdir(parents=True)
    with open(os.path.join(IDLE, "proc_driver.txt")) as fh:
        text = fh.read()
    (root / "driver" / "nvidia" / "version").write_text(text.replace("580.159.04", "570.86.15"))
    replay(IDLE)
    _rc, out = run_module(base_args(tmp_path, root, gather=["driver"]), capsys)
    drv = out["ansible_facts"]["repro_vllm_gpu"]["driver"]
    assert drv["mismatch"] is True and drv["mismatch_checked"] is True
    assert "580.159.04" in drv["mismatch_evidence"][0] and "570.86.15" in drv["mismatch_evidence"][0]


# ------------------------------------------------------------------------------------------------ options

def test_check_mode_gives_the_same_facts(tmp_path, proc_root, replay, capsys):
    replay(BUSY)
    _rc, out = run_module(dict(base_args(tmp_path, proc_root), _ansible_check_mode=True), capsys)
    f = out["ansible_facts"]["repro_vllm_gpu"]
    assert out["changed"] is False
    assert f["gpus"][0]["foreign_memory_mib"] == 10758


def test_gather_subset_runs_only_what_it_needs(tmp_path, proc_root, replay, capsys):
    log = replay(BUSY)
    _rc, out = run_module(base_args(tmp_path, proc_root, gather=["gpus"]), capsys)
    f = out["ansible_facts"]["repro_vllm_gpu"]
    assert f["gathered"] == ["driver", "gpus"]
    # this folder has no --version capture, so the CUDA version is read from the default table ([] below)
    assert [c[0].split("=")[0] if c else "(table)" for c in calls(log)] == ["--version", "--query-gpu", "(table)"]
    assert f["loader"]["status"] is None and f["topology"]["raw"] is None and f["processes"] == []


def test_fabric_always_reads_smi_q(tmp_path, proc_root, replay, capsys):
    log = replay(IDLE)
    _rc, out = run_module(base_args(tmp_path, proc_root, fabric_query="always", gather=["fabric"]), capsys)
    fab = out["ansible_facts"]["repro_vllm_gpu"]["fabric"]
    assert ["-q"] in calls(log)
    assert fab["source"] == "nvidia-smi -q" and fab["status"] == "ok"
    assert fab["gpus"][0]["state"] is None and fab["gpus"][0]["cluster_uuid"] is None
    assert "Summary" in fab["gpus"][0]["health"]
    assert fab["attached"] is False and fab["cliques"] == []


def test_fabric_auto_skips_smi_q_on_pcie(tmp_path, proc_root, replay, capsys):
    log = replay(BUSY)
    run_module(base_args(tmp_path, proc_root, gather=["fabric"]), capsys)
    assert ["-q"] not in calls(log)


def test_imex_files_and_channels(tmp_path, proc_root, replay, capsys):
    replay(IDLE)
    cfg = tmp_path / "imex"
    cfg.mkdir()
    (cfg / "nodes_config.cfg").write_text("10.0.0.1\n10.0.0.2\n")
    chan = tmp_path / "dev" / "nvidia-caps-imex-channels"
    chan.mkdir(parents=True)
    (chan / "channel0").write_text("")
    _rc, out = run_module(base_args(tmp_path, proc_root, imex_config_dir=str(cfg), gather=["imex"]), capsys)
    imex = out["ansible_facts"]["repro_vllm_gpu"]["imex"]
    assert imex["nodes_config_present"] is True and imex["config_present"] is False
    assert imex["nodes_config_raw"] == "10.0.0.1\n10.0.0.2\n"
    assert imex["channels"] == ["channel0"]


def test_bad_timeout_fails_with_fix(tmp_path, replay, capsys):
    replay(IDLE)
    rc, out = run_module(base_args(tmp_path, None, command_timeout=0), capsys)
    assert rc == 1 and out["failed"] is True and "command_timeout" in out["msg"]


def test_gather_importable_without_ansible(tmp_path):
    """_gpu and _cmd import with nothing but the collection path on sys.path (how the device script uses them)."""
    coll_root = os.path.abspath(os.path.join(os.path.dirname(_gpu.__file__), "..", "..", "..", "..", "..", ".."))
    code = ("import sys; sys.modules['ansible'] = None; "
            "from ansible_collections.repro.vllm.plugins.module_utils.gpu._gpu import gather; "
            "print(sorted(gather({'gather': ['visible_devices'], 'proc_root': '/nonexistent'}))[0])")
    res = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=coll_root),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout.decode().strip() == "commands"


def test_benchmark_smoke_reports_what_it_could_not_run(tmp_path, replay):
    """benchmarks/gpu_facts_bench.py runs without GPU and torch and says what it could not run."""
    replay(BUSY)
    bench = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "benchmarks", "gpu_facts_bench.py")
    out_file = tmp_path / "bench.json"
    res = subprocess.run([sys.executable, bench, "--runs", "1", "--collect-env-runs", "1", "--python",
                          str(tmp_path / "no-such-python"), "--nvidia-smi-path", STUB, "--gather", "gpus",
                          "--out", str(out_file)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert res.returncode == 0, res.stderr.decode()
    data = json.loads(out_file.read_text())
    assert data == json.loads(res.stdout.decode())
    assert data["gather"]["in_process"]["runs"] == 1 and data["gather"]["fresh_process"]["runs"] == 1
    assert data["gather"]["gpu_names"] == ["NVIDIA H200"] and data["gather"]["present"] is True
    assert data["collect_env"] is None
    assert data["not_run"][0]["what"] == "python -m torch.utils.collect_env"
    assert "no-such-python" in data["not_run"][0]["why"]
    assert data["ratio"] == {"collect_env_over_gather_fresh_process": None, "collect_env_over_gather_in_process": None}
