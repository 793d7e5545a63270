"""Line parsing for the log_stage classifier: wrappers, log formats, timestamps, traceback line shapes.

:func:`grep_prefix`, :func:`node_prefix` and :func:`json_record` take off what a tool that gathered the log put in
front of or around each line (grep's numbers, a node's or a pod's name, Docker's or journald's JSON record);
:func:`strip_wrappers` removes what a collector put around a line (journald, ``kubectl logs --timestamps``, the CRI
files of a node, ``docker compose``, CI viewers' ``| `` columns and bracketed RFC 3339 stamps, Ray's repeat counters);
:func:`parse_line` fills a :class:`Line` (format, stream, level, timestamp, message) from what is left.  The
formats are those of ``vllm-stages.md`` section 2: the vLLM formatter with or without its process tag, lines
with only the tag, NCCL, PyTorch c10/glog, uvicorn, Python logging of other libraries, and raw lines.

Standard library only; imports on Python 3.9.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import json
import re
import time

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_rules import (
    COLLECTIVE_INIT_SEQ, COLLECTIVE_RX, COLLECTIVE_STARTUP_SEQ, COLLECTIVE_TINY_NUMEL, FMT_C10, FMT_NCCL, FMT_PYLOG,
    FMT_RAW, FMT_UVICORN, FMT_VLLM)

MAX_LINE_CHARS = 2000               # a reported line is cut to this many characters

# line levels after parsing
LEVEL_DEBUG = "debug"
LEVEL_INFO = "info"
LEVEL_WARNING = "warning"
LEVEL_ERROR = "error"
LEVEL_RAW = "raw"                   # a line without a level (print, traceback, tqdm, C++ output)

ANSI_RX = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
ORPHAN_ANSI_RX = re.compile(r"\[[0-9;]{1,8}m(?=\S)")
# the same sequences in caret notation, as `cat -v`, less and vim show a control character (ESC as "^[", CR as "^M"),
# or with ESC spelt out as less shows it without -R ("ESC[1;36m", round 27)
CARET_ANSI_RX = re.compile(r"(?:\^\[|ESC)\[[0-9;?]*[ -/]*[@-~]|\^M$")
# rsyslog's escape of control characters it received (EscapeControlCharactersOnReceive, on by default: "#" and the
# byte in three octal digits - ESC "#033", CR "#015", TAB "#011"), as a server's log forwarded through syslog shows
RSYSLOG_ESC_RX = re.compile(r"#(0[0-3][0-7])")
RSYSLOG_ESCAPES = ("#033", "#015", "#011")
# (also the CRI log files a node keeps of each container, /var/log/pods/...: "<RFC 3339 time> stdout|stderr F|P <line>"
# - kubelet's CRI logging format, P a part of a longer line)
K8S_RX = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)((?:[.,]\d+)?)(Z|[+-]\d\d:?\d\d)?(?:\s|$)"
                    r"(?:std(?:out|err) [FP](?: |$))?")
# one JSON record a line that carries a line of the log: Docker's json-file log driver (the daemon's <id>-json.log of a
# container: the line the container printed in "log" with its newline, its stream, the daemon's RFC 3339 "time") and
# `journalctl -o json` (the line in "MESSAGE", the time in "__REALTIME_TIMESTAMP", microseconds since the epoch)
JSON_RECORD_KEYS = ('"log":', '"MESSAGE":')
# Ansible's result of a task that ran a command (a playbook's or AWX's job output): the default callback prints it as
# JSON on the host's line ('fatal: [gpu-a01]: FAILED! => {"changed": true, ..., "stderr": "Traceback ...\n...", ...}'),
# the YAML result format as block scalars ("  stderr: |-" and the lines under it, indented). What the command printed
# is the log: its output strings, stdout before stderr (vLLM's records go to stdout, an uncaught traceback to stderr)
ANSIBLE_RESULT_RX = re.compile(r"^(?:fatal|failed|ok|changed): \[[^\]]+\](?: \(item=.*?\))?(?:: [A-Z!]+)? =>(?: |$)")
ANSIBLE_OUTPUT_KEYS = ("stdout", "module_stdout", "stderr", "module_stderr", "exception")
ANSIBLE_STRING_RX = re.compile(r'"(?P<key>' + "|".join(ANSIBLE_OUTPUT_KEYS) + r')": ?"(?P<lit>(?:[^"\\]|\\.)*)')
# (a block whose first line starts with a blank names its indentation: "|2-", relative to its key's)
ANSIBLE_BLOCK_RX = re.compile(r"^(?P<ind> *)(?:" + "|".join(ANSIBLE_OUTPUT_KEYS) + r"): [|>][-+]?(?P<by>[1-9]?)[-+]?$")


def ansible_output(text):
    """The lines a command printed, read from the JSON of Ansible's result line ``text`` (cut by the scanner or not):
    a list (stdout's, then stderr's), or None when the line carries none."""
    found = {}
    for m in ANSIBLE_STRING_RX.finditer(text, text.find("{")):
        lit = m.group("lit")
        for cut in range(7):
            # (a string the scanner cut: without its partial escape at the end)
            try:
                found.setdefault(m.group("key"), json.loads('"%s"' % lit[:len(lit) - cut]))
                break
            except ValueError:
                continue
    lines = [ln for key in ANSIBLE_OUTPUT_KEYS if found.get(key) for ln in found[key].split("\n")]
    return lines or None


# Ansible's ad hoc command output (`ansible gpu -m shell -a 'tail -n 200 /var/log/vllm.log'`): each host's output
# under its own line "<host> | CHANGED|SUCCESS|FAILED | rc=<n> >>", one host after the other (ansible-core 2.19 and
# later print a failed host's "[ERROR]: Task failed: ..." report and its task above the first)
ADHOC_RX = re.compile(br"^(?P<host>[^\s|]+) \| (?:CHANGED|SUCCESS|FAILED!?|UNREACHABLE!) \| rc=-?\d+ >>\r?$")


def adhoc_blocks(data):
    """Each host's output of an Ansible ad hoc command output ``data`` (bytes): [(host, the line number of its first
    line, its bytes)], else None (no host's line). What Ansible printed above the first host's line is none of the
    hosts' logs."""
    if b" >>" not in data:
        return None
    lines = data.split(b"\n")
    blocks = []
    for number, ln in enumerate(lines, 1):
        m = ADHOC_RX.match(ln)
        if m is not None:
            blocks.append((m.group("host").decode("utf-8", "replace"), number + 1, []))
        elif blocks:
            blocks[-1][2].append(ln)
    return [(host, start, b"\n".join(body)) for host, start, body in blocks] or None


# a paste quoted as markdown or a mail reply ("> " in front of each line; ">" alone on a blank one)
QUOTE_RX = re.compile(r"^>(?: |$)")
# journalctl's short forms (man journalctl, --output): short / short-precise and syslog's files, short-iso /
# short-iso-precise; short-full ("Sun 2026-11-29 15:40:00 UTC host ident[pid]: "), short-monotonic ("[ 1234.567890]
# host ident[pid]: ", no calendar time; never the kernel's own "[ 1234.5] NVRM: ...", which names no process) and
# short-unix ("1780000000.123456 host ident[pid]: ") in JOURNAL_OTHER_RX
JOURNAL_RX = re.compile(
    r"^(?:([A-Z][a-z]{2}) ([ \d]\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)? [\w.-]+ [\w.@/-]+(?:\[\d+\])?:(?: |$)|"
    r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\S* [\w.-]+ [\w.@/-]+\[\d+\]:(?: |$))")
JOURNAL_ANY_RX = re.compile(r"^\S{1,6} ?[ \d]?\d \d\d:\d\d:\d\d(?:\.\d+)? [\w.-]+ [\w.@/-]+\[\d+\]: ")
JOURNAL_OTHER_RX = re.compile(
    r"^(?:[A-Z][a-z]{2} \d{4}-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)? [A-Z]{2,5}|\[ *\d+\.\d+\]|\d{9,11}\.\d+) "
    r"[\w.-]+ [\w.@/-]+\[\d+\]:(?: |$)")
# a syslog message as it travels (RFC 5424: "<PRI>1 TIMESTAMP HOST APP PROCID MSGID [SD]|- MSG"; RFC 3164's "<PRI>"
# in front of a short journal line) and Loki's logcli ("<RFC 3339 time> {label="value", ...} <line>", after K8S_RX)
SYSLOG_RX = re.compile(r"^<\d{1,3}>(?:1 (?P<ts>\S+) \S+ \S+ \S+ \S+ (?:-|(?:\[(?:[^\]\\]|\\.)*\])+)(?: |$))?")
LOKI_LABELS_RX = re.compile(r'^\{[\w.]+="(?:[^"\\]|\\.)*"(?:, ?[\w.]+="(?:[^"\\]|\\.)*")*\}(?: |$)')
# a CI log viewer's copied column (Buildkite: "  | ") and its bracketed RFC 3339 stamp ("[2024-09-05T00:38:34Z] ")
CI_COLUMN_RX = re.compile(r"^ {0,4}[|\u2502] ?")  # also k9s's border (U+2502 at both ends of a line)
BRACKET_RFC3339_RX = re.compile(r"^\[(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)((?:[.,]\d+)?)(Z|[+-]\d\d:?\d\d)?\] ")
COMPOSE_RX = re.compile(r"^([A-Za-z0-9][\w.-]*)\s+\| ?")
# round 31: Docker Desktop's log view copies each line of a container behind its local time in seconds
# ("2024-06-10 13:26:25 " + the line): stripped only where what follows is itself a log line - indented (a traceback's
# frame or source line; round 63: a frame line whose indentation the paste lost), a traceback's first line, a vLLM
# record, a process tag or another dated line - so a
# program's own "date time message" line keeps its time and words. (Round 72) Grafana's and other log viewers' copies
# put the time with its fraction, maybe a tab: "2026-11-29 15:40:00.123 " / "...123<TAB>"; what may follow is also
# anything that starts a log line (LOG_START_RX) - never Python logging's own "2024-06-10 13:26:25,123 - INFO - ..."
DESKTOP_RX = re.compile(r"^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:[.,]\d{1,9})?(?:[ \t]|$)")
DESKTOP_NEXT_RX = re.compile(r"\s|Traceback \(|File \"[^\"]+\", line \d|\(\w|\d{4}-\d\d-\d\d[ T]|"
                             r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d ")
# round 23: FastChat's workers (fastchat/utils.py build_logger: "%(asctime)s | %(levelname)s | %(name)s | %(message)s")
# pass the process's own stdout/stderr through the loggers "stdout" and "stderr" (StreamToLogger): what follows is
# the line the process printed (vLLM's records, a traceback); a paste cut inside the wrapper leaves nothing
FASTCHAT_STREAM_RX = re.compile(r"^\d{4}-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) \| [A-Z]+ \| std(?:out|err)(?: \| |\s*$)")
# (round 47) LocalAI's gRPC backends relay the backend process's stdout/stderr through its console logger
# (zerolog's "3:04PM" time and "DBG"/"INF"/"ERR" levels): "9:47AM DBG GRPC(<model>-127.0.0.1:44245): stderr <line>"
LOCALAI_STREAM_RX = re.compile(r"^\d{1,2}:\d\d[AP]M [A-Z]{3} GRPC\([^)]*\): std(?:out|err) ")
# (round 52) TorchServe relays a model worker's stdout/stderr through log4j2 (its log4j2.xml pattern "%d{ISO8601}
# [%-5p] %t %c - %m%n", the worker thread "W-<port>-<model>_<version>-stdout", logger MODEL_LOG):
# "2024-10-03T17:37:44,150 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - <line>"
# (its ISO time may already be stripped as an outer timestamp)
TORCHSERVE_STREAM_RX = re.compile(r"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{3} )?\[[A-Z]+ *\] W-\d+-\S+-std(?:out|err) [\w.]+ - ")
# (a node's prefix) the tools that gather one log from many nodes or pods put the source before every line:
# `kubectl logs --prefix` "[pod/<pod>/<container>] " or "[node/<node>] " (kubectl's logs command), Slurm's
# `srun --label` the task number ("0: ", padded for wider task ids), pdsh and clush the host ("gpu-a01: "). kubectl's
# form is taken wherever it is; "<word>: " only in a log whose first lines carry it, in front of what starts a log line
# (LOG_START_RX) or once its word has been taken so - never an exception's or a level's name ("ValueError: ", "INFO: ")
NODE_PREFIX_RX = re.compile(r"^(?:\[(?:pod|node)/(?P<k>[^\s\]]{1,300})\](?: |$)|"
                            r"(?P<t> {0,4}\d{1,5}|[A-Za-z0-9][\w.-]{0,62}):(?: |$))")
NOT_NODE_RX = re.compile(r"(?:error|exception|warning|exit|interrupt|failure|fault|failed|traceback)$|"
                         r"^(?:debug|info|warn|critical|fatal|trace|notice|note|hint|usage|reason|message|msg)$", re.I)
LOG_START_RX = re.compile(
    r"\((?:[A-Za-z_][^()]{0,80} )?pid=\d+|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?:(?:\d{4}-)?\d\d-\d\d \d\d:|\[)|"
    r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL): {2,}|Traceback \(most recent|\s*File \"|\[[IWEF]\d{4} |"
    r"[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b|\[[A-Za-z_][\w-]*\d+\]:|"
    r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d |[IWEF]\d{4} \d\d:\d\d:\d\d|"
    r"[\w.-]+:\d+:\d+ \[\d+\] NCCL ")
# (grep's own prefix) `grep -n` puts the line number before each line it prints, `grep -Hn` / `grep -rn` the file and
# the number, each followed by ":" (a matching line) or "-" (a line of context), and "--" between groups of context
# (GNU grep's manual, "Output Line Prefix Control" and "Context Line Control"): taken where one of a log's first lines
# starts with one, then wherever its number goes on increasing (a date's or a clock time's never does); each file of
# grep -r is a stream of its own
GREP_FILE_RX = re.compile(r"^(?P<f>[^\s:]*?[./][^\s:]*?)(?P<s>[:-])(?P<n>\d{1,9})(?P=s)")  # a path (an NCCL host's no)
GREP_N_RX = re.compile(r"^(?P<n>\d{1,9})(?P<s>[:-])")


def grep_prefix(text, state, take):
    """(whether ``text`` is a line grep printed, the file it named or None, the line) - (False, None, ``text``) when
    it is not. ``state``: ``taken`` (the last line number taken of each file, "" without one) and ``next`` (the number
    a first line's prefix expects on the next line), grown here; ``take``: whether grep's output may begin here."""
    taken = state["taken"]
    m = GREP_N_RX.match(text) if text[:1].isdigit() else None
    if m is None and (":" in text[:270] or "-" in text[:270]):
        m = GREP_FILE_RX.match(text)
    if m is None:
        return (True, None, "") if text == "--" and taken else (False, None, text)
    key, n, rest = m.groupdict().get("f") or "", int(m.group("n")), text[m.end():]
    before = taken.get(key)
    # (what grep prints begins right after its prefix: never with a blank, and with a digit only as a dated line -
    # a date or a clock time split at its first "-" or ":" goes on with digits; a compiler's "x.cu:12:5: error" - or
    # it is numbered one after such a prefix of the line before: a traceback's line, indented by two or more, not
    # Python's one-space "x.py:41: UserWarning"; another file of grep -r once one was taken)
    if before is not None and n > before or before is None and (take and (
            rest[:1] not in ("", " ", "\t") and (not rest[:1].isdigit() or LOG_START_RX.match(rest)) or
            state["next"].get(key) == n and (rest[:2] == "  " or rest[:1] not in ("", " ")) and not rest[:1].isdigit())
            or key and taken and "" not in taken):
        taken[key] = n
        return True, key or None, rest
    if take and before is None and (not key or "/" in key or key.endswith((".log", ".txt", ".out", ".err"))):
        # (a file that reads as one - an NCCL record's dotted host and pid never go on as "<path>:<n + 1>:")
        state["next"][key] = n + 1
    return False, None, text


def dated_lines(lines):
    """Whether a log viewer put its own time in front of every one of ``lines`` (a log's first non-blank lines):
    each starts with DESKTOP_RX's date and one of them goes on with what starts a log line or with an indentation (a
    traceback's line: Python logging's own lines never print a traceback's lines behind its time)."""
    heads = [DESKTOP_RX.match(text) for text in lines]
    return len(lines) >= 2 and all(heads) and any(
        LOG_START_RX.match(text, m.end()) or text[m.end():m.end() + 1].isspace() for text, m in zip(lines, heads))


def paste_indent(lines):
    """The indentation a whole paste was given (markdown's indented code block, a YAML block scalar as Ansible's YAML
    callback prints a command's output, a mail), read from its first non-blank ``lines``: the least indentation of
    them - a traceback's frame line counted without the 2 Python gives it - when it is 4 or more, over three lines or
    more or in front of what starts a log line (one or two indented lines alone are a traceback's source lines as
    likely); else 0 (a log's own lines start at its margin)."""
    least, starts = None, False
    for text in lines:
        if LINENO_TAB_RX.match(text) is not None:
            return 0                    # `cat -n`'s numbers, right-aligned: no indentation
        rest = text.lstrip(" ")
        n = len(text) - len(rest) - (2 if rest[:6] == 'File "' else 0)
        if least is None or n < least:
            least, starts = n, False
        starts = starts or n == least and LOG_START_RX.match(rest) is not None
    return least if least is not None and least >= 4 and (starts or len(lines) >= 3) else 0


NODE_FIRST_LINES = 3                # "<word>: " prefixes are looked for only where one of a log's first lines has one
_MAX_NODE_WORDS = 256
_DIGITS_RX = re.compile(r"\d+")


def node_prefix(text, known, take):
    """(the node or task a gathering tool named in front of ``text``, the text after it), else (None, ``text``).
    ``known``: the "<word>: " prefixes taken so far in this log; ``take``: whether a new word may be taken (grows
    ``known``)."""
    m = NODE_PREFIX_RX.match(text)
    if m is None:
        return None, text
    if m.group("k") is not None:
        return m.group("k"), text[m.end():]
    word, rest = m.group("t").strip(), text[m.end():]
    if word in known:
        return word, rest
    if not take or NOT_NODE_RX.search(word) is not None or len(known) >= _MAX_NODE_WORDS:
        return None, text
    if LOG_START_RX.match(rest) is None and _DIGITS_RX.sub("0", word) not in known and not (
            not known and _DIGITS_RX.search(word) is not None):
        # (a word shaped as one taken - "gpu-a02" after "gpu-a01", task 7 after task 0 - is another node's; among a
        # log's first lines, a word with a number - a host, a task - before any line)
        return None, text
    known.update((word, _DIGITS_RX.sub("0", word)))
    return word, rest


# a log viewer's copied line numbers (Buildkite's and GitHub Actions' raw views: "3597<TAB>...")
# (also `cat -n`'s, right-aligned in six columns: on a blank line the number alone once the line's end is stripped)
LINENO_TAB_RX = re.compile(r"^(?: {0,7}\d{1,7}\t| {1,7}\d{1,7}$)")
# pytest's failure report (_pytest/_code/code.py): "E   <exception line>", ">   <the failing source line>", and
# (round 41) a frame as "path/x.py:12: in func" above its indented source (--tb=long/short)
PYTEST_E_RX = re.compile(r"^E {3,}(?=\S)")
PYTEST_SRC_RX = re.compile(r"^> {3,}(?=\S)")
PYTEST_FRAME_RX = re.compile(r"^(?P<path>[^\s:\"]+\.py):\d+: in (?P<func>[\w<>]+)$")
RAY_REPEAT_RX = re.compile(r"\s*\[repeated \d+x across cluster\]")
# the process tag of vLLM's and Ray's worker prefix; a Ray Serve replica's actor names its app and deployment
# ("(ServeReplica:app:LLMServer pid=263, ip=10.0.0.5)", round 13), a V1 worker its ranks ("(VllmWorker PP0_TP1 pid=9)");
# an actor class may be private (V0's "(_AsyncLLMEngine pid=7)" under engine_use_ray, round 27); Ray names an actor
# by its repr where the class has one, and Ray Data its map actors by their operator ("(ActorWorker(actor_infer-0)
# pid=7, ip=...)", "(MapWorker(MapBatches(vLLMEngineActor)) pid=7, ...)": round 30)
TAG_PROC = r"[A-Za-z_][\w\-:]*(?:\((?:[^()]|\([^()]*\))*\))?(?: (?:rank=\d+|[A-Z]{2}\d+(?:_[A-Z]{2}\d+)*))?"
VLLM_RX = re.compile(
    r"\((?P<proc>" + TAG_PROC + r") pid=(?P<pid>\d+)(?:, ip=(?P<ip>[^)]+))?\) "
    r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?:(?:\d{4}-)?(?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)? \[?|\[)"
    r"(?P<file>[^\]\s:]+):(?P<lineno>\d+)\[?\] ?(?P<msg>.*)$")
# (round 48: a paste that mangled the closing bracket, "[multiproc_executor.py:1007[]", as GitHub's markdown does)
# (round 13: a record whose date a paste or a log viewer dropped keeps its bracketed file: "ERROR [serving.py:830] ...";
# round 42: a logging config (VLLM_LOGGING_CONFIG_PATH, a plugin's own) that keeps vLLM's format but not its datefmt
# writes Python's default asctime with the year, "ERROR 2026-03-02 22:27:34,901 [core.py:12] ...")
VLLM_NOTAG_RX = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?:(?:\d{4}-)?(?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)? \[?|\[)"
    r"(?P<file>[^\]\s:]+):(?P<lineno>\d+)\[?\] ?(?P<msg>.*)$")
# (round 45: such a record behind another program's prefix, found within a line's first characters)
EMBEDDED_VLLM_RX = re.compile(r"\s(?=(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d"
                              r"(?:[.,]\d+)? \[?[^\]\s:]+:\d+\[?\] )")
_EMBED_WORDS = (" ERROR ", " INFO ", " WARNING ", " DEBUG ", " CRITICAL ", " WARN ")
# (round 14: a paste that kept only the bracketed file, "[serving_chat.py:1001] openai_harmony.HarmonyError: ...":
# its level is unknown, so the rest is read as a raw line that keeps the record's file; round 35: also the lines of a
# traceback such a record carries, indented as logged: "[multiproc_executor.py:559]   File ...")
VLLM_FILEONLY_RX = re.compile(r"^\[(?P<file>[A-Za-z_][\w.-]*\.py):(?P<lineno>\d+)\] (?P<msg>\s*\S.*)$")
# (round 34: also Ray's tag of a worker process that has no actor or task name yet, "(pid=5623) ...")
TAGONLY_RX = re.compile(r"^\((?:(?P<proc>" + TAG_PROC + r") )?pid=(?P<pid>\d+)(?:, ip=(?P<ip>[^)]+))?\) ?(?P<rest>.*)$")
NCCL_RX = re.compile(
    r"^(?:\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[^\]]*\] )?(?P<host>[^:\s\[\]]+):(?P<pid>\d+):(?P<tid>\d+) "
    r"\[(?P<dev>\d+)\] (?:[\d.]+ )?(?:\S+:\d+(?: \([^)]*\))? )?NCCL (?P<lvl>INFO|WARN|TRACE|CALL|ABORT) ?(?P<msg>.*)$")
RANK_RX = re.compile(r"^\[rank(\d+)\]: ?")
# torchrun --tee: every line of a worker copied to torchrun's own output behind "[<role><local_rank>]:"
# (torch/distributed/elastic/multiprocessing/tail_log.py, role "default" unless --role); "[rankN]:" is
# PyTorch's own rank prefix and stays with RANK_RX
TEE_RX = re.compile(r"^\[(?!rank\d)([A-Za-z_][\w-]{0,39}?\d+)\]:")
# NCCL communicator life cycle (init.cc: "... comm %p rank %d nranks %d ... - Init START" / "- Init COMPLETE",
# "comm %p rank %d nranks %d cudaDev %d busId %lx - Destroy COMPLETE")
NCCL_COMM_RX = re.compile(r"\bcomm (0x[0-9a-fA-F]+) .*- (Init START|Init COMPLETE|Destroy COMPLETE)\s*$")
# a launcher line about one worker: torchrun "failed (exitcode: 1) local_rank: 1 (pid: 690) of binary: ..."
SUBJECT_RX = re.compile(r"\blocal_rank: (\d+) \(pid: (\d+)\)")
# torchrun itself stopped by a signal from outside
STOP_RX = re.compile(r"Received (\d+) death signal|SignalException: Process \d+ got signal: (\d+)")
MAX_COMMS = 1024
# (round 83) c10's MessageLogger (c10/util/Logging.cpp) prints the date as the number (month + 1) * 100 + day, unpadded:
# "[W813 11:52:00.306168204 CUDACachingAllocator.cpp:3933]" is August 13 (three digits from January to September)
C10_RX = re.compile(
    r"^\[(?P<lvl>[IWEF])(?:(?P<ts>\d{3,4} \d\d:\d\d:\d\d)(?P<frac>\.\d+)?)? (?:\d+ )?(?P<file>[^\]\s:]+):\d+\] ?(?P<msg>.*)$")
GLOG_RX = re.compile(
    r"^(?P<lvl>[VIWEFC])(?P<ts>\d{4} \d\d:\d\d:\d\d)(?P<frac>\.\d+)? +\d+ [^\]\s:]+:\d+\](?: \[[^\]]*\])? ?(?P<msg>.*)$")
# Ray's C++ core (raylet, core worker, GCS: src/ray/util/logging.cc, spdlog pattern "[%Y-%m-%d %H:%M:%S,%e %L %P %t]"):
# "[2024-06-13 16:11:51,588 E 13261 13261] core_worker.cc:228: Failed to register worker ..." (round 34)
RAY_CPP_RX = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?P<frac>,\d+)? (?P<lvl>[DIWEC]) \d+ \d+\] "
                        r"(?P<file>[\w.]+\.(?:cc|h|cpp)):\d+: ?(?P<msg>.*)$")
UVICORN_RX = re.compile(r"^(?P<level>INFO|WARNING|ERROR|DEBUG|CRITICAL|TRACE):\s+(?P<msg>.*)$")
PYLOG_RX = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[.,]\d+)?\s*(?:-\s*)?(?:\[\s*)?"
    r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b\]?[\s:-]*(?P<msg>.*)$")
# a structured record that carries a line of its own (round 13): a JSON record's level and message (Python's JSON
# formatters, NIM: '"level": "ERROR", "message": "..."'; the closing quote and brace may be on a later line) and
# logrus' text format (Go engines relaying a process' output: 'time="..." level=info msg="  File \\"...\\", line 3"')
STRUCT_RX = re.compile(r'"(?:level|levelname|severity)": ?"(?P<jlevel>[A-Za-z]+)".*?"(?:message|msg)": ?"'
                       r'(?P<jmsg>(?:[^"\\]|\\.)*)|\blevel=(?P<level>[a-z]+) .*?\bmsg="(?P<msg>(?:[^"\\]|\\.)*)')
STRUCT_UNESCAPE_RX = re.compile(r'\\(["\\])')
PYWARN_RX = re.compile(r"^\S+\.py:\d+: \w*Warning: ")
# (also faulthandler's dump of a crashed process' threads: 'File "x.py", line 12 in func', most recent call first;
# CPython Python/traceback.c dump_frame)
FRAME_RX = re.compile(r'^\s*(?:File ")?(?P<path>[^"]*)", line \d+,? in (?P<func>\S+)')
# a frame line the paste's end (or a hard wrap) cut inside its path or after its number ('File "/usr/lo',
# 'File "/x.py", line 62, i'): its path is read, its function is not known (round 13)
CUT_FRAME_RX = re.compile(r'^\s*File "(?P<path>[^"]+)(?:", line \d*(?:, ?i?n?)?)?(?P<func>)$')
# the first line(s) of a record whose traceback follows: multiprocessing's "Process X:" (CPython BaseProcess._bootstrap,
# group 1) and asyncio's "Future/Task exception was never retrieved" with its "future: <...>" line (group 2; CPython
# futures.py __del__ -> base_events.default_exception_handler: message, then "future: repr", then exc_info, 3.4 -> 3.13)
# and a callback's ("Exception in callback <cb>" then "handle: <Handle ...>": events.py Handle._run, round 13)
PROCESS_HDR_RX = re.compile(r"^(?:Process (\S+):|(?:Future|Task) exception was never retrieved|Exception in callback .+|"
                            r"(future|handle): <(?:Future|Task|Handle|TimerHandle) .*>)$")
# kubectl describe's fields (kubectl/pkg/describe describe.go: prefixWriter levels of two spaces, a tabwriter
# padding "Reason:\t%s" to a column - "      Reason:       OOMKilled"): indented, yet no source line of a traceback;
# likewise a member of a pretty-printed JSON object (an error body a client prints: '    "message": "..."', round 13)
# asyncio's callback header names the callback that raised (events.py format_helpers._format_callback_source: the
# function's qualified name and arguments, "at FILE:LINE" when the source is known; a functools.partial shows as
# "functools.partial(<function NAME at 0x...>, ...)"): the bottom frame of the traceback that follows (round 33)
ASYNCIO_CB_RX = re.compile(r"^Exception in callback (?:functools\.partial\(<function )?(?:[\w<>]+\.)*(\w+)(?:.* at (\S+\.py):\d+>?\)?)?")
DESCRIBE_FIELD_RX = re.compile(r"^ {4,}(?:[A-Z][A-Za-z]*(?: [A-Z][A-Za-z]*)?: {2,}\S|\"\w+\": ?[\"\[{\d])")
EXC_RX = re.compile(
    r"^(?:(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Iteration|Warning|Failure|Failed)|"
    r"(?:[A-Za-z_]\w*\.)*(?:Base)?ExceptionGroup)(?:\([\w.]*\))?(?::|$)")
CARETS_RX = re.compile(r"^[\^~ ]+$")
TB_START = "Traceback (most recent call last)"
# the markup a paste carries around a log copied from an issue or a chat (a markdown code fence "```text", GitHub's
# collapsible "<details>" and its "<summary>...</summary>", "<pre>"): no line of the log - read as a blank line, never
# as the exception of a traceback cut above it
MARKUP_RX = re.compile(r"^\s*(?:`{3,}[\w+.-]*|</?(?:details|summary|pre|code)>.*)$")
# IPython / Jupyter tracebacks (IPython.core.ultratb, 8.x; VS Code's notebook links): the exception's type first (a
# wrapper's with its cause: "RayTaskError(KeyError)", round 27)
# ("KeyError                                  Traceback (most recent call last)"), then cells and frames as
# "File ~/env/lib/python3.9/site-packages/vllm/entrypoints/llm.py:123, in LLM.__init__(self, model, ...)" with
# numbered source lines and an arrow on the current one, the exception line last
IPY_TB_RX = re.compile(r"^(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:\([\w.]+\))?)\s{2,}Traceback \(most recent call last\)\s*$")
# IPython 7 (Colab) writes a frame as "/path/x.py in func(...)", Colab as a link "[/path/x.py](https://...) in func(...)";
# a cell's own code is the function "<cell line: N>" (IPython 8's name for a cell's top level)
IPY_FRAME_RX = re.compile(r"^\s*(?:File )?\[?(?P<path>[^\s\[\]]+?\.py)(?::\d+)?(?:\]\([^)]*\))?,? in (?:[\w<>]+\.)*"
                          r"(?P<func>[\w<>]+|<cell line: \d+>)\(")
# (round 36: IPython 8 heads a frame of code that has no file - a notebook cell Databricks compiles as
# "<command-N>", an exec'd "<string>" - as "File <name>, line N", as it heads Jupyter's cells "Cell In[N], line N")
IPY_SOURCE_RX = re.compile(r"^(?:-*>\s*)?(?:\d+|\[\d+\]\([^)]*\))\s|^Cell In\s*\[\d+\], line \d+|^\(\.\.\.\)$|"
                           r"^File <[\w.-]+>, line \d+$|"
                           r"\.ipynb\]\([^)]*\) Cell \d+ line \d+|^\[?<ipython-input-[\w-]+>(?:\]\([^)]*\))? in ")
CODE_STARTS = ('File "', "File &quot;", "File ~/", "File [", "[/", "raise ", "^^^", "~~~")  # &quot;: HTML; the others:
# IPython's frames (~/ abbreviated, [ a VS Code / Jupyter link, [/ Colab's link)
CHAIN = ("The above exception was the direct cause", "During handling of the above exception")

MONTHS = {"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6, "Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10,
          "Nov": 11, "Dec": 12}
CUM_DAYS = (0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335)   # a leap year: Feb 29 exists

# byte-level timestamp finder for lines the prefilter skipped
TS_BYTES_RX = re.compile(
    rb"(?:(?<!\d)\d{4}-)?(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)|(?<![\w])[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.")


def tkey(month, day, hh, mm, ss, fraction=0.0):
    """Seconds since the start of a (leap) year for a year-less timestamp, or None when it is not a date."""
    try:
        month = int(month)
        day = int(day)
        if not 1 <= month <= 12 or not 1 <= day <= 31:
            return None
        return (CUM_DAYS[month - 1] + day - 1) * 86400.0 + int(hh) * 3600 + int(mm) * 60 + int(ss) + fraction
    except (TypeError, ValueError, IndexError):
        return None


def last_ts(buf, pos=0, end=None):
    """The match of the last timestamp TS_BYTES_RX finds in ``buf[pos:end]``, or None."""
    last = None
    for last in TS_BYTES_RX.finditer(buf, pos, len(buf) if end is None else end):
        pass
    return last


def match_tkey(m):
    """The year-less time key of a TS_BYTES_RX match (None without a match, or when it is not a date)."""
    if m is None:
        return None
    g = m.groups()
    if g[0] is not None:
        return tkey(g[0], g[1], g[2], g[3], g[4])
    return tkey(g[5], g[6], g[7], g[8], g[9])


def frac(text):
    """The fraction of a second of ``.123`` / ``,123`` (0.0 when absent or malformed)."""
    if not text:
        return 0.0
    try:
        return float("0" + text.replace(",", "."))
    except ValueError:
        return 0.0


def cut(text, limit=MAX_LINE_CHARS):
    """``text`` cut to ``limit`` characters (with ``...`` when cut)."""
    return text if len(text) <= limit else text[:limit] + "..."


def clean(text):
    """``text`` without ANSI escape sequences and NUL characters."""
    if "\x1b" in text:
        text = ANSI_RX.sub("", text)
    return text.replace("\x00", "")


class Line(object):
    """One parsed line (after wrappers): format, stream, level, timestamp and message."""

    __slots__ = ("fmt", "stream", "proc", "pid", "level", "ts", "tkey", "msg", "rec", "outer_tkey", "outer_src",
                 "pywarn", "tee", "node", "dated", "quiet")

    def __init__(self):
        self.fmt = FMT_RAW
        self.stream = ""
        self.proc = None
        self.pid = None
        self.level = LEVEL_RAW
        self.ts = None
        self.tkey = None
        self.msg = ""
        self.rec = None
        self.outer_tkey = None
        self.outer_src = None
        self.pywarn = False
        self.tee = None
        self.node = None                 # the node (task, pod) a gathering tool named in front of the line
        self.dated = False               # its log has a log viewer's time in front of every line (dated_lines)
        self.quiet = False               # a structured record's own level is below ERROR (its words are no error)


LEVELS = {"DEBUG": LEVEL_DEBUG, "TRACE": LEVEL_DEBUG, "INFO": LEVEL_INFO, "WARNING": LEVEL_WARNING,
          "WARN": LEVEL_WARNING, "ERROR": LEVEL_ERROR, "CRITICAL": LEVEL_ERROR, "FATAL": LEVEL_ERROR,
          "V": LEVEL_DEBUG, "I": LEVEL_INFO, "W": LEVEL_WARNING, "E": LEVEL_ERROR, "F": LEVEL_ERROR, "C": LEVEL_ERROR}


def strip_wrappers(text, line):
    """Remove container/journal/kubectl/CI/Ray wrappers from ``text``; return the text left.  ``line.outer_tkey``
    and ``outer_src`` are set from the first wrapper that carries a time."""
    for dummy in range(3):
        changed = False
        c0 = text[:1]
        if (c0.isdigit() or c0 == " ") and ("\t" in text[1:15] or len(text) < 15):
            m = LINENO_TAB_RX.match(text)
            if m:
                text = text[m.end():]
                c0 = text[:1]
        m = None
        if c0.isdigit() and text[4:5] == "-" and text[10:11] == "T":
            m = JOURNAL_RX.match(text)
            if m:
                _outer(line, tkey(m.group(7), m.group(8), m.group(9), m.group(10), m.group(11)), "journald")
            else:
                m = K8S_RX.match(text)
                if m:
                    _outer_rfc3339(line, m)
        elif c0 in MONTH_INITIALS and text[3:4] == " " and (text[4:5] == " " or text[6:7] == " "):
            m = JOURNAL_RX.match(text)
            if m:
                _outer(line, tkey(MONTHS.get(m.group(1), 0), m.group(2).strip() or 0, m.group(3), m.group(4),
                                  m.group(5)), "journald")
        elif "]:" in text[:200] and (c0.isupper() and text[3:5] == " 2" or c0 == "[" and "." in text[1:14]
                                     or c0.isdigit() and "." in text[9:12]):
            m = JOURNAL_OTHER_RX.match(text)
            if m and m.group(1):
                _outer(line, tkey(m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)), "journald")
        elif c0.isdigit() and text[4:5] == "-" and text[10:11] == " " and text[19:20] in ("", " ", "\t", ".", ","):
            m = DESKTOP_RX.match(text)
            if m and (line.dated or DESKTOP_NEXT_RX.match(text, m.end()) or LOG_START_RX.match(text, m.end())):
                _outer(line, tkey(m.group(2), m.group(3), m.group(4), m.group(5), m.group(6),
                                  frac(text[19:m.end() - 1]) if text[19:20] in ".," else 0.0), "desktop")
            else:
                m = None
        elif c0 == "<" and text[1:2].isdigit():
            m = SYSLOG_RX.match(text)
            if m and m.group("ts"):
                k = K8S_RX.match(m.group("ts"))
                if k:
                    _outer_rfc3339(line, k)
        if m:
            text = text[m.end():]
            changed = True
            if text[:1] == "{" and "=" in text[:80]:
                k = LOKI_LABELS_RX.match(text)
                text = text[k.end():] if k else text
        if not changed and "]: " in text[:120] and text[:1] not in "([":
            m = JOURNAL_ANY_RX.match(text)
            if m:
                text = text[m.end():]
                changed = True
        if not changed and c0 == "[" and text[5:6] == "-":
            m = BRACKET_RFC3339_RX.match(text)
            if m:
                _outer_rfc3339(line, m)
                text = text[m.end():]
                changed = True
        if not changed and ("|" in text[:6] or "\u2502" in text[:6]):
            m = CI_COLUMN_RX.match(text)
            if m:
                text = text[m.end():].rstrip(" \u2502")
                changed = True
        if not changed and c0.isdigit() and text[19:22] == " | ":
            m = FASTCHAT_STREAM_RX.match(text)
            if m:
                _outer(line, tkey(m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)), "fastchat")
                text = text[m.end():]
                changed = True
        if not changed and "] W-" in text[:40]:
            m = TORCHSERVE_STREAM_RX.match(text)
            if m:
                text = text[m.end():]
                changed = True
        if not changed and c0.isdigit() and "M " in text[4:9]:
            m = LOCALAI_STREAM_RX.match(text)
            if m:
                text = text[m.end():]
                changed = True
        if not changed and "|" in text[:80]:
            m = COMPOSE_RX.match(text)
            if m:
                text = text[m.end():]
                changed = True
        if not changed:
            break
    if "[repeated " in text:
        text = RAY_REPEAT_RX.sub("", text)
    return text


MONTH_INITIALS = frozenset(m[0] for m in MONTHS)


def _outer(line, key, src):
    """Keep the first (outermost) collector's time of a line."""
    if line.outer_tkey is None:
        line.outer_tkey, line.outer_src = key, src


def _outer_rfc3339(line, m):
    """The collector's RFC 3339 time of K8S_RX or BRACKET_RFC3339_RX (``rfc3339`` and the zone's first letter)."""
    _outer(line, tkey(m.group(2), m.group(3), m.group(4), m.group(5), m.group(6), frac(m.group(7))),
           "rfc3339" + (m.group(8) or "")[:1])


def json_record(text, line):
    """The line a Docker json-file or journald JSON record carries (its time as the collector's), else ``text``."""
    try:
        rec = json.loads(text)
        body = rec["log"] if "log" in rec else rec["MESSAGE"]
    except (ValueError, KeyError, TypeError):
        return text
    if not isinstance(body, str):
        return text
    when = rec.get("time") if "log" in rec else rec.get("__REALTIME_TIMESTAMP")
    m = K8S_RX.match(when) if isinstance(when, str) and "log" in rec else None
    if m:
        _outer_rfc3339(line, m)
    elif isinstance(when, str) and when.isdigit():
        t = time.gmtime(int(when) // 1000000)
        _outer(line, tkey(t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, int(when) % 1000000 / 1e6), "journald")
    return body.rstrip("\r\n")


def parse_line(text, line):
    """Fill ``line`` from ``text`` (wrappers already removed)."""
    if "level" in text[:120]:
        m = STRUCT_RX.search(text)
        if m:
            # the record's own line is read as a line; an error record's line that is no record itself is one
            level = (m.group("jlevel") or m.group("level")).upper()
            _parse_line(STRUCT_UNESCAPE_RX.sub(r"\1", m.group("jmsg") if m.group("jlevel") else m.group("msg")), line)
            if line.fmt == FMT_RAW and LEVELS.get(level) == LEVEL_ERROR:
                line.fmt, line.level, line.stream = FMT_PYLOG, LEVEL_ERROR, line.stream or "record"
            line.quiet = LEVELS.get(level) != LEVEL_ERROR
            return
    _parse_line(text, line)


def _tag(m, line):
    """The process of a vLLM or Ray worker tag (VLLM_RX, TAGONLY_RX): its own stream."""
    line.proc, line.pid = m.group("proc"), m.group("pid")
    line.stream = (line.proc or "") + "#" + line.pid


def _native(m, line, stream, rec=None, dated=False):
    """A C++ host's record (C10_RX, GLOG_RX: ``MMDD HH:MM:SS``; RAY_CPP_RX, ``dated``: ``YYYY-MM-DD HH:MM:SS``): level,
    time, message; its own stream unless a tag gave one."""
    line.fmt = FMT_C10
    line.level = LEVELS.get(m.group("lvl"), LEVEL_INFO)
    t = m.group("ts")
    if t and not dated and t.index(" ") == 3:
        t = "0" + t                     # c10's unpadded month (C10_RX)
    if t:
        line.ts = t + (m.group("frac") or "")
        line.tkey = tkey(t[5:7], t[8:10], t[11:13], t[14:16], t[17:19], frac(m.group("frac"))) if dated else \
            tkey(t[0:2], t[2:4], t[5:7], t[8:10], t[11:13], frac(m.group("frac")))
    line.msg = m.group("msg")
    line.rec = rec
    if not line.stream:
        line.stream = stream


def _vllm_record(m, line):
    """A vLLM formatter record (VLLM_RX, VLLM_NOTAG_RX): level, time, file and message."""
    line.fmt = FMT_VLLM
    line.level = LEVELS.get(m.group("level"), LEVEL_INFO)
    line.ts = t = m.group("ts")
    line.tkey = t and tkey(t[0:2], t[3:5], t[6:8], t[9:11], t[12:14])
    line.msg = m.group("msg")
    line.rec = (m.group("level"), line.ts, m.group("file"), m.group("lineno"))


def joined_cuts(text):
    """Where the records a paste ran together on one line begin (offsets after the first), none when it did not;
    a raw Python traceback run together ("Traceback (most recent call last):  File ...  File ...") is cut before
    each frame (round 20), rank-prefixed lines before each ``[rankN]:`` (round 28)."""
    cuts = [m.end() for m in JOINED_RX.finditer(text) if JOINED_TAG_END_RX.search(text, 0, m.start()) is None]
    if text.startswith(TB_START) and ' File "' in text:
        cuts = sorted(set(cuts).union(m.end() for m in JOINED_FRAME_RX.finditer(text)))
    if text.count(" [rank") >= 2:
        cuts = sorted(set(cuts).union(m.end() for m in JOINED_RANK_RX.finditer(text)))
    if text.count(" pid=") >= 2:
        tag = text[:text.find(")") + 1]
        if text.count(tag) >= 2:
            cuts = sorted(set(cuts).union(m.end() for m in JOINED_PROC_RX.finditer(text)
                                          if JOINED_TAG_END_RX.search(text, 0, m.start()) is None))
    return cuts


def _parse_line(text, line):
    if " pid=" in text or text.startswith("(pid="):
        m = VLLM_RX.search(text)
        if m:
            _tag(m, line)
            _vllm_record(m, line)
            return
        m = TAGONLY_RX.match(text)
        while m:  # nested tags ("(APIServer pid=1) (EngineCore_0 pid=2)   File ..."): the innermost process printed
            _tag(m, line)
            text = m.group("rest")
            m = TAGONLY_RX.match(text)
    c0 = text[:1]
    if c0 in "DIWEC":
        m = VLLM_NOTAG_RX.match(text)
        if m:
            _vllm_record(m, line)
            if not line.stream:
                line.stream = "vllm"
            return
    if " NCCL " in text:
        m = NCCL_RX.match(text)
        if m:
            line.fmt = FMT_NCCL
            line.pid = m.group("pid")
            line.stream = "nccl#" + line.pid
            line.level = LEVEL_ERROR if m.group("lvl") in ("WARN", "ABORT") else LEVEL_DEBUG
            if m.group("ts"):
                line.ts = m.group("ts")
                t = line.ts
                line.tkey = tkey(t[5:7], t[8:10], t[11:13], t[14:16], t[17:19])
            line.msg = m.group("msg")
            line.rec = ("nccl", m.group("lvl"))
            return
    if c0 == "[":
        m = RANK_RX.match(text)
        if m:
            line.proc = "rank" + m.group(1)
            line.stream = line.proc
            text = text[m.end():]
            c0 = text[:1]
        if c0 == "[":
            m = C10_RX.match(text)
            if m:
                _native(m, line, "c10", ("c10", m.group("file")))
                return
            m = RAY_CPP_RX.match(text)
            if m:
                _native(m, line, "ray", ("ray", m.group("file")), dated=True)
                return
            m = VLLM_FILEONLY_RX.match(text)
            if m:
                text, line.rec = m.group("msg"), (None, None, m.group("file"), m.group("lineno"))
    if c0 in "VIWEFC" and text[1:2].isdigit():
        m = GLOG_RX.match(text)
        if m:
            _native(m, line, "glog")
            return
    if c0 in "IWEDCT":
        m = UVICORN_RX.match(text)
        if m:
            line.fmt = FMT_UVICORN
            line.level = LEVELS.get(m.group("level"), LEVEL_INFO)
            line.msg = m.group("msg")
            if not line.stream:
                line.stream = "uvicorn"
            return
    if c0.isdigit() and text[4:5] == "-":
        m = PYLOG_RX.match(text)
        if m:
            line.fmt = FMT_PYLOG
            line.level = LEVELS.get(m.group("level"), LEVEL_INFO)
            t = m.group("ts")
            line.ts = t
            line.tkey = tkey(t[5:7], t[8:10], t[11:13], t[14:16], t[17:19])
            line.msg = m.group("msg")
            if not line.stream:
                line.stream = "pylog"
            return
    if ".py:" in text and any(w in text[:120] for w in _EMBED_WORDS):
        # (round 45) a vLLM record behind a prefix no rule above strips - a log viewer's or collector's own time and
        # marks ("- 2024-06-22T20:16:34.700+00:00 ERROR 06-22 ...", "2025-07-17 17:31:58.857083  >> ERROR ..."), a
        # caller's logger relaying vLLM's output ("... - __main__ - INFO - ERROR 06-27 12:57:50 [core.py:515] ...")
        m = EMBEDDED_VLLM_RX.search(text[:160])
        if m is not None:
            m = VLLM_NOTAG_RX.match(text[m.end():])
            if m is not None:
                _vllm_record(m, line)
                if not line.stream:
                    line.stream = "vllm"
                return
    line.fmt = FMT_RAW
    line.level = LEVEL_RAW
    line.msg = text
    if text[:1] not in (" ", "\t") and PYWARN_RX.match(text):
        line.pywarn = True


# --- traceback line shapes of pasted logs (used by the scanner) ---------------------------------------------------

def cut_record(stripped):
    """True for what is left of a vLLM logger prefix cut short by the end of a paste (``ERROR 11-05 03:3``,
    ``ERROR 10-09 09:39:54 [hermes_tool_parser.py:``): no message, so never an exception or an error."""
    m = CUT_RECORD_RX.match(stripped)
    return m is not None and any(w.startswith(m.group(1)) for w in LEVEL_WORDS)


def frame_line(stripped):
    """The match of a traceback frame line (also one whose ``File "`` was cut, or IPython's, or one pasted from an
    HTML page with its quotes escaped: ``File &quot;...&quot;, line``), or None."""
    if "&quot;" in stripped:
        stripped = stripped.replace("&quot;", '"')
    if '", line ' not in stripped:
        if stripped.startswith('File "'):
            return CUT_FRAME_RX.match(stripped)
        if ": in " in stripped[-60:]:
            m = PYTEST_FRAME_RX.match(stripped)
            if m is not None:
                return m
        return IPY_FRAME_RX.match(stripped) if stripped.startswith(("File ", "[/", "/")) else None
    return FRAME_RX.match(stripped) or CUT_FRAME_RX.match(stripped)


# the level words of a vLLM record and what is left of its prefix when a paste ends inside it
LEVEL_WORDS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
CUT_RECORD_RX = re.compile(r"^([A-Z]{2,8})(?: \d\d?(?:-\d{0,2}(?: [\d:]{0,8}(?:[.,]\d*)?(?: [\w.]*)?)?)?)?(?: \[[^\]\s]*)?$")
# a vLLM record glued after a progress bar's "]" (the bar's carriage return lost in a paste)
GLUED_RX = re.compile(r"\](?=\s*(?:\([^)]*pid=\d+\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d )")
# vLLM records run together on one line (a paste that lost its line breaks, round 19): each record's prefix after
# the end of the one before; only a long line with a level word (or a traceback's start) is searched (JOINED_WORDS)
JOINED_RX = re.compile(r"(?<=\S) (?=(?:\([^)]*pid=\d+\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d )")
# ... but never between a process tag and its record ("(Worker pid=7) ERROR ...", nested tags; round 45: also a
# bracketed tag between them, vllm-omni's "(Worker pid=7) [Stage-0] ERROR ...")
JOINED_TAG_END_RX = re.compile(r"pid=\d+(?:, ip=[^)]*)?\)(?: \[[^\]\s]+\])*$")
JOINED_FRAME_RX = re.compile(r'(?<=\S)\s{2,}(?=File "[^"]+", line \d+, in )')
# ... and lines behind PyTorch's own rank prefix run together ("[rank0]: File ... [rank0]: self._init_executor() ...",
# RANK_RX): cut before each prefix when two or more show (round 28)
JOINED_RANK_RX = re.compile(r"(?<=\S) (?=\[rank\d+\]: )")
# ... and (round 46) lines behind vLLM's process tag run together ("(APIServer pid=1)   File ... (APIServer pid=1)
# raise ..."): cut before each tag when the same tag shows twice or more (a tag right after a tag stays: nesting)
JOINED_PROC_RX = re.compile(r"(?<=\S) (?=\(" + TAG_PROC + r" pid=\d+(?:, ip=[^)]+)?\) )")
JOINED_WORDS = (" INFO ", " ERROR ", " WARNING ", " CRITICAL ", " DEBUG ", "most recent call last):", " [rank",
                " pid=")


COLLECTIVE_LINE_RX = re.compile(COLLECTIVE_RX)


def collective_stage(text):
    """The stage of the collective a ProcessGroupNCCL watchdog line names (``WorkNCCL(SeqNum=.., OpType=..,
    NumelIn=..)`` or ``Timeout at NCCL work: N``), read against vLLM's start-up sequence; None without one."""
    if "NCCL" not in text:
        return None
    m = COLLECTIVE_LINE_RX.search(text)
    if m is None:
        return None
    seq = int(m.group(1) or m.group(5))
    numel = m.group(3)
    if seq <= COLLECTIVE_INIT_SEQ and (numel is None or int(numel) <= COLLECTIVE_TINY_NUMEL):
        return "distributed_init"
    if seq <= COLLECTIVE_STARTUP_SEQ:
        return "engine_init"
    return "request"
