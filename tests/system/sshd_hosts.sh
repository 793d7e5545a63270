#!/usr/bin/env bash
# Real sshd daemons on loopback, one per test host, each with its own host key, config, pid file and log;
# key authentication only. Writes DIR/inventory.yml (group "sshhosts") for Ansible.
#   tests/system/sshd_hosts.sh start DIR N [PORT_BASE]   # hosts node01..nodeNN on 127.0.0.1:PORT_BASE+i
#   tests/system/sshd_hosts.sh stop DIR                  # stops every daemon (and its sessions) under DIR
#   tests/system/sshd_hosts.sh kill DIR HOST             # makes one host unreachable: daemon and its sessions
set -euo pipefail
cmd=${1:?usage: sshd_hosts.sh start|stop|kill DIR [N [PORT_BASE]] | kill DIR HOST}
D=${2:?DIR required}
SSHD=${SSHD:-/usr/sbin/sshd}

stop_one() {  # the listening daemon and the per-connection children it forked
  local pidf=$1 pid
  [ -f "$pidf" ] || return 0
  pid=$(cat "$pidf")
  pkill -KILL -P "$pid" 2>/dev/null || true
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidf"
}

case "$cmd" in
  stop)
    for p in "$D"/node*/sshd.pid; do stop_one "$p"; done
    exit 0 ;;
  kill)
    stop_one "$D/${3:?HOST required}/sshd.pid"
    exit 0 ;;
  start) ;;
  *) echo "sshd_hosts.sh: unknown command $cmd" >&2; exit 2 ;;
esac

N=${3:-5}
BASE=${4:-22200}
[ -x "$SSHD" ] || { echo "sshd_hosts.sh: $SSHD not found; install openssh-server (scripts/setup-test-deps.sh does)" >&2; exit 2; }
mkdir -p "$D" /run/sshd
D=$(cd "$D" && pwd)
[ -f "$D/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C repro-vllm-test -f "$D/id_ed25519"
cp "$D/id_ed25519.pub" "$D/authorized_keys"
chmod 600 "$D/authorized_keys" "$D/id_ed25519"
{
  echo "---"
  echo "sshhosts:"
  echo "  hosts:"
  for i in $(seq 1 "$N"); do
    h=$(printf node%02d "$i"); port=$((BASE + i)); hd="$D/$h"
    mkdir -p "$hd"
    [ -f "$hd/hostkey" ] || ssh-keygen -q -t ed25519 -N '' -f "$hd/hostkey"
    printf '%s\n' "ListenAddress 127.0.0.1:$port" "HostKey $hd/hostkey" "PidFile $hd/sshd.pid" \
      "AuthorizedKeysFile $D/authorized_keys" "PermitRootLogin prohibit-password" \
      "PasswordAuthentication no" "KbdInteractiveAuthentication no" "UsePAM no" "StrictModes no" \
      "MaxStartups 100:30:200" "MaxSessions 50" "LogLevel ERROR" "AcceptEnv LANG LC_*" > "$hd/sshd_config"
    stop_one "$hd/sshd.pid"
    "$SSHD" -f "$hd/sshd_config" -E "$hd/sshd.log"
    echo "    $h:"
    echo "      ansible_host: 127.0.0.1"
    echo "      ansible_port: $port"
  done
  echo "  vars:"
  echo "    ansible_user: root"
  echo "    ansible_ssh_private_key_file: $D/id_ed25519"
  # a throwaway known_hosts per harness: host keys are real and checked, but not written to ~/.ssh
  echo "    ansible_ssh_common_args: -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=$D/known_hosts"
  echo "    ansible_python_interpreter: /usr/bin/python3"
} > "$D/inventory.yml"
for i in $(seq 1 "$N"); do
  port=$((BASE + i)); ok=0
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then ok=1; break; fi
    sleep 0.1
  done
  [ "$ok" = 1 ] || { echo "sshd_hosts.sh: sshd on 127.0.0.1:$port did not come up; see $D/$(printf node%02d "$i")/sshd.log" >&2; exit 1; }
done
echo "sshd_hosts.sh: $N hosts up on 127.0.0.1:$((BASE + 1))..$((BASE + N)); inventory $D/inventory.yml"
