// /dev/mdev.seq: how concurrent `mdev` hotplug helpers take turns by SEQNUM, as busybox's mdev
// does (docs/mdev.txt, "SEQUENCING"). The file holds the next SEQNUM allowed to run; a helper
// waits (at most about two seconds, woken early by SIGCHLD) until the file shows its own SEQNUM,
// handles its event, writes SEQNUM+1 and pokes the other waiting helpers with SIGCHLD.
#ifndef HOTRING_HOTPLUG_RULES_MDEV_SEQ_H_
#define HOTRING_HOTPLUG_RULES_MDEV_SEQ_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::rules {

// What a helper does after reading mdev.seq once. Pure: the file's text and our SEQNUM in.
enum class SeqTurn {
  kSeed,     // empty or "\n": nobody ran yet; write our SEQNUM now and go
  kOurTurn,  // the file shows our SEQNUM
  kPassed,   // the file is ahead of us (a later helper already ran): go, never write the file
  kWait,     // an earlier helper has not finished yet
};
[[nodiscard]] SeqTurn DecideSeqTurn(absl::string_view content, uint64_t seqnum);

// Owns the open mdev.seq of a helper whose turn it is (or whose wait timed out): Finish writes
// SEQNUM+1 into it. Empty when there is no mdev.seq or the file is ahead of us.
class SeqTicket {
 public:
  SeqTicket() = default;
  SeqTicket(UniqueFd fd, uint64_t seqnum) : fd_(std::move(fd)), seqnum_(seqnum) {}
  [[nodiscard]] bool active() const { return fd_.valid(); }
  // Writes SEQNUM+1 at the start of the file (busybox does not truncate either: numbers only
  // grow) and sends SIGCHLD to every other process whose argv[0] is `mdev`.
  void Finish();

 private:
  UniqueFd fd_;
  uint64_t seqnum_ = 0;
};

// Waits for our turn in `dir_fd`/mdev.seq (the dev root): up to `timeout` in 32 ms steps that
// only count when no SIGCHLD arrived. No file: an inactive ticket, at once.
[[nodiscard]] SeqTicket WaitForSeqTurn(int dir_fd, uint64_t seqnum,
                                       absl::Duration timeout = absl::Seconds(2));

// Sends SIGCHLD to every process but `self` whose argv[0]'s basename is "mdev" (busybox's mdev
// or ours), found under `proc_root`. No /proc (a bare chroot): nothing to do, no error.
void SignalOtherMdevs(pid_t self, const std::string& proc_root = "/proc");

}  // namespace hotring::hotplug::rules

#endif  // HOTRING_HOTPLUG_RULES_MDEV_SEQ_H_
