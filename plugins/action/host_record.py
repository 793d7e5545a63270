# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of repro.vllm.host_record (documentation: plugins/modules/host_record.py, docs/records.md)."""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
import traceback

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

from ansible_collections.repro.vllm.plugins.plugin_utils.close._fleet import host_summary, host_summary_line
from ansible_collections.repro.vllm.plugins.module_utils.record import _hostrecord, _record
from ansible_collections.repro.vllm.plugins.module_utils.common import _redact
from ansible_collections.repro.vllm.plugins.module_utils.server import _service

MODULE = "repro.vllm.host_record"
# the production server (option service): read on the host first, its record and logs become parts of this host's part
SERVICE_MODULE = "repro.vllm.served_process"
_TRACE_CHARS = 4000

# the module's documented options (_hostrecord's one spec); only HOST_SPEC's are passed on to the module
ARGUMENT_SPEC = dict(_hostrecord.HOST_SPEC, **_hostrecord.CONTROLLER_SPEC)
ARGUMENT_SPEC.update(
    service_command_timeout=dict(type="float", default=_service.DEFAULT_TIMEOUT),
    service_max_log_bytes=dict(type="int", default=_service.DEFAULT_LOG_BYTES),
    service_required=dict(type="bool", default=False),
)


class _PartRefused(Exception):
    """The part cannot be recorded as asked; ``str()`` says why and what to do."""


class ActionModule(ActionBase):
    # nothing is put on the host: the module is piped (pipelining) and staged files are fetched by their own path, so
    # no remote temporary folder is made and removed around every part (two shell commands per host and task, which
    # cost most of the fingerprint's time over the bare gpu_facts task on a real host); without pipelining,
    # _execute_module still makes the folder it needs
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    # ------------------------------------------------------------------------------------------ entry
    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        _valid, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        host = task_vars.get("inventory_hostname") or self._task.get_name()
        ctx = self._context(args, host)
        if ctx.get("error"):
            if ctx.get("record_error"):  # the run is open: the refusal goes into the host's part
                self._record_problem(dict(ctx, error=None), "failed", ctx["error"])
            result.update(failed=True, msg=ctx["error"], host_status="failed", reasons=[ctx["error"]],
                          summary={"host": host, "status": "failed", "detail": ctx["error"]})
            return result
        recorded = {"done": False}
        try:
            out = self._record(ctx, args, task_vars)
            recorded["done"] = True
            result.update(out)
            return result
        except AnsibleConnectionFailure as exc:
            return self._not_recorded(result, ctx, recorded, "unreachable", "%s: unreachable while recording stage "
                                      "%s: %s" % (host, ctx["stage"], _redact.redact_text(str(exc))))
        except (_PartRefused, _record.RecordError) as exc:
            return self._not_recorded(result, ctx, recorded, "failed", "%s: %s" % (host, exc))
        except Exception as exc:  # pylint: disable=broad-except
            msg = "%s: recording stage %s failed on the controller: %s: %s" % (host, ctx["stage"], type(exc).__name__, exc)
            return self._not_recorded(result, ctx, recorded, "failed", msg, trace=traceback.format_exc())
        finally:
            if not recorded["done"]:
                # the task timeout (or an interrupt) stopped us in the middle: leave the reason in the record
                self._record_problem(ctx, "failed", "%s: stage %s was stopped before its part was recorded (task "
                                     "timeout %ss, or interrupted); raise the task timeout or lower the command "
                                     "timeout" % (host, ctx["stage"], self._task.timeout))

    # ------------------------------------------------------------------------------------------ checks
    def _context(self, args, host):
        run_path = os.path.abspath(args["run_path"])
        part_dir = args["part_dir"] or "hosts/%s" % host
        ctx = {"host": host, "run_path": run_path, "part_dir": part_dir, "stage": args["stage"],
               # the values the operator declared secret: redacted in every part on the controller (never sent to the
               # host, never in a module's parameters whose result is recorded)
               "secrets": _redact.declared(args["secrets"]),
               "part_abs": os.path.join(run_path, *part_dir.split("/")),
               "case_id": os.path.basename(os.path.dirname(run_path)), "run_id": os.path.basename(run_path),
               "version": _record.read_collection_version(), "check": bool(self._play_context.check_mode)}
        timeout = self._task.timeout
        if timeout and args["command_timeout"] >= timeout:
            ctx["error"] = ("%s: command_timeout %ss must be smaller than the task timeout %ss, or the task is "
                            "stopped while a command still runs and the host's real state is lost; lower "
                            "repro_vllm_command_timeout or raise repro_vllm_task_timeout"
                            % (host, args["command_timeout"], timeout))
            ctx["record_error"] = True
        elif timeout and args["service"] and args["service_command_timeout"] >= timeout:
            ctx["error"] = ("%s: repro_vllm_service_command_timeout %ss must be smaller than the task timeout %ss; lower "
                            "it or raise repro_vllm_task_timeout" % (host, args["service_command_timeout"], timeout))
            ctx["record_error"] = True
        elif timeout and "collect_env" in args["gather"] and args["collect_env_timeout"] >= timeout:
            ctx["error"] = ("%s: collect_env_timeout %ss must be smaller than the task timeout %ss; lower "
                            "repro_vllm_collect_env_timeout or raise repro_vllm_task_timeout"
                            % (host, args["collect_env_timeout"], timeout))
            ctx["record_error"] = True
        elif args["log_max_bytes"] < 1024:
            ctx["error"] = "%s: log_max_bytes %s is too small; keep at least 1024 bytes of each file" % (
                host, args["log_max_bytes"])
            ctx["record_error"] = True
        elif not ctx["check"]:
            try:
                _record.resolve_part(run_path, part_dir + "/x")
            except _record.RecordError as exc:
                ctx["error"] = "%s: part_dir %r: %s" % (host, part_dir, exc)
            else:
                if not os.path.isdir(run_path):
                    ctx["error"] = ("%s: run %s does not exist on the controller; open the run first (repro.vllm.record "
                                    "open, or run_record state=create)" % (host, run_path))
                elif _record.is_frozen(run_path):
                    ctx["error"] = "%s: %s" % (host, _record.frozen_message(run_path))
                elif _record.is_frozen(ctx["part_abs"]):
                    ctx["error"] = ("%s: %s is already recorded and frozen in this run; a part is recorded once, "
                                    "use another part_dir or a new run" % (host, part_dir))
        return ctx

    # ------------------------------------------------------------------------------------------ the record
    def _record(self, ctx, args, task_vars):
        become = bool(getattr(self._play_context, "become", False))
        mod_args = {k: args[k] for k in _hostrecord.HOST_SPEC}
        mod_args.update(run_path=ctx["run_path"], staging_label="%s-%s-%s" % (ctx["case_id"], ctx["run_id"], ctx["host"]))
        # the case's redaction key (<records_root>/<case_id>/.redact.key, never in a run): the host redacts with it,
        # so equal secrets give equal markers across hosts and runs; it travels as a no_log argument only
        ctx["key"] = None if ctx["check"] else _redact.load_case_key(os.path.dirname(ctx["run_path"]))
        if ctx["key"]:
            mod_args["redact_key"] = ctx["key"].decode("ascii")
        if become:  # the connection user may not read the become user's staging folder: everything inline
            mod_args["inline_max_bytes"] = max(args["inline_max_bytes"], args["log_max_bytes"] * 2)
        remote = {}
        if args["service"]:
            # the production server first (read only on the host), as the service role did before the fingerprint
            served = self._execute_module(module_name=SERVICE_MODULE, task_vars=task_vars, module_args={
                "service": args["service"], "command_timeout": args["service_command_timeout"],
                "max_log_bytes": args["service_max_log_bytes"], "fail_on_missing": args["service_required"]})
            if served.get("unreachable"):
                raise AnsibleConnectionFailure(served.get("msg") or "unreachable")
            if served.get("failed"):
                return self._module_failed(ctx, served, what="the production server (repro_vllm_service) was not read")
            remote["service"] = {"record": served.get("record") or {}, "logs": served.get("logs") or {}}
        if args["gather"] or args["files"]:
            remote = dict(self._execute_module(module_name=MODULE, module_args=mod_args, task_vars=task_vars),
                          service=remote.get("service"))
            if remote.get("unreachable"):
                raise AnsibleConnectionFailure(remote.get("msg") or "unreachable")
            if remote.get("failed"):
                return self._module_failed(ctx, remote)
        status, reasons = _hostrecord.host_status(remote.get("gpu"), remote.get("container"))
        parts, notes, missing = self._parts(ctx, args, remote)
        bad_files = [f for f in remote.get("files") or [] if f.get("status") == "error"]
        if bad_files:
            raise _PartRefused("; ".join(f.get("msg", f.get("src")) for f in bad_files) + " (a required file of stage "
                               "%s; check that the stage produced it)" % ctx["stage"])
        summary = self._summary(ctx, remote, status, reasons)
        service = (remote.get("service") or {}).get("record")
        console = [_service.progress_line(ctx["host"], service)] if service else []
        if ctx["check"]:
            return {"changed": True, "host_status": status, "reasons": reasons, "part_path": ctx["part_abs"],
                    "missing_files": missing, "summary": summary, "collection_version": ctx["version"],
                    "staging": None, "console": console,
                    "msg": "check mode: would record %s" % ", ".join(sorted(parts))}
        self._scan(ctx, parts)
        for name in sorted(parts):
            _record.write_part(ctx["run_path"], "%s/%s" % (ctx["part_dir"], name), content=parts[name])
        frozen = _record.freeze(ctx["part_abs"], ctx["version"], case_id=ctx["case_id"], run_id=ctx["run_id"],
                                metadata=dict(args["metadata"], host=ctx["host"], stage=ctx["stage"], status=status,
                                              reasons=reasons), file_notes=notes)
        checked = _record.verify(ctx["part_abs"])
        if not checked["ok"]:
            raise _PartRefused("the part %s does not verify right after it was frozen: %s"
                               % (ctx["part_abs"], _record.describe_problems(checked)))
        staging = self._cleanup(remote.get("staging_dir"), args["remove_src"], mod_args, task_vars,
                                args.get("remove_empty_parents") or 0)
        out = {"changed": True, "host_status": status, "reasons": reasons, "part_path": ctx["part_abs"],
               "files": frozen["manifest"]["files"], "missing_files": missing, "summary": summary,
               "collection_version": ctx["version"], "staging": staging, "msg": self._line(ctx, summary, frozen),
               "console": console}
        if service:
            out["service_status"] = service.get("status")
        container = remote.get("container")
        if container and not container.get("skipped"):
            # the image as the play resolved it at its fingerprint: the attempts run that image, by digest
            out["ansible_facts"] = {"repro_vllm_container": container}
        return out

    def _parts(self, ctx, args, remote):
        """{relative name: bytes} of the part, {name: manifest notes}, [missing optional files]."""
        parts, notes, missing = {}, {}, []
        basics = remote.get("basics")
        if basics or remote.get("gpu") is not None:
            b = basics or {}
            parts["fingerprint.json"] = _record.render_json({
                "host": ctx["host"], "collected_at": b.get("collected_at"), "os": b.get("os"),
                "os_release": b.get("os_release"), "kernel": b.get("kernel"), "machine": b.get("machine"),
                "python": b.get("python"), "gpu": remote.get("gpu") or {}})
        if basics:
            parts["env.json"] = _record.render_json(basics.get("env") or {})
        if remote.get("container") is not None:
            parts["container.json"] = _record.render_json(remote["container"])
        if remote.get("collect_env") is not None:
            parts["collect_env.json"] = _record.render_json(remote["collect_env"])
        served = remote.get("service")
        for p in _service.record_parts(served["record"], served["logs"]) if served else []:
            parts[p["part"]] = _record.render_json(p["json"]) if "json" in p else p["content"].encode("utf-8")
        for name, value in (args["data"] or {}).items():
            value = _redact.redact_declared(_redact.redact_data(value, key=ctx.get("key")), ctx["secrets"], ctx.get("key"))
            parts[name] = _record.render_json(value)
        for f in remote.get("files") or []:
            if f.get("status") == "missing":
                missing.append(f["src"])
                continue
            if f.get("status") != "ok" or f.get("transfer") == "planned":
                continue
            data = self._bring_back(ctx, f)
            notes[f["part"]] = {"original": f.get("original"), "cut": f.get("cut"), "source": f["src"],
                                "redacted_on_host": bool(f.get("redacted"))}
            if ctx["secrets"] and f.get("redact", True):
                text = data.decode("utf-8", errors="surrogateescape")
                declared = _redact.redact_declared(text, ctx["secrets"], ctx.get("key"))
                if declared != text:
                    data = declared.encode("utf-8", errors="surrogateescape")
                    notes[f["part"]]["declared_secrets_redacted"] = True
            parts[f["part"]] = data
        for name in parts:
            _record.resolve_part(ctx["run_path"], "%s/%s" % (ctx["part_dir"], name))  # refuses '..', absolute paths
        return parts, notes, missing

    def _bring_back(self, ctx, f):
        """The bytes of one prepared host file, checked against the sha256 the host computed."""
        if f.get("transfer") == "inline":
            data = base64.b64decode(f.get("content_b64") or "")
        else:
            fd, tmp = tempfile.mkstemp(prefix=".fetch-", dir=os.path.dirname(ctx["run_path"]))
            os.close(fd)
            try:
                self._connection.fetch_file(f["staged_path"], tmp)
                with open(tmp, "rb") as fh:
                    data = fh.read()
            finally:
                os.unlink(tmp)
        digest = hashlib.sha256(data).hexdigest()
        if digest != f.get("sha256") or len(data) != f.get("size"):
            raise _PartRefused(
                "%s from the host arrived with sha256 %s (%d bytes) but the host sent %s (%s bytes); the transfer was "
                "damaged, run the stage's record again" % (f["src"], digest, len(data), f.get("sha256"), f.get("size")))
        return data

    def _scan(self, ctx, parts):
        # the redactor's own scanner, a second look on the controller: the redaction itself happened on the host
        found = []
        for name in sorted(parts):
            hits = _redact.scan_secrets(parts[name].decode("utf-8", errors="replace"))
            if hits:
                found.append("%s (lines %s)" % (name, ", ".join("%s: %s" % (n, kind) for n, kind in hits[:10])))
        if found:
            raise _PartRefused("the part still holds secret shapes after redaction on the host: %s; it was not "
                               "written. Fix the redaction rule (plugins/module_utils/common/_redact.py) or keep the file out "
                               "of the stage's files" % "; ".join(found))

    def _cleanup(self, staging_dir, remove_src, mod_args, task_vars, parents=0):
        paths = ([staging_dir] if staging_dir else []) + list(remove_src or [])
        if not paths:
            return None
        res = self._execute_module(module_name=MODULE, task_vars=task_vars,
                                   module_args={"cleanup": paths, "run_path": mod_args["run_path"],
                                                "remove_empty_parents": parents})
        return {"dir": staging_dir, "removed": res.get("removed") or [],
                "errors": res.get("errors") or ([res.get("msg")] if res.get("failed") else [])}

    # ------------------------------------------------------------------------------------------ failures
    def _module_failed(self, ctx, remote, what=None):
        msg = _redact.redact_text(str(remote.get("msg") or "the module failed without a message"))
        detail = {}
        for key in ("module_stderr", "module_stdout", "exception"):
            if remote.get(key):
                detail[key] = _redact.redact_text(str(remote[key])[-_TRACE_CHARS:])
        full = "%s: %s: %s" % (ctx["host"], what or "stage %s failed on the host" % ctx["stage"], msg)
        self._record_problem(ctx, "failed", full, extra=detail)
        return {"failed": True, "msg": full, "host_status": "failed", "reasons": [full], "part_path": ctx["part_abs"],
                "summary": {"host": ctx["host"], "status": "failed", "detail": full},
                "collection_version": ctx["version"]}

    def _not_recorded(self, result, ctx, recorded, status, msg, trace=None):
        """The task's result when the part could not be recorded (``status`` failed or unreachable), the reason
        recorded in the host's part first (_record_problem)."""
        self._record_problem(ctx, status, msg, trace=trace)
        recorded["done"] = True
        result.update({"failed" if status == "failed" else "unreachable": True}, msg=msg, host_status=status,
                      reasons=[msg], part_path=ctx["part_abs"],
                      summary={"host": ctx["host"], "status": status, "detail": msg})
        return result

    def _record_problem(self, ctx, status, msg, trace=None, extra=None):
        """failed.json / unreachable.json in the host's part, frozen; never raises (the task's own error wins)."""
        if ctx.get("check") or ctx.get("error") or not ctx.get("part_abs"):
            return
        try:
            if _record.is_frozen(ctx["part_abs"]):
                return
            body = {"host": ctx["host"], "status": status, "stage": ctx["stage"], "msg": _redact.redact_text(msg),
                    "case_id": ctx["case_id"], "run_id": ctx["run_id"]}
            body.update(extra or {})
            if trace:
                body["controller_traceback"] = _redact.redact_text(trace[-_TRACE_CHARS:])
            body = _redact.redact_declared(body, ctx.get("secrets"))
            _record.write_part(ctx["run_path"], "%s/%s.json" % (ctx["part_dir"], status), data=body, overwrite=True)
            _record.freeze(ctx["part_abs"], ctx["version"], case_id=ctx["case_id"], run_id=ctx["run_id"],
                           metadata={"host": ctx["host"], "stage": ctx["stage"], "status": status})
        except (OSError, _record.RecordError) as exc:
            self._display.warning("repro.vllm.host_record: could not record the %s state of %s in %s: %s"
                                  % (status, ctx["host"], ctx["part_abs"], exc))

    # ------------------------------------------------------------------------------------------ summary
    @staticmethod
    def _line(ctx, summary, frozen):
        if "gpu_present" in summary:
            return "%s | %s" % (ctx["stage"], host_summary_line(summary))
        return "%s: %s | stage %s | %d file(s) frozen in %s%s" % (
            ctx["host"], summary["status"], ctx["stage"], len(frozen["manifest"]["files"]), ctx["part_dir"],
            " (%s)" % summary["detail"] if summary.get("detail") else "")

    @staticmethod
    def _summary(ctx, remote, status, reasons):
        if remote.get("gpu") is not None:
            b = remote.get("basics") or {}
            fp = {"host": ctx["host"], "gpu": remote["gpu"], "os": b.get("os"), "kernel": b.get("kernel")}
            container = remote.get("container")
            summary = host_summary(fp, container if container and not container.get("skipped") else {})
        else:
            summary = {"host": ctx["host"], "status": "ok", "detail": None}
        if status != "ok":
            summary.update(status=status, detail="; ".join(reasons))
        return summary
