#!/usr/bin/env python3
"""Draws the Rudder icon (a ship's wheel on a rounded square) with no dependencies.

Writes RGBA PNGs, a PNG-in-ICO and a PNG-in-ICNS next to this file. Re-run after changing
the drawing: `python3 icons/generate.py`.
"""

import math
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

TOP = (37, 99, 235)  # background gradient, top
BOTTOM = (14, 52, 120)  # background gradient, bottom
WHEEL = (255, 255, 255)


def sd_round_box(x, y, half, radius):
    qx = abs(x) - half + radius
    qy = abs(y) - half + radius
    outside = math.hypot(max(qx, 0.0), max(qy, 0.0))
    return outside + min(max(qx, qy), 0.0) - radius


def sd_segment(x, y, ax, ay, bx, by, half_width):
    px, py = x - ax, y - ay
    dx, dy = bx - ax, by - ay
    h = max(0.0, min(1.0, (px * dx + py * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - dx * h, py - dy * h) - half_width


SPOKES = 8
SPOKE_ENDS = [
    (0.355 * math.cos(2 * math.pi * i / SPOKES + math.pi / 8),
     0.355 * math.sin(2 * math.pi * i / SPOKES + math.pi / 8))
    for i in range(SPOKES)
]


def sd_wheel(x, y):
    r = math.hypot(x, y)
    d = abs(r - 0.235) - 0.026  # rim
    d = min(d, r - 0.075)  # hub
    for ex, ey in SPOKE_ENDS:
        d = min(d, sd_segment(x, y, 0.0, 0.0, ex, ey, 0.019))
        d = min(d, math.hypot(x - ex, y - ey) - 0.036)  # handle knob
    # Hole in the hub.
    return max(d, -(r - 0.028))


def coverage(sd, px):
    return max(0.0, min(1.0, 0.5 - sd / px))


def render(size):
    px = 1.0 / size
    rows = []
    for j in range(size):
        y = (j + 0.5) / size - 0.5
        t = (j + 0.5) / size
        bg = tuple(TOP[k] + (BOTTOM[k] - TOP[k]) * t for k in range(3))
        row = bytearray([0])  # filter: none
        for i in range(size):
            x = (i + 0.5) / size - 0.5
            a_bg = coverage(sd_round_box(x, y, 0.47, 0.11), px)
            a_wh = coverage(sd_wheel(x, y), px) * a_bg
            rgb = [bg[k] * (1 - a_wh) + WHEEL[k] * a_wh for k in range(3)]
            row += bytes(int(round(c)) for c in rgb)
            row.append(int(round(255 * a_bg)))
        rows.append(bytes(row))
    return b"".join(rows)


def png(size):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(render(size), 9)) + chunk(b"IEND", b""))


def ico(pngs):
    header = struct.pack("<HHH", 0, 1, len(pngs))
    offset = 6 + 16 * len(pngs)
    entries, blobs = b"", b""
    for size, data in pngs:
        dim = 0 if size >= 256 else size
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(data), offset)
        offset += len(data)
        blobs += data
    return header + entries + blobs


def icns(pngs):
    kinds = {128: b"ic07", 256: b"ic08", 512: b"ic09"}
    body = b"".join(kinds[s] + struct.pack(">I", len(d) + 8) + d for s, d in pngs if s in kinds)
    return b"icns" + struct.pack(">I", len(body) + 8) + body


def main():
    cache = {s: png(s) for s in (16, 24, 32, 48, 64, 128, 256, 512)}
    outputs = {
        "32x32.png": cache[32],
        "64x64.png": cache[64],
        "128x128.png": cache[128],
        "128x128@2x.png": cache[256],
        "icon.png": cache[512],
        "icon.ico": ico([(s, cache[s]) for s in (16, 24, 32, 48, 64, 256)]),
        "icon.icns": icns([(s, cache[s]) for s in (128, 256, 512)]),
    }
    for name, data in outputs.items():
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
        print(f"icons/{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
