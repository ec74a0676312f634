#include "hotplug/modules/loader.h"

#include <fcntl.h>
#include <linux/module.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"
#include "io/ops.h"

namespace hotring::hotplug::modules {
namespace {

#ifndef MODULE_INIT_COMPRESSED_FILE
constexpr int MODULE_INIT_COMPRESSED_FILE = 4;
#endif

bool IsCompressed(absl::string_view path) {
  return absl::EndsWith(path, ".ko.xz") || absl::EndsWith(path, ".ko.zst") ||
         absl::EndsWith(path, ".ko.gz");
}

std::string FormatMs(absl::Duration d) {
  return absl::StrFormat("%.1fms", absl::ToDoubleMilliseconds(d));
}

// The calling thread's nice value set to `nice` for the object's life (a pool thread, while it
// loads a module of a first plan), then restored. 0, or a change the kernel refuses (no
// CAP_SYS_NICE for a negative value), leaves it as it was: priority is a help, not a need.
class ThreadNice {
 public:
  explicit ThreadNice(int nice) {
    if (nice == 0) return;
    errno = 0;
    const int current = ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid_));
    if (current == -1 && errno != 0) return;
    if (current == nice || ::setpriority(PRIO_PROCESS, static_cast<id_t>(tid_), nice) != 0) return;
    restore_ = current;
  }
  ThreadNice(const ThreadNice&) = delete;
  ThreadNice& operator=(const ThreadNice&) = delete;
  ~ThreadNice() {
    if (restore_.has_value()) (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(tid_), *restore_);
  }

 private:
  const pid_t tid_ = static_cast<pid_t>(::syscall(SYS_gettid));
  std::optional<int> restore_;
};

// What a load job on the pool found before the install command.
enum class InstallStep { kAlreadyLoaded, kTaken, kRun };

}  // namespace

// ----------------------------------------------------------------------------------------------
// Kernels

bool SysKernel::IsLoaded(const std::string& name) {
  const std::string path = absl::StrCat(sysfs_root_, "/module/", name);
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

absl::StatusOr<Kernel::LoadResult> SysKernel::Load(const ModuleToLoad& module) {
  if (module.path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(module.name, ": no .ko path to load"));
  }
  const UniqueFd fd(::open(module.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", module.path, ")"));
  const int flags = IsCompressed(module.path) ? MODULE_INIT_COMPRESSED_FILE : 0;
  if (::syscall(SYS_finit_module, fd.get(), module.options.c_str(), flags) == 0) {
    return LoadResult::kLoaded;
  }
  const int err = errno;
  if (err == EEXIST) return LoadResult::kAlreadyLoaded;
  return ErrnoStatus(absl::StrCat("finit_module(", module.path, ")"), err);
}

absl::StatusOr<std::unique_ptr<DryRunKernel>> DryRunKernel::Create(const std::string& path,
                                                                   absl::Duration delay) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  return std::unique_ptr<DryRunKernel>(new DryRunKernel(std::move(fd), delay));
}

bool DryRunKernel::IsLoaded(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  return loaded_.contains(name);
}

void DryRunKernel::Append(const std::string& line) {
  // One write per line on an O_APPEND file: lines of parallel loads never interleave.
  const std::string text = line + "\n";
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      LogError("modules: dry-run log: %s", ErrnoStatus("write").ToString());
      return;
    }
    done += static_cast<size_t>(n);
  }
}

absl::StatusOr<Kernel::LoadResult> DryRunKernel::Load(const ModuleToLoad& module) {
  if (delay_ > absl::ZeroDuration()) {
    const timespec ts = DurationToTimespec(delay_);
    ::nanosleep(&ts, nullptr);
  }
  Append(absl::StrCat("load ", module.name, " ", module.path,
                      module.options.empty() ? "" : " ", module.options));
  std::lock_guard<std::mutex> lock(mutex_);
  return loaded_.insert(module.name).second ? LoadResult::kLoaded : LoadResult::kAlreadyLoaded;
}

bool DryRunKernel::TakeInstall(const ModuleToLoad& module, const std::string& command) {
  if (delay_ > absl::ZeroDuration()) {
    const timespec ts = DurationToTimespec(delay_);
    ::nanosleep(&ts, nullptr);
  }
  Append(absl::StrCat("install ", module.name, " ", command));
  std::lock_guard<std::mutex> lock(mutex_);
  loaded_.insert(module.name);
  return true;
}

// ----------------------------------------------------------------------------------------------
// Results

absl::string_view OutcomeName(ModuleOutcome outcome) {
  switch (outcome) {
    case ModuleOutcome::kLoaded:
      return "loaded";
    case ModuleOutcome::kAlreadyLoaded:
      return "already loaded";
    case ModuleOutcome::kBuiltin:
      return "builtin";
    case ModuleOutcome::kInstalled:
      return "installed";
    case ModuleOutcome::kFailed:
      return "failed";
    case ModuleOutcome::kDependencyFailed:
      return "dependency failed";
    case ModuleOutcome::kTimedOut:
      return "timed out";
    case ModuleOutcome::kNotNeeded:
      return "not needed";
  }
  return "?";
}

size_t PlanResult::failures() const {
  size_t n = 0;
  for (const ModuleResult& m : modules) n += IsSuccess(m.outcome) ? 0 : 1;
  return n;
}

// ----------------------------------------------------------------------------------------------
// Loader

absl::StatusOr<std::unique_ptr<Loader>> Loader::Create(Options options,
                                                       std::shared_ptr<Kernel> kernel) {
  if (kernel == nullptr) return absl::InvalidArgumentError("modules: loader without a kernel");
  return std::unique_ptr<Loader>(new Loader(std::move(options), std::move(kernel)));
}

Loader::Loader(Options options, std::shared_ptr<Kernel> kernel)
    : options_(std::move(options)),
      kernel_(std::move(kernel)),
      pool_(std::make_unique<io::BlockingPool>(io::BlockingPool::Options{
          .max_threads = std::max<size_t>(options_.threads, 1),
          .name = "hotring-modload"})) {}

Loader::~Loader() {
  // Tasks first (they await the pool and use the spawner), then the pool's threads.
  loads_.CancelAll();
  pool_->Shutdown();
}

Task<PlanResult> Loader::Load(io::Reactor& reactor, LoadPlan plan) {
  const size_t n = plan.modules.size();
  absl::flat_hash_map<absl::string_view, size_t> index;
  for (size_t i = 0; i < n; ++i) index.emplace(plan.modules[i].name, i);
  std::vector<std::shared_ptr<Pending>> started(n);
  std::vector<std::optional<ModuleResult>> results(n);
  size_t finished = 0;

  auto finish = [&](size_t i, ModuleOutcome outcome, absl::Status status) {
    results[i] = ModuleResult{plan.modules[i].name, outcome, std::move(status)};
    ++finished;
  };
  co_await SkipWhatTheKernelHas(reactor, plan, index, finish);
  bool expired = false;
  // Declared after what its task touches: destroyed (cancelling the timer) first.
  TaskScope timer;
  if (options_.wait_limit != absl::InfiniteDuration()) {
    timer.Spawn(ExpireAfter(reactor, options_.wait_limit, expired));
  }

  for (;;) {
    // Settle everything that can be decided now; repeat, since one result can unblock another.
    bool progress = true;
    while (progress) {
      progress = false;
      // Serial: a module that needs others queues only once every module before it in the plan
      // (a valid serial order) is done. Queued as soon as its own needs were done, the pool's
      // timing would decide which of two branches (kvm -> kvm_amd, edac_mce_amd -> amd64_edac)
      // queues first: the same boot or replay in another order. Modules that need none still
      // queue at once, first come first served with other plans'.
      bool earlier_unfinished = false;
      for (size_t i = 0; i < n; ++i) {
        if (results[i].has_value()) continue;
        if (started[i] != nullptr) {
          if (started[i]->done) {
            finish(i, started[i]->outcome, started[i]->status);
            progress = true;
          } else {
            earlier_unfinished = true;
          }
          continue;
        }
        const bool waits_its_turn = options_.serial && earlier_unfinished;
        earlier_unfinished = true;  // settled below, or still waiting
        const ModuleToLoad& module = plan.modules[i];
        if (waits_its_turn && !module.needs.empty()) continue;
        bool ready = true;
        std::optional<size_t> failed_need;
        for (const std::string& need : module.needs) {
          const auto it = index.find(need);
          if (it == index.end() || it->second == i) continue;  // not ours to wait for
          const std::optional<ModuleResult>& dep = results[it->second];
          if (!dep.has_value()) {
            ready = false;
          } else if (!IsSuccess(dep->outcome) && plan.modules[it->second].required) {
            // A failed softdep only ordered this load (kmod ignores its failure).
            failed_need = it->second;
            break;
          }
        }
        if (failed_need.has_value()) {
          const ModuleResult& dep = *results[*failed_need];
          absl::Status why = absl::AbortedError(absl::StrCat(
              "needs ", dep.name, ", which failed: ", dep.status.message()));
          LogError("modules: %s not loaded (for %s): it needs %s, which failed: %s", module.name,
                   plan.query, dep.name, dep.status.message());
          ++counters_.dependency_failed;
          finish(i, ModuleOutcome::kDependencyFailed, std::move(why));
          progress = true;
        } else if (ready) {
          started[i] = Start(reactor, module, plan.first);
          progress = true;
        }
      }
    }
    if (finished == n) break;
    // Something must still be running for this plan, or nothing will ever wake us: the rest
    // need each other (a cycle in the plan).
    bool waiting_on_load = false;
    for (size_t i = 0; i < n; ++i) {
      waiting_on_load |= !results[i].has_value() && started[i] != nullptr;
    }
    if (expired) {
      for (size_t i = 0; i < n; ++i) {
        if (results[i].has_value()) continue;
        LogError("modules: %s not loaded (for %s) after %s; going on without it",
                 plan.modules[i].name, plan.query, absl::FormatDuration(options_.wait_limit));
        ++counters_.timed_out;
        finish(i, ModuleOutcome::kTimedOut,
               absl::DeadlineExceededError(absl::StrCat(
                   "not loaded after ", absl::FormatDuration(options_.wait_limit))));
      }
      break;
    }
    if (!waiting_on_load) {
      for (size_t i = 0; i < n; ++i) {
        if (results[i].has_value()) continue;
        LogError("modules: %s not loaded (for %s): its dependencies form a cycle",
                 plan.modules[i].name, plan.query);
        ++counters_.dependency_failed;
        finish(i, ModuleOutcome::kDependencyFailed,
               absl::FailedPreconditionError("dependency cycle in the load plan"));
      }
      break;
    }
    co_await finished_.Wait();
  }

  PlanResult result;
  result.modules.reserve(n);
  for (std::optional<ModuleResult>& r : results) result.modules.push_back(std::move(*r));
  co_return result;
}

template <typename Finish>
Task<void> Loader::SkipWhatTheKernelHas(io::Reactor& reactor, const LoadPlan& plan,
                                        const absl::flat_hash_map<absl::string_view, size_t>& index,
                                        Finish& finish) {
  // Which matched modules the kernel has: a builtin one by the plan, a loaded one by the kernel
  // (on the pool: /sys/module is a file system).
  absl::flat_hash_set<std::string> in_kernel;
  std::vector<std::string> to_ask;
  for (const std::string& name : plan.matched) {
    const auto it = index.find(name);
    if (it != index.end() && plan.modules[it->second].builtin) {
      in_kernel.insert(name);
    } else {
      to_ask.push_back(name);
    }
  }
  if (!to_ask.empty()) {
    auto job = [kernel = kernel_, to_ask = std::move(to_ask)] {
      std::vector<std::string> loaded;
      for (const std::string& name : to_ask) {
        if (kernel->IsLoaded(name)) loaded.push_back(name);
      }
      return loaded;
    };
    Task<absl::StatusOr<std::vector<std::string>>> ask = pool_->Run(reactor, std::move(job));
    absl::StatusOr<std::vector<std::string>> loaded = co_await std::move(ask);
    if (!loaded.ok()) co_return;  // the loads find out for themselves
    in_kernel.insert(loaded->begin(), loaded->end());
  }
  if (in_kernel.empty()) co_return;
  for (size_t i = 0; i < plan.modules.size(); ++i) {
    const ModuleToLoad& module = plan.modules[i];
    if (module.wanted_by.empty() || module.builtin) continue;
    const bool not_needed = std::all_of(module.wanted_by.begin(), module.wanted_by.end(),
                                        [&](const std::string& m) { return in_kernel.contains(m); });
    if (!not_needed) continue;
    if (in_kernel.contains(module.name)) {
      ++counters_.already_loaded;
      finish(i, ModuleOutcome::kAlreadyLoaded, absl::OkStatus());
    } else {
      ++counters_.not_needed;
      finish(i, ModuleOutcome::kNotNeeded, absl::OkStatus());
    }
  }
}

std::shared_ptr<Loader::Pending> Loader::Start(io::Reactor& reactor, const ModuleToLoad& module,
                                               bool first) {
  if (module.builtin) {
    ++counters_.builtin;
    auto done = std::make_shared<Pending>();
    done->name = module.name;
    done->done = true;
    done->outcome = ModuleOutcome::kBuiltin;
    return done;
  }
  if (const auto it = pending_.find(module.name); it != pending_.end()) {
    ++counters_.joined;
    return it->second;
  }
  auto pending = std::make_shared<Pending>();
  pending->name = module.name;
  pending_.emplace(module.name, pending);
  if (first) ++counters_.first;
  loads_.Spawn(RunLoad(reactor, module, pending, first));
  return pending;
}

Loader::SerialTurn::~SerialTurn() {
  switch (state_) {
    case State::kOut:
      break;
    case State::kWaiting: {
      std::deque<SerialTurn*>& line = loader_->serial_line_;
      line.erase(std::find(line.begin(), line.end(), this));
      break;
    }
    case State::kHolding:
      loader_->PassSerial();
      break;
  }
}

void Loader::SerialTurn::Enqueue() {
  if (!loader_->serial_busy_ && loader_->serial_line_.empty()) {
    loader_->serial_busy_ = true;
    state_ = State::kHolding;
    return;
  }
  state_ = State::kWaiting;
  loader_->serial_line_.push_back(this);
}

void Loader::PassSerial() {
  if (serial_line_.empty()) {
    serial_busy_ = false;
    return;
  }
  // Handed over, not released: a load that becomes ready meanwhile cannot jump the line.
  SerialTurn* const next = serial_line_.front();
  serial_line_.pop_front();
  next->state_ = SerialTurn::State::kHolding;
  serial_turn_.NotifyAll();
}

Task<void> Loader::RunLoad(io::Reactor& reactor, ModuleToLoad module,
                           std::shared_ptr<Pending> pending, bool first) {
  SerialTurn turn(this);
  if (options_.serial) {
    turn.Enqueue();
    while (!turn.holding()) co_await serial_turn_.Wait();
  }
  const MonoTime start = MonoNow();
  ++running_;
  counters_.peak_in_flight = std::max(counters_.peak_in_flight, running_);
  // Two statements, not a conditional expression: GCC 12 miscompiles co_await inside ?:.
  absl::StatusOr<ModuleOutcome> outcome = absl::UnknownError("not run");
  if (module.install_command.empty()) {
    outcome = co_await LoadWithKernel(reactor, module, first);
  } else {
    outcome = co_await RunInstall(reactor, module);
  }
  --running_;
  const absl::Duration took = Since(start, MonoNow());

  pending->done = true;
  if (outcome.ok()) {
    pending->outcome = *outcome;
  } else {
    pending->outcome = ModuleOutcome::kFailed;
    pending->status = outcome.status();
  }
  switch (pending->outcome) {
    case ModuleOutcome::kLoaded:
      ++counters_.loaded;
      LogInfo("modules: loaded %s in %s", module.name, FormatMs(took));
      break;
    case ModuleOutcome::kInstalled:
      ++counters_.installed;
      LogInfo("modules: ran the install command of %s in %s", module.name, FormatMs(took));
      break;
    case ModuleOutcome::kAlreadyLoaded:
      ++counters_.already_loaded;
      LogDebug("modules: %s is already loaded", module.name);
      break;
    case ModuleOutcome::kFailed: {
      ++counters_.failed;
      // The status names the call and its errno: "finit_module(PATH): ... (errno N)". Its level
      // as kmod's modprobe -v gives it: no device for the driver here (ENODEV) is a notice, no
      // such module a warning, anything else an error; a `quiet` console shows errors only.
      const int err = StatusErrno(pending->status);
      const LogLevel level = err == ENODEV ? LogLevel::kNotice
                             : err == ENOENT ? LogLevel::kWarning
                                             : LogLevel::kError;
      if (LogEnabled(level)) {
        LogLine(level, absl::StrCat("modules: loading ", module.name, " failed: ", pending->status.message()));
      }
      break;
    }
    case ModuleOutcome::kBuiltin:
    case ModuleOutcome::kDependencyFailed:
    case ModuleOutcome::kTimedOut:
    case ModuleOutcome::kNotNeeded:
      break;
  }
  if (pending->outcome != ModuleOutcome::kAlreadyLoaded) {
    counters_.load_time += took;
    Record(LoadRecord{.name = module.name,
                      .start = start,
                      .duration = took,
                      .outcome = pending->outcome,
                      .error = StatusErrno(pending->status)});
  }
  // The next request for this module starts afresh (and finds it in /sys/module, or retries
  // a failure: a later device may succeed where this one did not).
  pending_.erase(module.name);
  finished_.NotifyAll();
}

Task<void> Loader::ExpireAfter(io::Reactor& reactor, absl::Duration after, bool& expired) {
  const absl::Status slept = co_await io::Sleep(reactor, after);
  if (!slept.ok()) co_return;
  expired = true;
  finished_.NotifyAll();
}

Task<absl::StatusOr<ModuleOutcome>> Loader::LoadWithKernel(io::Reactor& reactor,
                                                           const ModuleToLoad& module,
                                                           bool first) {
  const int nice = first ? options_.first_nice : 0;
  // The job and its task are named: GCC 12 destroys a lambda temporary in a co_await
  // expression twice.
  auto job = [kernel = kernel_, module, nice]() -> absl::StatusOr<Kernel::LoadResult> {
    const ThreadNice priority(nice);
    if (kernel->IsLoaded(module.name)) return Kernel::LoadResult::kAlreadyLoaded;
    if (module.path.empty()) {
      // A name only configuration mentions (`alias foo nonexistent`): kmod fails it so too.
      return ErrnoStatus(absl::StrCat(module.name, ": no module file"), ENOENT);
    }
    return kernel->Load(module);
  };
  Task<absl::StatusOr<Kernel::LoadResult>> run =
      pool_->Run(reactor, std::move(job), first ? io::JobOrder::kFirst : io::JobOrder::kLast);
  absl::StatusOr<Kernel::LoadResult> loaded = co_await std::move(run);
  if (!loaded.ok()) co_return loaded.status();
  co_return *loaded == Kernel::LoadResult::kLoaded ? ModuleOutcome::kLoaded
                                                   : ModuleOutcome::kAlreadyLoaded;
}

Task<absl::StatusOr<ModuleOutcome>> Loader::RunInstall(io::Reactor& reactor,
                                                       const ModuleToLoad& module) {
  const std::string& command = module.install_command;
  // Like kmod: a module the kernel already has is not installed again.
  auto job = [kernel = kernel_, module, command] {
    if (kernel->IsLoaded(module.name)) return InstallStep::kAlreadyLoaded;
    return kernel->TakeInstall(module, command) ? InstallStep::kTaken : InstallStep::kRun;
  };
  Task<absl::StatusOr<InstallStep>> run = pool_->Run(reactor, std::move(job));
  absl::StatusOr<InstallStep> step = co_await std::move(run);
  if (!step.ok()) co_return step.status();
  switch (*step) {
    case InstallStep::kAlreadyLoaded:
      co_return ModuleOutcome::kAlreadyLoaded;
    case InstallStep::kTaken:
      co_return ModuleOutcome::kInstalled;
    case InstallStep::kRun:
      break;
  }
  io::process::SpawnRequest request;
  request.program = "/bin/sh";
  request.argv = {"/bin/sh", "-c", command};
  // kmod runs it with system(), in modprobe's environment plus MODPROBE_MODULE.
  request.envp = {"HOME=/", "PATH=/sbin:/bin:/usr/sbin:/usr/bin",
                  absl::StrCat("MODPROBE_MODULE=", module.name)};
  request.label = absl::StrCat("modules: install ", module.name);
  request.timeout = options_.install_timeout;
  request.kill_grace = options_.install_kill_grace;
  if (spawner_ == nullptr) {
    absl::StatusOr<std::unique_ptr<io::process::Spawner>> made = io::process::Spawner::Create();
    if (!made.ok()) co_return made.status();
    spawner_ = *std::move(made);
  }
  absl::StatusOr<io::process::SpawnResult> ran =
      co_await spawner_->Run(reactor, std::move(request));
  if (!ran.ok()) co_return ran.status();
  if (ran->timed_out) {
    co_return absl::DeadlineExceededError(absl::StrCat(
        "install command timed out after ", absl::FormatDuration(options_.install_timeout)));
  }
  if (!ran->exit.success()) {
    co_return absl::InternalError(absl::StrCat("install command '", command, "' ",
                                               ran->exit.exited ? "exited " : "killed by signal ",
                                               ran->exit.code));
  }
  co_return ModuleOutcome::kInstalled;
}

void Loader::Record(LoadRecord record) {
  if (options_.max_records == 0) return;
  if (records_.size() >= options_.max_records) {
    records_.pop_front();
    ++counters_.records_dropped;
  }
  records_.push_back(std::move(record));
}

}  // namespace hotring::hotplug::modules
