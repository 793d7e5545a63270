#!/usr/bin/env bash
# On a lent GPU machine after shared/gpu-vllm's two set-up calls (vLLM 0.26.0 at /var/tmp/gpu-vllm/bin/vllm, the tiny
# model at /var/tmp/gpu-vllm/model/tiny): start `vllm serve` once per case, each case one thing done wrong the way an
# operator does it, and keep the server's own log (stdout and stderr together, as a unit file or `docker logs` keeps
# it). No play of the collection runs here: these are the classifier's real GPU logs (tests/fixtures/
# 2026-12-07-gpu-vllm-0.26.0-logs/README.md says what each case did and what came out).
#
# usage (repository root): OUT=/some/dir bash tests/device/gpu_vllm_logs.sh GROUP...
#   VLLM, MODELS, PY and BASE_ARGS name another vLLM (the CPU build of `make run`: group c only), its models (tiny,
#   as scripts/build_tiny_model.py builds it), the Python with torch, and the options every case starts with.
#   a    start-up refusals: tokenizer missing, max-model-len beyond the model, the port taken, the model path missing,
#        config.json cut short, an architecture vLLM does not have, a quantization the checkpoint lacks, an attention
#        backend the install lacks, one the model cannot use
#   b    memory utilization out of range, no GPU visible, the weights larger than the free memory (another process
#        holds the rest), the engine process killed while serving, a LoRA rank vLLM does not offer, data parallel 2
#        on one GPU
#   f    on either vLLM, what goes wrong around a running server: the port taken, a --host address this machine does
#        not have, the engine core killed (SIGKILL) during a long request and then asked again, a tensor parallel 2
#        worker killed while serving, the CPU KV cache space larger than the machine, a max-model-len the KV cache
#        cannot hold, a hub model name offline and not cached, a model with custom code without --trust-remote-code,
#        tokenizer.json cut short, max-num-batched-tokens below max-model-len without chunked prefill, a chat request
#        to a model with no chat template
#   i    on either vLLM, more start-up refusals and a hang: tensor parallel 3 for 4 heads, a model folder without
#        weights and one without config.json, a LoRA adapter of a rank above --max-lora-rank, the engine core killed
#        once the KV cache is sized, a worker stopped (SIGSTOP) during a request with VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS
#        5 (tensor parallel 2), bitsandbytes quantization without bitsandbytes, VLLM_CPU_OMP_THREADS_BIND naming CPUs
#        the machine does not have, a speculative draft model that is not there, an unknown KV connector
#   j    on either vLLM: a hub model name on a host without internet (HF_HUB_OFFLINE not set), a flag of an older
#        release, a KV cache dtype vLLM does not have, an open-files limit of 64, VLLM_CACHE_ROOT where nothing can be
#        written, a chat request whose JSON schema (response_format) is not a schema
#   k    on either vLLM, what a model's overrides, a plugin path or a default gets wrong: max-num-batched-tokens below
#        max-num-seqs, a generation config folder that is not there, --hf-overrides with a smaller vocabulary, more
#        layers than the checkpoint has, an activation that does not exist, a default temperature that is not a
#        number (then a request), a logits processor, an API middleware and a tool parser plugin that cannot be
#        loaded, an allowed local media path that is not there
#   h    on a GPU, in one call: the engine core killed during a long request, tensor parallel 2 and data parallel 2
#        on one GPU, CUDA_VISIBLE_DEVICES naming a GPU that is not there, memory utilization out of range, a KV cache
#        (--kv-cache-memory-bytes) too small for max-model-len, max-model-len beyond the model, the port taken
#   l    on a GPU: the memory running out in the start-up's profiling pass (another process leaves 6 GiB), and at a
#        request once another process took what the server did not hold (written 2026-12-07 when no device was lent:
#        not run yet; group g shares its memory holder and has not been run since either)
#   g    the GPU-only cases of a and b in one short call: no GPU visible, two attention backends, the weights larger
#        than the free memory (an 8-layer model of 4096 hidden, about 3.9 GB of bf16, where another process left
#        3.5 GiB free)
#   c    the refusals of group a that no GPU is needed for, on another vLLM (the CPU build): tokenizer missing,
#        config.json cut short, an architecture vLLM does not have, a quantization the checkpoint lacks, a LoRA rank
#        vLLM does not offer, memory utilization out of range
#   d    later refusals, on either vLLM: a chat template path that does not exist, an unknown tool-call parser, a LoRA
#        module path that does not exist, a head count that does not fit the weights (--hf-overrides), the weight
#        shard cut short, FP8 quantization and an FP8 KV cache asked of the platform, a speculative config without
#        its token count, a multi-modal limit on a text model, a revision that is not there offline
#   e    on either vLLM: the mistral tokenizer mode on an HF tokenizer, the GGUF load format on safetensors, max-num-seqs
#        0, Gloo told an interface that is not there, VLLM_HOST_IP an address that is not this host's (both with
#        tensor parallel 2), an engine start timeout of 2 s, the Ray backend where Ray is not installed, the worker
#        killed (SIGKILL, as the OOM killer) while it loads the weights, pipeline parallel 2
# Writes $OUT/logs/<case>.log, $OUT/machine.txt, and prints one line per case: ready/exited/timeout, exit status.
set -uo pipefail
: "${OUT:?set OUT}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export VLLM_USE_FLASHINFER_SAMPLER=0 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
G=/var/tmp/gpu-vllm
V=${VLLM:-"$G"/bin/vllm}
M=${MODELS:-"$G"/model}
PY=${PY:-/opt/torch/.venv/bin/python3}
read -r -a BASE <<< "${BASE_ARGS:---max-model-len 512 --enforce-eager --gpu-memory-utilization 0.3}"
PORT=8021
LOGS=$OUT/logs
mkdir -p "$LOGS"
if [ ! -x "$V" ] || [ ! -d "$M/tiny" ]; then
  echo "NO VLLM at $V or no $M/tiny: on a GPU machine run shared/gpu-vllm's stage1.sh and stage2.sh first"; exit 3
fi
HOLDER=""
cleanup() { [ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null; pkill -f socket-holder 2>/dev/null; true; }
trap cleanup EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*"; }
{ if command -v nvidia-smi > /dev/null; then nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader; fi
  "$V" --version 2>/dev/null | tail -1
} > "$OUT/machine.txt"
cat "$OUT/machine.txt"

post() {  # post LABEL ROUTE TIMEOUT BODY: one request to the served tiny model; prints LABEL and the status line
  $PY - "$PORT" "$@" <<'PY'
import sys, urllib.error, urllib.request
port, label, route, timeout, body = sys.argv[1:6]
req = urllib.request.Request("http://127.0.0.1:%s%s" % (port, route), body.encode(), {"Content-Type": "application/json"})
try:
    print(label + ":", urllib.request.urlopen(req, timeout=float(timeout)).status)
except urllib.error.HTTPError as exc:
    print(label + ":", exc.code, exc.read()[:200])
except OSError as exc:
    print(label + ":", exc)
PY
}

ask() {  # one completion; prints the status line
  post request /v1/completions 30 '{"model": "tiny", "prompt": "Hello, my name is", "max_tokens": 8, "temperature": 0}'
}

serve() {  # serve CASE MODEL [vllm serve options...]; ENVX: extra environment; AFTER_READY: what to do once it serves;
           # WATCH_FOR / ON_WATCH: what to do once the log shows a line (once)
  local case=$1 model=$2 t0=$SECONDS state=timeout pid rc watched=""
  shift 2
  setsid env ${ENVX:+"$ENVX"} "$V" serve "$model" --served-model-name tiny --port "$PORT" "$@" > "$LOGS/$case.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || { state=exited; break; }
    if [ -n "${WATCH_FOR:-}" ] && [ -z "$watched" ] && grep -q "$WATCH_FOR" "$LOGS/$case.log"; then
      watched=1; eval "$ON_WATCH"
    fi
    if $PY -c "import sys, urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=1)" 2>/dev/null; then
      state=ready; break
    fi
    sleep 0.5
  done
  if [ $state = ready ]; then
    ask
    [ -n "${AFTER_READY:-}" ] && eval "$AFTER_READY"
  fi
  kill -INT -- -"$pid" 2>/dev/null
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL -- -"$pid" 2>/dev/null
  wait "$pid"; rc=$?
  log "$case: $state rc=$rc in $((SECONDS - t0)) s, $(wc -l < "$LOGS/$case.log") lines | $(grep -m1 -E '^[A-Za-z.]*(Error|Exception)[:(]|ERROR' "$LOGS/$case.log" | cut -c1-160)"
}

ask_long() {  # one long completion (256 tokens, ignoring EOS) in the background: the request in flight
  post "long request" /v1/completions 120 '{"model": "tiny", "prompt": "Once upon a time", "max_tokens": 256, "ignore_eos": true}' &
}

ask_chat() {  # one chat completion; prints the status line
  post "chat request" /v1/chat/completions 30 '{"model": "tiny", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8}'
}

lora_adapter() {  # lora_adapter DIR RANK: a PEFT LoRA adapter of the tiny model (q_proj and v_proj of each layer)
  $PY - "$1" "$2" "$M"/tiny <<'PY'
import json, os, sys, torch
from safetensors.torch import save_file
out, r, base = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cfg = json.load(open(os.path.join(base, "config.json")))
h, heads, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["head_dim"]
os.makedirs(out, exist_ok=True)
json.dump({"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r, "lora_alpha": 16, "lora_dropout": 0.0, "bias": "none",
           "target_modules": ["q_proj", "v_proj"], "base_model_name_or_path": base}, open(os.path.join(out, "adapter_config.json"), "w"))
t = {}
for i in range(cfg["num_hidden_layers"]):
    for m, o in (("q_proj", heads * hd), ("v_proj", cfg["num_key_value_heads"] * hd)):
        p = "base_model.model.model.layers.%d.self_attn.%s." % (i, m)
        t[p + "lora_A.weight"] = torch.zeros(r, h)
        t[p + "lora_B.weight"] = torch.zeros(o, r)
save_file(t, os.path.join(out, "adapter_model.safetensors"))
PY
}

ask_schema() {  # a chat completion whose response_format carries a JSON schema that is not one
  post "schema request" /v1/chat/completions 60 '{"model": "tiny", "messages": [{"role": "user", "content": "Hello"}],
    "max_tokens": 8, "response_format": {"type": "json_schema", "json_schema": {"name": "x",
    "schema": {"type": "nonsense", "minimum": "zero"}}}}'
}

port_in_use() {  # another program already listens on the port (a server of the last restart that did not go away)
  $PY -c "import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', $PORT)); s.listen(1); time.sleep(300)  # socket-holder" &
  sleep 1
  serve port-in-use "$M"/tiny "${BASE[@]}"
  pkill -f socket-holder
}

model_refusals() {  # what a copied model or its options get wrong: config.json cut short, an architecture vLLM does not
                    # have, a quantization the checkpoint lacks
  rm -rf "$M"/tiny-config-cut && cp -r "$M"/tiny "$M"/tiny-config-cut
  truncate -s $(( $(stat -c %s "$M"/tiny/config.json) / 2 )) "$M"/tiny-config-cut/config.json
  serve config-json-cut "$M"/tiny-config-cut "${BASE[@]}"
  rm -rf "$M"/tiny-arch && cp -r "$M"/tiny "$M"/tiny-arch
  $PY -c "import json, sys; p = sys.argv[1]; c = json.load(open(p)); c['architectures'] = ['NoSuchModelForCausalLM']
json.dump(c, open(p, 'w'), indent=2)" "$M"/tiny-arch/config.json
  serve architecture-unknown "$M"/tiny-arch "${BASE[@]}"
  serve quantization-absent "$M"/tiny "${BASE[@]}" --quantization awq
  rm -rf "$M"/tiny-config-cut "$M"/tiny-arch
}

weights_beyond_free_memory() {  # the weights larger than the free memory (another process holds the rest)
  weights_beyond_free_memory_model
  hold_gpu_memory 3.5 2.5
  serve weights-beyond-free-memory "$M"/big --max-model-len 512 --enforce-eager --gpu-memory-utilization "$UTIL"
  release_gpu_memory
}

weights_beyond_free_memory_model() {  # an 8-layer model of 4096 hidden (about 3.9 GB of bf16) at $M/big
  if [ ! -d "$M"/big ]; then
    PYTHONPATH="$G"/site $PY - "$M"/tiny "$M"/big <<'PY'
import json, os, shutil, sys, torch
from safetensors.torch import save_file
src, out = sys.argv[1], sys.argv[2]
tmp = out + ".tmp"
shutil.rmtree(tmp, ignore_errors=True)
shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("*.safetensors"))
cfg = json.load(open(os.path.join(src, "config.json")))
h, inter, layers, heads, kv, hd, vocab = 4096, 14336, 8, 32, 8, 128, cfg["vocab_size"]
cfg.update(hidden_size=h, intermediate_size=inter, num_hidden_layers=layers, num_attention_heads=heads,
           num_key_value_heads=kv, head_dim=hd)
json.dump(cfg, open(os.path.join(tmp, "config.json"), "w"), indent=2)
z = lambda *shape: torch.zeros(*shape, dtype=torch.bfloat16)
t = {"model.embed_tokens.weight": z(vocab, h), "model.norm.weight": z(h), "lm_head.weight": z(vocab, h)}
for i in range(layers):
    p = "model.layers.%d." % i
    t.update({p + "self_attn.q_proj.weight": z(heads * hd, h), p + "self_attn.k_proj.weight": z(kv * hd, h),
              p + "self_attn.v_proj.weight": z(kv * hd, h), p + "self_attn.o_proj.weight": z(h, heads * hd),
              p + "mlp.gate_proj.weight": z(inter, h), p + "mlp.up_proj.weight": z(inter, h),
              p + "mlp.down_proj.weight": z(h, inter), p + "input_layernorm.weight": z(h),
              p + "post_attention_layernorm.weight": z(h)})
save_file(t, os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
os.rename(tmp, out)
print("big model", sum(v.numel() for v in t.values()) * 2 / 1e9, "GB")
PY
  fi
}

hold_gpu_memory() {  # hold_gpu_memory LEAVE_GIB UTIL_GIB: another process takes all but LEAVE_GIB of the free memory;
                     # UTIL is then UTIL_GIB of the total as a utilization (0: none asked)
  rm -f /tmp/holder.ready && mkfifo /tmp/holder.ready
  $PY -c 'import sys, time, torch
free, total = torch.cuda.mem_get_info()
x = torch.empty(free - int(float(sys.argv[2]) * 1024 ** 3), dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
open(sys.argv[1], "w").write("%.4f\n" % (float(sys.argv[3]) * 1024 ** 3 / total))
time.sleep(600)' /tmp/holder.ready "$1" "$2" &
  HOLDER=$!
  UTIL=$(timeout 120 head -n1 /tmp/holder.ready)
  log "holder $HOLDER: $(nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader); utilization $UTIL"
}

release_gpu_memory() {
  kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null; HOLDER=""
}

ask_prompt() {  # ask_prompt TOKENS: one completion whose prompt is about TOKENS tokens long
  post "long prompt" /v1/completions 60 "{\"model\": \"tiny\", \"prompt\": \"$(printf 'hello world %.0s' $(seq 1 "$1"))\", \"max_tokens\": 4}"
}

for group in "$@"; do
  case $group in
    a)
      serve tokenizer-missing "$M"/tiny "${BASE[@]}" --tokenizer "$M"/no-such-tokenizer
      serve max-model-len-beyond-model "$M"/tiny --max-model-len 65536 --enforce-eager --gpu-memory-utilization 0.3
      port_in_use
      serve model-path-missing "$M"/no-such-model "${BASE[@]}"
      model_refusals
      serve attention-backend-not-installed "$M"/tiny "${BASE[@]}" --attention-backend FLASHINFER
      serve attention-backend-wrong-model "$M"/tiny "${BASE[@]}" --attention-backend FLASHMLA
      ;;
    b)
      serve memory-utilization-out-of-range "$M"/tiny --max-model-len 512 --enforce-eager --gpu-memory-utilization 1.5
      ENVX="CUDA_VISIBLE_DEVICES=" serve no-gpu-visible "$M"/tiny "${BASE[@]}"
      weights_beyond_free_memory
      # the engine core process dies (SIGKILL, as the kernel's OOM killer sends it) after one good answer
      AFTER_READY='pkill -9 -f "VLLM::EngineCore"; sleep 3; ask; sleep 3' serve engine-killed-while-serving "$M"/tiny "${BASE[@]}"
      serve lora-rank-not-offered "$M"/tiny "${BASE[@]}" --enable-lora --max-lora-rank 7
      serve data-parallel-2-on-1-gpu "$M"/tiny "${BASE[@]}" --data-parallel-size 2
      ;;
    c)
      serve tokenizer-missing "$M"/tiny "${BASE[@]}" --tokenizer "$M"/no-such-tokenizer
      model_refusals
      serve lora-rank-not-offered "$M"/tiny "${BASE[@]}" --enable-lora --max-lora-rank 7
      serve memory-utilization-out-of-range "$M"/tiny "${BASE[@]}" --gpu-memory-utilization 1.5
      ;;
    d)
      serve chat-template-missing "$M"/tiny "${BASE[@]}" --chat-template "$M"/no-such-template.jinja
      serve tool-parser-unknown "$M"/tiny "${BASE[@]}" --enable-auto-tool-choice --tool-call-parser no_such_parser
      serve lora-module-missing "$M"/tiny "${BASE[@]}" --enable-lora --lora-modules adapter="$M"/no-such-adapter
      serve heads-do-not-fit-weights "$M"/tiny "${BASE[@]}" --hf-overrides '{"num_attention_heads": 8, "num_key_value_heads": 8}'
      rm -rf "$M"/tiny-shard-cut && cp -r "$M"/tiny "$M"/tiny-shard-cut
      for f in "$M"/tiny-shard-cut/*.safetensors; do truncate -s $(( $(stat -c %s "$f") / 2 )) "$f"; done
      serve weight-shard-cut "$M"/tiny-shard-cut "${BASE[@]}"
      serve quantization-fp8 "$M"/tiny "${BASE[@]}" --quantization fp8
      serve kv-cache-dtype-fp8 "$M"/tiny "${BASE[@]}" --kv-cache-dtype fp8
      serve speculative-config-incomplete "$M"/tiny "${BASE[@]}" --speculative-config '{"method": "ngram"}'
      serve mm-limit-on-text-model "$M"/tiny "${BASE[@]}" --limit-mm-per-prompt '{"image": 2}'
      serve revision-absent-offline "$M"/tiny "${BASE[@]}" --revision no-such-revision
      rm -rf "$M"/tiny-shard-cut
      ;;
    e)
      serve tokenizer-mode-mistral "$M"/tiny "${BASE[@]}" --tokenizer-mode mistral
      serve load-format-gguf "$M"/tiny "${BASE[@]}" --load-format gguf
      serve max-num-seqs-zero "$M"/tiny "${BASE[@]}" --max-num-seqs 0
      ENVX="GLOO_SOCKET_IFNAME=nosuch0" serve gloo-interface-absent "$M"/tiny "${BASE[@]}" --tensor-parallel-size 2
      ENVX="VLLM_HOST_IP=203.0.113.7" serve host-ip-not-this-hosts "$M"/tiny "${BASE[@]}" --tensor-parallel-size 2
      ENVX="VLLM_ENGINE_READY_TIMEOUT_S=2" serve engine-ready-timeout "$M"/tiny "${BASE[@]}"
      serve ray-backend-not-installed "$M"/tiny "${BASE[@]}" --distributed-executor-backend ray
      WATCH_FOR="Starting to load model" ON_WATCH='pkill -9 -f "VLLM::Worker"' \
        serve worker-killed-while-loading "$M"/tiny "${BASE[@]}"
      serve pipeline-parallel-2 "$M"/tiny "${BASE[@]}" --pipeline-parallel-size 2
      ;;
    f)
      port_in_use
      serve host-address-not-here "$M"/tiny "${BASE[@]}" --host 203.0.113.7
      AFTER_READY='ask_long; sleep 2; pkill -9 -f "VLLM::EngineCore"; sleep 5; ask; sleep 3' \
        serve engine-killed-during-request "$M"/tiny "${BASE[@]}"
      AFTER_READY='ask_long; sleep 2; pkill -9 -f "VLLM::Worker"; sleep 5; ask; sleep 3' \
        serve tp2-worker-killed-while-serving "$M"/tiny "${BASE[@]}" --tensor-parallel-size 2
      ENVX="VLLM_CPU_KVCACHE_SPACE=100000" serve kv-cache-space-beyond-memory "$M"/tiny "${BASE[@]}"
      serve max-model-len-beyond-kv-cache "$M"/tiny "${BASE[@]/512/2097152}" --hf-overrides '{"max_position_embeddings": 4194304}'
      serve hub-model-offline-not-cached no-such-org/no-such-model-7b "${BASE[@]}"
      serve remote-code-not-trusted "$M"/tiny-remote-code "${BASE[@]}"
      rm -rf "$M"/tiny-tokenizer-cut && cp -r "$M"/tiny "$M"/tiny-tokenizer-cut
      truncate -s $(( $(stat -c %s "$M"/tiny/tokenizer.json) / 2 )) "$M"/tiny-tokenizer-cut/tokenizer.json
      serve tokenizer-json-cut "$M"/tiny-tokenizer-cut "${BASE[@]}"
      rm -rf "$M"/tiny-tokenizer-cut
      serve batched-tokens-below-model-len "$M"/tiny "${BASE[@]}" --max-num-batched-tokens 64 --no-enable-chunked-prefill
      rm -rf "$M"/tiny-no-template && cp -r "$M"/tiny "$M"/tiny-no-template && rm -f "$M"/tiny-no-template/chat_template.jinja
      AFTER_READY='ask_chat' serve chat-without-template "$M"/tiny-no-template "${BASE[@]}"
      rm -rf "$M"/tiny-no-template
      ;;
    i)
      serve tensor-parallel-3-for-4-heads "$M"/tiny "${BASE[@]}" --tensor-parallel-size 3
      serve model-without-weights "$M"/tiny-noweights "${BASE[@]}"
      rm -rf "$M"/tiny-no-config && cp -r "$M"/tiny "$M"/tiny-no-config && rm -f "$M"/tiny-no-config/config.json
      serve model-without-config "$M"/tiny-no-config "${BASE[@]}"
      rm -rf "$M"/tiny-no-config "$M"/lora-r64 && lora_adapter "$M"/lora-r64 64
      serve lora-rank-above-max "$M"/tiny "${BASE[@]}" --enable-lora --max-lora-rank 16 --lora-modules big="$M"/lora-r64
      rm -rf "$M"/lora-r64
      WATCH_FOR="GiB for KV cache" ON_WATCH='pkill -9 -f "VLLM::EngineCore"' \
        serve engine-killed-sizing-kv-cache "$M"/tiny "${BASE[@]}"
      ENVX="VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=5" AFTER_READY='pkill -STOP -n -f "VLLM::Worker"; ask; sleep 8; pkill -CONT -f "VLLM::Worker"' \
        serve worker-stopped-during-request "$M"/tiny "${BASE[@]}" --tensor-parallel-size 2
      serve bitsandbytes-not-installed "$M"/tiny "${BASE[@]}" --quantization bitsandbytes
      ENVX="VLLM_CPU_OMP_THREADS_BIND=0-63" serve omp-bind-beyond-cpus "$M"/tiny "${BASE[@]}"
      serve speculative-draft-missing "$M"/tiny "${BASE[@]}" --speculative-config '{"model": "'"$M"'/no-such-draft", "num_speculative_tokens": 2}'
      serve kv-connector-unknown "$M"/tiny "${BASE[@]}" --kv-transfer-config '{"kv_connector": "NoSuchConnector", "kv_role": "kv_both"}'
      ;;
    j)
      ENVX="HF_HUB_OFFLINE=0" serve hub-unreachable no-such-org/no-such-model-7b "${BASE[@]}"
      serve flag-of-an-older-release "$M"/tiny "${BASE[@]}" --use-v2-block-manager
      serve kv-cache-dtype-unknown "$M"/tiny "${BASE[@]}" --kv-cache-dtype fp9
      (ulimit -n 64; serve open-files-limit-64 "$M"/tiny "${BASE[@]}")
      ENVX="VLLM_CACHE_ROOT=/proc/vllm-cache" serve cache-root-unwritable "$M"/tiny "${BASE[@]}"
      AFTER_READY='ask_schema; sleep 2; ask' serve json-schema-not-a-schema "$M"/tiny "${BASE[@]}"
      ;;
    k)
      serve batched-tokens-below-max-seqs "$M"/tiny "${BASE[@]}" --max-num-batched-tokens 8 --max-num-seqs 16
      serve generation-config-missing "$M"/tiny "${BASE[@]}" --generation-config "$M"/no-such-generation-config
      serve vocab-override-smaller "$M"/tiny "${BASE[@]}" --hf-overrides '{"vocab_size": 100}'
      serve layers-override-beyond-checkpoint "$M"/tiny "${BASE[@]}" --hf-overrides '{"num_hidden_layers": 4}'
      serve activation-override-unknown "$M"/tiny "${BASE[@]}" --hf-overrides '{"hidden_act": "no_such_act"}'
      serve default-temperature-not-a-number "$M"/tiny "${BASE[@]}" --override-generation-config '{"temperature": "hot"}'
      serve logits-processor-not-importable "$M"/tiny "${BASE[@]}" --logits-processors no_such_module:NoSuchProcessor
      serve middleware-not-importable "$M"/tiny "${BASE[@]}" --middleware no_such_module.no_such_middleware
      serve tool-parser-plugin-missing "$M"/tiny "${BASE[@]}" --enable-auto-tool-choice --tool-call-parser hermes \
        --tool-parser-plugin "$M"/no-such-tool-parser.py
      serve local-media-path-missing "$M"/tiny "${BASE[@]}" --allowed-local-media-path "$M"/no-such-media
      ;;
    h)
      AFTER_READY='ask_long; sleep 2; pkill -9 -f "VLLM::EngineCore"; sleep 5; ask; sleep 3' \
        serve engine-killed-during-request "$M"/tiny "${BASE[@]}"
      serve tensor-parallel-2-on-1-gpu "$M"/tiny "${BASE[@]}" --tensor-parallel-size 2
      serve data-parallel-2-on-1-gpu "$M"/tiny "${BASE[@]}" --data-parallel-size 2
      ENVX="CUDA_VISIBLE_DEVICES=3" serve visible-device-not-there "$M"/tiny "${BASE[@]}"
      serve memory-utilization-out-of-range "$M"/tiny --max-model-len 512 --enforce-eager --gpu-memory-utilization 1.5
      serve kv-cache-below-model-len "$M"/tiny --max-model-len 2048 --enforce-eager --kv-cache-memory-bytes 1048576
      serve max-model-len-beyond-model "$M"/tiny --max-model-len 65536 --enforce-eager --gpu-memory-utilization 0.3
      port_in_use
      ;;
    l)
      # the GPU memory running out where operators meet it: the start-up's profiling pass (another process leaves 6
      # GiB; the 8-layer model's 3.6 GiB fit, a 32768-token dummy batch does not), and a request once another process
      # has taken what the server did not hold (a prompt of about 1,470 tokens after that)
      weights_beyond_free_memory_model
      hold_gpu_memory 6 5
      serve profile-run-beyond-free-memory "$M"/big --max-model-len 512 --enforce-eager --gpu-memory-utilization "$UTIL" \
        --max-num-batched-tokens 32768
      release_gpu_memory
      AFTER_READY='hold_gpu_memory 0.02 0; ask_prompt 210; sleep 3; ask; release_gpu_memory' \
        serve memory-taken-while-serving "$M"/big --max-model-len 2048 --enforce-eager --gpu-memory-utilization 0.3
      ;;
    g)
      # the GPU-only cases of a and b, for a short device call
      ENVX="CUDA_VISIBLE_DEVICES=" serve no-gpu-visible "$M"/tiny "${BASE[@]}"
      serve attention-backend-not-installed "$M"/tiny "${BASE[@]}" --attention-backend FLASHINFER
      serve attention-backend-wrong-model "$M"/tiny "${BASE[@]}" --attention-backend FLASHMLA
      weights_beyond_free_memory
      ;;
    *) echo "unknown group $group"; exit 2 ;;
  esac
done
log "GPU after: $(nvidia-smi --query-gpu=memory.used --format=csv,noheader 2>/dev/null); servers left: $(pgrep -fc 'vllm serve|EngineCore' || true)"
