"""The collective checkpoint: one torch.distributed all-reduce over every GPU and node the server will use.

One node's part: write the worker program, start ``torch.distributed.run`` (torchrun) with this node's rank in
the job, under a timeout that kills its whole process group, with ``NCCL_DEBUG=INFO``, and leave torchrun's own
output and each local rank's stdout/stderr as flat files (``torchrun.log``, ``rank<global>.stdout.log``,
``rank<global>.stderr.log``) for the classifier (``_logstage``). The same layout as the real captures in
``tests/fixtures/*collective*``.

Standard library only: runs inside the ``collective_run`` module on the managed node and standalone on a GPU
machine without Ansible (``tests/device/collective_device.sh``). torch is needed only in the Python that runs
the worker (the serving venv, or the serving image).
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import signal
import time
import uuid

from ansible_collections.repro.vllm.plugins.module_utils.common._cmd import STATUS_TIMED_OUT, run_cmd

RESULT_MARKER = "REPRO_VLLM_COLLECTIVE "
WORKER_NAME = "allreduce.py"
TORCHRUN_LOG = "torchrun.log"
BACKENDS = ("auto", "nccl", "gloo")
DEVICE_MAPS = ("local_rank", "shared")
# Variables the run sets itself; anything the caller gives in ``env`` is set on top (and recorded).
BASE_ENV = {"NCCL_DEBUG": "INFO", "PYTHONUNBUFFERED": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
# The server's own variables (repro_vllm_server_env) that the checkpoint passes on.
SERVER_ENV_PREFIXES = ("NCCL_", "GLOO_", "UCX_", "TORCH_", "NVSHMEM_")

# The program each rank runs. Python 3.8+; prints one marked JSON line per rank. Written to the node's log
# folder (it is part of the evidence) and run with the serving Python.
WORKER_SCRIPT = r'''
"""repro.vllm collective checkpoint: one all-reduce over every rank of the job (written by collective_run)."""
import datetime
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

MARK = "REPRO_VLLM_COLLECTIVE "


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    backend = os.environ.get("REPRO_COLLECTIVE_BACKEND", "auto")
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    device = "cpu"
    if backend == "nccl":
        count = torch.cuda.device_count()
        index = local % count if os.environ.get("REPRO_COLLECTIVE_DEVICE_MAP") == "shared" and count else local
        torch.cuda.set_device(index)
        device = "cuda:%d" % index
    timeout = datetime.timedelta(seconds=float(os.environ.get("REPRO_COLLECTIVE_PG_TIMEOUT", "120")))
    print("%s%s" % (MARK, json.dumps({"event": "init", "rank": rank, "world_size": world, "local_rank": local,
                                       "backend": backend, "device": device, "host": socket.gethostname()})),
          flush=True)
    t0 = time.monotonic()
    dist.init_process_group(backend, timeout=timeout)
    init_s = time.monotonic() - t0
    x = torch.full((1 << 20,), float(rank + 1), device=device)
    t1 = time.monotonic()
    dist.all_reduce(x)
    if device != "cpu":
        torch.cuda.synchronize()
    allreduce_s = time.monotonic() - t1
    expected = world * (world + 1) / 2.0
    value = float(x[0].item())
    print("%s%s" % (MARK, json.dumps({"event": "result", "rank": rank, "world_size": world, "backend": backend,
                                       "device": device, "value": value, "expected": expected,
                                       "ok": abs(value - expected) < 1e-3, "init_s": round(init_s, 3),
                                       "allreduce_s": round(allreduce_s, 4), "torch": torch.__version__,
                                       "nccl": ".".join(str(v) for v in torch.cuda.nccl.version())
                                       if backend == "nccl" else None})), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''.lstrip()

RANK_DIR_RE = re.compile(r"attempt_\d+[/\\](\d+)[/\\](stdout|stderr)\.log$")


def worker_sha256():
    return hashlib.sha256(WORKER_SCRIPT.encode("utf-8")).hexdigest()


def validate(opts):
    """Problems with the options, as sentences naming the option (empty when they are fine)."""
    errs = []
    if int(opts.get("nnodes") or 0) < 1:
        errs.append("nnodes must be 1 or more")
    rank = opts.get("node_rank")
    if rank is None or not 0 <= int(rank) < int(opts.get("nnodes") or 0):
        errs.append("node_rank must be between 0 and nnodes - 1 (got %s)" % rank)
    if int(opts.get("nproc_per_node") or 0) < 1:
        errs.append("nproc_per_node must be 1 or more")
    if opts.get("backend", "auto") not in BACKENDS:
        errs.append("backend must be one of %s" % ", ".join(BACKENDS))
    if opts.get("device_map", "local_rank") not in DEVICE_MAPS:
        errs.append("device_map must be one of %s" % ", ".join(DEVICE_MAPS))
    if float(opts.get("timeout") or 0) <= 0:
        errs.append("timeout must be a positive number of seconds")
    port = int(opts.get("master_port") or 0)
    if not 0 < port < 65536:
        errs.append("master_port must be a TCP port (1-65535)")
    if not opts.get("master_addr"):
        errs.append("master_addr is required (the address of node rank 0 that every node can reach)")
    return errs


def torchrun_argv(python, worker, opts):
    """``python -m torch.distributed.run`` with a static rendezvous at master_addr:master_port."""
    return [python, "-m", "torch.distributed.run",
            "--nnodes", str(int(opts["nnodes"])), "--node-rank", str(int(opts["node_rank"])),
            "--nproc-per-node", str(int(opts["nproc_per_node"])),
            "--master-addr", str(opts["master_addr"]), "--master-port", str(int(opts["master_port"])),
            "--max-restarts", "0", "--log-dir", opts["rank_dir"], "--redirects", "3", "--tee", "3", worker]


def container_prefix(runtime, image, log_dir, env, run_args=()):
    """``docker|podman run`` around the torchrun command: the exact image, host network (the rendezvous and the
    collective go over the hosts' interfaces), the log folder mounted at the same path, the environment passed."""
    argv = [runtime, "run", "--rm", "--network", "host", "--ipc", "host", "-v", "%s:%s" % (log_dir, log_dir),
            "-w", log_dir, "--entrypoint", "python3"]
    for key in sorted(env):
        argv += ["-e", key]  # the value comes from the runtime's own environment, never on the command line
    return argv + list(run_args or []) + [image]


def run_env(opts):
    env = dict(BASE_ENV)
    env["REPRO_COLLECTIVE_BACKEND"] = opts.get("backend") or "auto"
    env["REPRO_COLLECTIVE_PG_TIMEOUT"] = str(int(opts.get("init_timeout") or max(10, int(float(opts["timeout"])) - 10)))
    if opts.get("device_map") == "shared":
        env["REPRO_COLLECTIVE_DEVICE_MAP"] = "shared"
    env.update(dict((str(k), str(v)) for k, v in (opts.get("env") or {}).items()))
    return env


def flatten_rank_logs(rank_dir, log_dir, node_rank, nproc_per_node):
    """Move torchrun's ``<rank_dir>/<run id>/attempt_N/<local>/{stdout,stderr}.log`` up to
    ``<log_dir>/rank<global>.{stdout,stderr}.log`` (global = node_rank * nproc_per_node + local); returns the
    new names in rank order. Empty files are kept (a rank that printed nothing is evidence)."""
    moved = []
    for path in sorted(glob.glob(os.path.join(rank_dir, "*", "attempt_*", "*", "*.log"))):
        m = RANK_DIR_RE.search(path)
        if not m:
            continue
        rank = int(node_rank) * int(nproc_per_node) + int(m.group(1))
        name = "rank%d.%s.log" % (rank, m.group(2))
        shutil.move(path, os.path.join(log_dir, name))
        moved.append((rank, m.group(2) != "stdout", name))
    shutil.rmtree(rank_dir, ignore_errors=True)
    return [name for _r, _s, name in sorted(moved)]


def parse_results(texts):
    """The marked JSON lines of the worker, from any number of texts: {"init": {rank: ...}, "result": {rank: ...}}."""
    out = {"init": {}, "result": {}}
    for text in texts:
        for line in (text or "").splitlines():
            idx = line.find(RESULT_MARKER)
            if idx < 0:
                continue
            try:
                data = json.loads(line[idx + len(RESULT_MARKER):])
            except ValueError:
                continue
            if isinstance(data, dict) and data.get("event") in out and isinstance(data.get("rank"), int):
                out[data["event"]][data["rank"]] = data
    return out


def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", errors="replace")
    except (OSError, IOError):
        return ""


def verdict(rc_status, rc, expected_ranks, results, timeout):
    """This node's answer: ok only when torchrun ended 0 and every local rank printed a right result."""
    missing = [r for r in expected_ranks if r not in results["result"]]
    wrong = [r for r in expected_ranks if r in results["result"] and not results["result"][r].get("ok")]
    if rc_status == STATUS_TIMED_OUT:
        why = ("torchrun did not end within %ss and was killed with its process group; ranks without a result: %s"
               % (timeout, ", ".join(str(r) for r in missing) or "none"))
    elif rc != 0:
        why = "torchrun exited %s; ranks without a result: %s" % (rc, ", ".join(str(r) for r in missing) or "none")
    elif missing:
        why = "torchrun exited 0 but ranks %s printed no result" % ", ".join(str(r) for r in missing)
    elif wrong:
        why = "the all-reduce gave a wrong sum on ranks %s" % ", ".join(str(r) for r in wrong)
    else:
        why = None
    return {"ok": why is None, "reason": why, "missing_ranks": missing, "wrong_ranks": wrong}


MARKER_VAR = "REPRO_VLLM_COLLECTIVE_RUN"


def processes_with_marker(marker, proc_root="/proc"):
    """Pids whose environment carries ``REPRO_VLLM_COLLECTIVE_RUN=<marker>`` (readable ones: same user or root)."""
    needle = ("%s=%s" % (MARKER_VAR, marker)).encode()
    found = []
    for name in os.listdir(proc_root):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(os.path.join(proc_root, name, "environ"), "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(name))
        except (OSError, IOError):
            continue
    return sorted(found)


def reap(marker, grace=5.0, proc_root="/proc"):
    """End what a run left behind. torchrun starts each rank in a session of its own, so killing torchrun's
    process group at the timeout does not reach the ranks: they are found by the run's marker in their
    environment, sent SIGTERM, and SIGKILL after ``grace`` seconds. Returns the pids that had to be ended."""
    left = processes_with_marker(marker, proc_root)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in left:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 2.0)
        while time.monotonic() < deadline and processes_with_marker(marker, proc_root):
            time.sleep(0.1)
        if not processes_with_marker(marker, proc_root):
            break
    return left


def run(opts, runner=run_cmd):
    """Run this node's part of the checkpoint. ``opts``: python, nnodes, node_rank, nproc_per_node, master_addr,
    master_port, backend, device_map, timeout, init_timeout, env, log_dir, container ({runtime, image,
    run_args} or None). Returns the result dict (never raises for a failing or hanging run)."""
    log_dir = os.path.abspath(opts["log_dir"])
    os.makedirs(log_dir, exist_ok=True)
    worker = os.path.join(log_dir, WORKER_NAME)
    with open(worker, "w") as fh:
        fh.write(WORKER_SCRIPT)
    rank_dir = os.path.join(log_dir, ".torchrun")
    opts = dict(opts, rank_dir=rank_dir)
    env = run_env(opts)
    marker = uuid.uuid4().hex
    env[MARKER_VAR] = marker
    container = opts.get("container") or None
    python = "python3" if container else opts.get("python") or "python3"
    argv = torchrun_argv(python, worker, opts)
    if container:
        argv = container_prefix(container["runtime"], container["image"], log_dir, env,
                                container.get("run_args")) + argv[1:]
    log_path = os.path.join(log_dir, TORCHRUN_LOG)
    # torchrun's stdout and stderr go to one file as they are written (a tail shows progress); the shell only
    # redirects and then is replaced by torchrun, so the timeout kills torchrun's whole process group
    wrapped = ["/bin/sh", "-c", 'exec "$@" >"$0" 2>&1', log_path] + argv
    start = time.time()
    res = runner(wrapped, timeout=float(opts["timeout"]), env=env)
    wall_s = round(time.time() - start, 3)
    # ranks still alive after torchrun ended (killed at the timeout, or a launcher that died): end them before the
    # logs are moved and frozen, so nothing writes to them any more and nothing of the run is left running
    leftovers = reap(marker)
    files = flatten_rank_logs(rank_dir, log_dir, opts["node_rank"], opts["nproc_per_node"])
    first = int(opts["node_rank"]) * int(opts["nproc_per_node"])
    expected = list(range(first, first + int(opts["nproc_per_node"])))
    results = parse_results([_read(os.path.join(log_dir, f)) for f in files if f.endswith(".stdout.log")]
                            + [_read(log_path)])
    judged = verdict(res["status"], res.get("rc"), expected, results, opts["timeout"])
    world = int(opts["nnodes"]) * int(opts["nproc_per_node"])
    return {
        "ok": judged["ok"],
        "reason": judged["reason"],
        "node_rank": int(opts["node_rank"]),
        "nnodes": int(opts["nnodes"]),
        "nproc_per_node": int(opts["nproc_per_node"]),
        "world_size": world,
        "ranks": expected,
        "missing_ranks": judged["missing_ranks"],
        "wrong_ranks": judged["wrong_ranks"],
        "results": [results["result"][r] for r in expected if r in results["result"]],
        "inits": [results["init"][r] for r in expected if r in results["init"]],
        "backend": opts.get("backend") or "auto",
        "status": res["status"],
        "rc": res.get("rc"),
        "timed_out": res["status"] == STATUS_TIMED_OUT,
        "timeout": float(opts["timeout"]),
        "wall_s": wall_s,
        "argv": argv,
        "env": env,
        "worker": WORKER_NAME,
        "worker_sha256": worker_sha256(),
        "log_dir": log_dir,
        "logs": [TORCHRUN_LOG] + files,
        # the same files as repro.vllm.host_record takes them into the run (host path and part path)
        # (the logs, and the worker script that ran, whose sha256 is worker_sha256)
        "record_files": [{"src": os.path.join(log_dir, name), "part": "logs/%s" % name}
                         for name in [TORCHRUN_LOG] + files + [WORKER_NAME] if os.path.isfile(os.path.join(log_dir, name))],
        "msg": res.get("msg") or "",
        "leftover_pids_ended": leftovers,
    }


def node_plan(selection, nproc_per_node=0, parallel=(), python="", vllm_bin="vllm", server_env=None, env=None,
              host_env=None, backend="auto", master_port=None, timeout=None, forks=None, play_hosts=None):
    """One node's plan of the checkpoint from the job's node selection (``_command.node_selection``: ``{nodes, head,
    master_addr, rank}``), returned with ``in_job`` (a node of the job), ``nproc`` (``nproc_per_node`` when above 0,
    else the server's GPUs - the product of ``parallel``, tensor x pipeline x data - over the nodes, at least 1),
    ``python`` (given, else the python beside ``vllm_bin`` when that is an absolute path, else python3), ``env`` (the
    server's ``SERVER_ENV_PREFIXES`` variables, then ``env``, then ``host_env`` on top), ``master`` (address:port),
    ``line``, the node's progress line, and ``refusal``: why the nodes cannot start together (``forks`` below their
    number, a node not in ``play_hosts``), else empty."""
    nodes = list(selection.get("nodes") or [])
    in_job = int(selection.get("rank", -1)) >= 0
    nproc = int(nproc_per_node or 0)
    if nproc <= 0:
        gpus = 1
        for size in parallel or ():
            gpus *= int(size or 0)
        nproc = max(1, gpus // max(len(nodes), 1))
    if not python:
        python = os.path.dirname(vllm_bin) + "/python" if os.path.isabs(vllm_bin or "") else "python3"
    merged = dict((k, v) for k, v in (server_env or {}).items() if str(k).startswith(SERVER_ENV_PREFIXES))
    merged.update(env or {})
    merged.update(host_env or {})
    master = "%s:%s" % (selection.get("master_addr"), master_port)
    line = ("node rank %s of %d, %d rank(s), backend %s, rendezvous %s, up to %s s"
            % (selection.get("rank"), len(nodes), nproc, backend, master, timeout)) if in_job else "not part of the job"
    refusal = ""
    if (forks is not None and int(forks) < len(nodes)) or set(nodes) - set(play_hosts if play_hosts is not None else nodes):
        refusal = ("the collective checkpoint needs all %d nodes (%s) in this play and started together: forks is %s; "
                   "run with -f %d or more, and list every node in the play's hosts"
                   % (len(nodes), ", ".join(nodes), forks, len(nodes)))
    return dict(selection, in_job=in_job, nproc=nproc, python=python, env=merged, master=master, line=line,
                refusal=refusal)


def classify_inputs(log_dir, files, node_label):
    """(paths, nodes) for log_stage: every rank file named ``<node_label>/rank<N>`` and torchrun.log named
    ``<node_label>/torchrun``, so that one answer over every node says which rank of which host failed first."""
    paths, nodes = [], []
    for name in files:
        paths.append(os.path.join(log_dir, name))
        rank = name.split(".", 1)[0] if name.startswith("rank") else "torchrun"
        nodes.append("%s/%s" % (node_label, rank) if node_label else rank)
    return paths, nodes


def judge(node_results, classification):
    """The checkpoint's answer over every node: ``{ok, stage, error_class, first_error, summary, nodes}``.

    ``node_results``: {host: run() result}; ``classification``: log_stage's answer over every node's logs.
    A failure the classifier places decides stage and class (the earliest across nodes). Without one, a node
    that timed out or whose ranks gave no right sum still fails the checkpoint: stage ``distributed_init`` (the
    rendezvous, process-group init and the all-reduce are that stage), class ``timeout`` or ``other``."""
    classification = classification or {}
    stage = classification.get("stage") or "none"
    bad = dict((h, r) for h, r in sorted(node_results.items()) if not (r or {}).get("ok"))
    timed_out = sorted(h for h, r in bad.items() if (r or {}).get("timed_out"))
    if stage not in ("none", None):
        error_class = classification.get("error_class")
        why = classification.get("summary") or "%s failed" % stage
    elif bad:
        stage = "distributed_init"
        error_class = "timeout" if timed_out else "other"
        why = "; ".join("%s: %s" % (h, (r or {}).get("reason") or "no result") for h, r in bad.items())
        why = "no failure line in the logs, but %s" % why
    else:
        error_class = None
        why = None
    ok = stage in ("none", None) and not bad
    world = sum(len((r or {}).get("ranks") or []) for r in node_results.values())
    right = sum(len([x for x in (r or {}).get("results") or [] if x.get("ok")]) for r in node_results.values())
    summary = ("collective checkpoint %s: %d of %d ranks on %d node(s) returned the right all-reduce sum%s"
               % ("ok" if ok else "FAILED", right, world, len(node_results),
                  "" if ok else " | stage %s (%s) | %s" % (stage, error_class, why)))
    return {"ok": ok, "stage": "none" if ok else stage, "error_class": error_class,
            "first_error": classification.get("first_error"), "summary": summary, "ranks_ok": right,
            "world_size": world, "failed_nodes": sorted(bad), "timed_out_nodes": timed_out}


def log_inputs(run_path, nodes, parts):
    """What log_stage classifies for the checkpoint: every node's rank logs and torchrun.log in the run
    (``paths``) and their names (``labels``: ``<host>/rank<N>``, ``<host>/torchrun``), the nodes in order; ``parts``
    holds each node's collective_run result in the same order."""
    paths, labels = [], []
    for host, part in zip(nodes, parts):
        files = list((part or {}).get("logs") or [])
        node_paths, node_labels = classify_inputs(os.path.join(str(run_path), "hosts", str(host), "logs"), files,
                                                  str(host))
        paths += node_paths
        labels += node_labels
    return {"paths": paths, "labels": labels}


def close(nodes, parts, classification, run=None, nproc_per_node=None, backend=None, master=None, timeout_s=None,
          path=None):
    """The checkpoint's run closed: ``collective`` (``repro_vllm_collective_result``: ``ran``, ``run``, the run's
    ``path`` and the verdict, judge over every node), the ``status`` it is frozen with (``ok`` or ``failed``) and its
    run-level ``parts``: collective.json (the verdict with the job's shape: run, nodes, ranks per node, backend,
    rendezvous, timeout) and stages.json (the one classification)."""
    classification = classification or {}
    verdict = judge(dict((str(h), p) for h, p in zip(nodes, parts)), classification)
    document = dict(verdict, run=run, nodes=list(nodes), nproc_per_node=nproc_per_node, backend=backend,
                    master=master, timeout_s=timeout_s)
    stages = dict((k, v) for k, v in classification.items() if k not in ("changed", "failed", "invocation"))
    return {"status": "ok" if verdict.get("ok") else "failed",
            "collective": dict({"ran": True, "run": run, "path": path}, **verdict),
            "parts": [{"part": "collective.json", "json": document}, {"part": "stages.json", "json": stages}]}
