// Module loading: takes the LoadPlans that resolution produces and loads their modules with
// finit_module, each on the blocking pool (the call blocks for as long as the module's init
// runs), scheduled by the plan's dependency graph: a module starts as soon as every module it
// needs is loaded, so independent modules load in parallel and nothing waits for a "wave". A
// module already being loaded for another event is not loaded twice: the second request waits
// for the first and both see its result. A module whose dependency failed is not attempted and
// fails with it. `install` commands run through the Spawner as `/bin/sh -c`.
//
// The kernel is behind an interface (Kernel): SysKernel is the real one; DryRunKernel records
// what it would load into a file (tests, image building); tests bring their own fakes.
#ifndef HOTRING_HOTPLUG_MODULES_LOADER_H_
#define HOTRING_HOTPLUG_MODULES_LOADER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/notifier.h"
#include "core/task.h"
#include "core/task_scope.h"
#include "core/unique_fd.h"
#include "hotplug/modules/load_plan.h"
#include "io/blocking_pool.h"
#include "io/process/spawner.h"
#include "io/reactor.h"

namespace hotring::hotplug::modules {

// What loading needs from the kernel. Every method is called on the blocking pool's threads,
// several at once: implementations are thread-safe.
class Kernel {
 public:
  enum class LoadResult { kLoaded, kAlreadyLoaded };

  virtual ~Kernel() = default;
  // True when the kernel already has the module: /sys/module/NAME exists (built in, loaded, or
  // being loaded by someone else).
  [[nodiscard]] virtual bool IsLoaded(const std::string& name) = 0;
  // Loads the module's .ko with its options (finit_module). EEXIST is kAlreadyLoaded; any
  // other error is a Status carrying the errno (StatusErrno).
  [[nodiscard]] virtual absl::StatusOr<LoadResult> Load(const ModuleToLoad& module) = 0;
  // The module's install command (resolution has already put the options in place of
  // `$CMDLINE_OPTS`). False: the loader runs it through the spawner. A kernel that only
  // records takes it (true).
  [[nodiscard]] virtual bool TakeInstall(const ModuleToLoad& module, const std::string& command) {
    return false;
  }
};

// The running kernel: /sys/module/NAME under `sysfs_root`, open(O_RDONLY | O_CLOEXEC) and
// finit_module(fd, options, flags). Compressed modules (.ko.xz, .ko.zst, .ko.gz) are handed to
// the kernel to decompress (MODULE_INIT_COMPRESSED_FILE, Linux 6.2); older kernels refuse them.
class SysKernel final : public Kernel {
 public:
  explicit SysKernel(std::string sysfs_root = "/sys") : sysfs_root_(std::move(sysfs_root)) {}
  bool IsLoaded(const std::string& name) override;
  absl::StatusOr<LoadResult> Load(const ModuleToLoad& module) override;

 private:
  const std::string sysfs_root_;
};

// Loads nothing: appends one line per module it would load to a file, `load NAME PATH
// OPTIONS` or `install NAME COMMAND`, and from then on reports the module as loaded. For tests
// and image building (`daemon --modules-dry-run-log FILE`). `delay` makes each load take that
// long, so tests can see that the daemon waits for loads. Owns the file.
class DryRunKernel final : public Kernel {
 public:
  static absl::StatusOr<std::unique_ptr<DryRunKernel>> Create(const std::string& path,
                                                             absl::Duration delay);
  bool IsLoaded(const std::string& name) override;
  absl::StatusOr<LoadResult> Load(const ModuleToLoad& module) override;
  bool TakeInstall(const ModuleToLoad& module, const std::string& command) override;

 private:
  DryRunKernel(UniqueFd fd, absl::Duration delay) : fd_(std::move(fd)), delay_(delay) {}
  void Append(const std::string& line);
  UniqueFd fd_;
  const absl::Duration delay_;
  std::mutex mutex_;
  absl::flat_hash_set<std::string> loaded_;
};

// How one module of a plan ended.
enum class ModuleOutcome {
  kLoaded,            // finit_module succeeded
  kAlreadyLoaded,     // /sys/module/NAME existed, or finit_module said EEXIST
  kBuiltin,           // part of the kernel image: nothing to do
  kInstalled,         // its install command exited 0
  kFailed,            // finit_module or the install command failed
  kDependencyFailed,  // a module it needs failed (or the plan's needs form a cycle)
  kTimedOut,          // still loading (or waiting to) when the plan stopped waiting for it
  kNotNeeded,         // every module it was for is in the kernel already: not tried (kmod)
};
[[nodiscard]] absl::string_view OutcomeName(ModuleOutcome outcome);
[[nodiscard]] inline bool IsSuccess(ModuleOutcome outcome) {
  return outcome != ModuleOutcome::kFailed && outcome != ModuleOutcome::kDependencyFailed &&
         outcome != ModuleOutcome::kTimedOut;
}

struct ModuleResult {
  std::string name;
  ModuleOutcome outcome = ModuleOutcome::kLoaded;
  absl::Status status;  // why, for kFailed and kDependencyFailed
};

// The modules of one plan, in plan order.
struct PlanResult {
  std::vector<ModuleResult> modules;
  [[nodiscard]] size_t failures() const;
};

// One load that ran (finit_module or an install command; not builtins, not joins): when it
// started and how long it took, for status and the boot report.
struct LoadRecord {
  std::string name;
  MonoTime start;
  absl::Duration duration;
  ModuleOutcome outcome = ModuleOutcome::kLoaded;
  int error = 0;  // the errno of a failure, when there is one
};

struct LoaderCounters {
  uint64_t loaded = 0;             // finit_module succeeded
  uint64_t already_loaded = 0;     // found in /sys/module, or EEXIST
  uint64_t builtin = 0;            // builtin modules asked for (per plan)
  uint64_t installed = 0;          // install commands that exited 0
  uint64_t failed = 0;             // loads and install commands that failed
  uint64_t dependency_failed = 0;  // modules not attempted, per plan, for a failed dependency
  uint64_t joined = 0;             // requests that waited for a load already in flight
  uint64_t first = 0;              // loads started for a `first` plan
  uint64_t timed_out = 0;          // modules a plan stopped waiting for (Options::wait_limit)
  uint64_t not_needed = 0;         // softdeps and dependencies of a matched module already in
                                   // the kernel, not tried (kmod's check; per plan)
  uint64_t records_dropped = 0;    // LoadRecords forgotten beyond Options::max_records
  size_t peak_in_flight = 0;       // most loads running at once
  absl::Duration load_time;        // sum of the loads' durations
};

// Owns the kernel interface, the blocking pool the loads run on, the spawner for install
// commands, the table of loads in flight, and the tasks that run them. Single-threaded: use
// it on its reactor's thread; the pool's threads only see the kernel and copies of modules.
class Loader {
 public:
  struct Options {
    // One load at a time (`--modules-serial`, `hotring.modules_serial`): some kernels have
    // driver-core races that only parallel loading exposes.
    bool serial = false;
    size_t threads = 4;  // loads at once (blocking pool threads)
    absl::Duration install_timeout = absl::Seconds(180);
    absl::Duration install_kill_grace = absl::Seconds(5);
    size_t max_records = 4096;
    // How long Load() waits for a whole plan. finit_module cannot be interrupted: a module
    // whose init never returns keeps its thread, but the event it was loaded for goes on
    // after this (its loads keep running, and count when they end).
    absl::Duration wait_limit = absl::InfiniteDuration();
    // The nice value a pool thread runs at while it loads a module of a `first` plan (its own
    // is restored after). finit_module runs the driver's init and probe in the caller's thread,
    // so this is the CPU share of that work. 0: first plans only go ahead in the queue.
    int first_nice = -10;
  };

  static absl::StatusOr<std::unique_ptr<Loader>> Create(Options options,
                                                        std::shared_ptr<Kernel> kernel);
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;
  // Cancels the loads still awaited (a finit_module already running finishes on its thread)
  // and joins the pool. Every Load() task must be gone first.
  ~Loader();

  // Loads every module of `plan`, dependencies first, and completes once each has loaded or
  // failed. Taken by value: the task is lazy. Dropping the task does not cancel loads that
  // started (other events may wait for them); it only stops waiting.
  Task<PlanResult> Load(io::Reactor& reactor, LoadPlan plan);

  [[nodiscard]] const LoaderCounters& counters() const { return counters_; }
  // The most recent loads, oldest first (at most Options::max_records).
  [[nodiscard]] const std::deque<LoadRecord>& records() const { return records_; }
  [[nodiscard]] size_t in_flight() const { return running_; }
  [[nodiscard]] const Options& options() const { return options_; }

 private:
  // One module's load, shared by every plan waiting for it.
  struct Pending {
    std::string name;
    bool done = false;
    ModuleOutcome outcome = ModuleOutcome::kLoaded;
    absl::Status status;
  };

  Loader(Options options, std::shared_ptr<Kernel> kernel);
  // Joins the load of `module` in flight, or starts one.
  std::shared_ptr<Pending> Start(io::Reactor& reactor, const ModuleToLoad& module, bool first);
  Task<void> RunLoad(io::Reactor& reactor, ModuleToLoad module, std::shared_ptr<Pending> pending,
                     bool first);
  // Sets `expired` after `after` and wakes the plans.
  Task<void> ExpireAfter(io::Reactor& reactor, absl::Duration after, bool& expired);
  // kmod's check before a plan loads anything: the modules of the plan that only matched
  // modules the kernel has (loaded or builtin) need are finished at once, through `finish`
  // (index, outcome, status), as kAlreadyLoaded or kNotNeeded.
  template <typename Finish>
  Task<void> SkipWhatTheKernelHas(io::Reactor& reactor, const LoadPlan& plan,
                                  const absl::flat_hash_map<absl::string_view, size_t>& index,
                                  Finish& finish);
  // One load's place in serial mode's first-come, first-served line for the single slot.
  // Leaving (however the load's frame ends) hands the slot on or leaves the line.
  class SerialTurn {
   public:
    explicit SerialTurn(Loader* loader) : loader_(loader) {}
    SerialTurn(const SerialTurn&) = delete;
    SerialTurn& operator=(const SerialTurn&) = delete;
    ~SerialTurn();
    // Takes the slot if it is free and nobody is in line, else joins the line.
    void Enqueue();
    [[nodiscard]] bool holding() const { return state_ == State::kHolding; }

   private:
    friend class Loader;
    enum class State { kOut, kWaiting, kHolding };
    Loader* loader_;
    State state_ = State::kOut;
  };
  // The holder is done: the first in line gets the slot.
  void PassSerial();
  Task<absl::StatusOr<ModuleOutcome>> LoadWithKernel(io::Reactor& reactor,
                                                     const ModuleToLoad& module, bool first);
  Task<absl::StatusOr<ModuleOutcome>> RunInstall(io::Reactor& reactor, const ModuleToLoad& module);
  void Record(LoadRecord record);

  const Options options_;
  std::shared_ptr<Kernel> kernel_;  // shared with the jobs on the pool
  // Made at the first install command: few module trees have one, and a spawner made at start
  // cost every daemon's start-up a child stack, two descriptors and their page faults.
  std::unique_ptr<io::process::Spawner> spawner_;
  LoaderCounters counters_;
  std::deque<LoadRecord> records_;
  absl::flat_hash_map<std::string, std::shared_ptr<Pending>> pending_;  // by module name
  size_t running_ = 0;
  bool serial_busy_ = false;
  std::deque<SerialTurn*> serial_line_;  // borrowed: each turn removes itself
  Notifier serial_turn_;  // the slot was handed to someone in line
  Notifier finished_;  // a load finished: plans look again at what they wait for
  // Destroyed before everything above (members go in reverse order): the pool's threads are
  // joined, and the tasks that use the members are gone, before the members are.
  std::unique_ptr<io::BlockingPool> pool_;
  TaskScope loads_;  // one task per load in flight
};

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_LOADER_H_
