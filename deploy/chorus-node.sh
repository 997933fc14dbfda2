#!/bin/sh
# Starts a Chorus group node from the settings systemd passes in the environment (see
# lead.conf and follow.conf). Installed as /usr/local/lib/chorus/chorus-node.
set -eu
role=${1:?lead or follow}
set --
[ -n "${GROUP:-}" ] && set -- "$@" --group "$GROUP"
[ -n "${KEY_FILE:-}" ] && set -- "$@" --key-file "$KEY_FILE"
[ -n "${OUTPUT:-}" ] && set -- "$@" --output "$OUTPUT"
case "$role" in
lead)
    [ -n "${LISTEN:-}" ] && set -- "$@" --listen "$LISTEN"
    playlist=${PLAYLIST:-/etc/chorus/playlist}
    [ -r "$playlist" ] || { echo "chorus-node: no playlist at $playlist" >&2; exit 1; }
    # One path or URL per line; blank lines and # comments are skipped. Split on newlines
    # only, with globbing off, so names with spaces or * pass through whole.
    set -f
    old_ifs=$IFS
    IFS='
'
    for item in $(grep -v -e '^[[:space:]]*$' -e '^[[:space:]]*#' "$playlist"); do set -- "$@" "$item"; done
    IFS=$old_ifs
    exec /usr/local/bin/chorus lead --quiet --verbose "$@"
    ;;
follow)
    [ -n "${LATENCY_OFFSET:-}" ] && set -- "$@" --latency-offset "$LATENCY_OFFSET"
    [ -n "${NAME:-}" ] && set -- "$@" --name "$NAME"
    exec /usr/local/bin/chorus follow "${LEADER:?set LEADER=ADDR:PORT}" "$@"
    ;;
*)
    echo "usage: chorus-node lead|follow" >&2; exit 2 ;;
esac
