"""The collection's one classifier of vLLM logs: the first failing stage.

Every front (the ``log_stage`` module, the ``log_stage`` filter, the roles that capture a server log) calls
:func:`classify_files` or :func:`classify_text` here, so they all give the same answer.  Here: the scan of a file
(``_Scan``, a streaming state machine fed one line at a time) and the public functions; the data that changes
with vLLM releases is in ``_logstage_rules``, ``_logstage_frames`` and ``_logstage_messages``, one line's parsing
in ``_logstage_parse``, which bytes are parsed in ``_logstage_prefilter`` and the answer in ``_logstage_answer``.
How it reads a log (details and the rule list are in ``docs/classifier.md``):

* **Streaming.** A file is read once, in binary blocks; memory holds one block, the bounded context of the
  tracebacks that are open and a bounded list of candidate errors, never the log.
* **Rules.** Stage progress comes from vLLM's own marker lines; failures from signatures built from vLLM,
  PyTorch, NCCL, CUDA and container-runtime source strings.  The root cause is the earliest failure in time;
  wrapper errors are consequences.  A failure's stage comes from the message's own meaning where that is
  unambiguous, else from the traceback's frames (which vLLM function was running), else from the markers, and
  it is never before the furthest stage the log proves reached; ``stage_basis`` in the answer says which.
* **NCCL communicators** are followed by their ``Init START`` / ``Init COMPLETE`` / ``Destroy COMPLETE`` lines.
* **Stop cutoff.** A per-file ``until`` (lines) sets apart what was printed after the server was stopped.
* **What is around a line** comes off before it is parsed: what a tool that gathered the log put there (grep's
  numbers, a node's prefix, Docker's or journald's JSON, Ansible's result), then what a paste did (an indentation
  given to the whole, read by ``sniff`` before any line; a quote, markup, colour codes), then the collectors'
  wrappers (``strip_wrappers``); ``benchmarks/log_stage_wrapped.py`` measures that an answer does not change.

Why one file (over 1,000 lines): ``_Scan`` is one state machine (open tracebacks, candidates, markers, the stop
cutoff) whose handlers share its state line by line; split across files they would pass that state around instead.

Standard library only; imports on Python 3.9.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import gzip
import io
import os
import re

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_rules import (
    ACCESS_5XX_RX, ACCESS_ERROR, ANSWER_STAGES, AT_DEBUG, AT_INFO, AT_LEAST, AT_LEAST_OR_UNKNOWN, AT_WARNING,
    BASIS_FRAMES, BASIS_INFERRED, BASIS_MARKERS, BASIS_MESSAGE, CAUSE_CLASSES, CAUSES, CLASS_DEFAULT_STAGE,
    CLASS_FLOOR, CLASS_KEYWORDS, CONF_HIGH, CONF_LOW, CONF_MEDIUM, CONFIG_REFUSAL_RX, CONSEQUENCE, CUT_TRACEBACK,
    DIAGNOSTIC, ENTRY, ERROR_CLASSES, ERROR_LINE, ERROR_WORDS, ERROR_WORDS_RX, EXIT, FAILURE, FIXED,
    FIXED_UNTIL_READY, FMT_C10, FMT_NCCL, FMT_PYLOG, FMT_RAW, FMT_UVICORN, FMT_VLLM, GENERIC, HANG_HINT, HEADER,
    KV_CACHE_EMPTY_RX, LEVEL_WORD_RX, MARKERS, ORIGINAL_ERROR_KEY, READY, SERVING_LOGGER_FILES, SIGNATURES,
    STAGE_RANK, STAGE_WORDS, STAGES, USUAL_STAGE_LOW, VICTIM, WARNING_HINT, WEAK_CONSEQUENCE, WHERE, WHERE_OR)
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_messages import message_stage
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_frames import (
    CALLER_RPC, CALLS, DEVICE_QUERY, DEVICE_QUERY_PATHS, EXECUTOR_CALLS, FRAME_FILES, FRAMES, METHOD_MESSAGES, NOT_SERVING_FILES,
    SERVING_FRAMES, SHARED_SERVING_FRAMES, RPC_FUNCS, SOURCE_LINES, STARTUP_FUNC_WORDS, STARTUP_FUNCS, WORKER_STEPS)
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_parse import (
    ANSIBLE_BLOCK_RX, ANSIBLE_RESULT_RX, ASYNCIO_CB_RX, CARETS_RX, CARET_ANSI_RX, CHAIN, CODE_STARTS, DESCRIBE_FIELD_RX,
    EXC_RX, GLUED_RX, IPY_SOURCE_RX, IPY_TB_RX, JOINED_WORDS, JSON_RECORD_KEYS, LEVEL_DEBUG, LEVEL_ERROR, LEVEL_INFO,
    LEVEL_RAW, LEVEL_WARNING, MARKUP_RX, MAX_COMMS, MONTH_INITIALS, NCCL_COMM_RX, NODE_FIRST_LINES, ORPHAN_ANSI_RX,
    PROCESS_HDR_RX, PYTEST_E_RX, PYTEST_FRAME_RX, PYTEST_SRC_RX, QUOTE_RX, RAY_REPEAT_RX, RSYSLOG_ESCAPES,
    RSYSLOG_ESC_RX, SUBJECT_RX, TB_START, TEE_RX, Line, adhoc_blocks, ansible_output, clean, collective_stage, cut,
    cut_record, dated_lines, frame_line, grep_prefix, joined_cuts, json_record, last_ts, match_tkey, node_prefix,
    parse_line, paste_indent, strip_wrappers)
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_prefilter import (
    MARK_ANCHORS, STATIC_ANCHORS, scan_stream)
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_answer import (
    KIND_NAME, MAX_AFTER_STOP, build_answer)

__all__ = ("ANSWER_STAGES", "ERROR_CLASSES", "STAGES", "LogStageError", "cause_stage", "classify_files",
           "classify_text", "classify_texts", "collective_stage", "expand_paths", "frame_stage", "match_signature",
           "until_list")

FULL_PARSE_BYTES = 4 * 1024 * 1024  # a log up to this size (a paste, a short run) is parsed line by line
_MAX_CANDIDATES = 200               # per file, active candidate errors kept
_MAX_RECOVERED = 10
_MAX_HINTS = 10
_MAX_MSG_LINES = 20                 # message lines kept after an exception line
_MAX_CONTEXT = 12                   # lines of context returned with an error
_TB_IDLE_CLOSE = 60                 # foreign lines after which a quiet traceback is closed
_TB_FRAMES_CLOSE = 400              # foreign lines after which an unfinished traceback is closed
_MAX_STREAMS = 64
_RANK = STAGE_RANK
# torchrun's agent after its workers succeeded (torch/distributed/elastic/agent/server/api.py; seen in 2.13 and 1.x)
_EXIT_BARRIER = "Error waiting on exit barrier"
# Ray's error for a remote task or actor call (ray/exceptions.py RayTaskError: "RayTaskError(<cause>): ray::<actor>.
# <method>() (pid=..., ip=...)"), printed as a line of its own with the remote traceback after it: a wrapper whose
# frames follow (round 19), read as a header is
_RAY_TASK_HDR_RX = re.compile(r"RayTaskError\(\w+\): .{0,12}ray::[\w.:-]+\(\)")
_BARRIER_NEAR = 80                  # lines from the store client's warning (and its C++ frames) to that record
# (round 75) vLLM's own record of a stop signal (v1/engine/core.py's signal handler "[shutdown] EngineCore: trigger
# received signal=%s"; the API server's "[shutdown] API server: shutdown triggered", logged by its SIGINT/SIGTERM
# handler only): after the server was ready the stop came from outside (an operator, systemd, Kubernetes, another
# job's cleanup) and what follows is its teardown - the output handler racing the stop logs EngineDeadError
_STOP_SIGNAL_RX = re.compile(r"\[shutdown\] (?:EngineCore: trigger received signal=SIG|API server: shutdown triggered)")
# (round 43) abseil's failure-signal report, which Ray installs in its processes and which then calls the handler
# before it (faulthandler's): "*** SIGSEGV received at time=N on cpu N ***", "PC: @ ...", "@ ..." frames (and Ray's
# logging.cc copies of them) just above faulthandler's "Fatal Python error: ..." are the same crash
_SIGNAL_DUMP_RX = re.compile(r"^(?:\*\*\* SIG[A-Z]+ received at time=|PC: @ |@ )")
_SIGNAL_DUMP_NEAR = 40               # lines from abseil's report to faulthandler's


# --------------------------------------------------------------------------------------------------------------
# the rules, compiled
# --------------------------------------------------------------------------------------------------------------

class Signature(object):
    """One row of :data:`SIGNATURES`, compiled: ``match(text)`` tests the key, then the regex."""

    __slots__ = ("kind", "key", "rx", "cls", "placement", "stage", "flags", "hint", "sid", "usual_conf")

    def __init__(self, sid, kind, key, rx, cls, placement, stage, flags, hint):
        self.sid = sid
        self.kind = kind
        self.key = key
        self.rx = re.compile(rx) if rx else None
        self.cls = cls
        self.placement = placement
        self.stage = stage
        self.flags = frozenset(flags)
        self.hint = hint
        self.usual_conf = CONF_LOW if key in USUAL_STAGE_LOW else CONF_MEDIUM

    def match(self, text):
        """True when ``text`` carries this signature."""
        if self.key not in text:
            return False
        return self.rx is None or self.rx.search(text) is not None


class Marker(object):
    """One row of :data:`MARKERS`, compiled."""

    __slots__ = ("stage", "rank", "key", "rx", "fmt", "role")

    def __init__(self, stage, role, fmt, key, rx=None):
        self.stage = stage
        self.rank = _RANK[stage]
        self.role = role
        self.fmt = fmt
        self.key = key
        self.rx = re.compile(rx) if rx else None


_SIGS = tuple(Signature(i, *row) for i, row in enumerate(SIGNATURES))
_KIND_ORDER = {CONSEQUENCE: 1, WEAK_CONSEQUENCE: 1, DIAGNOSTIC: 1, VICTIM: 2, HEADER: 3, FAILURE: 4,
               HANG_HINT: 5, WARNING_HINT: 6}
_LEVEL_FLAG = {LEVEL_WARNING: AT_WARNING, LEVEL_INFO: AT_INFO, LEVEL_DEBUG: AT_DEBUG}
# match_signature's levels: the names above, or the letters E, W, I, D
_LEVEL_ALIASES = {"E": LEVEL_ERROR, "W": LEVEL_WARNING, "I": LEVEL_INFO, "D": LEVEL_DEBUG}


def _sigs_for(level):
    picked = [s for s in _SIGS if level == LEVEL_ERROR or _LEVEL_FLAG[level] in s.flags]
    picked.sort(key=lambda s: (_KIND_ORDER[s.kind], GENERIC in s.flags, s.sid))
    return tuple(picked)


_SIGS_BY_LEVEL = dict((lvl, _sigs_for(lvl)) for lvl in (LEVEL_ERROR, LEVEL_WARNING, LEVEL_INFO, LEVEL_DEBUG))
_FAILURE_SIGS = dict((lvl, tuple(s for s in sigs if s.kind == FAILURE)) for lvl, sigs in _SIGS_BY_LEVEL.items())


def match_signature(text, level=LEVEL_ERROR):
    """The first signature that matches ``text`` at ``level`` (error, warning, info, debug; or E, W, I, D), or None."""
    for s in _SIGS_BY_LEVEL.get(_LEVEL_ALIASES.get(level, level), ()):
        if s.match(text):
            return s
    return None


def _match_failure(text, level):
    """The first failure signature (not a wrapper) that matches ``text``, or None."""
    for s in _FAILURE_SIGS.get(level, ()):
        if s.match(text):
            return s
    return None


_MARKS = tuple(Marker(*row) for row in MARKERS)
_MARKS_BY_FMT = {}
for _mk in _MARKS:
    if _mk.fmt != FMT_NCCL:
        _MARKS_BY_FMT.setdefault(_mk.fmt, []).append(_mk)
_MARKS_NCCL = [mk for mk in _MARKS if mk.fmt == FMT_NCCL][0]

# frame function -> ((path part, stage), ...); a function named in a source or logger line (no path): the stage its
# rows agree on (a name whose rows disagree - ``__init__``: a config class, a communicator, ... - names none)
_FRAME_STAGES = {}
for _func, _part, _stage, _source in FRAMES:
    _FRAME_STAGES.setdefault(_func, []).append((_part, _stage))
_NAME_STAGE = dict((f, rows[0][1]) for f, rows in _FRAME_STAGES.items() if len(set(st for _p, st in rows)) == 1)
_METHOD_RXS = tuple(re.compile(rx) for rx in METHOD_MESSAGES)
_EXECUTOR_CALL_RX, _CALLS_RX = re.compile(EXECUTOR_CALLS), re.compile(CALLS)
_KV_EMPTY_RX = re.compile(KV_CACHE_EMPTY_RX)
# round 29: a caller's call of one of LLM's request methods (vllm/entrypoints/llm.py 0.2 -> current: generate, chat,
# encode, embed, classify, score, reward, beam_search), read where the next frame is vLLM's own
_LLM_CALL_RX = re.compile(r"\.(?:generate|chat|encode|embed|classify|score|reward|beam_search)\(")
# IPython's frame line the paste's end cut inside its path (``File /opt/.../site-package``; Python's own cut frame
# is a frame: frame_line): a frame, never the exception
_CUT_FRAME_RX = re.compile(r'^File \[?[/~.][^\s,":]*$')
_FRAME_FILES = tuple((part, stage) for part, stage, _source in FRAME_FILES)
# (round 61) a frame of vLLM's or of a platform plugin's package (vllm/, vllm_ascend/, vllm-omni/, ...), and the words
# of a caller's method that sets the engine up rather than using it
_PKG_VLLM_RX = re.compile(r"(?:^|[/\\])vllm(?:[_-]\w+)?[/\\]|tpu_inference[/\\]")
_CALLER_STARTUP_RX = re.compile(r"init|warm_?up|capture|profile|dummy")
_RPC_WRAPPER_RX = re.compile(r"[/\\](?:torch[/\\]utils[/\\]_contextlib|contextlib|functools)\.py$")


def frame_stage(func, path):
    """The stage of a traceback frame (function ``func`` in file ``path``), or None when it is not mapped.  A module's
    own code (``<module>``: the module being imported) is not the stage of the functions its file holds (round 20)."""
    return _stage_by_path(_FRAME_STAGES.get(func), path) or (
        None if func == "<module>" else _stage_by_path(_FRAME_FILES, path))


def _source_stage(stripped, calls=False):
    """The stage of a traceback's source line that only one vLLM function prints (SOURCE_LINES), or of the worker
    method an executor's call names (EXECUTOR_CALLS), or (``calls``: a vLLM frame's line) of the method it calls
    (CALLS; its cuda_init yields to later frames, as a device query); names are looked up in FRAMES, rows agreeing."""
    stage = next((stage for key, stage, _src in SOURCE_LINES if key in stripped), None)
    m = _EXECUTOR_CALL_RX.search(stripped) if stage is None and "(" in stripped else None
    m = m or (_CALLS_RX.match(stripped) if calls and stage is None else None)
    named = _NAME_STAGE.get(m.group(1)) if m is not None else None
    return stage if named is None else DEVICE_QUERY if calls and named == "cuda_init" else named


def _stage_by_path(rows, path):
    """The stage of the first (path part, stage) row whose part is in ``path``, or None."""
    path = path.replace("\\", "/")
    for part, stage in rows or ():
        if part in path:
            return stage
    return None


def _method_stage(text):
    """The stage of the worker method a logger line names (``... while processing method load_model``), when every
    FRAMES row of that name agrees."""
    for rx in _METHOD_RXS:
        m = rx.search(text)
        if m is not None and m.group(1) in _NAME_STAGE:
            return _NAME_STAGE[m.group(1)]
    return None


_SERVING_FRAMES = tuple((part, stage) for part, stage, _source in SERVING_FRAMES)
_SERVING_FILE_RXS = tuple((re.compile(row[0]), row[1], re.compile(row[2]) if len(row) > 2 else None)
                          for row in SERVING_LOGGER_FILES)
_STAGE_WORDS = tuple((key, re.compile(rx) if rx else None, stage, conf) for key, rx, stage, conf, _s in STAGE_WORDS)
_STARTUP_WORD_RX = re.compile(STARTUP_FUNC_WORDS)
_SHARED_PARTS = tuple(p for p, _s in SHARED_SERVING_FRAMES if not p.startswith("func:"))
_SHARED_FUNCS = frozenset(p[5:] for p, _s in SHARED_SERVING_FRAMES if p.startswith("func:"))
_ACCESS_5XX_RX = re.compile(ACCESS_5XX_RX)
# (round 57) Python's refusal of a keyword a constructor does not take, or of one it needs: at config, a setting
_ARG_REFUSAL_RX = re.compile(r"\bTypeError: .*(?:got an unexpected keyword argument|missing \d+ required)")
# a ValueError at config, or (round 79) one of the standard library's ValueError subclasses that reading a model's
# files raises - json's JSONDecodeError (json/decoder.py: class JSONDecodeError(ValueError)) and UnicodeDecodeError
# (UnicodeError(ValueError)): a config, tokenizer or chat-template file that is not what it claims to be
_VALUE_ERROR_RX = re.compile(r"\b(?:ValueError|JSONDecodeError|UnicodeDecodeError):")
# (round 79) the wrappers of a start-up that failed (v1/engine/utils.py wait_for_engine_startup, v1/executor/
# multiproc_executor.py WorkerProc.wait_for_ready), and the former's failed processes with a negative exit code
_START_FAILED_RX = re.compile(r"Engine core initialization failed|WorkerProc initialization failed")
_KILLED_CORE_RX = re.compile(r"Failed core proc\(s\): \{[^}]*:\s*-\d+")
_LEVEL_WORD_RX = re.compile(LEVEL_WORD_RX)
_CONFIG_REFUSAL_RX = re.compile(CONFIG_REFUSAL_RX)
_ERROR_WORDS_RX = re.compile(ERROR_WORDS_RX)
_CAUSES = tuple((key, re.compile(rx) if rx else None, stage) for key, rx, stage, _source in CAUSES)


def _text_hint(text, rec=None):
    """(stage, confidence, strong) inferred from an error's words, the collective it names or the vLLM logger
    record's file; None when they say nothing.  ``strong``: it outranks a signature's usual stage (a collective's
    numbers do; words and the logger's file do not)."""
    stage = collective_stage(text)
    if stage is not None:
        return stage, CONF_MEDIUM, True
    for key, rx, stage, conf in _STAGE_WORDS:
        if key in text and (rx is None or rx.search(text) is not None):
            return stage, conf, False
    hit = message_stage(text)
    if hit is not None:
        return hit[0], hit[2], False
    stage = _logger_file_stage(rec, text)
    if stage is not None:
        return stage, CONF_MEDIUM, False
    return None


def _capped(placed):
    """A placement that only the log's progress gives (markers), at no more than medium: the error itself names no
    stage, so it may have failed in a later step than the last marker (a cut error record, a header whose traceback
    was cut before its exception)."""
    stage, basis, conf = placed
    return stage, basis, CONF_MEDIUM if basis == BASIS_MARKERS and conf == CONF_HIGH else conf


def _logger_file_stage(rec, text=None):
    """The stage of the vLLM logger record's own file (SERVING_LOGGER_FILES), or None; a row with a message regex
    only for the record's ``text``."""
    if rec is None or len(rec) != 4 or not rec[2]:
        return None
    for rx, stage, msg_rx in _SERVING_FILE_RXS:
        if rx.search(rec[2]) and (msg_rx is None or (text is not None and msg_rx.search(text.strip()))):
            return stage
    return None


def cause_stage(text, cls, stage):
    """The earlier stage a message names as its cause (a driver or library mismatch, a too small /dev/shm: the
    environment), when it differs from ``stage`` (where it surfaced); else None."""
    cause = CAUSE_CLASSES.get(cls)
    if cause is None:
        for key, rx, st in _CAUSES:
            if key in text and (rx is None or rx.search(text) is not None):
                cause = st
                break
    if cause is None or cause == stage:
        return None
    if stage in _RANK and _RANK[cause] > _RANK[stage]:
        return None
    return cause


def _classify_text(text):
    for cls, keys in CLASS_KEYWORDS:
        for k in keys:
            if k in text:
                return cls
    return "other"


# --------------------------------------------------------------------------------------------------------------
# per-file scanner
# --------------------------------------------------------------------------------------------------------------

class _TB(object):
    """An open traceback (or an error header waiting for its traceback) in one stream."""

    __slots__ = ("state", "stream", "proc", "pid", "rec", "header", "entries", "frames", "lineno", "ts", "tkey",
                 "tkey_own", "idle", "warn_only", "context", "chained", "serving", "startup", "firm", "whole", "nframes",
                 "ctx", "importing", "import_chain", "llm_call", "built", "rpc", "findent")

    def __init__(self, stream, proc, pid, rec, lineno, ts, key, tkey_own, warn_only):
        self.state = "frames"
        self.stream = stream
        self.proc = proc
        self.pid = pid
        self.rec = rec
        self.header = None
        self.entries = []
        self.frames = set()
        self.lineno = lineno
        self.ts = ts
        self.tkey = key
        self.tkey_own = tkey_own
        self.idle = 0
        self.warn_only = warn_only
        self.context = []
        self.chained = False
        self.serving = None              # stage of a serving-only frame seen (SERVING_FRAMES)
        self.startup = False             # a start-up function of vLLM seen (STARTUP_FUNCS)
        self.firm = False                # a serving frame start-up never runs seen (not SHARED_SERVING_FRAMES)
        self.whole = False               # its "Traceback" line is in the log (no caller cut away)
        self.nframes = 0                 # frame lines seen ('File "...", line N, in f')
        self.importing = False           # its innermost frame so far is a module of vLLM being imported
        self.import_chain = False        # a vLLM module's code imported another's: every deeper frame runs in that import
        self.ctx = -1                    # the furthest stage the log had proved reached at its last line
        self.llm_call = False            # the last frame's line called one of LLM's request methods (round 29)
        self.built = 0                   # start-up frames seen: 1 an engine's construction, 2 any other
        self.rpc = False                 # the last frame was vLLM's RPC running a worker method (round 61)
        self.findent = -1                # the indentation of its last frame line (round 61)

    def hint(self, text):
        """(stage, confidence, strong) inferred for this traceback's error: its header's words (the call site that
        logged it: "Chat template warmup failed"), its serving-only frames, else its words."""
        if self.header is not None:
            hint = _text_hint(self.header[1])
            if hint is not None:
                return hint
        return self.serving_hint() or _text_hint(text, self.rec)

    def cut_hint(self):
        """The hint of a traceback cut before its exception: its frames' (serving_hint), else the file of the vLLM
        record it is logged in (round 52: the model registry's record is config)."""
        hint = self.serving_hint()
        if hint is None:
            stage = _logger_file_stage(self.rec)
            if stage is not None:
                return stage, CONF_MEDIUM, False
        return hint

    def serving_hint(self):
        """The hint of the frames no FRAMES row maps: vLLM's own imports (environment, medium); else the serving
        frames' - medium, or low when only code start-up runs too shows and the caller is cut; None without a
        serving-only frame or with a start-up function of vLLM among the frames."""
        if self.importing:
            # its innermost frame is vLLM's own module code, imported by the frame above it: it failed while vLLM was
            # being imported (a library it needs, its build against another torch), the environment (round 25) -
            # unless a running vLLM module logged it (round 52): a lazy import while that module's stage runs (the
            # model registry importing a model's module to inspect it)
            return _logger_file_stage(self.rec) or "environment", CONF_MEDIUM, True
        if self.serving is not None and self.built == 1 and not self.firm:
            # (round 56) a forward pass under the engine's construction and no other start-up step: the model runs
            # while the engine is built only to profile its memory, warm up or capture CUDA graphs (engine_init)
            return "engine_init", CONF_MEDIUM, True
        if self.serving is None or self.startup:
            return None
        return self.serving, CONF_MEDIUM if self.firm or self.whole else CONF_LOW, True


# a line that reads as code or a frame (a call, an assignment, a line that opens or continues a call's arguments, the
# carets under a source line)
_CODE_LIKE_RX = re.compile(r'File "|[\w\]]\(|\s=\s|\w=\w|[(,]\s*$|^[\^~]+$')
# an installed vLLM's (or a source checkout's) own module file; a user's script merely named or placed under vllm/ is not
# (round 35: also a vLLM platform or feature plugin's, the vllm_* packages of vllm-project - vllm_ascend, vllm_omni,
# vllm_gaudi, vllm_spyre, ... - which vLLM's CLI and platform detection import)
# (round 87: also a source checkout in a folder of any name - "~/1Cat-vLLM/vllm/config/__init__.py" - known by
# vLLM's own package layout under it, which a user's script named vllm does not have)
_VLLM_MODULE_RX = re.compile(r"(?:site-packages|dist-packages|/vllm[\w-]*)/vllm(?:_[a-z]+)?/[\w/]+\.py$|/vllm/(?:"
                             r"entrypoints|engine|v1|config|platforms|model_executor|distributed|worker|executor|"
                             r"attention|lora|transformers_utils|multimodal|inputs|compilation)/[\w/]+\.py$|"
                             r"/vllm/(?:__init__|envs|_custom_ops)\.py$")
# (round 56) an engine's construction: LLMEngine / AsyncLLMEngine / MQLLMEngine / EngineCore built (vllm/engine/,
# vllm/v1/engine/: from_engine_args, from_vllm_config, _init_engine, their __init__)
_ENGINE_BUILD_RX = re.compile(r"^(?:from_engine_args|from_vllm_config|_init_engine|__init__) \S*/vllm/(?:v1/)?engine/")
# a source line importing vLLM or one of its plugin packages ("from vllm.entrypoints.cli.main import main")
_VLLM_IMPORT_RX = re.compile(r"^(?:from vllm(?:_[a-z]+)?(?:\.[\w.]+)? import |import vllm(?:_[a-z]+)?(?:[.\s,]|$))")


def _frames_stage(frames):
    """The stage of a traceback from the stages of its mapped frames: the earliest, except that distributed init
    inside ``init_device`` is distributed init."""
    if not frames:
        return None
    if CALLER_RPC in frames:
        return "request"
    fs = set(frames)
    if DEVICE_QUERY in fs or WORKER_STEPS in fs:
        # a device query failed: device discovery, unless a later stage's frames show the device was found before
        fs = set(s for s in fs if s not in (DEVICE_QUERY, WORKER_STEPS) and _RANK[s] > _RANK["config"]) or \
            set(("cuda_init",))
    if "distributed_init" in fs:
        fs.discard("cuda_init")
    return min(fs, key=lambda s: _RANK[s])


class _Scan(object):
    """Reads one log and keeps what the answer needs, nothing more."""

    def __init__(self, name, node, index, until=None):
        self.file = name
        self.node = node
        self.index = index
        self.until = until               # lines 1..until were written before the server was stopped
        self.after_stop = []             # errors of later lines (shutdown noise), never the failure
        self.full = False                # parse every line (no prefilter): a small log
        self.lineno = 1
        self.lines = 0
        self.first_ts = None
        self.last_ts = None
        self.last_tkey = None
        self.year_off = 0.0
        self.prev_tkey = None
        self.ts_sources = set()
        self.ctx = -1                    # rank of the furthest stage the log proves reached
        self.ctx_since = None
        self.reached = set()
        self.marked = set()
        self.stage_marks = []
        self.ready = False
        self.api_up = False              # the API server's HTTP side started (uvicorn) or became ready
        self.kv_empty = False            # the KV cache was sized to nothing (KV_CACHE_EMPTY_RX) before
        self.ready_ts = None
        self.streams = {}
        self.cands = []
        self.untimed = []                # candidates with no timestamp of their own nor one before them
        self.recovered = []
        self.hints = []
        self.hung = False                # a hang hint was seen (a stuck stage is no failure)
        self.words = None                # the first plain line that reads as an error (ERROR_WORDS): (lineno, line, ...)
        self.chain_at = None             # (stream, lineno) of a chain line logged as a record of its own (round 42)
        self.pid2proc = {}
        self.rec_cand = {}
        self.proc_hdr = None
        self.node_words = set()          # the "<word>: " node prefixes taken in this log (node_prefix)
        self.node_lines = 0              # non-blank lines read before one had such a prefix (None: one had)
        self.grep = {"taken": {}, "next": {}}  # grep's output: the line numbers taken of each file (grep_prefix)
        self.quoted = False              # a paste quoted as markdown (QUOTE_RX)
        self.indent = 0                  # the indentation of a paste indented as a whole (sniff)
        self.dated = False               # a log viewer's time in front of every line (sniff)
        self.ans_block = None            # in a block scalar of Ansible's YAML result: (its key's indentation, its own)
        self.ans_line = None             # the line of its last segment
        self.ans_result = None           # the line of the last result of Ansible's read (its JSON's strings)
        self.in_result = False           # reading the lines inside that result (one line number for them all)
        self.proc_hdr_at = self.hdr_to = -1  # a record header's first and last line (PROCESS_HDR_RX: its traceback follows)
        self.hdr_stage = None            # the stage of the callback an asyncio header names (its traceback's last frame)
        self.hdr_cb = None               # such a header whose traceback has not followed (yet): (lineno, line, ...)
        self.code_run = (None, 0)        # ((stream, lineno) of the last code line outside a traceback, its run's first)
        self.lead = None                 # (first, last) line of the fragments that open the paste (a cut line)
        self.lead_done = False
        self.comms = {}                  # (pid, NCCL comm pointer) -> "started" | "complete" | "destroyed"
        self.store_warn_at = -_BARRIER_NEAR - 1  # the last record of torch's TCPStore client (c10d warning)
        self.warn_next = 0  # the line that goes on a Python warning's message (round 87)
        self.no_recover = False          # the marker being read is a request answered with a server error
        self._anchors = None
        self._buf = None
        self._buf_pos = 0
        self._slow_end = 0
        self._abs = 0
        self._slow_abs = 0

    # -- time -------------------------------------------------------------------------------------------------
    def _adj(self, key):
        """Order year-less timestamps within the file (a year roll-over moves later keys on)."""
        if key is None:
            return None
        key += self.year_off
        if self.prev_tkey is not None and key < self.prev_tkey - 180 * 86400.0:
            self.year_off += 366 * 86400.0
            key += 366 * 86400.0
        self.prev_tkey = key
        return key

    def _see_ts(self, ts, key):
        if ts is None or key is None:
            return
        if self.untimed:
            self._bound_untimed(key)
        if self.first_ts is None:
            self.first_ts = ts
        self.last_ts = ts
        self.last_tkey = key

    def _bound_untimed(self, key):
        """Candidates printed before the first timestamp of their file (a rank's plain stderr, gloo's own error
        line) happened no later than the next timestamped line: that time orders them against other files, as an
        upper bound (``tkey_after``), instead of sorting them after every timestamped error of the job."""
        for c in self.untimed:
            if c["tkey"] is None:
                c["tkey"] = key
                c["tkey_after"] = True
        self.untimed = []

    # -- anchors ---------------------------------------------------------------------------------------------
    def anchors(self):
        """The byte strings the prefilter looks for now (the static ones, plus markers of stages not yet seen)."""
        if self._anchors is None:
            # a stage's anchors until it is seen; the API server's until it is ready; a request's until both (one
            # seen, the server ready)
            extra = [a for stage, anchors in MARK_ANCHORS.items() for a in anchors
                     if (not self.ready if stage == "api_ready" else stage not in self.marked or (
                         stage == "request" and not self.ready))]
            self._anchors = STATIC_ANCHORS + tuple(
                a for i, a in enumerate(extra) if a not in STATIC_ANCHORS and a not in extra[:i])
        return self._anchors

    # -- progress ---------------------------------------------------------------------------------------------
    def _progress(self, mark, line, lineno):
        stage = mark.stage
        rank = mark.rank
        if stage not in self.marked:
            self.marked.add(stage)
            self.reached.add(rank)
            self.stage_marks.append({"stage": stage, "timestamp": line.ts or self.last_ts, "lineno": lineno})
            self._anchors = None
            # progress beyond what had been reached when an error happened: that error did not stop the run
            # (not a request answered with a server error: that answer is the error's own request)
            if self.cands and not self.no_recover:
                keep = []
                for c in self.cands:
                    # (round 32: another process's line in the same second proves nothing of the failing one - the
                    # other workers of a V0 engine go on printing as one of them dies)
                    # (a collector's time of the failure, kubectl's or journald's, is compared with the line's own
                    # collector time by its second; the line's own vLLM time with the failure's own)
                    concurrent = c["pid"] is not None and line.pid != c["pid"] and (
                        line.tkey is not None and line.tkey == c["tkey"]
                        or line.ts is not None and line.ts == c["timestamp"]
                        or line.outer_tkey is not None and c["tkey"] is not None
                        and int(line.outer_tkey) == int(c["tkey"]))
                    if rank > max(c["srank"], c["ctx_at"]) and not concurrent:
                        if len(self.recovered) < _MAX_RECOVERED:
                            self.recovered.append(c)
                    else:
                        keep.append(c)
                self.cands = keep
        new_ctx = rank
        if mark.role in (EXIT, READY) and rank + 1 < len(STAGES):
            new_ctx = rank + 1
        when = line.ts or self.last_ts
        if mark.fmt == FMT_UVICORN and stage == "api_ready":
            self.api_up = True
        if mark.role == READY and not self.ready:
            self.ready = True
            self.api_up = True
            self.ready_ts = when
            self._anchors = None
        if new_ctx > self.ctx:
            self.ctx = new_ctx
            self.ctx_since = when
            self.reached.add(new_ctx)

    def _markers(self, line, lineno):
        fmt = line.fmt
        msg = line.msg
        if fmt == FMT_VLLM:
            if line.level == LEVEL_ERROR:
                return
            if ("GPU blocks" in msg or "KV cache memory" in msg) and _KV_EMPTY_RX.search(msg) is not None:
                self.kv_empty = True
        elif fmt == FMT_NCCL:
            if line.level != LEVEL_ERROR and ("- Init " in msg or "Destroy COMPLETE" in msg):
                self._comm(line, msg)
            if "distributed_init" in self.marked or line.level == LEVEL_ERROR:
                return
            self._progress(_MARKS_NCCL, line, lineno)
            return
        elif fmt not in (FMT_UVICORN, FMT_RAW):
            return
        for mk in _MARKS_BY_FMT.get(fmt, ()):
            if mk.role == ENTRY and mk.stage in self.marked and mk.rank <= self.ctx:
                continue
            if mk.role == READY and self.ready:
                continue
            if mk.role == EXIT and mk.rank < self.ctx:
                continue
            if mk.key in msg and (mk.rx is None or mk.rx.search(msg)):
                self._progress(mk, line, lineno)

    def _comm(self, line, msg):
        m = NCCL_COMM_RX.search(msg)
        if m is None:
            return
        key = (line.pid, m.group(1))
        if key in self.comms or len(self.comms) < MAX_COMMS:
            self.comms[key] = {"Init START": "started", "Init COMPLETE": "complete"}.get(m.group(2), "destroyed")

    # -- candidates -------------------------------------------------------------------------------------------
    def _stage_for(self, placement, sig_stage, cls, frames, named=None, hint=None, usual_conf=CONF_MEDIUM):
        """(stage, basis, confidence) of an error: the message's own meaning where it fixes the stage, else the
        frames (or the worker method a logger line names), else what the error shows (``hint``: serving-only
        frames, its words, the collective it names, its logger's file: basis ``inferred``), never before the
        furthest stage the log proves reached."""
        if placement == FIXED:
            return sig_stage, BASIS_MESSAGE, CONF_HIGH
        if placement == FIXED_UNTIL_READY:
            if not self.api_up:
                return sig_stage, BASIS_MESSAGE, CONF_HIGH
            # the HTTP side started (uvicorn's lifespan ran): the bind belongs to starting the API server
            return "api_ready", BASIS_MARKERS, CONF_HIGH
        rank = None
        fstage, basis, conf = _frames_stage(frames), BASIS_FRAMES, CONF_HIGH
        if frames and WORKER_STEPS in frames and fstage == "cuda_init" and \
                not set(frames) - {WORKER_STEPS, DEVICE_QUERY, "cuda_init", "config", "environment"}:
            conf = CONF_MEDIUM  # only the Ray executor's worker set-up shows (and its call): one of its steps
        elif frames and CALLER_RPC in frames:
            conf = CONF_MEDIUM  # the caller's method is not vLLM's: what it did is read from its name alone
        if fstage is None:
            fstage, basis = named, BASIS_MESSAGE
        if fstage is None and hint is not None and (hint[2] or placement != WHERE_OR):
            # a signature's usual stage (WHERE_OR) outranks words, not serving frames or a collective's numbers
            fstage, basis, conf = hint[0], BASIS_INFERRED, hint[1]
        if fstage is not None:
            if fstage == "request" and 0 <= self.ctx < _RANK["api_ready"]:
                # serving code before the server was ready: the start-up's profiling / warm-up passes
                fstage = "engine_init"
            rank = _RANK[fstage]
        if self.ctx >= 0 and (rank is None or rank < self.ctx or (basis == BASIS_INFERRED and rank == self.ctx)):
            rank = self.ctx
            basis = BASIS_MARKERS
            conf = CONF_HIGH
        floor = None
        if placement in (AT_LEAST, AT_LEAST_OR_UNKNOWN):
            floor = sig_stage
        elif placement == WHERE:
            floor = CLASS_FLOOR.get(cls)
        if rank is None:
            if placement in (AT_LEAST, WHERE_OR):
                return sig_stage, BASIS_MESSAGE, usual_conf
            default = CLASS_DEFAULT_STAGE.get(cls)
            if default is not None and (floor is None or _RANK[default[0]] >= _RANK[floor]):
                # (round 52: never a class's usual stage below the row's own floor)
                return default[0], BASIS_MESSAGE, default[1]
            return "unknown", None, None
        if floor is not None and rank < _RANK[floor]:
            rank = _RANK[floor]
            basis = BASIS_MESSAGE
            conf = CONF_MEDIUM
        return STAGES[rank], basis, conf

    def _add(self, kind, cls, placed, text, lineno, line_ts, key, tkey_own, proc, pid, hint, context, rec_key,
             oom_seen=False, origin=None, no_row=""):
        stage, basis, conf = placed
        if cls == "engine_dead" and ORIGINAL_ERROR_KEY in text:
            # a dead engine's error that quotes the error that stopped the engine loop: that error's class
            quoted = _classify_text(text.split(ORIGINAL_ERROR_KEY, 1)[1])
            cls = quoted if quoted != "engine_dead" else "other"
        if cls == "other" and kind == CONSEQUENCE and text.count("'") >= 2:
            # (round 62) a wrapper of no class quoting the error it reports ("Worker failed with error '...'"): the
            # quoted error's class, read from its words (CLASS_KEYWORDS)
            cls = _classify_text(text.split("'", 1)[1])
        if cls == "other" and kind == CONSEQUENCE and _KILLED_CORE_RX.search(text) is not None:
            # (round 79) wait_for_engine_startup names each failed core process with its exit code; a negative one is
            # multiprocessing's "killed by signal N" (SIGKILL: the OOM killer, an operator): a process that died
            cls = "engine_dead"
        if cls == "other" and self.kv_empty and kind in (FAILURE, ERROR_LINE, HEADER, CUT_TRACEBACK):
            # the KV cache was sized to nothing just before: the error of no class is the GPU memory's
            cls = "oom"
        if cls == "other" and _CONFIG_REFUSAL_RX.search(text) is not None:
            # a check that refuses a setting (CONFIG_REFUSAL_RX): the class only - where it was raised (the config,
            # a model's or a quantization method's constructor, a request) is the stage's question, not the words'
            cls = "config_error"
        # a config error: an error placed at config by a config message row (round 62: or by its frames, when a row
        # has its message; a signature's own class stands), an ERROR line, (no_row) a ValueError or a constructor's
        # refused keyword
        if cls == "other" and stage == "config":
            if basis in (BASIS_INFERRED, BASIS_FRAMES) and (message_stage(text) or (None, None))[1] == "config_error":
                cls = "config_error"
            elif basis != BASIS_INFERRED and (kind == ERROR_LINE or _VALUE_ERROR_RX.search(no_row) is not None or
                                              _ARG_REFUSAL_RX.search(text) is not None):
                cls = "config_error"
        if self.until is not None and (origin or lineno) > self.until:
            # printed after the server was stopped (the record, or its traceback, began after the cutoff):
            # shutdown noise, reported apart and never the failure
            self._stopped(lineno, cut(text.strip()), line_ts, proc, cls, kind, key)
            return
        srank = _RANK.get(stage, -1)
        cand = {
            "kind": kind, "cls": cls, "stage": stage, "basis": basis, "srank": srank, "ctx_at": self.ctx,
            "line": cut(text.strip()), "lineno": lineno, "timestamp": line_ts, "tkey": key,
            "tkey_own": tkey_own, "process": proc, "pid": pid, "hint": hint, "context": context[:_MAX_CONTEXT],
            "file": self.file, "node": self.node, "index": self.index, "oom": oom_seen or cls == "oom",
            "conf": conf, "cause": cause_stage(" ".join(context[:_MAX_CONTEXT]) if context else text, cls, stage),
        }
        if rec_key is not None:
            prev = self.rec_cand.get(rec_key)
            if prev is not None:
                if _TIER[prev["kind"]] <= _TIER[kind] and not (prev["kind"] == ERROR_LINE and kind == FAILURE):
                    return
                prev.update(cand)
                return
            if len(self.rec_cand) > 256:
                self.rec_cand.clear()
            self.rec_cand[rec_key] = cand
        if kind == FAILURE and cand["line"].startswith("Fatal Python error:"):
            # the report that carries the Python stack is the failure, not abseil's report of the same signal
            dump = [c for c in self.cands if c["srank"] < 0 and lineno - c["lineno"] <= _SIGNAL_DUMP_NEAR
                    and _SIGNAL_DUMP_RX.match(c["line"]) is not None]
            if dump:
                self.cands = [c for c in self.cands if c not in dump]
                self.untimed = [c for c in self.untimed if c not in dump]
                self.rec_cand = dict((k, c) for k, c in self.rec_cand.items() if c not in dump)
        if kind == CONSEQUENCE and self.recovered and _START_FAILED_RX.search(text) is not None:
            # (round 79) the start-up failed after all: a failure the log seemed to go past (another data-parallel
            # engine's or worker's progress) is a candidate again, the wrapper reports it
            back = [c for c in self.recovered if c["kind"] == FAILURE and c["lineno"] < lineno]
            self.recovered = [c for c in self.recovered if c not in back]
            self.cands = back + self.cands
        if len(self.cands) >= _MAX_CANDIDATES:
            return
        self.cands.append(cand)
        if key is None:
            self.untimed.append(cand)
            if self.last_tkey is not None:
                # a traceback opened before the file's first timestamp and closed after it: that one bounds it
                self._bound_untimed(self.last_tkey)

    def _stopped(self, lineno, text, line_ts, proc, cls, kind, key):
        if len(self.after_stop) < MAX_AFTER_STOP:
            self.after_stop.append({
                "file": self.file, "node": self.node, "lineno": lineno, "line": text, "timestamp": line_ts,
                "process": proc, "error_class": cls, "kind": KIND_NAME.get(kind, kind), "tkey": key,
                "index": self.index})

    def _exit_barrier(self, lineno):
        """torchrun's agent could not finish its exit barrier (torch/distributed/elastic/agent/server/api.py
        ``_exit_barrier``, logged with ``logger.exception`` and then ignored): the agent runs it only after this
        node's workers SUCCEEDED, and it fails when another node's agent, which hosts the rendezvous store, has
        already exited.  Its record, its traceback, the store client's warning just before it (TCPStore.cpp's
        ``recvValueWithTimeout failed`` with its C++ frames, the barrier's ``store.wait``; socket.cpp's in older
        releases) and what follows are the agent's teardown: set apart like lines printed after a stop, never the
        failure."""
        self._stop_at(self.store_warn_at if 0 <= lineno - self.store_warn_at <= _BARRIER_NEAR else lineno)

    def _stop_at(self, start):
        """Lines from ``start`` on were printed after the server was stopped: the cutoff ``until`` ends before them
        and the errors already taken from them are set apart (``after_stop``), never the failure."""
        self.until = start - 1 if self.until is None else min(self.until, start - 1)
        later = [c for c in self.cands if c["lineno"] > self.until]
        for c in later:
            self._stopped(c["lineno"], c["line"], c["timestamp"], c["process"], c["cls"], c["kind"], c["tkey"])
        if later:
            self.cands = [c for c in self.cands if c["lineno"] <= self.until]
            self.untimed = [c for c in self.untimed if c["lineno"] <= self.until]
            self.rec_cand = dict((k, c) for k, c in self.rec_cand.items() if c["lineno"] <= self.until)

    def _hint(self, sig, line, lineno):
        if self.until is not None and lineno > self.until:
            return
        self.hung = self.hung or sig.kind == HANG_HINT
        if len(self.hints) < _MAX_HINTS:
            self.hints.append({"line": cut(line.msg.strip(), 300), "lineno": lineno, "timestamp": line.ts,
                               "hint": sig.hint})

    def _proc_name(self, line):
        if line.proc:
            return line.proc
        if line.fmt == FMT_NCCL and line.pid:
            return self.pid2proc.get(line.pid, "pid " + line.pid)
        return self.proc_hdr if line.stream[-1:] in ("", "/") and self.proc_hdr else None

    def _when(self, line):
        """(time key, whether the line carries it) of ``line``: its outer (collector's) time, its own, else the last
        time seen before it (maybe in bytes the prefilter skipped)."""
        if line.outer_tkey is not None:
            return line.outer_tkey, True
        if line.tkey is not None:
            return line.tkey, True
        if self._buf is not None and self._buf_pos > self._slow_end:
            k = match_tkey(last_ts(self._buf, max(self._slow_end, self._buf_pos - 65536), self._buf_pos))
            if k is not None:
                return k + self.year_off, False
        return self.last_tkey, False

    def _sig_candidate(self, sig, line, lineno, text, context=None, frames=None, rec_key=None, kind=None, hint=None,
                       cut=False):
        if sig.kind in (HANG_HINT, WARNING_HINT):
            self._hint(sig, line, lineno)
            return
        placed = self._stage_for(sig.placement, sig.stage, sig.cls, frames, _method_stage(text),
                                 hint if hint is not None else _text_hint(text, line.rec), sig.usual_conf)
        if cut:
            # (round 53) a header whose traceback was cut before its exception: as a cut error record (_cut_placed)
            placed = _capped(placed)
        key, own = self._when(line)
        if kind is None:
            # a header whose traceback never came reports an error it does not show: a wrapper
            kind = CONSEQUENCE if sig.kind == HEADER else sig.kind
        proc, pid = self._proc_name(line), line.pid
        if proc is None:
            m = SUBJECT_RX.search(text)
            if m is not None:
                proc, pid = "local_rank " + m.group(1), m.group(2)
        self._add(kind, sig.cls if sig.cls != "other" else _classify_text(text), placed, text, lineno, line.ts, key,
                  own, proc, pid, sig.hint, context or [text.strip()], rec_key)  # a row of no class: the line's words

    def _wrapped(self, cand, line, stripped):
        """(round 46) An error line that a paste hard-wrapped: its indented next line, read with it, may match a
        failure row the first part alone does not (``ValueError: The output_size of gate's and up's weight = 96 is
        not`` / ``    divisible by weight quantization block_n = 128.``); the error is then placed and classed by it."""
        sig = _match_failure(cand["line"] + " " + stripped, LEVEL_ERROR)
        if sig is None or sig.stage is None and sig.cls in (None, "other"):
            return
        stage, basis, conf = self._stage_for(sig.placement, sig.stage, sig.cls, None, None, None, sig.usual_conf)
        if stage in _RANK:
            cand["stage"], cand["basis"], cand["conf"], cand["srank"] = stage, basis, conf, _RANK[stage]
        if sig.cls not in (None, "other"):
            cand["cls"] = sig.cls
            cand["oom"] = cand["oom"] or sig.cls == "oom"

    # -- tracebacks -------------------------------------------------------------------------------------------
    def _open_tb(self, line, lineno, text, header=None, headless=False):
        key, own = self._when(line)
        warn_only = line.fmt in (FMT_VLLM, FMT_C10, FMT_UVICORN, FMT_PYLOG) and line.level in (
            LEVEL_WARNING, LEVEL_INFO, LEVEL_DEBUG)
        tb = _TB(line.stream, self._proc_name(line), line.pid, line.rec, lineno, line.ts, key, own, warn_only)
        tb.ctx = self.ctx
        if self.hdr_stage and self.hdr_to == lineno - 1:
            tb.frames.add(self.hdr_stage)  # the callback an asyncio header named: this traceback's innermost frame
            self.hdr_cb = None
        if header is not None:
            tb.state = "header"
            tb.header = (header, text.strip(), lineno, line)
            tb.context.append(text.strip())
        else:
            tb.entries.append([None, None, []])
            if not headless:
                tb.context.append(text.strip())
                tb.whole = text.lstrip().startswith(TB_START)
        if len(self.streams) >= _MAX_STREAMS:
            oldest = next(iter(self.streams))
            self._finish_tb(self.streams.pop(oldest))
        self.streams[line.stream] = tb
        return tb

    def _tb_line(self, tb, line, lineno, body):
        """Feed one line of tb's stream; False when the line is not part of the traceback."""
        if tb.rec is not None and line.rec is not None and line.rec != tb.rec and tb.state != "header":
            return False
        st = tb.state
        stripped = body.strip()
        if st == "header":
            if stripped.startswith(TB_START):
                tb.state = "frames"
                tb.whole = True
                tb.entries.append([None, None, []])
                tb.rec = line.rec
                tb.context.append(stripped)
                return True
            if tb.header[0].key == "terminate called after throwing an instance of" and "what():" in body:
                tb.entries.append([stripped.split("what():", 1)[1].strip(), lineno, []])
                tb.state = "message"
                tb.context.append(stripped)
                return True
            if frame_line(stripped):
                # the header's traceback with its "Traceback" line cut away
                tb.state = "frames"
                tb.entries.append([None, None, []])
                tb.rec = line.rec
                return self._tb_line(tb, line, lineno, body)
            return False
        if st == "frames":
            after_file, in_vllm = tb.chained in ("file", "vllm"), tb.chained == "vllm"
            tb.chained = False
            m = frame_line(stripped)
            if m is not None:
                func, path = m.group("func"), m.group("path")
                fs = frame_stage(func, path)
                if tb.llm_call and fs is None and "vllm/" in path.replace("\\", "/"):
                    # a caller's line called LLM.generate / encode / chat / ... and vLLM's code (the method or the
                    # wrapper that deprecates its old arguments) took the call: the engine exists, a request failed
                    fs = "request"
                tb.llm_call = False
                if not (tb.rpc and _RPC_WRAPPER_RX.search(path)):
                    # (round 61) vLLM's RPC ran a method of its caller's on the running engine (CALLER_RPC); a
                    # decorator's frame in between (torch's no_grad, functools) keeps the RPC's mark for the next
                    if tb.rpc and fs is None and func not in _FRAME_STAGES and _PKG_VLLM_RX.search(path) is None and \
                            _CALLER_STARTUP_RX.search(func) is None:
                        tb.frames.add(CALLER_RPC)
                    tb.rpc = func in RPC_FUNCS and "vllm" in path
                sf = None if fs or any(p in path for p in NOT_SERVING_FILES) else \
                    _stage_by_path(_SERVING_FRAMES, path)
                if fs:
                    tb.frames.add(WORKER_STEPS if func == "_init_workers_ray" else DEVICE_QUERY
                                  if fs == "cuda_init" and any(p in path for p in DEVICE_QUERY_PATHS) else fs)
                elif "vllm" in path or sf:
                    if func in STARTUP_FUNCS or _STARTUP_WORD_RX.search(func) is not None:
                        tb.startup = True
                        tb.built |= 1 if _ENGINE_BUILD_RX.search(func + " " + path) is not None else 2
                    else:
                        if tb.serving is None:
                            tb.serving = sf
                        if sf and func not in _SHARED_FUNCS and not any(p in path for p in _SHARED_PARTS):
                            tb.firm = True
                tb.chained = "vllm" if "vllm" in path else "file"
                # (round 50) a library's module code imported on from vLLM's (vllm/config.py's "import torch") is
                # still vLLM being imported
                vllm_module = func == "<module>" and _VLLM_MODULE_RX.search(path) is not None
                # (round 87) a vLLM module's code importing another's (two <module> frames in a row) is an import
                # running: every frame under it runs while vLLM is imported (a module's __getattr__, importlib, what
                # they call), where one <module> frame alone may be the main module's own code running (python -m)
                tb.import_chain = tb.import_chain or (tb.importing and vllm_module)
                tb.importing = tb.import_chain or func == "<module>" and tb.nframes > 0 and (
                    tb.importing or vllm_module)
                tb.nframes += 1
                tb.findent = len(body) - len(body.lstrip())
                return True
            # (round 61) an exception line indented no deeper than the frame lines above it (a paste that indented
            # the whole traceback) is the exception, not a source line
            exc_here = body[:1] in (" ", "\t") and len(body) - len(body.lstrip()) <= tb.findent and \
                EXC_RX.match(stripped) is not None
            if (body[:1] in (" ", "\t") and not exc_here) or not stripped or CARETS_RX.match(stripped) or \
                    IPY_SOURCE_RX.match(stripped) or _CUT_FRAME_RX.match(stripped) or (
                    after_file and not EXC_RX.match(stripped) and not stripped.startswith(TB_START)):
                # a frame's source line (also one whose indentation a paste lost); a few name their vLLM function
                # (round 57: not IPython's numbered context lines around its arrow line - they are not the call)
                src = _source_stage(stripped, in_vllm) if stripped and not stripped[:1].isdigit() else None
                if src is not None:
                    tb.frames.add(src)
                elif not in_vllm and "(" in stripped and not stripped[:1].isdigit() and _LLM_CALL_RX.search(stripped):
                    # (IPython's numbered context lines around its arrow line are not the call)
                    tb.llm_call = True
                elif tb.nframes and not tb.importing and _VLLM_IMPORT_RX.match(stripped) is not None:
                    # (round 38) the frame imports vLLM (or a plugin of it: the console script's own import): a
                    # traceback cut here failed while vLLM was being imported, as one inside vLLM's module code
                    tb.importing = True
                return True
            if stripped.startswith(TB_START):
                return True
            if cut_record(stripped):
                # the paste ends inside the logger prefix of the traceback's next line: not its exception
                return True
            tb.entries[-1][0] = stripped
            tb.entries[-1][1] = lineno
            tb.state = "message"
            if len(tb.context) < _MAX_CONTEXT:
                tb.context.append(stripped)
            return True
        if st == "message":
            if not stripped:
                tb.state = "between"
                return True
            if stripped.startswith(TB_START):
                return False
            if stripped.startswith(CHAIN):
                tb.state = "between"
                tb.chained = "chain"
                return True
            if not tb.entries[-1][2] and self._ray_remote_tb(tb, line, lineno, body, stripped):
                return True
            if CARETS_RX.match(stripped):
                # (round 64) a caret line carries no words of the message (Ray prints its remote task's carets
                # between its wrapper's line and the remote frames)
                return True
            msgs = tb.entries[-1][2]
            if len(msgs) < _MAX_MSG_LINES:
                msgs.append((stripped, lineno))
                if len(tb.context) < _MAX_CONTEXT:
                    tb.context.append(stripped)
                return True
            return False
        # between
        if not stripped:
            return True
        if self._ray_remote_tb(tb, line, lineno, body, stripped):
            return True
        if stripped.startswith(CHAIN):
            tb.chained = "chain"
            return True
        if stripped.startswith(TB_START) and tb.chained == "chain":
            tb.entries.append([None, None, []])
            tb.state = "frames"
            tb.chained = False
            return True
        return False

    def _ray_remote_tb(self, tb, line, lineno, body, stripped):
        """Ray's task error (RayTaskError(...): ray::...()) prints the remote task's traceback after its own line:
        those frames join the traceback, their exception an entry after the wrapper's (round 19)."""
        exc = tb.entries[-1][0] or ""
        if not stripped.startswith("File ") or "RayTaskError(" not in exc or _RAY_TASK_HDR_RX.search(exc) is None \
                or frame_line(stripped) is None:
            return False
        tb.entries.append([None, None, []])
        tb.state = "frames"
        return self._tb_line(tb, line, lineno, body)

    def _cut_placed(self, frames, hint, cls="other", named=None, cap=True):
        """Where an error record (with ``cap``: a cut exception, a C++ host's own record) is placed: its frames, else
        what it shows, else the last stage the log's own progress reached before it - with ``cap`` no more than medium,
        since nothing of the error itself names that stage (it may have failed in a later step of it)."""
        placed = self._stage_for(WHERE, None, cls, frames, named, hint)
        return _capped(placed) if cap else placed

    def _finish_tb(self, tb, at_eof=False):
        # placed by how far the log had got when the traceback's last line was printed, not by progress lines of
        # other processes read while it stayed open (interleaved replicas, an API server going on)
        ctx, self.ctx = self.ctx, tb.ctx
        try:
            self._finish_tb_at(tb, at_eof)
        finally:
            self.ctx = ctx

    def _finish_tb_at(self, tb, at_eof):
        rec_key = (tb.stream, tb.rec) if tb.rec else None
        if tb.state == "header" and not tb.entries:
            sig, text, lineno, line = tb.header
            self._sig_candidate(sig, line, lineno, text, rec_key=rec_key)
            return
        frames = tb.frames
        chosen = None
        chosen_generic = None
        consequence = None
        oom_seen = False
        root_exc = last_text = None
        level = LEVEL_WARNING if tb.warn_only else LEVEL_ERROR
        for exc, exc_lineno, msgs in tb.entries:
            if exc is None:
                continue
            root_exc, last_text = root_exc or (exc, exc_lineno, msgs), exc
            head = match_signature(exc, level)
            if head is not None and head.kind in (CONSEQUENCE, WEAK_CONSEQUENCE):
                # a wrapper quoting another error on its own line ("Worker failed with error 'CUDA error: ...'")
                inner = _match_failure(exc, level)
                if inner is not None:
                    if inner.cls == "oom":
                        oom_seen = True
                    if chosen is None:
                        chosen = (inner, exc, exc_lineno)
                    continue
                if consequence is None:
                    consequence = (head, exc, exc_lineno)
                continue
            for text, ln in [(exc, exc_lineno)] + msgs:
                s = head if ln == exc_lineno else match_signature(text, level)
                if s is None:
                    continue
                if s.cls == "oom":
                    oom_seen = True
                if s.kind in (FAILURE, VICTIM):
                    if GENERIC in s.flags:
                        if chosen_generic is None:
                            chosen_generic = (s, text, ln)
                    elif chosen is None:
                        chosen = (s, text, ln)
        # a failure (a generic one last), else a wrapper; an OOM seen in the chain classes an NCCL or CUDA error
        # (a wrapper is picked only when no failure matched, and every OOM row is a failure)
        pick = chosen or chosen_generic or consequence
        proc = tb.proc
        named = _method_stage(tb.header[1]) if tb.header is not None else None
        if pick is not None:
            s, text, ln = pick
            cls = "oom" if oom_seen and s.cls in ("nccl_error", "cuda_error") else s.cls
            placed = self._stage_for(s.placement, s.stage, cls, frames, named, tb.hint(text), s.usual_conf)
            self._add(s.kind, cls, placed, text, ln, tb.ts, tb.tkey, tb.tkey_own, proc, tb.pid, s.hint, tb.context,
                      rec_key, oom_seen, origin=tb.lineno)
            return
        if tb.warn_only:
            return
        if root_exc is not None:
            text, ln, msgs = root_exc
            words = " ".join([text] + [m[0] for m in msgs[:3]] + [last_text])
            cls = _classify_text(words)
            placed = self._stage_for(WHERE, None, cls, frames, named, tb.hint(words))
            self._add(FAILURE, cls, placed, text, ln, tb.ts, tb.tkey, tb.tkey_own, proc, tb.pid, None, tb.context,
                      rec_key, origin=tb.lineno, no_row=words)
            return
        if tb.header is not None:
            sig, text, lineno, line = tb.header
            inner = _match_failure(text, LEVEL_ERROR)
            if inner is not None:
                # the header quotes the error itself (V0 "Exception in worker ... while processing method
                # init_device: <error>, Traceback ..."): its traceback's exception is not in the log
                sig = inner
            self._sig_candidate(sig, line, lineno, text, context=tb.context, frames=frames, rec_key=rec_key,
                                hint=tb.hint(text), cut=True)
            return
        prev = self.rec_cand.get(rec_key) if rec_key is not None else None
        if (frames or tb.serving) and prev is not None:
            # a logged error whose traceback was cut before its exception: its frames still place it
            if prev["basis"] != BASIS_MESSAGE:
                stage, basis, conf = self._stage_for(WHERE, None, prev["cls"], frames, None, tb.serving_hint())
                if basis == BASIS_FRAMES or (basis == BASIS_INFERRED and prev["basis"] in (None, BASIS_INFERRED)):
                    prev["stage"], prev["basis"], prev["srank"], prev["conf"] = stage, basis, _RANK[stage], conf
        elif prev is None and rec_key is not None and tb.rec[0] in ("ERROR", "CRITICAL") and tb.context:
            # an ERROR record that is a traceback whose exception the paste cut away (the record's first line, the
            # message of logger.exception, was not pasted): the record is an error of its own, placed by its frames
            placed = self._cut_placed(frames, tb.cut_hint())
            self._add(ERROR_LINE, "other", placed, tb.context[0], tb.lineno, tb.ts, tb.tkey, tb.tkey_own, proc,
                      tb.pid, None, tb.context, rec_key, origin=tb.lineno)
        elif prev is None and at_eof and tb.state == "frames" and (tb.nframes or tb.whole) and tb.entries:
            # the paste ends inside a traceback (its exception cut away, people paste the top of a long one; round
            # 20: also right after its "Traceback" line): an error of its own at its "Traceback" line (or its first
            # frame), placed as a cut ERROR record is
            placed = self._cut_placed(frames, tb.cut_hint())
            text = tb.context[0] if tb.context else "Traceback (cut before its exception)"
            # the weakest error there is: any other error of the log (a header that owns this traceback, a
            # wrapper, an error line) is taken before it
            first = self.proc_hdr_at if self.hdr_to == tb.lineno - 1 else tb.lineno  # a header right above
            self._add(CUT_TRACEBACK, "other", placed, text, first, tb.ts, tb.tkey, tb.tkey_own, proc,
                      tb.pid, None, tb.context, rec_key, origin=tb.lineno)

    # -- one line ---------------------------------------------------------------------------------------------
    def sniff(self, head):
        """What a paste did to all of a log's lines, read from its first ones before any is scanned (``head``: the
        file's first bytes): an indentation given to the whole (paste_indent), a log viewer's time in front of every
        line (dated_lines)."""
        lines = [ln.rstrip() for ln in head[:16384].decode("utf-8", "replace").splitlines()[:64] if ln.strip()][:8]
        self.indent = paste_indent(lines)
        self.dated = dated_lines(lines)

    def segment(self, raw, lineno):
        """Parse and process one segment (a line, or one CR-separated piece of it) of the file."""
        text = raw.decode("utf-8", "replace")
        if "#0" in text and any(e in text for e in RSYSLOG_ESCAPES):
            text = RSYSLOG_ESC_RX.sub(lambda m: chr(int(m.group(1), 8)), text)
        if "\x1b" in text or "\x00" in text:
            text = clean(text)
        text = text.rstrip()
        if self.ans_block is not None and lineno != self.ans_line:
            # (a block scalar of Ansible's YAML result: its lines at their margin, until one is indented no deeper
            # than its key; a piece after a carriage return goes on its line)
            self.ans_line = lineno
            n = len(text) - len(text.lstrip(" "))
            if text and n <= self.ans_block[0]:
                self.ans_block = None
                self._end_of_output()
            elif text:
                if self.ans_block[1] is None:
                    self.ans_block = (self.ans_block[0], n)
                text = text[min(n, self.ans_block[1]):]
        if lineno == self.ans_result:
            return                      # the rest of a result line longer than the scanner's piece (read above)
        if self.ans_block is None and text and text[0] in "fco " and (" => " in text[:200] or text[-1] in "|->+"):
            if ANSIBLE_RESULT_RX.match(text) is not None:
                # (the result's own line is Ansible's report of the command's exit, none of the log's lines)
                self.in_result = True
                for part in ansible_output(text) or ():
                    self.segment(part.encode("utf-8", "surrogateescape"), lineno)
                self.in_result = False
                self._end_of_output()
                self.ans_result = lineno
                return
            m = ANSIBLE_BLOCK_RX.match(text)
            if m is not None:
                indent = len(m.group("ind"))
                self.ans_block = (indent, indent + int(m.group("by")) if m.group("by") else None)
                return
        line = Line()
        line.dated = self.dated
        # what a gathering tool put around the line (grep's numbers, a node's prefix, Docker's JSON record), then
        # what a paste did to it (a quote, markup, colour codes in caret notation or without their escape)
        first = self.node_lines is not None and self.node_lines < NODE_FIRST_LINES
        if self.grep["taken"] or first:
            took, line.node, rest = grep_prefix(text, self.grep, first)
            text = rest if took else text
        if ": " in text[:72] or text[:1] == "[" or text[-1:] == ":":
            node, text = node_prefix(text, self.node_words, self.node_lines is None or first)
            line.node = node or line.node
        if text[:2] == '{"' and any(k in text for k in JSON_RECORD_KEYS):
            text = json_record(text, line)
            text = clean(text).rstrip() if "\x1b" in text or "\x00" in text else text
        if text[:1] == ">" and (self.quoted or first) and QUOTE_RX.match(text) is not None:
            # a quoted paste: every line behind "> " once one of its first lines was
            self.quoted = True
            text = text[2:]
        if self.indent and text[:self.indent].isspace():
            # a paste indented as a whole (sniff)
            text = text[self.indent:]
        if ("`" in text[:8] or "<" in text[:8]) and MARKUP_RX.match(text) is not None:
            text = ""
        if "^[" in text or "ESC[" in text or text.endswith("^M"):
            text = CARET_ANSI_RX.sub("", text).rstrip()
        if text[:1] == "[" and text[1:2].isdigit() and "m" in text[2:9]:
            text = ORPHAN_ANSI_RX.sub("", text)
        if self.node_lines is not None and self.node_lines < NODE_FIRST_LINES and text.strip():
            # a log's first lines decide whether its lines carry a node's "<word>: " prefix
            self.node_lines = None if self.node_words else self.node_lines + 1
        c0 = text[:1]
        if c0.isdigit() or c0 in MONTH_INITIALS or c0 in " [\u2502" or "|" in text[:80] or "]: " in text[:120] or \
                c0 == "<" and text[1:2].isdigit():
            text = strip_wrappers(text, line)
        elif "[repeated " in text:
            text = RAY_REPEAT_RX.sub("", text)
        if text[:1] in "E>" and len(text) > 4:
            # pytest's report: "E   " lines carry the exception, ">   " marks the failing source line
            m = PYTEST_E_RX.match(text)
            if m:
                text = text[m.end():]
            elif PYTEST_SRC_RX.match(text):
                text = " " + text[1:]
        if text[:1] == "[":
            m = TEE_RX.match(text)
            if m:
                line.tee = m.group(1)
                text = text[m.end():]
        glued = GLUED_RX.search(text) if ("/s]" in text or "s/it]" in text) else None
        if glued is not None:
            # a record glued onto a progress bar whose carriage return was lost in a paste: two segments
            self._segment_text(text[:glued.start() + 1], line, lineno)
            node, line = line.node, Line()
            line.node = node
            text = text[glued.start() + 1:].lstrip()
        elif len(text) > 200 and any(w in text for w in JOINED_WORDS):
            start = 0
            for end in joined_cuts(text):
                # records whose line breaks a paste lost: one segment each, on the same line number
                self._segment_text(text[start:end].rstrip(), line, lineno)
                node, line, start = line.node, Line(), end
                line.node = node
            text = text[start:]
        self._segment_text(text, line, lineno)

    def _segment_text(self, text, line, lineno):
        parse_line(text, line)
        if line.tee is not None:
            # each worker copied by torchrun is a stream of its own, apart from torchrun's own lines
            line.stream = line.tee + "/" + line.stream
            if not line.proc:
                line.proc = line.tee
        if line.node is not None:
            # each node's (task's, pod's) lines too, as one gathering tool interleaved them
            line.stream = line.node + "/" + line.stream
        key = line.tkey
        if line.outer_tkey is not None:
            line.outer_tkey = self._adj(line.outer_tkey)
            self.ts_sources.add(line.outer_src)
            if key is not None:
                line.tkey = key + self.year_off
            self._see_ts(line.ts or "", line.outer_tkey)
            if line.ts is None:
                self.last_ts = None
        elif key is not None:
            line.tkey = self._adj(key)
            self.ts_sources.add(line.fmt)
            self._see_ts(line.ts, line.tkey)
        if line.fmt == FMT_VLLM and line.pid and len(self.pid2proc) < 512:
            self.pid2proc[line.pid] = line.proc
        self._line(line, lineno, text)

    def _lead(self, line, lineno, stripped):
        """A paste that starts inside a traceback often starts inside one of its lines too (``lf.model = get_model(``,
        ``rank0]:   File ...``): up to two plain lines that open the file, are no frame and no error, and are followed
        by a frame, are that traceback's first lines (``lead``) - when they read as code (a call, an assignment, a
        frame's ``File "``), not as a program's own words before its traceback.  (``code_run`` does the same for
        indented code lines in the frame's own stream; a cut line has lost its prefix, so the lead ignores streams.)"""
        first = self.lead[0] if self.lead else lineno
        adjacent = self.lead is None or self.lead[1] == lineno - 1
        frame = line.fmt == FMT_RAW and frame_line(stripped) is not None
        if (line.fmt != FMT_RAW or frame or self.cands or not adjacent or lineno - first > 1
                or stripped.startswith(TB_START) or not _CODE_LIKE_RX.search(stripped)):
            self.lead_done = not frame  # a frame keeps the lead for the code branch, which opens its traceback
            return
        self.lead = (first, lineno)

    def _line(self, line, lineno, text):
        stream = line.stream
        body = line.msg
        if line.pywarn:
            # (round 87) Python prints a warning as "file.py:7: RuntimeWarning: message" and its source line indented
            # (warnings.formatwarning): a message of several lines goes on unindented between them, and one whose
            # first line ends with ":" goes on (vllm/__init__.py's "Failed to read commit hash:\n" + the import error)
            self.warn_next = lineno + 1 if body.rstrip().endswith(":") else 0
        elif lineno == self.warn_next and line.fmt == FMT_RAW and body[:1] not in (" ", "\t"):
            line.pywarn = True
        if line.fmt == FMT_C10 and line.rec is not None and line.rec[1] in ("TCPStore.cpp", "socket.cpp"):
            self.store_warn_at = lineno
        elif _EXIT_BARRIER in body:
            self._exit_barrier(lineno)
        elif self.ready and "[shutdown] " in body and line.level != LEVEL_ERROR and not self.in_result and \
                _STOP_SIGNAL_RX.search(body):
            # (round 75) a stop signal once the server was ready: what follows is the stop's (during the start-up
            # a signal is the start's question: a probe killing a slow start; inside an Ansible result every line
            # has the result's number, so the lines before and after the record cannot be told apart)
            self._stop_at(lineno)
        # open tracebacks: feed this line to its stream's, age the others
        if self.streams:
            tb = self.streams.get(stream)
            consumed = False
            if tb is not None:
                if self._tb_line(tb, line, lineno, body):
                    tb.idle = 0
                    if body.strip():
                        # (a blank line is no line the traceback printed: a paste's blank last line, or one between
                        # records of other processes, does not move the traceback to the stage reached since)
                        tb.ctx = self.ctx
                    consumed = True
                else:
                    del self.streams[stream]
                    if not (tb.state == "header" and tb.header[0] is _EMPTY_ERROR_SIG
                            and body.lstrip().startswith(CHAIN)):
                        # (an empty ERROR record followed by Python's chain line is the blank line before it in a
                        # traceback logged line by line with the prefix, not an error of its own)
                        self._finish_tb(tb)
            for key in list(self.streams):
                if key == stream:
                    continue
                other = self.streams[key]
                other.idle += 1
                limit = _TB_FRAMES_CLOSE if other.state == "frames" else _TB_IDLE_CLOSE
                if other.rec is not None and other.rec[0] != "nccl" and other.state in ("message", "between"):
                    limit = 0
                if other.idle > limit:
                    del self.streams[key]
                    self._finish_tb(other)
            if consumed:
                return
        stripped = body.strip()
        if not stripped:
            if line.fmt == FMT_VLLM and line.level == LEVEL_ERROR and self.chain_at != (stream, lineno - 1):
                # logger.exception(e) of an exception without a message: the traceback follows (not the blank
                # line after a chain line, the first traceback cut away: the next one opens as any other)
                self._open_tb(line, lineno, body, header=_EMPTY_ERROR_SIG)
            return
        if not self.lead_done:
            self._lead(line, lineno, stripped)
        if line.fmt in (FMT_RAW, FMT_VLLM, FMT_C10, FMT_UVICORN, FMT_PYLOG) and stripped.startswith(TB_START):
            self._open_tb(line, lineno, stripped)
            return
        m = IPY_TB_RX.match(stripped) if line.fmt == FMT_RAW and "Traceback" in stripped else None
        if m is not None:
            # IPython names the exception's type first; its line with the message (last) replaces it when pasted
            self._open_tb(line, lineno, stripped).entries[-1][:2] = [m.group("exc"), lineno]
            return
        m = PROCESS_HDR_RX.match(stripped) if line.fmt == FMT_RAW and stream[-1:] in ("", "/") else None
        if m:
            if not (m.group(2) and self.hdr_to == lineno - 1):
                self.proc_hdr_at = lineno
                cb = ASYNCIO_CB_RX.match(stripped)
                self.hdr_stage = None if cb is None else frame_stage(cb.group(1), cb.group(2)) if cb.group(2) else \
                    _NAME_STAGE.get(cb.group(1))
                if self.hdr_stage and self.hdr_cb is None and (self.until is None or lineno <= self.until):
                    self.hdr_cb = (lineno, line, stripped, self.hdr_stage) + self._when(line)
            self.proc_hdr, self.hdr_to = m.group(1) or self.proc_hdr, lineno
            return
        if line.fmt == FMT_UVICORN and '" 5' in body and _ACCESS_5XX_RX.search(body) is not None:
            self._access_error(line, lineno, stripped)
            return
        self._markers(line, lineno)
        # a raw line is matched as an error, unless it is a Python warning
        lvl = (LEVEL_WARNING if line.pywarn else LEVEL_ERROR) if line.level == LEVEL_RAW else line.level
        # (the Ascend CANN runtime indents its error records, each ending "[FUNC:..][FILE:..][LINE:..]": not code)
        # (pytest's frames, round 41, only before the paste's first error - an unplaced ERROR line aside, such as
        # its "___ ERROR collecting x.py ___" title: after one they report another test)
        if line.fmt in (FMT_RAW, FMT_VLLM) and (body.startswith("    ") or stripped.startswith(CODE_STARTS) or (
                ": in " in stripped and PYTEST_FRAME_RX.match(stripped) is not None
                and all(c["kind"] == ERROR_LINE and c["srank"] < 0 for c in self.cands))) \
                and not DESCRIBE_FIELD_RX.match(body) and "[FUNC:" not in stripped:
            # a frame or source line of a traceback whose start is not in this log (a cut or pasted excerpt):
            # the source text of a raise statement is not the error; a frame opens the cut traceback
            # code lines right before it in its stream (a record cut at a source or caret line) are its first lines
            run = self.code_run[1] if self.code_run[0] == (stream, lineno - 1) else lineno
            if not self.lead_done and self.lead is not None and self.lead[1] >= lineno - 1 and not self.cands:
                run = self.lead[0]  # the paste opens inside this traceback: its cut first lines are the traceback's
            if lvl != LEVEL_DEBUG and (frame_line(stripped) is not None or _source_stage(stripped)):
                self._tb_line(self._open_tb(line, run, stripped, headless=True), line, lineno, body)
            elif self.cands and self.cands[-1]["lineno"] == lineno - 1 and self.cands[-1]["srank"] < 0:
                self._wrapped(self.cands[-1], line, stripped)
            self.code_run = ((stream, lineno), run)
            return
        sig = match_signature(body, lvl)
        rec_key = (stream, line.rec) if (line.rec is not None and line.fmt == FMT_VLLM) else None
        shown = "NCCL WARN " + body if line.fmt == FMT_NCCL else body
        if sig is not None:
            if sig.kind == HEADER or (sig.kind == CONSEQUENCE and "RayTaskError(" in body
                                      and _RAY_TASK_HDR_RX.search(body) is not None):
                self._open_tb(line, lineno, body, header=sig)
                return
            inner = _match_failure(body, lvl) if sig.kind in (CONSEQUENCE, WEAK_CONSEQUENCE) else None
            # a wrapper quoting the failure on its own line is classed and placed by it, and stays a wrapper
            self._sig_candidate(inner or sig, line, lineno, shown, rec_key=rec_key, kind=inner and sig.kind)
            return
        if lvl == LEVEL_DEBUG:
            return
        if line.fmt == FMT_NCCL and line.level == LEVEL_ERROR:
            self._sig_candidate(_NCCL_WARN_SIG, line, lineno, shown)
            return
        exc_line = line.level == LEVEL_RAW and not line.pywarn and EXC_RX.match(stripped) is not None \
            and not stripped.split(":", 1)[0].endswith("Warning")
        if not exc_line and line.fmt == FMT_RAW and not line.pywarn and ("ERROR" in stripped[:120] or "CRITICAL" in
                                                                         stripped[:120] or "FATAL" in stripped[:120]):
            # an error record of a layout not parsed above ("[2025-01-02 10:00:00] ERROR x.py:1: Error in ...")
            exc_line = _LEVEL_WORD_RX.match(stripped) is not None
        if (line.level == LEVEL_ERROR and line.fmt in (FMT_VLLM, FMT_C10, FMT_UVICORN, FMT_PYLOG)) or exc_line:
            # an ERROR record without a signature, or an exception line whose traceback was cut away
            if body.lstrip().startswith(CHAIN):
                # Python's line between two chained tracebacks, the first cut away: no error of its own - the
                # traceback after it is read as any other
                self.chain_at = (stream, lineno)
                return
            if rec_key is not None and rec_key in self.rec_cand:
                return
            cls = _classify_text(body)
            # an unbracketed glog record is a C++ host's own (Triton, gRPC; PyTorch brackets its c10 records)
            placed = self._cut_placed(None, _text_hint(body, line.rec), cls, _method_stage(body),
                                      line.fmt == FMT_C10 and line.rec is None)
            key, own = self._when(line)
            # an ERROR record of torch's ProcessGroupNCCL.cpp without a signature: a weak consequence
            weak = line.fmt == FMT_C10 and line.rec and line.rec[1] == "ProcessGroupNCCL.cpp"
            self._add(WEAK_CONSEQUENCE if weak else ERROR_LINE, cls, placed, body, lineno, line.ts, key, own,
                      self._proc_name(line), line.pid, None, [stripped], rec_key)
        elif self.words is None and line.fmt == FMT_RAW and not (line.pywarn or line.quiet) and \
                _ERROR_WORDS_RX.search(stripped) is not None and (self.until is None or lineno <= self.until):
            self.words = (lineno, line, stripped) + self._when(line)

    def _access_error(self, line, lineno, text):
        """A request answered with a server error (uvicorn's access line, 5xx): the error logged just before it
        (an error line or exception the log gives no stage for) was that request's; the line itself stands in
        for the failure only when the log shows nothing else."""
        for c in self.cands if self.until is None or lineno <= self.until else ():  # none after the stop
            if c["srank"] < 0 and c["kind"] in (FAILURE, ERROR_LINE) and lineno - c["lineno"] <= _ACCESS_NEAR:
                c["stage"], c["basis"], c["conf"], c["srank"] = "request", BASIS_INFERRED, CONF_MEDIUM, _RANK["request"]
        self.no_recover = True
        try:
            self._markers(line, lineno)
        finally:
            self.no_recover = False
        key, own = self._when(line)
        self._add(ACCESS_ERROR, "other", ("request", BASIS_MESSAGE, CONF_HIGH), text, lineno, line.ts, key, own,
                  self._proc_name(line), line.pid, "the server answered a request with a server error; the error "
                  "logged before this line says why", [text], None)

    def _end_of_output(self):
        """The end of a command's output that Ansible's result carried: its tracebacks still open end with it, as at
        the end of a file (the playbook's next lines are none of theirs)."""
        for key in list(self.streams):
            self._finish_tb(self.streams.pop(key), at_eof=True)

    def finish(self):
        """Close the tracebacks still open at the end of the file."""
        self._end_of_output()
        if self.hdr_cb is not None:
            # (round 36) asyncio's report of an exception in a callback the frame map places, its traceback cut away:
            # an error of its own, placed by the callback it names
            lineno, line, text, stage, key, own = self.hdr_cb
            self._add(CUT_TRACEBACK, "other", self._cut_placed({stage}, None), text, lineno, line.ts, key, own,
                      self._proc_name(line), line.pid, None, [text], None)
        if self.words is not None and not (self.cands or self.reached or self.ready or self.hung):
            # no error of a known shape and no stage marker: the line that reads as an error is the failure
            lineno, line, text, key, own = self.words
            self._add(ERROR_WORDS, _classify_text(text), ("unknown", None, None), text, lineno, line.ts, key, own,
                      self._proc_name(line), line.pid, "no record of a known failure: this line reads as an error "
                      "and the log shows no stage; the server's own log from its start would place it", [text], None)


# an ERROR record with an empty message (logger.exception of an exception without text) heads its traceback
_EMPTY_ERROR_SIG = Signature(-2, HEADER, "", None, "other", WHERE, None, (), None)


_NCCL_WARN_SIG = Signature(-1, FAILURE, "", None, "nccl_error", AT_LEAST, "distributed_init", (), None)
_ACCESS_NEAR = 200                  # lines before a 5xx access line whose unplaced error was that request's
# candidate tiers: the first non-empty tier holds the root cause
_TIER = {FAILURE: 0, ERROR_LINE: 1, VICTIM: 2, CONSEQUENCE: 3, DIAGNOSTIC: 4, WEAK_CONSEQUENCE: 5, HEADER: 6,
         ACCESS_ERROR: 7, CUT_TRACEBACK: 8, ERROR_WORDS: 9}


# --------------------------------------------------------------------------------------------------------------
# the answer
# --------------------------------------------------------------------------------------------------------------

class LogStageError(Exception):
    """A log that cannot be read (the message names the path and the fix)."""


def expand_paths(paths):
    """Files to read for ``paths``: files as given, directories expanded (sorted, recursively, no hidden)."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            found = []
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for f in sorted(files):
                    if not f.startswith("."):
                        full = os.path.join(root, f)
                        if os.path.isfile(full):
                            found.append(full)
            if not found:
                raise LogStageError("log directory %s holds no files; point paths at the captured logs" % p)
            out.extend((p, f) for f in found)
        else:
            out.append((p, p))
    return out


def _open_log(path):
    if not os.path.exists(path):
        raise LogStageError("log file %s does not exist; check the path (or fetch the log from the node first)" % path)
    if not os.path.isfile(path):
        raise LogStageError("log path %s is not a regular file" % path)
    try:
        fh = open(path, "rb")
    except (IOError, OSError) as exc:
        raise LogStageError("cannot read log file %s: %s; fix its permissions or run as a user that can read it"
                            % (path, exc.strerror or exc))
    if path.endswith(".gz"):
        return gzip.GzipFile(fileobj=fh, mode="rb")
    return fh


def _until_value(value, what):
    """One cutoff: None (no cutoff) or a line count >= 0."""
    if value is None or value == "":
        return None
    try:
        n = None if isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        n = None
    if n is None or n < 0 or (isinstance(value, float) and n != value):
        raise LogStageError("until for %s is %r; give a line count (an integer >= 0) or null" % (what, value))
    return n


def until_list(until, keys):
    """``until`` as a list of cutoffs aligned with ``keys`` (paths or log names).

    ``until`` is None (no cutoff), a list (one entry per key, None for no cutoff), a dict (key -> line count;
    keys not in it get no cutoff) or, for a single key, one number.  Raises :class:`LogStageError`.
    """
    if until is None:
        return [None] * len(keys)
    if isinstance(until, dict):
        unknown = [k for k in until if k not in keys]
        if unknown:
            raise LogStageError("until names %s, which is not one of the logs given (%s)"
                                % (unknown[0], ", ".join(str(k) for k in keys)))
        return [_until_value(until.get(k), k) for k in keys]
    if isinstance(until, (list, tuple)):
        if len(until) != len(keys):
            raise LogStageError("until has %d entries for %d logs; give one per log (null for no cutoff)"
                                % (len(until), len(keys)))
        return [_until_value(u, k) for u, k in zip(until, keys)]
    if len(keys) == 1:
        return [_until_value(until, keys[0])]
    raise LogStageError("until is one value for %d logs; give a list with one entry per log" % len(keys))


def classify_files(paths, nodes=None, until=None):
    """Classify one or many logs (one per node, rank or container) into the first failing stage.

    ``paths``: files or directories (expanded, sorted).  ``nodes``: optional names, one per entry of
    ``paths`` (a directory's files all get its name).  ``until``: optional per-file cutoff counted in lines
    (see :func:`until_list`; a directory entry takes no cutoff): the file's line count when the server was
    last seen alive; errors on later lines are shutdown noise, returned under ``after_stop`` and never the
    failure.  Returns the JSON-serialisable answer.  Raises :class:`LogStageError` naming an unreadable path.
    """
    if isinstance(paths, (str, bytes)):
        paths = [paths]
    paths = [p.decode("utf-8", "surrogateescape") if isinstance(p, bytes) else str(p) for p in paths]
    if not paths:
        raise LogStageError("no log paths given")
    given_nodes = list(nodes) if nodes else []
    cutoffs = until_list(until, paths)
    items = []
    for i, p in enumerate(paths):
        node = given_nodes[i] if i < len(given_nodes) and given_nodes[i] not in (None, "") else None
        for top, f in expand_paths([p]):
            if node is not None:
                name = str(node)
            elif top != f:
                name = os.path.relpath(f, top)
            else:
                name = os.path.basename(f) or f
            if cutoffs[i] is not None and top != f:
                raise LogStageError("until is given for %s, a directory; give the cutoff per file (list its files "
                                    "in paths)" % p)
            items.append((f, name, cutoffs[i]))
    scans = []
    for f, name, limit in items:
        try:
            small = not f.endswith(".gz") and os.path.getsize(f) <= FULL_PARSE_BYTES
        except OSError:
            small = False
        fh = _open_log(f)
        try:
            if small:
                # read whole (a paste, a short run): it may be several hosts' outputs one after the other
                scans.extend(_scan_hosts(fh.read(), f, name, len(scans), limit))
            else:
                sc = _Scan(f, name, len(scans), limit)
                scan_stream(sc, fh.read)
                scans.append(sc)
        except (IOError, OSError, EOFError) as exc:
            raise LogStageError("error while reading log file %s: %s" % (f, exc))
        finally:
            fh.close()
    return build_answer(scans)


def _scan_hosts(data, name, node, index, until=None):
    """The scans of one small log in memory: one, or one per host where the log is Ansible's ad hoc output of
    several hosts one after the other (adhoc_blocks: each host's lines are a node of their own, numbered as in the
    log, so a later host's progress never clears an earlier host's failure)."""
    blocks = adhoc_blocks(data) if until is None else None
    parts = [(node, 1, data)] if blocks is None else blocks
    scans = []
    for host, start, part in parts:
        sc = _Scan(name, str(host), index + len(scans), until)
        sc.full, sc.lineno = True, start
        scan_stream(sc, io.BytesIO(part).read)
        scans.append(sc)
    return scans


def classify_texts(texts, names=None, nodes=None, until=None):
    """Like :func:`classify_files` for log contents already in memory (one text per node).

    ``until``: optional cutoff per text, counted in lines (see :func:`until_list`; a dict is keyed by name).
    """
    all_names = [str(names[idx] if names and idx < len(names) and names[idx] else "log" if len(texts) == 1
                     else "log%d" % (idx + 1)) for idx in range(len(texts))]
    cutoffs = until_list(until, all_names)
    scans = []
    for idx, text in enumerate(texts):
        node = nodes[idx] if nodes and idx < len(nodes) and nodes[idx] not in (None, "") else all_names[idx]
        # a lone surrogate (text decoded with surrogateescape) is read as the replacement character
        data = text if isinstance(text, bytes) else b"" if text is None else str(text).encode("utf-8", "replace")
        if len(data) <= FULL_PARSE_BYTES:
            scans.extend(_scan_hosts(data, all_names[idx], node, len(scans), cutoffs[idx]))
            continue
        sc = _Scan(all_names[idx], str(node), len(scans), cutoffs[idx])
        scan_stream(sc, io.BytesIO(data).read)
        scans.append(sc)
    return build_answer(scans)


def classify_text(text, name="log", node=None, until=None):
    """Classify one log given as a string (or bytes); same answer as :func:`classify_files` on that content.

    ``until``: optional line count written before the server was stopped (later errors go to ``after_stop``).
    """
    return classify_texts([text], names=[name], nodes=[node], until=None if until is None else [until])
