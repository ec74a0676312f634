#!/usr/bin/env python3
"""Packs a disk image into text: "size N", then for every run of equal 512-byte sectors that
are not all zeros a line "SECTOR HEX" (one sector) or "SECTOR*COUNT HEX" (COUNT copies): a few
KiB for a mostly empty image. Or unpacks it again.

    python3 pack_image.py pack IMAGE > IMAGE.sectors
    python3 pack_image.py unpack IMAGE.sectors IMAGE
"""
import sys

if sys.argv[1] == "pack":
    with open(sys.argv[2], "rb") as f:
        data = f.read()
    print("size %d" % len(data))
    i, n = 0, len(data)
    while i < n:
        s = data[i:i + 512]
        count = 1
        while data[i + count * 512:i + (count + 1) * 512] == s:
            count += 1
        if s.strip(b"\0"):
            sector = "%d" % (i // 512) if count == 1 else "%d*%d" % (i // 512, count)
            print("%s %s" % (sector, s.hex()))
        i += count * 512
else:
    with open(sys.argv[2]) as f, open(sys.argv[3], "wb") as out:
        out.truncate(int(f.readline().split()[1]))
        for line in f:
            sector, hexdata = line.split()
            first, _, count = sector.partition("*")
            out.seek(int(first) * 512)
            out.write(bytes.fromhex(hexdata) * int(count or 1))
