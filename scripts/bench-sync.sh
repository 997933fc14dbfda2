#!/usr/bin/env bash
# Runs only the group-sync benchmark, `chorus-bench sync`, passing its arguments through:
#   scripts/bench-sync.sh                                   every scenario, default lengths
#   scripts/bench-sync.sh --scenario clean --seconds 300    the 5-minute steady-play check
#   scripts/bench-sync.sh --scenario snapcast               Snapcast side by side only
# Builds chorus and chorus-bench in release mode. The Snapcast comparison needs a PulseAudio
# server: when none is running, a private one is started (scripts/pulse.sh) and stopped after.
# Environment: SWIFT (default swift), BENCH_SCRATCH (a --scratch-path for the builds),
# RUNTIME (where media, captures and logs go; default .build-runtime).
set -euo pipefail
cd "$(dirname "$0")/.."

swift=${SWIFT:-swift}
scratch=()
[ -n "${BENCH_SCRATCH:-}" ] && scratch=(--scratch-path "$BENCH_SCRATCH")
runtime=${RUNTIME:-$PWD/.build-runtime}
mkdir -p "$runtime"

echo "== building (release) =="
"$swift" build -c release "${scratch[@]}" --product chorus-bench 2>&1 | tail -1
"$swift" build -c release "${scratch[@]}" --product chorus 2>&1 | tail -1
"$swift" build -c release "${scratch[@]}" --product chorus-sim 2>&1 | tail -1
bin=$("$swift" build -c release "${scratch[@]}" --show-bin-path)

started_pulse=
if ! pactl info >/dev/null 2>&1; then
    eval "$(scripts/pulse.sh start "$runtime/pulse-bench-sync")"
    started_pulse=1
fi
status=0
"$bin/chorus-bench" sync --chorus "$bin/chorus-sim" --work "$runtime/bench-sync" "$@" || status=$?
[ -n "$started_pulse" ] && scripts/pulse.sh stop "$runtime/pulse-bench-sync"
exit $status
