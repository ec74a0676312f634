#include "hotplug/client/retry_schedule.h"

#include <algorithm>

namespace hotring::hotplug {

RetrySchedule::RetrySchedule(const RetryPolicy& policy, MonoTime start)
    : policy_(policy),
      deadline_(start + policy.timeout),
      backoff_(policy.first_backoff),
      retransmit_(policy.retransmit) {
  policy_.max_retransmit = std::max(policy_.max_retransmit, policy_.retransmit);
  policy_.max_backoff = std::max(policy_.max_backoff, policy_.first_backoff);
}

RetryStep RetrySchedule::After(SendOutcome outcome, MonoTime now) {
  const absl::Duration left = Left(now);
  if (left <= absl::ZeroDuration()) return RetryStep{RetryStep::Kind::kGiveUp};
  switch (outcome) {
    case SendOutcome::kQueued: {
      const absl::Duration wait = std::min(retransmit_, left);
      retransmit_ = std::min(retransmit_ * 2, policy_.max_retransmit);
      // A daemon that took this one and is gone by the next send is looked for at once again.
      backoff_ = policy_.first_backoff;
      return RetryStep{RetryStep::Kind::kAwaitReply, wait};
    }
    case SendOutcome::kNoDaemon:
    case SendOutcome::kQueueFull: {
      const absl::Duration wait = std::min(backoff_, left);
      backoff_ = std::min(backoff_ * 2, policy_.max_backoff);
      return RetryStep{RetryStep::Kind::kSleep, wait};
    }
  }
  return RetryStep{RetryStep::Kind::kGiveUp};
}

}  // namespace hotring::hotplug
