// `hotring bench dgram-fanin`: the 2010 poll regression scenario. A waiter watches N client
// datagram sockets for input (all but the first connected to the server, or none) while a
// forked exchanger bounces M one-byte datagrams between the first client and the server, then
// sends the first client the datagram that ends the wait. On kernels with the regression every
// server receive woke a select()/poll() waiter that had connected sockets in its set, and the
// waiter's rescans slowed the exchange. The reactor waits through io_uring (POLL_ADD with a
// wake-up filtered on POLLIN), which should not care; select() is measured in the same run.
#ifndef HOTRING_IPC_DGRAM_FANIN_H_
#define HOTRING_IPC_DGRAM_FANIN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/task.h"
#include "io/reactor.h"

namespace hotring::ipc {

enum class FaninWaiter { kUring, kSelect };
absl::string_view FaninWaiterName(FaninWaiter waiter);

struct DgramFaninOptions {
  int clients = 800;
  bool connected = true;
  uint64_t messages = 20000;
  std::vector<FaninWaiter> waiters = {FaninWaiter::kUring, FaninWaiter::kSelect};
  std::optional<int> cpu;            // the waiter (and the exchanger unless exchanger_cpu)
  std::optional<int> exchanger_cpu;  // the forked exchanger
};

// InvalidArgument for 0 clients or messages, and for select() with more clients than it can
// watch (descriptors below FD_SETSIZE).
absl::Status ValidateDgramFaninOptions(const DgramFaninOptions& options);

struct DgramFaninFigure {
  FaninWaiter waiter = FaninWaiter::kUring;
  double wait_seconds = 0;      // from "go" until the waiter saw the final datagram
  double exchange_seconds = 0;  // the exchanger's own loop time
  uint64_t messages = 0;        // exchanges the exchanger completed
  int woken_client = -1;        // which client socket woke the waiter (must be 0)
};

struct DgramFaninResult {
  int clients = 0;
  bool connected = false;
  uint64_t messages = 0;
  std::optional<int> cpu;
  std::optional<int> exchanger_cpu;
  std::vector<DgramFaninFigure> figures;
};

// Runs each waiter once on fresh sockets, in the order given.
Task<absl::StatusOr<DgramFaninResult>> RunDgramFanin(io::Reactor& reactor,
                                                     DgramFaninOptions options);

std::string FormatDgramFaninResult(const DgramFaninResult& result, bool json);

}  // namespace hotring::ipc

#endif  // HOTRING_IPC_DGRAM_FANIN_H_
