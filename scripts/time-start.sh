#!/usr/bin/env bash
# Times a follower's start through PulseAudio, five launches in a row against one leader:
# launch -> first clock exchange -> first content presented (from the follower's --capture).
# Needs a release build (swift build -c release --product chorus; CHORUS=PATH times another
# binary) and the sync benchmark's click train (made by scripts/bench-sync.sh); starts and
# stops a private PulseAudio server.
#   scripts/time-start.sh [LAUNCHES]
set -euo pipefail
cd "$(dirname "$0")/.."
launches=${1:-5}
bin=${CHORUS:-$(swift build -c release --show-bin-path)/chorus}
media=.build-runtime/bench-sync/clicks-125ms-100s.wav
[ -f "$media" ] || { echo "no $media: run scripts/bench-sync.sh once first" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill "$leader" 2>/dev/null || true; scripts/pulse.sh stop "$work/pulse" >/dev/null 2>&1 || true; rm -rf "$work" 2>/dev/null || true' EXIT
eval "$(scripts/pulse.sh start "$work/pulse")" >/dev/null
"$bin" lead "$media" --listen 127.0.0.1:47800 --quiet --output null > "$work/lead.log" 2>&1 &
leader=$!
# The leader's item starts 0.8 s after it launches; join it playing.
sleep 1.5
for i in $(seq 1 "$launches"); do
    launch=$(python3 - "$bin" "$work" <<'PY'
import subprocess, sys, time
bin, work = sys.argv[1], sys.argv[2]
launch = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
follower = subprocess.Popen([bin, "follow", "127.0.0.1:47800", "--output", "alsa:pulse",
                             "--capture", work + "/f.cap", "--clock-log", work + "/f.clock.csv"],
                            stderr=open(work + "/f.log", "w"))
time.sleep(2.0)
follower.terminate()
follower.wait()
print(launch)
PY
)
    first=$(head -1 "$work/f.cap" | awk '{print $1}')
    exchange=$(sed -n 2p "$work/f.clock.csv" | cut -d, -f1)
    echo "launch $i: first clock exchange +$(( (exchange - launch) / 1000000 )) ms, first content presented +$(( (first - launch) / 1000000 )) ms"
done
