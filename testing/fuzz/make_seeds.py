#!/usr/bin/env python3
"""Writes the seed corpora of testing/fuzz from real uevents.

Capture (on a machine where writing `change` is harmless; needs root):
    hotring monitor --kernel --env > uevents.txt &   # then, in another shell:
    hotring trigger --action change; kill %1
Then:
    python3 testing/fuzz/make_seeds.py uevents.txt testing/fuzz/corpus

From the capture it keeps a few events per SUBSYSTEM (those with MODALIAS, DEVNAME and the most
variables first) and writes them as kernel netlink datagrams (kernel_uevent_fuzz), as `send`
wire messages (wire_fuzz), plus hand-made edge cases and every other message type of
docs/protocol.md. control_fuzz and pipeline_fuzz seeds are hand-made here too. Seeds are named
by content hash, as libFuzzer names what it finds, so re-running adds nothing twice.
"""
import hashlib
import os
import random
import struct
import sys

PER_SUBSYSTEM = 4


def parse_capture(path):
    events, env = [], None
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("KERNEL["):
            env = []
            events.append(env)
        elif line and env is not None and "=" in line:
            k, v = line.split("=", 1)
            env.append((k, v))
    return [e for e in events if any(k == "ACTION" for k, _ in e)]


def pick(events):
    by_subsystem = {}
    for env in events:
        d = dict(env)
        by_subsystem.setdefault(d.get("SUBSYSTEM", ""), []).append(env)
    chosen = []
    for subsystem in sorted(by_subsystem):
        group = sorted(by_subsystem[subsystem],
                       key=lambda e: (-("MODALIAS" in dict(e)), -("DEVNAME" in dict(e)), -len(e)))
        chosen.extend(group[:PER_SUBSYSTEM])
    return chosen


def kernel_datagram(env):
    d = dict(env)
    out = ("%s@%s" % (d["ACTION"], d["DEVPATH"])).encode() + b"\0"
    for k, v in env:
        out += ("%s=%s" % (k, v)).encode() + b"\0"
    return out


def fields_block(fields):
    return b"".join(("%s=%s" % (k, v)).encode() + b"\0" for k, v in fields)


def wire(msg_type, fields, cookie=1, flags=0):
    block = fields_block(fields)
    return b"HRNG" + struct.pack("<BBHII", 1, msg_type, flags, cookie, len(block)) + block


def write(directory, data):
    os.makedirs(directory, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def main():
    capture, out = sys.argv[1], sys.argv[2]
    events = pick(parse_capture(capture))
    kernel, wire_dir = os.path.join(out, "kernel_uevent_fuzz"), os.path.join(out, "wire_fuzz")
    control, pipeline = os.path.join(out, "control_fuzz"), os.path.join(out, "pipeline_fuzz")
    for i, env in enumerate(events):
        write(kernel, kernel_datagram(env))
        write(wire_dir, wire(1, env, cookie=i + 1, flags=i % 2))
        if i % 4 == 0:
            write(wire_dir, wire(5, [("RESULT", "handled"), ("DURATION_US", str(100 + i))] + env, cookie=9))
    # Hand-made kernel edge cases: a libudev monitor message, a value with a stray newline, no
    # SEQNUM, a bare header, many variables.
    typical = [("ACTION", "add"), ("DEVPATH", "/devices/virtual/misc/fuse"), ("SUBSYSTEM", "misc"),
               ("MAJOR", "10"), ("MINOR", "229"), ("DEVNAME", "fuse"), ("SEQNUM", "4711")]
    write(kernel, b"libudev\0" + b"\0" * 32 + fields_block(typical))
    write(kernel, kernel_datagram(typical[:-1] + [("MODALIAS", "platform:x\n"), ("SEQNUM", "7")]))
    write(kernel, kernel_datagram(typical[:-1]))
    write(kernel, b"add@/devices\0")
    write(kernel, kernel_datagram(typical + [("X%d" % i, "v" * i) for i in range(57)]))
    # Every other message type, as the daemon and the clients exchange them.
    for cookie, fields in enumerate([[("COMMAND", "status")], [("COMMAND", "exit")],
                                     [("COMMAND", "reload")], [("COMMAND", "settle"), ("TIMEOUT_MS", "5000")],
                                     [("COMMAND", "monitor")], [("COMMAND", "unmonitor")]]):
        write(wire_dir, wire(3, fields, cookie=cookie))
        write(control, bytes([0x10 * cookie]) + b"\n".join(b"%s=%s" % (k.encode(), v.encode()) for k, v in fields))
    replies = [[("STATUS", "ok"), ("received", "12"), ("dropped", "0"), ("held", "0")],
               [("STATUS", "error"), ("MESSAGE", "too many monitors")],
               [("STATUS", "ok"), ("MESSAGE", "reloaded")]]
    for fields in replies:
        write(wire_dir, wire(4, fields, cookie=3))
        write(control, b"\x01" + b"\n".join(b"%s=%s" % (k.encode(), v.encode()) for k, v in fields))
    for result in ("handled", "failed", "duplicate", "timed_out"):
        write(wire_dir, wire(2, [("RESULT", result), ("SEQNUM", "4711")], cookie=5))
        write(control, b"\x02RESULT=%s\nSEQNUM=4711" % result.encode())
    write(control, b"\x03RESULT=handled\nDURATION_US=250\n" +
          b"\n".join(b"%s=%s" % (k.encode(), v.encode()) for k, v in typical))
    write(control, b"\x0c" + b"\n".join(b"%s=%s" % (k.encode(), v.encode()) for k, v in typical))
    # Pipeline: header (timeout, max_held, expect, children_max), then operations (see
    # pipeline_fuzz.cc): in order, reversed, duplicated, with gaps that time out.
    rng = random.Random(13)
    write(pipeline, bytes([5, 4, 0, 3]) + b"".join(bytes([0, s, rng.randrange(256)]) for s in range(20)))
    write(pipeline, bytes([5, 8, 0, 2]) + b"".join(bytes([1, s, rng.randrange(256)]) for s in reversed(range(12))))
    write(pipeline, bytes([2, 2, 0, 4]) + b"".join(bytes([8, s // 2, 7, 5, 0]) for s in range(16)))
    write(pipeline, bytes([3, 3, 1, 1]) + b"".join(bytes([2, 3 * s, rng.randrange(256), 4, 30]) for s in range(10)))
    write(pipeline, bytes([0xff, 1, 0, 0]) + bytes([0, 5, 1, 0, 9, 1, 3, 0, 1, 15, 4, 7, 6, 0x90, 0, 1, 2, 7]))
    for _ in range(8):
        write(pipeline, bytes(rng.randrange(256) for _ in range(rng.randrange(8, 200))))


if __name__ == "__main__":
    main()
