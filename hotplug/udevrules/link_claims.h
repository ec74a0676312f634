// Who gets a /dev link that several devices ask for, as systemd-udevd 252 decides it: every
// device that wants link L has a claim in RUN/links/<L escaped>/<device id>, a symlink whose
// target reads "PRIORITY:/dev/NODE"; the claim directory is locked (flock on its ".lock") while
// one device updates it; the link then points at the node of the highest priority among the
// claims whose node exists. On a tie the device being handled keeps (or takes) the link when it
// adds its claim; among the others the first by name wins (udevd takes the first its readdir
// returns). With no claim left the link is removed, with its empty directories. Two exceptions,
// as Debian's udevd 252.39 has them: a disk's own disk/by-diskseq/<DISKSEQ> link is made without
// a claim (IsOwnDiskseqLink), and once no event is being handled the ".lock" files and the
// directories left empty go (CleanUpLinkClaims).
#ifndef HOTRING_HOTPLUG_UDEVRULES_LINK_CLAIMS_H_
#define HOTRING_HOTPLUG_UDEVRULES_LINK_CLAIMS_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hotplug/devroot/dev_root.h"

namespace hotring::hotplug::udevrules {

// udev_node_escape_path: '/' becomes "\x2f" and '\' "\x5c". Empty when the result would not fit
// a file name (udevd then shortens it with a keyed hash; such links are refused here).
[[nodiscard]] std::string EscapeLinkName(absl::string_view link);

// One device's claim on one link.
struct LinkClaim {
  std::string link;       // relative to /dev: "disk/by-label/root"
  std::string device_id;  // udev's device id: "b8:1"
  std::string node;       // the device's node, relative to /dev: "sda1"
  int priority = 0;
};

// What an update did to the link itself.
enum class LinkChange { kUnchanged, kMade, kRemoved };

struct LinkUpdate {
  LinkChange change = LinkChange::kUnchanged;
  std::string owner;  // the node the link points at afterwards ("" when none)
};

// Adds (`add`) or withdraws a claim beneath `run_fd` (the /run/udev directory) and points the
// link beneath `dev_root` at the winner's node, or removes it. A node, file or directory of the
// link's name is never replaced (udevd: "conflicting inode"): that is an error.
absl::StatusOr<LinkUpdate> UpdateLinkClaim(int run_fd, const devroot::DevRoot& dev_root,
                                           const LinkClaim& claim, bool add);

// True for the link of a block disk (not a partition) named by its own DISKSEQ,
// "disk/by-diskseq/<DISKSEQ>": unique to the disk, so udevd makes and removes it directly, with
// no claim directory (in the guest comparison /run/udev/links had none for by-diskseq/11 of sr0
// and by-diskseq/12 of vda). Any other by-diskseq name goes through the claims as usual.
[[nodiscard]] bool IsOwnDiskseqLink(absl::string_view link, absl::string_view subsystem,
                                    absl::string_view devtype, std::optional<absl::string_view> diskseq);

// udevd's udev_node_cleanup, which it runs once no worker is left: each claim directory under
// `run_fd`'s links/ loses its ".lock", then goes when that left it empty. The caller makes sure
// no claim is being updated meanwhile. Returns how many directories went.
absl::StatusOr<size_t> CleanUpLinkClaims(int run_fd);

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_LINK_CLAIMS_H_
