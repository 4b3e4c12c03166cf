#!/usr/bin/env python3
"""Sets one metadata value of a safetensors file in place, the tensors and
their checksums untouched: set_metadata.py FILE KEY VALUE."""
import json
import struct
import sys

path, key, value = sys.argv[1:4]
with open(path, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = f.read()
header.setdefault("__metadata__", {})[key] = value
text = json.dumps(header).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + data)
