#!/usr/bin/env python3
"""Writes the images and documents the project ships, byte for byte the same
on every run (no timestamps, no randomness, nothing downloaded):

- contracts/invoices/invoice.pdf: a one-page invoice, real PDF text;
- contracts/invoices/receipt.png: a receipt drawn with a 5x7 bitmap font;
- tests/corpus/media/: small files of every format and broken ones
  (a truncated PNG, a PNG named .pdf, a JSON file named .png).

Run from the repository root: python3 scripts/media-fixtures.py
"""

import os
import struct
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

INVOICE = [
    "ACME Tools Ltd - Invoice INV-2026-0042",
    "Date: 2026-11-30   Due: 2026-12-30",
    "Bill to: Northwind Traders",
    "",
    "2 x Cordless drill        @ 89.50   179.00",
    "5 x Drill bit set         @ 12.00    60.00",
    "1 x Safety goggles        @  9.99     9.99",
    "",
    "Subtotal                            248.99",
    "VAT 20%                              49.80",
    "Total (EUR)                         298.79",
]

RECEIPT = [
    "CORNER CAFE",
    "RECEIPT 1187",
    "2026-11-30",
    "",
    "LATTE      4.20",
    "CROISSANT  2.80",
    "WATER      1.50",
    "",
    "TOTAL      8.50",
]

# A 5x7 font: each glyph is seven rows of five bits.
FONT = {
    " ": ["00000"] * 7,
    "0": ["01110", "10001", "10011", "10101", "11001", "10001", "01110"],
    "1": ["00100", "01100", "00100", "00100", "00100", "00100", "01110"],
    "2": ["01110", "10001", "00001", "00010", "00100", "01000", "11111"],
    "3": ["11110", "00001", "00001", "01110", "00001", "00001", "11110"],
    "4": ["00010", "00110", "01010", "10010", "11111", "00010", "00010"],
    "5": ["11111", "10000", "11110", "00001", "00001", "10001", "01110"],
    "6": ["00110", "01000", "10000", "11110", "10001", "10001", "01110"],
    "7": ["11111", "00001", "00010", "00100", "01000", "01000", "01000"],
    "8": ["01110", "10001", "10001", "01110", "10001", "10001", "01110"],
    "9": ["01110", "10001", "10001", "01111", "00001", "00010", "01100"],
    ".": ["00000", "00000", "00000", "00000", "00000", "01100", "01100"],
    "-": ["00000", "00000", "00000", "11111", "00000", "00000", "00000"],
    "A": ["01110", "10001", "10001", "11111", "10001", "10001", "10001"],
    "C": ["01110", "10001", "10000", "10000", "10000", "10001", "01110"],
    "E": ["11111", "10000", "10000", "11110", "10000", "10000", "11111"],
    "F": ["11111", "10000", "10000", "11110", "10000", "10000", "10000"],
    "I": ["01110", "00100", "00100", "00100", "00100", "00100", "01110"],
    "L": ["10000", "10000", "10000", "10000", "10000", "10000", "11111"],
    "N": ["10001", "11001", "10101", "10011", "10001", "10001", "10001"],
    "O": ["01110", "10001", "10001", "10001", "10001", "10001", "01110"],
    "P": ["11110", "10001", "10001", "11110", "10000", "10000", "10000"],
    "R": ["11110", "10001", "10001", "11110", "10100", "10010", "10001"],
    "S": ["01111", "10000", "10000", "01110", "00001", "00001", "11110"],
    "T": ["11111", "00100", "00100", "00100", "00100", "00100", "00100"],
    "W": ["10001", "10001", "10001", "10101", "10101", "10101", "01010"],
}


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def png(rows):
    """A greyscale PNG of `rows` (lists of 0..255)."""
    height, width = len(rows), len(rows[0])
    raw = b"".join(b"\0" + bytes(row) for row in rows)
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def receipt():
    scale, margin = 3, 12
    columns = max(len(line) for line in RECEIPT)
    width = margin * 2 + columns * 6 * scale
    height = margin * 2 + len(RECEIPT) * 10 * scale
    rows = [[255] * width for _ in range(height)]
    for n, line in enumerate(RECEIPT):
        for c, char in enumerate(line):
            glyph = FONT[char]
            for gy, bits in enumerate(glyph):
                for gx, bit in enumerate(bits):
                    if bit == "1":
                        for dy in range(scale):
                            for dx in range(scale):
                                y = margin + n * 10 * scale + gy * scale + dy
                                x = margin + c * 6 * scale + gx * scale + dx
                                rows[y][x] = 0
    return png(rows)


def pdf(lines):
    """A one-page PDF showing `lines` in Courier."""
    text = ["BT", "/F1 11 Tf", "14 TL", "50 780 Td"]
    for line in lines:
        escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        text.append(f"({escaped}) Tj T*")
    text.append("ET")
    stream = "\n".join(text).encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def gif():
    """A 1x1 GIF."""
    return (
        b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00"
        b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
    )


def webp():
    """A 1x1 lossless WebP."""
    vp8l = b"\x2f\x00\x00\x00\x00\x07\x10\xfd\x8f\xfe\x07\x08\x00"
    body = b"WEBP" + b"VP8L" + struct.pack("<I", len(vp8l)) + vp8l + b"\x00"
    return b"RIFF" + struct.pack("<I", len(body)) + body


def jpeg():
    """The markers of a JPEG around no image data: enough to be sniffed and whole."""
    return b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"


def write(relative, data):
    path = os.path.join(ROOT, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    invoice, scan = pdf(INVOICE), receipt()
    write("contracts/invoices/invoice.pdf", invoice)
    write("contracts/invoices/receipt.png", scan)
    tiny = png([[0, 255], [255, 0]])
    write("tests/corpus/media/tiny.png", tiny)
    write("tests/corpus/media/tiny.gif", gif())
    write("tests/corpus/media/tiny.webp", webp())
    write("tests/corpus/media/tiny.jpg", jpeg())
    write("tests/corpus/media/tiny.pdf", pdf(["Hello"]))
    write("tests/corpus/media/truncated.png", tiny[: len(tiny) - 20])
    write("tests/corpus/media/png_named.pdf", tiny)
    write("tests/corpus/media/json_named.png", b'{"not": "an image"}\n')


if __name__ == "__main__":
    main()
