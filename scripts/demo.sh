#!/usr/bin/env bash
# The demo: a leader and two followers in sync on this machine, each with its own window.
#
# The leader plays the clip (a test pattern over the tune) on the default sound device
# (ALSA) and in a window; the followers' windows stand beside it. The followers stand for two
# other rooms: each runs on a simulated clock of its own (seconds off, ±150 ppm) with a
# simulated sound card whose crystal drifts (±80 ppm), and prints a line a second: its
# clock offset and rate against the leader, how far its output is from the group's timeline,
# and the correction it applies. At the end the captured presentation times of all three are
# compared sample by sample, and the two rooms' against each other, and the pictures each
# window showed: against their sound, and screen against screen.
set -euo pipefail
chorus=${CHORUS:-.build/release/chorus}
# The followers stand for other machines: chorus-sim is the same command line with
# --clock-offset and --clock-skew, which put a node on a clock of its own.
chorus_sim=${CHORUS_SIM:-.build/release/chorus-sim}
tune=${1:?clip or tune file}
runtime=${2:?runtime dir}
port=${DEMO_PORT:-7790}
mkdir -p "$runtime"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# Three 640x360 windows in a row (the third below on a narrow screen).
echo "Leader: playing $(basename "$tune") on alsa:default and in a window, group port $port"
"$chorus" lead --listen "127.0.0.1:$port" --output alsa:default --capture "$runtime/leader.cap" \
    --video window --geometry 640x360+0+0 "$tune" &
leader=$!
sleep 0.5
"$chorus_sim" follow "127.0.0.1:$port" --name kitchen --output null:drift=80 --clock-offset=2.5 --clock-skew=150 \
    --video window --geometry 640x360+640+0 --capture "$runtime/kitchen.cap" --stats 2> >(sed -u 's/^chorus:/kitchen:/' >&2) &
pids+=($!)
"$chorus_sim" follow "127.0.0.1:$port" --name bedroom --output null:drift=-60 --clock-offset=-4 --clock-skew=-120 \
    --video window --geometry 640x360+1280+0 --capture "$runtime/bedroom.cap" --stats 2> >(sed -u 's/^chorus:/bedroom:/' >&2) &
pids+=($!)
wait "$leader"
cleanup
pids=()
"$chorus" compare "$runtime/leader.cap" "$runtime/kitchen.cap" "$runtime/bedroom.cap"
# The leader's times come from its sound server's timing reports (tens of µs of wander
# through PulseAudio); the two rooms' null devices report exactly, so against each other
# they show the sync alone.
echo "The two rooms against each other:"
"$chorus" compare "$runtime/kitchen.cap" "$runtime/bedroom.cap"
