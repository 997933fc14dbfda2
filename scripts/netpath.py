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

Usage: netpath.py --listen PORT --to HOST:PORT [--seed N]
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


class Direction:
    def __init__(self, name, rng, queueing, tick_first, next_tick):
        self.name = name
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

    def lose(self):
        if self.bad:
            if self.rng.random() < BAD_TO_GOOD:
                self.bad = False
        elif self.rng.random() < GOOD_TO_BAD:
            self.bad = True
        return self.rng.random() < (BAD_LOSS if self.bad else GOOD_LOSS)

    def congestion(self, now):
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
        link = FLOOR_S + self.queueing(self.rng) + self.congestion(now)
        if self.tick_first:
            at = self.next_tick(now) + link
        else:
            at = self.next_tick(now + link)
        at = max(at, self.last_release)
        self.last_release = at
        return at


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--to", required=True)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    host, port = args.to.rsplit(":", 1)
    leader = (host, int(port))
    rng = random.Random(args.seed)

    outside = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    outside.bind(("127.0.0.1", args.listen))
    inside = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    inside.bind(("127.0.0.1", 0))
    origin = time.monotonic() + rng.uniform(0, TICK_S)   # the timer's phase

    def next_tick(t):
        return origin + math.ceil((t - origin) / TICK_S) * TICK_S

    up = Direction("up", random.Random(rng.random()), lambda r: min(UP_CAP_S, r.expovariate(1 / UP_MEAN_S)),
                   tick_first=True, next_tick=next_tick)
    down = Direction("down", random.Random(rng.random()), lambda r: r.uniform(0, DOWN_SPAN_S),
                     tick_first=False, next_tick=next_tick)
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
