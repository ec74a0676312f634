#include "hotplug/rules/mdev_seq.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/clock.h"

namespace hotring::hotplug::rules {
namespace {

// atoll's reading: leading blanks, then the digits that follow; anything else stops it.
uint64_t LeadingNumber(absl::string_view text) {
  size_t i = 0;
  while (i < text.size() && absl::ascii_isspace(static_cast<unsigned char>(text[i]))) ++i;
  uint64_t value = 0;
  for (; i < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[i])); ++i) {
    value = value * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  return value;
}

bool WriteAll(int fd, absl::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Blocks SIGCHLD for the wait (so sigtimedwait can take it) and restores the mask after.
class BlockSigchld {
 public:
  BlockSigchld() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &old_);
  }
  ~BlockSigchld() { sigprocmask(SIG_SETMASK, &old_, nullptr); }
  BlockSigchld(const BlockSigchld&) = delete;
  BlockSigchld& operator=(const BlockSigchld&) = delete;

 private:
  sigset_t old_;
};

}  // namespace

SeqTurn DecideSeqTurn(absl::string_view content, uint64_t seqnum) {
  if (content.empty() || content[0] == '\n') return SeqTurn::kSeed;
  const uint64_t value = LeadingNumber(content);
  if (value == seqnum) return SeqTurn::kOurTurn;
  if (value > seqnum) return SeqTurn::kPassed;
  return SeqTurn::kWait;
}

SeqTicket WaitForSeqTurn(int dir_fd, uint64_t seqnum, absl::Duration timeout) {
  UniqueFd fd(::openat(dir_fd, "mdev.seq", O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return SeqTicket();
  constexpr absl::Duration kStep = absl::Milliseconds(32);
  absl::Duration remainder;
  int64_t steps_left = std::max<int64_t>(1, absl::IDivDuration(timeout, kStep, &remainder));
  const struct timespec step = DurationToTimespec(kStep);
  BlockSigchld blocked;
  sigset_t sigchld;
  sigemptyset(&sigchld);
  sigaddset(&sigchld, SIGCHLD);
  for (;;) {
    char buf[32];
    const ssize_t n = ::pread(fd.get(), buf, sizeof(buf) - 1, 0);
    if (n < 0) return SeqTicket();
    const absl::string_view content(buf, static_cast<size_t>(n));
    switch (DecideSeqTurn(content, seqnum)) {
      case SeqTurn::kSeed: {
        // Claim the turn at once; Finish overwrites this with SEQNUM+1 from the start.
        if (!WriteAll(fd.get(), absl::StrCat(seqnum))) return SeqTicket();
        ::lseek(fd.get(), 0, SEEK_SET);
        return SeqTicket(std::move(fd), seqnum);
      }
      case SeqTurn::kOurTurn:
        return SeqTicket(std::move(fd), seqnum);
      case SeqTurn::kPassed:
        return SeqTicket();
      case SeqTurn::kWait:
        break;
    }
    // A finishing helper's SIGCHLD means "look again", and does not use up the budget.
    if (::sigtimedwait(&sigchld, nullptr, &step) >= 0) continue;
    // Timed out waiting for an earlier helper: run anyway and move the file on, like busybox.
    if (--steps_left == 0) return SeqTicket(std::move(fd), seqnum);
  }
}

void SeqTicket::Finish() {
  if (!fd_.valid()) return;
  // Busybox writes at the current offset, which is the start: pread never moves it, and the
  // seed path seeks back.
  (void)WriteAll(fd_.get(), absl::StrCat(seqnum_ + 1));
  fd_.Reset();
  SignalOtherMdevs(::getpid());
}

void SignalOtherMdevs(pid_t self, const std::string& proc_root) {
  DIR* dir = ::opendir(proc_root.c_str());
  if (dir == nullptr) return;
  while (const struct dirent* entry = ::readdir(dir)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || pid <= 0 || pid == self) continue;
    const std::string path = absl::StrCat(proc_root, "/", entry->d_name, "/cmdline");
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) continue;
    char buf[256];
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf) - 1);
    if (n <= 0) continue;
    buf[n] = '\0';
    const absl::string_view argv0(buf);  // up to the first NUL
    const size_t slash = argv0.rfind('/');
    const absl::string_view base =
        slash == absl::string_view::npos ? argv0 : argv0.substr(slash + 1);
    if (base == "mdev") ::kill(pid, SIGCHLD);
  }
  ::closedir(dir);
}

}  // namespace hotring::hotplug::rules
