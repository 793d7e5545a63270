#!/usr/bin/env bash
# System packages the test suite needs on a fresh Debian/Ubuntu machine: sshd for the multi-host harness, nginx for
# the gateway layer's reverse proxy (the tests start their own, never the system service), podman (Debian's package)
# with runc for the container tests, the shell linter that ansible-test's sanity runs, an en_US.UTF-8 locale for
# ansible-test. Installs only what is missing; run it again and it installs nothing.
set -euo pipefail
say() { printf '[setup-test-deps] %s\n' "$*"; }
need=()
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
command -v locale-gen >/dev/null 2>&1 || need+=(locales)
command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || need+=(nginx)
# podman's own dependency is "crun | runc" and apt picks crun, which refuses a cgroups v1/v2 hybrid layout (this
# project's CI VMs): runc is installed too and the tests run podman with --runtime runc where it is present
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "setup-test-deps: need root to apt-get install ${need[*]} (or install them yourself)" >&2; exit 2; }
  say "apt-get install ${need[*]}"
  timeout 300 apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
else
  say "openssh-server, shellcheck, locales, nginx, podman, runc already installed"
fi
if ! locale -a 2>/dev/null | grep -qi '^en_US\.utf8$'; then
  if [ "$(id -u)" = 0 ]; then
    say "generating the en_US.UTF-8 locale"
    sed -i 's/^# *en_US.UTF-8 UTF-8/en_US.UTF-8 UTF-8/' /etc/locale.gen
    grep -q '^en_US.UTF-8 UTF-8' /etc/locale.gen || echo 'en_US.UTF-8 UTF-8' >> /etc/locale.gen
    locale-gen >/dev/null
  else
    say "no en_US.UTF-8 locale and not root: ansible-test will warn"
  fi
fi
