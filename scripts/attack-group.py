#!/usr/bin/env python3
"""Sends a running group's own datagrams back at it, replayed, altered and forged.

    sudo scripts/attack-group.py LEADER_PORT [SECONDS]

Listens on the loopback interface for two seconds and keeps the UDP datagrams to and from
LEADER_PORT (a leader and followers on this machine). Then, for SECONDS (default 10), it
re-injects them from their own source ports to their own destinations: each verbatim (a
replay), with one bit flipped (altered), and with everything after the header replaced by
random bytes (forged). A keyed group must act on none of them: watch the followers'
`--stats` (drops by reason, no resyncs, the output error unchanged) and the nodes' logs.

Raw sockets, so root only; loopback only. Python's standard library only.
"""
import random
import socket
import struct
import sys
import time

CAPTURE_SECONDS = 2.0
# Datagrams re-sent per round, and the pause between rounds: about a thousand a second.
PER_ROUND = 20
ROUND_PAUSE = 0.05


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def udp_packet(source_port: int, destination_port: int, payload: bytes) -> bytes:
    """An IPv4 packet from and to 127.0.0.1 carrying one UDP datagram."""
    length = 8 + len(payload)
    loopback = socket.inet_aton("127.0.0.1")
    pseudo = loopback * 2 + struct.pack("!BBH", 0, socket.IPPROTO_UDP, length)
    header = struct.pack("!HHHH", source_port, destination_port, length, 0)
    udp_sum = checksum(pseudo + header + payload) or 0xFFFF
    header = struct.pack("!HHHH", source_port, destination_port, length, udp_sum)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + length, random.randrange(65536), 0, 64,
                     socket.IPPROTO_UDP, 0, loopback, loopback)
    return ip + header + payload


def capture(leader_port: int) -> list:
    """(source port, destination port, payload) of every datagram to or from the leader."""
    sniffer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
    sniffer.bind(("lo", 0))
    sniffer.settimeout(0.2)
    seen = []
    end = time.time() + CAPTURE_SECONDS
    while time.time() < end:
        try:
            frame, address = sniffer.recvfrom(65535)
        except socket.timeout:
            continue
        # Each datagram shows twice on loopback (out and in): keep the incoming copy.
        if address[2] == socket.PACKET_OUTGOING:
            continue
        ip = frame[14:]
        if len(ip) < 28 or ip[9] != socket.IPPROTO_UDP:
            continue
        start = (ip[0] & 15) * 4
        source, destination = struct.unpack("!HH", ip[start:start + 4])
        if leader_port in (source, destination):
            seen.append((source, destination, bytes(ip[start + 8:])))
    return seen


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    leader_port = int(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) == 3 else 10.0
    seen = capture(leader_port)
    if not seen:
        sys.exit(f"no datagrams to or from port {leader_port} on loopback in {CAPTURE_SECONDS} s")
    print(f"captured {len(seen)} datagrams", flush=True)
    injector = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    sent = {"replayed": 0, "altered": 0, "forged": 0}
    end = time.time() + seconds
    while time.time() < end:
        for source, destination, payload in random.sample(seen, min(PER_ROUND, len(seen))):
            injector.sendto(udp_packet(source, destination, payload), ("127.0.0.1", 0))
            sent["replayed"] += 1
            altered = bytearray(payload)
            altered[random.randrange(len(altered))] ^= 1 << random.randrange(8)
            injector.sendto(udp_packet(source, destination, bytes(altered)), ("127.0.0.1", 0))
            sent["altered"] += 1
            forged = payload[:8] + bytes(random.randrange(256) for _ in range(max(0, len(payload) - 8)))
            injector.sendto(udp_packet(source, destination, forged), ("127.0.0.1", 0))
            sent["forged"] += 1
        time.sleep(ROUND_PAUSE)
    print(", ".join(f"{count} {kind}" for kind, count in sent.items()), flush=True)


if __name__ == "__main__":
    main()
