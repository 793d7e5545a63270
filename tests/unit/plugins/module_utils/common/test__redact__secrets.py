# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The secrets test set: every secret kind planted in env files, argv, request bodies, logs, reprs and URLs,
plus the look-alikes that must survive.  Fails on any leak or any destroyed look-alike.

Every secret here is obviously fake (FAKE/0 filler) and is assembled at run time, so the repository itself
holds no token-shaped string a scanner would flag.  The shapes follow the vendors' documented formats
(docs/handoff.md lists the sources).
"""
from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.common._redact import (
    KINDS, MASK, is_secret_name, load_case_key, redact_argv, redact_data, redact_env, redact_text,
    redaction_markers, scan_secrets)

F = "FAKE"
SECRETS = {
    "hf_token": "hf_" + F * 8 + "Zz",
    "openai_key": "sk-proj-" + F * 10 + "_x",
    "openai_key_legacy": "sk-" + F * 12,
    "anthropic_key": "sk-ant-api03-" + F * 20 + "-AA",
    "github_token": "ghp_" + F * 9,
    "github_pat": "github_pat_11" + F * 6 + "_" + F * 12,
    "gitlab_token": "glpat-" + F * 5,
    "slack_token": "xoxb-000000000000-000000000000-" + F * 6,
    "slack_webhook": "T00000000/B00000000/" + F * 6,
    "google_api_key": "AIza" + F * 8 + "FAK",
    "google_oauth": "ya29." + F * 10,
    "npm_token": "npm_" + F * 9,
    "aws_access_key": "AKIA" + F * 4,
    "azure_secret": "abc8Q~" + F * 8,
    "azure_sas": "FAKEsig" + "0" * 20 + "%3D",
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiJGQUtFIn0." + F * 6,
    "bearer": "FAKEbearer0123456789",
    "url_password": "FAKEpass0rd",
    "plain_api_key": "FAKE-plain-api-key-1",
    "plain_token": "FAKEplaintoken2",
    "repr_key": "FAKE-repr-key-3",
    "list_key_a": "FAKE-list-key-a",
    "list_key_b": "FAKE-list-key-b",
    "json_key": "FAKE-json-key-4",
    "escaped_key": "FAKE-escaped-key-5",
    "azure_openai_key": "0123456789abcdef" + "fedcba9876543210",
    "db_password": "FAKE-db-pass-6",
    "curl_password": "FAKE-curl-pass-7",
    "pem_body": "MIIEvQIBADANBgkqFAKEFAKE",
}
S = SECRETS
PEM = ("-----BEGIN PRIVATE KEY-----\n" + S["pem_body"] + "\n" + F * 16 + "\n" + F * 4 + "==\n"
       "-----END PRIVATE KEY-----")

LOOKALIKES = [
    "sha256:" + "0123456789abcdef" * 4,                      # an image digest
    "GPU-8c5c6a3e-1f2b-4c3d-9e8f-0a1b2c3d4e5f",              # a GPU UUID
    "--api-key-file /run/secrets/vllm-api.key",              # where the key is, not the key
    "acme/monkey-keystone-7b",                               # a model name with "key" in it
    "MAX_TOKENS=4096",                                       # a token count in env text
    "VLLM_MAX_NUM_BATCHED_TOKENS=8192",
    '"max_tokens": 16',
    "prompt_tokens=12",
    "TOKENIZERS_PARALLELISM=false",
    "--tokenizer acme/monkey-keystone-7b",
    '"eos_token": "</s>"',
    "HF_TOKEN_PATH=/run/secrets/hf",
    "AWS_ACCESS_KEY_ID_FILE=/run/secrets/aws",
    "PWD=/home/sre/case",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "bearer tokens are accepted",
    "basic configuration checks passed",
    "http://127.0.0.1:8000/v1/chat/completions",
    "token: 4096",
    "NCCL_IB_HCA=mlx5_0",
    # source lines of a real vLLM traceback (fail_b_no_weights.log) and client code in tracebacks
    "for prefix, group in itertools.groupby(weights_by_parts, key=lambda x: x[0][0]):",
    "client = OpenAI(api_key=api_key, base_url=args.base_url)",
    "headers = {'Authorization': auth_header}",
    "token=self.token",
]


def env_file():
    return "\n".join([
        "# server environment",
        "HF_TOKEN=" + S["hf_token"],
        'OPENAI_API_KEY="' + S["openai_key"] + '"',
        "export ANTHROPIC_API_KEY=" + S["anthropic_key"],
        "api_key=" + S["plain_api_key"],
        "token: " + S["plain_token"],
        "DB_PASSWORD='" + S["db_password"] + "'",
        "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/" + S["slack_webhook"],
        "GITLAB_PAT=" + S["gitlab_token"],
        "NPM_CONFIG_REGISTRY_AUTH=" + S["npm_token"],
        "GOOGLE_API_KEY=" + S["google_api_key"],
    ] + [la for la in LOOKALIKES if "=" in la and not la.startswith('"')]) + "\n"


def argv():
    return ["vllm", "serve", "acme/monkey-keystone-7b", "--api-key", S["plain_api_key"], "--hf-token=" + S["hf_token"],
            "--api-key-file", "/run/secrets/vllm-api.key", "--max-num-batched-tokens", "8192",
            "--tokenizer", "acme/monkey-keystone-7b", "--ssl-keyfile-password", S["db_password"]]


def request_body():
    return json.dumps({
        "model": "acme/monkey-keystone-7b", "max_tokens": 16, "api_key": S["json_key"],
        "messages": [{"role": "user", "content": "say hi"}],
        "metadata": {"token": S["plain_token"], "note": "export HF_TOKEN=" + S["hf_token"]},
        "eos_token": "</s>",
    }, indent=2, sort_keys=True)


def request_headers():
    return ("POST /v1/chat/completions HTTP/1.1\nAuthorization: Bearer " + S["bearer"] + "\n"
            "x-api-key: " + S["anthropic_key"] + "\napi-key: " + S["azure_openai_key"] + "\n")


def server_log():
    return "\n".join([
        "INFO 11-30 10:00:00 [api_server.py:100] vLLM API server version 0.32.0",
        "INFO 11-30 10:00:00 [utils.py:200] non-default args: {'model': 'acme/monkey-keystone-7b', "
        "'api_key': ['" + S["list_key_a"] + "', '" + S["list_key_b"] + "'], 'max_num_batched_tokens': 8192}",
        "INFO 11-30 10:00:00 [api_server.py:101] args: Namespace(host='127.0.0.1', port=8000, api_key='"
        + S["repr_key"] + "', max_model_len=4096)",
        '{"ts": "2026-11-30T10:00:01", "msg": "config", "api_key": "' + S["json_key"] + '", "max_tokens": 16}',
        'DEBUG payload="{\\"api_key\\": \\"' + S["escaped_key"] + '\\", \\"stream\\": false}"',
        "DEBUG using " + S["github_token"] + " and " + S["github_pat"] + " for the mirror",
        "DEBUG slack " + S["slack_token"] + " google " + S["google_oauth"] + " aws " + S["aws_access_key"],
        "DEBUG azure app secret " + S["azure_secret"] + " jwt " + S["jwt"],
        "DEBUG legacy openai " + S["openai_key_legacy"],
        "DEBUG fetched https://acct.blob.core.windows.net/models/w.bin?sv=2022-11-02&sig=" + S["azure_sas"] + "&se=1",
        "DEBUG cache at postgres://vllm:" + S["url_password"] + "@db.internal:5432/cache",
        "DEBUG probe: curl -sf -u sre:" + S["curl_password"] + " http://127.0.0.1:8000/health",
        "DEBUG key file follows",
        PEM,
        "ERROR 11-30 10:00:05 [core.py:500] EngineCore failed to start.",
    ] + LOOKALIKES) + "\n"


def all_texts():
    return {"env": env_file(), "request": request_body(), "headers": request_headers(), "log": server_log(),
            "argv_text": " ".join(argv())}


@pytest.fixture
def key():
    return b"0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize("with_key", [False, True])
@pytest.mark.parametrize("where", ["env", "request", "headers", "log", "argv_text"])
def test_no_leak_and_lines_kept(where, with_key, key):
    text = all_texts()[where]
    out = redact_text(text, key if with_key else None)
    leaked = [name for name, value in SECRETS.items() if value in out]
    assert not leaked, "%s leaked in %s:\n%s" % (leaked, where, out)
    assert out.count("\n") == text.count("\n")
    assert scan_secrets(out) == [], out


@pytest.mark.parametrize("where", ["env", "request", "log", "argv_text"])
def test_lookalikes_survive(where, key):
    text = all_texts()[where]
    out = redact_text(text, key)
    for la in LOOKALIKES:
        if la in text:
            assert la in out, "look-alike destroyed in %s: %r" % (where, la)


def test_every_kind_is_planted_and_found(key):
    text = "".join(all_texts().values())
    found = {kind for _line, kind in scan_secrets(text)}
    # a declared secret has no shape a scanner could find: the operator's declaration is what marks it
    assert found == set(KINDS) - {"declared_secret"}, set(KINDS) ^ found


def test_scan_names_the_line_and_does_not_rewrite():
    text = server_log()
    before = str(text)
    findings = scan_secrets(text)
    assert text == before
    lines = text.split("\n")
    for lineno, kind in findings:
        assert kind in KINDS
        assert lineno >= 1 and lines[lineno - 1]
    pem_first = lines.index("-----BEGIN PRIVATE KEY-----") + 1
    assert (pem_first, "pem_block") in findings
    assert (lines.index([x for x in lines if "Namespace(" in x][0]) + 1, "secret_value") in findings


def test_pem_keeps_its_line_count_and_frame(key):
    out = redact_text("a\n" + PEM + "\nb", key)
    lines = out.split("\n")
    assert len(lines) == PEM.count("\n") + 3
    assert lines[1] == "-----BEGIN PRIVATE KEY-----" and lines[-2] == "-----END PRIVATE KEY-----"
    assert all(line.startswith("<redacted:pem_block:") for line in lines[2:-2])


def test_argv_list(key):
    out = redact_argv(argv(), key)
    assert not [v for v in SECRETS.values() if any(v in a for a in out)]
    assert out[0:3] == ["vllm", "serve", "acme/monkey-keystone-7b"]
    assert out[6:12] == ["--api-key-file", "/run/secrets/vllm-api.key", "--max-num-batched-tokens", "8192",
                         "--tokenizer", "acme/monkey-keystone-7b"]
    assert out[4].startswith("<redacted:secret_flag:") and out[5].startswith("--hf-token=<redacted:hf_token:")


def test_env_mapping(key):
    env = {"HF_TOKEN": S["hf_token"], "MY_SECRET": "x", "AccountKey": "FAKE==", "MAX_TOKENS": "4096",
           "TOKENIZERS_PARALLELISM": "false", "HF_TOKEN_PATH": "/run/secrets/hf", "CUDA_VISIBLE_DEVICES": "0,1",
           "EMPTY_TOKEN": "", "NO_PROXY": "localhost", "PIP_INDEX_URL": "https://u:" + S["url_password"] + "@pypi.internal/simple"}
    out = redact_env(env, key)
    assert out["HF_TOKEN"].startswith("<redacted:hf_token:")
    assert out["MY_SECRET"].startswith("<redacted:secret_value:") and out["AccountKey"].startswith("<redacted:")
    assert S["url_password"] not in out["PIP_INDEX_URL"] and out["PIP_INDEX_URL"].startswith("https://u:<redacted:")
    for name in ("MAX_TOKENS", "TOKENIZERS_PARALLELISM", "HF_TOKEN_PATH", "CUDA_VISIBLE_DEVICES", "EMPTY_TOKEN", "NO_PROXY"):
        assert out[name] == env[name]


def test_same_secret_same_marker_everywhere(key):
    env = redact_env({"HF_TOKEN": S["hf_token"]}, key)["HF_TOKEN"]
    log = redact_text("loading with " + S["hf_token"], key)
    argvm = redact_argv(["--hf-token", S["hf_token"]], key)[1]
    assert env in log and env == argvm
    other = redact_env({"HF_TOKEN": S["hf_token"][:-1] + "Q"}, key)["HF_TOKEN"]
    assert other != env
    assert redact_env({"HF_TOKEN": S["hf_token"]}, b"another-case-key-0123456789abcdef")["HF_TOKEN"] != env
    # a str key (the key file's text, as a module parameter) gives the same markers as the bytes
    assert redact_text("x " + S["hf_token"], key.decode()) == redact_text("x " + S["hf_token"], key)


def test_a_flag_inside_a_json_object_is_not_an_argv():
    # record_log writes result dicts as JSON: the string after "--api-key" there is the next key, not its value
    # (the dict was redacted as a structure first, so its "value" is a marker already; the key name must survive)
    text = '{"flag": "--api-key", "value": "<redacted>", "argv": ["--api-key", "' + S["json_key"] + '"]}'
    out = redact_text(text)
    assert out == '{"flag": "--api-key", "value": "<redacted>", "argv": ["--api-key", "<redacted>"]}'


def test_keyless_markers_stay_plain():
    out = redact_text("HF_TOKEN=" + S["hf_token"])
    assert out == "HF_TOKEN=" + MASK


def test_data_walk_with_lists_and_counts(key):
    data = {"api_key": [S["list_key_a"], S["list_key_b"]], "usage": {"prompt_tokens": 3, "total_tokens": 9},
            "max_tokens": 16, "command": {"argv": ["vllm", "serve", "--api-key", S["plain_api_key"]]},
            "log": server_log(), "token": None}
    out = redact_data(data, key)
    dumped = json.dumps(out)
    assert not [v for v in SECRETS.values() if v in dumped]
    assert out["usage"] == {"prompt_tokens": 3, "total_tokens": 9} and out["max_tokens"] == 16 and out["token"] is None


def test_the_markers_stand_where_the_scan_found_secrets(key):
    text = env_file()
    events = scan_secrets(text)
    assert events and all(kind in KINDS for _l, kind in events)
    assert sorted(set(redaction_markers(redact_text(text, key)))) == events
    assert redaction_markers("a <redacted> b") == [(1, "unspecified")]


@pytest.mark.parametrize("name,secret", [
    ("HF_TOKEN", True), ("api_key", True), ("apiKey", True), ("x-api-key", True), ("AccountKey", True),
    ("client_secret", True), ("token", True), ("DB_PASSWORD", True), ("GITLAB_PAT", True), ("KEY", False), ("key", False),
    ("MAX_TOKENS", False), ("max_tokens", False), ("prompt_tokens", False), ("TOKENIZERS_PARALLELISM", False),
    ("tokenizer", False), ("eos_token", False), ("api_key_file", False), ("HF_TOKEN_PATH", False),
    ("AWS_ACCESS_KEY_ID", False), ("cache_key", False), ("KEYBOARD", False), ("PWD", False), ("SSH_AUTH_SOCK", False),
    ("bos_token_id", False), ("secret_names", False),
])
def test_secret_names(name, secret):
    assert is_secret_name(name) is secret


def test_case_key_created_once_private(tmp_path):
    case = tmp_path / "records" / "case-a"
    k1 = load_case_key(str(case))
    k2 = load_case_key(str(case))
    assert isinstance(k1, bytes) and k1 == k2 and len(k1) == 64
    path = case / ".redact.key"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_case_key(str(tmp_path / "records" / "case-b")) != k1


# ------------------------------------------------------------------------------------------------ declared secrets
# issue 32 item 4: what the operator declared secret (repro_vllm_secret_env) is redacted whatever its name or shape;
# a value too short or only digits is redacted as its own variable only, never inside other values or text
DECLARED = {"ONE_CHAR": "1", "DIGITS": "8675309", "HOSTY": "vault-7.corp.invalid", "CORP_CREDS": "plain-FAKE-creds"}
KEY = b"0" * 64


def test_declared_secret_rule():
    from ansible_collections.repro.vllm.plugins.module_utils.common._redact import marker, redact_declared, unambiguous
    assert [unambiguous(v) for v in ("1", "8675309", "1234567890123", "abcdefg", "vault-7.corp.invalid")] == [
        False, False, False, False, True]
    record = {
        "env": {"ONE_CHAR": "1", "DIGITS": "8675309", "CORP_CREDS": "plain-FAKE-creds", "HF_HUB_OFFLINE": "1",
                "PROXY": "http://vault-7.corp.invalid:3128", "HOSTY": "vault-7.corp.invalid"},
        "argv": ["vllm", "serve", "--port", "8675309", "--max-model-len", "1"],
        "exit_code": 1, "lease_until": 1.5, "log_lines": 11,
        "first_error": {"line": "connect to vault-7.corp.invalid failed; retry 1 of 11", "lineno": 1},
        "dump": "ONE_CHAR=1 DIGITS=8675309 {'CORP_CREDS': 'plain-FAKE-creds', \"ONE_CHAR\": \"1\"} ONE_CHARX=1",
    }
    out = redact_declared(record, DECLARED, KEY)
    m = {n: marker("declared_secret", v, KEY) for n, v in DECLARED.items()}
    # the declared variables themselves, whatever the value
    assert out["env"] == {"ONE_CHAR": m["ONE_CHAR"], "DIGITS": m["DIGITS"], "CORP_CREDS": m["CORP_CREDS"],
                          "HF_HUB_OFFLINE": "1", "PROXY": "http://%s:3128" % m["HOSTY"], "HOSTY": m["HOSTY"]}
    # short and digit-only values elsewhere: left as they are (a port, a count, an exit code are not the secret)
    assert out["argv"] == record["argv"] and out["exit_code"] == 1 and out["log_lines"] == 11
    assert out["first_error"] == {"line": "connect to %s failed; retry 1 of 11" % m["HOSTY"], "lineno": 1}
    assert out["dump"] == ("ONE_CHAR=%s DIGITS=%s {'CORP_CREDS': '%s', \"ONE_CHAR\": \"%s\"} ONE_CHARX=1"
                           % (m["ONE_CHAR"], m["DIGITS"], m["CORP_CREDS"], m["ONE_CHAR"]))
    # without a key: the plain marker; with no declared secrets: the same object back
    assert redact_declared({"ONE_CHAR": "1"}, DECLARED) == {"ONE_CHAR": MASK}
    assert redact_declared(record, {}) is record and redact_declared(record, None) is record
    # a marker stays a marker (the module redacted first, the controller with the key after)
    assert redact_declared({"ONE_CHAR": MASK}, DECLARED, KEY) == {"ONE_CHAR": MASK}
    assert "plain-FAKE-creds" not in json.dumps(out) and "vault-7.corp.invalid" not in json.dumps(out)
