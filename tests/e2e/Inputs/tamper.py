"""Damages or rewrites safetensors files for the integrity tests.

  tamper.py verify FILE                  check every crc32: entry with zlib
  tamper.py flip FILE TENSOR             flip one bit in TENSOR's data
  tamper.py set FILE TENSOR I[:J] VALUE store F32 VALUE (nan, inf, 3e38, ...)
                                         at elements I to J of TENSOR, and
                                         its crc32: entry to match, as a
                                         writer of that value would
  tamper.py strip FILE [TENSOR]          drop TENSOR's crc32: entry, or all
                                         of them (a file as PyTorch writes it)
"""
import json
import struct
import sys
import zlib


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), bytearray(raw[8 + n:])


def write(path, header, data):
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))


def span(header, name):
    begin, end = header[name]["data_offsets"]
    return begin, end


def verify(path):
    header, data = read(path)
    meta = header.get("__metadata__", {})
    names = [k for k in header if k != "__metadata__"]
    for name in names:
        begin, end = span(header, name)
        want = meta.get("crc32:" + name)
        got = "%08x" % zlib.crc32(bytes(data[begin:end]))
        if want != got:
            print(f"{name}: crc32 {got}, metadata {want}")
            return 1
    print(f"{len(names)} tensors match their crc32")
    return 0


def flip(path, name):
    header, data = read(path)
    begin, end = span(header, name)
    data[(begin + end) // 2] ^= 0x04
    write(path, header, data)


def store(path, name, index, value):
    header, data = read(path)
    begin, end = span(header, name)
    first, _, last = index.partition(":")
    for i in range(int(first), int(last or first) + 1):
        at = begin + 4 * i
        assert header[name]["dtype"] == "F32" and at + 4 <= end
        data[at:at + 4] = struct.pack("<f", float(value))
    meta = header.get("__metadata__", {})
    if "crc32:" + name in meta:
        meta["crc32:" + name] = "%08x" % zlib.crc32(bytes(data[begin:end]))
    write(path, header, data)


def strip(path, name=None):
    header, data = read(path)
    meta = header.get("__metadata__", {})
    for key in list(meta):
        if key.startswith("crc32:") and (name is None or key == "crc32:" + name):
            del meta[key]
    meta["format"] = "pt"
    write(path, header, data)


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "verify":
        sys.exit(verify(*args))
    elif command == "flip":
        flip(*args)
    elif command == "set":
        store(*args)
    elif command == "strip":
        strip(*args)
    else:
        sys.exit(f"unknown command {command}")
