#!/usr/bin/env python3
"""Misbehaving Kafka clients for scripts/soak.sh (python3 standard library only).

Loops over a fixed menu of bad behaviour against one broker until --seconds
pass: partial frames cut at random points (FIN or RST), long-poll fetches
abandoned while parked, large fetches abandoned mid-response with a tiny
receive window, half-closed requests, garbage frames, and bursts of
connections dropped at once. Only 127.0.0.1 is ever contacted. Prints one
JSON line of counts at the end; exits 1 if the broker stopped accepting.
"""
import argparse
import json
import random
import socket
import struct
import time


def frame(api_key, version, body, correlation_id=7):
    client_id = b"chaos"
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def kstring(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def fetch_v4(topic, partition, offset, max_wait_ms, max_bytes):
    # Fetch v4: replica_id, max_wait, min_bytes, max_bytes, isolation, topics.
    body = struct.pack(">iiiib", -1, max_wait_ms, 1, max_bytes, 0)
    body += struct.pack(">i", 1) + kstring(topic)
    body += struct.pack(">i", 1) + struct.pack(">iqi", partition, offset, max_bytes)
    return frame(1, 4, body)


def metadata_v1(topic):
    return frame(3, 1, struct.pack(">i", 1) + kstring(topic))


def connect(port, rcvbuf=0, timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    return s


def close(s, reset):
    if reset:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def cut_frame(port, rng, topic):
    f = rng.choice([metadata_v1(topic), fetch_v4(topic, 0, 0, 0, 1 << 20)])
    s = connect(port)
    s.sendall(f[: rng.randrange(len(f))])
    close(s, rng.random() < 0.5)


def abandon_parked_fetch(port, rng, topic):
    s = connect(port)
    s.sendall(fetch_v4(topic, 0, 1 << 40, 30000, 1 << 20))  # far beyond the end: parks
    time.sleep(rng.random() * 0.2)
    close(s, rng.random() < 0.5)


def abandon_large_fetch(port, rng, topic):
    s = connect(port, rcvbuf=4096)
    s.sendall(fetch_v4(topic, 0, 0, 0, 64 << 20))
    try:
        s.recv(1000)
    except OSError:
        pass
    close(s, rng.random() < 0.5)


def send_then_half_close(port, data):
    """Sends `data`, shuts down the sending side, reads until the broker closes."""
    s = connect(port)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
    except OSError:
        pass
    s.close()


def half_close(port, rng, topic):
    send_then_half_close(port, metadata_v1(topic))


def garbage(port, rng, topic):
    body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
    send_then_half_close(port, struct.pack(">i", len(body)) + body)


def burst(port, rng, topic):
    socks = []
    for _ in range(rng.randrange(50, 200)):
        socks.append(connect(port))
    for s in socks:
        close(s, rng.random() < 0.5)


MENU = [cut_frame, abandon_parked_fetch, abandon_large_fetch, half_close, garbage, burst]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--seed", type=int, default=18)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    counts = {f.__name__: 0 for f in MENU}
    errors = 0
    refused = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        f = rng.choice(MENU)
        try:
            f(args.port, rng, args.topic)
            counts[f.__name__] += 1
        except ConnectionRefusedError:
            refused += 1
            time.sleep(0.1)
        except OSError:
            errors += 1  # timeouts and resets on our side are part of the game
    print(json.dumps({"chaos": counts, "client_side_errors": errors, "refused": refused}))
    return 1 if refused else 0


if __name__ == "__main__":
    raise SystemExit(main())
