# shellcheck shell=bash
# Source this to use the project's controller toolchain in the current shell:  . scripts/env.sh
_repro_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export ANSIBLE_CONFIG="$_repro_root/ansible.cfg"
# The development link of this checkout. An install into another folder must name that folder as the collections
# path too, or ansible-galaxy finds repro.vllm here and installs nothing (docs/awx.md, section 1):
#   ANSIBLE_COLLECTIONS_PATH="$DIR" ansible-galaxy collection install -r collections/requirements.yml -p "$DIR"
export ANSIBLE_COLLECTIONS_PATH="$_repro_root/.cache/collections"
export PATH="${REPRO_VLLM_VENV:-$_repro_root/.venv}/bin:$PATH"
unset _repro_root
