// The board that `hotring bench rules` runs mdev on: a generated root holding a sysfs tree of
// block, tty, input and net devices laid out as the kernel lays them out (/sys/devices/...,
// /sys/dev/{char,block}/M:m links, subsystem links, uevent files with DEVNAME), the
// /etc/mdev.conf of a typical board (40 lines), /etc/passwd and /etc/group, and an empty /dev.
// Also the comparison of two /dev trees (names, types, numbers, owners, modes, link targets).
#ifndef HOTRING_HOTPLUG_BENCH_BENCH_RULES_TREE_H_
#define HOTRING_HOTPLUG_BENCH_BENCH_RULES_TREE_H_

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hotring::hotplug::bench {

// How many devices of each kind the tree has. Net interfaces have no device node (no `dev`
// file, not under /sys/dev): mdev -s walks past them, as on a real board.
struct BoardCounts {
  size_t misc = 0;   // null, zero, console, rtc0, fb0, snd/..., dri/..., i2c-N, ...
  size_t block = 0;  // sd disks and partitions, mmcblk disks and partitions, loop
  size_t tty = 0;    // tty0..63, ttyS, ttyUSB, ttyACM
  size_t input = 0;  // input/eventN, input/mouseN
  size_t net = 0;    // ethN: no node
  [[nodiscard]] size_t nodes() const { return misc + block + tty + input; }
  [[nodiscard]] size_t total() const { return nodes() + net; }
};

// The 40-line mdev.conf of the board (Alpine's and busybox's documented rules: names, groups,
// modes, =dir/ moves, >links with %N groups, a SUBSYSTEM= prefix, a $MODALIAS command).
[[nodiscard]] const char* BoardMdevConf();

// Creates ROOT/sys (`devices` devices in all, about 40% block, 30% tty, 26% input, 2% net and
// the fixed misc devices), ROOT/etc/{mdev.conf,passwd,group} and an empty ROOT/dev. ROOT must
// exist and be empty.
absl::StatusOr<BoardCounts> GenerateBoardTree(const std::string& root, size_t devices);

// One entry of a /dev tree: "c 0660 0:5 4:64" (type, mode, uid:gid, then major:minor for
// nodes or the target for links).
using DevSnapshot = std::map<std::string, std::string>;  // relative path -> description

// Reads every entry under `dev_dir` (not following links).
absl::StatusOr<DevSnapshot> SnapshotDev(const std::string& dev_dir);

// Human-readable differences ("only in a: x", "x: a=... b=..."), at most `limit`; empty when equal.
[[nodiscard]] std::vector<std::string> DiffSnapshots(const DevSnapshot& a, const DevSnapshot& b,
                                                     size_t limit = 10);

// Removes everything inside `dir` (not `dir` itself), without following links.
absl::Status ClearDirectory(const std::string& dir);

}  // namespace hotring::hotplug::bench

#endif  // HOTRING_HOTPLUG_BENCH_BENCH_RULES_TREE_H_
