#include "io/process/blocking_spawner.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <utility>

#include "absl/time/clock.h"
#include "core/clock.h"
#include "core/status.h"
#include "io/blocking_pool.h"

namespace hotring::io::process {
namespace {

constexpr size_t kMaxStderr = 4096;

// Reads what `fd` holds now into *out (at most `limit` bytes kept, the rest read and dropped).
// False at end of file or on an error other than EAGAIN/EINTR.
bool Drain(int fd, std::string* out, size_t limit, bool* truncated) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN;
    if (n == 0) return false;
    const size_t room = limit - std::min(limit, out->size());
    const size_t keep = std::min(room, static_cast<size_t>(n));
    out->append(buf, keep);
    if (keep < static_cast<size_t>(n) && truncated != nullptr) *truncated = true;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<BlockingSpawner>> BlockingSpawner::Create() {
  HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<Spawner> spawner, Spawner::Create());
  return std::unique_ptr<BlockingSpawner>(new BlockingSpawner(std::move(spawner)));
}

absl::StatusOr<BlockingRunResult> BlockingSpawner::Run(SpawnRequest request, size_t max_stdout) {
  request.stdin_from = ChildInput::kDevNull;
  request.stdout_to = ChildOutput::kPipe;
  request.stderr_to = ChildOutput::kPipe;
  request.group = ProcessGroup::kOwn;
  ChildProcess child;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    HOTRING_ASSIGN_OR_RETURN(child, spawner_->Start(request));
  }
  UniqueFd out = child.TakeStdout();
  UniqueFd err = child.TakeStderr();
  // On a pool's worker, the wait for the program is no work of its own: another thread takes
  // the queued jobs meanwhile.
  const BlockingPool::WaitingElsewhere waiting;
  BlockingRunResult result;
  // Monotonic: a date change must not kill a program early or let it run on.
  std::optional<MonoTime> deadline;
  if (request.timeout != absl::InfiniteDuration()) deadline = MonoNow() + request.timeout;
  bool exited = false;
  while (!exited) {
    struct pollfd fds[3];
    nfds_t n = 0;
    fds[n++] = {child.pidfd(), POLLIN, 0};
    const int out_at = out.valid() ? static_cast<int>(n) : -1;
    if (out.valid()) fds[n++] = {out.get(), POLLIN, 0};
    const int err_at = err.valid() ? static_cast<int>(n) : -1;
    if (err.valid()) fds[n++] = {err.get(), POLLIN, 0};
    int wait_ms = -1;
    if (deadline.has_value()) {
      const absl::Duration left = Since(MonoNow(), *deadline);
      wait_ms = left <= absl::ZeroDuration() ? 0 : static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
    }
    const int ready = ::poll(fds, n, wait_ms);
    if (ready < 0 && errno != EINTR) return ErrnoStatus("poll");
    if (out_at >= 0 && (fds[out_at].revents & (POLLIN | POLLHUP | POLLERR)) != 0 &&
        !Drain(out.get(), &result.stdout_text, max_stdout, &result.stdout_truncated)) {
      out.Reset();
    }
    if (err_at >= 0 && (fds[err_at].revents & (POLLIN | POLLHUP | POLLERR)) != 0 &&
        !Drain(err.get(), &result.stderr_text, kMaxStderr, nullptr)) {
      err.Reset();
    }
    if ((fds[0].revents & POLLIN) != 0) {
      // What the child left behind in its group goes with it (udevd kills those too); the
      // group id stays the child's until the reap below.
      (void)child.SignalGroup(SIGKILL);
      HOTRING_ASSIGN_OR_RETURN(std::optional<io::ExitStatus> status, child.TryReap());
      if (status.has_value()) {
        result.exit = *status;
        exited = true;
        break;
      }
    }
    if (deadline.has_value() && MonoNow() >= *deadline) {
      if (!result.timed_out) {
        result.timed_out = true;
        (void)child.Signal(SIGTERM);
        deadline.reset();
        if (request.kill_grace != absl::InfiniteDuration()) deadline = MonoNow() + request.kill_grace;
      } else {
        result.killed = true;
        (void)child.Signal(SIGKILL);
        deadline.reset();
      }
    }
  }
  // What the child wrote last.
  if (out.valid()) (void)Drain(out.get(), &result.stdout_text, max_stdout, &result.stdout_truncated);
  if (err.valid()) (void)Drain(err.get(), &result.stderr_text, kMaxStderr, nullptr);
  return result;
}

}  // namespace hotring::io::process
