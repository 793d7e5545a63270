# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one vLLM command reader: parsing, the minimal command derived from a Kimi K3 production command (flags from
the vLLM recipe for Kimi-K3, shared/reference/compat.md 1.2), ladder layers applied on top."""

from __future__ import annotations

import json

import pytest

from ansible_collections.repro.vllm.plugins.module_utils.ladder import _command as c

FAKE_HF = "hf_" + "FAKE" * 8
FAKE_KEY = "sk-" + "FAKE" * 6
IMAGE = "vllm/vllm-openai:v0.29.0@sha256:c2914767605584b6d8f45686b82de173ecc99e781897aa3d0a66dacd72c51ae1"
SPEC = '{"model":"RedHatAI/Kimi-K3-speculator.dspark","num_speculative_tokens":8,"method":"dspark"}'
ATTN = '{"use_prefill_query_quantization":true,"mla_prefill_backend":"flashinfer"}'

# Kimi K3 on two GB300 trays as a production team runs it: the recipe's base args and Blackwell overrides, tool
# calling, reasoning, speculative decoding, prefix caching, MNNVL transport env, plus gateway and app settings.
K3_DOCKER = [
    "docker", "run", "--gpus", "all", "--privileged", "--ipc=host", "--network", "host", "--restart", "unless-stopped",
    "-v", "/srv/hf:/root/.cache/huggingface", "-e", "HF_TOKEN", "-e", "NCCL_MNNVL_ENABLE=1", "-e", "NCCL_CUMEM_ENABLE=1",
    "-e", "NCCL_NVLS_ENABLE=1", "-e", "VLLM_ALLREDUCE_USE_FLASHINFER=1", "-e", "VLLM_ENGINE_READY_TIMEOUT_S=3600",
    "-e", "VLLM_USE_V2_MODEL_RUNNER=1", "-e", "VLLM_USE_RUST_FRONTEND=1", "-e", "GLOO_SOCKET_IFNAME=enP6p3s0f0np0",
    "-e", "NCCL_SOCKET_IFNAME=enP6p3s0f0np0",
    IMAGE,
    "moonshotai/Kimi-K3", "--trust-remote-code", "--gpu-memory-utilization", "0.95", "--tensor-parallel-size", "8",
    "--nnodes", "2", "--node-rank", "0", "--master-addr", "192.0.2.11",
    "--enable-auto-tool-choice", "--tool-call-parser", "kimi_k3", "--reasoning-parser", "kimi_k3",
    "--speculative-config", SPEC,
    "--load-format", "fastsafetensors", "--no-enable-flashinfer-autotune", "--max-model-len", "1048576",
    "--kv-cache-dtype", "fp8", "--attention-config", ATTN, "--enable-prefix-caching",
    "--host", "0.0.0.0", "--port", "8000", "--served-model-name", "kimi-k3", "--api-key", FAKE_KEY,
    "--middleware", "acme_gateway.auth.TenantMiddleware", "--max-num-seqs", "256",
    "--structured-outputs-config.backend", "xgrammar", "--enable-log-requests",
]
K3_ENV = {"HF_TOKEN": FAKE_HF, "APP_TENANT": "acme-prod", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4317",
          "CUDA_VISIBLE_DEVICES": "0,1,2,3"}

# The Hopper override of the same recipe, run bare (no container), with its env.
K3_H200 = [
    "/opt/vllm/bin/vllm", "serve", "moonshotai/Kimi-K3", "--trust-remote-code", "--gpu-memory-utilization", "0.97",
    "--max-num-seqs", "5", "--max-model-len", "32768", "--moe-backend", "marlin", "--disable-custom-all-reduce",
    "--no-enable-flashinfer-autotune", "--max-num-batched-tokens", "4096", "--attention-backend", "FLASHMLA",
    "-tp", "8", "-pp", "2", "--port=8000",
]
K3_H200_ENV = {"VLLM_ENGINE_READY_TIMEOUT_S": "3600", "VLLM_USE_V2_MODEL_RUNNER": "1", "VLLM_USE_RUST_FRONTEND": "1",
               "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}

KIMI_CONFIG = {"architectures": ["KimiK3ForCausalLM"], "auto_map": {"AutoConfig": "configuration_kimi.KimiK3Config"}}
PLAIN_CONFIG = {"architectures": ["LlamaForCausalLM"], "max_position_embeddings": 2048}


def _items(result, category):
    return [e["item"] for e in result["removed"].get(category, [])]


def test_kimi_k3_docker_minimal_command_keeps_only_model_address_and_layout():
    r = c.derive_minimal(K3_DOCKER, K3_ENV, model_config=KIMI_CONFIG)
    assert r["argv"] == [
        "docker", "run", "-e", "CUDA_VISIBLE_DEVICES", "-e", "HF_TOKEN", "--gpus", "all", "--privileged", "--ipc=host",
        "--network", "host", "-v", "/srv/hf:/root/.cache/huggingface", IMAGE, "moonshotai/Kimi-K3",
        "--trust-remote-code", "--tensor-parallel-size", "8", "--nnodes", "2", "--node-rank", "0",
        "--master-addr", "192.0.2.11", "--host", "0.0.0.0", "--port", "8000", "--served-model-name", "kimi-k3"]
    assert r["model"] == "moonshotai/Kimi-K3" and r["image"] == IMAGE
    assert r["env"] == {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    assert r["secret_env"] == {"HF_TOKEN": FAKE_HF}
    assert r["warnings"] == []


def test_kimi_k3_docker_removed_items_by_category_each_a_candidate_layer():
    r = c.derive_minimal(K3_DOCKER, K3_ENV, model_config=KIMI_CONFIG)
    assert _items(r, "tool_calling") == ["--enable-auto-tool-choice", "--tool-call-parser kimi_k3",
                                         "--reasoning-parser kimi_k3"]
    assert _items(r, "gateway") == ["--api-key <redacted>", "--middleware acme_gateway.auth.TenantMiddleware"]
    assert _items(r, "load_clients") == ["--max-num-seqs 256"]
    assert _items(r, "retries") == ["--restart unless-stopped", "VLLM_ENGINE_READY_TIMEOUT_S=3600"]
    assert _items(r, "long_context") == ["--max-model-len 1048576"]
    assert _items(r, "speculative_decoding") == ["--speculative-config " + SPEC]
    assert _items(r, "multi_node_transport") == [
        "GLOO_SOCKET_IFNAME=enP6p3s0f0np0", "NCCL_CUMEM_ENABLE=1", "NCCL_MNNVL_ENABLE=1", "NCCL_NVLS_ENABLE=1",
        "NCCL_SOCKET_IFNAME=enP6p3s0f0np0", "VLLM_ALLREDUCE_USE_FLASHINFER=1"]
    assert _items(r, "prefix_cache") == ["--enable-prefix-caching"]
    assert _items(r, "structured_output") == ["--structured-outputs-config.backend xgrammar"]
    assert _items(r, "app_env") == ["APP_TENANT=acme-prod"]
    assert _items(r, "observability") == ["--enable-log-requests", "OTEL_EXPORTER_OTLP_ENDPOINT=http://otel:4317"]
    assert _items(r, "engine_tuning") == [
        "--gpu-memory-utilization 0.95", "--load-format fastsafetensors", "--no-enable-flashinfer-autotune",
        "--kv-cache-dtype fp8", "--attention-config " + ATTN, "VLLM_USE_RUST_FRONTEND=1", "VLLM_USE_V2_MODEL_RUNNER=1"]
    assert "unknown" not in r["removed"]
    # each removed item names the ladder layer that adds it back, in ladder order
    assert list(r["layers"]) == ["prefix_caching", "long_context", "concurrency_n", "tool_calling", "multi_node",
                                 "gateway", "speculative_decoding", "engine_tuning", "observability", "app_env"]
    assert r["layers"]["tool_calling"] == ["--enable-auto-tool-choice", "--tool-call-parser kimi_k3",
                                           "--reasoning-parser kimi_k3", "--structured-outputs-config.backend xgrammar"]


def test_secrets_never_in_the_lists():
    r = c.derive_minimal(K3_DOCKER, K3_ENV, model_config=KIMI_CONFIG)
    lists = json.dumps({"kept": r["kept"], "removed": r["removed"], "layers": r["layers"], "argv": r["argv"]})
    assert FAKE_KEY not in lists and FAKE_HF not in lists
    assert r["removed"]["gateway"][0]["value"] == "<redacted>"


def test_trust_remote_code_only_when_the_model_asks_for_custom_code():
    plain = c.derive_minimal(K3_H200, K3_H200_ENV, model_config=PLAIN_CONFIG)
    assert "--trust-remote-code" not in plain["argv"]
    dropped = [e for e in plain["removed"]["minimal"] if e["item"] == "--trust-remote-code"]
    assert dropped and "no auto_map" in dropped[0]["why"]
    custom = c.derive_minimal(K3_H200, K3_H200_ENV, model_config=KIMI_CONFIG)
    assert "--trust-remote-code" in custom["argv"]
    unknown = c.derive_minimal(K3_H200, K3_H200_ENV, model_config=None)
    assert "--trust-remote-code" in unknown["argv"]
    assert any("without evidence" in w for w in unknown["warnings"])
    forced_off = c.derive_minimal(K3_H200, K3_H200_ENV, model_config=KIMI_CONFIG, trust_remote_code="false")
    assert "--trust-remote-code" not in forced_off["argv"]
    # a command without the flag gets it when the model needs it
    added = c.derive_minimal(["vllm", "serve", "/m", "--port", "1"], model_config=KIMI_CONFIG)
    assert added["argv"][-1] == "--trust-remote-code"


def test_kimi_k3_h200_bare_command_short_spellings_and_keep():
    r = c.derive_minimal(K3_H200, K3_H200_ENV, model_config=KIMI_CONFIG, keep=["--max-model-len"])
    assert r["argv"] == ["/opt/vllm/bin/vllm", "serve", "moonshotai/Kimi-K3", "--trust-remote-code",
                         "--max-model-len", "32768", "-tp", "8", "-pp", "2", "--port=8000"]
    kept = {e["item"]: e["why"] for e in r["kept"]}
    assert kept["--max-model-len 32768"] == "kept on request (keep)"
    assert _items(r, "multi_node_transport") == ["--disable-custom-all-reduce"]
    assert _items(r, "load_clients") == ["--max-num-seqs 5", "--max-num-batched-tokens 4096"]
    assert _items(r, "retries") == ["VLLM_ENGINE_READY_TIMEOUT_S=3600"]
    assert r["env"] == {} and r["secret_env"] == {}


@pytest.mark.parametrize("argv", [
    K3_DOCKER, K3_H200,
    ["vllm", "serve", "--model", "/m", "-O3", "--port", "1"],
    ["podman", "run", "--rm", "-p8000:8000", "img", "/m", "--compilation-config.mode", "3"],
    ["vllm", "serve", "/m", "--seed", "-1", "--enforce-eager"],
])
def test_parse_and_render_round_trip(argv):
    assert c.render_command(c.parse_command(argv)) == list(argv)


def test_canonical_spellings():
    assert c.canonical_flag("-tp") == "--tensor-parallel-size"
    assert c.canonical_flag("--port=8000") == "--port"
    assert c.canonical_flag("--compilation-config.mode") == "--compilation-config"
    assert c.canonical_flag("-O3") == "--compilation-config"
    assert c.canonical_flag("--max_model_len") == "--max-model-len"
    assert c.flag_category("--no-enable-prefix-caching") == "prefix_cache"
    assert c.flag_category("--speculative-draft-tensor-parallel-size") == "speculative_decoding"
    assert c.flag_category("--made-up-flag") == "unknown"
    assert c.env_category("NCCL_DEBUG") == "observability"
    assert c.env_category("NCCL_IB_HCA") == "multi_node_transport"
    assert c.env_category("HF_HOME") == "minimal"
    assert c.env_category("MYAPP_FEATURE") == "app_env"


def test_option_map_ignores_order_and_spelling():
    a = c.option_map(["vllm", "serve", "/m", "--port", "8000", "-tp", "2", "--enforce-eager"])
    b = c.option_map(["vllm", "serve", "/m", "--enforce-eager", "--tensor-parallel-size=2", "--port", "8000"])
    assert a == b == {"<program>": "vllm serve", "<model>": "/m", "--port": "8000", "--tensor-parallel-size": "2",
                      "--enforce-eager": True}


def test_apply_options_set_replace_twin_remove():
    base = ["vllm", "serve", "/m", "--port", "8011", "--max-model-len", "512", "--no-enable-prefix-caching"]
    assert c.apply_options(base, ["--max-model-len", "2048"]) == [
        "vllm", "serve", "/m", "--port", "8011", "--max-model-len", "2048", "--no-enable-prefix-caching"]
    assert c.apply_options(base, ["--enable-prefix-caching"]) == [
        "vllm", "serve", "/m", "--port", "8011", "--max-model-len", "512", "--enable-prefix-caching"]
    assert c.apply_options(base, ["--headless"], remove=["--port"]) == [
        "vllm", "serve", "/m", "--max-model-len", "512", "--no-enable-prefix-caching", "--headless"]


def test_refused_options_and_env():
    argv = ["vllm", "serve", "/m", "--port", "1", "--max-model-len", "512", "--enforce-eager",
            "--enable-prefix-caching", "--tool-call-parser", "hermes"]
    refused = c.refused_options(argv)
    assert [(r["flag"], r["layer"]) for r in refused] == [("--enable-prefix-caching", "prefix_caching"),
                                                          ("--tool-call-parser", "tool_calling")]
    assert c.refused_options(argv, platform_flags=["--enable-prefix-caching", "--tool-call-parser"]) == []
    env = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "NCCL_IB_HCA": "mlx5", "APP_X": "1"}
    assert [e["name"] for e in c.refused_env(env)] == ["APP_X", "NCCL_IB_HCA"]
    assert c.refused_env(env, allowed=["NCCL_*", "APP_X"]) == []


def test_build_minimal_multi_node_placement():
    argv = c.build_minimal(["vllm", "serve"], "/m", host="0.0.0.0", port=8000, tensor_parallel_size=8,
                           platform_args=["--enforce-eager"],
                           multi_node={"nnodes": 2, "node_rank": 1, "master_addr": "192.0.2.11", "headless": True})
    assert argv == ["vllm", "serve", "/m", "--host", "0.0.0.0", "--port", "8000", "--tensor-parallel-size", "8",
                    "--enforce-eager", "--nnodes", "2", "--node-rank", "1", "--master-addr", "192.0.2.11", "--headless"]


LADDER = [
    {"name": "prefix_caching", "args": ["--enable-prefix-caching"]},
    {"name": "long_context", "args": ["--max-model-len", "2048"], "request": {"prompt": "x " * 600}},
    {"name": "output_limit", "request": {"max_tokens": 256, "ignore_eos": True}},
    {"name": "concurrency_2", "concurrency": 2},
    {"name": "tool_calling", "args": ["--enable-auto-tool-choice", "--tool-call-parser", "pythonic"],
     "route": "/v1/chat/completions", "request": {"messages": [{"role": "user", "content": "hi"}]},
     "request_mode": "replace"},
]
BASE = {"argv": ["vllm", "serve", "/m", "--port", "8011", "--max-model-len", "512"], "env": {"A": "1"},
        "request": {"route": "/v1/completions", "concurrency": 1, "timeout": 60, "base_url": None,
                    "body": {"model": "tiny", "prompt": "Hello", "max_tokens": 8}}}


def test_apply_layers_accumulates_and_describes_the_last_layer():
    names = [layer["name"] for layer in LADDER]
    r = c.apply_layers(BASE, LADDER, names[:4])
    assert r["argv"] == ["vllm", "serve", "/m", "--port", "8011", "--max-model-len", "2048", "--enable-prefix-caching"]
    assert r["request"]["concurrency"] == 2
    assert r["request"]["body"] == {"model": "tiny", "prompt": "x " * 600, "max_tokens": 256, "ignore_eos": True}
    assert r["allowed"] == ["request:concurrency"] and r["changed"] == ["concurrency=2"]
    r2 = c.apply_layers(BASE, LADDER, names[:2])
    assert r2["allowed"] == ["command:--max-model-len", "command:--no-max-model-len", "request:prompt"]
    r5 = c.apply_layers(BASE, LADDER, names)
    assert r5["request"]["route"] == "/v1/chat/completions"
    assert r5["request"]["body"] == {"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}
    assert "request:*" in r5["allowed"]
    # base untouched
    assert BASE["request"]["body"]["max_tokens"] == 8


def test_apply_layers_overrides_and_unknown_layer():
    r = c.apply_layers(BASE, LADDER, ["long_context"], overrides={"long_context": {"args": ["--max-model-len", "4096"]}})
    assert r["argv"][-1] == "4096"
    with pytest.raises(c.CommandError, match="unknown ladder layer"):
        c.apply_layers(BASE, LADDER, ["no_such_layer"])


def test_a_layer_option_left_empty_is_not_set_and_a_move_to_more_hosts_may_change_the_placement():
    tool = {"name": "tool_calling", "args": ["--enable-auto-tool-choice", "--tool-call-parser", "hermes",
                                             "--chat-template", "", "--structured-outputs-config", ""]}
    r = c.apply_layers(BASE, [tool], ["tool_calling"])
    assert r["argv"] == BASE["argv"] + ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    assert r["changed"] == ["--enable-auto-tool-choice", "--tool-call-parser hermes"]
    assert not any("chat-template" in a or "structured" in a for a in r["allowed"])
    # an override that leaves its value empty drops the option as well
    gateway = {"name": "gateway", "args": ["--api-key", "k"]}
    dropped = c.apply_layers(BASE, [gateway], ["gateway"], overrides={"gateway": {"args": ["--api-key", ""]}})
    assert dropped["argv"] == BASE["argv"] and dropped["allowed"] == [] and dropped["changed"] == []
    # the multi-node move: the hosts and each node's placement (node_placement's options), then what the data allows
    multi = {"name": "multi_node", "requires_nodes": 2, "env": {"GLOO_SOCKET_IFNAME": "lo"}, "allow": ["request:x"]}
    assert c.apply_layers(BASE, [multi], ["multi_node"])["allowed"] == (
        ["env:GLOO_SOCKET_IFNAME", "hosts:inventory"] + ["command:%s" % f for f in c.PLACEMENT_FLAGS] + ["request:x"])
    assert tuple(c.node_placement(2, 1, "10.0.0.1", master_port=29500)[::2]) == c.PLACEMENT_FLAGS
    # a layer that stays on its hosts may not change them
    assert c.apply_layers(BASE, [{"name": "gateway", "env": {"GLOO_SOCKET_IFNAME": "lo"}}], ["gateway"])["allowed"] == [
        "env:GLOO_SOCKET_IFNAME"]


@pytest.mark.parametrize("argv, message", [
    ([], "empty"),
    ("vllm serve /m", "list of arguments"),
    (["python", "-m", "http.server"], "not a 'vllm serve' command"),
    (["vllm", "serve", "--port", "1"], "no model"),
    (["vllm", "serve", "/m", "/other"], "unexpected argument"),
    (["docker", "ps"], "without 'run'"),
])
def test_errors_name_what_is_wrong(argv, message):
    with pytest.raises(c.CommandError, match=message):
        c.parse_command(argv)


# --- the production command's own flags come back at their layer (issue 15 item 5) ---------------------------------

K3_LADDER = [
    {"name": "prefix_caching", "args": ["--enable-prefix-caching"]},
    {"name": "long_context", "args": ["--max-model-len", "65536"], "request": {"prompt": "x"}},
    {"name": "output_limit", "request": {"max_tokens": 256}},
    {"name": "concurrency_2", "concurrency": 2},
    {"name": "concurrency_n", "concurrency": 8},
    {"name": "tool_calling", "args": ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"],
     "route": "/v1/chat/completions", "request": {"messages": [{"role": "user", "content": "hi"}]},
     "request_mode": "replace"},
    {"name": "multi_node"},
    {"name": "gateway", "base_url": "http://gw:8080"},
]


def _k3_base():
    d = c.derive_minimal(K3_DOCKER, K3_ENV, model_config=KIMI_CONFIG)
    request = {"route": "/v1/completions", "concurrency": 1, "timeout": 60, "body": {"model": "kimi-k3"}}
    return d, {"argv": d["argv"], "env": d["env"], "request": request}


def test_production_layer_gives_each_layer_its_own_removed_items_as_written():
    d, _base = _k3_base()
    tc = c.production_layer(d, "tool_calling")
    # tool-call parser, reasoning parser and the structured-output backend, as the production command wrote them
    assert tc["args"] == ["--enable-auto-tool-choice", "--tool-call-parser", "kimi_k3", "--reasoning-parser", "kimi_k3",
                          "--structured-outputs-config.backend", "xgrammar"]
    assert tc["env"] == {} and tc["left_out"] == []
    mn = c.production_layer(d, "multi_node")
    assert mn["args"] == [] and mn["env"] == {
        "GLOO_SOCKET_IFNAME": "enP6p3s0f0np0", "NCCL_CUMEM_ENABLE": "1", "NCCL_MNNVL_ENABLE": "1",
        "NCCL_NVLS_ENABLE": "1", "NCCL_SOCKET_IFNAME": "enP6p3s0f0np0", "VLLM_ALLREDUCE_USE_FLASHINFER": "1"}
    gw = c.production_layer(d, "gateway")
    # the API key never comes back from the derivation, nor does docker's restart policy
    assert gw["args"] == ["--middleware", "acme_gateway.auth.TenantMiddleware"]
    assert gw["env"] == {"VLLM_ENGINE_READY_TIMEOUT_S": "3600"}
    assert [e["item"] for e in gw["left_out"]] == ["--api-key <redacted>", "--restart unless-stopped"]
    assert FAKE_KEY not in json.dumps(d["removed"])
    assert c.production_layer(d, "output_limit") == {"args": [], "env": {}, "items": [], "left_out": []}
    assert c.production_layer(None, "tool_calling")["args"] == []


def test_kimi_k3_flags_come_back_one_layer_at_a_time_in_the_guides_order():
    d, base = _k3_base()
    names = [layer["name"] for layer in K3_LADDER]
    seen = []
    for i, name in enumerate(names):
        r = c.apply_layers(base, K3_LADDER, names[:i + 1], production=d)
        seen.append((name, r["from_production"]))
        if name == "tool_calling":
            # the production parser instead of the layer's default, with the reasoning parser and the structured-output
            # backend; nothing of a later layer yet
            assert "--tool-call-parser" in r["argv"] and r["argv"][r["argv"].index("--tool-call-parser") + 1] == "kimi_k3"
            assert "hermes" not in r["argv"]
            assert r["argv"][-6:] == ["--tool-call-parser", "kimi_k3", "--reasoning-parser", "kimi_k3",
                                      "--structured-outputs-config.backend", "xgrammar"]
            assert "--middleware" not in r["argv"] and "NCCL_MNNVL_ENABLE" not in r["env"]
            assert {"command:--tool-call-parser", "command:--reasoning-parser",
                    "command:--structured-outputs-config"} <= set(r["allowed"])
            assert r["changed"][-1].startswith("from the production command: --enable-auto-tool-choice")
        if name == "multi_node":
            assert r["env"]["NCCL_MNNVL_ENABLE"] == "1" and "env:NCCL_MNNVL_ENABLE" in r["allowed"]
            assert "--middleware" not in r["argv"]
        if name == "gateway":
            assert r["argv"][-2:] == ["--middleware", "acme_gateway.auth.TenantMiddleware"]
            assert "--api-key" not in r["argv"] and "--restart" not in r["argv"]
    assert seen == [
        ("prefix_caching", ["--enable-prefix-caching"]),
        ("long_context", ["--max-model-len 1048576"]),  # the production context length, not the layer's default
        ("output_limit", []),
        ("concurrency_2", []),
        ("concurrency_n", ["--max-num-seqs 256"]),
        ("tool_calling", ["--enable-auto-tool-choice", "--tool-call-parser kimi_k3", "--reasoning-parser kimi_k3",
                          "--structured-outputs-config.backend xgrammar"]),
        ("multi_node", ["GLOO_SOCKET_IFNAME=enP6p3s0f0np0", "NCCL_CUMEM_ENABLE=1", "NCCL_MNNVL_ENABLE=1",
                        "NCCL_NVLS_ENABLE=1", "NCCL_SOCKET_IFNAME=enP6p3s0f0np0", "VLLM_ALLREDUCE_USE_FLASHINFER=1"]),
        ("gateway", ["--middleware acme_gateway.auth.TenantMiddleware", "VLLM_ENGINE_READY_TIMEOUT_S=3600"]),
    ]
    # each layer's run differs from the one before only in what that layer may change
    for i in range(1, len(names)):
        before = c.apply_layers(base, K3_LADDER, names[:i], production=d)
        after = c.apply_layers(base, K3_LADDER, names[:i + 1], production=d)
        changed_flags = {k for k, v in c.option_map(after["argv"]).items() if c.option_map(before["argv"]).get(k) != v}
        allowed = set(after["allowed"])
        assert {"command:%s" % f for f in changed_flags} <= allowed, (names[i], changed_flags, allowed)


def test_production_parser_replaces_an_unset_default_and_without_production_nothing_changes():
    d, base = _k3_base()
    unset = [dict(K3_LADDER[5], args=["--enable-auto-tool-choice", "--tool-call-parser", ""])]
    r = c.apply_layers(base, unset, ["tool_calling"], production=d)
    assert r["argv"].count("--tool-call-parser") == 1 and "" not in r["argv"]
    plain = c.apply_layers(base, K3_LADDER, ["tool_calling"])
    assert plain["argv"][-3:] == ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    assert plain["from_production"] == []


def test_a_layers_further_requests_join_the_run_and_are_part_of_its_one_variable():
    tools = dict(K3_LADDER[5], extra_requests=[
        {"label": "structured_output", "body": {"messages": [{"role": "user", "content": "json"}],
                                                "response_format": {"type": "json_schema"}}},
        {"label": "unset", "body": {}}])  # an unset request variable sends nothing
    r = c.apply_layers(BASE, [tools], ["tool_calling"])
    assert r["request"]["extra"] == [{"label": "structured_output", "body": {
        "model": "tiny", "messages": [{"role": "user", "content": "json"}], "response_format": {"type": "json_schema"}}}]
    assert "request:extra" in r["allowed"] and r["changed"][-1] == "further request(s) in the same run: structured_output"
    with pytest.raises(c.CommandError, match="label other than 'request'"):
        c.apply_layers(BASE, [dict(tools, extra_requests=[{"label": "request", "body": {"a": 1}}])], ["tool_calling"])


def test_node_placement_head_worker_and_one_node():
    assert c.node_placement(1, 0, "") == []
    assert c.node_placement(2, 0, "192.0.2.11") == ["--nnodes", "2", "--node-rank", "0", "--master-addr", "192.0.2.11"]
    assert c.node_placement(3, 2, "192.0.2.11", master_port="29600") == [
        "--nnodes", "3", "--node-rank", "2", "--master-addr", "192.0.2.11", "--master-port", "29600", "--headless"]
    with pytest.raises(c.CommandError, match="outside 0..1"):
        c.node_placement(2, 2, "192.0.2.11")
    with pytest.raises(c.CommandError, match="needs the head's address"):
        c.node_placement(2, 1, "")


def test_node_selection_nodes_head_address_and_rank():
    hosts = ["head", "w1", "w2"]
    addresses = {"head": "192.0.2.11"}
    # the first nnodes of the play, the head's ansible_host
    assert c.node_selection(hosts, nnodes=2, head_address=addresses.get, host="w1") == {
        "nodes": ["head", "w1"], "head": "head", "master_addr": "192.0.2.11", "rank": 1}
    # nodes named win over the play; the first address given wins over the head's; empty ones are skipped
    sel = c.node_selection(hosts, nnodes=1, nodes=["w2", "w1"], master_addr=["", None, "10.0.0.5", "10.0.0.6"],
                           head_address=addresses.get, host="head")
    assert sel == {"nodes": ["w2", "w1"], "head": "w2", "master_addr": "10.0.0.5", "rank": -1}
    # a head without an address is reached by its name; all hosts when nnodes is not given
    assert c.node_selection(hosts, head_address=addresses.get, master_addr="")["master_addr"] == "192.0.2.11"
    assert c.node_selection(["w1", "w2"], head_address=addresses.get, host="w2") == {
        "nodes": ["w1", "w2"], "head": "w1", "master_addr": "w1", "rank": 1}
    # fewer hosts than asked for: the caller says so (minimal_startup's plan); no nodes, no head
    assert c.node_selection(hosts, nnodes=5)["nodes"] == hosts
    assert c.node_selection(hosts, nnodes=0) == {"nodes": [], "head": None, "master_addr": None, "rank": -1}


def test_a_secret_option_is_masked_in_the_layers_change_text():
    r = c.apply_layers({"argv": ["vllm", "serve", "/m"], "env": {}, "request": {"body": {}}},
                       [{"name": "gateway", "args": ["--api-key", "fake-key-0000"], "base_url": "http://gw"}], ["gateway"])
    assert r["argv"][-2:] == ["--api-key", "fake-key-0000"]  # the server gets it
    assert "fake-key-0000" not in " ".join(r["changed"]) and "--api-key" in " ".join(r["changed"])
    assert "command:--api-key" in r["allowed"] and "request:base_url" in r["allowed"]


def test_build_minimal_like_the_cpu_runs():
    argv = c.build_minimal(["/opt/vllm/bin/vllm", "serve"], "/models/tiny", host="127.0.0.1", port=8011,
                           served_model_name="tiny", platform_args=["--max-model-len", 512, "--enforce-eager"])
    assert argv == ["/opt/vllm/bin/vllm", "serve", "/models/tiny", "--host", "127.0.0.1", "--port", "8011",
                    "--served-model-name", "tiny", "--max-model-len", "512", "--enforce-eager"]
    argv = c.build_minimal(["vllm", "serve"], "m", port=8000, tensor_parallel_size=8, trust_remote_code=True)
    assert argv == ["vllm", "serve", "m", "--port", "8000", "--tensor-parallel-size", "8", "--trust-remote-code"]
    with pytest.raises(c.CommandError, match="not a 'vllm serve' command"):
        c.build_minimal(["vllm"], "m")


def test_remote_code_setting():
    assert c.remote_code_setting({"auto_map": {"AutoConfig": "x.Config"}}) is True
    assert c.remote_code_setting({"architectures": ["LlamaForCausalLM"]}) is False
    assert c.remote_code_setting({}, "auto") is False
    assert c.remote_code_setting({}, "true") is True and c.remote_code_setting({"auto_map": {}}, False) is False
    with pytest.raises(c.CommandError, match="use auto, true or false"):
        c.remote_code_setting({}, "maybe")
