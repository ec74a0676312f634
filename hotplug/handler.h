// The handler stage of the pipeline: what the daemon does with one released event. Pluggable:
// `--exec PROGRAM` runs a program per event (ExecHandler); with no handler events are only
// ordered, acked and reported (NullHandler); rules and module loading plug in here too.
#ifndef HOTRING_HOTPLUG_HANDLER_H_
#define HOTRING_HOTPLUG_HANDLER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/task.h"
#include "hotplug/event.h"
#include "io/process/spawner.h"
#include "io/reactor.h"

namespace hotring::hotplug {

// How handling one event ended.
enum class HandlerOutcome { kHandled, kFailed, kTimedOut };

struct HandlerResult {
  HandlerOutcome outcome = HandlerOutcome::kHandled;
  bool killed = false;  // a child had to be SIGKILLed
  std::string detail;   // for the log: "exit 3", "signal 11", "exec: No such file", ...
};

// Where a stage reports a step of handling an event that deserves its own row in `hotring
// report` (a module load): what it was, when it started, how long it took, whether it worked.
// The daemon's timeline implements it.
class StepRecorder {
 public:
  virtual ~StepRecorder() = default;
  // `what`: one word, e.g. the module's name (spaces become '_'). A stage may report a step
  // after it ended (a plan reports its loads when the last one is in): `started` + `took`
  // places it on the timeline, not the moment of the call.
  virtual void Step(const Event& event, absl::string_view what, MonoTime started,
                    absl::Duration took, bool ok) = 0;
  // What is left of handling `event` is loading its device's driver (and links that make no
  // node): events on the devices below it, which that driver's probe creates and which want
  // drivers of their own, may start now instead of after it (Scheduler::ReleaseDescendants).
  virtual void LetDevicesBelowStart(const Event& event) {}
};

// Properties every event handled from now on gets where it has none of its own: udevd's global
// properties, set and unset by `udevadm control --property KEY=VALUE` / `KEY=`. Where a link
// reads them: the udev rules link as udevd 252 does (an ENV{KEY} match on a device without KEY
// compares with the global value; nothing else sees them), the --exec link adds them to its
// program's environment. Immutable: the daemon makes a new one at each change and hands it to
// the chain (Handler::SetGlobalProperties); a link takes the current one when an event starts
// and keeps it for that event. Owns its strings.
struct GlobalProperties {
  std::vector<std::pair<std::string, std::string>> entries;  // in the order first set
  // The value of `key`, or nullopt.
  [[nodiscard]] std::optional<absl::string_view> Get(absl::string_view key) const;
};

// Handles events. Implementations own whatever they need (a Spawner, parsed rules).
class Handler {
 public:
  virtual ~Handler() = default;
  // Handles one event; several run concurrently (on different devices).
  virtual Task<HandlerResult> Handle(io::Reactor& reactor, const Event& event) = 0;
  // SIGHUP / `control reload`: re-read configuration. The default has nothing to re-read.
  virtual absl::Status Reload() { return absl::OkStatus(); }
  // One word for logs and status: "exec", "none".
  [[nodiscard]] virtual std::string Name() const = 0;
  // Appends this stage's counters for `control status` ("rules_nodes_made", ...). Names are
  // unique across stages: each stage prefixes its own. The daemon's coldplug summary counts
  // modules from a counter named "modules_loaded".
  virtual void AppendCounters(std::vector<std::pair<std::string, uint64_t>>& out) const {}
  // What handling `event` (one this handler is running now) waits for, for `settle`'s report of
  // pending events: "exec pid 42: /lib/hotring/handler block", "loading virtio_blk". Empty:
  // nothing to say. Bounded: a few hundred bytes.
  [[nodiscard]] virtual std::string Describe(const Event& event) const { return ""; }
  // Gives the stage a place to report steps (borrowed: it outlives the handler's use of it;
  // null: none). The default reports nothing.
  virtual void SetStepRecorder(StepRecorder* recorder) {}
  // The global properties for events started from now on (never null). A link that has no use
  // for them keeps the default, which ignores them.
  virtual void SetGlobalProperties(std::shared_ptr<const GlobalProperties> properties) {}
  // What the stage does between events, for as long as the daemon serves (the udev rules
  // link's inotify watches on nodes: a writer's close becomes a `change`). The daemon runs it
  // among its services and cancels it at stop, so it must hold nothing that outlives a drop.
  // The default has nothing to serve and returns at once.
  virtual Task<void> Serve(io::Reactor& reactor) { co_return; }
  // `event` starts: the daemon calls it just before Handle, and a chain passes it to every
  // link, so a link further down forgets what the event changes before an earlier link lets
  // other events start (the modules link lets the events of the devices below start early).
  // On the reactor thread. The default has nothing to prepare.
  virtual void Starting(const Event& event) {}
  // The daemon is idle (no event for a while): what the stage keeps only to be faster during a
  // burst can go (the udev rules link's sysfs answers). Called on the reactor thread, with no
  // event running. The default keeps nothing of the kind.
  virtual void ReleaseIdleMemory() {}
};

// The handler stage as a short chain (modules -> rules -> --exec): each link runs once the one
// before it handled the event; the first link that fails or times out ends the chain with its
// result. Owns its links.
class HandlerChain final : public Handler {
 public:
  explicit HandlerChain(std::vector<std::unique_ptr<Handler>> links) : links_(std::move(links)) {}

  Task<HandlerResult> Handle(io::Reactor& reactor, const Event& event) override;
  // Reloads every link; the first error is returned (later links are still reloaded).
  absl::Status Reload() override;
  // "modules+rules+exec"; "none" when empty.
  [[nodiscard]] std::string Name() const override;
  void AppendCounters(std::vector<std::pair<std::string, uint64_t>>& out) const override;
  // The descriptions of the links that have something to say, joined by "; ".
  [[nodiscard]] std::string Describe(const Event& event) const override;
  void SetStepRecorder(StepRecorder* recorder) override {
    for (const std::unique_ptr<Handler>& link : links_) link->SetStepRecorder(recorder);
  }
  void SetGlobalProperties(std::shared_ptr<const GlobalProperties> properties) override {
    for (const std::unique_ptr<Handler>& link : links_) link->SetGlobalProperties(properties);
  }
  // Every link's Serve at once; returns when all have returned (cancelled with them).
  Task<void> Serve(io::Reactor& reactor) override;
  void ReleaseIdleMemory() override {
    for (const std::unique_ptr<Handler>& link : links_) link->ReleaseIdleMemory();
  }
  void Starting(const Event& event) override {
    for (const std::unique_ptr<Handler>& link : links_) link->Starting(event);
  }
  [[nodiscard]] bool empty() const { return links_.empty(); }

 private:
  std::vector<std::unique_ptr<Handler>> links_;
};

// Does nothing: every event is handled at once.
class NullHandler final : public Handler {
 public:
  Task<HandlerResult> Handle(io::Reactor& reactor, const Event& event) override;
  [[nodiscard]] std::string Name() const override { return "none"; }
};

// Runs PROGRAM with argv [PROGRAM, SUBSYSTEM] and the event's environment (plus the global
// properties the event does not have, and HOME and PATH as the kernel's uevent helper gets them,
// unless the event has its own), like /sbin/hotplug.
class ExecHandler final : public Handler {
 public:
  struct Options {
    std::string program;
    absl::Duration timeout = absl::Seconds(180);
    absl::Duration kill_grace = absl::Seconds(5);
  };
  static absl::StatusOr<std::unique_ptr<ExecHandler>> Create(Options options);

  Task<HandlerResult> Handle(io::Reactor& reactor, const Event& event) override;
  [[nodiscard]] std::string Name() const override { return "exec"; }
  // "exec pid 42: /lib/hotring/handler block".
  [[nodiscard]] std::string Describe(const Event& event) const override;
  void SetGlobalProperties(std::shared_ptr<const GlobalProperties> properties) override {
    globals_ = std::move(properties);
  }

 private:
  ExecHandler(Options options, std::unique_ptr<io::process::Spawner> spawner)
      : options_(std::move(options)), spawner_(std::move(spawner)) {}
  Options options_;
  std::unique_ptr<io::process::Spawner> spawner_;
  // The child's pid by event (the daemon keeps each running event at a stable address); entries
  // live from the child's start to the end of Handle, also when the handling task is dropped.
  absl::flat_hash_map<const Event*, pid_t> running_;
  std::shared_ptr<const GlobalProperties> globals_ = std::make_shared<const GlobalProperties>();
};

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_HANDLER_H_
