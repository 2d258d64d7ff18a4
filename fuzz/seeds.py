"""Writes the seed inputs of one fuzz target (scripts/fuzz): python3 seeds.py TARGET ROOT OUT."""
import hashlib
import hmac
import pathlib
import struct
import sys


def golden(root, name, kinds=None):
    """(kind, bytes) of every golden vector in tests/ir/golden/NAME."""
    for line in open(root / "tests/ir/golden" / name):
        if line.startswith("#") or not line.strip():
            continue
        kind, _, hexbytes = line.rstrip("\n").split("\t")
        if kinds is None or kind in kinds:
            yield kind, bytes.fromhex(hexbytes)


def decoder(root):
    # Every golden vector of the served protocol 2, as before.
    for kind, data in golden(root, "vectors.tsv"):
        yield kind, data


def messages(*parts):
    return b"".join(struct.pack("<H", len(p)) + p for p in parts)


def segments(root):
    # segments_fuzzer's input: a byte choosing the host's limit (0: 1 MiB), then websocket
    # messages, each a 2-byte length and its bytes. Each golden client frame as a whole message,
    # and as a head and segments of up to 64 bytes.
    for n, (kind, frame) in enumerate(golden(root, "vectors-0.23.0-pre.1.tsv", {"frame"})):
        yield f"whole-{n}", bytes([0]) + messages(b"\x00" + frame)
        pieces = [frame[i:i + 64] for i in range(0, len(frame), 64)]
        yield f"segmented-{n}", bytes([0]) + messages(b"\x01" + struct.pack("<Q", len(frame)), *pieces)


def http(root):
    yield "session", (b"GET /session HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nConnection: Upgrade\r\n"
                      b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                      b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    yield "data", (b"GET /data?x=1 HTTP/1.1\r\nHost: [::1]:3000\r\nConnection: upgrade\r\n"
                   b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                   b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: https://app.example\r\n\r\n")
    yield "metrics", b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n"
    yield "healthz", b"GET /healthz HTTP/1.0\r\n\r\n"
    yield "models", (b"GET /v1/models HTTP/1.1\r\nHost: localhost:3000\r\n"
                     b"Authorization: Bearer t0ken\r\n\r\n")
    yield "load", (b"POST /v1/models/plus/load HTTP/1.1\r\nHost: localhost:3000\r\n"
                   b"Authorization: Bearer t0ken\r\nContent-Length: 2\r\n\r\n{}")
    yield "unload", (b"POST /v1/models/plus/unload HTTP/1.1\r\nHost: evil.example\r\n"
                     b"Origin: null\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")


def record(rank, world, address, names, token):
    body = (f"torchbridge-federation 1\nrank {rank}\nworld {world}\naddress {address}\n"
            f"devices {len(names)}\n" + "".join(f"device {n}\n" for n in names))
    mac = hmac.new(token.encode(), body.encode(), hashlib.sha256).hexdigest() if token else "-"
    return body, body + f"mac {mac}\n"


def store(root):
    # store_fuzzer's input: a mode byte (0: a store entry, 1: a body it signs, 2: an unsigned body,
    # 3: a member to round-trip, 4: a protocol message, 5: a frame's payload), the rank and the world size (rank + 1 + a byte % 3), the rest.
    body, text = record(1, 2, "ws://127.0.0.1:4001", ["cpu", "cuda:0"], None)
    yield "unsigned", bytes([0, 1, 0]) + text.encode()
    yield "unsigned-body", bytes([2, 1, 0]) + body.encode()
    body, text = record(0, 3, "wss://10.0.0.2:3000", ["NVIDIA H100 80GB HBM3"], "s3cret")
    yield "signed", bytes([0, 0, 2]) + text.encode()
    yield "signed-body", bytes([1, 0, 2]) + body.encode()
    yield "rank", bytes([0, 6, 0]) + b"6"
    yield "member", bytes([3, 0, 0]) + b"ws://127.0.0.1:4001\\cpu\\cuda:0\x02\x01\x01"
    # store_protocol.hpp: op | timeout_ms u32 | amount u64 | keys u32 (length u32 | key)... |
    # value | expected; an answer: outcome | number u64 | bytes.
    def field(b):
        return struct.pack("<I", len(b)) + b

    def request(op, keys, value=b"", expected=b"", timeout=0, amount=0):
        head = struct.pack("<BIqI", op, timeout, amount, len(keys))
        return head + b"".join(field(k) for k in keys) + field(value) + field(expected)

    yield "set", bytes([4, 0, 0]) + request(1, [b"tb/member/0"], b"record")
    yield "wait", bytes([4, 0, 0]) + request(5, [b"tb/ready/0", b"tb/ready/1"], timeout=120000)
    yield "add", bytes([4, 0, 0]) + request(3, [b"tb/joined/1"], amount=1)
    yield "compare-set", bytes([4, 0, 0]) + request(8, [b"k"], b"new", b"old")
    yield "answer", bytes([4, 0, 0]) + struct.pack("<Bq", 0, 7) + field(b"value")
    yield "frame", bytes([5, 0, 0]) + request(2, [b"tb/xfer/0000000000005eed"])


def main():
    target, root, out = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    for n, (name, data) in enumerate(globals()[target](root)):
        (out / f"{n:04d}-{name}").write_bytes(data)


if __name__ == "__main__":
    main()
