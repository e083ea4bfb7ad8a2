"""png.py — reads and writes 8-bit RGB/RGBA PNG files with the standard
library only, and compares two pictures as tests/viewer/test-references.c
does (per channel tolerance, a fraction of pixels allowed outside it)."""
import struct
import zlib


def read(path):
    """(width, height, rows): rows of bytes, 3 per pixel (RGB)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(path + ": not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError(path + ": only 8-bit RGB or RGBA PNGs")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        if bpp == 4:
            line = bytearray(v for k, v in enumerate(line) if k % 4 != 3)
        rows.append(bytes(line))
    return width, height, rows


def write(path, width, height, rows):
    raw = b"".join(b"\0" + r for r in rows)
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


TOLERANCE = 16            # per channel, of 255 (as tests/viewer)
MAX_BAD_FRACTION = 0.0005  # pixels allowed outside it


def compare(got_path, want_path, diff_path=None):
    """None when the pictures match, else a one-line reason (and a picture of
    the differing pixels in red at diff_path)."""
    gw, gh, g = read(got_path)
    ww, wh, w = read(want_path)
    if (gw, gh) != (ww, wh):
        return "size %dx%d, reference %dx%d" % (gw, gh, ww, wh)
    bad, out = 0, []
    for y in range(wh):
        a, b = g[y], w[y]
        if a == b:
            out.append(bytes(0xbf + (v >> 2) for v in b))
            continue
        row = bytearray()
        for x in range(0, 3 * ww, 3):
            if max(abs(a[x + k] - b[x + k]) for k in range(3)) > TOLERANCE:
                bad += 1
                row += b"\xff\0\0"
            else:
                row += bytes(0xbf + (v >> 2) for v in b[x:x + 3])
        out.append(bytes(row))
    if bad <= ww * wh * MAX_BAD_FRACTION:
        return None
    if diff_path:
        write(diff_path, ww, wh, out)
    return "%d of %d pixels differ by more than %d" % (bad, ww * wh, TOLERANCE)
