"""The baseline configuration score (0-14) of a case, from its frozen runs.

Seven items in a fixed order, 0-2 points each (docs/architecture.md, "Baseline configuration score"); the second
point of an item needs the first. Every lost point names the evidence that is missing and how to get it; every
point given cites the run and file it was read from. The score measures comparability, not success: a clean run
and a failing run can both be a valid baseline.

Which run is scored: the case's first failing attempt (the failure being reproduced), else its first attempt;
fingerprints are the latest taken at or before that attempt. A "second clean run" is another attempt of the case
with the same command, environment and request on every host (a new process from a clean start).
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import os
import re

from ansible_collections.repro.vllm.plugins.module_utils.compat._compat import profile_needs_gpu
from ansible_collections.repro.vllm.plugins.module_utils.container._runtime import refusal_hint
from ansible_collections.repro.vllm.plugins.module_utils.record._evidence import (
    attempt_key, attempt_result, cite, declared_repeat, host_view, is_attempt, read_log_tail, result_text,
    run_hosts, unexpanded)

ITEMS = ("host_driver", "image", "command", "gpu_visibility", "first_failure", "request", "repeatability")
# the bands are fractions of the full 14 points, applied to score / max (max: 2 points per item that applies):
# reproduce when score/max >= 12/14, collect when >= 8/14, else invalid (exact integer comparison, no rounding)
FULL = 14
BANDS = ((12, "reproduce"), (8, "collect"), (0, "invalid"))
# items that cannot apply when the profile asks for no GPU (decided by the profile, never by what a run lacked)
GPU_ITEMS = ("host_driver", "gpu_visibility")
# compatibility facts that are about the host driver (the rest belong to other items or to the compatibility stage)
DRIVER_FACTS = ("driver_branch", "kernel_module", "cuda_driver", "driver_in_use")
# what makes a command comparable beyond its argv: where the weights/caches are, which devices, which address
CACHE_ENV = ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "VLLM_CACHE_ROOT",
             "XDG_CACHE_HOME", "HF_HUB_OFFLINE")
CACHE_FLAGS = ("--download-dir", "--download_dir")
NETWORK_FLAGS = ("--port",)
MOUNT_FLAGS = ("-v", "--volume", "--mount")
DEVICE_ENV = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
DEVICE_FLAGS = ("--gpus", "--device")
RUNTIMES = ("docker", "podman", "nerdctl")
KNOWN_STAGES = ("environment", "config", "cuda_init", "distributed_init", "weight_loading", "engine_init",
                "api_ready", "request")
# MiB in use on a GPU before the server starts that count as "memory in use" (an idle H200 reports 0)
DEFAULT_MEMORY_IN_USE_MIB = 1024
_TS_RE = re.compile(r"\d{2}[-:]\d{2}[ T]?\d{2}:\d{2}:\d{2}")


class ScoreError(ValueError):
    """Input that is not a list of runs."""


def band_of(score, max_points=FULL):
    """The band of ``score`` out of ``max_points``: the 12/8 floors of 14 points taken as fractions of the maximum."""
    if not max_points or max_points <= 0:
        return "invalid"
    for floor, name in BANDS:
        if score * FULL >= floor * max_points:
            return name
    return "invalid"


def _not_applicable(name, profile):
    return {"item": name, "points": None,
            "evidence": "not applicable under profile %s: it asks for no GPU (gpu_models empty, gpu_count_min 0)"
                        % profile.get("name"),
            "missing": None, "how": None}


def _item(name, points, evidence, missing, how):
    return {"item": name, "points": points, "evidence": "; ".join(evidence) or None,
            "missing": "; ".join(missing) or None, "how": "; ".join(how) or None}


def _pick(runs):
    attempts = [r for r in runs if is_attempt(r)]
    failing = [r for r in attempts if not attempt_result(r)[2] and r.get("purpose") != "rollback"]
    baseline = (failing or attempts or [None])[0]
    return baseline, attempts


def _fingerprints(runs, baseline, hosts):
    """host -> (run, view) of the latest fingerprint at or before the baseline attempt (any, without one)."""
    limit = runs.index(baseline) if baseline is not None else len(runs) - 1
    found = {}
    for run in runs[:limit + 1]:
        for host in hosts:
            if "fingerprint.json" in (run["hosts"].get(host) or {}):
                found[host] = (run, host_view(run, host))
    return found


def _host_driver(hosts, fps, runs, profile):
    ev, miss, how = [], [], []
    ok1 = bool(hosts)
    for host in hosts:
        if host not in fps:
            ok1 = False
            miss.append("no fingerprint of %s" % host)
            how.append("run playbooks/fingerprint.yml (reproduce.yml runs it first) against %s" % host)
            continue
        run, view = fps[host]
        src = cite(run, host, "fingerprint.json")
        if view["driver"] and view["kernel_module"]:
            ev.append("%s: driver %s, kernel module %s (%s)" % (host, view["driver"], view["kernel_module"], src))
            continue
        ok1 = False
        lost = [n for n, v in (("driver version", view["driver"]), ("kernel module version", view["kernel_module"]))
                if not v]
        miss.append("%s of %s not captured (%s)" % (" and ".join(lost), host, src))
        if not view["gpu_present"]:
            how.append("on %s nvidia-smi gave no GPU: load the NVIDIA driver or set repro_vllm_nvidia_smi_path, then "
                       "run playbooks/fingerprint.yml again" % host)
        else:
            how.append("let the play read /proc/driver/nvidia/version on %s (the kernel module's NVRM line) and run "
                       "playbooks/fingerprint.yml again" % host)
    if not ok1:
        return _item("host_driver", 0, ev, miss, how)
    compat = [(r, r["parts"]["compatibility.json"]) for r in runs if "compatibility.json" in r["parts"]]
    if not compat:
        return _item("host_driver", 1, ev,
                     ["no compatibility check of the driver against profile %s" % (profile or "?")],
                     ["run reproduce.yml or audit.yml with repro_vllm_profile set: the compatibility role writes "
                      "compatibility.json"])
    run, data = compat[-1]
    bad = [v for v in data.get("violations") or []
           if v.get("fact") in DRIVER_FACTS and (v.get("host") in hosts or v.get("host") is None)]
    src = cite(run, None, "compatibility.json")
    if bad:
        return _item("host_driver", 1, ev,
                     ["driver outside the boundary of profile %s: %s (%s)" % (
                         data.get("profile"), ", ".join("%s %s: found %s, required %s" % (
                             v.get("host") or "job", v.get("fact"), v.get("found"), v.get("required")) for v in bad),
                         src)],
                     [v.get("fix") or "install a driver inside the profile's boundary" for v in bad])
    ev.append("inside the boundary of profile %s (%s, verdict %s)" % (data.get("profile"), src, data.get("verdict")))
    return _item("host_driver", 2, ev, [], [])


def _image(hosts, baseline, fps):
    ev, miss, how = [], [], []
    points = 2
    for host in hosts:
        view = host_view(baseline, host) if baseline is not None else None
        if view is None or not view["sources"].get("image"):
            view = fps[host][1] if host in fps else None
        if view is None or not (view["image"] and view["image_digest"]):
            points = 0
            bare = host_view(baseline, host)["argv"] if baseline is not None else None
            where = ("the server ran as a bare process: %s" % bare[0]) if bare else "no container facts"
            miss.append("%s: no image reference with a digest recorded (%s)" % (host, where))
            how.append("set repro_vllm_image to the serving image so container_facts records its digest (a server run "
                       "from a venv has no image: record the venv's packages and run it from an image to compare)")
            continue
        src = view["sources"].get("image")
        ev.append("%s: %s digest %s (%s)" % (host, view["image"], view["image_digest"], src))
        pinned = view["image_by_digest"] or "@sha256:" in str(view["image"]) or any(
            "@sha256:" in a for a in view["argv"] or [])
        if not pinned:
            points = min(points, 1)
            miss.append("%s: the run used the image by tag %s, not by digest" % (host, view["image"]))
            repo = str(view["image"]).split("@", maxsplit=1)[0]
            how.append("start the server with the image pinned: %s@%s" % (repo, view["image_digest"]))
    if not hosts:
        points = 0
        miss.append("no host in the run")
        how.append("run reproduce.yml")
    return _item("image", points, ev, miss, how)


def _flag_present(argv, flags):
    return any(a == f or a.startswith(f + "=") for a in argv for f in flags)


def _command(hosts, baseline, fps):
    if baseline is None:
        return _item("command", 0, [], ["no startup of the server recorded in the case"],
                     ["run playbooks/reproduce.yml (or freeze the production server's command line)"])
    ev, miss, how = [], [], []
    ok1, ok2 = True, True
    for host in hosts:
        view = host_view(baseline, host)
        src = view["sources"].get("command") or cite(baseline, host, "command.json")
        if not view["argv"] or view["env"] is None:
            ok1 = False
            miss.append("%s: startup command or environment not captured (%s)" % (host, src))
            how.append("record command.json (argv and environment) for every node; reproduce.yml does")
            continue
        ev.append("%s: argv of %d words and %d environment variables (%s)" % (
            host, len(view["argv"]), len(view["env"]), src))
        argv, env = view["argv"], view["env"]
        containerized = bool(argv) and argv[0].rsplit("/", 1)[-1] in RUNTIMES
        lacks = []
        if containerized and not _flag_present(argv, MOUNT_FLAGS):
            lacks.append("mounts")
        devices = any(k in env for k in DEVICE_ENV) or _flag_present(argv, DEVICE_FLAGS) or (
            host in fps and fps[host][1].get("visible_devices_recorded"))
        if not devices:
            lacks.append("visible devices")
        if not _flag_present(argv, NETWORK_FLAGS):
            lacks.append("network (--port)")
        model = view["argv"][2] if len(argv) > 2 and argv[1] == "serve" else ""
        if not (any(k in env for k in CACHE_ENV) or _flag_present(argv, CACHE_FLAGS) or model.startswith("/")):
            lacks.append("cache location (HF_HOME/HF_HUB_CACHE or --download-dir, or a local model path)")
        shell = unexpanded(list(argv) + [str(v) for v in env.values()])
        if shell:
            lacks.append("values left to the shell: %s" % ", ".join(shell[:3]))
        if lacks:
            ok2 = False
            miss.append("%s: %s not in the recorded command (%s)" % (host, ", ".join(lacks), src))
            how.append("record the command exactly as started, with every value expanded and the device, network, "
                       "cache and mount options written out")
    if not hosts:
        ok1 = False
    points = 0 if not ok1 else (2 if ok2 else 1)
    return _item("command", points, ev, miss, how)


def _gpu_visibility(hosts, baseline, fps, memory_in_use_mib):
    ev, miss, how = [], [], []
    ok1, ok2 = bool(hosts), True
    for host in hosts:
        if host not in fps:
            ok1 = False
            miss.append("%s: no fingerprint (GPU list, visible devices)" % host)
            how.append("run playbooks/fingerprint.yml before the attempt")
            continue
        run, view = fps[host]
        src = cite(run, host, "fingerprint.json")
        if not view["gpu_map"] or not view.get("visible_devices_recorded"):
            ok1 = False
            miss.append("%s: GPU list or visible devices not recorded (%s)" % (host, src))
            how.append("run playbooks/fingerprint.yml where nvidia-smi answers (repro_vllm_nvidia_smi_path)")
            continue
        assigned = None
        if baseline is not None:
            bview = host_view(baseline, host)
            visible = (bview["env"] or {}).get("CUDA_VISIBLE_DEVICES")
            if visible not in (None, ""):
                assigned = [v.strip() for v in str(visible).split(",")]
        gpus = [g for g in view["gpu_map"]
                if assigned is None or str(g.get("index")) in assigned or g.get("uuid") in assigned]
        uuids = {g.get("uuid") for g in gpus}
        ev.append("%s: %d GPU(s) %s, visible devices %s (%s)" % (
            host, len(view["gpu_map"]), view["gpu_model"], view["visible_devices"] or "all", src))
        foreign = [p for p in view["foreign_processes"] or [] if p.get("gpu_uuid") in uuids or not p.get("gpu_uuid")]
        used = {k: v for k, v in (view["memory_used_mib"] or {}).items()
                if (k in uuids or assigned is None) and v is not None and v > memory_in_use_mib}
        if foreign or used:
            ok2 = False
            miss.append("%s: assigned GPUs not free (%s%s)" % (
                host, ", ".join("pid %s %s %s MiB" % (p["pid"], p["name"], p["used_memory_mib"]) for p in foreign),
                (" memory in use: %s" % ", ".join("%s %s MiB" % kv for kv in sorted(used.items()))) if used else ""))
            how.append("stop or move the foreign processes on %s (nvidia-smi --query-compute-apps) or assign other "
                       "GPUs, then fingerprint again" % host)
    points = 0 if not ok1 else (2 if ok2 else 1)
    return _item("gpu_visibility", points, ev, miss, how)


def _first_failure(baseline):
    item = _first_failure_item(baseline)
    if baseline is not None and item["points"] != 2:
        # a container the runtime refused to start (podman/docker exit 125-127): vLLM never ran; say what helps
        hints = ["%s: %s" % (host, hint) for host in run_hosts(baseline)
                 for hint in [refusal_hint((baseline["hosts"].get(host) or {}).get("server.json"))] if hint]
        if hints:
            item["how"] = "; ".join(hints + ([item["how"]] if item["how"] else []))
    return item


def _first_failure_item(baseline):
    if baseline is None:
        return _item("first_failure", 0, [], ["no attempt with server logs in the case"],
                     ["run playbooks/reproduce.yml: every node's log is classified into stages.json"])
    stages = baseline["parts"].get("stages.json")
    src = cite(baseline, None, "stages.json")
    stage, error_class, ok = attempt_result(baseline)
    if stages is None:
        return _item("first_failure", 0, [], ["no classification of the logs (%s missing)" % src],
                     ["classify every node's log with repro.vllm.log_stage (reproduce.yml does)"])
    nodes = run_hosts(baseline)
    covered = {str(t.get("node")) for t in stages.get("timeline") or [] if isinstance(t, dict)}
    uncovered = [n for n in nodes if n not in covered]
    fe = stages.get("first_error") or (baseline["parts"].get("outcome.json") or {}).get("first_error")
    if ok and stage in (None, "none"):
        if uncovered:
            return _item("first_failure", 1, ["no failure in %s" % src],
                         ["the log of %s is not in the classification" % ", ".join(uncovered)],
                         ["fetch and classify every node's server log"])
        return _item("first_failure", 2, ["no failure: every node's log classified as stage none (%s)" % src], [], [])
    if not fe or not fe.get("line"):
        return _item("first_failure", 0, [],
                     ["no first exception found in the logs (stage %s, %s)" % (stage, src)],
                     ["keep the complete server log of every node from the first line (the start, not a tail) and "
                      "classify it again; raise VLLM_LOGGING_LEVEL=DEBUG for one run"])
    stamp = first_error_stamp(baseline, fe)
    if not stamp:
        return _item("first_failure", 0, ["first error: %s (%s)" % (str(fe.get("line"))[:160], src)],
                     ["the first exception has no timestamp, and no stamped line precedes it in the log"],
                     ["keep vLLM's default log format (it stamps every line) or the journal's timestamps, and the "
                      "complete log from the start"])
    ev = ["first error at %s on %s: %s (%s)" % (stamp, fe.get("node") or "?", str(fe.get("line"))[:160], src)]
    lacks = []
    if stage not in KNOWN_STAGES:
        lacks.append("the failure could not be placed in one stage (stage %s)" % stage)
    if uncovered:
        lacks.append("the log of %s is not in the classification" % ", ".join(uncovered))
    if lacks:
        return _item("first_failure", 1, ev, lacks,
                     ["fetch every node's log and classify them together (repro.vllm.log_stage paths=all nodes)"])
    ev.append("classified to stage %s (%s) from %d node log(s)" % (stage, error_class, len(nodes)))
    return _item("first_failure", 2, ev, [], [])


def first_error_stamp(run, fe):
    """The first error's timestamp: its own, one in its line, else (a Python traceback has no stamp of its own) the
    last stamped line before it in the same log, which bounds it.  None when no stamp is found.  The hand-off's
    first-exception item uses this too, so both say the same time."""
    if not isinstance(fe, dict):
        return None
    return fe.get("timestamp") or (_TS_RE.search(str(fe.get("line"))) or [None])[0] or _stamp_before(run, fe)


def _stamp_before(run, fe):
    """``'<timestamp> (last stamped line before line N of run-NNN/hosts/<node>/logs/<file>)'`` or None."""
    node, lineno = fe.get("node"), fe.get("lineno")
    name = os.path.basename(str(fe.get("file") or ""))
    logs = (run["hosts"].get(node) or {}).get("logs") or []
    rel = next((r for r in logs if os.path.basename(r) == name), None)
    if rel is None or not isinstance(lineno, int):
        return None
    last = None
    for i, line in enumerate(read_log_tail(run, node, rel).splitlines()[:lineno], 1):
        m = _TS_RE.search(line)
        if m:
            last = (m.group(0), i)
    if last is None:
        return None
    return "%s (last stamped line %d before line %d of %s)" % (last[0], last[1], lineno, cite(run, node, rel))


def _request(baseline):
    if baseline is None:
        return _item("request", 0, [], ["no fixed request saved"],
                     ["set repro_vllm_request_body and run playbooks/reproduce.yml"])
    req = baseline["parts"].get("request.json")
    src = cite(baseline, None, "request.json")
    if not req or req.get("body") in (None, {}, ""):
        return _item("request", 0, [], ["no fixed request body saved (%s)" % src],
                     ["set repro_vllm_request_body to the request that fails and run reproduce.yml"])
    ev = ["request body saved for %s (%s)" % (req.get("route"), src)]
    responses = [f for f in (baseline.get("files") or []) if f.startswith("responses/")]
    sent = req.get("sent") is not None or bool(responses)
    lacks = []
    if not (req.get("client") and req.get("route") and isinstance(req.get("timeout"), (int, float))):
        lacks.append("the client path, route or a fixed timeout is not recorded")
    if not sent:
        stage = attempt_result(baseline)[0]
        lacks.append("the request was not replayed in %s (server stage %s)" % (baseline["run"], stage))
    if lacks:
        return _item("request", 1, ev, lacks,
                     ["replay the saved body through repro.vllm.api_request with a fixed timeout once the minimal "
                      "start serves (reproduce.yml's single request)"])
    ev.append("replayed through %s with a %s s timeout" % (req.get("client"), req.get("timeout")))
    return _item("request", 2, ev, [], [])


def _repeatability(baseline, attempts):
    if baseline is None:
        return _item("repeatability", 0, [], ["no attempt to repeat"], ["run playbooks/reproduce.yml twice"])
    key = attempt_key(baseline)
    # a second clean run made for this attempt (repeat.json names it) counts when it kept the command,
    # environment and request; any other attempt with the same ones counts as well
    declared = [r for r in attempts if r is not baseline and declared_repeat(r, baseline) is not None]
    unclean = [r for r in declared if attempt_key(r) != key]
    repeats = [r for r in attempts if r is not baseline and attempt_key(r) == key]
    stage, error_class, ok = attempt_result(baseline)
    if not repeats:
        missing = ["no second clean run with the command, environment and request of %s" % baseline["run"]]
        if unclean:
            missing.append("%s repeats %s but differs in its command, environment or request (%s)" % (
                unclean[0]["run"], baseline["run"], cite(unclean[0], None, "changes.json")))
        return _item("repeatability", 0, [], missing,
                     ["run the same attempt again from a clean start (reproduce.yml with repro_vllm_repeat_clean: true, "
                      "or reproduce.yml again unchanged)"])
    ev = ["second clean run(s): %s" % ", ".join(r["run"] for r in repeats)]

    def same_as_baseline(run):
        rep = declared_repeat(run, baseline)
        if rep is not None and "same_stage" in rep and "same_error_class" in rep:
            return bool(rep["same_stage"] and rep["same_error_class"] and
                        bool((rep.get("b") or {}).get("ok", attempt_result(run)[2])) == ok)
        return attempt_result(run)[:2] == (stage, error_class) and attempt_result(run)[2] == ok

    same = [r for r in repeats if same_as_baseline(r)]
    if same:
        rep = declared_repeat(same[0], baseline)
        ev.append("%s %s like %s%s" % (same[0]["run"], "passed (stage none)" if ok else "failed at stage %s (%s)" % (
            stage, error_class), baseline["run"], (" (same stage and error class: %s)" % cite(same[0], None, "repeat.json"))
            if rep is not None else ""))
        return _item("repeatability", 2, ev, [], [])
    other = repeats[0]
    rep = declared_repeat(other, baseline)
    return _item("repeatability", 1, ev,
                 ["%s %s, %s %s: the failure does not repeat%s" % (
                     baseline["run"], result_text((stage, error_class, ok)), other["run"],
                     result_text(attempt_result(other)),
                     (" (%s: same stage %s, same error class %s)" % (
                         cite(other, None, "repeat.json"), "yes" if rep.get("same_stage") else "no",
                         "yes" if rep.get("same_error_class") else "no")) if rep is not None else "")],
                 ["look for what changes between starts (playbooks/diff.yml on the two runs, the isolation decision) "
                  "before reproducing further"])


def score_runs(runs, profile=None, memory_in_use_mib=DEFAULT_MEMORY_IN_USE_MIB):
    """score.json for the runs of one case (read with ``_evidence.read_run``, oldest first).

    ``profile`` is the validated profile (a dict, as the compatibility stage loads it) or only its name: with the
    document, the GPU items (host_driver, gpu_visibility) of a profile that asks for no GPU get ``points`` None and
    leave ``max``; with a name alone every item applies."""
    if not isinstance(runs, list) or any(not isinstance(r, dict) or "parts" not in r for r in runs):
        raise ScoreError("baseline_score: the input must be the case's runs (read_run results, oldest first)")
    runs = [r for r in runs if r.get("purpose") not in ("summary", "diff", "audit")] or runs
    baseline, attempts = _pick(runs)
    hosts = run_hosts(baseline) if baseline is not None else sorted(
        {h for r in runs for h in r["hosts"] if "fingerprint.json" in r["hosts"][h]})
    fps = _fingerprints(runs, baseline, hosts)
    doc = profile if isinstance(profile, dict) else None
    name = doc.get("name") if doc is not None else profile
    skip = set(GPU_ITEMS) if doc is not None and not profile_needs_gpu(doc) else set()
    items = [
        _not_applicable("host_driver", doc) if "host_driver" in skip else _host_driver(hosts, fps, runs, name),
        _image(hosts, baseline, fps),
        _command(hosts, baseline, fps),
        _not_applicable("gpu_visibility", doc) if "gpu_visibility" in skip else
        _gpu_visibility(hosts, baseline, fps, memory_in_use_mib),
        _first_failure(baseline),
        _request(baseline),
        _repeatability(baseline, attempts),
    ]
    score = sum(i["points"] for i in items if i["points"] is not None)
    top = 2 * sum(1 for i in items if i["points"] is not None)
    return {"score": score, "max": top, "band": band_of(score, top), "items": items,
            "case": runs[0]["case"] if runs else None, "baseline_run": baseline["run"] if baseline else None,
            "hosts": hosts}


def _brief(text, limit=200):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit].rstrip() + "... (score.json has the rest)"


def score_lines(score):
    """Console lines (progress style, ``summary | case <case> | ...``): the total out of the applicable maximum and
    its band, what is not applicable, then one line per item that lost points with what is missing and how to get
    it."""
    top = score.get("max", FULL)
    items = score["items"]
    na = [i["item"] for i in items if i["points"] is None]
    lost = [i for i in items if i["points"] is not None and i["points"] < 2]
    head = "summary | case %s | " % score.get("case") if score.get("case") else ""
    line = "%sbaseline score %d/%d (%s)" % (head, score["score"], top, score["band"])
    if na:
        line += " | not applicable under the profile: %s" % ", ".join(na)
    line += " | %s" % ("%d point(s) lost: %s" % (top - score["score"], ", ".join(i["item"] for i in lost))
                       if lost else "no point lost")
    lines = [line]
    for item in lost:
        lines.append("%slost %s %d/2 | missing: %s | how: %s" % (
            head, item["item"], item["points"], _brief(item["missing"] or "-"), _brief(item["how"] or "-")))
    return lines


def score_markdown(score):
    """The score's section of a run sheet: total out of the applicable maximum, band, one table row per item."""
    meaning = {"reproduce": "begin controlled reproduction", "collect": "collect the missing evidence first",
               "invalid": "not a valid diagnostic baseline"}
    fill = (score["score"], score.get("max", FULL), score["band"], meaning[score["band"]])
    title = "## Baseline score: %d/%d (%s: %s)" % fill
    out = [title, "",
           "| item | points | evidence | missing | how |", "|---|---|---|---|---|"]
    for item in score["items"]:
        points = "n/a" if item["points"] is None else "%d/2" % item["points"]
        out.append("| %s | %s | %s | %s | %s |" % tuple(
            [item["item"], points] + [str(item[k] or "-").replace("|", "\\|").replace("\n", " ")
                                      for k in ("evidence", "missing", "how")]))
    return "\n".join(out) + "\n"
