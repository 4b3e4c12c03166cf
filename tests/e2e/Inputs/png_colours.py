"""Prints a PNG's size and, for each colour asked for (hex RRGGBB), whether
some pixel has exactly that colour: enough to tell which runs a plot drew.
Reads 8-bit RGB or RGBA PNGs without interlacing (what matplotlib writes),
with zlib alone.

    png_colours.py FILE.png RRGGBB [RRGGBB...]
"""
import struct
import sys
import zlib

data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
position, idat = 8, b""
while position < len(data):
    length, kind = struct.unpack(">I4s", data[position:position + 8])
    body = data[position + 8:position + 8 + length]
    if kind == b"IHDR":
        width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
        assert depth == 8 and colour_type in (2, 6) and interlace == 0, "unsupported PNG"
    elif kind == b"IDAT":
        idat += body
    position += 12 + length
channels = 4 if colour_type == 6 else 3
stride = width * channels
raw = zlib.decompress(idat)
pixels, previous = set(), bytearray(stride)
for row in range(height):
    start = row * (stride + 1)
    kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
    for i in range(stride):
        left = line[i - channels] if i >= channels else 0
        up, corner = previous[i], previous[i - channels] if i >= channels else 0
        if kind == 1:
            line[i] = (line[i] + left) & 255
        elif kind == 2:
            line[i] = (line[i] + up) & 255
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 255
        elif kind == 4:
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
    for i in range(0, stride, channels):
        pixels.add(bytes(line[i:i + 3]))
    previous = line
print(f"{width}x{height}")
for colour in sys.argv[2:]:
    print(colour, "yes" if bytes.fromhex(colour) in pixels else "no")
