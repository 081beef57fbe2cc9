#!/usr/bin/env python3
"""Writes the seed corpus of request_decoder_fuzz: one Kafka request frame per
file (without the 4-byte size prefix, as RequestHandler receives it), for each
API and version the broker decodes, encoded here from the protocol schemas
(spec §12) so that no captured traffic is copied into the repository.

Usage: fuzz/request_seeds.py <dir>
"""
import os
import struct
import sys


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)
def boolean(v): return b"\x01" if v else b"\x00"


def string(s):
    if s is None:
        return i16(-1)
    b = s.encode()
    return i16(len(b)) + b


def uvarint(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def varint(v): return uvarint((v << 1) ^ (v >> 63))
def compact_string(s): b = s.encode(); return uvarint(len(b) + 1) + b
def array(items): return i32(len(items)) + b"".join(items)
def nullable_bytes(b): return i32(-1) if b is None else i32(len(b)) + b


def header(api_key, version, flexible=False, correlation_id=1, client_id="seed"):
    h = i16(api_key) + i16(version) + i32(correlation_id) + string(client_id)
    return h + (uvarint(0) if flexible else b"")


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def record_batch(values, base_offset=0, timestamp=1_700_000_000_000):
    """One uncompressed magic-2 batch (spec §4) holding `values`, no keys."""
    records = b""
    for delta, value in enumerate(values):
        body = (i8(0) + varint(0) + varint(delta) + varint(-1) + varint(len(value)) + value +
                varint(0))
        records += varint(len(body)) + body
    after_crc = (i16(0) + i32(len(values) - 1) + i64(timestamp) + i64(timestamp) + i64(-1) +
                 i16(-1) + i32(-1) + i32(len(values)) + records)
    head = i32(0) + i8(2)  # partition leader epoch, magic
    crc = struct.pack(">I", crc32c(after_crc))
    batch_length = len(head) + len(crc) + len(after_crc)
    return i64(base_offset) + i32(batch_length) + head + crc + after_crc


def fetch_partitions_v4(): return array([i32(0) + i64(0) + i32(1 << 20)])
def fetch_partitions_v11(): return array([i32(0) + i32(-1) + i64(0) + i64(-1) + i32(1 << 20)])


FRAMES = {
    "api_versions_v0": header(18, 0),
    "api_versions_v3": header(18, 3, flexible=True) + compact_string("daruma-seed") +
                       compact_string("1.0") + uvarint(0),
    "metadata_v0": header(3, 0) + array([string("t")]),
    "metadata_v1_all": header(3, 1) + i32(-1),
    "metadata_v4": header(3, 4) + array([string("t"), string("u")]) + boolean(True),
    "produce_v7": header(0, 7) + string(None) + i16(-1) + i32(30000) +
                  array([string("t") + array([i32(0) + nullable_bytes(
                      record_batch([b"abc", b"defg"]))])]),
    "fetch_v4": header(1, 4) + i32(-1) + i32(500) + i32(1) + i32(50 << 20) + i8(0) +
                array([string("t") + fetch_partitions_v4()]),
    "fetch_v11": header(1, 11) + i32(-1) + i32(500) + i32(1) + i32(50 << 20) + i8(1) +
                 i32(0) + i32(-1) + array([string("t") + fetch_partitions_v11()]) +
                 array([]) + string(""),
    "list_offsets_v1": header(2, 1) + i32(-1) + array([string("t") + array([i32(0) + i64(-1)])]),
    "list_offsets_v2": header(2, 2) + i32(-1) + i8(0) +
                       array([string("t") + array([i32(0) + i64(-2)])]),
    "create_topics_v4": header(19, 4) +
                        array([string("t") + i32(3) + i16(1) + array([]) +
                               array([string("cleanup.policy") + string("compact")])]) +
                        i32(30000) + boolean(False),
    "delete_topics_v1": header(20, 1) + array([string("t")]) + i32(30000),
    "describe_configs_v1": header(32, 1) + array([i8(2) + string("t") + i32(-1)]) +
                           boolean(False),
}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, frame in FRAMES.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(frame)
    print(f"seed_corpus: request_decoder_fuzz: {len(FRAMES)} frames generated", file=sys.stderr)


if __name__ == "__main__":
    main()
