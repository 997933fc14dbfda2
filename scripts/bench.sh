#!/usr/bin/env bash
# Chorus's benchmarks, each side by side with a peer; figures are printed, never asserted.
#   decode    CPU per audio second to decode + convert to the device format, vs ffmpeg
#   playback  CPU and peak memory of `chorus play` vs `ffplay` and `mpv` through ALSA, at
#             speed 1 and at 2 with the pitch kept
#   gapless   samples lost or repeated at a queue's joins, `chorus play` vs mpv, per codec
#   first-sound  launch to first sound of an MP3 over HTTP and an HLS playlist, vs mpv and ffplay
#   seek      command to first sound of exact and default seeks while playing, vs mpv; and
#             launch to first sound when starting mid-item, vs mpv and ffplay
#   start     accuracy of setRate(_:time:atHostTime:) on the null device (exact and 200 ppm
#             fast) and through ALSA
#   follow    how closely a player on a master clock holds its timeline, through a start and
#             a rate change, on a drifting null device
#   clock     the clock estimator alone on simulated paths: error against the true leader
#             time from the first exchange on (deterministic, seconds)
#   sync      offsets between a leader and followers (clean, impaired, join, pause/seek, speed), and
#             Snapcast side by side through ALSA into PulseAudio null sinks
#   video     CPU of `chorus play` with a window vs mpv and ffplay; dropped pictures, picture
#             against sound, and two screens of one group against each other
#   reverse   CPU to play a long group of pictures backwards, vs mpv --play-dir=backward, each
#             against ffmpeg decoding the same pictures forwards
#
# Run by `make bench` with a private PulseAudio daemon started and its environment
# exported (ALSA's `default` then plays into its null sink, whose monitor `start` records).
# Builds what it needs, makes its media with ffmpeg, and ends with a summary table, which it
# also writes as Markdown to docs/bench/YYYY-MM-DD.md (the UTC date; a second run that day
# replaces it) and copies to docs/bench/latest.md, with the machine and commit in a header,
# so that published figures come from a run's own record and are never typed by hand.
# Environment: SWIFT (default swift), BENCH_SCRATCH (a --scratch-path for the builds, so a
# developer's own build directory is left alone), RUNTIME (where media goes; else a temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."

swift=${SWIFT:-swift}
scratch=()
[ -n "${BENCH_SCRATCH:-}" ] && scratch=(--scratch-path "$BENCH_SCRATCH")

# Media lengths in seconds: long enough that start-up costs are small next to the work,
# short enough that the whole run stays within a few minutes on two shared cores.
decode_seconds=60
playback_seconds=20
onset_seconds=2
# Runs per start configuration (output x API).
start_runs=20
# Runs of the follow benchmark, and seconds of play each (a start, a change half-way, and a
# settled stretch on either side of it).
follow_runs=3
follow_seconds=8
# Seconds of play per sync scenario (5 of them), and per side of the Snapcast comparison.
# The issue's 5-minute steady-play check is scripts/bench-sync.sh --scenario clean --seconds 300.
sync_seconds=40
sync_capture_seconds=30
# Seconds of each generated video (1080p30 and 720p60) per player, and of the group run.
video_seconds=15

# The run's record: taken before anything runs, so it names the commit that was measured.
run_date=$(date -u +%F)
run_commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$run_commit" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then
    run_commit="$run_commit (with uncommitted changes)"
fi

if ! pactl info >/dev/null 2>&1; then
    echo "bench.sh: no PulseAudio server; run it through 'make bench'" >&2
    exit 1
fi

echo "== building (release) =="
"$swift" build -c release "${scratch[@]}" --product chorus-bench 2>&1 | tail -1
"$swift" build -c release "${scratch[@]}" --product chorus 2>&1 | tail -1
"$swift" build -c release "${scratch[@]}" --product chorus-sim 2>&1 | tail -1
bin=$("$swift" build -c release "${scratch[@]}" --show-bin-path)
bench="$bin/chorus-bench"
chorus="$bin/chorus"
chorus_sim="$bin/chorus-sim"

if [ -n "${RUNTIME:-}" ]; then
    media="$RUNTIME/bench-media"
    mkdir -p "$media"
else
    media=$(mktemp -d)
    trap 'rm -rf "$media"' EXIT
fi
summary="$media/summary.tsv"
: >"$summary"

echo "== making media in $media =="
# A master at 44.1 kHz (the CD rate, so Chorus and ffmpeg's peer run both resample to
# 48 kHz): tones with slow tremolo and vibrato in each channel plus a little noise, so
# the lossy and lossless encoders have real work and nothing compresses to nothing.
master="$media/master-44k.wav"
if [ ! -s "$master" ]; then
    left="0.25*sin(2*PI*220*t)*(1+0.5*sin(2*PI*0.5*t))+0.15*sin(2*PI*331*t+sin(2*PI*3*t))+0.1*sin(2*PI*1760*t)*sin(2*PI*0.25*t)+0.03*(random(0)-0.5)"
    right="0.25*sin(2*PI*277*t)*(1+0.5*sin(2*PI*0.7*t))+0.15*sin(2*PI*415*t+sin(2*PI*2*t))+0.1*sin(2*PI*2637*t)*sin(2*PI*0.3*t)+0.03*(random(1)-0.5)"
    ffmpeg -nostdin -v error -y -f lavfi -i "aevalsrc=$left|$right:s=44100:d=$decode_seconds" -c:a pcm_s16le "$master"
fi
encode() { # NAME ARGS...: encodes the master unless done already
    local out="$media/$1"; shift
    [ -s "$out" ] || ffmpeg -nostdin -v error -y -i "$master" "$@" "$out"
}
encode decode-44k.wav -c:a pcm_s16le
encode decode-44k.mp3 -c:a libmp3lame -b:a 192k
encode decode-44k.m4a -c:a aac -b:a 192k
encode decode-44k.flac -c:a flac
encode decode-44k.ogg -c:a libvorbis -q:a 5
encode decode-48k.opus -c:a libopus -b:a 128k
encode decode-48k.flac -ar 48000 -c:a flac
# Playback: the first seconds of the MP3, the most common thing a player is given.
[ -s "$media/playback.mp3" ] || ffmpeg -nostdin -v error -y -i "$media/decode-44k.mp3" -t "$playback_seconds" -c copy "$media/playback.mp3"
# Start: a 1 kHz tone at full level from the very first sample, at the device rate, so
# item frame 0 is the first loud sample the sink's monitor hears and no resampler smears it.
[ -s "$media/onset.wav" ] || ffmpeg -nostdin -v error -y -f lavfi \
    -i "aevalsrc=0.5*cos(2*PI*1000*t)|0.5*cos(2*PI*1000*t):s=48000:d=$onset_seconds" -c:a pcm_s16le "$media/onset.wav"

echo
started=$SECONDS
(cd "$media" && "$bench" decode --summary "$summary" \
    decode-44k.wav decode-44k.mp3 decode-44k.m4a decode-44k.flac decode-44k.ogg decode-48k.opus decode-48k.flac)
echo "(decode: $((SECONDS - started)) s; media in $media)"
echo

started=$SECONDS
(cd "$media" && "$bench" playback --chorus "$chorus" --repeats 2 --summary "$summary" playback.mp3)
(cd "$media" && "$bench" playback --chorus "$chorus" --repeats 2 --rate 2 --summary "$summary" playback.mp3)
echo "(playback: $((SECONDS - started)) s)"
echo

started=$SECONDS
"$bench" gapless --chorus "$chorus" --summary "$summary"
echo "(gapless: $((SECONDS - started)) s)"
echo

started=$SECONDS
"$bench" first-sound --chorus "$chorus" --summary "$summary"
echo "(first-sound: $((SECONDS - started)) s)"
started=$SECONDS
"$bench" seek --chorus "$chorus" --summary "$summary"
echo "(seek: $((SECONDS - started)) s)"
echo

started=$SECONDS
(cd "$media" && "$bench" start --output null --output null:drift=200 --output alsa:default --api player --api engine \
    --runs "$start_runs" --summary "$summary" onset.wav)
echo "(start: $((SECONDS - started)) s)"
echo

started=$SECONDS
# A tone at the device rate, long enough for every run.
[ -s "$media/follow.wav" ] || ffmpeg -nostdin -v error -y -f lavfi \
    -i "aevalsrc=0.5*sin(2*PI*440*t)|0.5*sin(2*PI*440*t):s=48000:d=$((follow_seconds + 4))" -c:a pcm_s16le "$media/follow.wav"
(cd "$media" && "$bench" follow --output null:drift=-80 --clock-ppm 300 --change-rate 1.5 \
    --runs "$follow_runs" --seconds "$follow_seconds" --summary "$summary" follow.wav)
echo "(follow: $((SECONDS - started)) s)"
echo

started=$SECONDS
"$bench" clock --summary "$summary"
echo "(clock: $((SECONDS - started)) s)"
echo

started=$SECONDS
(cd "$media" && "$bench" sync --chorus "$chorus_sim" --seconds "$sync_seconds" --capture-seconds "$sync_capture_seconds" \
    --work "$media/sync" --summary "$summary")
echo "(sync: $((SECONDS - started)) s)"

# Pictures: CPU beside mpv and ffplay, drops, lip-sync and two screens of one group, in
# windows on the display (a private Xvfb when there is none: `make bench` starts one).
started=$SECONDS
(cd "$media" && "$bench" video --chorus "$chorus" --seconds "$video_seconds" --work-dir "$media/video" --summary "$summary")
echo "(video: $((SECONDS - started)) s)"
echo

started=$SECONDS
"$bench" reverse --summary "$summary"
echo "(reverse: $((SECONDS - started)) s)"
echo

echo "== summary (ratios are chorus / peer; lower is better) =="
{
    printf 'benchmark\tfigure\tvalue\taim\n'
    printf -- '---------\t------\t-----\t---\n'
    cat "$summary"
} | if command -v column >/dev/null; then column -t -s $'\t'; else cat; fi

# The same summary as Markdown, dated, in docs/bench/ (see the header).
record_dir=docs/bench
record="$record_dir/$run_date.md"
mkdir -p "$record_dir"
{
    printf '# Benchmark run of %s\n\n' "$run_date"
    printf -- '- date (UTC): %s\n' "$run_date"
    printf -- '- commit: %s\n' "$run_commit"
    printf -- '- cores (nproc): %s\n' "$(nproc)"
    printf -- '- kernel (uname -r): %s\n' "$(uname -r)"
    printf -- '- command: make bench (scripts/bench.sh)\n\n'
    printf 'Written by scripts/bench.sh; do not edit. Ratios are chorus / peer, lower is better.\n'
    printf 'What each figure measures, and earlier runs: docs/benchmarks.md.\n\n'
    printf '| benchmark | figure | value | aim |\n'
    printf '| --- | --- | --- | --- |\n'
    # A cell's own "|" would end it: escape it.
    sed -e 's/|/\\|/g' "$summary" | awk -F '\t' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }'
} >"$record.tmp"
mv "$record.tmp" "$record"
cp "$record" "$record_dir/latest.md"
echo
echo "(written to $record and $record_dir/latest.md)"
