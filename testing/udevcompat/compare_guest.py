#!/usr/bin/env python3
"""Compares what libudev's consumers see in the two comparison guests (guest_compare.sh).

  compare_guest.py UDEV_DUMP HOTRING_DUMP

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


def key_of(devpath):
    return NETNAME.sub('/net/*', INSTANCE.sub(lambda m: '/%s*' % m.group(1), devpath))


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
            cur = devices.setdefault(k, {'props': {}, 'links': set(), 'node': ''})
        elif cur is None:
            continue
        elif tag == 'E':
            name, _, value = val.partition('=')
            cur['props'][name] = normalized(name, value)
        elif tag == 'S' and (val.startswith('disk/') or val.startswith('input/')):
            cur['links'].add(val)
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


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    udev_s, hr_s = sections(sys.argv[1]), sections(sys.argv[2])
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
    print('# explained (not computed by hotring, docs/udev-compat.md)')
    for e in explained:
        print('  ' + e)
    print('# %d properties agree; %d unexplained differences; %d explained' % (
        agree_count, failures, len(explained)))
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
