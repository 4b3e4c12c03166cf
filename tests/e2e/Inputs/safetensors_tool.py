"""Writes and reads small F32 safetensors files for the CLI tests.

  safetensors_tool.py write OUT NAME=v1,v2,... [NAME=...]   (1-D tensors)
  safetensors_tool.py print FILE                             (NAME v1 v2 ...)
"""
import json
import struct
import sys


def write(path, specs):
    header, data = {}, b""
    for spec in specs:
        name, values = spec.split("=")
        floats = [float(v) for v in values.split(",")]
        blob = struct.pack(f"<{len(floats)}f", *floats)
        header[name] = {"dtype": "F32", "shape": [len(floats)],
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def show(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    for name in sorted(k for k in header if k != "__metadata__"):
        begin, end = header[name]["data_offsets"]
        values = struct.unpack(f"<{(end - begin) // 4}f",
                               raw[8 + n + begin:8 + n + end])
        print(name, " ".join(f"{v:g}" for v in values))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3:])
    else:
        show(sys.argv[2])
