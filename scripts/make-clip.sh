#!/usr/bin/env bash
# Writes the demo clip: FFmpeg's moving test pattern (with a frame counter and a sweeping
# hand, so frame sync shows at a glance) over the demo tune, H.264 and AAC in MP4.
set -euo pipefail
tune=${1:?tune path}
out=${2:?output path}
[ -s "$out" ] && exit 0
seconds=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$tune")
ffmpeg -v error -y -f lavfi -i "testsrc2=size=640x360:rate=30:duration=$seconds" -i "$tune" \
    -c:v libx264 -preset veryfast -pix_fmt yuv420p -g 30 -c:a aac -b:a 160k -shortest "$out"
