"""Writes and reads small F32 safetensors files for the CLI tests.

  safetensors_tool.py write OUT NAME=v1,v2,... [NAME=...]   (1-D tensors)
  safetensors_tool.py print FILE                             (NAME v1 v2 ...)
  safetensors_tool.py same A B       (exit 0 when the tensors are bitwise equal)
  safetensors_tool.py finite FILE    (exit 0 when every F32 value is finite)
  safetensors_tool.py meta FILE KEY  (prints one metadata value)
  safetensors_tool.py close A B TOL  (exit 0 when every F32 tensor of B is
                                      within TOL of A's, relative to its norm;
                                      an attention's in_proj_bias without its
                                      key third, whose gradient is rounding
                                      alone and which Adam scales up)
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


def close(a, b, tolerance):
    header, left = read(a)
    _, right = read(b)
    if left.keys() != right.keys():
        print("the files hold different tensors")
        return 1
    worst, where = 0.0, ""
    for name, blob in left.items():
        if header[name]["dtype"] != "F32":
            continue
        x = struct.unpack(f"<{len(blob) // 4}f", blob)
        y = struct.unpack(f"<{len(blob) // 4}f", right[name])
        if name.endswith("in_proj_bias"):
            third = len(x) // 3
            x, y = x[:third] + x[2 * third:], y[:third] + y[2 * third:]
        diff = math.sqrt(sum((p - q) ** 2 for p, q in zip(x, y)))
        norm = math.sqrt(sum(p * p for p in x))
        error = diff / max(norm, 1e-30)
        if error > worst:
            worst, where = error, name
    print(f"{len(left)} tensors, worst relative difference {worst:.2e} ({where})")
    return 0 if worst <= tolerance else 1


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
    elif sys.argv[1] == "close":
        sys.exit(close(sys.argv[2], sys.argv[3], float(sys.argv[4])))
    elif sys.argv[1] == "meta":
        print(read(sys.argv[2])[0]["__metadata__"][sys.argv[3]])
    else:
        show(sys.argv[2])
