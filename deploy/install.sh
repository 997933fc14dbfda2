#!/bin/sh
# Installs Chorus as a system service: the binary, the node wrapper, the systemd units, and
# example settings (never overwriting existing ones). Run from the repository after
# `make build`:   sudo deploy/install.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
binary="$root/.build/release/chorus"
[ -x "$binary" ] || { echo "build first: make build" >&2; exit 1; }
install -Dm755 "$binary" /usr/local/bin/chorus
install -Dm755 "$here/chorus-node.sh" /usr/local/lib/chorus/chorus-node
install -Dm644 "$here/chorus-lead.service" /etc/systemd/system/chorus-lead.service
install -Dm644 "$here/chorus-follow@.service" /etc/systemd/system/chorus-follow@.service
install -Dm644 "$root/README.md" /usr/local/share/doc/chorus/README.md
install -Dm644 "$root/protocol.md" /usr/local/share/doc/chorus/protocol.md
mkdir -p /etc/chorus
[ -e /etc/chorus/lead.conf ] || install -m644 "$here/lead.conf" /etc/chorus/lead.conf
[ -e /etc/chorus/follow-example.conf ] || install -m644 "$here/follow.conf" /etc/chorus/follow-example.conf
[ -e /etc/chorus/playlist ] || printf '# One path or URL per line\n' >/etc/chorus/playlist
if [ ! -e /etc/chorus/home.key ]; then
    # 32 random bytes as hex: copy this file to every node of the group.
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >/etc/chorus/home.key
    echo >>/etc/chorus/home.key
    chmod 600 /etc/chorus/home.key
fi
systemctl daemon-reload 2>/dev/null || true
cat <<TXT
Installed. Next:
  leader:    edit /etc/chorus/lead.conf and /etc/chorus/playlist, then
             systemctl enable --now chorus-lead
  follower:  cp /etc/chorus/follow-example.conf /etc/chorus/follow-kitchen.conf, edit it
             (LEADER, NAME), copy the leader's /etc/chorus/home.key here, then
             systemctl enable --now chorus-follow@kitchen
TXT
