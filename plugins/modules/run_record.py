#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_record
short_description: Create, fill, freeze and verify a frozen run record
version_added: 0.1.0
description:
  - Keeps one record per attempt under C(<root>/<case_id>/run-NNN), never overwritten.
  - C(state=create) takes the next free run number with an atomic directory creation, so concurrent runs
    never share a number. Directories are mode 0700.
  - C(state=write) writes one part (a file) into a run, atomically (temporary file and rename).
  - C(state=freeze) writes C(manifest.json) (every file with size and sha256) and makes the run read-only.
    A run is frozen when its C(manifest.json) exists; writes into it are refused even for root.
  - C(state=verify) recomputes every size and sha256 of a record and reports what changed, what is missing
    and what was added.
  - On the controller, use the same module with C(delegate_to=localhost). There (a local connection, no
    become) its action runs the state in the controller's own process, with this module's code, instead of
    starting a module process for each step.
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
attributes:
  check_mode:
    support: full
    details:
      - C(create) returns the path it would create; C(write) and C(freeze) say what they would write; C(prunable)
        and C(interrupted) only read.
  diff_mode:
    support: none
  idempotent:
    description: When run again with the same arguments, the module reports no change.
    support: partial
    details:
      - C(create) makes a new run each time. C(write) of identical bytes, C(freeze) of a frozen run that
        verifies, and C(verify) report no change.
options:
  state:
    description:
      - What to do.
    type: str
    required: true
    choices: [create, write, freeze, verify, prunable, close, interrupted]
  root:
    description:
      - The records root. Its parent directory must exist; the root itself is created when missing.
      - Required with O(state=create), O(state=prunable) and O(state=interrupted); on the controller (the action)
        C(records) when not given, the one default of the records root, resolved against the working directory.
    type: path
  case_id:
    description:
      - The case the run belongs to; one directory name (letters, digits, C(.), C(_), C(-)).
    type: str
    default: default
  taken:
    description:
      - With O(state=create), names of runs of the case kept in another place, such as the listing of the case
        folder on the records sink (C(run-NNN), and C(.incoming-run-NNN-*) copies in transit). The new run's
        number is above every one of them, so its name never collides there. Other names are ignored.
    type: list
    elements: str
    default: []
  path:
    description:
      - The run directory (as returned by O(state=create)) for O(state=write) and O(state=freeze).
      - For O(state=verify), any directory that holds a C(manifest.json), such as a fetched C(hosts/<host>/).
    type: path
  part:
    description:
      - Relative path of the file inside the run, for example C(hosts/node1/fingerprint.json).
      - Absolute paths, C(..), symlinks on the way and C(manifest.json) are refused.
    type: str
  content:
    description:
      - Text to write. Mutually exclusive with O(json) and O(src).
    type: str
  json:
    description:
      - Data to write as pretty, key-sorted JSON with a trailing newline. Mutually exclusive with O(content)
        and O(src).
    type: raw
  src:
    description:
      - A file on the same host to copy into the run. Mutually exclusive with O(content) and O(json).
    type: path
  overwrite:
    description:
      - Replace an existing part whose bytes differ. Without it such a write fails; data is never lost
        silently. A part with identical bytes is left alone either way.
    type: bool
    default: false
  collection_version:
    description:
      - Version of this collection, recorded in the manifest. Left out, the action fills in the version of
        C(galaxy.yml) on the controller (a module on a node cannot read it); a run's freeze takes the version its
        open recorded.
    type: str
    default: unknown
  metadata:
    description:
      - Extra data stored in the manifest under C(metadata) (for example the inventory host and the play).
    type: dict
  fail_on_mismatch:
    description:
      - With O(state=verify), fail the task when the record does not verify (or its manifest is not
        O(manifest_sha256)). Set to V(false) to only report.
    type: bool
    default: true
  manifest_sha256:
    description:
      - With O(state=verify), the sha256 its C(manifest.json) must have (a copy checked against the run it was made
        from); another is a mismatch.
    type: str
  parts:
    description:
      - With O(state=freeze), parts written into the run just before it is frozen, in this order, each as
        O(state=write) writes one (atomically; a part with other bytes is refused unless O(overwrite)). A run's
        close is then one task.
      - With O(state=write), instead of O(part), the parts written in this order (RV(written)).
    type: list
    elements: dict
    suboptions:
      part:
        description: Relative path of the file inside the run, as O(part).
        type: str
        required: true
      content:
        description: Text to write. Exactly one of O(parts[].content) and O(parts[].json).
        type: str
      json:
        description: Data to write as pretty, key-sorted JSON, as O(json).
        type: raw
  verify:
    description:
      - With O(state=freeze), verify the run right after freezing it (every size and sha256, nothing added) and
        fail the task when it does not verify. The result then carries the keys of O(state=verify).
    type: bool
    default: false
  hosts:
    description:
      - With O(state=create), the inventory hosts this run is for. Returned as given, so the registered result
        names them (the record role registers it as C(repro_vllm_run) on every host of its play).
    type: list
    elements: str
  hosts_pattern:
    description:
      - With O(state=create), the inventory pattern O(hosts) were chosen by. When O(hosts) is empty the task
        fails before any run is created, naming this pattern (and the C(--limit) around it on the controller).
      - On the controller (the action) it is read as C(repro_vllm_targets) is (a pattern, a comma or colon list), and
        a host it names that is not in the inventory, or that C(--limit) leaves out of the play, fails the task
        before any run is created, naming it; the failed result's C(not_matched) lists C({name, reason}) with
        reason C(not_in_inventory) or C(outside_limit).
    type: str
  targets:
    description:
      - With O(state=create), on the controller (the action), instead of O(hosts) and O(hosts_pattern) - the run's
        targets as C(repro_vllm_targets) takes them (a pattern, a comma or colon list, a YAML list). The action makes
        O(hosts_pattern) of them (the terms, comma-joined, as the playbooks' C(hosts:) read them) and O(hosts) (the
        inventory's hosts that pattern matches, in the order Ansible gives them, that are in this play), then goes on
        as with those two.
    type: raw
  purpose:
    description:
      - With O(state=create), the run's purpose (fingerprint, audit, attempt, ...). Returned as given.
    type: str
  profile:
    description:
      - With O(state=create), the profile this run is judged against - the registered result of
        M(repro.vllm.compatibility) (its RV(repro.vllm.compatibility#module:judged)), or a profile name. Left out, or
        the result of a compatibility task that did not judge - the run is recorded as not judged.
      - Kept in the open run and written by its freeze into C(manifest.json) as C(metadata.profile) (the name, null
        when not judged) and C(metadata.profile_source) (C(shipped), C(file), C(named) or C(not judged)), whatever
        the freeze's O(metadata) says of the profile.
    type: raw
  owner:
    description:
      - With O(state=create), who opens the run (kept in the run's C(open.json) until its freeze, then in
        C(manifest.json) C(metadata.owner) on the controller; the hand-off leaves it out).
      - The action plugin fills it in on the controller - controller host name, records root, the play's pid and
        its start ticks, the user, and the AWX job id (C(JOB_ID)) when present. Give it only to override that.
    type: dict
  owner_lease:
    description:
      - With O(state=create), seconds after which an open run whose owner is on another controller counts as
        abandoned (see O(seal_interrupted)). On the same controller the owner's process decides instead.
    type: float
    default: 14400
  seal_interrupted:
    description:
      - With O(state=create), first freeze every run of the case in this records root that a play opened and never
        closed (killed, lost controller) once its owner is provably gone, with C(metadata.status=incomplete),
        C(metadata.seal_reason=interrupted) and C(metadata.sealed_by) naming the new run. Returned in RV(sealed);
        runs whose owner still lives are left open and returned in RV(still_open).
    type: bool
    default: false
  kind:
    description:
      - With O(state=create), the kind of run opened (module_utils/record/_runtask.py C(OPEN_KINDS)) - V(fingerprint) and
        V(audit) cover the hosts O(targets) match; V(attempt) and V(collective) cover O(hosts) (the step's nodes; the
        targets given are checked all the same) and live on them too (O(remote_root), default C(/var/tmp/repro-vllm),
        O(lease_dir)); V(summary), V(diff) and V(replay) are the controller's alone (no host, no targets). The kind
        is the run's O(purpose) when none is given, and says whether the console announces the run (O(announce)).
        Left out, the create does as its options say.
      - With O(state=close), which kind of run closes (plugin_utils/close/_runclose.py decides, one function per kind); the
        open's kind closes as the kind of close that stands for it (V(fingerprint) and V(audit) as V(fleet); V(summary),
        V(diff) and V(replay) as V(decisions)).
      - V(fleet) a fingerprint or audit run - fleet.json from each expected host's C(repro.vllm.host_record) result
        (C(reports) of O(inputs); a host without one is C(lost), an unreachable one C(unreachable)), the run sheet,
        status C(ok) or C(failed); the task fails after the freeze by the exit rule (plugin_utils/close/_exitrule.py - a host
        not complete, a compatibility violation, a host audit.json names drifted, unless C(record_only) of O(inputs))
        or when C(error) of O(inputs) is given. RV(closing) is the closing table of what the run holds.
      - V(attempt) one step of the ladder - every node's log classified once together, the verdict and the parts
        (plugin_utils/close/_attempt.py C(close) decides), then the freeze.
      - V(collective) the collective checkpoint - every rank's log of every node classified together, the verdict.
      - V(decisions) a summary or diff run - O(parts) as given, status C(ok).
      - V(incomplete) a run whose play failed after its open - C(incomplete.json) with the real error (redacted, cut at
        2000 characters), status C(incomplete); the task fails after the freeze with that error, naming the run.
    type: str
    choices: [attempt, audit, collective, decisions, diff, fingerprint, fleet, incomplete, replay, summary]
  inputs:
    description:
      - With O(state=close), what the kind decides with, declared here; what the hosts reported reaches the close
        only as O(inputs.reports), which the task that closes the run passes (no host variable is read by name).
      - V(fleet) takes O(inputs.hosts), O(inputs.reports), O(inputs.record_only), O(inputs.violations_fail),
        O(inputs.error), O(inputs.judge), O(inputs.audit), O(inputs.result); V(attempt) O(inputs.step), O(inputs.reports),
        O(inputs.identity), O(inputs.diff), O(inputs.debug), O(inputs.debug_env); V(collective) O(inputs.nodes),
        O(inputs.reports), O(inputs.nproc_per_node), O(inputs.backend), O(inputs.master), O(inputs.timeout_s),
        O(inputs.record_only);
        V(incomplete) O(inputs.error), O(inputs.step), O(inputs.host), O(inputs.task); V(decisions) O(inputs.decision).
      - An input the kind does not take fails the task before anything is written, naming the inputs it takes; one
        left out (null) is not handed on.
    type: dict
    default: {}
    suboptions:
      reports:
        description:
          - What each host reported, host name -> its report. V(fleet) - its registered C(repro.vllm.host_record)
            result (a host without one is C(lost)). V(attempt) - each node's C(started), C(alive), C(stopped),
            C(task_error), C(refusal), the head's also C(exchanges), C(checkpoint), C(api_url), C(argv). V(collective) -
            each node's C(repro.vllm.collective_run) result.
        type: dict
      hosts:
        description: V(fleet) - the hosts expected (default - the hosts the open recorded).
        type: list
        elements: str
      nodes:
        description: V(collective) - the nodes of the checkpoint (default - the hosts the open recorded).
        type: list
        elements: str
      error:
        description:
          - V(fleet) - why the compatibility judge itself failed (the task fails after the freeze).
          - V(incomplete) - the error that stopped the play (redacted with the case key).
        type: str
      decision:
        description:
          - V(decisions) - C(repro_vllm_decision) of the decide role but its C(run); the task sets that fact, with
            this run as C(run).
        type: dict
      made_from:
        description:
          - V(decisions) - the runs the decisions were made from (the run sheet's and the manifest's C(made_from)).
        type: list
        elements: str
      sections:
        description:
          - V(decisions) - the decide role's sections of the run sheet, C(notes.md), which the close writes.
        type: list
        elements: str
      record_only:
        description:
          - V(fleet), V(collective) - C(repro_vllm_record_only), false when not given.
        type: raw
      violations_fail:
        description: V(fleet) - V(false) - the play stops at a violation itself (reproduce.yml and replay.yml). Default V(true).
        type: bool
      judge:
        description:
          - V(fleet) - C(profile), C(profile_file), C(allow_foreign) - when the run's open judged it, the close judges
            every host and the job against that profile first, as M(repro.vllm.compatibility) does, and
            C(compatibility.json) is one of its parts; RV(compatibility) is that action's result. A judge that cannot
            read a host's part leaves the run frozen without it and fails the task after the freeze.
        type: dict
      audit:
        description:
          - V(fleet) - C(baseline), C(previous), C(must_keep_serving), C(records_root), C(case_id) - after the judge,
            the close decides the audit with the judge's compatibility document as the C(repro.vllm.fleet_audit)
            filter does; C(audit.json), C(audit.md) and C(isolation.json) are parts of the close, the drifted hosts it
            names fail the job by the exit rule, and the fact C(repro_vllm_decision) is returned.
        type: dict
      result:
        description:
          - V(fleet) - C(purpose), C(fields), C(package), C(sink), C(job_runs) (the job's runs so far) - when the close
            does not fail, C(sink) is empty and this is not check mode, the close hands the job's result on for this
            run as M(repro.vllm.job_result) does, with RV(handed_on), C(ansible_stats) and the result line in
            RV(console).
        type: dict
      step:
        description: V(attempt) - the attempt role's step. V(incomplete) - the step's name.
        type: raw
      identity:
        description: V(attempt) - the identity of the run (hosts, request).
        type: raw
      diff:
        description: V(attempt) - the comparison with the last good run.
        type: raw
      debug:
        description: V(attempt) - whether the run logged at DEBUG.
        type: bool
      debug_env:
        description: V(attempt) - the debug environment of the run.
        type: dict
      nproc_per_node:
        description: V(collective) - ranks per node.
        type: int
      backend:
        description: V(collective) - the torch.distributed backend.
        type: str
      master:
        description: V(collective) - the rendezvous, C(<address>:<port>).
        type: str
      timeout_s:
        description: V(collective) - the checkpoint's timeout in seconds.
        type: float
      host:
        description: V(incomplete) - the host whose task failed.
        type: str
      task:
        description: V(incomplete) - the task that failed.
        type: str
  remote_root:
    description:
      - With O(state=create), the folder on the managed hosts under which this run's host parts live; the result's
        RV(remote) then says where (C(<remote_root>/runs/<run_uid>)).
    type: str
  lease_dir:
    description:
      - With O(state=create) and O(remote_root), the host-wide folder of server leases; RV(remote) names the run's
        lease file in it (C(<lease_dir>/<run_uid>.json)).
    type: str
  compatibility:
    description:
      - With O(state=create), the compatibility profile this run is judged against, loaded and validated before
        anything is created (an unknown name or a malformed file fails the task naming the key; a file wins over a name); the run
        is recorded as judged against it (its open.json, then the manifest), and O(profile) is not read.
      - Done by the action on the controller, with what M(repro.vllm.compatibility) checks.
    type: dict
    suboptions:
      enabled:
        description:
          - Judge this run (C(repro_vllm_compatibility)). V(false) - the run is recorded as not judged and no profile
            is read. Left out - judged when O(compatibility.profile) or O(compatibility.profile_file) is given.
        type: bool
      profile:
        description: A profile shipped with the collection (C(profiles/<name>.yml)).
        type: str
      profile_file:
        description: The user's own profile file (relative to the working directory).
        type: path
  announce:
    description:
      - With O(state=create), hand back in RV(console) the line saying where the run is recorded, for which hosts,
        against which profile. Runs it sealed are named there always.
    type: bool
    default: false
  older_than:
    description:
      - With O(state=prunable), seconds since a run was frozen before its host folders may be removed
        (playbooks/prune.yml). Default 7 days.
    type: float
    default: 604800
  status:
    description:
      - With O(state=freeze), the run's C(metadata.status) (wins over a C(status) key in O(metadata)).
      - V(ok) every step passed, V(failed) a step failed (the stage says where), V(refused) the run refused to
        start (another live run holds what it needs, a command this collection will not run), V(incomplete) the run
        ended before its close (a task failed, the play was interrupted).
    type: str
    choices: [ok, failed, refused, incomplete]
notes:
  - Secrets are never echoed back; only sizes and hashes of written parts are returned. Redact content
    before writing it (the C(repro.vllm.redact) filter).
  - O(state=close) runs on the controller only (C(delegate_to=localhost), no become) - it reads what every host of
    the play registered; the module run elsewhere refuses it.
seealso:
  - name: Records layout
    description: docs/architecture.md of this collection, section "Records".
    link: https://example.invalid/repro/vllm/blob/main/docs/architecture.md
"""

EXAMPLES = r"""
- name: Start the next run of this case
  repro.vllm.run_record:
    state: create
    root: /var/tmp/repro-records
    case_id: kimi-k3-restarts
  register: run

- name: Start the next run, numbered above the runs the records sink already holds of the case
  repro.vllm.run_record:
    state: create
    root: /var/tmp/repro-records
    case_id: kimi-k3-restarts
    taken: [run-001, run-002]   # the sink's listing: this run becomes run-003 even in an empty records root

- name: Save the fingerprint of this host into the run
  repro.vllm.run_record:
    state: write
    path: "{{ run.path }}"
    part: "hosts/{{ inventory_hostname }}/fingerprint.json"
    json: "{{ ansible_facts.repro_vllm_gpu }}"

- name: Copy the server log into the run
  repro.vllm.run_record:
    state: write
    path: "{{ run.path }}"
    part: "hosts/{{ inventory_hostname }}/logs/server.log"
    src: /var/tmp/vllm-server.log

- name: Freeze the run (manifest with sha256, read-only)
  repro.vllm.run_record:
    state: freeze
    path: "{{ run.path }}"
    collection_version: 0.1.0
    metadata:
      host: "{{ inventory_hostname }}"

- name: Close a run in one task (the last parts, the freeze, the check of what was frozen)
  repro.vllm.run_record:
    state: freeze
    path: "{{ run.path }}"
    parts:
      - part: fleet.json
        json: {hosts: [{host: node1, status: ok}]}
      - part: notes.md
        content: "expected: ready\n"
    verify: true
  delegate_to: localhost
- name: Verify a fetched host record on the controller
  repro.vllm.run_record:
    state: verify
    path: "records/kimi-k3-restarts/run-003/hosts/node1"
  delegate_to: localhost
"""

RETURN = r"""
path:
  description:
    - The run directory (created, or that would be created in check mode), the frozen run, or the verified
      directory.
  returned: when O(state=create), O(state=freeze) or O(state=verify)
  type: str
  sample: /var/tmp/repro-records/kimi-k3-restarts/run-003
run_path:
  description: The run directory written into.
  returned: when O(state=write)
  type: str
  sample: /var/tmp/repro-records/kimi-k3-restarts/run-003
run_id:
  description: Name of the run directory.
  returned: when O(state=create)
  type: str
  sample: run-003
number:
  description: The run number.
  returned: when O(state=create)
  type: int
  sample: 3
run_uid:
  description:
    - The run's own id, 16 random lowercase hex characters. Everything the run puts on a managed host lives under
      C(<remote_root>/runs/<run_uid>/) and its servers' lease is C(<lease_dir>/<run_uid>.json); kept in the manifest.
  returned: when O(state=create)
  type: str
  sample: 3f9a61c0d2b47e18
run_uids:
  description:
    - With O(state=prunable), the run_uids of every run under O(root) (all cases) that is frozen, verifies and was
      frozen longer than O(older_than) ago - the runs whose C(<remote_root>/runs/<run_uid>) folders may go.
  returned: when O(state=prunable)
  type: list
  elements: str
runs:
  description:
    - With O(state=prunable), the same runs (run, run_uid, created).
    - With O(state=interrupted), the open runs under O(root) (every case) whose play is provably gone (case_id,
      run, path, run_uid, hosts, why, sealed_because - what its seal says -, last_written - the unix time of the
      play's last write into the run -,
      interrupted - what its interrupt handler noted -, interrupted_at), the runs C(playbooks/stop.yml) brings the
      host files of into the run before it seals it.
  returned: when O(state=prunable) or O(state=interrupted)
  type: list
  elements: dict
not_verified:
  description: With O(state=prunable), frozen runs that do not verify (run, why); never pruned for.
  returned: when O(state=prunable)
  type: list
  elements: dict
lacking:
  description:
    - With O(state=prunable), the listed runs whose controller copy has no files of some of their hosts (run,
      run_uid, hosts); prune.yml keeps their folders on those hosts unless the run is named.
  returned: when O(state=prunable)
  type: list
  elements: dict
sealed:
  description: Runs of the case that O(seal_interrupted) froze as incomplete (run, path, run_uid, why).
  returned: when O(state=create) and O(seal_interrupted=true)
  type: list
  elements: dict
still_open:
  description: Other open runs of the case whose owner still lives (run, path, run_uid, why); left alone.
  returned: when O(state=create) and O(seal_interrupted=true)
  type: list
  elements: dict
case_id:
  description: The case of the run.
  returned: when O(state=create)
  type: str
  sample: kimi-k3-restarts
kind:
  description: The O(kind) of the run opened or closed, as given.
  returned: when O(kind) is given
  type: str
  sample: attempt
records_root:
  description:
    - The records root the run was created under (a relative root resolved against the working directory); every
      later task reads it from the registered run (C(repro_vllm_run.records_root)).
  returned: when O(state=create)
  type: str
  sample: /var/tmp/repro-records
hosts:
  description: O(hosts), as given.
  returned: when O(state=create) and O(hosts) is given
  type: list
  elements: str
  sample: [node1, node2]
purpose:
  description: O(purpose), as given.
  returned: when O(state=create) and O(purpose) is given
  type: str
  sample: fingerprint
profile:
  description: The profile the run records (C(name), null when not judged, and C(source)), from O(profile).
  returned: when O(state=create)
  type: dict
  sample: {"name": "gb300-kimi-k3", "source": "file"}
console:
  description:
    - The lines the collection's console prints for this task (C(repro.vllm.console) shows them at the default
      verbosity) - with O(state=create), the runs sealed and, with O(announce), where the run is; with
      O(state=close), the compatibility judge's lines and one line per host of a fleet run, and where the record is
      frozen; with O(compatibility), which profile was validated. The action also hands them back as C(msg) (with
      RV(closing) after them) and marks the result to be shown, so any display - Ansible's default, AWX's - shows
      them as the task's result; C(repro.vllm.console) prints them once, without the result.
  returned: with O(state=create) and O(state=close)
  type: list
  elements: str
closing:
  description:
    - With O(state=close) O(kind=fleet), the closing table of what the run holds (a blank line, the head, one line per
      host, then the C(job) row of a violation of the job as a whole), as C(repro.vllm.console) prints it; a host with a
      violation or a drift is never C(ok). In an ok result it is in C(msg) only.
  returned: with O(state=close) O(kind=fleet) when the close failed
  type: list
  elements: str
record_only:
  description: With O(kind=fleet), whether the job only records (the exit rule's reading of C(record_only)).
  returned: with O(state=close) O(kind=fleet)
  type: bool
why:
  description: With O(kind=fleet), why the task fails after the freeze (empty when it does not).
  returned: with O(state=close) O(kind=fleet)
  type: list
  elements: str
recorded:
  description: With O(kind=fleet), what the job would have failed on, recorded only (C(record_only)).
  returned: with O(state=close) O(kind=fleet)
  type: list
  elements: str
remote:
  description:
    - With O(remote_root), where the run lives on every managed host - C(run_dir) (C(<remote_root>/runs/<run_uid>);
      a host's part is C(hosts/<host>) under it), C(lease_file), C(lease) (the identity its servers are leased with -
      C(run_uid), C(case_id), C(run_id), C(controller), C(started)) and C(labels) (its containers' labels).
  returned: when O(state=create) and O(remote_root) is given
  type: dict
status:
  description: With O(state=close), the run's C(metadata.status) (C(ok), C(failed), C(refused), C(incomplete)).
  returned: when O(state=close)
  type: str
fleet:
  description: With O(kind=fleet), fleet.json's C(hosts) (one entry per expected host, its status and detail).
  returned: when O(state=close) and O(kind=fleet)
  type: list
  elements: dict
hosts_pattern:
  description:
    - With O(state=create), the host pattern the run's targets were matched with (O(hosts_pattern), or the one made of
      O(targets)).
  returned: with O(state=create) when a pattern was given or made
  type: str
  sample: "vllm_nodes,!node07"
handed_on:
  description:
    - With O(kind=fleet) and C(result) in O(inputs), true when the close handed the job's result on itself (set_stats,
      as M(repro.vllm.job_result) does; RV(result) is the data handed on).
  returned: when the close handed the result on
  type: bool
result:
  description: The workflow result handed on (C(repro_vllm_result) and the chain keys), as M(repro.vllm.job_result) returns it.
  returned: when RV(handed_on)
  type: dict
compatibility:
  description:
    - With O(kind=fleet) and C(judge) in O(inputs), the compatibility judge's result as M(repro.vllm.compatibility)
      returns it - C(run_path), C(verdict) (C(pass), C(fail), or C(unchecked) when the open judged no profile or in
      check mode), C(lines) (host, fact, required, found, fix) and C(compatibility) (compatibility.json's document).
      Left out when the judge itself failed (the task fails after the freeze with its error).
  returned: when O(state=close), O(kind=fleet) and C(judge) is in O(inputs)
  type: dict
collective:
  description: With O(kind=collective), C(repro_vllm_collective_result) - C(ran), C(run), C(path) and the verdict.
  returned: when O(state=close) and O(kind=collective)
  type: dict
exit:
  description:
    - With O(kind=collective) when the checkpoint failed, the exit rule over it as a failure found (C(fails),
      C(record_only), C(why), C(recorded), C(lines)) and C(msg), the message the play stops with.
  returned: when O(state=close), O(kind=collective) and the checkpoint failed
  type: dict
attempt:
  description: With O(kind=attempt), the attempt's record (its verdict, stage, request and refusal) as plugin_utils/close/_attempt.py decides it.
  returned: when O(state=close) and O(kind=attempt)
  type: dict
collection_version:
  description: The collection version the run records (from this collection's galaxy.yml on the controller).
  returned: always
  type: str
  sample: 0.1.0
part:
  description: The part written, relative to the run.
  returned: when O(state=write)
  type: str
  sample: hosts/node1/fingerprint.json
dest:
  description: Absolute path of the written part.
  returned: when O(state=write)
  type: str
  sample: /var/tmp/repro-records/kimi-k3-restarts/run-003/hosts/node1/fingerprint.json
size:
  description: Size in bytes of the part (as written, or as it would be written in check mode).
  returned: when O(state=write)
  type: int
  sample: 2048
sha256:
  description: SHA-256 hex digest of the part.
  returned: when O(state=write)
  type: str
  sample: 0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0
existed:
  description: Whether the part was there before.
  returned: when O(state=write)
  type: bool
  sample: false
manifest:
  description:
    - The manifest written (O(state=freeze)), that would be written (check mode), or read (O(state=verify)).
  returned: when O(state=freeze) or O(state=verify)
  type: dict
  contains:
    schema_version:
      description: Version of the manifest layout.
      type: int
    collection_version:
      description: The O(collection_version) given at freeze time.
      type: str
    created:
      description: UTC time of the freeze, ISO 8601.
      type: str
    case_id:
      description: The case.
      type: str
    run_id:
      description: The run.
      type: str
    metadata:
      description: The O(metadata) given at freeze time.
      type: dict
    files:
      description: Every file except C(manifest.json), sorted by path, with C(path), C(size) and C(sha256).
      type: list
      elements: dict
manifest_sha256:
  description: The sha256 of C(manifest.json) itself (two copies of a run are the same run when it is the same).
  returned: when O(state=verify)
  type: str
  sample: 9f2c..
manifest_path:
  description: Absolute path of C(manifest.json).
  returned: when O(state=freeze)
  type: str
  sample: /var/tmp/repro-records/kimi-k3-restarts/run-003/manifest.json
written:
  description: The O(parts) written (before the freeze), each with C(part), C(size), C(sha256), C(existed), C(changed).
  returned: when O(state=write) or O(state=freeze) with O(parts)
  type: list
  elements: dict
  sample: [{"part": "fleet.json", "size": 494, "sha256": "0f1e..", "existed": false, "changed": true}]
ok:
  description: Whether every listed file is present with its size and sha256 and nothing was added.
  returned: when O(state=verify), or O(state=freeze) with O(verify)
  type: bool
  sample: true
record:
  description:
    - "With O(state=close), where the record is as a progress line says it - C(record <path> frozen, <n> files
      verified), or C(record <path> (check mode: nothing written))."
  returned: with O(state=close) when the close did not fail before its freeze
  type: str
checked:
  description: Number of files hashed.
  returned: when O(state=verify), or O(state=freeze) with O(verify)
  type: int
  sample: 12
mismatched:
  description: Files whose size or sha256 differ, with expected and actual values.
  returned: when O(state=verify), or O(state=freeze) with O(verify)
  type: list
  elements: dict
  sample: [{"path": "stages.json", "expected_size": 10, "actual_size": 11, "expected_sha256": "ab..", "actual_sha256": "cd.."}]
missing:
  description: Files in the manifest that are gone.
  returned: when O(state=verify), or O(state=freeze) with O(verify)
  type: list
  elements: str
  sample: ["hosts/node1/env.json"]
unexpected:
  description: Files present but not in the manifest (and anything that is not a regular file).
  returned: when O(state=verify), or O(state=freeze) with O(verify)
  type: list
  elements: str
  sample: ["hosts/node1/extra.txt"]
not_matched:
  description:
    - With O(state=create) refused on the controller, the hosts O(hosts_pattern) names that match nothing, each
      C({name, reason}), reason C(not_in_inventory) or C(outside_limit) (empty when the pattern matches no host at
      all). The failed result also carries O(hosts) as given.
  returned: when O(state=create) is refused for its targets
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.repro.vllm.plugins.module_utils.record import _runtask


def main():
    module = AnsibleModule(argument_spec=_runtask.ARGUMENT_SPEC, required_if=_runtask.REQUIRED_IF,
                           mutually_exclusive=_runtask.MUTUALLY_EXCLUSIVE, supports_check_mode=True)
    result, error = _runtask.run_task(module.params, check_mode=module.check_mode)
    if error:
        module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
