# Chorus: two commands set everything up on a fresh Debian 12 machine with Swift.
#   make demo   installs what is missing, builds in release mode, plays the demo
#   make test   installs what the tests need and runs them all
# Other targets: build, bench, clean.

SWIFT        ?= swift
RUNTIME      ?= $(CURDIR)/.build-runtime
# Each target runs its own PulseAudio daemon, so a demo and a test run side by side do not
# stop each other's.
PULSE_DIR     = $(RUNTIME)/pulse-$@
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Build: FFmpeg's libraries, ALSA, Opus, PulseAudio's client library (the server's own latency
# figures for a stream through ALSA's pulse plugin). Run: ffmpeg (test media and benchmarks),
# PulseAudio with ALSA's pulse plugin (a real, clocked device where there is no sound card),
# libfaketime (a node on a clock an outside tool moves).
APT_PACKAGES := pkg-config libavformat-dev libavcodec-dev libavutil-dev libswresample-dev \
                libasound2-dev libopus-dev libpulse-dev ffmpeg pulseaudio pulseaudio-utils \
                libasound2-plugins alsa-utils faketime

# The benchmarks also run Snapcast side by side.
BENCH_PACKAGES := snapserver snapclient

.PHONY: all build deps bench-deps demo test bench clean

all: build

deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "Installing: $$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

bench-deps: deps
	@missing=$$(for p in $(BENCH_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "Installing: $$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

build: deps
	$(SWIFT) build -c release

# A leader and two followers in sync on this machine, playing a tune the project generates
# (see scripts/demo.sh). The leader plays on the default sound device; with no sound card, a
# private PulseAudio daemon with a null sink stands in for one, so the same ALSA path runs.
demo: build
	@mkdir -p $(RUNTIME)
	@scripts/make-tune.sh $(RUNTIME)/tune.flac
	@if scripts/has-sound-card.sh; then \
		scripts/demo.sh $(RUNTIME)/tune.flac $(RUNTIME)/demo; \
	else \
		echo "No sound card: the leader plays into a private PulseAudio null sink through ALSA."; \
		eval "$$(scripts/pulse.sh start $(PULSE_DIR))"; \
		scripts/demo.sh $(RUNTIME)/tune.flac $(RUNTIME)/demo; status=$$?; \
		scripts/pulse.sh stop $(PULSE_DIR); exit $$status; \
	fi

# Every test, the ALSA ones against a private PulseAudio daemon this target starts and stops.
test: deps
	@mkdir -p $(RUNTIME)
	@eval "$$(scripts/pulse.sh start $(PULSE_DIR))"; \
	CHORUS_PULSE=1 $(SWIFT) test; status=$$?; \
	scripts/pulse.sh stop $(PULSE_DIR); exit $$status

bench: build bench-deps
	@mkdir -p $(RUNTIME)
	@eval "$$(scripts/pulse.sh start $(PULSE_DIR))"; \
	scripts/bench.sh; status=$$?; \
	scripts/pulse.sh stop $(PULSE_DIR); exit $$status

clean:
	rm -rf .build $(RUNTIME)
