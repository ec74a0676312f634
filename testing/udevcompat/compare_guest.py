#!/usr/bin/env python3
"""Compares what libudev's consumers see in the two comparison guests (guest_compare.sh).

  compare_guest.py [--full] UDEV_DUMP HOTRING_DUMP

Each dump is guest_dump.sh's output. Devices are matched by DEVPATH, with the kernel's
instance numbers of input devices (inputN, eventN, mouseN, jsN) made '*' (they depend on probe
order). For every device where either side has one of the properties issue 17 names, or a link,
prints the properties that agree and every difference; a difference in a property of
EXPLAINED (not computed by hotring, see docs/udev-compat.md) is listed apart and does not fail.
Then the /dev/disk and /dev/input links (link -> device), `libinput list-devices` (every
device udevd's guest lists must be listed by hotring's with the same fields but its
/dev/input/eventN), the event a libudev monitor received for a `change` of vda1 (the
same properties), and the events a monitor filtered on tag "seat" received for a `change` of
every inputN and of vda1 (the same devices, with the same tags). Tags (TAGS, CURRENT_TAGS) are
compared as sets. Exit status 1 when anything unexplained differs.

--full (guest_compare.sh --rules: both guests ran the same rules.d and hwdb.bin): every
property of every device (USEC_INITIALIZED aside; DEVLINKS, TAGS and CURRENT_TAGS as sets),
its links and link priority, devices that only one side has, the owner, group and mode of
every node under /dev, every symlink under /dev (link -> device), every entry under /run/udev
(tag index, link claims, watches; device ids as device keys), and the network interfaces'
names (network devices are matched by their devpath, names included), MAC addresses, name
and address assignment types and alternative names; the monitored change of vda1 with all its
properties. A difference in FULL_EXPLAINED (docs/udev-rules.md, "Compared with systemd-udevd
in a qemu guest") is listed apart and does not fail.
"""
import re
import sys

# The properties issue 17 names: these must agree.
COMPARED = re.compile(r'^(ID_INPUT.*|ID_PATH|ID_PATH_TAG|ID_VENDOR_ID|ID_MODEL_ID|ID_SERIAL|'
                      r'ID_FS_.*|ID_PART_ENTRY_.*|ID_PART_TABLE_.*|'
                      r'TAGS|CURRENT_TAGS|ID_FOR_SEAT|ID_SEAT|ID_AUTOSEAT)$')
# The database's G: and Q: lines, as udevadm prints them (E: TAGS=:a:b:, E: CURRENT_TAGS=): a
# set, joined in the order of sd-device's hash set, which is not the same in two processes.
TAG_SETS = ('TAGS', 'CURRENT_TAGS')


def normalized(name, value):
    if value is None or name not in TAG_SETS:
        return value
    return ':%s:' % ':'.join(sorted(t for t in value.split(':') if t))
# Other udev properties set by the builtins hotring implements: reported, also must agree.
ALSO = re.compile(r'^(ID_BUS|ID_VENDOR|ID_VENDOR_ENC|ID_MODEL|ID_MODEL_ENC|ID_REVISION|'
                  r'ID_SERIAL_SHORT|ID_TYPE|ID_INSTANCE|ID_USB_.*|ID_PATH_ATA_COMPAT)$')
# What hotring does not compute, and why (docs/udev-compat.md, "Not computed").
EXPLAINED = {
    'ID_INPUT_WIDTH_MM': 'an EVIOCGABS ioctl on the node (input_id)',
    'ID_INPUT_HEIGHT_MM': 'an EVIOCGABS ioctl on the node (input_id)',
}
ATA_ID = {'ID_BUS', 'ID_MODEL', 'ID_MODEL_ENC', 'ID_REVISION', 'ID_SERIAL', 'ID_SERIAL_SHORT',
          'ID_TYPE', 'ID_ATA', 'ID_CDROM'}


def explanation(key, name, udev_props):
    """Why hotring leaves `name` of device `key` unset, or None when it should not."""
    if name in EXPLAINED:
        return EXPLAINED[name]
    if udev_props.get('ID_BUS') in ('ata', 'scsi') and (name in ATA_ID or
                                                      name.startswith('disk/by-id/')):
        return 'ata_id/scsi_id (an ATA IDENTIFY or SCSI INQUIRY on the node)'
    if key.startswith('/devices/virtual/dmi/'):
        return "50-udev-default.rules' dmi section (ID_VENDOR/ID_MODEL of the machine)"
    return None


# Kernel instance numbers of input devices depend on probe order; network interfaces are
# renamed by udevd (net_id: eth0 -> ens3), not by hotring.
INSTANCE = re.compile(r'/(input|event|mouse|js)\d+')
NETNAME = re.compile(r'/net/[^/]+$')


FULL = False  # --full: network interfaces keep their names in the key


def key_of(devpath):
    key = INSTANCE.sub(lambda m: '/%s*' % m.group(1), devpath)
    return key if FULL else NETNAME.sub('/net/*', key)


# --full: properties that differ from boot to boot in either guest.
PER_BOOT = {'USEC_INITIALIZED'}
# --full: properties whose value is a set, in sd-device's hash order.
VALUE_SETS = ('DEVLINKS',)
# --full: what differs for a reason, with the reason (docs/udev-rules.md, "Compared with
# systemd-udevd in a qemu guest"): (device key pattern, what pattern, reason), what being a
# property name, "link L", "link_priority", "node", "symlink", "device" or "net FIELD".
FULL_EXPLAINED = [
    (r'/net/[^/]+$', r'^IFINDEX$',
     'the kernel numbers interfaces as their drivers probe: e1000 and virtio_net are loaded '
     'by parallel events'),
]


def full_explanation(key, what):
    for key_re, what_re, reason in FULL_EXPLAINED:
        if re.search(key_re, key) and re.search(what_re, what):
            return reason
    return None


def full_value(key, name, value):
    """A property's value as --full compares it."""
    if value is None:
        return None
    if name in TAG_SETS:
        return normalized(name, value)
    if name in VALUE_SETS:
        return ' '.join(sorted(value.split()))
    if '*' in key and name in ('DEVPATH', 'DEVNAME', 'MINOR'):
        # The kernel's instance numbers of input devices and nodes (probe order).
        return '*' if name == 'MINOR' else INSTANCE.sub(lambda m: '/%s*' % m.group(1), value)
    return value


def sections(path):
    out, name = {}, None
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('=== '):
                name = line[4:].strip()
                out[name] = []
            elif name is not None:
                out[name].append(line)
    return out


def parse_db(lines):
    """{key: {'props': {K: V}, 'links': set, 'node': str}} from udevadm --export-db."""
    devices, cur = {}, None
    for line in lines + ['']:
        if not line.strip():
            cur = None
            continue
        tag, _, val = line.partition(': ')
        if tag == 'P':
            k = key_of(val)
            if k in devices:  # two devices with one key: keep both apart, in order
                n = 2
                while '%s#%d' % (k, n) in devices:
                    n += 1
                k = '%s#%d' % (k, n)
            cur = devices.setdefault(k, {'props': {}, 'links': set(), 'node': '',
                                         'all_links': set(), 'priority': '0'})
        elif cur is None:
            continue
        elif tag == 'E':
            name, _, value = val.partition('=')
            cur['props'][name] = normalized(name, value)
        elif tag == 'S':
            cur['all_links'].add(val)
            if val.startswith('disk/') or val.startswith('input/'):
                cur['links'].add(val)
        elif tag == 'L':
            cur['priority'] = val
        elif tag in ('D', 'U', 'M'):
            cur[tag] = val
        elif tag == 'N':
            cur['node'] = '/dev/' + val
    return devices


def parse_links(lines, devices):
    by_node = {d['node']: k for k, d in devices.items() if d['node']}
    links = {}
    for line in lines:
        m = re.match(r'^L: (\S+) -> (\S+)$', line)
        if m:
            links[m.group(1)] = by_node.get(m.group(2), m.group(2))
    return links


def parse_libinput(lines):
    """[{'Device': name, field: value}] from libinput list-devices, without Kernel:."""
    devs, cur = [], None
    for line in lines:
        m = re.match(r'^([A-Za-z][A-Za-z ]*):\s*(.*)$', line)
        if not m:
            cur = None
            continue
        field, value = m.group(1).strip(), m.group(2).strip()
        if field == 'Device':
            cur = {'Device': value}
            devs.append(cur)
        elif cur is not None and field != 'Kernel':
            cur[field] = value
    return devs


def parse_monitor(lines):
    """[{K: V}] of the events `udevadm monitor --udev --property` printed."""
    events, cur = [], None
    for line in lines:
        if line.startswith('UDEV '):
            cur = {}
            events.append(cur)
        elif not line.strip():
            cur = None
        elif cur is not None and '=' in line:
            k, _, v = line.partition('=')
            cur[k] = normalized(k, v)
    return events


def parse_nodes(lines, devices):
    """{key: (type, uid, gid, mode)} of every node: the device's key where the database names
    the node, else the path."""
    by_node = {d['node']: k for k, d in devices.items() if d['node']}
    nodes = {}
    for line in lines:
        f = line.split()
        if len(f) == 7 and f[0] == 'F:':
            nodes[by_node.get(f[1], f[1])] = (f[2], f[4], f[5], f[6])
    return nodes


def parse_devlinks(lines, devices):
    """{link: target} of every symlink under /dev, the target a device's key where it is a
    node of the database. /dev/char/M:N and /dev/block/M:N are named by their device."""
    import posixpath
    by_node = {d['node']: k for k, d in devices.items() if d['node']}
    links = {}
    for line in lines:
        m = re.match(r'^L: (\S+) -> (\S+)$', line)
        if not m:
            continue
        link, target = m.group(1), m.group(2)
        path = posixpath.normpath(posixpath.join(posixpath.dirname(link), target))
        dest = by_node.get(path, target)
        if re.match(r'^/dev/(char|block)/\d+:\d+$', link) and path in by_node:
            link = '%s/=%s' % (posixpath.dirname(link), dest)
        links[link] = dest
    return links


def device_ids(devices):
    """{udev database id: device key}: b/cMAJ:MIN, nIFINDEX, +SUBSYSTEM:SYSNAME, as sd-device
    names the files under /run/udev."""
    ids = {}
    for k, d in devices.items():
        if d.get('D'):
            kind, _, num = d['D'].partition(' ')
            ids[kind + num] = k
        elif d['props'].get('IFINDEX'):
            ids['n' + d['props']['IFINDEX']] = k
        elif d.get('U') and d.get('M'):
            ids['+%s:%s' % (d['U'], d['M'])] = k
    return ids


def parse_run_udev(lines, devices):
    """{path under /run/udev, a device's id as {KEY}: (type, target)}; link claims' targets
    name their node by its device's key."""
    ids = device_ids(devices)
    by_node = {d['node']: k for k, d in devices.items() if d['node']}
    out = {}
    for line in lines:
        f = line.split(' ')
        if len(f) < 3 or f[0] != 'R:' or not f[1].startswith('/run/udev'):
            continue
        parts = f[1][len('/run/udev'):].split('/')
        path = '/'.join('{%s}' % ids[p] if p in ids else p for p in parts)
        target = ' '.join(f[3:])
        m = re.match(r'^(-?\d+):(/dev/.*)$', target)
        if m and m.group(2) in by_node:
            target = '%s:{%s}' % (m.group(1), by_node[m.group(2)])
        elif target in ids:
            target = '{%s}' % ids[target]
        # Watches: inotify numbers differ between daemons; what is compared is which devices
        # are watched, and that both records of each name one another.
        if re.match(r'^/watch/\d+$', path):
            path, target = '/watch/#(%s)' % target, '#'
        elif path.startswith('/watch/') and re.match(r'^\d+$', target):
            target = '#'
        out[path] = (f[2], target)
    return out


def parse_net(lines):
    """{devpath of the interface's device: {name, address, ..., altnames}}."""
    out, by_name = {}, {}
    for line in lines:
        if line.startswith('N: '):
            f = line[3:].split()
            name, path = f[0], f[1]
            parent = path.rsplit('/net/', 1)[0] if '/net/' in path else path
            d = {'name': name}
            for kv in f[2:]:
                k, _, v = kv.partition('=')
                d[k] = v
            d['altnames'] = ''
            out[parent] = d
            by_name[name] = d
        elif line.startswith('I: '):
            m = re.match(r'^I: \d+: ([^:@]+)[:@]', line)
            if m and m.group(1) in by_name:
                by_name[m.group(1)]['altnames'] = ' '.join(re.findall(r'altname (\S+)', line))
    return out


def compare_full(udev_s, hr_s):
    """--full: returns (failures, explained lines, counts)."""
    udev = parse_db(udev_s.get('export-db', []))
    hr = parse_db(hr_s.get('export-db', []))
    failures, explained = 0, []
    counts = {'devices': 0, 'properties': 0, 'links': 0, 'net': 0}

    def differ(what, key, text):
        nonlocal failures
        reason = full_explanation(key, what)
        if reason:
            explained.append('%s %s: %s (%s)' % (key, what, text, reason))
            return None
        failures += 1
        return '  DIFF %s: %s' % (what, text)

    def show(v):
        return 'unset' if v is None else repr(v)

    print('# every device: properties, links, link priority (udevd | hotring)')
    for key in sorted(set(udev) | set(hr)):
        if key not in hr or key not in udev:
            line = differ('device', key, 'in the database of %s only' % ('udevd' if key in udev else 'hotring'))
            if line:
                print('DIFF %s' % key)
                print(line)
            continue
        u, h = udev[key], hr[key]
        counts['devices'] += 1
        lines, agree = [], 0
        for n in sorted((set(u['props']) | set(h['props'])) - PER_BOOT):
            uv, hv = full_value(key, n, u['props'].get(n)), full_value(key, n, h['props'].get(n))
            if uv == hv:
                agree += 1
                continue
            line = differ(n, key, 'udevd %s | hotring %s' % (show(uv), show(hv)))
            if line:
                lines.append(line)
        counts['properties'] += agree
        for l in sorted(u['all_links'] ^ h['all_links']):
            line = differ('link ' + l, key, '%s only' % ('udevd' if l in u['all_links'] else 'hotring'))
            if line:
                lines.append(line)
        counts['links'] += len(u['all_links'] & h['all_links'])
        if u['priority'] != h['priority']:
            line = differ('link_priority', key, 'udevd %s | hotring %s' % (u['priority'], h['priority']))
            if line:
                lines.append(line)
        print('%s %s (%d properties, %d links agree)' % ('DIFF' if lines else 'SAME', key, agree,
                                                         len(u['all_links'] & h['all_links'])))
        for line in lines:
            print(line)

    def compare_table(header, what, count, u_map, h_map, fmt, label):
        """One line per entry that differs; counts[count] the entries that agree."""
        nonlocal failures
        print(header)
        counts[count] = 0
        if not u_map:
            print('DIFF nothing listed from the udevd guest')
            failures += 1
        for k in sorted(set(u_map) | set(h_map)):
            uv, hv = u_map.get(k), h_map.get(k)
            if uv == hv:
                counts[count] += 1
                continue
            line = differ(what, k, 'udevd %s | hotring %s' % (fmt(uv), fmt(hv)))
            if line:
                print('DIFF %s' % label(k))
                print(line)
        print('%d %s agree' % (counts[count], {'devlinks': 'symlinks', 'run': 'entries'}.get(count, count)))

    compare_table('# device nodes under /dev: owner, group, mode (udevd | hotring)', 'node', 'nodes',
                  parse_nodes(udev_s.get('nodes', []), udev), parse_nodes(hr_s.get('nodes', []), hr),
                  lambda v: 'none' if v is None else '%s %s:%s %s' % v, lambda k: k)
    compare_table('# symlinks under /dev (link -> device)', 'symlink', 'devlinks',
                  parse_devlinks(udev_s.get('devlinks', []), udev),
                  parse_devlinks(hr_s.get('devlinks', []), hr),
                  lambda v: 'none' if v is None else '-> ' + v, lambda k: k)
    compare_table('# /run/udev: tag index, link claims, watches, static node tags (device ids as '
                  'their keys)', 'run', 'run',
                  parse_run_udev(udev_s.get('run-udev', []), udev),
                  parse_run_udev(hr_s.get('run-udev', []), hr),
                  lambda v: 'none' if v is None else ' '.join(x for x in v if x),
                  lambda k: '/run/udev' + k)

    print('# network interfaces (by device): name, address, assignment types, altnames')
    unet, hnet = parse_net(udev_s.get('net', [])), parse_net(hr_s.get('net', []))
    if not unet:
        print('DIFF no network interface listed from the udevd guest')
        failures += 1
    for dev in sorted(set(unet) | set(hnet)):
        uv, hv = unet.get(dev, {}), hnet.get(dev, {})
        diffs = [f for f in sorted(set(uv) | set(hv)) if uv.get(f) != hv.get(f)]
        if not diffs:
            counts['net'] += 1
            print('SAME %s: %s' % (dev, ' '.join('%s=%s' % (f, uv[f]) for f in sorted(uv))))
            continue
        for f in diffs:
            line = differ('net ' + f, dev, 'udevd %s | hotring %s' % (show(uv.get(f)), show(hv.get(f))))
            if line:
                print('DIFF %s' % dev)
                print(line)
    return failures, explained, counts


def compare_consumers(udev_s, hr_s, full):
    """libinput's listing and the two monitors; returns the number of differences."""
    failures = 0
    print('# libinput list-devices')
    ui = parse_libinput(udev_s.get('libinput', []))
    hi = parse_libinput(hr_s.get('libinput', []))
    hi_left = list(hi)
    for d in ui:
        match = next((x for x in hi_left if x['Device'] == d['Device']), None)
        if match is None:
            print('DIFF %s: listed with udevd only' % d['Device'])
            failures += 1
            continue
        hi_left.remove(match)
        diffs = ['%s: udevd %r | hotring %r' % (f, d.get(f), match.get(f))
                 for f in sorted(set(d) | set(match)) if d.get(f) != match.get(f)]
        if diffs:
            print('DIFF %s: %s' % (d['Device'], '; '.join(diffs)))
            failures += len(diffs)
        else:
            print('SAME %s: Capabilities: %s' % (d['Device'], d.get('Capabilities', '')))
    for d in hi_left:
        print('DIFF %s: listed with hotring only' % d['Device'])
        failures += 1
    if not ui:
        print('DIFF libinput listed no device with udevd')
        failures += 1
    print('# libudev monitor (udevadm monitor --udev) on a change of vda1')
    def vda1_change(section):
        return next((e for e in parse_monitor(section.get('monitor', []))
                     if e.get('ACTION') == 'change' and e.get('DEVPATH', '').endswith('/vda1')), None)
    um, hm = vda1_change(udev_s), vda1_change(hr_s)
    if hm is None:
        print('DIFF no change event of vda1 received from hotring')
        failures += 1
    elif um is None:
        print('DIFF no change event of vda1 received from udevd')
        failures += 1
    else:
        if full:
            names = sorted((set(um) | set(hm)) - PER_BOOT - {'SEQNUM'})
            diffs = [n for n in names if full_value('', n, um.get(n)) != full_value('', n, hm.get(n))]
        else:
            names = sorted(n for n in set(um) | set(hm) if COMPARED.match(n) or ALSO.match(n))
            diffs = [n for n in names if um.get(n) != hm.get(n)]
        for n in diffs:
            print('DIFF %s: udevd %r | hotring %r' % (n, um.get(n), hm.get(n)))
        failures += len(diffs)
        if not diffs:
            print('SAME received from both with %d properties: %s' % (len(names), ' '.join(names)))
    print('# libudev monitor with a tag filter (udevadm monitor --udev --tag-match=seat) on a '
          'change of every inputN and of vda1')
    def seat_changes(section):
        return {key_of(e.get('DEVPATH', '')): e for e in parse_monitor(section.get('monitor-seat', []))
                if e.get('ACTION') == 'change'}
    us, hs = seat_changes(udev_s), seat_changes(hr_s)
    if not us:
        print('DIFF the seat-filtered monitor received nothing from udevd')
        failures += 1
    for k in sorted(set(us) | set(hs)):
        if k not in hs or k not in us:
            print('DIFF %s: received from %s only' % (k, 'udevd' if k in us else 'hotring'))
            failures += 1
            continue
        diffs = [n for n in ('TAGS', 'CURRENT_TAGS', 'ID_FOR_SEAT') if us[k].get(n) != hs[k].get(n)]
        for n in diffs:
            print('DIFF %s %s: udevd %r | hotring %r' % (k, n, us[k].get(n), hs[k].get(n)))
        failures += len(diffs)
        if not diffs:
            print('SAME %s received from both with TAGS=%s' % (k, us[k].get('TAGS')))
    if full:
        failures += compare_watch(udev_s, hr_s)
    return failures


def watch_events(lines):
    """Sorted (action, devpath) of what the block monitor printed in the watch section."""
    out = []
    for line in lines:
        m = re.match(r'^UDEV\s+\[[\d.]+\]\s+(\S+)\s+(\S+)\s+\(block\)', line)
        if m:
            out.append((m.group(1), m.group(2)))
    return sorted(out)


def compare_watch(udev_s, hr_s):
    """What a writer's close of the watched vda1 and vda made either daemon send."""
    print('# watched nodes (OPTIONS+="watch"): a writer closes vda1, then vda')
    uw, hw = watch_events(udev_s.get('watch', [])), watch_events(hr_s.get('watch', []))
    if not uw:
        print('DIFF the block monitor received nothing from udevd')
        return 1
    if uw != hw:
        print('DIFF udevd sent %s | hotring sent %s' % (uw, hw))
        return 1
    print('SAME received from both: %s' % ', '.join('%s %s' % e for e in uw))
    return 0


def main():
    global FULL
    args = sys.argv[1:]
    if args and args[0] == '--full':
        FULL = True
        args = args[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    if FULL:
        sys.exit(main_full(*args))
    main_fallback(*args)


def main_full(udev_path, hr_path):
    udev_s, hr_s = sections(udev_path), sections(hr_path)
    failures, explained, counts = compare_full(udev_s, hr_s)
    more = compare_consumers(udev_s, hr_s, full=True)
    failures += more
    print('# explained (docs/udev-rules.md)')
    for e in explained:
        print('  ' + e)
    print('# %d devices in both, %d properties, %d links of theirs, %d nodes, %d symlinks, %d '
          'entries under /run/udev, %d network interfaces agree; %d unexplained differences; '
          '%d explained' % (
              counts['devices'], counts['properties'], counts['links'], counts['nodes'],
              counts['devlinks'], counts['run'], counts['net'], failures, len(explained)))
    return 1 if failures else 0


def main_fallback(udev_path, hr_path):
    udev_s, hr_s = sections(udev_path), sections(hr_path)
    udev, hr = parse_db(udev_s.get('export-db', [])), parse_db(hr_s.get('export-db', []))
    failures = 0
    explained = []
    agree_count = 0
    print('# properties (udevd | hotring), per device')
    for key in sorted(set(udev) | set(hr)):
        u = udev.get(key, {'props': {}, 'links': set()})
        h = hr.get(key, {'props': {}, 'links': set()})
        names = {n for n in set(u['props']) | set(h['props'])
                 if COMPARED.match(n) or ALSO.match(n)}
        if not names and not u['links'] and not h['links']:
            continue
        agree, differ = [], []
        for n in sorted(names):
            uv, hv = u['props'].get(n), h['props'].get(n)
            if uv == hv:
                agree.append(n)
            elif hv is None and explanation(key, n, u['props']):
                explained.append('%s %s=%s: %s' % (key, n, uv, explanation(key, n, u['props'])))
            else:
                differ.append('  DIFF %s: udevd %s | hotring %s' % (
                    n, 'unset' if uv is None else repr(uv), 'unset' if hv is None else repr(hv)))
        if u['links'] != h['links']:
            for l in sorted(u['links'] - h['links']):
                if explanation(key, l, u['props']):
                    explained.append('%s link %s: %s' % (key, l, explanation(key, l, u['props'])))
                    continue
                differ.append('  DIFF link %s: udevd only' % l)
            for l in sorted(h['links'] - u['links']):
                differ.append('  DIFF link %s: hotring only' % l)
        agree_count += len(agree)
        print('%s %s' % ('DIFF' if differ else 'SAME', key))
        if agree:
            print('  agree: ' + ' '.join(agree))
        if u['links'] and u['links'] == h['links']:
            print('  links agree: ' + ' '.join(sorted(u['links'])))
        for d in differ:
            print(d)
        failures += len(differ)
    print('# links under /dev/disk and /dev/input (link -> device)')
    ul = parse_links(udev_s.get('links', []), udev)
    hl = parse_links(hr_s.get('links', []), hr)
    for l in sorted(set(ul) | set(hl)):
        if ul.get(l) == hl.get(l):
            print('SAME %s -> %s' % (l, ul[l]))
        elif l not in hl and explanation(ul[l], l[len('/dev/'):], udev.get(ul[l], {}).get('props', {})):
            print('EXPLAINED %s -> %s (udevd only)' % (l, ul[l]))
        else:
            print('DIFF %s: udevd -> %s | hotring -> %s' % (l, ul.get(l, 'none'), hl.get(l, 'none')))
            failures += 1
    failures += compare_consumers(udev_s, hr_s, full=False)
    print('# explained (not computed by hotring, docs/udev-compat.md)')
    for e in explained:
        print('  ' + e)
    print('# %d properties agree; %d unexplained differences; %d explained' % (
        agree_count, failures, len(explained)))
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
