#!/usr/bin/env bash
# Chorus and Snapcast through one PulseAudio server at the same moments, while the machine is
# loaded: a Chorus leader (null device) with two followers, snapserver with two snapclients,
# and `chorus-bench load` beside them. Each client plays into a null sink of its own, whose
# monitor is recorded; a tone plays throughout, so a 10 ms block of a recording far below the
# tone's level is a moment that client was not heard. The server's main thread's time on the
# run queue (runnable, not running) is read from /proc before and after.
#
# Run one after the other, the two systems never meet the same moment of load; side by side,
# whatever the load does to the server, it does to both.
#
# Needs `make bench-deps` and release builds of chorus and chorus-bench
# (swift build -c release --product chorus --product chorus-bench). Starts and stops a private
# PulseAudio server.
#   scripts/loaded-side-by-side.sh [SECONDS] [RUNS] [--no-load]
# LOAD_ARGS passes options to `chorus-bench load` (for example LOAD_ARGS="--busy 1").
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
runs=${2:-1}
load=1
[ "${3:-}" = "--no-load" ] && load=0
bindir=$(swift build -c release --show-bin-path)
bin=${CHORUS:-$bindir/chorus}
bench=$bindir/chorus-bench
for tool in "$bin" "$bench"; do [ -x "$tool" ] || { echo "no $tool: build it first (see the comment at the top)" >&2; exit 1; }; done
command -v snapserver >/dev/null && command -v snapclient >/dev/null || { echo "no snapserver/snapclient: make bench-deps" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    scripts/pulse.sh stop "$work/pulse" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
eval "$(scripts/pulse.sh start "$work/pulse")" >/dev/null
clients=(chorus1 chorus2 snapcast1 snapcast2)
for client in "${clients[@]}"; do
    pactl load-module module-null-sink sink_name=side_$client rate=48000 channels=2 >/dev/null
done
server=$(cat "$work/pulse/pid" 2>/dev/null || pgrep -n -x pulseaudio)

# A tone well inside 16 bits, the same for both systems.
ffmpeg -hide_banner -loglevel error -f lavfi -i "sine=f=440:d=$((seconds + 60))" -ac 2 -ar 48000 "$work/tone.wav"
ffmpeg -hide_banner -loglevel error -i "$work/tone.wav" -f s16le "$work/tone.raw"
mkdir -p "$work/snapdata"
cat > "$work/snapserver.conf" <<EOF
[server]
datadir = $work/snapdata
[http]
enabled = false
[tcp]
enabled = false
[stream]
bind_to_address = 127.0.0.1
port = 47902
source = file://$work/tone.raw?name=side&sampleformat=48000:16:2&codec=pcm
[logging]
sink = stderr
filter = *:notice
EOF

queue_wait() { awk '{printf "%.3f", $2 / 1e9}' "/proc/$server/task/$server/schedstat"; }

echo "seconds recorded per run: $seconds; load: $([ $load = 1 ] && echo "chorus-bench load ${LOAD_ARGS:-(2 busy threads, 50 MB churn)}" || echo none)"
printf '%-4s %-10s %-11s %-10s %-24s %s\n' run client "recorded s" "silent s" "--stats underruns/restarts" "server main thread queued s"
for run in $(seq 1 "$runs"); do
    pids=()
    snapserver -c "$work/snapserver.conf" > "$work/snapserver.log" 2>&1 & pids+=($!)
    (sleep $((seconds + 20)); echo q) | "$bin" lead "$work/tone.wav" --listen 127.0.0.1:47900 --quiet --commands --output null \
        > "$work/leader.log" 2>&1 & pids+=($!)
    sleep 2
    # shellcheck disable=SC2086
    if [ $load = 1 ]; then "$bench" load ${LOAD_ARGS:-} & pids+=($!); fi
    before=$(queue_wait)
    for i in 1 2; do
        PULSE_SINK=side_snapcast$i snapclient -h 127.0.0.1 -p 47902 --hostID side$i -i "$i" --player alsa -s pulse --logsink stderr \
            > "$work/snap$i.log" 2>&1 & pids+=($!)
        PULSE_SINK=side_chorus$i "$bin" follow 127.0.0.1:47900 --name f$i --stats --output alsa:pulse \
            > "$work/f$i.log" 2>&1 & pids+=($!)
    done
    # Both systems start within a few seconds; record from then on.
    sleep 4
    recorders=()
    for client in "${clients[@]}"; do
        parec -d "side_$client.monitor" --raw --format=s16le --rate=48000 --channels=2 --latency-msec=20 > "$work/$client.raw" &
        recorders+=($!)
    done
    sleep "$seconds"
    kill "${recorders[@]}" 2>/dev/null || true
    after=$(queue_wait)
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    queued=$(awk -v a="$before" -v b="$after" 'BEGIN { printf "%.1f", b - a }')
    for client in "${clients[@]}"; do
        stats=-
        case $client in chorus*) stats=$(grep -o 'underruns [0-9]* restarts [0-9]*' "$work/f${client#chorus}.log" | tail -1 | awk '{print $2 "/" $4}');; esac
        python3 - "$work/$client.raw" "$run" "$client" "${stats:--}" "$queued" <<'PY'
import array, sys
path, run, client, stats, queued = sys.argv[1:]
samples = array.array('h', open(path, 'rb').read())
block = 480 * 2  # 10 ms of 48 kHz stereo
peaks = [max(map(abs, samples[i:i + block])) for i in range(0, len(samples) - block + 1, block)]
# The tone peaks at 1/8 of full scale (4096); a block under a twentieth of that was not heard.
tone_peak = 4096
silent = sum(1 for p in peaks if p < tone_peak / 20)
print(f"{run:<4} {client:<10} {len(peaks) / 100:<11.1f} {silent / 100:<10.2f} {stats:<24} {queued}")
PY
    done
done
echo "recorded: seconds of the sink's monitor that reached its recorder in $seconds s (a starved server delivers less);"
echo "silent: 10 ms blocks far below the tone's level; --stats: a Chorus follower's counts at the end"
