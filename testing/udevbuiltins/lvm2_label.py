#!/usr/bin/env python3
"""Writes an LVM2 physical volume label into IMAGE (pvcreate wants a block device): "LABELONE"
in sector 1 with its CRC (LVM's: CRC-32, initial value 0xf597a6cf, no final inversion), type
"LVM2 001", and the PV header with the 32-character UUID and the device size.

    python3 lvm2_label.py IMAGE UUID32
"""
import os
import struct
import sys


def lvm_crc(data, crc=0xF597A6CF):
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc


path, uuid = sys.argv[1], sys.argv[2].encode()
assert len(uuid) == 32
size = os.path.getsize(path)
pv = uuid + struct.pack("<Q", size) + struct.pack("<QQ", 0, 0)   # UUID, size, no data areas
body = struct.pack("<I", 32) + b"LVM2 001" + pv                   # offset_xl, type, pv header
body = body.ljust(512 - 20, b"\0")
crc = lvm_crc(body)
label = b"LABELONE" + struct.pack("<Q", 1) + struct.pack("<I", crc) + body
with open(path, "r+b") as f:
    f.seek(512)
    f.write(label)
