#!/usr/bin/env bash
# A private PulseAudio daemon with a null sink, so ALSA's `default` and `pulse` devices are
# real, clocked devices on a machine with no sound card.
#
#   scripts/pulse.sh start DIR   starts it (idempotent) and prints the environment to use
#   scripts/pulse.sh stop DIR    stops it
#
# Clients find it through PULSE_SERVER and PULSE_RUNTIME_PATH; ALSA's pulse hook then makes
# `default` go to it. The sink is the daemon's default, so anything played is consumed in
# real time by the null sink's clock and can be recorded from its monitor source.
set -euo pipefail
cmd=${1:?start|stop}
dir=$(mkdir -p "${2:?runtime dir}" && cd "$2" && pwd)
export PULSE_RUNTIME_PATH="$dir" PULSE_STATE_PATH="$dir" XDG_RUNTIME_DIR="$dir" HOME="${HOME:-$dir}"
export PULSE_SERVER="unix:$dir/native"

case "$cmd" in
start)
    if ! pactl info >/dev/null 2>&1; then
        # -n: no default configuration (it would look for real cards).
        # exit-idle-time -1: stay up between tests.
        # null sink at 48 kHz: a common device rate, so most test media need no resampling
        # in the server and timing is what the sink's clock says.
        pulseaudio -n --daemonize=yes --exit-idle-time=-1 --use-pid-file=yes \
            --log-target=file:"$dir/pulse.log" \
            -L "module-native-protocol-unix socket=$dir/native auth-anonymous=1" \
            -L "module-null-sink sink_name=chorus_null rate=48000 channels=2 sink_properties=device.description=Chorus-null" \
            -L "module-always-sink" 2>>"$dir/pulse.log"
        for _ in $(seq 50); do pactl info >/dev/null 2>&1 && break; sleep 0.1; done
        pactl set-default-sink chorus_null
        # An idle null sink holds a newly connected stream's first writes for up to a second
        # while it wakes. A silent stream kept connected keeps it awake, so a player's start
        # time is what its timing says. It adds only zeros to the mix.
        nohup pacat --playback --raw --format=s16le --rate=48000 --channels=2 --latency-msec=20 \
            --client-name=chorus-keepawake /dev/zero >/dev/null 2>&1 &
        echo $! >"$dir/keepawake.pid"
    fi
    pactl info >/dev/null
    echo "export PULSE_SERVER=$PULSE_SERVER PULSE_RUNTIME_PATH=$dir XDG_RUNTIME_DIR=$dir"
    ;;
stop)
    [ -f "$dir/keepawake.pid" ] && kill "$(cat "$dir/keepawake.pid")" 2>/dev/null || true
    rm -f "$dir/keepawake.pid"
    pactl exit >/dev/null 2>&1 || true
    ;;
*)
    echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
