// What the hotplug benchmarks (`bench events`, `bench coldplug`) share: a `hotring daemon`
// child on a private abstract socket that they measure through, and the numbers they read
// about it from /proc.
#ifndef HOTRING_HOTPLUG_BENCH_BENCH_DAEMON_H_
#define HOTRING_HOTPLUG_BENCH_BENCH_DAEMON_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/program_path.h"
#include "core/unique_fd.h"
#include "hotplug/client/client.h"
#include "io/reactor.h"

namespace hotring::hotplug {

// Owns one daemon child process, a control connection to it (its own reactor and client
// socket) and the anonymous file its stderr goes to. Dropping it stops the daemon (SIGTERM,
// then SIGKILL if it does not exit within a few seconds) and reaps it. The child also gets
// SIGTERM if the thread that started it dies first, so a crashed benchmark leaves no daemon.
class BenchDaemon {
 public:
  struct Options {
    // The hotring binary: the board's, beside hotring-bench.
    std::string binary = BesideThisProgram("hotring");
    // Arguments after `daemon --socket NAME` (NAME is chosen here: unique per child).
    std::vector<std::string> args;
    absl::Duration ready_timeout = absl::Seconds(10);
  };

  // Starts the daemon and returns once it says it serves (`--ready-fd`: everything it binds at
  // start-up, the netlink socket included, is bound).
  static absl::StatusOr<BenchDaemon> Start(Options options);

  BenchDaemon(BenchDaemon&& other) noexcept;
  BenchDaemon& operator=(BenchDaemon&&) = delete;
  BenchDaemon(const BenchDaemon&) = delete;
  BenchDaemon& operator=(const BenchDaemon&) = delete;
  ~BenchDaemon();

  [[nodiscard]] const std::string& socket() const { return socket_; }
  [[nodiscard]] pid_t pid() const { return pid_; }

  // `control status` as numbers (non-numeric fields are left out).
  absl::StatusOr<std::map<std::string, uint64_t>> Status(absl::Duration timeout = absl::Seconds(5));
  // `settle`: returns once the daemon has nothing held, queued or running.
  absl::Status Settle(absl::Duration timeout);
  // SIGTERM and wait for the exit; an error unless it exits 0 within `timeout` (then SIGKILL).
  absl::Status Stop(absl::Duration timeout = absl::Seconds(10));
  // What the daemon wrote to stderr so far.
  [[nodiscard]] std::string Log() const;

 private:
  BenchDaemon() = default;
  absl::StatusOr<ControlReply> Request(ControlCommand command, absl::Duration timeout);

  std::string socket_;
  pid_t pid_ = -1;  // -1 once reaped
  UniqueFd log_;
  std::unique_ptr<io::Reactor> reactor_;
  std::unique_ptr<ControlClient> client_;
};

// CPU time (user + system, all threads, io_uring workers included) a process has used so far,
// in ns; -1 when it cannot be read.
[[nodiscard]] int64_t ProcessCpuNs(pid_t pid);

// Peak resident set size (VmHWM) of a process, in KiB; -1 when it cannot be read.
[[nodiscard]] int64_t PeakRssKiB(pid_t pid);

// CPU time (user + system) of every child this process has reaped so far, grandchildren its
// children reaped included (getrusage RUSAGE_CHILDREN), in ns. A daemon's handlers count once
// the daemon is reaped.
[[nodiscard]] int64_t ReapedChildrenCpuNs();
// CPU time of the calling thread so far, in ns.
[[nodiscard]] int64_t ThreadCpuNs();

// A copy of the append_line handler (hotplug/bench/append_line.c) in a fresh directory of its
// own, so that its log (the copy's path + ".log") is the bench's alone; removed when dropped.
class AppendLineHandler {
 public:
  static absl::StatusOr<AppendLineHandler> Copy(const std::string& source);
  AppendLineHandler(AppendLineHandler&& other) noexcept;
  AppendLineHandler& operator=(AppendLineHandler&& other) noexcept;
  AppendLineHandler(const AppendLineHandler&) = delete;
  ~AppendLineHandler();

  [[nodiscard]] const std::string& program() const { return program_; }
  // Lines logged since the last call (one per handler run), and empties the log.
  absl::StatusOr<uint64_t> TakeLines();

 private:
  AppendLineHandler() = default;
  std::string dir_;
  std::string program_;
};

// Sends `count` datagrams to the daemon's control socket `socket`, the i-th (from 0) being
// `encode(i)`: blocking sendmmsg, `batch` datagrams a call (1: one sendto-like call per
// datagram). When the daemon's queue is full the sender waits, as udevsend did; a partial
// batch is re-encoded and sent in the next call.
[[nodiscard]] absl::Status SendDatagrams(const std::string& socket, int64_t count, int64_t batch,
                                         absl::FunctionRef<std::string(int64_t)> encode);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_BENCH_BENCH_DAEMON_H_
