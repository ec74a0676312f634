// The answer to `control pending` (what `settle` prints when it times out): every event the
// daemon holds, queues or runs, and where it waits — running (and on what, as the handler
// describes it), queued behind a related earlier event or for a free handler slot, or held
// behind a SEQNUM gap. Pure: it reads the flow's state and the time it is given.
#ifndef HOTRING_HOTPLUG_DAEMON_PENDING_H_
#define HOTRING_HOTPLUG_DAEMON_PENDING_H_

#include <cstdint>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/clock.h"
#include "hotplug/event.h"
#include "hotplug/reorderer.h"
#include "hotplug/wire.h"

namespace hotring::hotplug {

// A released event (queued or running), borrowed from the daemon's records.
struct LiveEvent {
  const Event* event = nullptr;
  MonoTime released_at;
  std::optional<MonoTime> started_at;  // set once its handler runs
};

// What the report says of the flow besides its events.
struct PendingState {
  size_t queued = 0;
  size_t running = 0;
  size_t children_max = 0;
  absl::Duration reorder_timeout;
};

// `live`: the released events in release order (oldest first). `describe`: what a running
// event's handler waits for ("" for nothing to say). At most 20 events are described (the
// reply must fit one datagram); `more` counts the rest.
[[nodiscard]] ControlReply PendingReport(uint32_t cookie, absl::Span<const LiveEvent> live,
                                         const Reorderer& reorderer, const PendingState& state,
                                         absl::FunctionRef<std::string(const Event&)> describe,
                                         MonoTime now);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_DAEMON_PENDING_H_
