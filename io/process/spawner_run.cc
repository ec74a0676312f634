// Supervising a started run: reading the child's output pipes on the reactor and logging them
// line by line within a budget (LineSplitter, RunOutput), the deadline's SIGTERM and SIGKILL,
// and the reap. Starting the child is spawner.cc's.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"
#include "core/task_scope.h"
#include "io/process/spawner.h"

namespace hotring::io::process {
namespace {

// Bytes read from one pipe before the reader yields to the reactor (a flooding child must not
// starve the other tasks), and the most read from a pipe after the child has exited (what a
// leftover process keeps writing is not the run's to wait for).
constexpr size_t kRoundBytes = 256 * 1024;
constexpr size_t kFinalDrainBytes = 4 * 1024 * 1024;

// `now + d`, or nullopt for "never" (InfiniteDuration, or so far off that the clock would
// overflow). A zero or negative `d` is a deadline that has already passed.
std::optional<MonoTime> DeadlineAfter(MonoTime now, absl::Duration d) {
  if (d >= absl::Hours(24 * 365 * 100)) return std::nullopt;
  return now + d;
}

absl::string_view BaseName(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// LineSplitter

void LineSplitter::Append(absl::string_view piece) {
  has_partial_ = true;
  if (truncated_) return;
  const size_t room = max_line_bytes_ - partial_.size();
  if (piece.size() > room) {
    partial_.append(piece.data(), room);
    truncated_ = true;
  } else {
    partial_.append(piece.data(), piece.size());
  }
}

void LineSplitter::Push(absl::string_view data, Callback on_line) {
  while (!data.empty()) {
    const size_t newline = data.find('\n');
    if (newline == absl::string_view::npos) {
      Append(data);
      return;
    }
    const absl::string_view line = data.substr(0, newline);
    data.remove_prefix(newline + 1);
    if (!has_partial_) {
      // The common case: a whole line inside one read, handed over without a copy.
      if (line.size() > max_line_bytes_) {
        on_line(line.substr(0, max_line_bytes_), true);
      } else {
        on_line(line, false);
      }
      continue;
    }
    Append(line);
    on_line(partial_, truncated_);
    partial_.clear();
    truncated_ = false;
    has_partial_ = false;
  }
}

void LineSplitter::Finish(Callback on_line) {
  if (!has_partial_) return;
  on_line(partial_, truncated_);
  partial_.clear();
  truncated_ = false;
  has_partial_ = false;
}

// ---------------------------------------------------------------------------------------------
// Spawner::Run

// One output pipe of a run: the parent's read end, its line splitter and its counters.
struct Spawner::Stream {
  Stream(OutputStream kind, UniqueFd fd, size_t max_line_bytes)
      : kind(kind), fd(std::move(fd)), splitter(max_line_bytes), eof(!this->fd) {}
  OutputStream kind;
  UniqueFd fd;  // empty when the child's stream is not a pipe (kInherit, kDevNull)
  LineSplitter splitter;
  OutputStats stats;
  bool eof;
};

// Where a run's lines go, and the run's shared log budget.
struct Spawner::RunOutput {
  const SpawnRequest& request;
  const LineSink& sink;
  std::string prefix;  // "<label> <program>[<pid>]"
  absl::string_view program;
  pid_t pid;
  size_t logged_bytes = 0;
  bool budget_spent = false;

  void Line(Stream& stream, absl::string_view text, bool truncated) {
    ++stream.stats.lines;
    if (truncated) ++stream.stats.lines_truncated;
    if (budget_spent || logged_bytes + text.size() > request.max_log_bytes) {
      if (!budget_spent) {
        budget_spent = true;
        LogWarning("%s: output log budget of %d bytes spent; counting further lines only",
                   prefix, request.max_log_bytes);
      }
      ++stream.stats.lines_dropped;
      return;
    }
    logged_bytes += text.size();
    ++stream.stats.lines_logged;
    if (sink) {
      sink(OutputLine{stream.kind, request.label, program, pid, text, truncated});
      return;
    }
    const absl::string_view mark = truncated ? " [truncated]" : "";
    switch (stream.kind) {
      case OutputStream::kStdout:
        LogInfo("%s: %s%s", prefix, text, mark);
        return;
      case OutputStream::kStderr:
        LogWarning("%s: %s%s", prefix, text, mark);
        return;
    }
  }
};

bool Spawner::DrainAvailable(Stream& stream, RunOutput& output, size_t limit) {
  size_t total = 0;
  if (scratch_.empty()) scratch_.resize(kScratchBytes);
  while (total < limit) {
    const ssize_t n = ::read(stream.fd.get(), scratch_.data(), scratch_.size());
    if (n > 0) {
      total += static_cast<size_t>(n);
      stream.stats.bytes += static_cast<uint64_t>(n);
      stream.splitter.Push(absl::string_view(scratch_.data(), static_cast<size_t>(n)),
                           [&](absl::string_view line, bool truncated) {
                             output.Line(stream, line, truncated);
                           });
      continue;
    }
    if (n == 0) {
      stream.eof = true;
      return true;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return false;
    LogWarning("%s: reading its output: %s", output.prefix, ErrnoStatus("read").message());
    stream.eof = true;
    return true;
  }
  return false;
}

Task<void> Spawner::ReadStream(io::Reactor& reactor, Stream& stream, RunOutput& output) {
  // Poll, then read without blocking: a poll can be cancelled at any time without losing data,
  // which a cancelled read that already completed could not promise.
  while (!stream.eof) {
    const absl::StatusOr<unsigned> ready = co_await io::Poll(reactor, stream.fd.get(), POLLIN);
    if (!ready.ok()) {
      LogWarning("%s: polling its output: %s", output.prefix, ready.status().message());
      co_return;
    }
    (void)DrainAvailable(stream, output, kRoundBytes);
  }
}

Task<absl::StatusOr<SpawnResult>> Spawner::Run(io::Reactor& reactor, SpawnRequest request) {
  const MonoTime start = MonoNow();
  // Declared first, destroyed last: if this task is dropped, the readers and pipes go first,
  // then the child's process group is killed and the child reaped.
  HOTRING_CO_ASSIGN_OR_RETURN(ChildProcess child, Start(request));

  SpawnResult result;
  result.pid = child.pid();
  if (request.on_started) request.on_started(child.pid());
  const absl::string_view program = BaseName(request.program);
  RunOutput output{request, options_.line_sink,
                   request.label.empty()
                       ? absl::StrCat(program, "[", child.pid(), "]")
                       : absl::StrCat(request.label, " ", program, "[", child.pid(), "]"),
                   program, child.pid()};
  Stream out(OutputStream::kStdout, child.TakeStdout(), request.max_line_bytes);
  Stream err(OutputStream::kStderr, child.TakeStderr(), request.max_line_bytes);
  {
    TaskScope readers;
    for (Stream* stream : {&out, &err}) {
      if (!stream->eof) readers.Spawn(ReadStream(reactor, *stream, output));
    }

    enum class Phase { kRunning, kTerminating, kKilling };
    Phase phase = Phase::kRunning;
    std::optional<MonoTime> deadline = DeadlineAfter(start, request.timeout);
    for (;;) {
      // The pidfd polls readable once the child is a zombie. We reap it ourselves (rather than
      // with IORING_OP_WAITID) so that the zombie still pins its process-group id while we
      // signal the group: after the reap the id could name somebody else's group.
      absl::StatusOr<unsigned> exited = absl::DeadlineExceededError("deadline");
      if (!deadline.has_value()) {
        exited = co_await io::Poll(reactor, child.pidfd(), POLLIN);
      } else {
        const absl::Duration left = Since(MonoNow(), *deadline);
        if (left > absl::ZeroDuration()) {
          exited = co_await io::Poll(reactor, child.pidfd(), POLLIN).WithTimeout(left);
        }
      }
      if (exited.ok()) {
        if (request.leftovers == LeftoverPolicy::kKill) (void)child.SignalGroup(SIGKILL);
        HOTRING_CO_ASSIGN_OR_RETURN(std::optional<io::ExitStatus> status, child.TryReap());
        if (!status.has_value()) continue;  // not yet waitable; poll again
        result.exit = *status;
        break;
      }
      if (!absl::IsDeadlineExceeded(exited.status())) co_return exited.status();
      switch (phase) {
        case Phase::kRunning:
          LogWarning("%s: still running after %s; sending SIGTERM", output.prefix,
                     absl::FormatDuration(request.timeout));
          result.timed_out = true;
          HOTRING_CO_RETURN_IF_ERROR(child.Signal(SIGTERM));
          phase = Phase::kTerminating;
          break;
        case Phase::kTerminating:
          LogWarning("%s: still running %s after SIGTERM; sending SIGKILL", output.prefix,
                     absl::FormatDuration(request.kill_grace));
          result.killed = true;
          HOTRING_CO_RETURN_IF_ERROR(child.Signal(SIGKILL));
          phase = Phase::kKilling;
          break;
        case Phase::kKilling:
          // Only an uninterruptible sleep in the kernel outlives SIGKILL; keep waiting.
          LogWarning("%s: still not gone %s after SIGKILL", output.prefix,
                     absl::FormatDuration(request.kill_grace));
          break;
      }
      deadline = DeadlineAfter(MonoNow(), request.kill_grace);
    }
    result.duration = Since(start, MonoNow());
    // Readers are parked in polls (never holding unread data), so cancelling them loses nothing.
    readers.CancelAll();
  }
  // The child is gone, so all it wrote is in the pipes now; take what is there and stop: a
  // leftover process holding a pipe open must not keep the run from finishing.
  for (Stream* stream : {&out, &err}) {
    if (!stream->eof) (void)DrainAvailable(*stream, output, kFinalDrainBytes);
    if (!stream->eof) result.output_held_open = true;
    stream->splitter.Finish(
        [&](absl::string_view line, bool truncated) { output.Line(*stream, line, truncated); });
  }
  if (result.output_held_open) {
    LogNotice("%s: exited, but another process still holds its output open; not waiting for it",
              output.prefix);
  }
  const uint64_t dropped = out.stats.lines_dropped + err.stats.lines_dropped;
  if (dropped > 0) {
    LogWarning("%s: %d output lines were not logged (budget %d bytes)", output.prefix, dropped,
               request.max_log_bytes);
  }
  result.stdout_stats = out.stats;
  result.stderr_stats = err.stats;
  LogDebug("%s: %s %d after %s", output.prefix, result.exit.exited ? "exited with" : "killed by",
           result.exit.code, absl::FormatDuration(result.duration));
  co_return result;
}

}  // namespace hotring::io::process
