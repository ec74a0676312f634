#!/usr/bin/env python3
"""A stand-in for systemd-udevd's control socket: accepts N connections on PATH (SOCK_SEQPACKET),
prints each message it receives as hex, one line per message, and closes the connection after
the end message (type 0), as udevd acknowledges. Writes PATH.ready once it listens."""
import os
import socket
import sys

path, count = sys.argv[1], int(sys.argv[2])
try:
    os.unlink(path)
except FileNotFoundError:
    pass
server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
server.bind(path)
server.listen(4)
open(path + ".ready", "w").close()
for _ in range(count):
    conn, _ = server.accept()
    while True:
        message = conn.recv(4096)
        if not message:
            break
        print(message.hex(), flush=True)
        if int.from_bytes(message[20:24], "little") == 0:
            break
    conn.close()
    print("--", flush=True)
