#!/usr/bin/env python3
"""Turns one udevadm test run (make_goldens.sh's work directory) into a golden file.

The golden is one fact per line, "KIND VALUE":
  action / devpath         the event
  const arch|virt VALUE    what udevd saw of the machine (the tests' host says the same)
  property KEY=VALUE       the properties udevadm printed, in its order, without
                           USEC_INITIALIZED; for a renamed interface the rename's own doings
                           (DEVPATH, INTERFACE, ID_RENAMING, INTERFACE_OLD) are undone
  name NAME                the interface name NAME= gave
  link PATH                each of DEVLINKS, without "/dev/"
  run COMMAND              the RUN list as udevadm printed it
  node UID GID MODE        the node's owner and mode after udevadm applied the rules
  db-priority N            the link priority udevd stored (L: of its database entry)
  db-persist               the entry was marked persistent (sticky bit)
  write DEVPATH/ATTR=VAL   an attribute file the run changed, with its new content
  sysctl NAME=VALUE        a /proc/sys file the run changed
                           (in both, a backslash is written as two and a newline as "\\n")
  load FILE:LINE MESSAGE   what udevd logged about the rules while loading them
  builtin COMMAND          a builtin udevd ran, then its answer from `udevadm test-builtin`:
  builtin-property K=V       ... each property it printed
  builtin-result ok|failed   ... and whether it succeeded
"""
import argparse
import filecmp
import os
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--run", required=True)
parser.add_argument("--pristine", required=True)
parser.add_argument("--proc-sys", required=True)
parser.add_argument("--action", required=True)
parser.add_argument("--devpath", required=True)
parser.add_argument("--version", required=True)
args = parser.parse_args()
run = args.run


def read(name):
    path = os.path.join(run, name)
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return f.read()


out = []
out.append("# udevadm test --action=%s /sys%s (udev %s); testing/udevrules/make_goldens.sh made this"
           % (args.action, args.devpath, args.version))
out.append("action " + args.action)
out.append("devpath " + args.devpath)
stderr = read("stderr")
virt = re.search(r"^Found container virtualization (\S+)\.$", stderr, re.M) or \
    re.search(r"^Found VM virtualization (\S+)$", stderr, re.M)
out.append("const arch x86-64")
out.append("const virt " + (virt.group(1) if virt else "none"))

props = []
run_lines = []
for line in read("stdout").splitlines():
    if line.startswith("run: '") and line.endswith("'"):
        run_lines.append(line[6:-1])
    elif "=" in line and re.match(r"^[^ ]+=", line):
        key, value = line.split("=", 1)
        props.append([key, value])
keys = [k for k, _ in props]
name = None
if "INTERFACE_OLD" in keys:
    value = dict(props)
    name = value["INTERFACE"]
    props = [[k, v] for k, v in props if k not in ("INTERFACE_OLD", "ID_RENAMING")]
    for p in props:
        if p[0] == "INTERFACE":
            p[1] = value["INTERFACE_OLD"]
        if p[0] == "DEVPATH":
            p[1] = args.devpath
for key, value in props:
    if key == "USEC_INITIALIZED":
        continue
    out.append("property %s=%s" % (key, value))
if name is not None:
    out.append("name " + name)
for key, value in props:
    if key == "DEVLINKS":
        for link in value.split(" "):
            out.append("link " + (link[5:] if link.startswith("/dev/") else link))
for command in run_lines:
    out.append("run " + command)
node = read("node").strip()
if node:
    uid, gid, mode = node.split()
    out.append("node %s %s %04o" % (uid, gid, int(mode, 8)))

# The event device's database entry: the one whose E:/S: lines were written by this run.
db = read("db")
entries = {}
current = None
for line in db.splitlines():
    if line.startswith("== "):
        _, ident, mode = line.split(" ")
        current = entries.setdefault(ident, {"mode": int(mode, 8), "lines": []})
    elif current is not None:
        current["lines"].append(line)
fixtures = {}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "database")) as f:
    for line in f.read().splitlines():
        if line.startswith("== "):
            fixture = fixtures.setdefault(line[3:], [])
        else:
            fixture.append(line)
for ident, entry in sorted(entries.items()):
    if fixtures.get(ident) == entry["lines"]:
        continue  # an untouched fixture
    for line in entry["lines"]:
        if line.startswith("L:"):
            out.append("db-priority " + line[2:])
    if entry["mode"] & 0o1000:
        out.append("db-persist")

# Files the run wrote into the tree and into /proc/sys.
def changed(pristine, after, prefix, kind):
    for root, dirs, files in os.walk(after):
        for f in sorted(files):
            path = os.path.join(root, f)
            if os.path.islink(path):
                continue
            rel = os.path.relpath(path, after)
            before = os.path.join(pristine, rel)
            if os.path.exists(before) and filecmp.cmp(before, path, shallow=False):
                continue
            with open(path, encoding="utf-8", errors="surrogateescape") as h:
                content = h.read().replace("\\", "\\\\").replace("\n", "\\n")
                out.append("%s %s%s=%s" % (kind, prefix, rel, content))


changed(args.pristine, os.path.join(run, "sys"), "/", "write")
changed(args.proc_sys, os.path.join(run, "proc_sys"), "", "sysctl")

load_re = re.compile(r"^(?:/etc/udev/rules\.d|/run/udev/rules\.d|/usr/lib/udev/rules\.d|/lib/udev/rules\.d)/"
                     r"(\S+?):(\d+):? (.*)$")
for line in stderr.splitlines():
    m = load_re.match(line)
    if m:
        out.append("load %s:%s %s" % (m.group(1), m.group(2), m.group(3)))

answers = read("builtin_answers").splitlines()
i = 0
while i < len(answers):
    out.append("builtin " + answers[i])
    i += 1
    while i < len(answers) and answers[i] != "#end":
        line = answers[i]
        if line in ("#ok", "#failed"):
            out.append("builtin-result " + ("ok" if line == "#ok" else "failed"))
        elif "=" in line:
            out.append("builtin-property " + line)
        i += 1
    i += 1
if read("exit"):
    out.append("# udevadm exited with " + read("exit").strip())
sys.stdout.write("\n".join(out) + "\n")
