// RetrySchedule: when a client sends its request again, and how long it waits in between.
// Pure logic: it is told each send's outcome and the time, and owns no socket and no clock.
//
// A datagram that reached no daemon (nobody bound the name yet, or its queue was full) cannot
// be answered, so waiting a retransmit period for its reply only delays a daemon that is about
// to appear: it is sent again after a short backoff (1 ms, doubling, capped). Only a datagram
// the kernel queued for the daemon is followed by a wait for its reply.
#ifndef HOTRING_HOTPLUG_CLIENT_RETRY_SCHEDULE_H_
#define HOTRING_HOTPLUG_CLIENT_RETRY_SCHEDULE_H_

#include "absl/time/time.h"
#include "core/clock.h"

namespace hotring::hotplug {

// What became of one send to the daemon's socket.
enum class SendOutcome {
  kQueued,     // the kernel queued it for the daemon
  kNoDaemon,   // nobody has the name bound (ENOENT, ECONNREFUSED)
  kQueueFull,  // a daemon is there but its receive queue is full (EAGAIN)
};

struct RetryPolicy {
  absl::Duration timeout = absl::Seconds(5);  // from the first send to giving up
  // After a queued send: how long to wait for the reply before sending again. Each further
  // wait is twice as long, up to `max_retransmit` (not above `retransmit`: a fixed period).
  absl::Duration retransmit = absl::Seconds(1);
  absl::Duration max_retransmit = absl::ZeroDuration();
  // After a send that reached no daemon: the pause before the next one, doubling up to
  // `max_backoff`, and back to `first_backoff` after a send that was queued.
  absl::Duration first_backoff = absl::Milliseconds(1);
  absl::Duration max_backoff = absl::Milliseconds(50);
};

// What to do between one send and the next.
struct RetryStep {
  enum class Kind {
    kAwaitReply,  // wait up to `wait` for the reply, then send again
    kSleep,       // nothing can answer: sleep `wait`, then send again
    kGiveUp,      // the deadline has passed
  };
  Kind kind = Kind::kGiveUp;
  absl::Duration wait = absl::ZeroDuration();  // never past the deadline
};

// Owns the backoff and retransmit state of one request.
class RetrySchedule {
 public:
  RetrySchedule(const RetryPolicy& policy, MonoTime start);

  // Time left before the deadline at `now` (zero or negative once it has passed).
  [[nodiscard]] absl::Duration Left(MonoTime now) const { return Since(now, deadline_); }
  // The step after a send at `now` that ended with `outcome`.
  RetryStep After(SendOutcome outcome, MonoTime now);

 private:
  RetryPolicy policy_;
  MonoTime deadline_;
  absl::Duration backoff_;
  absl::Duration retransmit_;
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_CLIENT_RETRY_SCHEDULE_H_
