# Chorus: two commands set everything up on a fresh Debian 12 machine with Swift.
#   make demo   installs what is missing, builds in release mode, plays the demo
#   make test   installs what the tests need and runs them all
# Other targets: build, test-tsan, bench, clean.

SWIFT        ?= swift
RUNTIME      ?= $(CURDIR)/.build-runtime
# Each target runs its own PulseAudio daemon, so a demo and a test run side by side do not
# stop each other's.
PULSE_DIR     = $(RUNTIME)/pulse-$@
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Build: FFmpeg's libraries (libswscale for pictures a window cannot show as decoded), ALSA,
# PulseAudio's client library (the server's own latency figures for a stream through ALSA's
# pulse plugin), SDL2 (the video window), Rubber Band (rates that keep their pitch). Run: ffmpeg (test media and benchmarks), PulseAudio
# with ALSA's pulse plugin (a real, clocked device where there is no sound card), Xvfb (a
# real X display where there is no screen), libfaketime (a node on a clock an outside tool
# moves).
APT_PACKAGES := pkg-config libavformat-dev libavcodec-dev libavutil-dev libswresample-dev \
                libswscale-dev libsdl2-dev libsdl2-ttf-dev fonts-dejavu-core libasound2-dev libpulse-dev librubberband-dev libssl-dev ffmpeg pulseaudio \
                pulseaudio-utils libasound2-plugins alsa-utils faketime xvfb openssl python3

# The benchmarks also run Snapcast and mpv side by side.
BENCH_PACKAGES := snapserver snapclient mpv

.PHONY: all build deps bench-deps demo test test-tsan build-tsan bench clean example-player

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

# A leader and two followers in sync on this machine, each in its own window, playing a
# clip the project generates (see scripts/demo.sh). The leader plays on the default sound
# device; with no sound card, a private PulseAudio daemon with a null sink stands in for
# one, so the same ALSA path runs; with no display, a private Xvfb stands in for a screen.
demo: build
	@mkdir -p $(RUNTIME)
	@scripts/make-tune.sh $(RUNTIME)/tune.flac
	@scripts/make-clip.sh $(RUNTIME)/tune.flac $(RUNTIME)/clip.mp4
	@if [ -z "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ]; then \
		echo "No display: the windows open on a private Xvfb."; \
		eval "$$(scripts/xvfb.sh start $(PULSE_DIR))"; \
	fi; \
	if scripts/has-sound-card.sh; then \
		scripts/demo.sh $(RUNTIME)/clip.mp4 $(RUNTIME)/demo; status=$$?; \
	else \
		echo "No sound card: the leader plays into a private PulseAudio null sink through ALSA."; \
		eval "$$(scripts/pulse.sh start $(PULSE_DIR))"; \
		scripts/demo.sh $(RUNTIME)/clip.mp4 $(RUNTIME)/demo; status=$$?; \
		scripts/pulse.sh stop $(PULSE_DIR); \
	fi; \
	scripts/xvfb.sh stop $(PULSE_DIR); exit $$status

# Every test: the ALSA ones against a private PulseAudio daemon, the windows on a private X
# display (Xvfb), both started and stopped by this target.
# The walkthrough's simple player, written against the library: `make example-player FILE=song.flac`
# (keys, a line each: p play/pause, f fast forward, r rewind, s SECONDS seek, q quit).
example-player:
	@test -n "$(FILE)" || { echo "usage: make example-player FILE=path-or-url" >&2; exit 2; }
	$(SWIFT) run -c release example-player "$(FILE)"

# Run after the rest, not beside it: the guide's code and its conformance suite play many
# short items for real, and beside them the tests that measure a leader's and its followers'
# sound and pictures to the millisecond were starved on two cores. Among themselves, as many
# at once as the rest: 10 s at five at once in CI, where one at a time took 17 s.
LATER_TESTS := GuideCodeTests GuideConformanceTests

# Run by themselves, after the rest: pictures judged against the sound that times them, to
# the picture (a follower's against its leader's, forwards and backwards; a player's going
# backwards across keyframes, and across a gapless join), and a sound server's stream that
# must be replaced within 300 ms. In CI runs with the sanitizer's build beside the tests,
# three or four at once, each failed once or twice in ten: a follower's pictures 150 to 510 ms
# off its group's timeline, a group decoded backwards 340 ms late, a call to the server held
# 790 ms; no load made here starved them (busy loops, encodes, writes, the sanitizer's build;
# docs/test-time.md). Three at once here, after the rest, a group decoded backwards was still
# shown 17 ms late in one CI run: so one at a time, 27 s. A group joining two shown video
# items (a layer on each player, the room's screen read every 3 ms against the join it heard)
# joins them: six at once, its room's sound broke off 1.6 s into the first item in one run of
# eight (docs/test-time.md). So does a move between an HLS item's variants while its pictures
# are shown, whose new sound must follow on within 0.1 ms with no wait: six at once, the
# player waited once in a CI rehearsal.
ALONE_TESTS := aFollowersPicturesAreTheGroupsFromTheFirst aFollowersPicturesGoBackwardsWithTheGroup picturesPlayBackwards \
               GaplessPicturesTests aStreamTheServerStopsServingIsReplacedWithoutBlockingTheRenderThread \
               aGroupJoinsShownVideoItemsAtTheSample aMoveWithPicturesHasNoBreak

# Test cases run at once. Each runs on a thread of its own (`OwnThreadTrait`), mostly waiting
# on real time (the cores are a third busy), so the bound is what the two cores carry in a
# burst: with three, no test that holds a sound or a picture to the millisecond was starved.
# Four at once passed on an idle machine (162 to 171 s against 210 s) and in four CI
# rehearsals in a row, but the fifth, with the sanitizer's build beside it, put a follower's
# pictures 150 to 420 ms off the group's timeline in two tests at once (docs/test-time.md).
# Six at once put a room keeping its pitch 86 ms off; without a bound the machine thrashed.
# Now that the checks held to the picture run one at a time after the rest, and the
# sanitizer's build comes after the tests, five: 130 s where four took 164 s and three 207 s,
# the cases' own time (643 s) divided by five with no tail, and the process using 1.3 of the
# two cores (docs/test-time.md, "Five at once"). Once the six simulated rooms' test stopped
# spending most of its CPU reading what they heard (16 s of CPU, now 8.5), six: 117 s where
# five took 135 s, the cases slowed by 4 %.
# The sanitizer slows every thread several times: two there.
TEST_WIDTH := 6
TSAN_TEST_WIDTH := 2

# What the tests run: the test bundle and the programs they start. The benchmarks are left to
# `make bench` (and to `.ci/run`'s sanitizer build, which compiles them), a tenth of the build.
TEST_PRODUCTS := ChorusPackageTests chorus chorus-sim example-player

test: deps
	@mkdir -p $(RUNTIME)
	@for product in $(TEST_PRODUCTS); do $(SWIFT) build --product $$product || exit 1; done
	@eval "$$(scripts/pulse.sh start $(PULSE_DIR))"; \
	eval "$$(scripts/xvfb.sh start $(PULSE_DIR))"; \
	export CHORUS_PULSE=1 SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(TEST_WIDTH); \
	$(SWIFT) test --skip-build $(LATER_TESTS:%=--skip %) $(ALONE_TESTS:%=--skip %); status=$$?; \
	SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=1 $(SWIFT) test --skip-build --no-parallel $(ALONE_TESTS:%=--filter %) || status=1; \
	$(SWIFT) test --skip-build $(LATER_TESTS:%=--filter %) || status=1; \
	scripts/xvfb.sh stop $(PULSE_DIR); \
	scripts/pulse.sh stop $(PULSE_DIR); exit $$status

# The tests that hold no real-time bound, under ThreadSanitizer, in a build directory of
# their own. The real-time checks inside those that run here (two rooms within a
# millisecond, a room that plays across a join, a sound that follows on within 0.1 ms) are
# intermittent known issues under the sanitizer (`RealTimeChecks.hold`): seen there, a room
# 1.2 ms off a station's leader, a room that began in the second item, a variant's sound
# 10 ms late; the code still runs, and any race in it is still reported. Skipped, because
# the sanitizer slows every thread 5 to 15 times and they measure time throughout: ALSA's
# timing suite, the repeating timer's tick count, two clock convergences over real sockets,
# the session tests that measure a leader and followers (their sound or their pictures)
# against each other to a millisecond, and the group command tests (a leader and followers
# as processes, each slowed by the sanitizer: on a loaded machine a leader took longer than
# the tests' 40 s to start playing; and one runs under libfaketime, which does not run
# under the sanitizer).
# The windows run on a private Xvfb here too (their display thread is the one to watch), but
# for the check that a picture reaches the screen within two refreshes of its sound, and the
# one that a picture is taken for its exact due time 300 ms after the window's loop starts, and the
# look at the pictures' timeline in the 70 ms between an item's end being written and heard
# (a loaded run under the sanitizer found no monitor tick inside it): times the sanitizer's
# slowness stretches. So is a scheduled start's lead of one second, which a
# loaded run under the sanitizer outlasted before the player had its device's timing (in
# both tests that schedule one and then change its rate).
# Skipped because they are single-threaded simulations, so the sanitizer has nothing to see:
# the clock estimator's, the soft floor's and the recorded joins' (long ones), and the render
# loop's on a simulated device, plain and through the pitch stage (its render thread runs
# here, in RenderThreadTests). Skipped
# because the sanitizer has an allocator of its own that the test's counter cannot stand in
# for: the render path's allocation count. Skipped because its sections wait as an app
# would, in real time, which the sanitizer stretches: the guide's code run as a process (the
# conformance suite runs the same paths in the test process).
# Skipped because it holds a relay's wake-ups to 3 ms of its timer's ticks over real
# sockets, which the sanitizer's slowness spreads: the ticking relay's delivery (it runs in
# `make test`; the relay's threads still run under the sanitizer in its other tests).
# Skipped because it holds each picture an application pulls to 41 ms of when it is due,
# which the sanitizer's slowness breaks when other suites decode beside it (seen: 61 to
# 244 ms): an application's pull (its pull path still runs under the sanitizer in the
# other video output tests). Skipped for the same reason: the two that hold a queue's
# pictures to the refresh at which the next item's sound joins, alone and in a group
# (seen under the sanitizer: the item before still shown 2.9 ms after the join, a picture
# 122 ms late); the queue's joins still run under it in the gapless sound tests. Skipped
# because it measures the pitch heard through PulseAudio while a start at 2x keeps it in real
# time, which a render thread slowed by the sanitizer does not keep up with (heard at 522 Hz
# for 440): the pitch kept on a real device (the pitch stage runs under the sanitizer in the
# other pitch tests).
TSAN_SCRATCH := .build-tsan
TSAN_TESTS := \
	--filter MediaClockTests --filter GroupSyncTests --filter MediaServerTests \
	--filter MediaPipelineTests --filter AVPlaybackTests --filter ChorusCLITests --filter ChorusSessionTests \
	--filter VideoDisplayTests --skip windowShowsThePicturesInStep --skip aDisplayWithoutRefreshRateShowsAFrameAtItsDueTime \
	--skip timelineMovesUntilTheEndIsHeard \
	--skip aRateSetBeforeAScheduledStartKeepsItsInstant --skip aScheduledStartWithoutAMasterClockKeepsThePitchThroughItsSpeeds \
	--skip RepeatingTimerTests --skip AudioRendererTests --skip FollowModeTests \
	--skip ALSAOutputTests --skip GroupCommandTests --skip aLeaderAndFollowersOnSkewedClocksPlayInStep --skip aGroupPlaysBackwardsInStep \
	--skip leaderAndFollowerCoresTalkOverRealSockets --skip followerConvergesThroughALossyRelay \
	--skip RenderAllocationTests --skip aFollowersPicturesAreTheGroupsFromTheFirst --skip aFollowersPicturesGoBackwardsWithTheGroup \
	--skip GuideCodeTests --skip aTickingRelayDeliversOnItsTicks \
	--skip ClockEstimatorTests --skip SoftFloorFitTests --skip RecordedJoinTests --skip FollowedPitchTests --skip pullsPicturesDue \
	--skip GaplessPicturesTests --skip aGroupJoinsShownVideoItemsAtTheSample --skip aScheduledStartOnARealDeviceKeepsThePitch
# Every process the tests start (the chorus binary too) writes its reports here rather than
# to a standard error a test may swallow; any report fails the run, and halt_on_error stops
# the process that raced at its first.
TSAN_REPORTS = $(RUNTIME)/tsan-reports
# Only what the tests run is built: the test bundle and the programs they start.
TSAN_PRODUCTS := $(TEST_PRODUCTS)

# The sanitizer's build alone, and the benchmarks with it, so that their code is compiled
# too (`.ci/run` makes it beside `make test`, at idle priority).
build-tsan: deps
	@for product in $(TSAN_PRODUCTS) chorus-bench; do \
		$(SWIFT) build --sanitize=thread --scratch-path $(TSAN_SCRATCH) --product $$product || exit 1; \
	done

test-tsan: deps
	@mkdir -p $(RUNTIME)
	@rm -rf $(TSAN_REPORTS) && mkdir -p $(TSAN_REPORTS)
	@eval "$$(scripts/pulse.sh start $(PULSE_DIR))"; \
	eval "$$(scripts/xvfb.sh start $(PULSE_DIR))"; \
	status=0; for product in $(TSAN_PRODUCTS); do \
		$(SWIFT) build --sanitize=thread --scratch-path $(TSAN_SCRATCH) --product $$product || status=1; \
	done; \
	[ $$status -ne 0 ] || TSAN_OPTIONS="halt_on_error=1 log_path=$(TSAN_REPORTS)/report" CHORUS_PULSE=1 \
		SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(TSAN_TEST_WIDTH) \
		$(SWIFT) test --skip-build --sanitize=thread --scratch-path $(TSAN_SCRATCH) $(TSAN_TESTS) || status=1; \
	scripts/xvfb.sh stop $(PULSE_DIR); \
	scripts/pulse.sh stop $(PULSE_DIR); \
	if ls $(TSAN_REPORTS)/report.* >/dev/null 2>&1; then \
		cat $(TSAN_REPORTS)/report.*; echo "ThreadSanitizer reported a race: see above." >&2; exit 1; \
	fi; \
	exit $$status

bench: build bench-deps
	@mkdir -p $(RUNTIME)
	@eval "$$(scripts/pulse.sh start $(PULSE_DIR))"; \
	if [ -z "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ]; then eval "$$(scripts/xvfb.sh start $(PULSE_DIR))"; fi; \
	scripts/bench.sh; status=$$?; \
	scripts/xvfb.sh stop $(PULSE_DIR); \
	scripts/pulse.sh stop $(PULSE_DIR); exit $$status

clean:
	rm -rf .build $(TSAN_SCRATCH) $(RUNTIME)
