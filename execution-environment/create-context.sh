#!/usr/bin/env bash
# Build the collection from this checkout and write the execution environment's build context with
# `ansible-builder create` (Containerfile + _build/): no container engine needed. Then, where one is:
#   podman build -f OUTDIR/Containerfile -t repro-vllm-ee:<version> OUTDIR
# usage: execution-environment/create-context.sh OUTDIR
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:?usage: create-context.sh OUTDIR}
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/repro-vllm-ee.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
command -v ansible-builder >/dev/null || { echo "create-context: ansible-builder not found; run . scripts/env.sh (requirements-dev.txt has it)" >&2; exit 2; }
# the definition and its files, plus the collection artifact it installs (named without its version: galaxy.yml
# holds the one version, the image tag carries it)
cp "$ROOT"/execution-environment/execution-environment.yml "$ROOT"/execution-environment/requirements.yml \
   "$ROOT"/execution-environment/ansible.cfg "$STAGE"/
ansible-galaxy collection build --force --output-path "$STAGE/dist" "$ROOT" >/dev/null
mv "$STAGE"/dist/repro-vllm-*.tar.gz "$STAGE/repro-vllm.tar.gz"
version=$(sed -n 's/^version: *//p' "$ROOT/galaxy.yml")
ansible-builder create --file "$STAGE/execution-environment.yml" --context "$OUT" --output-filename Containerfile -v 1
echo "create-context: $OUT/Containerfile (repro.vllm $version); build with: podman build -f $OUT/Containerfile -t repro-vllm-ee:$version $OUT"
