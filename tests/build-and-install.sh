#!/usr/bin/env bash
# Build the collection artifact, install it into a clean path and check that Ansible sees every plugin there.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUTDIR=${1:?usage: build-and-install.sh OUTDIR}
mkdir -p "$OUTDIR"
cd "$ROOT"
ansible-galaxy collection build --force --output-path "$OUTDIR" .
tarball=$(ls "$OUTDIR"/repro-vllm-*.tar.gz)
if tar -tzf "$tarball" | grep -E '(^|/)(\.venv|records|tests/output|\.cache)/' ; then
  echo "build-and-install: the artifact carries build_ignore'd paths (above)" >&2; exit 1
fi
ansible-galaxy collection install --force -p "$OUTDIR/dest" "$tarball"
export ANSIBLE_COLLECTIONS_PATH="$OUTDIR/dest"
for m in gpu_facts container_facts run_record log_stage vllm_server api_request; do
  [ -f "plugins/modules/$m.py" ] || continue
  ansible-doc -t module "repro.vllm.$m" > /dev/null
  echo "ansible-doc repro.vllm.$m: ok"
done
ansible-doc -t role -l repro.vllm
ansible localhost -m repro.vllm.run_record -a "state=create root=$OUTDIR/records case_id=build-smoke" \
  -e ansible_python_interpreter="$(command -v python3)"
