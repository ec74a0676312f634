#!/bin/sh
# Makes the disk images of the blkid goldens in DIR with Debian's own tools (fixed labels and
# UUIDs), one file per image: filesystems, swap, LUKS1, an LVM2 physical volume (its label
# written by lvm2_label.py: pvcreate wants a block device), GPT and MBR disks.
#
#   sh testing/udevbuiltins/make_images.sh DIR     (root, Debian 12; installs the tools)
set -eu
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
need="e2fsprogs dosfstools squashfs-tools btrfs-progs xfsprogs cryptsetup-bin erofs-utils exfatprogs ntfs-3g xorriso f2fs-tools gdisk fdisk"
. "$here/../debian_packages.sh"
# shellcheck disable=SC2086
install_missing $need
content=$(mktemp -d)
trap 'rm -rf "$content"' EXIT
echo hotring > "$content/file"
img() { rm -f "$dir/$1"; truncate -s "$2" "$dir/$1"; }

img ext4 4M
mkfs.ext4 -q -F -L hr-ext4 -U 0b9c1d3e-5f7a-4c2b-9e8d-123456789abc -E hash_seed=4f6c9f6e-8e2b-4c61-9d7a-2f4a3c1b0e11 "$dir/ext4"
img vfat 2M
mkfs.vfat -i 1234ABCD -n HRVFAT "$dir/vfat" >/dev/null
img swap 1M
mkswap -L hr-swap -U 9a3e0c6d-1b2f-4e5a-8c7d-6e5f4a3b2c1d "$dir/swap" >/dev/null
rm -f "$dir/squashfs"
mksquashfs "$content" "$dir/squashfs" -noappend -all-root -mkfs-time 0 -all-time 0 -quiet >/dev/null
img btrfs 128M
mkfs.btrfs -q -f -L hr-btrfs -U 6f1d2c3b-4a59-4e8f-9d7c-1b2a3c4d5e6f "$dir/btrfs"
img xfs 300M
mkfs.xfs -q -f -L hr-xfs -m uuid=3c2b1a09-8f7e-4d6c-b5a4-93827160f1e2 "$dir/xfs"
img luks1 4M
printf 'hotring' > "$content/key"
cryptsetup luksFormat -q --type luks1 --cipher aes-cbc-essiv:sha256 --key-size 128 --hash sha256 \
  --pbkdf-force-iterations 1000 --uuid 7e6d5c4b-3a29-4817-a6b5-c4d3e2f1a0b9 --key-file "$content/key" "$dir/luks1"
# The key material after the header is random and of no interest to blkid: zeros pack small.
dd if=/dev/zero of="$dir/luks1" bs=4096 seek=1 count=1023 conv=notrunc 2>/dev/null
rm -f "$dir/erofs"
mkfs.erofs -U2a3b4c5d-6e7f-4819-a2b3-c4d5e6f70819 -T0 "$dir/erofs" "$content" >/dev/null
# exfatprogs 1.2 picks the volume serial itself: the committed image keeps the one it chose.
img exfat 8M
mkfs.exfat -L HREXFAT "$dir/exfat" >/dev/null
img ntfs 4M
mkntfs -q -F -f -L hr-ntfs -s 512 -p 0 -H 0 -S 0 "$dir/ntfs" >/dev/null 2>&1
rm -f "$dir/iso9660"
xorriso -as mkisofs -quiet -V HR_ISO -publisher HOTRING -A HOTRING-APP \
  --modification-date=2024010100000000 -o "$dir/iso9660" "$content" 2>/dev/null
img f2fs 64M
mkfs.f2fs -q -f -l hr-f2fs -U 5d4c3b2a-1908-4f7e-8d6c-5b4a39281706 "$dir/f2fs" >/dev/null
img lvm2 4M
python3 "$here/lvm2_label.py" "$dir/lvm2" Hr0tRgL1VmPvUuidAbCdEfGhIjKlMnOp
img gpt 8M
sgdisk -U 8e7d6c5b-4a39-4281-9f0e-1d2c3b4a5968 \
  -n 1:2048:4095 -t 1:ef00 -c 1:hr-esp -u 1:1a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d \
  -n 2:4096:0 -t 2:8304 -c 2:hr-root -u 2:2b3c4d5e-6f7a-4b9c-8d1e-2f3a4b5c6d7e "$dir/gpt" >/dev/null
img dos 4M
printf 'label: dos\nlabel-id: 0x12345678\nstart=2048, size=2048, type=83\nstart=4096, type=5\nstart=6144, type=82\n' |
  sfdisk -q "$dir/dos" >/dev/null
echo "$dir"
