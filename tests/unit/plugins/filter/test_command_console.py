# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the console says about the minimal command (issue 23, item 4): the derivation's lines, the refusal of
options this collection does not know, the ladder layer unknown_options that sets exactly them again (one variable,
as record_diff judges it), and repro_vllm_port winning over the production command's --port."""

from __future__ import annotations

import copy

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.repro.vllm.plugins.filter.minimal_command import minimal_command
from ansible_collections.repro.vllm.plugins.filter.record_diff import record_diff
from ansible_collections.repro.vllm.plugins.plugin_utils.decide._diff import record_identity
from ansible_collections.repro.vllm.plugins.module_utils.ladder import _command as c, _ladder
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.ladder.test__command import (
    FAKE_KEY, K3_DOCKER, K3_ENV, K3_H200, K3_H200_ENV, KIMI_CONFIG, PLAIN_CONFIG)

# an option no vLLM has, as a production command might carry a typo or a private patch's flag
UNKNOWN = ["--frobnicate-level", "3"]
# the H200 command with it and with the production port 8058
PROD = [a if a != "--port=8000" else "--port=8058" for a in K3_H200] + UNKNOWN


def _ladder_data():
    return _ladder.layers_data({})


# --- the derivation on the console ------------------------------------------------------------------------------

def test_derivation_lines_name_each_category_its_layer_the_port_and_the_unknown_options():
    d = c.derive_minimal(PROD, K3_H200_ENV, model_config=PLAIN_CONFIG, port=8057)
    lines = c.derivation_lines(d)
    assert lines[0] == ("minimal | derived from the production command: /opt/vllm/bin/vllm serve moonshotai/Kimi-K3 "
                        "-tp 8 -pp 2 --port 8057")
    assert ("minimal | removed long_context (long-context defaults; back in the ladder layer long_context): "
            "--max-model-len 32768") in lines
    assert ("minimal | removed load_clients (load clients and production concurrency sizing; back in the ladder "
            "layer concurrency_n): --max-num-seqs 5, --max-num-batched-tokens 4096") in lines
    assert ("minimal | removed unknown (options this collection does not know (review them); back in the ladder "
            "layer unknown_options): --frobnicate-level 3") in lines
    assert ("minimal | --port=8058 of the production command replaced by --port 8057: repro_vllm_port wins over the "
            "production command's port: the reproduction never serves on the production server's port") in lines
    assert lines[-1] == ("minimal | options this collection does not know were removed: --frobnicate-level 3 "
                         "(refused: repro_vllm_allow_unknown_options is false)")
    allowed = c.derivation_lines(d, allow_unknown=True)
    assert allowed[-1].endswith("(repro_vllm_allow_unknown_options: true - tried as the ladder layer unknown_options)")
    # the command as it starts (platform options added) is the one shown; the unread-config warning is a line too
    started = c.derivation_lines(c.derive_minimal(K3_H200, K3_H200_ENV), argv=["vllm", "serve", "m", "--enforce-eager"])
    assert started[0] == "minimal | derived from the production command: vllm serve m --enforce-eager"
    assert "minimal | warning: --trust-remote-code kept without evidence: the model config was not read" in started
    assert not any("does not know" in line for line in started)
    # a --trust-remote-code the model does not need is said with its own reason
    plain = c.derivation_lines(c.derive_minimal(K3_H200, K3_H200_ENV, model_config=PLAIN_CONFIG))
    assert "minimal | removed --trust-remote-code: the model's config.json has no auto_map: no custom code to trust" in plain


def test_derivation_lines_mask_secrets():
    d = minimal_command(K3_DOCKER, env=K3_ENV, model_config=KIMI_CONFIG, port=8000)
    lines = c.derivation_lines(d, argv=d["argv"] + ["--api-key", FAKE_KEY])
    assert all(line.startswith("minimal | ") for line in lines)
    assert FAKE_KEY not in "\n".join(lines)
    assert any(line.startswith("minimal | removed gateway (") and "--api-key <redacted>" in line for line in lines)
    # the production command said --port 8000 already: nothing replaced, nothing said about it
    assert d["overridden"] == [] and not any("replaced by" in line for line in lines)


# --- unknown options: refused unless allowed --------------------------------------------------------------------

def test_unknown_options_are_refused_unless_allowed():
    d = c.derive_minimal(PROD, K3_H200_ENV, model_config=PLAIN_CONFIG, port=8057)
    assert c.unknown_options(d) == ["--frobnicate-level 3"]
    refusal = c.unknown_refusal(d)
    assert refusal.startswith("the production command holds option(s) this collection does not know: "
                              "--frobnicate-level 3. Nothing was started.")
    assert "repro_vllm_allow_unknown_options: true" in refusal and "repro_vllm_production_argv" in refusal
    assert c.unknown_refusal(d, allow=True) is None
    assert c.unknown_refusal(c.derive_minimal(K3_H200, K3_H200_ENV)) is None
    # the unknown option never reaches the minimal command
    assert "--frobnicate-level" not in d["argv"]


# --- the ladder layer unknown_options ----------------------------------------------------------------------------

def test_the_ladder_data_has_unknown_options_after_tool_calling_before_multi_node():
    data = _ladder_data()
    order = [layer["name"] for layer in _ladder.start(data, {})["layers"]]
    assert order == ["prefix_caching", "long_context", "output_limit", "concurrency_2", "concurrency_n", "tool_calling",
                     "unknown_options", "multi_node", "gateway"]
    assert order == c.LADDER_ORDER
    layer = data["unknown_options"]
    # no options of its own: only what the production command had that this collection does not know
    assert layer["production_only"] is True and "args" not in layer and "env" not in layer
    assert "request" not in layer and "concurrency" not in layer and layer["rollback"]
    assert c.category_layer("unknown") == "unknown_options"


def _run(argv, env, request, host="gpu-a01"):
    return {"hosts": {host: record_identity({}, argv, env=env)}, "request": copy.deepcopy(request)}


def test_unknown_options_layer_adds_exactly_them_to_the_last_good_command_as_one_variable():
    d = c.derive_minimal(PROD, K3_H200_ENV, model_config=PLAIN_CONFIG, port=8057)
    assert d["layers"]["unknown_options"] == ["--frobnicate-level 3"]
    ladder = _ladder.start({name: fields for name, fields in _ladder_data().items()
                            if name in ("prefix_caching", "unknown_options")}, {})["layers"]
    base = {"argv": d["argv"], "env": d["env"],
            "request": {"route": "/v1/completions", "concurrency": 1, "timeout": 60, "body": {"model": "kimi-k3"}}}
    good = c.apply_layers(base, ladder, ["prefix_caching"], production=d)
    step = c.apply_layers(base, ladder, ["prefix_caching", "unknown_options"], production=d)
    # the last good command plus exactly the unknown option, as written
    assert step["argv"] == good["argv"] + UNKNOWN
    assert step["env"] == good["env"] and step["request"] == good["request"]
    assert step["from_production"] == ["--frobnicate-level 3"]
    assert step["changed"] == ["--frobnicate-level 3", "from the production command: --frobnicate-level 3"]
    # record_diff accepts it as the step's one variable ...
    diff = record_diff(_run(step["argv"], step["env"], step["request"]), _run(good["argv"], good["env"], good["request"]),
                       allowed=step["allowed"], previous_run="run-003")
    assert diff["one_variable"] is True and diff["variables"] == ["command"]
    assert [(x["key"], x["before"], x["after"]) for x in diff["changes"]] == [("--frobnicate-level", None, "3")]
    # ... and anything more is a second variable
    extra = record_diff(_run(step["argv"] + ["--enforce-eager"], step["env"], step["request"]),
                        _run(good["argv"], good["env"], good["request"]), allowed=step["allowed"])
    assert extra["one_variable"] is False
    # the rollback reruns the last good command: it holds no unknown option
    assert "--frobnicate-level" not in good["argv"]
    # nothing unknown in the production command: the layer has nothing to set (the role skips it)
    plain = c.derive_minimal(K3_H200, K3_H200_ENV, model_config=PLAIN_CONFIG)
    assert c.production_layer(plain, "unknown_options")["args"] == []


# --- repro_vllm_port wins over the production --port --------------------------------------------------------------

@pytest.mark.parametrize("given, shown", [
    (["--port", "8058"], "--port 8058"),
    (["--port=8058"], "--port=8058"),
    ([], "no --port (vLLM's default 8000)"),
])
def test_repro_vllm_port_wins_over_the_production_port(given, shown):
    argv = ["/opt/vllm/bin/vllm", "serve", "/models/tiny", "--host", "127.0.0.1"] + given + ["--max-num-seqs", "4"]
    d = c.derive_minimal(argv, port=8057)
    assert d["argv"] == ["/opt/vllm/bin/vllm", "serve", "/models/tiny", "--host", "127.0.0.1", "--port", "8057"]
    assert c.option_map(d["argv"])["--port"] == "8057"
    assert d["overridden"] == [{"item": shown, "now": "--port 8057", "why": (
        "repro_vllm_port wins over the production command's port: the reproduction never serves on the production "
        "server's port")}]
    kept = [k for k in d["kept"] if k["flag"] == "--port"]
    assert kept == [{"item": "--port 8057", "flag": "--port", "value": "8057", "category": "minimal",
                     "why": "repro_vllm_port (the production command had %s)" % shown}]


def test_the_same_port_changes_nothing_and_no_port_keeps_the_old_behaviour():
    argv = ["vllm", "serve", "/models/tiny", "--port", "8057"]
    assert c.derive_minimal(argv, port="8057")["overridden"] == []
    assert c.derive_minimal(argv)["argv"] == argv and c.derive_minimal(argv)["overridden"] == []
    # a repeated --port collapses to the one repro_vllm_port
    twice = c.derive_minimal(argv + ["--port", "9000"], port=8057)
    assert twice["argv"] == argv and twice["overridden"][0]["item"] == "--port 8057"
    with pytest.raises(c.CommandError, match="repro_vllm_port must be a port number"):
        c.derive_minimal(argv, port="http")


def test_a_container_publishing_the_production_port_is_refused_host_network_is_rewritten():
    published = ["docker", "run", "-p", "8058:8058", "vllm/vllm-openai:v0.29.0", "/models/tiny", "--port", "8058"]
    with pytest.raises(c.CommandError, match=r"publishes the production port 8058 .* repro_vllm_port is 8057: change "
                                             r"the -p option of repro_vllm_production_argv to 8057"):
        c.derive_minimal(published, port=8057)
    with pytest.raises(AnsibleFilterError, match="minimal_command: the container publishes"):
        minimal_command(published, port=8057)
    host_net = ["docker", "run", "--network", "host", "vllm/vllm-openai:v0.29.0", "/models/tiny", "--port", "8058"]
    d = c.derive_minimal(host_net, port=8057)
    assert d["argv"][-2:] == ["--port", "8057"] and d["overridden"][0]["item"] == "--port 8058"
