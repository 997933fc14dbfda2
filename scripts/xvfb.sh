#!/usr/bin/env bash
# A private X display (Xvfb), so video windows are real windows on a machine with no screen,
# as the private PulseAudio daemon stands in for a sound card.
#
#   scripts/xvfb.sh start DIR   starts it (idempotent) and prints the environment to use
#   scripts/xvfb.sh stop DIR    stops it
set -euo pipefail
cmd=${1:?start|stop}
dir=$(mkdir -p "${2:?runtime dir}" && cd "$2" && pwd)

case "$cmd" in
start)
    if [ -f "$dir/xvfb.pid" ] && kill -0 "$(cat "$dir/xvfb.pid")" 2>/dev/null; then
        echo "export DISPLAY=$(cat "$dir/xvfb.display")"
        exit 0
    fi
    # The first display number nobody uses (a lock file or a socket marks one in use).
    for n in $(seq 90 199); do
        [ -e "/tmp/.X$n-lock" ] || [ -e "/tmp/.X11-unix/X$n" ] || break
    done
    # 1920x1080 at 24 bits: room for two 960x540 windows side by side (a group's screens),
    # and the depth SDL's renderers expect.
    nohup Xvfb ":$n" -screen 0 1920x1080x24 -nolisten tcp -noreset >"$dir/xvfb.log" 2>&1 &
    echo $! >"$dir/xvfb.pid"
    echo ":$n" >"$dir/xvfb.display"
    for _ in $(seq 100); do [ -e "/tmp/.X11-unix/X$n" ] && break; sleep 0.05; done
    [ -e "/tmp/.X11-unix/X$n" ] || { echo "Xvfb did not start: $(tail -3 "$dir/xvfb.log")" >&2; exit 1; }
    echo "export DISPLAY=:$n"
    ;;
stop)
    [ -f "$dir/xvfb.pid" ] && kill "$(cat "$dir/xvfb.pid")" 2>/dev/null || true
    rm -f "$dir/xvfb.pid" "$dir/xvfb.display"
    ;;
*)
    echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
