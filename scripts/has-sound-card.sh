#!/usr/bin/env bash
# Exits 0 when the machine has a sound card ALSA can play to.
[ -r /proc/asound/cards ] && grep -q '^ *[0-9]' /proc/asound/cards
