#!/usr/bin/env python3
"""A UDP path between one follower and its leader, written apart from Chorus's own relay.

Chorus's estimator was tuned on ImpairmentRelay's paths (Tests/ChorusSimulation). This
relay is a second opinion with other habits, so that the figures it gives are not the
project's model grading itself:

- The path is a router in the middle that forwards only on a coarse timer (a 4 ms grid: a
  kernel at HZ=250, a router's forwarding timer), with a link on either side of it. A
  request waits for the router's next wake-up and then crosses the leader's link; a reply
  crosses that link first and then waits for the router. So a reply reaches the router at a
  phase of its own, as it would on a real path, not in step with the tick that sent its
  request. Times are this process's own monotonic clock, with Python's own lateness on top.
- The two directions are unlike. Both have the same 4 ms floor, but the follower's
  requests see exponential queueing (mean 1.5 ms, capped at 20 ms, a long tail), the
  leader's replies uniform queueing (0 to 3 ms). Equal means, unequal shapes.
- Each direction is a FIFO queue: a datagram never overtakes an earlier one.
- Loss comes in bursts (a two-state Gilbert-Elliott model): 1 % in the good state, 60 % in
  the bad one, about 7 % of the time in the bad state, 5 % lost on average.
- Congestion comes in bursts: at random (one every 8 s on average, each direction on its
  own) a standing queue of 15 ms builds and drains over 400 ms.

`--profile ticks` is the other path it knows: the one the ticks issue describes, built here
apart from the project's relay. Each one-way delay is a base of 5 ms plus uniform jitter of
+-2 ms, released at the relay's next 1 ms timer wake-up; 10 % of datagrams are lost each way,
independently; no congestion bursts; a datagram may overtake an earlier one, as independent
jitter allows. `--tick-ms`, `--base-ms`, `--jitter-ms` and `--loss` vary that profile (a
coarser timer, a wider jitter) so that it is not one fixed path.

Usage: netpath.py --listen PORT --to HOST:PORT [--seed N] [--profile netpath|ticks]
                  [--tick-ms T] [--base-ms B] [--jitter-ms J] [--loss P]
The first datagram's sender becomes the follower; replies go back to it. Runs until killed.
Prints a line of counters to standard error every 10 s and on SIGTERM.
"""
import argparse
import heapq
import math
import random
import select
import signal
import socket
import sys
import time

FLOOR_S = 0.004              # each direction's fixed delay
UP_MEAN_S = 0.0015           # follower -> leader: exponential queueing, mean
UP_CAP_S = 0.020             # ... capped here
DOWN_SPAN_S = 0.003          # leader -> follower: uniform queueing over this span
TICK_S = 0.004               # the router's forwarding grid
GOOD_LOSS, BAD_LOSS = 0.01, 0.60
GOOD_TO_BAD, BAD_TO_GOOD = 0.02, 0.25
BURST_EVERY_S = 8.0          # mean time between congestion bursts, per direction
BURST_PEAK_S = 0.015         # standing queue at a burst's start
BURST_LENGTH_S = 0.400       # time for it to drain
# The ticks profile's defaults (milliseconds; the loss a fraction).
TICKS_TICK_MS, TICKS_BASE_MS, TICKS_JITTER_MS, TICKS_LOSS = 1.0, 5.0, 2.0, 0.10


class Direction:
    def __init__(self, name, rng, queueing, tick_first, next_tick, loss=None, bursts=True, fifo=True):
        self.name = name
        self.loss = loss          # None: the bursty two-state model; else independent, this share
        self.bursts = bursts
        self.fifo = fifo
        self.tick_first = tick_first
        self.next_tick = next_tick
        self.rng = rng
        self.queueing = queueing
        self.bad = False
        self.last_release = 0.0
        self.next_burst = time.monotonic() + rng.expovariate(1 / BURST_EVERY_S)
        self.burst_start = -1.0
        self.forwarded = 0
        self.lost = 0
        self.floor = FLOOR_S

    def lose(self):
        if self.loss is not None:
            return self.rng.random() < self.loss
        if self.bad:
            if self.rng.random() < BAD_TO_GOOD:
                self.bad = False
        elif self.rng.random() < GOOD_TO_BAD:
            self.bad = True
        return self.rng.random() < (BAD_LOSS if self.bad else GOOD_LOSS)

    def congestion(self, now):
        if not self.bursts:
            return 0.0
        if now >= self.next_burst:
            self.burst_start = self.next_burst
            self.next_burst = now + self.rng.expovariate(1 / BURST_EVERY_S)
        age = now - self.burst_start
        if 0 <= age < BURST_LENGTH_S:
            return BURST_PEAK_S * (1 - age / BURST_LENGTH_S)
        return 0.0

    def due(self, now):
        """When a datagram arriving now leaves: the router's tick and the link, in this
        direction's order, and never before the datagram ahead of it."""
        link = self.floor + self.queueing(self.rng) + self.congestion(now)
        if self.tick_first:
            at = self.next_tick(now) + link
        else:
            at = self.next_tick(now + link)
        if self.fifo:
            at = max(at, self.last_release)
            self.last_release = at
        return at


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--to", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", choices=["netpath", "ticks"], default="netpath")
    parser.add_argument("--tick-ms", type=float)
    parser.add_argument("--base-ms", type=float)
    parser.add_argument("--jitter-ms", type=float)
    parser.add_argument("--loss", type=float)
    args = parser.parse_args()
    varied = [args.tick_ms, args.base_ms, args.jitter_ms, args.loss]
    if args.profile == "netpath" and any(value is not None for value in varied):
        parser.error("--tick-ms, --base-ms, --jitter-ms and --loss vary the ticks profile only")
    args.tick_ms = TICKS_TICK_MS if args.tick_ms is None else args.tick_ms
    args.base_ms = TICKS_BASE_MS if args.base_ms is None else args.base_ms
    args.jitter_ms = TICKS_JITTER_MS if args.jitter_ms is None else args.jitter_ms
    args.loss = TICKS_LOSS if args.loss is None else args.loss
    if args.profile == "ticks" and not (args.tick_ms > 0 and 0 <= args.jitter_ms <= args.base_ms and 0 <= args.loss < 1):
        parser.error("the ticks profile needs --tick-ms > 0, 0 <= --jitter-ms <= --base-ms and 0 <= --loss < 1")
    host, port = args.to.rsplit(":", 1)
    leader = (host, int(port))
    rng = random.Random(args.seed)

    outside = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    outside.bind(("127.0.0.1", args.listen))
    inside = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    inside.bind(("127.0.0.1", 0))
    tick = TICK_S if args.profile == "netpath" else args.tick_ms / 1000
    origin = time.monotonic() + rng.uniform(0, tick)   # the timer's phase

    def next_tick(t):
        return origin + math.ceil((t - origin) / tick) * tick

    if args.profile == "netpath":
        up = Direction("up", random.Random(rng.random()), lambda r: min(UP_CAP_S, r.expovariate(1 / UP_MEAN_S)),
                       tick_first=True, next_tick=next_tick)
        down = Direction("down", random.Random(rng.random()), lambda r: r.uniform(0, DOWN_SPAN_S),
                         tick_first=False, next_tick=next_tick)
    else:
        # Both directions alike: the link's fixed part is the base less the jitter, its
        # queueing uniform over twice the jitter, then the relay's next wake-up.
        lowest, span = (args.base_ms - args.jitter_ms) / 1000, 2 * args.jitter_ms / 1000
        def make(name):
            return Direction(name, random.Random(rng.random()), lambda r: r.uniform(0, span),
                             tick_first=False, next_tick=next_tick, loss=args.loss, bursts=False, fifo=False)
        up, down = make("up"), make("down")
        up.floor = down.floor = lowest
    follower = None
    pending = []   # (release time, sequence, socket, payload, destination)
    sequence = 0
    next_report = time.monotonic() + 10

    def report():
        sys.stderr.write("netpath: up %d forwarded %d lost, down %d forwarded %d lost\n"
                         % (up.forwarded, up.lost, down.forwarded, down.lost))
        sys.stderr.flush()

    def stop(*_):
        report()
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    while True:
        now = time.monotonic()
        timeout = None
        if pending:
            timeout = max(0.0, pending[0][0] - now)
        if now >= next_report:
            report()
            next_report = now + 10
        timeout = 10.0 if timeout is None else min(timeout, 10.0)
        readable, _, _ = select.select([outside, inside], [], [], timeout)
        now = time.monotonic()
        for sock in readable:
            try:
                data, source = sock.recvfrom(65536)
            except OSError:
                continue
            if sock is outside:
                follower = source
                direction, target, via = up, leader, inside
            else:
                if follower is None:
                    continue
                direction, target, via = down, follower, outside
            if direction.lose():
                direction.lost += 1
                continue
            direction.forwarded += 1
            sequence += 1
            heapq.heappush(pending, (direction.due(now), sequence, via, data, target))
        while pending and pending[0][0] <= now:
            _, _, via, data, target = heapq.heappop(pending)
            try:
                via.sendto(data, target)
            except OSError:
                pass


if __name__ == "__main__":
    main()
