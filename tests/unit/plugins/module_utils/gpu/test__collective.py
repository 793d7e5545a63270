# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collective checkpoint's node part and verdict, held to the real device run
(tests/fixtures/2026-12-01-580.159.04-h200-driver-and-collective/collective: NCCL on one H200, healthy and three
faults, and gloo on its CPU) and to the older two-GPU capture (2026-11-29-collective-2xh200)."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.gpu import _collective as C
from ansible_collections.repro.vllm.plugins.module_utils.logstage import _logstage as L

FIX = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures"))
RUN = os.path.join(FIX, "2026-12-01-580.159.04-h200-driver-and-collective")
COLL = os.path.join(RUN, "collective")
X2 = os.path.join(FIX, "2026-11-29-collective-2xh200")
with open(os.path.join(RUN, "expected.json")) as _fh:
    EXPECTED = json.load(_fh)["cases"]


def _result(case):
    with open(os.path.join(COLL, case, "result.json")) as fh:
        return json.load(fh)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_classifier_and_verdict_on_the_real_device_run(case):
    exp = EXPECTED[case]
    res = _result(case)
    paths, nodes = C.classify_inputs(os.path.join(COLL, case), res["logs"], "h200")
    answer = L.classify_files(paths, nodes)
    assert (answer["stage"], answer.get("error_class")) == (exp["stage"], exp["error_class"])
    if exp["first_error_line"]:
        assert exp["first_error_line"] in answer["first_error"]["line"]
        assert answer["first_error"]["node"] == exp["first_error_node"]
    judged = C.judge({"h200": res}, answer)
    assert {k: judged[k] for k in ("ok", "stage", "error_class")} == exp["judged"]


def test_every_log_the_run_listed_is_in_the_fixture():
    for case in EXPECTED:
        res = _result(case)
        assert res["logs"][0] == "torchrun.log"
        for name in res["logs"]:
            assert os.path.isfile(os.path.join(COLL, case, name)), (case, name)


def test_results_read_back_from_the_real_rank_logs():
    parsed = C.parse_results([open(os.path.join(COLL, "nccl_1rank", "rank0.stdout.log")).read()])
    r = parsed["result"][0]
    assert r["ok"] is True and r["value"] == r["expected"] == 1.0 and r["nccl"] == "2.28.9"
    assert r["backend"] == "nccl" and r["device"] == "cuda:0"
    parsed = C.parse_results([open(os.path.join(COLL, "gloo_2ranks_cpu", "torchrun.log")).read()])
    assert sorted(parsed["result"]) == [0, 1] and all(v["value"] == 3.0 for v in parsed["result"].values())
    # a rank that failed in NCCL init printed its init line and no result
    parsed = C.parse_results([open(os.path.join(COLL, "nccl_2ranks_one_gpu", "torchrun.log")).read()])
    assert sorted(parsed["init"]) == [0, 1] and parsed["result"] == {}


def test_timeout_with_no_failure_line_is_still_a_failure():
    res = _result("nccl_node1_never_starts")
    assert res["timed_out"] is True and res["rc"] is None and os.path.getsize(
        os.path.join(COLL, "nccl_node1_never_starts", "torchrun.log")) == 0
    judged = C.judge({"h200": res}, {"stage": "none"})
    assert judged["ok"] is False and judged["stage"] == "distributed_init" and judged["error_class"] == "timeout"
    assert judged["timed_out_nodes"] == ["h200"] and "did not end within 40" in judged["summary"]


def test_two_nodes_one_failing_names_it():
    good, bad = _result("nccl_1rank"), _result("nccl_bad_socket_ifname")
    judged = C.judge({"node01": good, "node02": bad}, {"stage": "none"})
    assert judged["failed_nodes"] == ["node02"] and judged["ranks_ok"] == 1 and judged["world_size"] == 2
    assert judged["ok"] is False and "node02: torchrun exited 1" in judged["summary"]


def test_older_two_gpu_capture_flattened_layout_matches():
    # the same file names as the 2 x H200 capture that was flattened by hand: the classifier reads both alike
    res = _result("gloo_2ranks_cpu")
    names = sorted(n for n in os.listdir(os.path.join(X2, "healthy")) if n.startswith("rank"))
    assert sorted(res["logs"][1:]) == names


def test_flatten_moves_torchruns_rank_files(tmp_path):
    # torchrun's own layout (<log-dir>/<run id>/attempt_0/<local rank>/std*.log), filled with real rank files
    rank_dir = tmp_path / ".torchrun"
    for local in (0, 1):
        d = rank_dir / "none_abc" / "attempt_0" / str(local)
        d.mkdir(parents=True)
        for stream in ("stdout", "stderr"):
            shutil.copy(os.path.join(COLL, "gloo_2ranks_cpu", "rank%d.%s.log" % (local, stream)),
                        str(d / ("%s.log" % stream)))
    files = C.flatten_rank_logs(str(rank_dir), str(tmp_path), node_rank=1, nproc_per_node=2)
    assert files == ["rank2.stdout.log", "rank2.stderr.log", "rank3.stdout.log", "rank3.stderr.log"]
    assert not rank_dir.exists()
    with open(os.path.join(COLL, "gloo_2ranks_cpu", "rank1.stdout.log"), "rb") as fh:
        assert (tmp_path / "rank3.stdout.log").read_bytes() == fh.read()


def test_command_and_environment():
    opts = dict(nnodes=2, node_rank=1, nproc_per_node=8, master_addr="10.0.0.1", master_port=29555,
                backend="nccl", timeout=300, env={"NCCL_SOCKET_IFNAME": "eth0"}, rank_dir="/x/.torchrun")
    argv = C.torchrun_argv("/venv/bin/python", "/x/allreduce.py", opts)
    assert argv[:3] == ["/venv/bin/python", "-m", "torch.distributed.run"]
    assert argv[argv.index("--node-rank") + 1] == "1" and argv[argv.index("--nproc-per-node") + 1] == "8"
    assert argv[-1] == "/x/allreduce.py" and "--max-restarts" in argv
    env = C.run_env(opts)
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_SOCKET_IFNAME"] == "eth0"
    assert env["REPRO_COLLECTIVE_PG_TIMEOUT"] == "290" and env["REPRO_COLLECTIVE_BACKEND"] == "nccl"
    pre = C.container_prefix("podman", "repo/vllm@sha256:" + "a" * 64, "/x", env, ["--device", "nvidia.com/gpu=all"])
    assert pre[:3] == ["podman", "run", "--rm"] and "--network" in pre and pre[-1].endswith("a" * 64)
    assert "-e" in pre and "NCCL_SOCKET_IFNAME" in pre and "eth0" not in pre  # values never on the command line


@pytest.mark.parametrize("bad, word", [
    (dict(nnodes=0), "nnodes"), (dict(node_rank=2), "node_rank"), (dict(nproc_per_node=0), "nproc_per_node"),
    (dict(backend="mpi"), "backend"), (dict(timeout=0), "timeout"), (dict(master_port=70000), "master_port"),
    (dict(master_addr=""), "master_addr"), (dict(device_map="x"), "device_map")])
def test_validate_names_the_option(bad, word):
    opts = dict(nnodes=2, node_rank=0, nproc_per_node=1, backend="auto", timeout=10, master_port=29555,
                master_addr="127.0.0.1", device_map="local_rank")
    assert C.validate(opts) == []
    opts.update(bad)
    errs = C.validate(opts)
    assert errs and word in errs[0]


# ------------------------------------------------------------------------------------ the module and the filters

def test_module_check_mode_plans_and_refuses_bad_options(tmp_path):
    from ansible_collections.repro.vllm.plugins.modules import collective_run
    from ansible_collections.repro.vllm.tests.unit.plugins.modules.module_process import run_module
    args = dict(python="/venv/bin/python", nnodes=2, node_rank=1, nproc_per_node=4, master_addr="10.0.0.1",
                log_dir=str(tmp_path / "logs"), env={"HF_TOKEN": "hf_FAKEFAKEFAKEFAKE", "NCCL_SOCKET_IFNAME": "eth0"})
    res = run_module(collective_run, tmp_path, check_mode=True, **args)
    assert res["status"] == "planned" and res["ok"] is None and not (tmp_path / "logs").exists()
    assert res["argv"][:3] == ["/venv/bin/python", "-m", "torch.distributed.run"]
    assert res["env"]["NCCL_SOCKET_IFNAME"] == "eth0" and "FAKE" not in json.dumps(res)
    wrong = dict(args)
    wrong["node_rank"] = 2
    res = run_module(collective_run, tmp_path, **wrong)
    assert res["failed"] and "node_rank must be between 0 and nnodes - 1" in res["msg"]


def test_module_refuses_a_log_dir_with_an_earlier_run(tmp_path):
    from ansible_collections.repro.vllm.plugins.modules import collective_run
    from ansible_collections.repro.vllm.tests.unit.plugins.modules.module_process import run_module
    logs = tmp_path / "logs"
    shutil.copytree(os.path.join(COLL, "nccl_1rank"), str(logs))
    res = run_module(collective_run, tmp_path, nnodes=1, node_rank=0, nproc_per_node=1, master_addr="127.0.0.1",
                     log_dir=str(logs))
    assert res["failed"] and "earlier run" in res["msg"] and "nothing is overwritten" in res["msg"]


def test_reap_ends_ranks_left_in_sessions_of_their_own():
    # what torchrun does: each rank in a new session, so a kill of torchrun's process group misses it
    import subprocess
    import sys
    marker = "test%d" % os.getpid()
    env = dict(os.environ, **{C.MARKER_VAR: marker})
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env, start_new_session=True)
             for _n in range(2)]
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        import time
        time.sleep(0.3)
        assert C.processes_with_marker(marker) == sorted(p.pid for p in procs)
        assert C.reap(marker, grace=3) == sorted(p.pid for p in procs)
        for p in procs:
            assert p.wait(timeout=5) is not None
        assert C.processes_with_marker(marker) == [] and other.poll() is None  # only the run's own
    finally:
        for p in procs + [other]:
            p.kill()
            p.wait()


def test_the_log_paths_and_names_of_one_node():
    part = _result("nccl_2ranks_one_gpu")
    paths, names = C.classify_inputs("/rec/run-004/hosts/gpu-a01/logs", part["logs"], "gpu-a01")
    assert paths[0] == "/rec/run-004/hosts/gpu-a01/logs/torchrun.log" and len(paths) == len(part["logs"])
    assert names == ["gpu-a01/torchrun", "gpu-a01/rank0", "gpu-a01/rank0", "gpu-a01/rank1", "gpu-a01/rank1"]


def test_the_logs_of_every_node_are_those_of_each_node_in_order():
    parts = [_result("nccl_2ranks_one_gpu"), _result("gloo_2ranks_cpu")]
    logs = C.log_inputs("/rec/run-004", ["gpu-a01", "gpu-a02"], parts)
    one = C.classify_inputs("/rec/run-004/hosts/gpu-a01/logs", parts[0]["logs"], "gpu-a01")
    two = C.classify_inputs("/rec/run-004/hosts/gpu-a02/logs", parts[1]["logs"], "gpu-a02")
    assert logs["paths"] == one[0] + two[0]
    assert logs["labels"] == one[1] + two[1]


def test_the_close_is_the_verdict_with_the_jobs_shape_and_the_classification():
    stages = {"stage": "none", "first_error": None, "changed": False, "invocation": {"module_args": {}}}
    closing = C.close(["gpu-a01"], [_result("nccl_1rank")], stages, run="run-004", nproc_per_node=1,
                      backend="nccl", master="gpu-a01:29500", timeout_s=120.0)
    verdict = C.judge({"gpu-a01": _result("nccl_1rank")}, stages)
    assert closing["status"] == "ok"
    assert closing["parts"] == [
        {"part": "collective.json", "json": dict(verdict, run="run-004", nodes=["gpu-a01"], nproc_per_node=1,
                                                 backend="nccl", master="gpu-a01:29500", timeout_s=120.0)},
        {"part": "stages.json", "json": {"stage": "none", "first_error": None}}]
    # repro_vllm_collective_result: the run and where it lives, then the verdict
    assert closing["collective"] == dict({"ran": True, "run": "run-004", "path": None}, **verdict)
    failed = C.close(["gpu-a01"], [_result("nccl_bad_socket_ifname")], {"stage": "none"}, run="run-005",
                     path="/records/case/run-005")
    assert failed["status"] == "failed"
    assert failed["collective"]["path"] == "/records/case/run-005" and failed["collective"]["ok"] is False
    assert list(failed["collective"])[:4] == ["ran", "run", "path", "ok"]


def test_node_plan_ranks_python_environment_and_the_progress_line():
    sel = {"nodes": ["node01", "node02"], "head": "node01", "master_addr": "127.0.0.1", "rank": 0}
    plan = C.node_plan(sel, nproc_per_node=0, parallel=[2, 2, 1], python="", vllm_bin="/opt/venv/bin/vllm",
                       server_env={"NCCL_SOCKET_IFNAME": "eth0", "UCX_TLS": "tcp", "TORCH_X": "1", "NVSHMEM_Y": "2",
                                   "GLOO_Z": "3", "VLLM_LOGGING_LEVEL": "DEBUG", "MY_NCCL_": "no"},
                       env={"NCCL_SOCKET_IFNAME": "ib0", "EXTRA": "e"}, host_env={"EXTRA": "host"},
                       backend="gloo", master_port=29555, timeout=120)
    # the selection is kept; tp x pp x dp = 4 GPUs over 2 nodes: 2 ranks per node
    assert {k: plan[k] for k in sel} == sel
    assert plan["in_job"] is True and plan["nproc"] == 2 and plan["python"] == "/opt/venv/bin/python"
    # the server's fabric variables only, the checkpoint's own on top, the host's on top of those
    assert plan["env"] == {"NCCL_SOCKET_IFNAME": "ib0", "UCX_TLS": "tcp", "TORCH_X": "1", "NVSHMEM_Y": "2",
                           "GLOO_Z": "3", "EXTRA": "host"}
    assert plan["master"] == "127.0.0.1:29555"
    assert plan["line"] == ("node rank 0 of 2, 2 rank(s), backend gloo, rendezvous 127.0.0.1:29555, up to 120 s")
    # ranks given win; a bare vllm means python3; never below one rank; the python given wins
    assert C.node_plan(sel, nproc_per_node="3", parallel=[8, 1, 1])["nproc"] == 3
    assert C.node_plan(sel, parallel=[1, 1, 1], vllm_bin="vllm")["nproc"] == 1
    assert C.node_plan(sel, vllm_bin="vllm")["python"] == "python3"
    assert C.node_plan(sel, python="/usr/bin/python3.12", vllm_bin="/v/bin/vllm")["python"] == "/usr/bin/python3.12"
    out = C.node_plan(dict(sel, rank=-1))
    assert out["in_job"] is False and out["line"] == "not part of the job"
    assert C.node_plan({"nodes": [], "head": None, "master_addr": None, "rank": -1}, parallel=[2])["nproc"] == 2
    # every node starts at once: enough forks, every node in the play
    assert plan["refusal"] == "" and C.node_plan(sel, forks=2, play_hosts=["node02", "node01", "x"])["refusal"] == ""
    need = ("the collective checkpoint needs all 2 nodes (node01, node02) in this play and started together: forks is %s; "
            "run with -f 2 or more, and list every node in the play's hosts")
    assert C.node_plan(sel, forks=1, play_hosts=["node01", "node02"])["refusal"] == need % 1
    assert C.node_plan(sel, forks=5, play_hosts=["node01"])["refusal"] == need % 5
