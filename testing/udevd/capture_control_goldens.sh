#!/bin/sh
# Records what Debian 12's own `udevadm` 252 sends on udev's control socket, for
# hotplug/udev:control_message_test: in a private mount namespace with tmpfs over /run/udev, a
# small SEQPACKET server at /run/udev/control takes each command's packets and hangs up after its
# END (or EXIT) message; each packet becomes one line "ARGS | HEX".
#
#   sh testing/udevd/capture_control_goldens.sh > hotplug/udev/testdata/udevadm_control_252.txt
set -eu
command -v udevadm >/dev/null || { echo "no udevadm (apt-get install udev)" >&2; exit 1; }
exec unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs /run/udev && exec python3 -c "
import socket, subprocess
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(\"/run/udev/control\")
s.listen(8)
commands = [
    [\"control\", \"--log-level=debug\"], [\"control\", \"--log-level=err\"], [\"control\", \"-s\"],
    [\"control\", \"-S\"], [\"control\", \"-R\"], [\"control\", \"-p\", \"FOO=bar baz\"],
    [\"control\", \"--property=FOO=\"], [\"control\", \"-m\", \"7\"], [\"control\", \"--ping\"],
    [\"control\", \"--exit\"], [\"settle\"],
]
for args in commands:
    udevadm = subprocess.Popen([\"udevadm\"] + args)
    connection, _ = s.accept()
    while True:
        packet = connection.recv(4096)
        if not packet:
            break
        print(\" \".join(args), \"|\", packet.hex())
        if int.from_bytes(packet[20:24], \"little\") in (0, 8):
            break
    connection.close()
    udevadm.wait()
"'
