"""The one reader of ``vllm serve`` command lines in the collection.

Pure functions, standard library only: split a server command (bare ``vllm serve ...`` or ``docker|podman run
... IMAGE MODEL ARGS``) into its parts, say which category each option and environment variable belongs to,
derive the minimal command from a production command (listing by category what was removed, each category a
candidate ladder layer), apply a ladder layer's options to a command (set-or-replace), and check that a
command holds nothing but the minimal set plus allowed platform options.

Nothing else in the collection splits a vLLM argv: the roles go through the ``repro.vllm.minimal_command``
filter and ``record_diff`` compares commands through :func:`option_map`.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import fnmatch

from ansible_collections.repro.vllm.plugins.module_utils.common._redact import MASK, SECRET_FLAGS, is_secret_name, redact_text

# --------------------------------------------------------------------------------------------------------------
# categories
# --------------------------------------------------------------------------------------------------------------

# category -> (title, the ladder layer the removed items belong to; None: a candidate layer of its own)
CATEGORIES = {
    "minimal": ("model, address and parallel layout (kept)", None),
    "tool_calling": ("agent tool definitions and tool-call parsers", "tool_calling"),
    "gateway": ("gateway middleware (auth, TLS, CORS, routing)", "gateway"),
    "load_clients": ("load clients and production concurrency sizing", "concurrency_n"),
    "retries": ("automatic retries, restarts and stretched timeouts", "gateway"),
    "long_context": ("long-context defaults", "long_context"),
    "speculative_decoding": ("speculative decoding", "speculative_decoding"),
    "multi_node_transport": ("multi-node transport overrides", "multi_node"),
    "prefix_cache": ("prefix-cache retention policies", "prefix_caching"),
    "structured_output": ("structured-output settings", "tool_calling"),
    "app_env": ("application-specific environment variables", "app_env"),
    "engine_tuning": ("engine tuning (memory, precision, kernels, compilation)", "engine_tuning"),
    "observability": ("logging, tracing and debug settings", "observability"),
    "runtime": ("container runtime options that break a supervised foreground start", None),
    "unknown": ("options this collection does not know (review them)", "unknown_options"),
}

# The ladder layers in their fixed order (docs/architecture.md); other candidate layers come after, in this order.
# unknown_options: the production command's options this collection does not know, set again as written (only with
# repro_vllm_allow_unknown_options; refused before anything starts otherwise).
LADDER_ORDER = ["prefix_caching", "long_context", "output_limit", "concurrency_2", "concurrency_n", "tool_calling",
                "unknown_options", "multi_node", "gateway"]
EXTRA_LAYER_ORDER = ["speculative_decoding", "engine_tuning", "observability", "app_env"]

# Options that make up the minimal command: what the model is, where the API listens, how it is laid out.
MINIMAL_FLAGS = {
    "--model", "--host", "--port", "--served-model-name", "--tokenizer", "--revision", "--tokenizer-revision",
    "--download-dir", "--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size",
    "--data-parallel-size-local", "--data-parallel-start-rank", "--data-parallel-rank", "--data-parallel-address",
    "--data-parallel-rpc-port", "--enable-expert-parallel", "--nnodes", "--node-rank", "--master-addr",
    "--master-port", "--headless", "--distributed-executor-backend", "--trust-remote-code",
}

# Short spellings vLLM accepts, mapped to the long option.
ALIASES = {
    "-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-dp": "--data-parallel-size",
    "-dpl": "--data-parallel-size-local", "-dpa": "--data-parallel-address", "-dpp": "--data-parallel-rpc-port",
    "-dcp": "--decode-context-parallel-size", "-q": "--quantization", "-O": "--compilation-config",
}

_FLAG_CATEGORY = {
    # tool calling and output parsers
    "--enable-auto-tool-choice": "tool_calling", "--tool-call-parser": "tool_calling",
    "--tool-parser-plugin": "tool_calling", "--tool-server": "tool_calling", "--reasoning-parser": "tool_calling",
    "--reasoning-parser-plugin": "tool_calling", "--chat-template": "tool_calling",
    "--chat-template-content-format": "tool_calling", "--exclude-tools-when-tool-choice-none": "tool_calling",
    "--default-chat-template-kwargs": "tool_calling", "--trust-request-chat-template": "tool_calling",
    # structured output
    "--structured-outputs-config": "structured_output", "--guided-decoding-backend": "structured_output",
    "--guided-decoding-disable-fallback": "structured_output",
    "--guided-decoding-disable-any-whitespace": "structured_output",
    "--guided-decoding-disable-additional-properties": "structured_output",
    # gateway middleware
    "--api-key": "gateway", "--middleware": "gateway", "--root-path": "gateway", "--allowed-origins": "gateway",
    "--allowed-methods": "gateway", "--allowed-headers": "gateway", "--allow-credentials": "gateway",
    "--ssl-keyfile": "gateway", "--ssl-certfile": "gateway", "--ssl-ca-certs": "gateway", "--ssl-cert-reqs": "gateway",
    "--enable-ssl-refresh": "gateway", "--disable-fastapi-docs": "gateway", "--enable-request-id-headers": "gateway",
    "--uds": "gateway", "--response-role": "gateway", "--enable-force-include-usage": "gateway",
    "--h11-max-incomplete-event-size": "gateway", "--h11-max-header-count": "gateway",
    "--return-tokens-as-token-ids": "gateway", "--enable-prompt-tokens-details": "gateway",
    # load and concurrency sizing
    "--max-num-seqs": "load_clients", "--max-num-batched-tokens": "load_clients", "--api-server-count": "load_clients",
    "--scheduling-policy": "load_clients", "--enable-server-load-tracking": "load_clients",
    "--stream-interval": "load_clients",
    # long context
    "--max-model-len": "long_context", "--rope-scaling": "long_context", "--rope-theta": "long_context",
    "--decode-context-parallel-size": "long_context", "--dcp-comm-backend": "long_context",
    "--dcp-kv-cache-interleave-size": "long_context", "--context-parallel-size": "long_context",
    "--long-prefill-token-threshold": "long_context", "--enable-chunked-prefill": "long_context",
    "--no-enable-chunked-prefill": "long_context", "--max-num-partial-prefills": "long_context",
    "--max-long-partial-prefills": "long_context", "--max-seq-len-to-capture": "long_context",
    # speculative decoding
    "--speculative-config": "speculative_decoding", "--num-speculative-tokens": "speculative_decoding",
    "--speculative-model": "speculative_decoding",
    # multi-node transport
    "--all2all-backend": "multi_node_transport", "--kv-transfer-config": "multi_node_transport",
    "--data-parallel-backend": "multi_node_transport", "--disable-custom-all-reduce": "multi_node_transport",
    "--data-parallel-hybrid-lb": "multi_node_transport", "--data-parallel-external-lb": "multi_node_transport",
    "--kv-events-config": "multi_node_transport",
    # prefix cache
    "--enable-prefix-caching": "prefix_cache", "--no-enable-prefix-caching": "prefix_cache",
    "--prefix-caching-hash-algo": "prefix_cache", "--kv-offloading-size": "prefix_cache",
    "--kv-offloading-backend": "prefix_cache",
    # engine tuning
    "--gpu-memory-utilization": "engine_tuning", "--kv-cache-memory-bytes": "engine_tuning",
    "--kv-cache-dtype": "engine_tuning", "--dtype": "engine_tuning", "--quantization": "engine_tuning",
    "--load-format": "engine_tuning", "--enforce-eager": "engine_tuning", "--compilation-config": "engine_tuning",
    "--attention-backend": "engine_tuning", "--attention-config": "engine_tuning", "--moe-backend": "engine_tuning",
    "--enable-flashinfer-autotune": "engine_tuning", "--no-enable-flashinfer-autotune": "engine_tuning",
    "--block-size": "engine_tuning", "--swap-space": "engine_tuning", "--cpu-offload-gb": "engine_tuning",
    "--language-model-only": "engine_tuning", "--mm-encoder-tp-mode": "engine_tuning",
    "--limit-mm-per-prompt": "engine_tuning", "--tokenizer-mode": "engine_tuning", "--seed": "engine_tuning",
    "--generation-config": "engine_tuning", "--override-generation-config": "engine_tuning",
    "--disable-hybrid-kv-cache-manager": "engine_tuning", "--no-disable-hybrid-kv-cache-manager": "engine_tuning",
    "--cuda-graph-sizes": "engine_tuning", "--max-cudagraph-capture-size": "engine_tuning",
    "--async-scheduling": "engine_tuning", "--no-async-scheduling": "engine_tuning", "--enable-eplb": "engine_tuning",
    "--eplb-config": "engine_tuning", "--enable-dbo": "engine_tuning", "--num-gpu-blocks-override": "engine_tuning",
    "--calculate-kv-scales": "engine_tuning", "--disable-cascade-attn": "engine_tuning",
    "--hf-overrides": "engine_tuning", "--skip-tokenizer-init": "engine_tuning", "--enable-lora": "engine_tuning",
    "--enable-sleep-mode": "engine_tuning", "--max-logprobs": "engine_tuning",
    # observability
    "--disable-log-requests": "observability", "--enable-log-requests": "observability",
    "--disable-log-stats": "observability", "--uvicorn-log-level": "observability",
    "--disable-uvicorn-access-log": "observability", "--log-config-file": "observability",
    "--max-log-len": "observability", "--otlp-traces-endpoint": "observability",
    "--collect-detailed-traces": "observability", "--enable-log-outputs": "observability",
}

# Options that take no value (store_true and BooleanOptionalAction spellings).
BOOL_FLAGS = {
    "--trust-remote-code", "--headless", "--enable-expert-parallel", "--enable-auto-tool-choice",
    "--exclude-tools-when-tool-choice-none", "--trust-request-chat-template", "--allow-credentials",
    "--enable-ssl-refresh", "--disable-fastapi-docs", "--enable-request-id-headers", "--enable-force-include-usage",
    "--return-tokens-as-token-ids", "--enable-prompt-tokens-details", "--enable-server-load-tracking",
    "--enable-chunked-prefill", "--no-enable-chunked-prefill", "--disable-custom-all-reduce",
    "--data-parallel-hybrid-lb", "--data-parallel-external-lb", "--enable-prefix-caching",
    "--no-enable-prefix-caching", "--enforce-eager", "--enable-flashinfer-autotune", "--no-enable-flashinfer-autotune",
    "--language-model-only", "--disable-hybrid-kv-cache-manager", "--no-disable-hybrid-kv-cache-manager",
    "--async-scheduling", "--no-async-scheduling", "--enable-eplb", "--enable-dbo", "--calculate-kv-scales",
    "--disable-cascade-attn", "--skip-tokenizer-init", "--enable-lora", "--enable-sleep-mode",
    "--disable-log-requests", "--enable-log-requests", "--disable-log-stats", "--disable-uvicorn-access-log",
    "--enable-log-outputs", "--guided-decoding-disable-fallback", "--guided-decoding-disable-any-whitespace",
    "--guided-decoding-disable-additional-properties",
}

# Options allowed in the platform part of a minimal command (what a machine kind needs to start at all, such as
# an explicit KV size on CPU): engine tuning, plus a context length (the long_context layer raises it later).
PLATFORM_CATEGORIES = {"engine_tuning"}
PLATFORM_FLAGS = {"--max-model-len"}

# --- environment ----------------------------------------------------------------------------------------------
# (pattern, category), first match wins. "minimal" means kept: model access, device map, process basics.
_ENV_RULES = [
    ("VLLM_LOGGING_LEVEL", "observability"), ("VLLM_TRACE_FUNCTION", "observability"),
    ("CUDA_LAUNCH_BLOCKING", "observability"), ("NCCL_DEBUG", "observability"), ("NCCL_DEBUG_*", "observability"),
    ("TORCH_DISTRIBUTED_DEBUG", "observability"), ("VLLM_LOG_*", "observability"),
    ("VLLM_CONFIGURE_LOGGING", "observability"), ("VLLM_NO_USAGE_STATS", "observability"),
    ("DO_NOT_TRACK", "observability"), ("OTEL_*", "observability"),
    ("CUDA_VISIBLE_DEVICES", "minimal"), ("CUDA_DEVICE_ORDER", "minimal"), ("NVIDIA_VISIBLE_DEVICES", "minimal"),
    ("HF_*", "minimal"), ("HUGGING_FACE_HUB_TOKEN", "minimal"), ("TRANSFORMERS_OFFLINE", "minimal"),
    ("VLLM_HOST_IP", "minimal"), ("VLLM_PORT", "minimal"), ("PATH", "minimal"), ("HOME", "minimal"),
    ("LANG", "minimal"), ("LC_*", "minimal"), ("TMPDIR", "minimal"), ("LD_LIBRARY_PATH", "minimal"),
    ("PYTHONPATH", "minimal"), ("VLLM_CPU_KVCACHE_SPACE", "engine_tuning"),
    ("VLLM_API_KEY", "gateway"),
    ("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "long_context"),
    ("VLLM_ENGINE_READY_TIMEOUT_S", "retries"), ("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "retries"),
    ("VLLM_RPC_TIMEOUT", "retries"), ("VLLM_HTTP_TIMEOUT_KEEP_ALIVE", "retries"), ("*_RETRIES", "retries"),
    ("*_RETRY*", "retries"),
    ("NCCL_*", "multi_node_transport"), ("GLOO_*", "multi_node_transport"), ("UCX_*", "multi_node_transport"),
    ("NVSHMEM_*", "multi_node_transport"), ("VLLM_NIXL_*", "multi_node_transport"),
    ("TP_SOCKET_IFNAME", "multi_node_transport"), ("VLLM_USE_NCCL_SYMM_MEM", "multi_node_transport"),
    ("VLLM_ALLREDUCE_USE_*", "multi_node_transport"), ("VLLM_FLASHINFER_ALLREDUCE_*", "multi_node_transport"),
    ("VLLM_ALL2ALL_BACKEND", "multi_node_transport"), ("MASTER_ADDR", "multi_node_transport"),
    ("MASTER_PORT", "multi_node_transport"),
    ("VLLM_*", "engine_tuning"), ("PYTORCH_*", "engine_tuning"), ("TORCH_*", "engine_tuning"),
    ("CUDA_*", "engine_tuning"), ("OMP_*", "engine_tuning"), ("KMP_*", "engine_tuning"),
]

# docker/podman run options that take a value; everything else that starts with "-" is a switch.
_RUNTIME_VALUE_OPTS = {
    "-e", "--env", "--env-file", "-v", "--volume", "-p", "--publish", "--gpus", "--ipc", "--shm-size", "--name",
    "--network", "--net", "-w", "--workdir", "-u", "--user", "--entrypoint", "--device", "--runtime",
    "--restart", "--ulimit", "--cap-add", "--cap-drop", "--security-opt", "--mount", "--label", "-l", "--cpus",
    "--memory", "-m", "--hostname", "-h", "--pid", "--add-host", "--log-driver", "--log-opt", "--platform",
    "--pull", "--group-add", "--tmpfs", "--cgroupns", "--uts", "--dns", "--health-cmd", "--health-interval",
    "--health-retries", "--health-timeout", "--health-start-period", "--stop-signal", "--stop-timeout",
    "--annotation", "--hooks-dir", "--cidfile",
}
# runtime options removed from a minimal start: (option, category, why)
_RUNTIME_REMOVED = {
    "--restart": ("retries", "a restart policy hides the first failure behind the next start"),
    "-d": ("runtime", "a detached container cannot be supervised in the foreground"),
    "--detach": ("runtime", "a detached container cannot be supervised in the foreground"),
    "--health-cmd": ("retries", "health checks kill and restart the server"),
    "--health-interval": ("retries", "health checks kill and restart the server"),
    "--health-retries": ("retries", "health checks kill and restart the server"),
    "--health-timeout": ("retries", "health checks kill and restart the server"),
    "--health-start-period": ("retries", "health checks kill and restart the server"),
}


class CommandError(ValueError):
    """A command that cannot be read as a vLLM server command."""


def canonical_flag(token):
    """The long, value-free spelling of an option token: ``-tp`` -> ``--tensor-parallel-size``,
    ``--compilation-config.mode`` -> ``--compilation-config``, ``--port=8000`` -> ``--port``, ``-O3`` ->
    ``--compilation-config``, ``--max_model_len`` -> ``--max-model-len``."""
    flag = str(token).split("=", 1)[0]
    if flag in ALIASES:
        return ALIASES[flag]
    if flag.startswith("-O") and not flag.startswith("--"):
        return "--compilation-config"  # -O3, -O.mode
    if flag.startswith("--"):
        return flag.split(".", 1)[0].replace("_", "-")
    return flag


def _positive(flag):
    """``--no-enable-prefix-caching`` -> ``--enable-prefix-caching`` (the option a negation switches)."""
    return "--" + flag[5:] if flag.startswith("--no-") else flag


def _takes_value(flag):
    return flag not in BOOL_FLAGS


def _looks_like_value(token):
    if not token.startswith("-"):
        return True
    return len(token) > 1 and (token[1].isdigit() or token[1] == ".")  # -1, -.5


def flag_category(flag):
    """Category of one option (canonical or not)."""
    flag = canonical_flag(flag)
    if flag in MINIMAL_FLAGS:
        return "minimal"
    if flag in _FLAG_CATEGORY:
        return _FLAG_CATEGORY[flag]
    if flag.startswith("--structured-outputs") or flag.startswith("--guided-decoding"):
        return "structured_output"
    if flag.startswith("--speculative"):
        return "speculative_decoding"
    if flag.startswith("--ssl-"):
        return "gateway"
    if flag.startswith("--no-") and ("--" + flag[5:]) in _FLAG_CATEGORY:
        return _FLAG_CATEGORY["--" + flag[5:]]
    return "unknown"


def env_category(name):
    """Category of one environment variable name."""
    for pattern, category in _ENV_RULES:
        if fnmatch.fnmatchcase(name, pattern):
            return category
    return "app_env"


def category_layer(category):
    """The ladder layer a removed item of this category goes back in with (None: not a ladder layer)."""
    return CATEGORIES.get(category, (None, None))[1]


# --------------------------------------------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------------------------------------------

def _parse_runtime(argv):
    """docker|podman run OPTIONS IMAGE [ARGS]: returns (runtime prefix tokens, runtime options, env, image, rest)."""
    runtime = argv[0].rsplit("/", 1)[-1]
    i = 1
    prefix = [argv[0]]
    while i < len(argv) and argv[i] in ("container",):
        prefix.append(argv[i])
        i += 1
    if i >= len(argv) or argv[i] != "run":
        raise CommandError("%s command without 'run': %s" % (runtime, " ".join(argv[:4])))
    prefix.append("run")
    i += 1
    opts = []
    env = {}
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        tok = argv[i]
        name = tok.split("=", 1)[0]
        if "=" in tok and name.startswith("--"):
            value, used = tok.split("=", 1)[1], 1
        elif name in _RUNTIME_VALUE_OPTS:
            if i + 1 >= len(argv):
                raise CommandError("%s option %s has no value" % (runtime, tok))
            value, used = argv[i + 1], 2
        elif len(name) > 2 and not name.startswith("--") and name[:2] in _RUNTIME_VALUE_OPTS:
            value, used, name = name[2:], 1, name[:2]  # -eFOO=1, -p8000:8000
        else:
            value, used = None, 1
        if name in ("-e", "--env") and value is not None:
            k, _sep, v = value.partition("=")
            env[k] = v if _sep else None  # -e NAME: the value comes from the client's environment
        opts.append({"flag": name, "value": value, "tokens": argv[i:i + used]})
        i += used
    if i < len(argv) and argv[i] == "--":
        i += 1
    if i >= len(argv):
        raise CommandError("%s run command without an image" % runtime)
    return prefix, opts, env, argv[i], argv[i + 1:]


def parse_command(argv):
    """Split a vLLM server command.

    Returns a dict: ``runtime`` (None, ``docker`` or ``podman``), ``runtime_prefix`` and ``runtime_options``
    (list of ``{flag, value, tokens}``), ``runtime_env`` (``-e K=V``), ``image``, ``program`` (the tokens up to
    the model: ``[vllm, serve]``, or empty for an image whose entrypoint is ``vllm serve``), ``model``,
    ``model_flag`` (True when given as ``--model``), ``runtime_env_names`` (extra ``-e NAME`` to render first) and
    ``options`` (list of ``{flag, value, tokens, category}``
    in command order; ``flag`` is canonical).
    """
    if isinstance(argv, str):
        raise CommandError("give the command as a list of arguments, not one string")
    argv = [str(a) for a in argv or []]
    if not argv:
        raise CommandError("the command is empty")
    out = {"runtime": None, "runtime_prefix": [], "runtime_options": [], "runtime_env": {}, "runtime_env_names": [],
           "image": None,
           "program": [], "model": None, "model_flag": False, "options": []}
    rest = argv
    base = argv[0].rsplit("/", 1)[-1]
    if base in ("docker", "podman", "nerdctl"):
        out["runtime"] = base
        out["runtime_prefix"], out["runtime_options"], out["runtime_env"], out["image"], rest = _parse_runtime(argv)
    # program: everything up to and including "serve"; the vllm image's entrypoint is already "vllm serve"
    if "serve" in rest[:4]:
        k = rest.index("serve")
        out["program"] = rest[:k + 1]
        rest = rest[k + 1:]
    elif out["runtime"] is None:
        raise CommandError("not a 'vllm serve' command (no 'serve' among %s)" % " ".join(argv[:4]))
    if rest and not rest[0].startswith("-"):
        out["model"] = rest[0]
        rest = rest[1:]
    i = 0
    while i < len(rest):
        tok = rest[i]
        if not tok.startswith("-") or tok == "-":
            raise CommandError("unexpected argument %r after the options (only one model may be given)" % tok)
        flag = canonical_flag(tok)
        if "=" in tok and tok.startswith("--"):
            value, used = tok.split("=", 1)[1], 1
        elif tok.startswith("-O") and len(tok) > 2 and not tok.startswith("-O.") and tok[2:].isdigit():
            value, used = tok[2:], 1  # -O3
        elif _takes_value(flag) and i + 1 < len(rest) and _looks_like_value(rest[i + 1]):
            value, used = rest[i + 1], 2
        else:
            value, used = None, 1
        if flag == "--model" and out["model"] is None:
            out["model"] = value
            out["model_flag"] = True
        else:
            out["options"].append({"flag": flag, "value": value, "tokens": rest[i:i + used],
                                   "category": flag_category(flag)})
        i += used
    if out["model"] is None:
        raise CommandError("no model in the command (give it after 'serve' or with --model)")
    return out


def render_command(parsed):
    """Join a parsed command back into an argv."""
    argv = []
    if parsed.get("runtime"):
        argv.extend(parsed["runtime_prefix"])
        for k in parsed.get("runtime_env_names") or []:
            argv.extend(["-e", k])
        for opt in parsed["runtime_options"]:
            argv.extend(opt["tokens"])
        argv.append(parsed["image"])
    argv.extend(parsed.get("program") or [])
    if parsed.get("model_flag"):
        argv.extend(["--model", parsed["model"]])
    else:
        argv.append(parsed["model"])
    for opt in parsed["options"]:
        argv.extend(opt["tokens"])
    return argv


def option_map(argv):
    """``{canonical flag: value}`` of a command, plus ``<program>``, ``<model>``, ``<image>`` and one entry per
    runtime option; the order of options does not matter, a repeated option keeps its values as a list."""
    parsed = parse_command(argv)
    out = {"<program>": " ".join(parsed["program"]), "<model>": parsed["model"]}
    if parsed["runtime"]:
        out["<image>"] = parsed["image"]
        out["<runtime>"] = parsed["runtime"]
        for opt in parsed["runtime_options"]:
            _put(out, "<%s>%s" % (parsed["runtime"], opt["flag"]), opt["value"])
    for opt in parsed["options"]:
        _put(out, opt["flag"], opt["value"] if opt["value"] is not None else True)
    return out


def _put(mapping, key, value):
    if key in mapping:
        prev = mapping[key]
        mapping[key] = (prev if isinstance(prev, list) else [prev]) + [value]
    else:
        mapping[key] = value


def _item_text(opt):
    """An option as text; the value of a secret option (--api-key) is masked: this text goes into records."""
    tokens = [str(t) for t in opt["tokens"]]
    if len(tokens) > 1 and opt["flag"] in SECRET_FLAGS:
        return " ".join([tokens[0], MASK])
    if "=" in tokens[0] and tokens[0].split("=", 1)[0] in SECRET_FLAGS:
        return "%s=%s" % (tokens[0].split("=", 1)[0], MASK)
    return " ".join(tokens)


# --------------------------------------------------------------------------------------------------------------
# minimal command
# --------------------------------------------------------------------------------------------------------------

def needs_remote_code(model_config):
    """True when a model's config.json asks for custom code (``auto_map``), False when it does not, None when the
    config is not known."""
    if not isinstance(model_config, dict) or not model_config:
        return None
    return bool(model_config.get("auto_map"))


def remote_code_setting(model_config, setting="auto"):
    """Whether the start passes ``--trust-remote-code``: ``setting`` true/false forces it; ``auto`` asks
    :func:`needs_remote_code` (an unknown config: no). Raises CommandError for any other setting."""
    value = str(setting).strip().lower()
    if value in ("true", "yes", "1", "on"):
        return True
    if value in ("false", "no", "0", "off"):
        return False
    if value != "auto":
        raise CommandError("the trust_remote_code setting is %r; use auto, true or false" % (setting,))
    return bool(needs_remote_code(model_config if isinstance(model_config, dict) else None))


def derive_minimal(argv, env=None, keep=(), keep_env=(), model_config=None, trust_remote_code="auto", port=None):
    """Derive the minimal command from a production command.

    Kept: program, model, ``--host``/``--port``/``--served-model-name``, the parallel layout (tensor, pipeline,
    data, expert parallel, ``--nnodes``/``--node-rank``/``--master-addr``/``--headless``), model location options,
    ``--trust-remote-code`` only when required, container placement options; and whatever ``keep`` (options) and
    ``keep_env`` (variable names or shell patterns) name explicitly. Environment kept: device map, model access
    (``HF_*``), process basics.

    ``trust_remote_code``: ``auto`` keeps the flag when ``model_config`` has ``auto_map``, drops it when the config
    is known and has none, and keeps it (with a warning) when the config is unknown; ``true``/``false`` force it.

    ``port`` (``repro_vllm_port``): when given, the minimal command serves on it whatever the production command's
    ``--port`` says (or vLLM's default 8000 when it says nothing), and ``overridden`` names the replaced option; the
    reproduction must never take the production server's port. A container command that publishes the production
    port (``-p``) is refused instead: its mapping would no longer reach the server.

    Returns ``{argv, model, image, env, secret_env, kept, removed, layers, warnings, overridden}`` (``env`` the kept variables
    that are not secret, ``secret_env`` those that are, values kept so that the command can run); ``kept`` and
    ``removed`` list items
    (``{item, flag|name, value, category, layer, why}``; a removed vLLM option also has ``tokens``, the option as
    written, None for a secret; a removed container option has ``runtime: true``); ``removed`` is grouped by
    category; ``layers`` maps each candidate ladder layer to the items it would add back (:func:`production_layer`
    turns them into the layer's options and environment).
    """
    parsed = parse_command(argv)
    keep = {canonical_flag(k) for k in (keep or ())}
    env = dict(env or {})
    for k, v in parsed["runtime_env"].items():
        if v is not None or k not in env:
            env[k] = v
    kept, removed, warnings = [], [], []

    def note_removed(item, category, why, **extra):
        entry = {"item": item, "category": category, "layer": category_layer(category), "why": why}
        entry.update(extra)
        removed.append(entry)

    # runtime options
    new_runtime = []
    for opt in parsed["runtime_options"]:
        if opt["flag"] in _RUNTIME_REMOVED and opt["flag"] not in keep:
            category, why = _RUNTIME_REMOVED[opt["flag"]]
            note_removed(_item_text(opt), category, why, flag=opt["flag"], value=opt["value"], runtime=True)
        else:
            new_runtime.append(opt)
    parsed["runtime_options"] = new_runtime

    need_trc = needs_remote_code(model_config)
    new_opts = []
    for opt in parsed["options"]:
        flag, cat = opt["flag"], opt["category"]
        if flag == "--trust-remote-code":
            mode = str(trust_remote_code).lower()
            if mode in ("true", "yes", "1", "on") or flag in keep:
                kept.append({"item": flag, "flag": flag, "category": cat, "why": "asked for"})
                new_opts.append(opt)
            elif mode in ("false", "no", "0", "off"):
                note_removed(flag, "minimal", "turned off (trust_remote_code=false)", flag=flag, value=None)
            elif need_trc is False:
                note_removed(flag, "minimal", "the model's config.json has no auto_map: no custom code to trust",
                             flag=flag, value=None)
            else:
                why = ("the model's config.json has auto_map (custom code)" if need_trc else
                       "the model's config.json could not be read; kept to be safe")
                if need_trc is None:
                    warnings.append("--trust-remote-code kept without evidence: the model config was not read")
                kept.append({"item": flag, "flag": flag, "category": cat, "why": why})
                new_opts.append(opt)
            continue
        if flag in keep:
            kept.append({"item": _item_text(opt), "flag": flag, "value": opt["value"], "category": cat,
                         "why": "kept on request (keep)"})
            new_opts.append(opt)
        elif cat == "minimal":
            kept.append({"item": _item_text(opt), "flag": flag, "value": opt["value"], "category": cat,
                         "why": "part of the minimal command"})
            new_opts.append(opt)
        else:
            why = CATEGORIES.get(cat, ("",))[0]
            note_removed(_item_text(opt), cat, why, flag=flag, value=opt["value"], tokens=list(opt["tokens"]))
    if need_trc and not any(o["flag"] == "--trust-remote-code" for o in new_opts) and \
            str(trust_remote_code).lower() not in ("false", "no", "0", "off"):
        new_opts.append({"flag": "--trust-remote-code", "value": None, "tokens": ["--trust-remote-code"],
                         "category": "minimal"})
        kept.append({"item": "--trust-remote-code", "flag": "--trust-remote-code", "category": "minimal",
                     "why": "added: the model's config.json has auto_map (custom code)"})
    overridden = _set_port(parsed, new_opts, kept, port)
    parsed["options"] = new_opts

    new_env = {}
    for name in sorted(env):
        cat = env_category(name)
        if cat == "minimal" or any(fnmatch.fnmatchcase(name, pat) for pat in keep_env or ()):
            if env[name] is not None:
                new_env[name] = env[name]
            kept.append({"item": name, "name": name, "category": cat,
                         "why": "part of the minimal environment" if cat == "minimal" else "kept on request (keep_env)"})
        else:
            note_removed(name if env[name] is None else "%s=%s" % (name, env[name]), cat,
                         CATEGORIES.get(cat, ("",))[0], name=name, value=env[name])

    for entry in kept + removed:  # secrets never leave in the lists (the returned env keeps its values to run)
        entry["item"] = redact_text(entry["item"])
        secret = entry.get("flag") in SECRET_FLAGS or ("name" in entry and is_secret_name(entry["name"]))
        if secret and entry.get("value") is not None:
            entry["value"] = MASK
        if "tokens" in entry:  # the option as written, for its ladder layer to set again (never a secret's)
            shown = [redact_text(t) for t in entry["tokens"]]
            entry["tokens"] = None if secret or shown != entry["tokens"] else shown
        if secret and "name" in entry and "=" in entry["item"]:
            entry["item"] = "%s=%s" % (entry["name"], MASK)
    kept_names = [e["name"] for e in kept if "name" in e]
    if parsed["runtime"]:
        # a container sees only what -e passes: name the kept variables, their values come from the client's env
        parsed["runtime_options"] = [o for o in parsed["runtime_options"] if o["flag"] not in ("-e", "--env")]
        parsed["runtime_env_names"] = kept_names
    grouped = {}
    layers = {}
    for entry in removed:
        grouped.setdefault(entry["category"], []).append(entry)
        if entry["layer"]:
            layers.setdefault(entry["layer"], []).append(entry["item"])
    order = LADDER_ORDER + EXTRA_LAYER_ORDER
    layers = dict(sorted(layers.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
    if grouped.get("unknown"):
        warnings.append("options this collection does not know were removed; review them: %s"
                        % ", ".join(e["item"] for e in grouped["unknown"]))
    secret_env = {k: v for k, v in new_env.items() if is_secret_name(k) or redact_text(str(v)) != str(v)}
    plain_env = {k: v for k, v in new_env.items() if k not in secret_env}
    return {"argv": render_command(parsed), "model": parsed["model"], "image": parsed["image"],
            "env": plain_env, "secret_env": secret_env, "kept": kept, "removed": grouped, "layers": layers,
            "warnings": warnings, "overridden": overridden}


VLLM_DEFAULT_PORT = 8000


def _published_ports(parsed):
    """Container-side ports of a runtime command's ``-p``/``--publish`` options (``8000``, ``0.0.0.0:8000:8000/tcp``)."""
    out = []
    for opt in parsed["runtime_options"]:
        if opt["flag"] in ("-p", "--publish") and opt["value"]:
            inner = str(opt["value"]).split("/", 1)[0].rsplit(":", 1)[-1]
            if inner.isdigit():
                out.append(int(inner))
    return out


def _set_port(parsed, opts, kept, port):
    """Make ``opts`` serve on ``port`` (repro_vllm_port wins over the production ``--port``); returns the
    ``overridden`` list (``{item, now, why}``), empty when the production command already said that port."""
    if port in (None, ""):
        return []
    try:
        port = int(port)
    except (TypeError, ValueError):
        raise CommandError("repro_vllm_port must be a port number, got %r" % (port,))
    given = [o for o in opts if o["flag"] == "--port"]
    prod = given[0]["value"] if given else None
    prod_port = int(prod) if prod is not None and str(prod).isdigit() else (None if given else VLLM_DEFAULT_PORT)
    if given and prod_port == port and len(given) == 1:
        return []
    if parsed["runtime"] and prod_port in _published_ports(parsed):
        raise CommandError("the container publishes the production port %s (-p/--publish of the production command) "
                           "but repro_vllm_port is %d: change the -p option of repro_vllm_production_argv to %d (the "
                           "reproduction never serves on the production server's port)" % (prod_port, port, port))
    new = {"flag": "--port", "value": str(port), "tokens": ["--port", str(port)], "category": "minimal"}
    at = opts.index(given[0]) if given else len(opts)
    opts[:] = [o for o in opts[:at] if o["flag"] != "--port"] + [new] + [o for o in opts[at:] if o["flag"] != "--port"]
    kept[:] = [k for k in kept if k.get("flag") != "--port"]
    was = " ".join(str(t) for t in given[0]["tokens"]) if given else "no --port (vLLM's default %d)" % VLLM_DEFAULT_PORT
    why = ("repro_vllm_port wins over the production command's port: the reproduction never serves on the "
           "production server's port")
    kept.append({"item": "--port %d" % port, "flag": "--port", "value": str(port), "category": "minimal",
                 "why": "repro_vllm_port (the production command had %s)" % was})
    return [{"item": was, "now": "--port %d" % port, "why": why}]


def unknown_options(derived):
    """The removed options this collection does not know, as written (``--frobnicate-level 3``)."""
    return [e["item"] for e in ((derived or {}).get("removed") or {}).get("unknown") or []]


def unknown_refusal(derived, allow=False):
    """The refusal of a production command with options this collection does not know, or None (none, or
    ``allow``). Such an option is not judged anywhere: left out it could hide the very failure, so it is tried only
    when the user says so (as the ladder layer ``unknown_options``)."""
    unknown = unknown_options(derived)
    if not unknown or allow:
        return None
    return ("the production command holds option(s) this collection does not know: %s. Nothing was started. Check "
            "them against 'vllm serve --help' of the serving vLLM; then remove them from repro_vllm_production_argv, "
            "or set repro_vllm_allow_unknown_options: true to try them as the ladder layer unknown_options (after "
            "tool_calling; repro_vllm_ladder_until must reach it)" % ", ".join(unknown))


def derivation_lines(derived, argv=None, allow_unknown=False):
    """Console lines of a derivation (without the ``reproduce | host |`` prefix): the minimal command (``argv``, the
    command as it starts, else the derived one), what was removed by category with the layer it comes back in, the
    port that replaced the production one, the options this collection does not know and what happens to them, and
    the warnings. Secrets are already masked in the derivation's items; ``argv`` is redacted here."""
    derived = derived or {}
    shown = [redact_text(str(a)) for a in (argv if argv is not None else derived.get("argv") or [])]
    lines = ["minimal | derived from the production command: %s" % " ".join(shown)]
    for category, entries in (derived.get("removed") or {}).items():
        if category == "minimal":  # --trust-remote-code the model does not need (or turned off): its own reason
            lines.extend("minimal | removed %s: %s" % (e["item"], e["why"]) for e in entries)
            continue
        layer = category_layer(category)
        where = ("back in the ladder layer %s" % layer) if layer else "never set again"
        lines.append("minimal | removed %s (%s; %s): %s" % (
            category, CATEGORIES.get(category, (category,))[0], where, ", ".join(e["item"] for e in entries)))
    for entry in derived.get("overridden") or []:
        lines.append("minimal | %s of the production command replaced by %s: %s" % (
            entry["item"], entry["now"], entry["why"]))
    unknown = unknown_options(derived)
    if unknown:
        lines.append("minimal | options this collection does not know were removed: %s (%s)" % (
            ", ".join(unknown), "repro_vllm_allow_unknown_options: true - tried as the ladder layer unknown_options"
            if allow_unknown else "refused: repro_vllm_allow_unknown_options is false"))
    for warning in derived.get("warnings") or []:
        if not warning.startswith("options this collection does not know"):
            lines.append("minimal | warning: %s" % warning)
    return lines


# --------------------------------------------------------------------------------------------------------------
# building and checking commands
# --------------------------------------------------------------------------------------------------------------

def split_options(args):
    """Read a flat option list (``[--max-model-len, "2048", --enable-prefix-caching]``) into options."""
    parsed = parse_command(["vllm", "serve", "<model>"] + [str(a) for a in args or []])
    return parsed["options"]


def apply_options(argv, args=(), remove=()):
    """Set-or-replace options in a command: the options in ``args`` replace every occurrence of the same option
    (and of its ``--no-`` twin) where the first one stood, or are appended; options named in ``remove`` (and their
    ``--no-`` twins) are dropped."""
    parsed = parse_command(argv)
    drop = {_positive(canonical_flag(r)) for r in remove or ()}
    new = split_options(args)
    replaced = {_positive(o["flag"]) for o in new}
    out = []
    placed = set()
    for opt in parsed["options"]:
        key = _positive(opt["flag"])
        if key in drop:
            continue
        if key in replaced:
            if key not in placed:
                out.extend(o for o in new if _positive(o["flag"]) == key)
                placed.add(key)
            continue
        out.append(opt)
    out.extend(o for o in new if _positive(o["flag"]) not in placed)
    parsed["options"] = out
    return render_command(parsed)


def build_minimal(program, model, host=None, port=None, served_model_name=None, tensor_parallel_size=1,
                  pipeline_parallel_size=1, data_parallel_size=1, trust_remote_code=False, platform_args=(),
                  multi_node=None):
    """The minimal command from its parts: ``program`` (e.g. ``[/path/vllm, serve]``), the model, address, parallel
    sizes (left out when 1), ``--trust-remote-code`` when asked, then ``platform_args`` (checked with
    :func:`refused_options`), then the multi-node placement (``{nnodes, node_rank, master_addr, master_port,
    headless}``) when given."""
    argv = [str(p) for p in program] + [str(model)]
    if host:
        argv += ["--host", str(host)]
    if port:
        argv += ["--port", str(port)]
    if served_model_name:
        argv += ["--served-model-name", str(served_model_name)]
    for flag, size in (("--tensor-parallel-size", tensor_parallel_size),
                       ("--pipeline-parallel-size", pipeline_parallel_size),
                       ("--data-parallel-size", data_parallel_size)):
        if size is not None and int(size) != 1:
            argv += [flag, str(int(size))]
    if trust_remote_code:
        argv.append("--trust-remote-code")
    argv += [str(a) for a in platform_args or ()]
    if multi_node:
        argv += node_placement(multi_node["nnodes"], multi_node["node_rank"], multi_node["master_addr"],
                               master_port=multi_node.get("master_port"), headless=multi_node.get("headless"))
    parse_command(argv)  # must read back
    return argv


# the options node_placement gives a node of a multi-node start
PLACEMENT_FLAGS = ("--nnodes", "--node-rank", "--master-addr", "--master-port", "--headless")


def node_placement(nnodes, node_rank, master_addr, master_port=None, headless=None):
    """vLLM's own multi-node launcher options of one node: ``--nnodes``, ``--node-rank``, ``--master-addr``,
    ``--master-port`` when given, ``--headless`` on a worker (rank above 0, unless ``headless`` says otherwise).
    One node (``nnodes`` 1) needs none: ``[]``."""
    nnodes, node_rank = int(nnodes), int(node_rank)
    if nnodes <= 1:
        return []
    if not 0 <= node_rank < nnodes:
        raise CommandError("node rank %d is outside 0..%d for %d nodes" % (node_rank, nnodes - 1, nnodes))
    if not master_addr:
        raise CommandError("a start over %d nodes needs the head's address (--master-addr)" % nnodes)
    out = ["--nnodes", str(nnodes), "--node-rank", str(node_rank), "--master-addr", str(master_addr)]
    if master_port not in (None, ""):
        out += ["--master-port", str(int(master_port))]
    if headless if headless is not None else node_rank > 0:
        out.append("--headless")
    return out


def node_selection(play_hosts, nnodes=None, nodes=None, master_addr=(), head_address=None, host=None):
    """The one node and master-address selection of a multi-node start (the minimal start, every attempt's
    placement, the collective checkpoint). ``nodes``: the nodes named (a step's, ``repro_vllm_collective_nodes``),
    used as given when not empty; else the first ``nnodes`` of ``play_hosts`` (all when None; fewer when the play has
    fewer: the caller says so). The head is the first node. ``master_addr``: the addresses given, most specific first (one
    string or a list; empty ones skipped), else ``head_address`` (``head_address(head)`` when callable: the head's
    ``ansible_host``), else the head's name. ``host``: the node whose ``rank`` is returned (-1 when not a node).
    Returns ``{nodes, head, master_addr, rank}``."""
    hosts = [str(h) for h in play_hosts or []]
    chosen = [str(n) for n in nodes or []] or (hosts if nnodes is None else hosts[:max(int(nnodes), 0)])
    head = chosen[0] if chosen else None
    given = [master_addr] if isinstance(master_addr, str) else list(master_addr or [])
    addr = next((str(a) for a in given if a not in (None, "")), None)
    if addr is None and head is not None:
        found = head_address(head) if callable(head_address) else head_address
        addr = str(found) if found not in (None, "") else head
    rank = chosen.index(str(host)) if host is not None and str(host) in chosen else -1
    return {"nodes": chosen, "head": head, "master_addr": addr, "rank": rank}


def refused_options(argv, platform_flags=()):
    """Options of ``argv`` that a minimal command may not hold: anything outside the minimal set, the platform
    categories (engine tuning, ``--max-model-len``) and ``platform_flags``. Returns a list of
    ``{item, flag, category, layer}``."""
    allowed = {canonical_flag(f) for f in platform_flags or ()}
    out = []
    for opt in parse_command(argv)["options"]:
        cat = opt["category"]
        if cat == "minimal" or cat in PLATFORM_CATEGORIES or opt["flag"] in PLATFORM_FLAGS or opt["flag"] in allowed:
            continue
        out.append({"item": _item_text(opt), "flag": opt["flag"], "category": cat, "layer": category_layer(cat)})
    return out


def refused_env(env, allowed=()):
    """Environment variables a minimal start may not set (ladder-layer categories), as
    ``{name, category, layer}``; ``allowed`` names or patterns are let through."""
    out = []
    for name in sorted(env or {}):
        if any(fnmatch.fnmatchcase(name, pat) for pat in allowed or ()):
            continue
        cat = env_category(name)
        if cat in ("minimal", "engine_tuning", "observability"):
            continue
        out.append({"name": name, "category": cat, "layer": category_layer(cat)})
    return out


# --------------------------------------------------------------------------------------------------------------
# ladder layers
# --------------------------------------------------------------------------------------------------------------

def _extra_requests(layer):
    """A layer's further requests (``extra_requests``: ``{label, body[, route]}`` each; one without a body is left
    out, so that an unset request variable sends nothing)."""
    out = []
    for i, req in enumerate(layer.get("extra_requests") or []):
        if not isinstance(req, dict) or not req.get("body"):
            continue
        if not req.get("label") or req.get("label") == "request":
            raise CommandError("layer %s: further request #%d needs a label other than 'request'"
                               % (layer.get("name"), i + 1))
        out.append(dict(req))
    return out


def _layer_allowed(layer):
    allowed, changed = [], []
    for opt in split_options(layer.get("args") or []):
        pos = _positive(opt["flag"])
        allowed += ["command:%s" % pos, "command:--no-%s" % pos[2:]]
        changed.append(_item_text(opt))
    for flag in layer.get("remove") or []:
        pos = _positive(canonical_flag(flag))
        allowed += ["command:%s" % pos, "command:--no-%s" % pos[2:]]
        changed.append("without %s" % pos)
    for name in sorted(layer.get("env") or {}):
        allowed.append("env:%s" % name)
        changed.append("%s=%s" % (name, layer["env"][name]))
    req = layer.get("request")
    if req:
        if layer.get("request_mode") == "replace":
            allowed.append("request:*")
            changed.append("request body replaced (%s)" % ", ".join(sorted(req)))
        else:
            for key in sorted(req):
                allowed.append("request:%s" % key)
                val = req[key]
                shown = val if not isinstance(val, str) or len(val) <= 40 else "%s... (%d chars)" % (val[:40], len(val))
                changed.append("request.%s=%s" % (key, shown))
    for key in ("concurrency", "route", "base_url"):
        if layer.get(key) not in (None, ""):
            allowed.append("request:%s" % key)
            changed.append("%s=%s" % (key, layer[key]))
    extra = _extra_requests(layer)
    if extra:
        allowed.append("request:extra")
        changed.append("further request(s) in the same run: %s" % ", ".join(e["label"] for e in extra))
    given = [str(a) for a in layer.get("allow") or []]
    # a layer that moves to more hosts changes them and each node's placement (node_placement's options)
    moved = ["hosts:inventory"] + ["command:%s" % f for f in PLACEMENT_FLAGS] if "requires_nodes" in layer else []
    allowed += [a for a in moved if a not in given] + given
    return allowed, changed


def production_layer(derived, layer):
    """What the production command had for one ladder layer, ready to set again: ``{args, env, items, left_out}``.

    ``derived`` is :func:`derive_minimal`'s answer (or its ``removed`` mapping). ``args`` are the removed vLLM options
    of the categories whose layer is ``layer``, as written (``--tool-call-parser kimi_k2``,
    ``--structured-outputs-config.backend xgrammar``), in command order; ``env`` the removed variables. ``left_out``
    names what cannot come back this way, with the reason: a secret (its value never leaves the derivation; the
    layer's own variable gives it) and a container runtime option (a restart policy, ``-d``: never part of a
    supervised start).
    """
    removed = (derived or {}).get("removed", derived) if isinstance(derived, dict) else {}
    args, env, items, left_out = [], {}, [], []
    for category in CATEGORIES:
        for entry in (removed or {}).get(category) or []:
            if entry.get("layer") != layer:
                continue
            if entry.get("runtime"):
                left_out.append({"item": entry["item"], "why": "a container runtime option, not a server option"})
            elif "name" in entry:
                if entry.get("value") in (None, MASK) or is_secret_name(entry["name"]):
                    left_out.append({"item": entry["item"], "why": "a secret or a value from the client's "
                                     "environment; give it with the layer's own variable"})
                else:
                    env[entry["name"]] = str(entry["value"])
                    items.append(entry["item"])
            elif entry.get("tokens"):
                args.extend(str(t) for t in entry["tokens"])
                items.append(entry["item"])
            else:
                left_out.append({"item": entry["item"], "why": "a secret; give it with the layer's own variable"})
    return {"args": args, "env": env, "items": items, "left_out": left_out}


def _with_production(layer, production):
    """The layer with the production command's own items for it on top: its options set-or-replace the layer's
    defaults (``--tool-call-parser kimi_k2`` instead of the default parser), its variables join the layer's env."""
    prod = production_layer(production, layer.get("name")) if production else None
    if not prod or not (prod["args"] or prod["env"]):
        return layer, []
    merged = dict(layer)
    own = split_options([str(a) for a in layer.get("args") or []])
    theirs = split_options(prod["args"])
    replaced = {_positive(o["flag"]) for o in theirs}
    merged["args"] = [t for o in own if _positive(o["flag"]) not in replaced for t in o["tokens"]] + prod["args"]
    merged["env"] = dict(layer.get("env") or {}, **prod["env"])
    return merged, prod["items"]


def apply_layers(base, layers, names, overrides=None, production=None):
    """The command, environment and request of the run that has the layers ``names`` (in that order) on top of
    ``base`` (``{argv, env, request: {route, concurrency, timeout, base_url, body}}``).

    ``layers`` is the ladder data (a list of dicts with ``name``), ``overrides`` maps a layer name to fields that
    replace the data's. ``production``: the minimal-command derivation of a production command
    (:func:`derive_minimal`); each layer then sets the production command's own options and variables of its
    categories (:func:`production_layer`) over its defaults. Returns ``{argv, env, request, layers_applied, allowed,
    changed, from_production}``; ``allowed`` (the ``variable:key`` patterns the LAST layer may change, for
    record_diff), ``changed`` (readable items) and ``from_production`` (the production items it set again) describe
    the last layer only.
    """
    by_name = {}
    for layer in layers or []:
        merged = dict(layer)
        merged.update((overrides or {}).get(layer.get("name"), {}) or {})
        # an option of the layer left with an empty value (its variable unset) is not set
        merged["args"] = [t for o in split_options([str(a) for a in merged.get("args") or []]) if o["value"] != ""
                          for t in o["tokens"]]
        by_name[layer.get("name")] = merged
    missing = [n for n in names or [] if n not in by_name]
    if missing:
        raise CommandError("unknown ladder layer(s): %s (known: %s)" % (", ".join(missing), ", ".join(by_name)))
    argv = [str(a) for a in base["argv"]]
    env = dict(base.get("env") or {})
    request = dict(base.get("request") or {})
    request["body"] = dict(request.get("body") or {}) if isinstance(request.get("body"), dict) else request.get("body")
    allowed, changed, from_production = [], [], []
    for name in names or []:
        layer, from_production = _with_production(by_name[name], production)
        allowed, changed = _layer_allowed(layer)
        if from_production:
            changed = changed + ["from the production command: %s" % ", ".join(from_production)]
        if layer.get("args") or layer.get("remove"):
            argv = apply_options(argv, [str(a) for a in layer.get("args") or []],
                                 [str(r) for r in layer.get("remove") or []])
        for k, v in (layer.get("env") or {}).items():
            env[str(k)] = str(v)
        req = layer.get("request")
        if req:
            if layer.get("request_mode") == "replace":
                body = {"model": request["body"].get("model")} if isinstance(request.get("body"), dict) else {}
                body.update(req)
            else:
                body = dict(request["body"]) if isinstance(request.get("body"), dict) else {}
                body.update(req)
            request["body"] = body
        for key in ("concurrency", "route", "base_url"):
            if layer.get(key) not in (None, ""):
                request[key] = int(layer[key]) if key == "concurrency" else layer[key]
        extra = _extra_requests(layer)
        if extra:
            model = request["body"].get("model") if isinstance(request.get("body"), dict) else None
            request["extra"] = [dict(e, body=dict({"model": model} if model else {}, **e["body"])) for e in extra]
    return {"argv": argv, "env": env, "request": request, "layers_applied": list(names or []), "allowed": allowed,
            "changed": changed, "from_production": from_production}
