#!/usr/bin/env bash
# Release hygiene: the changelog is consistent with its fragments; the collection artifact builds, installs into a
# clean path, Ansible sees every plugin there, and fingerprint.yml runs from an empty folder against that installed
# copy alone (no ansible.cfg, no checkout on the collections path). galaxy.yml's version is the one version.
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

version=$(sed -n 's/^version: *//p' galaxy.yml)
[ "$(basename "$tarball")" = "repro-vllm-$version.tar.gz" ] || { echo "build-and-install: artifact $tarball is not galaxy.yml's version $version" >&2; exit 1; }

# fingerprint.yml from an empty folder, as a user who only installed the collection runs it
empty=$(mktemp -d "$OUTDIR/empty.XXXXXX")
(
  cd "$empty"
  unset ANSIBLE_CONFIG ANSIBLE_CALLBACKS_ENABLED
  ANSIBLE_COLLECTIONS_PATH="$OUTDIR/dest" timeout 600 ansible-playbook -i localhost, -c local repro.vllm.fingerprint \
    -e ansible_python_interpreter="$(command -v python3)" -e repro_vllm_case_id=build-smoke \
    -e repro_vllm_remote_root="$empty/remote"
)
run="$empty/records/build-smoke/run-001"
[ -f "$run/manifest.json" ] || { echo "build-and-install: fingerprint.yml left no frozen run at $run" >&2; exit 1; }
ansible localhost -c local -m repro.vllm.run_record -a "state=verify path=$run" -e ansible_python_interpreter="$(command -v python3)"
python3 - "$run/manifest.json" "$version" <<'PY'
import json, sys
manifest = json.load(open(sys.argv[1]))
assert manifest.get("collection_version") == sys.argv[2], "manifest says %r, galaxy.yml %r" % (manifest.get("collection_version"), sys.argv[2])
print("build-and-install: fingerprint.yml from the installed copy froze %s (repro.vllm %s)" % (sys.argv[1].rsplit("/", 1)[0], sys.argv[2]))
PY

# the changelog: fragments valid, changelog.yaml valid, CHANGELOG.rst/.md exactly what changelog.yaml generates
antsibull-changelog lint
antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
for fmt in rst md; do
  antsibull-changelog generate --output "$OUTDIR/CHANGELOG.$fmt" --output-format "$fmt"
  diff -u "CHANGELOG.$fmt" "$OUTDIR/CHANGELOG.$fmt" || { echo "build-and-install: CHANGELOG.$fmt is not what changelogs/changelog.yaml generates: run make changelog" >&2; exit 1; }
done
echo "build-and-install: ok"
