"""Round 13 of issue 35: the families fresh pastes show, each from its tool's source: podman's and tini's refusals
(libpod's "container create failed (no logs from conmon)", "default OCI runtime %q not found", tini's PRINT_FATAL),
the error body of a 500 a client quotes (vLLM's ErrorResponse, FastAPI's ``detail``), structured log records (a
JSON record's ``level``/``message``, logrus' ``level=... msg="..."``), vLLM's record without its date, and messages of
vLLM and CPython that place an excerpt.  The samples are written from those sources; paths and ids are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text


def answer(text):
    ans = classify_text(text)
    first = ans["first_error"] or {}
    return ans["stage"], ans["error_class"], ans["confidence"], first.get("lineno")


@pytest.mark.parametrize("text, lineno", [
    ("$ podman run --rm -it quay.io/x/y:1\nError: container create failed (no logs from conmon): conmon bytes "
     "\"\": readObjectStart: expect { or n, but found \x00\n", 2),
    ("$ podman images\nError: default OCI runtime \"crun\" not found: invalid argument\n", 2),
    ("Attaching to app\napp  | [FATAL tini (7)] exec /run/podman-init failed: No such file or directory\n"
     "app exited with code 127\n", 2),
])
def test_a_container_engine_refusal_is_the_environment(text, lineno):
    assert answer(text) == ("environment", "container_error", "high", lineno)


def test_a_quoted_500_error_body_is_a_failed_request():
    body = '{\n    "object": "error",\n    "message": "Internal Server Error (Request ID: 1f2e)",\n    "code": 500\n}\n'
    assert answer(body) == ("request", "other", "medium", 3)


def test_a_client_record_of_a_500_is_a_failed_request():
    text = "2025-01-02 10:00:00.123 | ERROR    | app.client:call:12 - API error: Internal Server Error\n"
    assert answer(text)[:3] == ("request", "other", "medium")


def test_an_indented_json_member_is_not_a_source_line():
    # a 4-space indented JSON member of an unrelated body stays quiet (no signature, no exception)
    assert classify_text('{\n    "object": "list",\n    "data": []\n}\n')["stage"] == "none"
