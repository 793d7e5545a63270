"""The one redactor: everything that leaves a host (records, module results, the hand-off) passes here.

Python 3.9+ standard library only: it runs on managed nodes (modules) and on the controller (filters, the
hand-off), so a record redacted on a node and one redacted on the controller look the same.

API (docs/handoff.md has the long form):

``redact_text(text, key=None)``
    Secret shapes inside free text (a log, a command line, JSON or a Python repr printed into a log) are
    replaced by a marker.  It never adds or removes a line: a PEM block keeps its line count, so line numbers
    in ``stages.json`` still point at the right line after redaction.
``redact_env(env, key=None)``, ``redact_argv(argv, key=None)``, ``redact_data(data, key=None)``
    The same for an environment mapping, an argument list and any JSON-like structure.
``scan_secrets(text)``
    ``[(lineno, kind), ...]`` of the secret shapes still present in ``text``; a scan, never a rewrite (the
    hand-off refuses to pack on any finding).
``redaction_markers(text)``
    ``[(lineno, kind), ...]`` of the markers already in ``text`` (the hand-off's list of what was redacted where).
``declared(secrets)``, ``redact_declared(data, declared, key=None)``
    The values the operator declared secret (``{name: value}``, ``repro_vllm_secret_env``), redacted whatever their
    name or shape.  The rule (docs/handoff.md, "Declared secrets"): the declared variable's own value always (a
    mapping key of that name, ``NAME=value`` and ``"NAME": "value"`` in text), and the value by itself anywhere
    (free text, other variables, argv) only when it is unambiguous: ``DECLARED_MIN_CHARS`` characters or more, not
    only digits, and not next to a letter or digit.  A value such as ``1``, ``8000`` or ``abc`` cannot be told from
    an ordinary count, port or word elsewhere; replacing it everywhere would corrupt the record, as Ansible's
    no_log masking did.
``load_case_key(case_dir)``
    The per-case key (bytes), created once with mode 0600 as ``<records_root>/<case_id>/.redact.key``.

Markers:

* with a key: ``<redacted:KIND:HEX8>``, HEX8 = first 8 hex digits of HMAC-SHA256(key, secret).  The same secret
  gives the same marker everywhere in a case (env.json, argv, the server log), so a reader still sees that two
  values were equal, and nobody without the key can test a guess against it.
* without a key: ``<redacted>`` exactly as before (module results shown on a terminal, ad-hoc filter use, and
  the documented return values of the modules).  Records written for a case pass the case key.

A ``str`` key is encoded as UTF-8: the key file holds ASCII hex, so ``key.decode()`` handed to a module as a
(no_log) parameter gives the same markers as the bytes on the controller.  The key file and any mapping from
marker to value never go into a run or a package; the key is never printed.

Kinds (public vocabulary): see ``KINDS``.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import binascii
import functools
import hashlib
import hmac
import os
import re

MASK = "<redacted>"
KEY_FILE = ".redact.key"
MARKER_HEX = 8

KINDS = (
    "pem_block",        # -----BEGIN ... PRIVATE KEY----- (and any other PEM block) bodies
    "url_credential",   # scheme://user:PASSWORD@host
    "bearer",           # Authorization: Bearer/Basic/Token VALUE, a bare "Bearer VALUE"
    "jwt",              # eyJ....eyJ....sig
    "aws_access_key",   # AKIA/ASIA/ABIA/ACCA + 16
    "hf_token",         # hf_...
    "openai_key",       # sk-..., sk-proj-..., sk-svcacct-..., sk-admin-...
    "anthropic_key",    # sk-ant-...
    "github_token",     # ghp_/gho_/ghu_/ghs_/ghr_, github_pat_
    "gitlab_token",     # glpat-, gldt-, glrt-, glptt-, glcbt-, glsoat-, glft-, glimt-, glagent-, GR1348941
    "slack_token",      # xoxb-/xoxp-/xoxa-/xoxr-/xoxs-/xoxe-/xoxo-, xapp-
    "slack_webhook",    # https://hooks.slack.com/services/T.../B.../...
    "google_api_key",   # AIza + 35
    "google_oauth",     # ya29.
    "npm_token",        # npm_ + 36
    "azure_secret",     # Entra client secret (3 chars, digit, Q~, 31-34), SAS sig= in a URL
    "secret_flag",      # the value after --api-key style arguments
    "secret_value",     # the value of a secret-named variable or key (HF_TOKEN=, api_key=, "token": ...)
    "declared_secret",  # a value the operator declared secret (repro_vllm_secret_env), whatever its name or shape
)

# ------------------------------------------------------------------------------------------------ names
# A name is split into lower-case words (snake, kebab, dotted and camelCase); the words decide.
_SECRET_WORDS = frozenset((
    "token", "secret", "secrets", "password", "passwd", "passphrase", "pwd", "credential", "credentials",
    "apikey", "apitoken", "accesstoken", "authtoken", "privatekey", "secretkey", "accountkey", "sas", "key",
    "keys", "pat", "cookie", "signature",
))
# the name is about a secret but does not hold it (a path, an id, a count, a flag)
_META_LAST_WORDS = frozenset((
    "file", "files", "path", "paths", "dir", "env", "var", "name", "names", "id", "ids", "count", "len", "length",
    "size", "type", "types", "prefix", "enabled", "enable", "required", "source", "header", "url", "sock",
    "socket", "mode", "format", "kind", "policy", "limit", "limits", "budget", "ratio", "map", "mapping", "index",
    "idx", "num", "ttl", "timeout", "expiry", "expires", "fingerprint", "algorithm", "alg", "version",
))
# "<word>_token" names that are tokenizer vocabulary, not credentials (eos_token: "</s>")
_TOKEN_VOCAB_WORDS = frozenset((
    "bos", "eos", "pad", "unk", "sep", "cls", "mask", "special", "additional", "image", "video", "audio",
    "start", "end", "stop", "think", "tool", "vision", "placeholder", "boi", "eoi", "sot", "eot", "first",
    "last", "next", "decoder", "prompt", "output", "input", "new", "per",
))
_KEY_NOT_SECRET_WORDS = frozenset((
    "cache", "sort", "primary", "foreign", "partition", "shard", "routing", "hash", "lookup", "dict", "map",
    "group", "row", "column", "idempotency", "dedup", "kv", "prefix", "public", "host", "ssh", "gpg", "pgp",
    "monkey", "turkey", "hot", "layer", "weight", "state", "lora", "adapter", "model", "config", "quant",
))
_NOT_SECRET_NAMES = frozenset(("keyboard", "keymap", "ssh_auth_sock", "xauthority", "vllm_use_v1", "keys",
                               "key_id", "tokenizer", "tokenizers", "tokenizer_mode"))
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SPLIT_RE = re.compile(r"[^A-Za-z0-9]+")


def _name_words(name):
    return [w.lower() for w in _WORD_SPLIT_RE.split(_CAMEL_RE.sub("_", name)) if w]


@functools.lru_cache(maxsize=4096)
def _secret_word(name):
    """The word that makes ``name`` a secret's name, or None (cached: logs repeat the same names)."""
    if not isinstance(name, str) or not name:
        return None
    if name.lower() in _NOT_SECRET_NAMES:
        return None
    words = _name_words(name)
    if not words or words[-1] in _META_LAST_WORDS:
        return None
    joined = "".join(words)
    for i, word in enumerate(words):
        if word in _SECRET_WORDS:
            prev = words[i - 1] if i else ""
            if word in ("token",) and prev in _TOKEN_VOCAB_WORDS:
                continue
            if word in ("key", "keys") and (prev in _KEY_NOT_SECRET_WORDS or (i + 1 < len(words))):
                # "cache_key", "key_file"; a key word mid-name only counts in the compounds below
                if prev not in ("api", "access", "private", "secret", "account", "shared", "master", "client",
                                "encryption", "signing", "service", "subscription", "storage", "admin", "auth"):
                    continue
            if word in ("pat", "sas", "pwd", "cookie", "signature", "key", "keys") and len(words) == 1:
                # a bare PWD is the working directory; a bare "key" is a dict, sort or cache key far more often
                # (sorted(key=...), groupby(key=lambda ...) in tracebacks) than a credential
                continue
            return word
    for compound in ("apikey", "accesstoken", "authtoken", "privatekey", "secretkey", "clientsecret"):
        if compound in joined and not joined.startswith("max") and "tokens" not in words:
            return compound
    return None


def is_secret_name(name):
    """True when an environment variable, flag or dict key name suggests a secret value.

    Words decide: HF_TOKEN, db_password, apiKey, x-api-key, AccountKey are secret names; plural TOKENS
    (MAX_TOKENS, prompt_tokens, VLLM_MAX_NUM_BATCHED_TOKENS) are counts, TOKENIZER is a model part,
    eos_token is vocabulary, api_key_file / HF_TOKEN_PATH / AWS_ACCESS_KEY_ID name where a secret is, not it.
    """
    return _secret_word(name) is not None


def is_secret_flag(flag):
    """True for ``--api-key``, ``--hf-token``, ``--ssl-keyfile-password`` ... (not ``--api-key-file``)."""
    return isinstance(flag, str) and flag.startswith("-") and (flag in SECRET_FLAGS or is_secret_name(flag.lstrip("-")))


SECRET_FLAGS = frozenset((
    "--api-key", "--api_key", "--hf-token", "--hf_token", "--token", "--password", "--secret",
    "--access-key", "--secret-key", "--auth-token", "--bearer-token", "--ssl-keyfile-password",
))


# ------------------------------------------------------------------------------------------------ markers
def _key_bytes(key):
    if key is None or key == b"" or key == "":
        return None
    if isinstance(key, bytes):
        return key
    return str(key).encode("utf-8")


def marker(kind, secret, key=None):
    """The marker for ``secret`` of ``kind``: ``<redacted:kind:hex8>`` with a key, ``<redacted>`` without."""
    kb = _key_bytes(key)
    if kb is None:
        return MASK
    digest = hmac.new(kb, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return "<redacted:%s:%s>" % (kind, digest[:MARKER_HEX])


MARKER_RE = re.compile(r"<redacted(?::(?P<kind>[a-z0-9_]+)(?::(?P<hex>[0-9a-f]{8,64}))?)?>")


def _is_marker(value):
    return bool(MARKER_RE.fullmatch(value.strip("'\"\\")))


# ------------------------------------------------------------------------------------------------ shapes
_TAIL = r"(?![A-Za-z0-9_\-])"
_HEAD = r"(?<![A-Za-z0-9_\-])"
_PEM_RE = re.compile(r"(-----BEGIN (?P<label>[A-Z0-9 ]{0,40}?)-----)(?P<body>.*?)(-----END [A-Z0-9 ]{0,40}?-----)", re.DOTALL)
# literal needles: a shape's regex runs only when one of them is in the text (a fast C scan first)
_NEEDLES = {
    "anthropic_key": ("sk-ant-",), "openai_key": ("sk-",), "hf_token": ("hf_",), "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glsoat-", "glft-", "glimt-", "glagent-", "gloas-",
                     "glwt-", "GR1348941"), "slack_token": ("xox", "xapp-"), "google_api_key": ("AIza",),
    "google_oauth": ("ya29.",), "npm_token": ("npm_",), "aws_access_key": ("AKIA", "ASIA", "ABIA", "ACCA"),
    "jwt": ("eyJ",), "azure_secret": ("Q~",),
}
_SHAPES = (
    ("anthropic_key", re.compile(_HEAD + r"sk-ant-[A-Za-z0-9_\-]{20,}" + _TAIL)),
    ("openai_key", re.compile(_HEAD + r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}" + _TAIL)),
    ("hf_token", re.compile(_HEAD + r"hf_[A-Za-z0-9]{20,}" + _TAIL)),
    ("github_token", re.compile(_HEAD + r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})" + _TAIL)),
    ("gitlab_token", re.compile(_HEAD + r"(?:gl(?:pat|dt|rt|ptt|cbt|soat|ft|imt|agent|oas|wt)-[A-Za-z0-9_\-]{20,}"
                                r"|GR1348941[A-Za-z0-9_\-]{20,})" + _TAIL)),
    ("slack_token", re.compile(_HEAD + r"(?:xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-\d-[A-Za-z0-9\-]{10,})" + _TAIL)),
    ("google_api_key", re.compile(_HEAD + r"AIza[0-9A-Za-z_\-]{35}" + _TAIL)),
    ("google_oauth", re.compile(_HEAD + r"ya29\.[0-9A-Za-z_\-]{20,}" + _TAIL)),
    ("npm_token", re.compile(_HEAD + r"npm_[A-Za-z0-9]{36}" + _TAIL)),
    ("aws_access_key", re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Za-z0-9])")),
    ("jwt", re.compile(_HEAD + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}" + _TAIL)),
    ("azure_secret", re.compile(r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])")),
)
# shapes with a prefix kept: (kind, regex with groups 'pre' and 'val')
_SLACK_HOOK_RE = re.compile(r"(?P<pre>https://hooks\.slack\.com/services/)(?P<val>T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+)")
_SAS_RE = re.compile(r"(?P<pre>[?&](?:sig|se?cret|code)=)(?P<val>[A-Za-z0-9%/+=_\-]{16,})")
# curl -u user:password / --user user:password (the user stays readable)
_USER_PASS_RE = re.compile(r"(?P<pre>(?<![A-Za-z0-9_\-])(?:-u|--user|--proxy-user)(?:=|[ \t]+)['\"]?[^\s:'\"]+:)"
                           r"(?P<val>[^\s'\"]+)")
_URL_CRED_RE = re.compile(r"(?P<pre>://[^/\s:@'\"]+:)(?P<val>[^/\s@'\"]+)(?=@)")  # literal first: fast
_AUTH_RE = re.compile(
    r"(?P<pre>\b(?i:authorization)\b['\"]?\s*[:=]\s*['\"]?(?:(?i:bearer|basic|token|apikey|key)\s+)?)"
    r"(?P<val>[A-Za-z0-9._~+/=\-]{8,})")
# a bare "Bearer VALUE" (prose says "bearer tokens": the value must hold a digit to count)
_BARE_BEARER_RE = re.compile(r"(?P<pre>\b(?i:bearer)\s+)(?P<val>(?=[A-Za-z._~+/=\-]*[0-9])[A-Za-z0-9._~+/=\-]{8,})")
# the words a secret's name holds (a fast gate: only names with one of them are looked at further)
_KEYWORDS = r"(?i:token|secret|passw|passphrase|pwd|credential|key|pat|sas|cookie|signature)"
_KEYWORD_RE = re.compile(_KEYWORDS)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEYWORD_LOW_RE = re.compile(_KEYWORDS[4:-1])  # the same words on lower-cased text (much faster than IGNORECASE)
_FLAG_RE = re.compile(r"(?P<pre>(?P<flag>-(?<![A-Za-z0-9_\-]-)-?(?=[A-Za-z0-9_\-]*" + _KEYWORDS + r")[A-Za-z][A-Za-z0-9_\-]*)"
                      r"(?:=|[ \t]+|(?P<lq>['\"]),[ \t]*(?P=lq)))"
                      r"(?P<q>['\"]?)(?P<val>(?!--?[A-Za-z])[^\s'\"]+)(?![^\s'\"])(?!(?P=lq)[ \t]*:)")
# key/value pairs: NAME=value, NAME: value, 'name': 'value', "name": "value", name='value' (repr), lists
_KV_RE = re.compile(
    r"(?P<pre>(?P<nq>\\?['\"]|)(?<![A-Za-z0-9_.\-])(?<!<)(?<!<redacted:)"
    r"(?P<name>(?=[A-Za-z0-9_.\-]*" + _KEYWORDS + r")[A-Za-z_][A-Za-z0-9_.\-]*)(?P=nq)[ \t]*(?::=|=>|=|:)[ \t]*)"
    r"(?P<val>\\\"(?:[^\"\\\n]|\\[^\"\n])*\\\"|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\""
    r"|\[[^\]\n]{0,4096}\]|[^\s'\",;&)}\]\[{(<>]+)")
_LIST_ITEM_RE = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
_PLACEHOLDER_RE = re.compile(r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|none|null|nil|true|false|undefined|\*+|x+|"
                             r"<[^<>]*>|\{\{.*\}\}|-|''|\"\"|empty|unset|not set|set)$", re.IGNORECASE)
_NUMBER_RE = re.compile(r"^[0-9]{1,12}(?:\.[0-9]+)?$")


class _Lines:
    """Line numbers of positions in one string: counted forward from the last asked position (matches of one
    pass come in order), so a pass costs one scan of the text, done in C."""

    def __init__(self, text):
        self.text = text
        self._pos = 0
        self._line = 1

    def lineno(self, pos):
        if pos < self._pos:
            self._pos, self._line = 0, 1
        self._line += self.text.count("\n", self._pos, pos)
        self._pos = pos
        return self._line


def _unquote(value):
    for q in ('\\"', "'", '"'):
        if len(value) >= 2 * len(q) and value.startswith(q) and value.endswith(q):
            return value[len(q):-len(q)]
    return value


_CODE_WORDS = frozenset(("lambda", "self", "cls", "none", "true", "false", "not", "await", "yield", "def", "return",
                         "str", "int", "bytes", "optional", "any", "secretstr"))
_DOTTED_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _looks_like_code(value):
    """An unquoted value that is source code in a traceback, not a secret: ``key=lambda``, ``api_key=args.api_key``,
    ``token=token``, ``api_key: str``."""
    if value.lower() in _CODE_WORDS or _DOTTED_RE.match(value):
        return True
    return bool(_IDENT_RE.match(value)) and is_secret_name(value)


def _value_is_secret(name, value, text=True):
    """A value under a secret name that is worth hiding (not a marker, a count or, in free text, a placeholder or
    source code).  In a mapping (``text=False``) any other non-empty value counts: the name says what it is.
    """
    inner = _unquote(value).strip()
    if not inner or _is_marker(inner) or (text and _PLACEHOLDER_RE.match(inner)):
        return False
    if text and inner == value and _looks_like_code(inner):
        return False
    if _NUMBER_RE.match(inner) and _secret_word(name) in ("token", "key", "keys"):
        return False  # a count or an index, never a credential of these lengths
    if inner.startswith("/") and " " not in inner and _secret_word(name) in ("credentials", "credential", "key"):
        return False  # a path to the secret (GOOGLE_APPLICATION_CREDENTIALS=/etc/...)
    return True


def _redact(text, key, events):
    """Core: every pass keeps the line count; ``events`` gets (lineno, kind) per replacement."""

    def sub_pass(rx, out, fn):
        lines = _Lines(out)

        def repl(m):
            res = fn(m)
            if res is None:
                return m.group(0)
            new, kind = res
            events.append((lines.lineno(m.start()), kind))
            return new
        return rx.sub(repl, out)

    out = text

    def pem(m):
        body = m.group("body")
        if all(not p.strip() or _is_marker(p.strip()) for p in body.replace("\\n", "\n").split("\n")):
            return None  # empty or already redacted
        mk = marker("pem_block", body, key)
        parts = body.split("\n")
        if len(parts) == 1:
            new_body = mk
        else:  # keep the line count: the first and last pieces keep their place, each inner line one marker
            new_body = "\n".join([mk if p.strip() else p for p in parts])
        return m.group(1) + new_body + m.group(4), "pem_block"
    if "-----BEGIN" in out:
        out = sub_pass(_PEM_RE, out, pem)

    def pre_val(kind):
        def fn(m):
            val = m.group("val")
            if _is_marker(val):
                return None
            return m.group("pre") + marker(kind, val, key), kind
        return fn
    if "://" in out:
        out = sub_pass(_SLACK_HOOK_RE, out, pre_val("slack_webhook"))
        out = sub_pass(_URL_CRED_RE, out, pre_val("url_credential"))
    if "=" in out:
        out = sub_pass(_SAS_RE, out, pre_val("azure_secret"))
    if "-u" in out or "--user" in out or "--proxy-user" in out:
        out = sub_pass(_USER_PASS_RE, out, pre_val("url_credential"))
    low = out.lower()

    def auth(m):
        val = m.group("val")
        schemed = m.group("pre").rstrip().lower().endswith(("bearer", "basic", "token", "apikey", "key"))
        if _is_marker(val) or (not schemed and (_looks_like_code(val) or (
                len(val) < 20 and not any(c.isdigit() for c in val)))):
            return None  # source code (headers = {'Authorization': auth_header}), not a credential
        return m.group("pre") + marker("bearer", val, key), "bearer"
    if "authorization" in low:
        out = sub_pass(_AUTH_RE, out, auth)
    if "bearer" in low:
        out = sub_pass(_BARE_BEARER_RE, out, pre_val("bearer"))
    for kind, rx in _SHAPES:
        if any(n in out for n in _NEEDLES[kind]):
            out = sub_pass(rx, out, lambda m, kind=kind: (marker(kind, m.group(0), key), kind))

    def flag(m):
        if not is_secret_flag(m.group("flag")):
            return None
        val = m.group("val")
        if not _value_is_secret(m.group("flag"), val):
            return None
        return m.group("pre") + m.group("q") + marker("secret_flag", val, key), "secret_flag"
    if "-" in out and _KEYWORD_LOW_RE.search(low):
        out = sub_pass(_FLAG_RE, out, flag)

    def kv_sub(segment, line_of):
        def kv(m):
            name = m.group("name")
            val = m.group("val")
            if not is_secret_name(name):
                # the value may hold pairs of its own ("env: HF_TOKEN=...", "note": "export TOKEN=...")
                inner = kv_sub(val, lambda _pos, base=line_of(m.start()): base) if ("=" in val or ":" in val) else val
                return m.group("pre") + inner
            if val.startswith("["):
                changed = []

                def item(im):
                    s = im.group(0)
                    if not _value_is_secret(name, s):
                        return s
                    changed.append(1)
                    return s[0] + marker("secret_value", s[1:-1], key) + s[-1]
                new = _LIST_ITEM_RE.sub(item, val)
                if changed:
                    events.append((line_of(m.start()), "secret_value"))
                return m.group("pre") + new
            if not _value_is_secret(name, val):
                return m.group(0)
            events.append((line_of(m.start()), "secret_value"))
            for q in ('\\"', "'", '"'):
                if len(val) >= 2 * len(q) and val.startswith(q) and val.endswith(q):
                    return m.group("pre") + q + marker("secret_value", val[len(q):-len(q)], key) + q
            return m.group("pre") + marker("secret_value", val, key)
        # anchored at each keyword: widen to the whole name, then match the pair there (no scan of every position)
        pieces = []
        done = 0
        low = segment.lower()
        hits = _KEYWORD_LOW_RE.finditer(low) if len(low) == len(segment) else _KEYWORD_RE.finditer(segment)
        for km in hits:
            if km.start() < done:
                continue
            start = km.start()
            while start > done and segment[start - 1] in _NAME_CHARS:
                start -= 1
            while start < km.start() and not (segment[start].isalpha() or segment[start] == "_"):
                start += 1
            end = km.end()
            while end < len(segment) and segment[end] in _NAME_CHARS:
                end += 1
            if not is_secret_name(segment[start:end]):
                continue  # tokenizer=..., max_tokens: 16 (a pair inside its value is a keyword hit of its own)
            m = None
            for back in (2, 1, 0):  # an opening \" or quote belongs to the pair
                if start - back >= done and (back == 0 or segment[start - back:start] in ('\\"', "'", '"')):
                    m = _KV_RE.match(segment, start - back)
                    if m:
                        break
            if not m:
                continue
            pieces.append(segment[done:m.start()])
            pieces.append(kv(m))
            done = m.end()
        if not pieces:
            return segment
        pieces.append(segment[done:])
        return "".join(pieces)
    if "=" in out or ":" in out:
        out = _by_keyword_lines(out, kv_sub)
    return out


def _by_keyword_lines(text, fn):
    """Apply ``fn(line, line_of)`` only to the lines holding a secret-name keyword (one C scan finds them)."""
    pieces = []
    done = 0
    lineno = 1
    low = text.lower()
    hits = _KEYWORD_LOW_RE.finditer(low) if len(low) == len(text) else _KEYWORD_RE.finditer(text)
    for m in hits:
        if m.start() < done:
            continue
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        lineno += text.count("\n", done, start)
        pieces.append(text[done:start])
        pieces.append(fn(text[start:end], lambda _pos, n=lineno: n))
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def redact_text(text, key=None):
    """Redact secret shapes inside free text (a log, a command line, JSON or repr text); line count is kept."""
    if not isinstance(text, str) or not text:
        return text
    return _redact(text, key, [])


def scan_secrets(text):
    """``[(lineno, kind), ...]`` for every secret shape still in ``text`` (markers are not findings).

    A scan: the caller's text is not changed.  The hand-off refuses to pack on any finding.
    """
    if not isinstance(text, str) or not text:
        return []
    events = []
    _redact(text, None, events)
    return sorted(set(events))


def redaction_markers(text):
    """``[(lineno, kind), ...]`` of the markers in ``text``; ``kind`` is ``unspecified`` for a plain ``<redacted>``."""
    if not isinstance(text, str) or "<redacted" not in text:
        return []
    lines = _Lines(text)
    return [(lines.lineno(m.start()), m.group("kind") or "unspecified") for m in MARKER_RE.finditer(text)]


# ------------------------------------------------------------------------------------------------ structures
def _redact_value(name, value, key):
    """A secret-named variable's string value: vendor shapes inside keep their kind, else the whole value."""
    shaped = redact_text(value, key)
    if shaped != value:
        return shaped
    if not _value_is_secret(name, value, text=False):
        return value
    return marker("secret_value", value, key)


def redact_env(env, key=None):
    """Return a copy of an environment mapping with secret values masked (names are kept)."""
    out = {}
    for k, v in (env or {}).items():
        if isinstance(v, str) and v and is_secret_name(k):
            out[k] = _redact_value(k, v, key)
        else:
            out[k] = redact_text(v, key)
    return out


def redact_argv(argv, key=None):
    """Return a copy of an argument list with the value after secret flags (and ``--flag=value``) masked."""
    out = []
    hide_next = None
    for arg in argv or []:
        arg = str(arg)
        if hide_next is not None:
            if arg.startswith("--") or not _value_is_secret(hide_next, arg):
                hide_next = None
            else:
                shaped = redact_text(arg, key)
                out.append(shaped if shaped != arg else marker("secret_flag", arg, key))
                hide_next = None
                continue
        flag, eq, value = arg.partition("=")
        if flag.startswith("-") and is_secret_flag(flag):
            if eq:
                shaped = redact_text(value, key)
                if shaped == value and _value_is_secret(flag, value):
                    shaped = marker("secret_flag", value, key)
                out.append(flag + "=" + shaped)
            else:
                out.append(arg)
                hide_next = flag
            continue
        out.append(redact_text(arg, key))
    return out


def _looks_like_argv(data):
    return bool(data) and all(isinstance(x, str) for x in data) and any(
        x.startswith("-") and is_secret_flag(x.partition("=")[0]) for x in data)


def redact_data(data, key=None):
    """Redact any JSON-like structure: secret-named keys get masked values, strings are scanned, lists walked.

    A list that looks like an argv (strings, one of them a secret flag) is treated as an argv.  Numbers,
    booleans and None stay (counts under TOKEN-like names are not secrets).
    """
    if isinstance(data, dict):
        result = {}
        for k, value in data.items():
            if is_secret_name(k) and isinstance(value, str) and value:
                result[k] = _redact_value(k, value, key)
            elif is_secret_name(k) and isinstance(value, (list, tuple)) and value and all(isinstance(x, str) for x in value):
                result[k] = [_redact_value(k, x, key) if x else x for x in value]
            else:
                result[k] = redact_data(value, key)
        return result
    if isinstance(data, (list, tuple)):
        if _looks_like_argv(data):
            return redact_argv(data, key)
        return [redact_data(x, key) for x in data]
    if isinstance(data, str):
        return redact_text(data, key)
    return data


# ------------------------------------------------------------------------------------------------ declared secrets
DECLARED_MIN_CHARS = 8


def unambiguous(value):
    """Is a declared secret value redacted by value anywhere (not only as its own variable)?"""
    return isinstance(value, str) and len(value) >= DECLARED_MIN_CHARS and not value.isdigit()


def declared(secrets):
    """``{name: value}`` of the declared secrets as strings (empty values dropped), or None when there are none."""
    out = {str(k): str(v) for k, v in (secrets or {}).items() if v is not None and str(v) != ""}
    return out or None


@functools.lru_cache(maxsize=32)
def _declared_res(items):
    """(the per-name patterns, one pattern of the unambiguous values) for ``items`` ((name, value), ...)."""
    pairs = []
    for name, value in sorted(items, key=lambda nv: len(nv[1]), reverse=True):
        n, v = re.escape(name), re.escape(value)
        # NAME=value (a shell line, an env dump) and "NAME": "value" / 'NAME': 'value' (JSON or a repr in a log)
        pairs.append(re.compile(r"(?P<pre>(?<![A-Za-z0-9_])%s=)(?P<val>%s)(?![A-Za-z0-9])" % (n, v)))
        pairs.append(re.compile(r"""(?P<pre>(?P<q>["'])%s(?P=q):\s*(?P<r>["']))(?P<val>%s)(?P=r)""" % (n, v)))
    values = sorted({v for _n, v in items if unambiguous(v)}, key=len, reverse=True)
    by_value = None
    if values:
        by_value = re.compile(r"(?<![A-Za-z0-9])(?:%s)(?![A-Za-z0-9])" % "|".join(re.escape(v) for v in values))
    return pairs, by_value


def _declared_text(text, items, key):
    pairs, by_value = _declared_res(items)
    for rx in pairs:
        text = rx.sub(lambda m: m.group("pre") + marker("declared_secret", m.group("val"), key)
                      + m.group(0)[m.end("val") - m.start(0):], text)
    if by_value is not None:
        text = by_value.sub(lambda m: marker("declared_secret", m.group(0), key), text)
    return text


def redact_declared(data, secrets, key=None):
    """Redact the declared secrets (``{name: value}``) in any JSON-like structure or text, by the rule above.

    A mapping key that is a declared name gets its value's marker (whatever the value); strings anywhere get the
    ``NAME=value`` forms and the unambiguous values replaced.  Markers already there are kept.
    """
    decl = declared(secrets)
    if not decl:
        return data
    items = tuple(sorted(decl.items()))
    return _declared_walk(data, items, key)


def _declared_walk(data, items, key):
    names = dict(items)
    if isinstance(data, dict):
        out = {}
        for k, value in data.items():
            if k in names and isinstance(value, str) and value and not _is_marker(value):
                out[k] = marker("declared_secret", value, key)
            else:
                out[k] = _declared_walk(value, items, key)
        return out
    if isinstance(data, (list, tuple)):
        return [_declared_walk(x, items, key) for x in data]
    if isinstance(data, str) and data:
        return _declared_text(data, items, key)
    return data


# ------------------------------------------------------------------------------------------------ the case key
def load_case_key(case_dir):
    """The per-case redaction key (bytes): ``<case_dir>/.redact.key``, created once with mode 0600.

    ``case_dir`` is ``<records_root>/<case_id>`` on the controller (never a run directory, never a package).
    Created with O_EXCL so two plays starting at once agree on one key; the value is 64 hex characters.
    """
    path = os.path.join(case_dir, KEY_FILE)
    os.makedirs(case_dir, mode=0o755, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        try:
            os.write(fd, binascii.hexlify(os.urandom(32)) + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
    st = os.stat(path)
    if st.st_mode & 0o077:
        os.chmod(path, 0o600)
    with open(path, "rb") as f:
        value = f.read().strip()
    if len(value) < 32:
        raise ValueError("the case redaction key %s is shorter than 32 characters; remove it to make a new one "
                         "(markers of earlier runs of this case will then differ)" % path)
    return value
