# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The one redactor: everything that leaves a host (records, module results, the hand-off) passes here.

Rules (ARCHITECTURE.md, "Hand-off package"): token shapes (``hf_``, ``sk-``, ``ghp_``/``gho_``…, AWS access keys,
JWTs), ``Authorization: Bearer`` headers, values of environment-style names containing TOKEN, SECRET, PASSWORD
or KEY, the value after ``--api-key`` style arguments, credentials inside URLs and PEM blocks.
"""

from __future__ import annotations

import re

MASK = "<redacted>"

SECRET_NAME_RE = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL|AUTH)", re.IGNORECASE)
# names that contain KEY but are not secrets (keep them readable for diagnosis)
_NOT_SECRET_NAMES = frozenset(("KEYBOARD", "SSH_AUTH_SOCK", "XAUTHORITY", "VLLM_USE_V1", "KEYMAP"))

# plural TOKENS names are counts (max_tokens, usage.completion_tokens, VLLM_MAX_NUM_BATCHED_TOKENS), not secrets
_TOKEN_COUNT_RE = re.compile(r"TOKENS(?:_|$)")

SECRET_FLAGS = frozenset((
    "--api-key", "--api_key", "--hf-token", "--hf_token", "--token", "--password", "--secret",
    "--access-key", "--secret-key", "--auth-token", "--bearer-token", "--ssl-keyfile-password",
))

_PEM_RE = re.compile(r"-----BEGIN [A-Z0-9 ]*?(PRIVATE KEY|CERTIFICATE|KEY)-----.*?-----END [A-Z0-9 ]*?-----", re.DOTALL)
_TOKEN_RES = (
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\b"),
)
_BEARER_RE = re.compile(r"(?i)\b(authorization\s*[:=]\s*(?:bearer|basic|token)\s+|bearer\s+)([A-Za-z0-9._~+/=\-]{8,})")
_URL_CRED_RE = re.compile(r"([a-zA-Z][a-zA-Z0-9+.\-]*://)([^/\s:@]+):([^/\s@]+)@")
_ASSIGN_RE = re.compile(
    r"(?P<name>\b[A-Za-z_][A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY)[A-Za-z0-9_]*)"
    r"(?P<sep>\s*[=:]\s*)(?P<q>['\"]?)(?P<val>[^\s'\"]+)", re.IGNORECASE)
_FLAG_INLINE_RE = re.compile(r"(?P<flag>(?:%s))(?P<sep>[= ])(?P<val>\S+)" % "|".join(re.escape(f) for f in sorted(SECRET_FLAGS)))


def is_secret_name(name):
    """True when an environment variable or dict key name suggests a secret value."""
    if not isinstance(name, str):
        return False
    upper = name.upper()
    if upper in _NOT_SECRET_NAMES or _TOKEN_COUNT_RE.search(upper):
        return False
    return bool(SECRET_NAME_RE.search(upper))


def redact_text(text):
    """Redact secret shapes inside free text (a log line, a command line, a JSON string)."""
    if not isinstance(text, str) or not text:
        return text
    out = _PEM_RE.sub("-----BEGIN REDACTED-----" + MASK + "-----END REDACTED-----", text)
    for rx in _TOKEN_RES:
        out = rx.sub(MASK, out)
    out = _BEARER_RE.sub(lambda m: m.group(1) + MASK, out)
    out = _URL_CRED_RE.sub(lambda m: m.group(1) + m.group(2) + ":" + MASK + "@", out)
    out = _ASSIGN_RE.sub(lambda m: m.group("name") + m.group("sep") + m.group("q") + MASK, out)
    out = _FLAG_INLINE_RE.sub(lambda m: m.group("flag") + m.group("sep") + MASK, out)
    return out


def redact_env(env):
    """Return a copy of an environment mapping with secret values masked (names are kept)."""
    return {k: (MASK if is_secret_name(k) and v not in (None, "") else redact_text(v)) for k, v in (env or {}).items()}


def redact_argv(argv):
    """Return a copy of an argument list with the value after secret flags (and ``--flag=value``) masked."""
    out = []
    hide_next = False
    for arg in argv or []:
        arg = str(arg)
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        flag, eq, _value = arg.partition("=")
        if flag in SECRET_FLAGS:
            if eq:
                out.append(flag + "=" + MASK)
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(redact_text(arg))
    return out


def redact_data(data):
    """Redact any JSON-like structure: secret-named keys get masked values, strings are scanned, lists walked.

    A list that looks like an argv (strings, one of them a secret flag) is treated as an argv.
    """
    if isinstance(data, dict):
        result = {}
        for key, value in data.items():
            if is_secret_name(key) and isinstance(value, str) and value:
                result[key] = MASK
            else:
                result[key] = redact_data(value)
        return result
    if isinstance(data, (list, tuple)):
        if data and all(isinstance(x, str) for x in data) and any(x.partition("=")[0] in SECRET_FLAGS for x in data):
            return redact_argv(data)
        return [redact_data(x) for x in data]
    if isinstance(data, str):
        return redact_text(data)
    return data
