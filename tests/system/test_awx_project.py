# -*- coding: utf-8 -*-
"""The AWX path, laid out exactly as AWX lays out a job (docs/awx.md):

- the project update: ``ansible-galaxy collection install -r collections/requirements.yml -p <pdd>/requirements_collections``
  run INSIDE the project checkout (AWX's project_update.yml uses ``chdir: project_path``);
- the job: ansible-runner on the private data dir ``<pdd>`` with ``project/`` (the checkout: what git tracks),
  ``inventory/``, ``env/extravars``, ``env/envvars`` with only ``ANSIBLE_COLLECTIONS_PATH=<pdd>/requirements_collections``,
  and the playbook named relative to the project. No ANSIBLE_CONFIG: the project's own ansible.cfg is read from the
  working directory, as in AWX.

The test reads what AWX reads: ``artifacts/<ident>/status``, ``rc``, ``job_events/*.json`` and the
``playbook_on_stats`` event's ``artifact_data`` (the set_stats data a workflow hands to its next node).
A playbook is one entry of PLAYBOOKS."""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

from conftest import ROOT, check_frozen, free_port, replay_wrapper

BIN = os.path.dirname(sys.executable)
# The keys a workflow node may receive: nothing else, and never a role variable.
CHAIN_KEYS = {"repro_vllm_result", "repro_vllm_case_id", "repro_vllm_package"}


def _clean_ansible_env(monkeypatch):
    """AWX's job environment has none of the developer's settings (scripts/env.sh exports ANSIBLE_CONFIG and a
    collections path pointing at this checkout): without this the test would not see a broken project update."""
    for name in list(os.environ):
        if name.startswith("ANSIBLE_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))


def checkout(dest):
    """What an SCM project update puts in project/: the files git tracks (and new, not ignored ones)."""
    files = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, timeout=60).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            continue
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, rel))


def documented_install():
    """The install line of docs/awx.md section 1 (``ANSIBLE_COLLECTIONS_PATH="$DIR" ansible-galaxy ... -p "$DIR"``)."""
    with open(os.path.join(ROOT, "docs", "awx.md")) as f:
        lines = [ln.strip() for ln in f if ln.strip().startswith('ANSIBLE_COLLECTIONS_PATH="$DIR" ansible-galaxy collection install')]
    assert len(lines) == 1, lines
    return lines[0]


def project_update(project, pdd):
    """AWX's project update for collections, run inside the checkout: the install line docs/awx.md gives, run
    after ``. scripts/env.sh`` (whose collections path holds this checkout's development link, so ``-p`` alone
    would install nothing)."""
    target = os.path.join(pdd, "requirements_collections")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_FORCE_COLOR="false", ANSIBLE_NOCOLOR="1", DIR=target)
    script = '. "%s" && export PATH="%s:$PATH" && %s' % (os.path.join(ROOT, "scripts", "env.sh"), BIN, documented_install())
    done = subprocess.run(["bash", "-c", script], cwd=project, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "repro.vllm" in done.stdout and "was installed successfully" in done.stdout, done.stdout
    return target


class ProjectUpdate:
    """A project revision after AWX's project update: the checkout and its requirements_collections."""

    def __init__(self, base, project_src=None):
        base = str(base)
        self.project = os.path.join(base, "project")
        os.makedirs(self.project)
        if project_src is None:
            checkout(self.project)
        else:
            shutil.copytree(project_src, self.project, dirs_exist_ok=True)
        self.collections = project_update(self.project, base)


class AwxJob:
    """One private data dir, laid out as AWX lays it out for a job: AWX copies the updated project and its
    requirements_collections into each job's own folder."""

    def __init__(self, base, update):
        self.pdd = str(base)
        self.project = os.path.join(self.pdd, "project")
        shutil.copytree(update.project, self.project, symlinks=True)
        self.collections = os.path.join(self.pdd, "requirements_collections")
        shutil.copytree(update.collections, self.collections, symlinks=True)

    def run(self, playbook, inventory, extravars, ident, envvars=None):
        import ansible_runner

        os.makedirs(os.path.join(self.pdd, "inventory"), exist_ok=True)
        os.makedirs(os.path.join(self.pdd, "env"), exist_ok=True)
        if isinstance(inventory, str):  # a folder of the project used as the inventory source
            shutil.copytree(inventory, os.path.join(self.pdd, "inventory"), dirs_exist_ok=True)
        else:
            with open(os.path.join(self.pdd, "inventory", "hosts"), "w") as f:
                yaml.safe_dump(inventory, f)
        with open(os.path.join(self.pdd, "env", "extravars"), "w") as f:
            yaml.safe_dump(extravars, f)
        env = {"ANSIBLE_COLLECTIONS_PATH": self.collections, "ANSIBLE_NOCOLOR": "1"}
        env.update(envvars or {})
        with open(os.path.join(self.pdd, "env", "envvars"), "w") as f:
            yaml.safe_dump(env, f)
        runner = ansible_runner.run(private_data_dir=self.pdd, playbook=playbook, ident=ident, quiet=True)
        return JobArtifacts(os.path.join(self.pdd, "artifacts", ident), runner)


class JobArtifacts:
    """What AWX keeps of a job: status, rc and the job events on disk."""

    def __init__(self, path, runner):
        self.path = path
        self.runner = runner
        with open(os.path.join(path, "status")) as f:
            self.status = f.read().strip()
        with open(os.path.join(path, "rc")) as f:
            self.rc = int(f.read().strip())
        self.events = []
        for name in glob.glob(os.path.join(path, "job_events", "*.json")):
            with open(name) as f:
                self.events.append(json.load(f))
        self.events.sort(key=lambda e: e["counter"])

    def stdout(self):
        with open(os.path.join(self.path, "stdout")) as f:
            return f.read()

    @property
    def artifact_data(self):
        stats = [e for e in self.events if e["event"] == "playbook_on_stats"]
        assert len(stats) == 1, "no playbook_on_stats event: the job did not finish (%s)" % self.status
        return stats[0]["event_data"]["artifact_data"]

    def results(self, task_substring):
        return [(e["event_data"].get("host"), e["event"], e["event_data"].get("res", {})) for e in self.events
                if e["event"] in ("runner_on_ok", "runner_on_failed") and task_substring in e["event_data"].get("task", "")]


def localhost_inventory():
    return {"all": {"hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}


def fingerprint_vars(work, case):
    return {"repro_vllm_records_root": str(work / "records"), "repro_vllm_case_id": case,
            "repro_vllm_remote_root": str(work / "remote"),
            "repro_vllm_nvidia_smi_path": replay_wrapper(work, "h200", "h200-1gpu")}


def check_result(artifact_data, purpose, case, work):
    """The workflow contract: exactly the chaining keys, and a result that names frozen runs of this job."""
    assert set(artifact_data) <= CHAIN_KEYS and {"repro_vllm_result", "repro_vllm_case_id"} <= set(artifact_data), artifact_data
    assert artifact_data["repro_vllm_case_id"] == case
    result = artifact_data["repro_vllm_result"]
    assert result["purpose"] == purpose and result["case_id"] == case and result["schema_version"] == 1
    assert result["records_root"] == str(work / "records"), result
    assert result["runs"] and result["last_run"] == result["runs"][-1]
    for run in result["runs"]:
        assert run.startswith(str(work / "records" / case) + "/"), run
        check_frozen(run)
    return result


# ---- one entry per playbook: (playbook, needs the real vLLM, extravars(work, case, port), extra checks) --------
def _table_rows(stdout):
    """The closing table's rows as AWX's display shows them (lines of the close's msg): [[host, status], ...]."""
    return [ln.strip().strip('",').split()[:2] for ln in stdout.splitlines()
            if re.match(r'\s*"(localhost|job|node\d+)\s+[A-Za-z]', ln)]


def _fingerprint_checks(result, job, work):
    assert [os.path.basename(r) for r in result["runs"]] == ["run-001"]
    fleet = json.loads((work / "records" / "awx" / "run-001" / "fleet.json").read_text())
    assert [h["status"] for h in fleet["hosts"]] == ["ok"]
    # AWX's display shows the host's line, where the record is and the closing table (the close's msg; no profile
    # is judged in this inventory)
    stdout = job.stdout()
    assert '"localhost: ok | driver 580.159.04' in stdout and " frozen (ok), " in stdout, stdout
    assert _table_rows(stdout) == [["localhost", "ok"]], stdout[-4000:]


def _reproduce_vars(work, case, port):
    v = fingerprint_vars(work, case)
    v.update(repro_vllm_port=port, repro_vllm_ladder_until="")  # minimal start and the one request: one vLLM start
    return v


def _reproduce_checks(result, job, work):
    # the fingerprint run first, then the minimal start: one result naming both, from one job
    assert len(result["runs"]) >= 2, result
    assert result["classification"] == {"stage": "none", "error_class": None}, result
    assert result["refused"] is False
    # AWX's display shows the fingerprint's closing table, the ladder's summary and the case's one verdict line
    stdout = job.stdout()
    assert ["localhost", "ok"] in _table_rows(stdout), stdout[-4000:]
    # the attempts' closing table (the console's own is not loaded here): the host ok through the one request
    assert re.search(r'\n\s*"localhost\s+ok through \S+\s+none\s', stdout), stdout[-4000:]
    assert re.search(r'"msg": "verdict \| %s \| ' % re.escape(result["case_verdict"]), stdout), stdout[-4000:]


PLAYBOOKS = [
    pytest.param("playbooks/fingerprint.yml", False, lambda w, c, p: fingerprint_vars(w, c), _fingerprint_checks,
                 id="fingerprint"),
    pytest.param("playbooks/reproduce.yml", True, _reproduce_vars, _reproduce_checks, id="reproduce"),
]


@pytest.fixture(scope="module")
def this_project(tmp_path_factory):
    """This repository as the AWX project, updated once for the module (AWX updates once per revision)."""
    return ProjectUpdate(tmp_path_factory.mktemp("scm"))


@pytest.mark.parametrize("playbook,needs_vllm,make_vars,checks", PLAYBOOKS)
def test_job_in_awx_layout(playbook, needs_vllm, make_vars, checks, tmp_path, monkeypatch, request, this_project):
    _clean_ansible_env(monkeypatch)
    inventory = localhost_inventory()
    if needs_vllm:
        request.getfixturevalue("real_vllm")
        # the project's own inventory source (AWX: an inventory sourced from the project), the CPU vLLM settings
        inventory = os.path.join(ROOT, "inventories", "localhost")
    job = AwxJob(tmp_path / "pdd", this_project)
    assert os.path.isfile(os.path.join(job.collections, "ansible_collections", "repro", "vllm", "MANIFEST.json"))
    art = job.run(playbook, inventory, make_vars(tmp_path, "awx", free_port()), ident="job1")
    assert art.status == "successful" and art.rc == 0, art.stdout()[-6000:]
    result = check_result(art.artifact_data, os.path.basename(playbook)[:-4], "awx", tmp_path)
    checks(result, art, tmp_path)
    # the project's ansible.cfg was read (this repository is the project): terminal.log is in every run
    for run in result["runs"]:
        assert os.path.isfile(os.path.join(run, "terminal.log")), run


def test_awx_display_shows_the_violations_the_verdict_and_the_closing_table(tmp_path, monkeypatch, this_project):
    """Issue 32, observation 1 and 2: AWX runs the job with its own display callback (ansible-runner's awx_display
    over Ansible's default; the project's ansible.cfg names repro.vllm.console, which AWX never loads), so the
    verdict must be in the tasks' results. A fingerprint of the H200 capture against the GB300 profile: every
    violation line, the judge's verdict and the closing table are in the job output, and the job fails (rc 2, AWX
    ``failed``) after the run is frozen and handed on; with repro_vllm_record_only it only records, and says so."""
    _clean_ansible_env(monkeypatch)
    job = AwxJob(tmp_path / "pdd", this_project)
    made = fingerprint_vars(tmp_path, "gb300")
    made["repro_vllm_profile"] = "kimi-k3-gb300"
    art = job.run("playbooks/fingerprint.yml", localhost_inventory(), made, ident="violations")
    # what AWX reads of a job that judged 5 violations: failed, rc 2, the run frozen and handed on
    assert art.status == "failed" and art.rc == 2, art.stdout()[-6000:]
    result = check_result(art.artifact_data, "fingerprint", "gb300", tmp_path)
    with open(os.path.join(result["last_run"], "compatibility.json")) as f:
        assert len(json.load(f)["violations"]) == 5
    # ansible-runner ran it as AWX does: ansible-runner 2.4 always sets ANSIBLE_STDOUT_CALLBACK=awx_display, built on
    # ORIGINAL_STDOUT_CALLBACK when the job's environment names one (AWX's Extra Environment Variables), else on
    # Ansible's default; this job's environment names none (_clean_ansible_env), so the console callback is not loaded
    stdout = art.stdout()
    assert "PLAY RECAP" in stdout and not stdout.startswith("== "), stdout[:500]
    wanted = ["compatibility | profile kimi-k3-gb300: FAIL, 5 violation(s), 6 note(s)",
              "compatibility | VIOLATION localhost | gpu_model | required: GB300 | found: GPU 0 NVIDIA H200",
              "compatibility | VIOLATION job | gpu_count | required: at least 8 GB300 GPUs across the job",
              "the run is frozen, but 5 compatibility violation(s)"]
    for line in wanted:
        assert line in stdout, (line, stdout[-6000:])
    # the closing table (the close's ``closing``), one row a line: both hosts' rows say VIOLATION, never ok
    assert _table_rows(stdout) == [["localhost", "VIOLATION"], ["job", "VIOLATION"]], stdout[-6000:]
    # the job events hold the same (what AWX's job output shows, event by event)
    closed = art.results("Close the run")
    assert [e for _h, e, _r in closed] == ["runner_on_failed"]
    events = "".join(e.get("stdout", "") for e in art.events)
    assert all(line in events for line in wanted)

    recorded = dict(made, repro_vllm_record_only=True, repro_vllm_case_id="gb300-recorded")
    art = job.run("playbooks/fingerprint.yml", localhost_inventory(), recorded, ident="recorded")
    assert art.status == "successful" and art.rc == 0, art.stdout()[-6000:]
    stdout = art.stdout()
    for line in wanted[:3] + ["exit | record only (repro_vllm_record_only): the job does not fail on 5 compatibility "
                              "violation(s)"]:
        assert line in stdout, (line, stdout[-6000:])
    assert _table_rows(stdout) == [["localhost", "VIOLATION"], ["job", "VIOLATION"]], stdout[-6000:]


def test_workflow_chain_passes_only_the_case_on(tmp_path, monkeypatch, this_project):
    """Job 2 gets job 1's artifact_data as extra variables (what a workflow does): it makes a new run of the same
    case and never writes into job 1's frozen run; its own result replaces what it was handed."""
    _clean_ansible_env(monkeypatch)
    job = AwxJob(tmp_path / "pdd", this_project)
    first = job.run("playbooks/fingerprint.yml", localhost_inventory(), fingerprint_vars(tmp_path, "chain"), ident="j1")
    assert first.status == "successful", first.stdout()[-4000:]
    handed = first.artifact_data
    frozen = check_frozen(handed["repro_vllm_result"]["last_run"])
    # the next node: its own variables (no case) plus what the workflow hands on
    nxt = fingerprint_vars(tmp_path, "ignored")
    del nxt["repro_vllm_case_id"]
    nxt.update(handed)
    second = job.run("playbooks/fingerprint.yml", localhost_inventory(), nxt, ident="j2")
    assert second.status == "successful", second.stdout()[-4000:]
    result = check_result(second.artifact_data, "fingerprint", "chain", tmp_path)
    assert [os.path.basename(r) for r in result["runs"]] == ["run-002"]
    assert check_frozen(handed["repro_vllm_result"]["last_run"]) == frozen


def test_failed_job_still_hands_its_frozen_run_on(tmp_path, monkeypatch, this_project):
    """A host that never answers fails the job after the run is frozen; the workflow's failure branch still gets
    the run (set_stats runs in the playbook's always section)."""
    _clean_ansible_env(monkeypatch)
    job = AwxJob(tmp_path / "pdd", this_project)
    inv = localhost_inventory()
    inv["all"]["hosts"]["gone"] = {"ansible_host": "127.0.0.1", "ansible_port": free_port(), "ansible_user": "nobody",
                                   "ansible_ssh_common_args": "-o ConnectTimeout=3 -o StrictHostKeyChecking=no"}
    art = job.run("playbooks/fingerprint.yml", inv, fingerprint_vars(tmp_path, "partial"), ident="f1")
    assert art.status == "failed" and art.rc != 0
    result = check_result(art.artifact_data, "fingerprint", "partial", tmp_path)
    fleet = json.loads(open(os.path.join(result["last_run"], "fleet.json")).read())
    assert {h["host"]: h["status"] for h in fleet["hosts"]}["gone"] == "unreachable"


def test_installed_only_project_and_terminal_log(tmp_path, monkeypatch):
    """A project that only installs the collection (collections/requirements.yml naming the built artifact) and
    imports its playbook: no ansible.cfg of ours is read, so the record_log callback is off and terminal.log is
    absent; with the execution environment's ansible.cfg (execution-environment/ansible.cfg, installed as
    /etc/ansible/ansible.cfg in the image) it is there."""
    _clean_ansible_env(monkeypatch)
    dist = tmp_path / "dist"
    subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(dist), ROOT],
                   check=True, capture_output=True, timeout=300)
    tarball = glob.glob(str(dist / "repro-vllm-*.tar.gz"))[0]
    src = tmp_path / "site"
    (src / "collections").mkdir(parents=True)
    (src / "collections" / "requirements.yml").write_text(
        "---\ncollections:\n  - name: %s\n    type: file\n" % tarball)
    (src / "fingerprint.yml").write_text(
        "---\n- name: Fleet fingerprint from the installed collection\n  ansible.builtin.import_playbook: repro.vllm.fingerprint\n")
    job = AwxJob(tmp_path / "pdd", ProjectUpdate(tmp_path / "scm", project_src=str(src)))
    without = job.run("fingerprint.yml", localhost_inventory(), fingerprint_vars(tmp_path, "plain"), ident="p1")
    assert without.status == "successful", without.stdout()[-4000:]
    run = check_result(without.artifact_data, "fingerprint", "plain", tmp_path)["last_run"]
    assert not os.path.exists(os.path.join(run, "terminal.log"))
    ee_cfg = os.path.join(ROOT, "execution-environment", "ansible.cfg")
    with_ee = job.run("fingerprint.yml", localhost_inventory(), fingerprint_vars(tmp_path, "ee"), ident="p2",
                      envvars={"ANSIBLE_CONFIG": ee_cfg})
    assert with_ee.status == "successful", with_ee.stdout()[-4000:]
    run = check_result(with_ee.artifact_data, "fingerprint", "ee", tmp_path)["last_run"]
    log = open(os.path.join(run, "terminal.log")).read()
    assert "Close the run" in log


def test_records_sink_outlives_the_job(tmp_path, monkeypatch, this_project, ssh_hosts):
    """AWX's controller is an ephemeral container: each job here gets a fresh private data dir AND a fresh records
    root. The sink (an inventory host reached over SSH) keeps a verified copy of every frozen run; a later job
    reads runs back from it (what diff.yml and handoff.yml do), and a job that would replace a run on the sink is
    refused without touching it."""
    _clean_ansible_env(monkeypatch)
    hosts = ssh_hosts(2)  # node01: the fleet; node02: the persistent records host
    with open(hosts.inventory) as f:
        inventory = yaml.safe_load(f)
    inventory["sshhosts"]["hosts"]["localhost"] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    sink_dir = tmp_path / "sink"
    sink = "node02:%s" % sink_dir

    def job_vars(name):
        work = tmp_path / name
        work.mkdir()
        v = fingerprint_vars(work, "kept")
        v.update(repro_vllm_targets="node01", repro_vllm_records_sink=sink)
        return work, v

    # job 1: fingerprint node01, copy the frozen run to node02 and verify it there
    work1, v1 = job_vars("job1")
    art = AwxJob(tmp_path / "pdd1", this_project).run("playbooks/fingerprint.yml", inventory, v1, ident="s1")
    assert art.status == "successful", art.stdout()[-6000:]
    result = check_result(art.artifact_data, "fingerprint", "kept", work1)
    on_sink = str(sink_dir / "kept" / "run-001")
    assert result["sink"] == {"host": "node02", "runs": [on_sink], "verified": True, "error": None}
    assert check_frozen(on_sink) == check_frozen(result["last_run"])
    assert os.listdir(str(sink_dir / "kept")) == ["run-001"]  # no incoming folder left behind
    assert any("files verified there" in str(res.get("msg")) for _h, _e, res in art.results("where the copy is"))

    # job 2: a new controller reads the run back (the task diff.yml/handoff.yml include), verified
    work2, v2 = job_vars("job2")
    job2 = AwxJob(tmp_path / "pdd2", this_project)
    with open(os.path.join(job2.project, "readback.yml"), "w") as f:
        f.write("---\n- name: Read the case back\n  hosts: localhost\n  gather_facts: false\n  tasks:\n"
                "    - name: From the sink\n      ansible.builtin.include_role:\n        name: repro.vllm.sink\n"
                "        tasks_from: fetch.yml\n")
    art = job2.run("readback.yml", inventory, v2, ident="s2")
    assert art.status == "successful", art.stdout()[-6000:]
    assert check_frozen(str(work2 / "records" / "kept" / "run-001")) == check_frozen(on_sink)

    # job 3: a fresh controller that did not read the sink back (an empty records root, as every AWX job has without
    # a volume): its run is numbered above the sink's runs, run-002, here and on the sink; job 1's run-001 is kept
    work3, v3 = job_vars("job3")
    before = check_frozen(on_sink)
    art = AwxJob(tmp_path / "pdd3", this_project).run("playbooks/fingerprint.yml", inventory, v3, ident="s3")
    assert art.status == "successful", art.stdout()[-6000:]
    result = check_result(art.artifact_data, "fingerprint", "kept", work3)
    assert [n for n in os.listdir(str(work3 / "records" / "kept")) if n.startswith("run-")] == ["run-002"]
    second = str(sink_dir / "kept" / "run-002")
    assert result["sink"] == {"host": "node02", "runs": [second], "verified": True, "error": None}
    assert check_frozen(second) == check_frozen(result["last_run"]) != before
    assert check_frozen(on_sink) == before
    assert sorted(os.listdir(str(sink_dir / "kept"))) == ["run-001", "run-002"]
    with open(os.path.join(second, "manifest.json")) as f:
        assert json.load(f)["run_id"] == "run-002"  # the name inside the run is the name on the sink

    # job 4: two jobs that raced for one number (both listed the sink before either copied): the second copy is a
    # different run under a name the sink holds; it is refused and nothing on the sink is touched. Made here by
    # handing the sink role job 3's frozen run under the name run-001.
    work4 = tmp_path / "job4"
    raced = work4 / "records" / "kept" / "run-001"
    shutil.copytree(result["last_run"], str(raced))
    job4 = AwxJob(tmp_path / "pdd4", this_project)
    with open(os.path.join(job4.project, "push.yml"), "w") as f:
        f.write("---\n- name: Copy a run to the sink\n  hosts: localhost\n  gather_facts: false\n  tasks:\n"
                "    - name: To the sink\n      ansible.builtin.include_role:\n        name: repro.vllm.sink\n")
    art = job4.run("push.yml", inventory, {"repro_vllm_records_sink": sink, "repro_vllm_sink_runs": [str(raced)]},
                   ident="s4")
    assert art.status == "failed"
    assert any("already holds a different run-001" in str(res.get("msg")) for _h, ev, res in art.results("refuse"))
    assert check_frozen(on_sink) == before and check_frozen(second) == check_frozen(result["last_run"])
    assert sorted(os.listdir(str(sink_dir / "kept"))) == ["run-001", "run-002"]


def test_workflow_audit_then_handoff(tmp_path, monkeypatch, this_project):
    """The workflow of docs/awx.md without the vLLM start: audit.yml (replayed captures) -> handoff.yml of that
    case, each an AWX job of its own; the hand-off job's extra variables are its own plus the audit's
    artifact_data, as a workflow passes them. It packs the audit's run and names the package for the next node."""
    _clean_ansible_env(monkeypatch)
    job = AwxJob(tmp_path / "pdd", this_project)
    audit = job.run("playbooks/audit.yml", localhost_inventory(), fingerprint_vars(tmp_path, "wf"), ident="audit")
    assert audit.status == "successful", audit.stdout()[-6000:]
    handed = audit.artifact_data
    result = check_result(handed, "audit", "wf", tmp_path)
    assert [os.path.basename(r) for r in result["runs"]] == ["run-001"]
    # one host and no baseline: nothing drifted (drift names only hosts that drifted); the verdict is the audit's
    assert result["drift"] == {} and result["verdict"] in ("clean", "drift"), result  # audit.yml's own verdict
    assert result["files"]["audit.json"] == os.path.join(result["last_run"], "audit.json"), result
    assert os.path.isfile(os.path.join(result["last_run"], "audit.json"))
    assert "repro_vllm_package" not in handed

    # the hand-off node: its job template's variables name no case; the workflow hands the audit's keys on
    nxt = {"repro_vllm_records_root": str(tmp_path / "records")}
    nxt.update(handed)
    hand = job.run("playbooks/handoff.yml", localhost_inventory(), nxt, ident="handoff")
    assert hand.status == "successful", hand.stdout()[-6000:]
    data = hand.artifact_data
    # the hand-off hands no case id on (the node after it, replay.yml, makes a case of its own); its result names
    # the case and the records root (null before: the hand-off makes no run)
    assert set(data) == {"repro_vllm_result", "repro_vllm_package"}
    out = data["repro_vllm_result"]
    assert out["purpose"] == "handoff" and out["case_id"] == "wf" and out["package"] == data["repro_vllm_package"]
    assert out["records_root"] == str(tmp_path / "records") and out["runs"] == []
    assert "drift" not in out  # the audit's result was replaced, not merged
    package = data["repro_vllm_package"]
    assert os.path.isfile(package) and package.endswith(".tar.gz"), package
    with tarfile.open(package) as tar:
        names = tar.getnames()
    assert any("/runs/run-001/" in "/%s/" % n for n in names), names[:20]
    assert check_frozen(result["last_run"]) == check_frozen(handed["repro_vllm_result"]["last_run"])


def test_workflow_handoff_then_replay(tmp_path, monkeypatch, this_project, real_vllm):
    """handoff.yml -> replay.yml as an AWX workflow, each an AWX-layout job on the CPU vLLM of inventories/localhost.
    The case is made first by reproduce.yml (a command that fails in config within seconds: --max-model-len beyond
    the tiny model's), as the first node of the workflow reproduce -> handoff -> replay. The hand-off node has the
    case id of its job template; the replay node's extra variables are its own plus the artifact_data of both
    earlier nodes, as AWX passes each node's artifacts on to all that follow: reproduce.yml's repro_vllm_case_id
    and the hand-off's repro_vllm_result and repro_vllm_package. It unpacks the package into a case of its own,
    says the handed-on case and case id are ignored (replay.json ignored_case_id), writes nothing into the
    handed-on case, and reproduces the failure."""
    _clean_ansible_env(monkeypatch)
    job = AwxJob(tmp_path / "pdd", this_project)
    inventory = os.path.join(ROOT, "inventories", "localhost")
    made = _reproduce_vars(tmp_path, "chain", free_port())
    made.update(repro_vllm_platform_args=["--max-model-len", "99999", "--enforce-eager"], repro_vllm_record_only=True)
    rep = job.run("playbooks/reproduce.yml", inventory, made, ident="reproduce")
    assert rep.status == "successful", rep.stdout()[-6000:]
    assert check_result(rep.artifact_data, "reproduce", "chain", tmp_path)["classification"]["stage"] == "config"

    # node 1: the hand-off, its case id from its job template
    hand = job.run("playbooks/handoff.yml", localhost_inventory(),
                   {"repro_vllm_records_root": str(tmp_path / "records"), "repro_vllm_case_id": "chain"}, ident="handoff")
    assert hand.status == "successful", hand.stdout()[-6000:]
    handed = hand.artifact_data
    assert set(handed) == {"repro_vllm_result", "repro_vllm_package"}
    assert handed["repro_vllm_result"]["records_root"] == str(tmp_path / "records")

    # node 2: the replay, on a records root of its own (what a receiver's AWX has)
    receiver = tmp_path / "receiver"
    nxt = {"repro_vllm_records_root": str(receiver), "repro_vllm_remote_root": str(tmp_path / "remote"),
           "repro_vllm_nvidia_smi_path": made["repro_vllm_nvidia_smi_path"], "repro_vllm_replay_port": free_port()}
    nxt.update(rep.artifact_data)  # repro_vllm_case_id=chain (and reproduce's result, replaced by the hand-off's)
    nxt.update(handed)
    assert nxt["repro_vllm_case_id"] == "chain"
    rpl = job.run("playbooks/replay.yml", inventory, nxt, ident="replay")
    assert rpl.status == "successful", rpl.stdout()[-6000:]
    data = rpl.artifact_data
    result = data["repro_vllm_result"]
    case = data["repro_vllm_case_id"]
    assert case.startswith("chain-replay-") and result["case_id"] == case and result["purpose"] == "replay"
    assert result["records_root"] == str(receiver) and result["last_run"].startswith(str(receiver / case) + "/")
    assert result["replay"]["verdict"] == "reproduced", result["replay"]
    assert result["replay"]["package_verdict"] == result["replay"]["replay_verdict"] == "fails_at_minimal"
    assert "replay | the workflow handed on case chain (repro_vllm_result of handoff): ignored - a replay makes its own " \
        "case %s and writes nothing into chain" % case in rpl.stdout()
    assert "replay | repro_vllm_case_id=chain ignored (an extra variable: in a workflow, handed on by an earlier node " \
        "or a survey) - this replay's case is %s (replay.json ignored_case_id)" % case in rpl.stdout()
    assert result["replay"]["ignored_case_id"] == "chain" and result["replay"]["run"].startswith(case + "/")
    for run in result["runs"]:
        check_frozen(run)
        assert run.startswith(str(receiver / case) + "/"), run
    assert not (receiver / "chain").exists()


def test_wrong_survey_value_fails_first(tmp_path, monkeypatch, this_project):
    """A survey answer of the wrong type fails each playbook's first task, naming the variable, before any run is
    opened or host contacted: no records root, no remote folder, no later task."""
    _clean_ansible_env(monkeypatch)
    job = AwxJob(tmp_path / "pdd", this_project)
    bad = {"fingerprint": {"repro_vllm_command_timeout": "ten"}, "audit": {"repro_vllm_record_only": "maybe"},
           "reproduce": {"repro_vllm_port": "80a"}, "diff": {"repro_vllm_diff_hosts": ["gpu-a07"]},
           "handoff": {"repro_vllm_handoff_runs": {"run": 1}}, "collective": {"repro_vllm_collective_nodes": {"node01": 1}}}
    for name, wrong in sorted(bad.items()):
        extravars = fingerprint_vars(tmp_path, "typo")
        extravars.update(wrong)
        art = job.run("playbooks/%s.yml" % name, localhost_inventory(), extravars, ident="bad-" + name)
        variable = next(iter(wrong))
        assert art.status == "failed", (name, art.stdout()[-3000:])
        tasks = [e["event_data"]["task"] for e in art.events if e["event"] in ("runner_on_ok", "runner_on_failed")]
        # every playbook checks in its first task (validate_argument_spec), before anything is created
        first = "Every variable against the roles' argument specs"
        assert tasks == [first], (name, tasks)
        failed = art.results(first)
        assert failed[0][2]["msg"].startswith("Validation of arguments failed"), (name, failed)
        assert failed[0][1] == "runner_on_failed" and variable in failed[0][2]["msg"], (name, failed)
        assert not os.path.exists(str(tmp_path / "records")) and not os.path.exists(str(tmp_path / "remote")), name
