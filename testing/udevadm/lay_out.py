#!/usr/bin/env python3
"""Lays out /run/udev and /dev inside the comparison namespace (namespace.sh) in one process:
the database of FIXTURE (its "== ID MODE" sections; "== tags/TAG/ID" for the tag index), then
every device's node under /dev (root 0600, as devtmpfs makes them) and the links its database
entry names, relative as udevd makes them."""
import os
import stat
import sys

fixture = sys.argv[1]
data = "/run/udev/data"
os.makedirs(data, exist_ok=True)
modes = {}
current = None
with open(fixture) as f:
    for line in f:
        if line.startswith("#"):
            continue
        if line.startswith("== tags/"):
            if current:
                current.close()
                current = None
            path = "/run/udev/" + line.split()[1]
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").close()
        elif line.startswith("== "):
            if current:
                current.close()
            _, name, mode = line.split()
            path = os.path.join(data, name)
            current = open(path, "w")
            modes[path] = int(mode, 8)
        elif current:
            current.write(line)
if current:
    current.close()
for path, mode in modes.items():
    os.chmod(path, mode)

for root, dirs, files in os.walk("/sys/devices"):
    if "uevent" not in files:
        continue
    values = {}
    with open(os.path.join(root, "uevent")) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            values[key] = value
    major, minor, name = values.get("MAJOR"), values.get("MINOR"), values.get("DEVNAME")
    if not major or not name:
        continue
    sub = os.path.join(root, "subsystem")
    kind = "b" if os.path.islink(sub) and os.readlink(sub).endswith("/block") else "c"
    node = "/dev/" + name
    os.makedirs(os.path.dirname(node), exist_ok=True)
    if os.path.lexists(node):
        os.unlink(node)
    os.mknod(node, 0o600 | (stat.S_IFBLK if kind == "b" else stat.S_IFCHR),
             os.makedev(int(major), int(minor)))
    os.chmod(node, 0o600)
    db = os.path.join(data, "%s%s:%s" % (kind, major, minor))
    if not os.path.exists(db):
        continue
    with open(db) as f:
        for line in f:
            if not line.startswith("S:"):
                continue
            link = "/dev/" + line[2:].rstrip("\n")
            os.makedirs(os.path.dirname(link), exist_ok=True)
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(os.path.relpath(node, os.path.dirname(link)), link)
