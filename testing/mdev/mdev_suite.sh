#!/bin/sh
# The cases of busybox's testsuite/mdev.tests, run the way that suite runs them: a chroot tree
# with a fake /sys, the binary under test copied in as /mdev (it must be static: nothing else is
# in the tree), a static shell as /bin/sh for commands, and the resulting /dev compared as
# `ls -lnR` text. Then cases of our own for what the busybox suite leaves out (mdev -s over
# /sys/dev, /dev/mdev.seq, the remove command, '!', exit codes), whose expected outputs were
# checked against busybox's own mdev (run this script with /bin/busybox as the binary).
#
# usage: mdev_suite.sh MDEV_BINARY [--hotring] [STATIC_SH]   (as root: chroot)
# --hotring adds the cases where hotring deliberately differs from busybox (nothing outside
# /dev, no /proc needed).
# Exit status: the number of failed cases.
set -u
export LC_ALL=C
# chroot lives in /usr/sbin, which a test runner's PATH may leave out.
export PATH="$PATH:/usr/sbin:/sbin:/usr/bin:/bin"

HERE=$(cd "$(dirname "$0")" && pwd)
MDEV_BIN=${1:?usage: mdev_suite.sh MDEV_BINARY [--hotring] [STATIC_SH]}
shift
HOTRING_CASES=0
SH_BIN=/bin/busybox
for arg in "$@"; do
  case "$arg" in
    --hotring) HOTRING_CASES=1 ;;
    *) SH_BIN=$arg ;;
  esac
done
case "$MDEV_BIN" in /*) ;; *) MDEV_BIN="$PWD/$MDEV_BIN" ;; esac
case "$SH_BIN" in /*) ;; *) SH_BIN="$PWD/$SH_BIN" ;; esac

# The chroot holds nothing but the binary: a dynamic one (a sanitizer build) cannot run there.
case "$(file -b -L "$MDEV_BIN")" in
  *static*) ;;
  *)
    . "$HERE/../skip_test.sh"
    skip_test mdev_suite "$MDEV_BIN is not a static binary (a sanitizer build?)"
    ;;
esac

if [ "$(id -u)" != 0 ]; then
  echo "mdev_suite.sh: needs root (chroot, mknod, chown)" >&2
  exit 1
fi

WORK=$(mktemp -d "${TEST_TMPDIR:-/tmp}/mdev_suite.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1

FAILCOUNT=0
PASSCOUNT=0

# ls -ln shows dates: "maj,  min" -> "maj,min", spaces coalesced, then the date (and for
# FILTER_LS2 the size) cut away, exactly as busybox's suite filters.
FILTER_LS="grep -v '^total ' | sed -e 's/,  */,/g' -e 's/  */ /g' | cut -d' ' -f 1-5,9-"
FILTER_LS2="grep -v '^total ' | sed -e 's/,  */,/g' -e 's/  */ /g' | cut -d' ' -f 1-4,9-"
# Ours: nodes keep maj,min; directories and links lose their size (it varies by filesystem).
FILTER_LSN="grep -v '^total ' | sed -e 's/,  */,/g' -e 's/  */ /g' | sed -e '/^[bc]/s/^\\(\\([^ ]* \\)\\{5\\}\\)\\([^ ]* \\)\\{3\\}/\\1/' -e '/^[-dlps]/s/^\\(\\([^ ]* \\)\\{4\\}\\)\\([^ ]* \\)\\{4\\}/\\1/'"

# testing NAME COMMANDS EXPECTED: runs COMMANDS with sh, compares its stdout with EXPECTED
# (printf %b escapes), as busybox's testing.sh does.
testing() {
  printf '%b' "$3" >expected
  eval "$2" >actual
  if cmp -s expected actual; then
    PASSCOUNT=$((PASSCOUNT + 1))
    echo "PASS: $1"
  else
    FAILCOUNT=$((FAILCOUNT + 1))
    echo "FAIL: $1"
    diff -u expected actual
  fi
  rm -f expected actual
}

T=mdev.testdir
rm -rf $T
mkdir $T
cp "$MDEV_BIN" $T/mdev
mkdir $T/bin
cp "$SH_BIN" $T/bin/sh
mkdir $T/etc
mkdir $T/dev
mkdir -p $T/sys/block/sda
echo "8:0" >$T/sys/block/sda/dev

# ---- busybox testsuite/mdev.tests, case by case ----

testing "mdev add /block/sda" \
	"env - PATH=$PATH ACTION=add DEVPATH=/block/sda chroot $T /mdev 2>&1;
	ls -ln $T/dev | $FILTER_LS" \
"\
brw-rw---- 1 0 0 8,0 sda
"

testing "mdev deletes /block/sda" \
	"env - PATH=$PATH ACTION=remove DEVPATH=/block/sda chroot $T /mdev 2>&1;
	ls -ln $T/dev | $FILTER_LS" \
""

rm -rf $T/dev/*
echo ".* 1:1 666" >$T/etc/mdev.conf
echo "sda 2:2 444" >>$T/etc/mdev.conf
testing "mdev stops on first rule" \
	"env - PATH=$PATH ACTION=add DEVPATH=/block/sda chroot $T /mdev 2>&1;
	ls -ln $T/dev | $FILTER_LS" \
"\
brw-rw-rw- 1 1 1 8,0 sda
"

rm -rf $T/dev/*
echo "-.* 1:1 666" >$T/etc/mdev.conf
echo "sda 2:2 444" >>$T/etc/mdev.conf
testing "mdev does not stop on dash-rule" \
	"env - PATH=$PATH ACTION=add DEVPATH=/block/sda chroot $T /mdev 2>&1;
	ls -ln $T/dev | $FILTER_LS" \
"\
br--r--r-- 1 2 2 8,0 sda
"

rm -rf $T/dev/*
echo "\$MODALIAS=qw  1:1 666" >$T/etc/mdev.conf
echo "\$MODALIAS=qw. 2:2 444" >>$T/etc/mdev.conf
echo "\$MODALIAS=qw. 3:3 400" >>$T/etc/mdev.conf
testing "mdev \$ENVVAR=regex match" \
	"env - PATH=$PATH ACTION=add DEVPATH=/block/sda MODALIAS=qwe chroot $T /mdev 2>&1;
	ls -ln $T/dev | $FILTER_LS" \
"\
br--r--r-- 1 2 2 8,0 sda
"

rm -rf $T/dev/*
echo "sda 0:0 444 >disk/scsiA" >$T/etc/mdev.conf
testing "mdev move/symlink rule '>bar/baz'" \
	"env - PATH=$PATH ACTION=add DEVPATH=/block/sda chroot $T /mdev 2>&1;
	ls -lnR $T/dev | $FILTER_LS2" \
"\
$T/dev:
drwxr-xr-x 2 0 0 disk
lrwxrwxrwx 1 0 0 sda -> disk/scsiA

$T/dev/disk:
br--r--r-- 1 0 0 scsiA
"

rm -rf $T/dev/*
echo "sda 0:0 444 >disk/" >$T/etc/mdev.conf
testing "mdev move/symlink rule '>bar/'" \
	"env - PATH=$PATH ACTION=add DEVPATH=/block/sda chroot $T /mdev 2>&1;
	ls -lnR $T/dev | $FILTER_LS2" \
"\
$T/dev:
drwxr-xr-x 2 0 0 disk
lrwxrwxrwx 1 0 0 sda -> disk/sda

$T/dev/disk:
br--r--r-- 1 0 0 sda
"

rm -rf $T/dev/*
echo "sda 0:0 444 =disk/sd/a" >$T/etc/mdev.conf
testing "mdev move rule '=bar/baz/fname'" \
	"env - PATH=$PATH ACTION=add DEVPATH=/block/sda chroot $T /mdev 2>&1;
	ls -lnR $T/dev | $FILTER_LS2" \
"\
$T/dev:
drwxr-xr-x 3 0 0 disk

$T/dev/disk:
drwxr-xr-x 2 0 0 sd

$T/dev/disk/sd:
br--r--r-- 1 0 0 a
"

rm -rf $T/dev/*
# A group that does not take part in the match (1) and %0.
echo "s([0-9])*d([a-z]+) 0:0 644 >sd/%2_%0" >$T/etc/mdev.conf
testing "mdev regexp substring match + replace" \
	"env - PATH=$PATH ACTION=add DEVPATH=/block/sda chroot $T /mdev 2>&1;
	ls -lnR $T/dev | $FILTER_LS2" \
"\
$T/dev:
drwxr-xr-x 2 0 0 sd
lrwxrwxrwx 1 0 0 sda -> sd/a_sda

$T/dev/sd:
brw-r--r-- 1 0 0 a_sda
"

rm -rf $T/dev/*
echo "sda 0:0 644 @echo @echo TEST" >$T/etc/mdev.conf
testing "mdev command" \
	"env - PATH=$PATH ACTION=add DEVPATH=/block/sda chroot $T /mdev 2>&1;
	ls -lnR $T/dev | $FILTER_LS" \
"\
@echo TEST
$T/dev:
brw-r--r-- 1 0 0 8,0 sda
"

rm -rf $T/dev/*
echo "sda 0:0 644 =block/ @echo @echo TEST:\$MDEV" >$T/etc/mdev.conf
testing "mdev move and command" \
	"env - PATH=$PATH ACTION=add DEVPATH=/block/sda chroot $T /mdev 2>&1;
	ls -lnR $T/dev | $FILTER_LS2" \
"\
@echo TEST:block/sda
$T/dev:
drwxr-xr-x 2 0 0 block

$T/dev/block:
brw-r--r-- 1 0 0 sda
"

rm -rf $T/dev/*
echo "@8,0 0:1 644" >$T/etc/mdev.conf
testing "mdev #maj,min and no explicit uid" \
	"env - PATH=$PATH ACTION=add DEVPATH=/block/sda chroot $T /mdev 2>&1;
	ls -lnR $T/dev | $FILTER_LS" \
"\
$T/dev:
brw-r--r-- 1 0 1 8,0 sda
"

rm -rf $T/dev/*
mkdir -p $T/sys/class/tty/capi
echo "191:0" >$T/sys/class/tty/capi/dev
mkdir -p $T/sys/class/tty/capi1
echo "191:1" >$T/sys/class/tty/capi1/dev
mkdir -p $T/sys/class/tty/capi20
echo "191:20" >$T/sys/class/tty/capi20/dev
echo "capi            0:0 0660 =capi20"      >$T/etc/mdev.conf
echo "capi([0-9])     0:0 0660 =capi20.0%1" >>$T/etc/mdev.conf
echo "capi([0-9]*)    0:0 0660 =capi20.%1"  >>$T/etc/mdev.conf
# An mdev run with DEVPATH=/class/tty/capi20 used to delete /dev/capi20.
testing "move rule does not delete node with name == device_name" \
	"\
	env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi chroot $T /mdev 2>&1;
	env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi1 chroot $T /mdev 2>&1;
	env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi20 chroot $T /mdev 2>&1;
	ls -lnR $T/dev | $FILTER_LS" \
"\
$T/dev:
crw-rw---- 1 0 0 191,0 capi20
crw-rw---- 1 0 0 191,1 capi20.01
crw-rw---- 1 0 0 191,20 capi20.20
"

# ---- beyond busybox's suite: expected outputs as busybox's own mdev gives them ----

# No config at all: the built-in default (root:root 0660).
rm -rf $T/dev/* $T/etc/mdev.conf
testing "no mdev.conf: root:root 0660" \
	"env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi1 chroot $T /mdev 2>&1;
	ls -ln $T/dev | $FILTER_LS" \
"\
crw-rw---- 1 0 0 191,1 capi1
"

# Users and groups by name, from the chroot's own /etc/passwd and /etc/group.
rm -rf $T/dev/*
printf 'root:x:0:0:root:/root:/bin/sh\nuucp:x:10:14:uucp:/var/spool/uucp:/bin/sh\n' >$T/etc/passwd
printf 'root:x:0:\ndialout:x:20:\ndisk:x:6:\n' >$T/etc/group
echo "capi1 uucp:dialout 0620" >$T/etc/mdev.conf
testing "user and group names from /etc/passwd and /etc/group" \
	"env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi1 chroot $T /mdev 2>&1;
	ls -ln $T/dev | $FILTER_LS" \
"\
crw--w---- 1 10 20 191,1 capi1
"

# '!' makes no node, but the command still runs.
rm -rf $T/dev/*
echo "capi1 0:0 0660 ! @echo no node for \$MDEV" >$T/etc/mdev.conf
testing "'!' suppresses the node, not the command" \
	"env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi1 chroot $T /mdev 2>&1;
	ls -ln $T/dev | $FILTER_LS" \
"\
no node for capi1
"

# '\$' runs before removal, '*' on both; '@' not on remove. The command sees the event.
rm -rf $T/dev/*
echo "capi1 0:0 0660 >tty/ *echo \$ACTION \$MDEV \$DEVPATH" >$T/etc/mdev.conf
testing "'*' command on add and remove, link removed with the node" \
	"env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi1 chroot $T /mdev 2>&1;
	env - PATH=$PATH ACTION=remove DEVPATH=/class/tty/capi1 chroot $T /mdev 2>&1;
	ls -lnR $T/dev | $FILTER_LS2" \
"\
add tty/capi1 /class/tty/capi1
remove tty/capi1 /class/tty/capi1
$T/dev:
drwxr-xr-x 2 0 0 tty

$T/dev/tty:
"

# DEVNAME from the environment names the node (with its directory).
rm -rf $T/dev/*
rm -f $T/etc/mdev.conf
testing "DEVNAME with a directory" \
	"env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi1 DEVNAME=capi/one chroot $T /mdev 2>&1;
	ls -lnR $T/dev | $FILTER_LSN" \
"\
$T/dev:
drwxr-xr-x 2 0 0 capi

$T/dev/capi:
crw-rw---- 1 0 0 191,1 one
"

# SUBSYSTEM=regex; prefixes match the event's environment.
rm -rf $T/dev/*
echo "SUBSYSTEM=usb;capi.* 0:0 0600" >$T/etc/mdev.conf
echo "SUBSYSTEM=tty;capi.* 0:0 0640" >>$T/etc/mdev.conf
testing "SUBSYSTEM=regex; prefix" \
	"env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi1 SUBSYSTEM=tty chroot $T /mdev 2>&1;
	ls -ln $T/dev | $FILTER_LS" \
"\
crw-r----- 1 0 0 191,1 capi1
"

# /dev/mdev.seq: (stderr is not compared: busybox complains that the chroot has no /proc to
# look for other mdevs in) a seed line is replaced by SEQNUM+1; a matching SEQNUM too.
rm -rf $T/dev/*
rm -f $T/etc/mdev.conf
echo >$T/dev/mdev.seq
testing "mdev.seq seed" \
	"env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi1 SEQNUM=41 chroot $T /mdev 2>/dev/null;
	cat $T/dev/mdev.seq; echo;
	env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi20 SEQNUM=42 chroot $T /mdev 2>/dev/null;
	cat $T/dev/mdev.seq; echo;
	ls -ln $T/dev | grep -c ' 191, '" \
"\
42
43
2
"

# A later mdev already ran (mdev.seq ahead): the file is left as it is.
printf 100 >$T/dev/mdev.seq
testing "mdev.seq ahead of SEQNUM is left alone" \
	"env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi SEQNUM=50 chroot $T /mdev 2>/dev/null;
	cat $T/dev/mdev.seq; echo" \
"\
100
"
rm -f $T/dev/mdev.seq

# mdev -s: every device under /sys/dev, named by DEVNAME in its uevent file or by its
# directory, block or char by the path, SUBSYSTEM from the subsystem link.
rm -rf $T/dev/* $T/sys
mkdir -p $T/sys/dev/char $T/sys/dev/block $T/sys/class/tty $T/sys/class/sound $T/sys/class/block
mkdir -p $T/sys/devices/virtual/tty/ttyS0 $T/sys/devices/virtual/sound/card0/controlC0
mkdir -p $T/sys/devices/pci/block/vda/vda1 $T/sys/devices/virtual/misc/nodevname
echo "4:64" >$T/sys/devices/virtual/tty/ttyS0/dev
printf 'MAJOR=4\nMINOR=64\nDEVNAME=ttyS0\n' >$T/sys/devices/virtual/tty/ttyS0/uevent
ln -s ../../../../class/tty $T/sys/devices/virtual/tty/ttyS0/subsystem
echo "116:7" >$T/sys/devices/virtual/sound/card0/controlC0/dev
printf 'MAJOR=116\nMINOR=7\nDEVNAME=snd/controlC0\n' >$T/sys/devices/virtual/sound/card0/controlC0/uevent
ln -s ../../../../../class/sound $T/sys/devices/virtual/sound/card0/controlC0/subsystem
echo "10:99" >$T/sys/devices/virtual/misc/nodevname/dev
echo "252:0" >$T/sys/devices/pci/block/vda/dev
printf 'MAJOR=252\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\n' >$T/sys/devices/pci/block/vda/uevent
ln -s ../../../../class/block $T/sys/devices/pci/block/vda/subsystem
echo "252:1" >$T/sys/devices/pci/block/vda/vda1/dev
printf 'MAJOR=252\nMINOR=1\nDEVNAME=vda1\nDEVTYPE=partition\n' >$T/sys/devices/pci/block/vda/vda1/uevent
ln -s ../../../../../class/block $T/sys/devices/pci/block/vda/vda1/subsystem
ln -s ../../devices/virtual/tty/ttyS0 $T/sys/dev/char/4:64
ln -s ../../devices/virtual/sound/card0/controlC0 $T/sys/dev/char/116:7
ln -s ../../devices/virtual/misc/nodevname $T/sys/dev/char/10:99
ln -s ../../devices/pci/block/vda $T/sys/dev/block/252:0
ln -s ../../devices/pci/block/vda/vda1 $T/sys/dev/block/252:1
cat >$T/etc/mdev.conf <<'CONF'
# a comment line
SUBSYSTEM=block;vd[a-z]+([0-9]+) 0:6 0640 >disk/part%1
vd[a-z] 0:6 0660 =disk/
ttyS[0-9]+ 0:20 0620 @echo $SUBSYSTEM:$MDEV:$ACTION >/dev/made.txt
snd/.* 0:29 0666
CONF
testing "mdev -s over /sys/dev" \
	"env - PATH=$PATH chroot $T /mdev -s 2>&1; echo exit \$?;
	cat $T/dev/made.txt; rm -f $T/dev/made.txt;
	ls -lnR $T/dev | $FILTER_LSN" \
"\
exit 0
tty:ttyS0:add
$T/dev:
crw-rw---- 1 0 0 10,99 10:99
drwxr-xr-x 2 0 0 disk
drwxr-xr-x 2 0 0 snd
crw--w---- 1 0 20 4,64 ttyS0
lrwxrwxrwx 1 0 0 vda1 -> disk/part1

$T/dev/disk:
brw-r----- 1 0 6 252,1 part1
brw-rw---- 1 0 6 252,0 vda

$T/dev/snd:
crw-rw-rw- 1 0 29 116,7 controlC0
"

# Firmware: /lib/firmware/$FIRMWARE copied into /sys$DEVPATH/data between "1" and "0" written
# to /sys$DEVPATH/loading; "-1" when there is no such file.
mkdir -p $T/sys/devices/fw0 $T/lib/firmware
: >$T/sys/devices/fw0/loading
: >$T/sys/devices/fw0/data
printf 'BLOB' >$T/lib/firmware/x.bin
rm -f $T/etc/mdev.conf
testing "firmware loaded through loading and data" \
	"env - PATH=$PATH ACTION=add DEVPATH=/devices/fw0 FIRMWARE=x.bin chroot $T /mdev 2>&1; echo \$?;
	cat $T/sys/devices/fw0/loading; echo; cat $T/sys/devices/fw0/data; echo" \
"\
0
10
BLOB
"
: >$T/sys/devices/fw0/loading
: >$T/sys/devices/fw0/data
testing "missing firmware: -1 into loading" \
	"env - PATH=$PATH ACTION=add DEVPATH=/devices/fw0 FIRMWARE=none.bin chroot $T /mdev 2>&1; echo \$?;
	cat $T/sys/devices/fw0/loading; echo; cat $T/sys/devices/fw0/data; echo" \
"\
0
-1

"
rm -rf $T/sys/devices/fw0 $T/lib

# Event values reach a command only through its environment: shell syntax in DEVNAME is a name.
rm -rf $T/dev/*
echo ".* 0:0 0660 @echo [\$MDEV]" >$T/etc/mdev.conf
testing "DEVNAME with shell syntax runs nothing" \
	"env - PATH=$PATH ACTION=add DEVPATH=/dev/char/4:64 DEVNAME='\$(touch pwned);touch pwned2' chroot $T /mdev 2>&1;
	ls $T/dev; ls $T | grep -c pwned" \
"\
[\$(touch pwned);touch pwned2]
\$(touch pwned);touch pwned2
0
"
rm -f $T/etc/mdev.conf

if [ "$HOTRING_CASES" = 1 ]; then
  # Busybox creates /dev/../etc/evil here; hotring refuses names that leave /dev.
  rm -rf $T/dev/*
  testing "hotring: DEVNAME cannot leave /dev" \
	"env - PATH=$PATH ACTION=add DEVPATH=/dev/char/4:64 DEVNAME=../etc/evil chroot $T /mdev >/dev/null 2>&1; echo \$?;
	ls $T/etc $T/dev" \
"\
0
$T/dev:

$T/etc:
group
passwd
"
  # Busybox exits 1 when it cannot list /proc to wake other mdevs; a bare chroot has no /proc.
  rm -rf $T/dev/*
  printf 7 >$T/dev/mdev.seq
  testing "hotring: mdev.seq without /proc" \
	"env - PATH=$PATH ACTION=add DEVPATH=/dev/char/4:64 SEQNUM=7 chroot $T /mdev 2>&1; echo \$?;
	cat $T/dev/mdev.seq; echo" \
"\
0
8
"
  rm -f $T/dev/mdev.seq
fi

# mdev -d: /dev is populated by the time the command returns, and the daemon stays behind (in
# a private network namespace, so that its control socket is its own). Commands need /dev/null,
# which the scan makes from /sys/dev/char/1:3.
rm -rf $T/dev/*
mkdir -p $T/sys/devices/virtual/mem/null
echo "1:3" >$T/sys/devices/virtual/mem/null/dev
printf 'MAJOR=1\nMINOR=3\nDEVNAME=null\n' >$T/sys/devices/virtual/mem/null/uevent
# (With no subsystem link, busybox's rule would keep the previous device's SUBSYSTEM, "block",
# and make a block node.)
mkdir -p $T/sys/class/mem
ln -s ../../../../class/mem $T/sys/devices/virtual/mem/null/subsystem
ln -s ../../devices/virtual/mem/null $T/sys/dev/char/1:3
cat >$T/etc/mdev.conf <<'CONF'
ttyS[0-9]+ 0:20 0620 @echo $SUBSYSTEM:$MDEV:$ACTION >/dev/made.txt
vd[a-z] 0:6 0660 =disk/
CONF
ROOT_REAL=$(cd $T && pwd -P)
# The processes this suite started in the chroot, by pid (their root is the test tree).
chroot_pids() {
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$ROOT_REAL" ] && echo "${p#/proc/}"
  done
}
testing "mdev -d: the scan is done when it returns" \
	"env - PATH=$PATH unshare -n chroot $T /mdev -d >/dev/null 2>&1; echo \$?;
	cat $T/dev/made.txt; ls $T/dev | grep -v made.txt" \
"\
0
tty:ttyS0:add
10:99
disk
null
snd
ttyS0
vda1
"
DAEMON_PIDS=$(chroot_pids)
if [ "$HOTRING_CASES" = 1 ]; then
  # The daemon handles events with the same rules: one sent to its control socket.
  DAEMON_PID=$(echo $DAEMON_PIDS | cut -d' ' -f1)
  testing "hotring: mdev -d handles events with the rules" \
	"nsenter -t $DAEMON_PID -n $MDEV_BIN send --socket @/run/hotring/control --wait=10 \
	  --env ACTION=add --env DEVPATH=/devices/virtual/tty/ttyS0 --env SUBSYSTEM=tty \
	  --env MAJOR=4 --env MINOR=65 --env DEVNAME=ttyS9 >/dev/null 2>&1; echo \$?;
	ls -ln $T/dev/ttyS9 | $FILTER_LS" \
"\
0
crw--w---- 1 0 20 4,65 $T/dev/ttyS9
"
fi
for pid in $DAEMON_PIDS; do kill "$pid" 2>/dev/null; done
for pid in $DAEMON_PIDS; do
  i=0
  while [ -d "/proc/$pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
done
rm -f $T/dev/made.txt $T/etc/mdev.conf

# Exit codes: no ACTION/DEVPATH is a usage error (1); no /dev is fatal (1).
testing "no ACTION or DEVPATH: exit 1" \
	"env - PATH=$PATH DEVPATH=/class/tty/capi1 chroot $T /mdev >/dev/null 2>&1; echo \$?" \
"\
1
"
rm -rf $T/dev
testing "no /dev: exit 1" \
	"env - PATH=$PATH ACTION=add DEVPATH=/class/tty/capi1 chroot $T /mdev >/dev/null 2>&1; echo \$?" \
"\
1
"

echo "mdev suite: $PASSCOUNT passed, $FAILCOUNT failed ($MDEV_BIN)"
exit $FAILCOUNT
