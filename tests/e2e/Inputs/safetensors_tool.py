"""Writes and reads small F32 safetensors files for the CLI tests.

  safetensors_tool.py write OUT NAME=v1,v2,... [NAME=...]   (1-D tensors)
  safetensors_tool.py print FILE                             (NAME v1 v2 ...)
  safetensors_tool.py same A B       (exit 0 when the tensors are bitwise equal)
  safetensors_tool.py finite FILE    (exit 0 when every F32 value is finite)
  safetensors_tool.py meta FILE KEY  (prints one metadata value)
"""
import math
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


def read(path):
    """The header and the tensors' raw bytes by name."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = {name: raw[8 + n + h["data_offsets"][0]:8 + n + h["data_offsets"][1]]
            for name, h in header.items() if name != "__metadata__"}
    return header, data


def same(a, b):
    _, left = read(a)
    _, right = read(b)
    differ = sorted(k for k in left.keys() | right.keys()
                    if left.get(k) != right.get(k))
    if differ:
        print(f"{len(differ)} of {len(left)} tensors differ: {differ[:5]}")
        return 1
    print(f"{len(left)} tensors bitwise equal")
    return 0


def finite(path):
    header, data = read(path)
    for name, blob in data.items():
        if header[name]["dtype"] != "F32":
            continue
        values = struct.unpack(f"<{len(blob) // 4}f", blob)
        if not all(math.isfinite(v) for v in values):
            print(f"{name} is not finite")
            return 1
    print(f"{len(data)} tensors finite")
    return 0


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
    elif sys.argv[1] == "same":
        sys.exit(same(sys.argv[2], sys.argv[3]))
    elif sys.argv[1] == "finite":
        sys.exit(finite(sys.argv[2]))
    elif sys.argv[1] == "meta":
        print(read(sys.argv[2])[0]["__metadata__"][sys.argv[3]])
    else:
        show(sys.argv[2])
