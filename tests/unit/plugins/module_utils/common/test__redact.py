# -*- coding: utf-8 -*-
# Test secrets below are obviously fake.
from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.common._redact import (
    MASK, redact_argv, redact_data, redact_env, redact_text)

FAKE_HF = "hf_" + "FAKE" * 8
FAKE_SK = "sk-" + "fakefakefake" * 4
FAKE_GH = "ghp_" + "F" * 36
FAKE_AWS = "AKIA" + "FAKEFAKEFAKEFAKE"
FAKE_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlLXVzZXIifQ.ZmFrZS1zaWduYXR1cmUtZmFrZQ"


@pytest.mark.parametrize("secret", [FAKE_HF, FAKE_SK, FAKE_GH, FAKE_AWS, FAKE_JWT])
def test_token_shapes_are_masked_in_text(secret):
    out = redact_text("INFO loading with credential %s done" % secret)
    assert secret not in out
    assert MASK in out
    assert out.startswith("INFO loading with credential ")


def test_bearer_header_and_url_credentials():
    out = redact_text("curl -H 'Authorization: Bearer abcdefgh12345678' https://user:fakepass@registry.example/v2/")
    assert "abcdefgh12345678" not in out and "fakepass" not in out
    assert "https://user:" + MASK + "@registry.example/v2/" in out


def test_pem_block_is_masked_whole():
    pem = "-----BEGIN PRIVATE KEY-----\nMIIfakefakefake\nfakefake\n-----END PRIVATE KEY-----"
    out = redact_text("key:\n" + pem + "\nafter")
    assert "MIIfakefakefake" not in out and out.endswith("\nafter")


def test_env_values_by_name_and_diagnostic_vars_kept():
    env = {"HF_TOKEN": "anything", "MY_SECRET": "x", "DB_PASSWORD": "y", "AWS_SECRET_ACCESS_KEY": "z",
           "CUDA_VISIBLE_DEVICES": "0,1", "NCCL_DEBUG": "INFO", "EMPTY_TOKEN": ""}
    out = redact_env(env)
    assert out["HF_TOKEN"] == out["MY_SECRET"] == out["DB_PASSWORD"] == out["AWS_SECRET_ACCESS_KEY"] == MASK
    assert out["CUDA_VISIBLE_DEVICES"] == "0,1" and out["NCCL_DEBUG"] == "INFO"
    assert out["EMPTY_TOKEN"] == ""  # an empty value is evidence too (the variable was set but empty)


def test_argv_flag_forms():
    argv = ["vllm", "serve", "m", "--api-key", "fake-key-1", "--hf-token=fake-2", "--port", "8000"]
    out = redact_argv(argv)
    assert out == ["vllm", "serve", "m", "--api-key", MASK, "--hf-token=" + MASK, "--port", "8000"]
    assert argv[4] == "fake-key-1"  # input untouched


def test_data_walks_nested_structures_and_argv_lists():
    data = {"command": {"argv": ["vllm", "serve", "--api-key", "fake"], "env": {"OPENAI_API_KEY": "fake"}},
            "note": "export HF_TOKEN=%s" % FAKE_HF, "count": 3}
    out = redact_data(data)
    assert out["command"]["argv"][-1] == MASK
    assert out["command"]["env"]["OPENAI_API_KEY"] == MASK
    assert FAKE_HF not in out["note"] and out["count"] == 3


def test_inline_assignments_in_text():
    out = redact_text("env: HF_TOKEN=abc123 VLLM_API_KEY='zzz' PATH=/usr/bin")
    assert "abc123" not in out and "zzz" not in out and "PATH=/usr/bin" in out


def test_token_counts_are_not_secrets():
    usage = {"usage": {"prompt_tokens": 12, "completion_tokens": 8}, "max_tokens": 16,
             "env": {"VLLM_MAX_NUM_BATCHED_TOKENS": "8192", "HF_TOKEN": "x"}}
    out = redact_data(usage)
    assert out["usage"] == {"prompt_tokens": 12, "completion_tokens": 8} and out["max_tokens"] == 16
    assert out["env"] == {"VLLM_MAX_NUM_BATCHED_TOKENS": "8192", "HF_TOKEN": MASK}
