#!/usr/bin/env python3
"""Writes the seed corpora of the configuration and module-index fuzz targets from real input.

    python3 testing/fuzz/make_config_seeds.py SOURCES testing/fuzz/corpus

SOURCES is a directory holding (file names as below):
    bb_mdev.txt       busybox docs/mdev.txt          (git show HEAD:docs/mdev.txt of busybox)
    bb_mdev.tests     busybox testsuite/mdev.tests
    alpine_mdev.conf  Alpine's busybox-initscripts/mdev.conf
    kmod__*           kmod's testsuite/rootfs-pristine text files (modules.dep, modules.alias,
                      modules.symbols, modules.softdep, etc/modprobe.d/*.conf), '/' made '__'
    bins/*.bin        kmod's testsuite/rootfs-pristine *.bin indexes
    depmod/           a module tree depmod built from a handful of this machine's modules
                      (usb-storage, ext4, psmouse, virtio_pci, virtio_blk and what they need)
and reads this machine's /lib/modules/*/modules.{dep,alias,symbols}, /lib/modprobe.d,
testing/initramfs/mdev.conf and the kernel_uevent_fuzz corpus (real uevents).

mdev_conf_fuzz: each configuration (whole, and the larger ones in pieces) followed by a NUL and
real events (KEY=VALUE lines, events separated by an empty line), plus busybox's own test cases
with their events. kmod_index_fuzz: real .bin images whole, and "PATTERN VALUE" lines of real
aliases and symbols for the writer mode. modules_text_fuzz: a module's modules.dep closure,
its aliases and symbols, a modprobe.d file, a kernel command line and queries. Seeds are named
by content hash, so re-running adds nothing twice.
"""
import glob
import hashlib
import os
import re
import sys


def write(out, name, data):
    if isinstance(data, str):
        data = data.encode()
    os.makedirs(os.path.join(out, name), exist_ok=True)
    path = os.path.join(out, name, hashlib.sha1(data).hexdigest())
    with open(path, "wb") as f:
        f.write(data)


def real_events(corpus):
    """Real uevents from the kernel parser's corpus: datagrams 'action@devpath\\0K=V\\0...'."""
    events = []
    for path in sorted(glob.glob(os.path.join(corpus, "*"))):
        data = open(path, "rb").read()
        parts = data.split(b"\0")
        if b"@" not in parts[0] or not parts[0][:1].isalpha():
            continue
        env = [p.decode(errors="replace") for p in parts[1:] if b"=" in p]
        if any(e.startswith("ACTION=") for e in env) and any(e.startswith("DEVPATH=") for e in env):
            events.append("\n".join(env))
    # Devices with nodes first: those are what the rules act on.
    events.sort(key=lambda e: ("DEVNAME=" not in e, "MAJOR=" not in e))
    return events


def mdev_seeds(src, out, events):
    confs = []
    doc = open(os.path.join(src, "bb_mdev.txt")).read()
    rules = [l.strip() for l in doc.splitlines()
             if re.match(r"^\s+(-?[\$@(a-z.].*\s+\S+:\S+\s+[0-7]{3,4}|\S+\s+\d+:\d+\s+\d+)", l)]
    confs.append("\n".join(rules) + "\n")
    alpine = open(os.path.join(src, "alpine_mdev.conf")).read()
    confs.append(alpine)
    lines = alpine.splitlines()
    for i in range(0, len(lines), 25):
        confs.append("\n".join(lines[i:i + 25]) + "\n")
    confs.append(open("testing/initramfs/mdev.conf").read())
    # busybox's test cases: the echo'd configuration and the events' env.
    tests = open(os.path.join(src, "bb_mdev.tests")).read()
    for block in re.split(r"\n# --+\n|\ntesting ", tests):
        conf = re.findall(r'echo "(.*)" +>>?mdev\.testdir/etc/mdev\.conf', block)
        envs = re.findall(r"env - PATH=\$PATH (.*?) chroot", block)
        if not conf:
            continue
        text = "\n".join(c.replace('\\$', '$') for c in conf) + "\n"
        evs = []
        for e in envs:
            kv = e.split()
            name = [x for x in kv if x.startswith("DEVPATH=")]
            extra = ["MAJOR=8", "MINOR=0", "SUBSYSTEM=block"] if name and "/block/" in name[0] else []
            evs.append("\n".join(kv + extra + ["DEVNAME=" + name[0].rsplit("/", 1)[1]] if name else kv))
        write(out, "mdev_conf_fuzz", text + "\0" + "\n\n".join(evs))
    for i, conf in enumerate(confs):
        picked = events[(i * 5) % max(1, len(events)):][:6]
        write(out, "mdev_conf_fuzz", conf + "\0" + "\n\n".join(picked))
    # Hand-made corners: continuation lines, env prefixes, number ranges, bad lines.
    write(out, "mdev_conf_fuzz",
          "SUBSYSTEM=block;sd[a-z]+ root:disk 0660 >disk/%0 @echo add\n"
          "-$MODALIAS=.* 0:0 0660 @modprobe -b \"$MODALIAS\"\n"
          "@8,0-15 root:disk 0640 =block/\n"
          "tty[0-9]+ \\\n  root:tty 0620 !\n"
          "bad line here\n"
          "(.*) nobody:nogroup 07777 *true\n"
          "\0ACTION=add\nDEVPATH=/devices/virtual/block/sdb\nSUBSYSTEM=block\nDEVNAME=sdb\n"
          "MAJOR=8\nMINOR=16\n\nACTION=remove\nDEVPATH=/devices/x/tty/tty3\nDEVNAME=tty3\n"
          "MAJOR=4\nMINOR=3\n\nACTION=add\nDEVPATH=/devices/x/fw\nFIRMWARE=intel/ibt.sfi\n")


def kmod_index_seeds(src, out):
    for path in sorted(glob.glob(os.path.join(src, "bins", "*.bin"))):
        data = open(path, "rb").read()
        if len(data) > 12:
            write(out, "kmod_index_fuzz", data)
    for name in ("modules.dep.bin", "modules.alias.bin", "modules.symbols.bin",
                 "modules.builtin.bin", "modules.builtin.alias.bin"):
        for path in glob.glob(os.path.join(src, "depmod", "lib", "modules", "*", name)):
            write(out, "kmod_index_fuzz", open(path, "rb").read())
    # Writer mode: real alias patterns and symbols, as depmod would insert them.
    moddir = sorted(glob.glob("/lib/modules/*/"))[-1]
    aliases = [l.split()[1:3] for l in open(moddir + "modules.alias") if l.startswith("alias ")]
    symbols = [l.split()[1:3] for l in open(moddir + "modules.symbols") if l.startswith("alias ")]
    for want in ("usb:v046D", "pci:v00008086d000015", "acpi*:", "input:", "platform:", "hid:"):
        picked = [a for a in aliases if a[0].startswith(want)][:40]
        write(out, "kmod_index_fuzz", "\n".join(" ".join(a) for a in picked) + "\n")
    write(out, "kmod_index_fuzz", "\n".join(" ".join(s) for s in symbols[:60]) + "\n")
    write(out, "kmod_index_fuzz",
          "a* one\nab two\na?c three\n[ab]x four\n[!a]y five\n*z six\na[ seven\n\n e\n")


def closure(dep_lines, top):
    by_name = {}
    for line in dep_lines:
        mod = line.split(":", 1)[0]
        by_name[os.path.basename(mod).split(".")[0].replace("-", "_")] = line
    want = [top]
    line = by_name.get(top)
    if line:
        want += [os.path.basename(p).split(".")[0].replace("-", "_") for p in line.split(":", 1)[1].split()]
    return [by_name[n] for n in want if n in by_name]


def modules_text_seeds(src, out):
    moddir = sorted(glob.glob("/lib/modules/*/"))[-1]
    dep = open(moddir + "modules.dep").read().splitlines()
    alias = open(moddir + "modules.alias").read().splitlines()
    symbols = open(moddir + "modules.symbols").read().splitlines()
    confs = [open(p).read() for p in sorted(glob.glob("/lib/modprobe.d/*.conf"))]
    confs += [open(p).read() for p in sorted(glob.glob(os.path.join(src, "kmod__*modprobe.d__*.conf")))]
    cmdlines = ["BOOT_IMAGE=/vmlinuz root=/dev/vda ro quiet",
                "root=/dev/sda1 modprobe.blacklist=e1000e,psmouse usb_storage.quirks=0bda:0129:u",
                "console=ttyS0 snd-hda-intel.power_save=1 ext4.foo"]
    tops = ["usb_storage", "ext4", "snd_hda_intel", "psmouse", "virtio_blk", "btusb", "xhci_pci"]
    for i, top in enumerate(tops):
        lines = closure(dep, top)
        names = {os.path.basename(l.split(":", 1)[0]).split(".")[0].replace("-", "_") for l in lines}
        al = [l for l in alias if l.split()[-1] in names][:30]
        sy = [l for l in symbols if l.split()[-1] in names][:20]
        queries = [top, top.replace("_", "-")] + [a.split()[1].replace("*", "1") for a in al[:4]]
        write(out, "modules_text_fuzz", "\0".join([
            "\n".join(lines) + "\n", "\n".join(al) + "\n", "\n".join(sy) + "\n",
            confs[i % len(confs)], cmdlines[i % len(cmdlines)], "\n".join(queries) + "\n"]))
    # kmod's own test trees: each test's text files and configuration together.
    tests = {}
    for path in glob.glob(os.path.join(src, "kmod__*")):
        test = os.path.basename(path)[len("kmod__"):].split("__lib__")[0].split("__etc__")[0]
        tests.setdefault(test, []).append(path)
    for test, paths in sorted(tests.items()):
        def part(suffix):
            return "".join(open(p).read() for p in sorted(paths) if p.endswith(suffix))
        conf = "".join(open(p).read() for p in sorted(paths) if p.endswith(".conf"))
        conf += part("modules.softdep")
        text_dep = part("modules.dep")
        if not text_dep and not conf:
            continue
        mods = [os.path.basename(l.split(":")[0]).split(".")[0] for l in text_dep.splitlines() if ":" in l]
        words = set(re.findall(r"[a-z][a-z0-9_-]+", conf)) - {"alias", "options", "install",
                                                              "remove", "softdep", "blacklist", "pre", "post"}
        queries = sorted(set(mods) | words)[:12]
        write(out, "modules_text_fuzz", "\0".join([
            text_dep, part("modules.alias"), part("modules.symbols"), conf, "", "\n".join(queries) + "\n"]))


def main():
    src, out = sys.argv[1], sys.argv[2]
    mdev_seeds(src, out, real_events(os.path.join(out, "kernel_uevent_fuzz")))
    kmod_index_seeds(src, out)
    modules_text_seeds(src, out)


if __name__ == "__main__":
    main()
