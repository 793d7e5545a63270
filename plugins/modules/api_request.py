#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: api_request
short_description: Send one saved request body to a fixed route of a server, 1..N identical copies at once
version_added: 0.1.0
description:
  - The fixed client path of the reproduction method, one saved body (O(body_file) or O(body)), one route, one
    timeout, sent O(concurrency) times at the same moment (threads released together) with the Python standard
    library C(urllib).
  - Records for each copy its HTTP status, latency, response body (parsed JSON when it parses, bounded by
    O(max_body_bytes)) and error text. A non-2xx answer is data, not a task failure, unless O(fail_on_status) is set.
  - With O(server_log), returns the part of the server log written during the request window (byte offsets before
    and after, bounded by O(log_slice_bytes)), secrets redacted.
  - With O(dest), writes the request and every response to that folder.
author:
  - repro.vllm maintainers (@repro)
extends_documentation_fragment:
  - repro.vllm._attributes
attributes:
  check_mode:
    support: full
    details:
      - Plans only; returns the URL, method and body digest and sends nothing.
  diff_mode:
    support: none
options:
  base_url:
    description: Base URL of the server, for example C(http://127.0.0.1:8000).
    type: str
    required: true
  route:
    description: Path appended to O(base_url).
    type: str
    default: /v1/completions
  method:
    description: HTTP method.
    type: str
    choices: [POST, GET]
    default: POST
  body_file:
    description: File on the managed node holding the request body (sent byte for byte).
    type: path
  body:
    description: The request body; a dict or list is sent as JSON, a string as it is.
    type: raw
  headers:
    description: Extra request headers. C(Content-Type) defaults to C(application/json) when there is a body.
    type: dict
    default: {}
  api_key:
    description: Sent as C(Authorization Bearer) header; never returned.
    type: str
  timeout:
    description: Seconds each copy may take (connect and whole answer) before it is recorded as timed out.
    type: float
    default: 60
  concurrency:
    description: Number of identical copies sent at once.
    type: int
    default: 1
  max_body_bytes:
    description: Bytes of each response body kept; a longer body is cut and marked C(truncated).
    type: int
    default: 65536
  server_log:
    description: The server's log file on the same node; the bytes written while the requests ran are returned.
    type: path
  log_slice_bytes:
    description: At most this many bytes of the log window are returned (its end is kept).
    type: int
    default: 65536
  log_settle_s:
    description: Seconds to wait after the last answer before reading the log's end offset (the server logs the
      access line just after it answers).
    type: float
    default: 0.3
  dest:
    description: Folder that receives C(request.json) (the body and how it was sent) and C(response-NNN.json) per copy.
    type: path
  fail_on_status:
    description: Fail the task when any copy did not get a 2xx answer (results are returned either way).
    type: bool
    default: false
  lease_file:
    description:
      - The lease file of the server the requests go to (C(<state_file>.lease) of M(repro.vllm.vllm_server)); it is
        renewed to O(lease) seconds plus O(timeout) from now before the requests are sent, so the server's
        supervisor does not stop it while the play still uses it.
    type: path
  lease_node:
    description:
      - The inventory host whose entry of a run lease (C(<lease_dir>/<run_uid>.json)) O(lease_file) is; without it
        O(lease_file) is a server's own C(<state_file>.lease).
    type: str
  lease:
    description: Seconds the renewed lease lasts beyond this request's O(timeout). Used with O(lease_file).
    type: float
    default: 0
  use_proxy:
    description: Use the proxy settings of the environment. Off by default, since the server is usually local.
    type: bool
    default: false
  validate_certs:
    description: Verify TLS certificates for C(https) URLs.
    type: bool
    default: true
seealso:
  - module: repro.vllm.vllm_server
"""

EXAMPLES = r"""
- name: The one fixed request, saved in the record
  repro.vllm.api_request:
    base_url: http://127.0.0.1:8011
    route: /v1/completions
    body_file: /var/tmp/repro/run-001/request.json
    timeout: 30
    server_log: /var/tmp/repro/run-001/server.log
    dest: /var/tmp/repro/run-001/responses
  register: answer

- name: Two identical copies at once (the concurrency_2 layer)
  repro.vllm.api_request:
    base_url: http://127.0.0.1:8011
    body:
      model: tiny
      prompt: "Hello, my name is"
      max_tokens: 8
      temperature: 0
    concurrency: 2
    fail_on_status: true
"""

RETURN = r"""
ok:
  description: True when every copy got a 2xx answer.
  returned: always
  type: bool
statuses:
  description: HTTP status of each copy in order (null for a copy that got no answer).
  returned: always
  type: list
  elements: int
  sample: [200]
latencies:
  description: Seconds each copy took, in order.
  returned: always
  type: list
  elements: float
errors:
  description: Error text of each copy (null when it got an answer, whatever its status).
  returned: always
  type: list
  elements: str
responses:
  description: One record per copy.
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: Copy number, from 0.
      type: int
    status:
      description: HTTP status or null.
      type: int
    ok:
      description: 2xx or not.
      type: bool
    latency_s:
      description: Seconds from send to the end of the body.
      type: float
    body:
      description: The parsed JSON answer, null when it did not parse or was cut.
      type: raw
    text:
      description: The answer as text when it is not JSON (or was cut), else null.
      type: str
    bytes:
      description: Body bytes kept.
      type: int
    truncated:
      description: Whether the body was longer than O(max_body_bytes).
      type: bool
    error:
      description: Connection error or timeout text, null when an answer came.
      type: str
    started_at:
      description: Unix time the copy was sent.
      type: float
    headers:
      description: >-
        The answer's C(server), C(content-type) and C(via) headers (lower-case names), which say who wrote the
        answer (a proxy's own error page or the server's answer passed through); no other header is kept.
      type: dict
lease_until:
  description: Unix time the server's lease was renewed to (only with O(lease_file) and O(lease)).
  returned: when the lease was renewed
  type: float
request:
  description: What was sent (URL, method, body size and sha256, concurrency, timeout; header names only).
  returned: always
  type: dict
wall_s:
  description: Seconds from the first send to the last answer.
  returned: always
  type: float
log_slice:
  description: The server log written during the request window, null without O(server_log).
  returned: always
  type: dict
  contains:
    path:
      description: The log file.
      type: str
    start_offset:
      description: Byte offset before the first request.
      type: int
    end_offset:
      description: Byte offset after the last answer (and O(log_settle_s)).
      type: int
    text:
      description: The bytes in between (at most O(log_slice_bytes), the end kept), secrets redacted.
      type: str
    truncated:
      description: Whether the window was longer than O(log_slice_bytes).
      type: bool
    error:
      description: Why the slice is missing or partial, else null.
      type: str
files:
  description: Files written to O(dest).
  returned: always
  type: list
  elements: str
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.repro.vllm.plugins.module_utils.server import _http
from ansible_collections.repro.vllm.plugins.module_utils.server._lease import renew_lease, renew_node
from ansible_collections.repro.vllm.plugins.module_utils.common._redact import redact_text


def redact_strings(data):
    """Scan every string of a JSON-like value for secret shapes; keys are kept as they are.

    Key-name rules are not applied here: an OpenAI answer's ``usage.completion_tokens`` or a request's
    ``max_tokens`` are counts, not secrets.
    """
    if isinstance(data, dict):
        return {k: redact_strings(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_strings(v) for v in data]
    if isinstance(data, str):
        return redact_text(data)
    return data


def _load_body(module):
    p = module.params
    if p["body_file"] is not None:
        try:
            with open(p["body_file"], "rb") as f:
                return f.read()
        except (OSError, IOError) as exc:
            module.fail_json(msg="api_request: cannot read body_file %s: %s; check the path on the managed node"
                             % (p["body_file"], exc))
    body = p["body"]
    if body is None:
        return None
    if isinstance(body, (dict, list)):
        return json.dumps(body).encode("utf-8")
    return str(body).encode("utf-8")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            base_url=dict(type="str", required=True),
            route=dict(type="str", default="/v1/completions"),
            method=dict(type="str", default="POST", choices=["POST", "GET"]),
            body_file=dict(type="path"),
            body=dict(type="raw"),
            headers=dict(type="dict", default={}),
            api_key=dict(type="str", no_log=True),
            timeout=dict(type="float", default=60.0),
            concurrency=dict(type="int", default=1),
            max_body_bytes=dict(type="int", default=_http.DEFAULT_MAX_BODY),
            server_log=dict(type="path"),
            log_slice_bytes=dict(type="int", default=65536),
            log_settle_s=dict(type="float", default=0.3),
            dest=dict(type="path"),
            fail_on_status=dict(type="bool", default=False),
            use_proxy=dict(type="bool", default=False),
            validate_certs=dict(type="bool", default=True),
            lease_file=dict(type="path"),
            lease_node=dict(type="str"),
            lease=dict(type="float", default=0.0),
        ),
        mutually_exclusive=[("body_file", "body")],
        supports_check_mode=True,
    )
    p = module.params
    if p["concurrency"] < 1:
        module.fail_json(msg="api_request: concurrency must be 1 or more (got %s)" % p["concurrency"])
    if p["timeout"] <= 0:
        module.fail_json(msg="api_request: timeout must be more than 0 seconds (got %s)" % p["timeout"])
    route = p["route"] if p["route"].startswith("/") else "/" + p["route"]
    url = p["base_url"].rstrip("/") + route
    data = _load_body(module)
    if p["method"] == "POST" and data is None:
        module.fail_json(msg="api_request: method POST needs body_file or body (the saved request)")
    headers = {str(k): str(v) for k, v in (p["headers"] or {}).items()}
    if data is not None and not any(k.lower() == "content-type" for k in headers):
        headers["Content-Type"] = "application/json"
    if p["api_key"]:
        headers["Authorization"] = "Bearer %s" % p["api_key"]

    request = {"url": redact_text(url), "method": p["method"], "body_bytes": len(data or b""),
               "body_sha256": _http.body_digest(data), "concurrency": p["concurrency"], "timeout": p["timeout"],
               "header_names": sorted(headers)}
    if p["body_file"]:
        request["body_file"] = p["body_file"]
    result = {"changed": False, "ok": False, "statuses": [], "latencies": [], "errors": [], "responses": [],
              "request": request, "wall_s": None, "log_slice": None, "files": []}
    if module.check_mode:
        result["msg"] = "would send %d x %s %s" % (p["concurrency"], p["method"], request["url"])
        module.exit_json(**result)

    if p["lease_file"] and p["lease"] > 0:
        try:
            if p["lease_node"] is not None:
                result["lease_until"] = renew_node(p["lease_file"], p["lease_node"], p["lease"] + p["timeout"],
                                                   by="api_request")
            else:
                result["lease_until"] = renew_lease(p["lease_file"], p["lease"] + p["timeout"], by="api_request")
        except (OSError, IOError) as exc:
            module.fail_json(msg="api_request: cannot renew the server's lease %s: %s; without it the server may be "
                             "stopped by its supervisor during the request" % (p["lease_file"], exc), **result)
    start_off = _http.file_size(p["server_log"]) if p["server_log"] else None
    t0 = time.monotonic()
    records = _http.send_many(url, method=p["method"], data=data, headers=headers, timeout=p["timeout"],
                              concurrency=p["concurrency"], max_body=p["max_body_bytes"], use_proxy=p["use_proxy"],
                              validate_certs=p["validate_certs"])
    result["wall_s"] = round(time.monotonic() - t0, 6)
    if p["server_log"]:
        if p["log_settle_s"] > 0:
            time.sleep(p["log_settle_s"])
        sl = _http.read_slice(p["server_log"], start_off, _http.file_size(p["server_log"]), p["log_slice_bytes"])
        sl["text"] = redact_text(sl["text"])
        result["log_slice"] = sl
    records = [redact_strings(r) for r in records]
    result.update(responses=records, statuses=[r["status"] for r in records],
                  latencies=[r["latency_s"] for r in records], errors=[r["error"] for r in records])
    result["ok"] = all(r["ok"] for r in records)

    if p["dest"]:
        try:
            os.makedirs(p["dest"], exist_ok=True)
            req_path = os.path.join(p["dest"], "request.json")
            body_text = (data or b"").decode("utf-8", "replace")
            try:
                body_value = json.loads(body_text) if body_text else None
            except ValueError:
                body_value = body_text
            with open(req_path, "w") as f:
                json.dump(dict(request, body=redact_strings(body_value)), f, indent=2, sort_keys=True)
                f.write("\n")
            result["files"].append(req_path)
            for r in records:
                path = os.path.join(p["dest"], "response-%03d.json" % (r["index"] + 1))
                with open(path, "w") as f:
                    json.dump(r, f, indent=2, sort_keys=True)
                    f.write("\n")
                result["files"].append(path)
            result["changed"] = True
        except (OSError, IOError) as exc:
            module.fail_json(msg="api_request: cannot write responses to %s: %s; choose a writable dest"
                             % (p["dest"], exc), **result)

    if p["fail_on_status"] and not result["ok"]:
        bad = ["#%d: %s" % (r["index"], r["status"] if r["status"] is not None else r["error"])
               for r in records if not r["ok"]]
        result["msg"] = "api_request: %d of %d copies to %s did not get a 2xx answer (%s)" % (
            len(bad), len(records), request["url"], ", ".join(bad))
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
