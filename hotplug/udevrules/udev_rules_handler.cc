#include "hotplug/udevrules/udev_rules_handler.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/cpu.h"
#include "core/log.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/udev/builtin_registry.h"
#include "hotplug/udev/sysfs_view.h"
#include "hotplug/udevrules/link_claims.h"
#include "hotplug/udevrules/names.h"
#include "hotplug/udevrules/udev_event.h"
#include "hotplug/udevrules/watches.h"
#include "io/ops.h"

namespace hotring::hotplug::udevrules {
namespace {

std::string ReadSmallFile(const std::string& path) {
  if (path.empty()) return "";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "";
  char buf[4096];
  const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n <= 0) return "";
  return std::string(absl::StripTrailingAsciiWhitespace(absl::string_view(buf, static_cast<size_t>(n))));
}

// Erases an event's entry from the waiting map on every path out of Handle.
class WaitingEntry {
 public:
  WaitingEntry(absl::flat_hash_map<const Event*, std::string>& map, const Event& event, std::string what)
      : map_(map), event_(&event) {
    map_[event_] = std::move(what);
  }
  ~WaitingEntry() { map_.erase(event_); }
  void Set(std::string what) { map_[event_] = std::move(what); }

 private:
  absl::flat_hash_map<const Event*, std::string>& map_;
  const Event* event_;
};

}  // namespace

// Executors are kept between events (their buffers are the point of them), one per job at once.
class UdevRulesHandler::ExecutorPool {
 public:
  std::unique_ptr<Executor> Take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) return std::make_unique<Executor>();
    std::unique_ptr<Executor> e = std::move(free_.back());
    free_.pop_back();
    return e;
  }
  void Give(std::unique_ptr<Executor> e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < 16) free_.push_back(std::move(e));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<Executor>> free_;
};

absl::StatusOr<std::unique_ptr<UdevRulesHandler>> UdevRulesHandler::Create(Options options) {
  UdevConf conf;
  if (!options.udev_conf.empty()) {
    HOTRING_ASSIGN_OR_RETURN(conf, ReadUdevConf(options.udev_conf));
    for (const std::string& w : conf.warnings) LogWarning("udevrules: %s", w);
  }
  if (conf.event_timeout.has_value()) options.event_timeout = *conf.event_timeout;
  if (options.resolve_names.has_value()) conf.resolve_names = options.resolve_names;
  if (options.rules_dirs.empty()) options.rules_dirs = DefaultRulesDirs();
  HOTRING_ASSIGN_OR_RETURN(udev::DatabaseDir database, udev::DatabaseDir::Open(options.run_dir));
  // The daemon writes every entry: what is not there needs no open to be told so.
  HOTRING_RETURN_IF_ERROR(database.TrackEntries());
  HOTRING_ASSIGN_OR_RETURN(devroot::DevRoot dev_root, devroot::DevRoot::Open(options.dev_root));
  HOTRING_ASSIGN_OR_RETURN(PasswdFiles names, PasswdFiles::Load(options.users_root));
  HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<io::process::BlockingSpawner> blocking,
                           io::process::BlockingSpawner::Create());
  HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<io::process::Spawner> spawner, io::process::Spawner::Create());
  HOTRING_ASSIGN_OR_RETURN(udev::StageReporter reporter, udev::StageReporter::Open("udevrules", options.monitor));
  const std::string kernel_cmdline = ReadSmallFile(options.kernel_cmdline);
  BuiltinSources builtin_sources{.sysfs_root = options.sysfs_root,
                                 .hwdb_paths = options.hwdb_paths,
                                 .network_dirs = options.network_dirs,
                                 .kernel_cmdline = kernel_cmdline,
                                 .architecture = BuildArchitecture()};
  // Without inotify (no room for another instance) the rules still run, only unwatched.
  absl::StatusOr<std::unique_ptr<Watches>> watches = Watches::Open(options.run_dir, options.dev_root);
  if (!watches.ok()) LogWarning("udevrules: OPTIONS+=\"watch\" is off: %s", watches.status().message());
  auto world = std::make_shared<UdevWorld>(UdevWorld{
      .host = {},
      .database = std::move(database),
      .dev_root = std::move(dev_root),
      .spawner = std::move(blocking),
      .names = std::make_unique<PasswdFiles>(std::move(names)),
      .rename_interfaces = options.rename_interfaces,
  });
  if (watches.ok()) world->watches = *std::move(watches);
  HostContext& host = world->host;
  host.roots = SysfsHost::Roots{.sysfs = options.sysfs_root,
                                .proc_sys = options.proc_sys,
                                .files = "",
                                .sysfs_mounted = udev::IsSysfsMount(options.sysfs_root)};
  host.dev_root = options.dev_root;
  host.database = &world->database;
  host.shapes = world->shapes.get();
  host.spawner = world->spawner.get();
  host.names = world->names.get();
  host.kernel_cmdline = kernel_cmdline;
  host.arch = BuildArchitecture();
  host.kill_grace = options.kill_grace;
  std::unique_ptr<UdevRulesHandler> handler(new UdevRulesHandler(
      std::move(options), std::move(conf), std::move(world), std::move(reporter), std::move(spawner)));
  handler->builtin_sources_ = std::move(builtin_sources);
  handler->builtins_ = handler->LoadBuiltins();
  HOTRING_ASSIGN_OR_RETURN(handler->rules_, handler->LoadAndReport());
  for (const std::string& line : ApplyStaticNodes(*handler->world_, *handler->rules_)) {
    LogWarning("udevrules: static_node: %s", line);
  }
  if (handler->world_->watches != nullptr) {
    handler->counters_.watches_added += handler->world_->watches->Restore(handler->options_.sysfs_root);
  }
  return handler;
}

UdevRulesHandler::UdevRulesHandler(Options options, UdevConf conf, std::shared_ptr<UdevWorld> world,
                                   udev::StageReporter reporter, std::unique_ptr<io::process::Spawner> spawner)
    : options_(std::move(options)),
      conf_(std::move(conf)),
      world_(std::move(world)),
      executors_(std::make_shared<ExecutorPool>()),
      reporter_(std::move(reporter)),
      spawner_(std::move(spawner)) {
  size_t threads = options_.threads;
  if (threads == 0) threads = conf_.children_max.has_value() ? std::clamp<size_t>(*conf_.children_max, 1, 16) : 4;
  // As many events at work as CPUs, on up to `threads` threads: a burst's short jobs go to the
  // threads already running (each wake-up of another costs both a switch) and a job that waits
  // for a program or a disk lets another thread take the queue (WaitingElsewhere).
  const absl::StatusOr<std::vector<int>> cpus = AllowedCpus();
  const size_t busy = cpus.ok() && !cpus->empty() ? cpus->size() : threads;
  pool_ = std::make_unique<io::BlockingPool>(
      io::BlockingPool::Options{.max_threads = threads, .max_busy = std::min(busy, threads), .name = "hotring-udevr"});
  execute_options_.program_timeout = options_.event_timeout;
  execute_options_.debug = conf_.log_level.has_value() && *conf_.log_level >= 7;
}

UdevRulesHandler::~UdevRulesHandler() { pool_->Shutdown(); }

absl::StatusOr<std::shared_ptr<const CompiledRules>> UdevRulesHandler::LoadAndReport() {
  CompileOptions compile;
  compile.resolve_names = conf_.resolve_names.value_or(ResolveNames::kEarly);
  compile.names = world_->names.get();
  HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<CompiledRules> rules, LoadRules(options_.rules_dirs, compile));
  const Diagnostics& d = rules->diagnostics();
  for (const Diagnostic& problem : d.kept()) {
    if (problem.severity == Severity::kError) {
      LogError("udevrules: %s", problem.Format());
    } else {
      LogWarning("udevrules: %s", problem.Format());
    }
  }
  if (d.dropped() > 0) LogWarning("udevrules: %d more problems not shown", d.dropped());
  counters_.rule_problems = d.errors() + d.warnings();
  LogNotice("udevrules: %d rules from %d files in %s", rules->lines().size(), rules->file_count(),
            absl::StrJoin(options_.rules_dirs, " "));
  return std::shared_ptr<const CompiledRules>(std::move(rules));
}

absl::Status UdevRulesHandler::Reload() {
  ++counters_.reloads;
  absl::StatusOr<std::shared_ptr<const CompiledRules>> rules = LoadAndReport();
  if (!rules.ok()) {
    ++reporter_.counters().errors;
    LogError("udevrules: reload failed, keeping the rules in use: %s", rules.status().ToString());
    return rules.status();
  }
  rules_ = *std::move(rules);
  // As udevd's reload: hwdb.bin and the .link files are read again too. Events already running
  // keep the ones they started with.
  builtins_ = LoadBuiltins();
  return absl::OkStatus();
}

std::shared_ptr<const BuiltinWorld> UdevRulesHandler::LoadBuiltins() const {
  std::vector<std::string> warnings;
  std::shared_ptr<const BuiltinWorld> builtins = LoadBuiltinWorld(builtin_sources_, &warnings);
  for (const std::string& w : warnings) LogWarning("udevrules: builtins: %s", w);
  return builtins;
}

Task<HandlerResult> UdevRulesHandler::Handle(io::Reactor& reactor, const Event& event) {
  reporter_.Received();
  const MonoTime deadline = MonoNow() + options_.event_timeout;
  WaitingEntry waiting(waiting_, event, "udev rules");
  // The job owns what it uses: it may outlive this task when the task is dropped.
  auto job = [world = world_, rules = rules_, builtins = builtins_, executors = executors_,
              options = execute_options_, event_copy = event]() -> EventWork {
    std::unique_ptr<Executor> executor = executors->Take();
    EventWork work = ProcessUdevEvent(*world, *rules, &builtins->resources, options, *executor, event_copy);
    executors->Give(std::move(executor));
    return work;
  };
  absl::StatusOr<EventWork> work = co_await pool_->Run(reactor, std::move(job));
  if (!work.ok()) {
    reporter_.JobFailed(event, work.status());
    co_return HandlerResult{};
  }
  counters_.lines_matched += work->lines_matched;
  counters_.nodes_set += work->nodes_set;
  counters_.renamed += work->renamed;
  reporter_.Took(event, work->report);
  for (const std::string& line : work->debug) LogDebug("udevrules: %s: %s", EventLabel(event), line);
  if (work->rules_ok && !work->run.empty()) {
    waiting.Set("udev rules: RUN");
    co_await RunList(reactor, event, work->run, work->env, deadline);
  }
  if (work->watch && world_->watches != nullptr) co_await BeginWatch(reactor, event, std::move(work->device_id));
  reporter_.Announce(event, work->report);
  claims_to_clean_ = claims_to_clean_ || work->claims_touched;
  if (claims_to_clean_ && waiting_.size() == 1) co_await CleanUpClaims(reactor);
  co_return HandlerResult{};
}

Task<void> UdevRulesHandler::CleanUpClaims(io::Reactor& reactor) {
  // As udevd once its last worker is gone: no event of this stage is in flight (one that starts
  // meanwhile waits for the lock in its job).
  claims_to_clean_ = false;
  auto job = [world = world_]() -> absl::StatusOr<size_t> {
    std::unique_lock<std::shared_mutex> alone(*world->claims_mutex, std::try_to_lock);
    if (!alone.owns_lock()) return absl::UnavailableError("claims in use");
    return CleanUpLinkClaims(world->database.fd());
  };
  const absl::StatusOr<size_t> cleaned = co_await pool_->Run(reactor, std::move(job));
  const absl::Status& status = cleaned.status();
  if (absl::IsUnavailable(status)) {
    claims_to_clean_ = true;  // the next idle moment
  } else if (!status.ok()) {
    LogWarning("udevrules: cleaning up %s/links: %s", options_.run_dir, status.message());
  }
}

Task<void> UdevRulesHandler::BeginWatch(io::Reactor& reactor, const Event& event, std::string device_id) {
  auto job = [world = world_, id = std::move(device_id), devname = event.devname]() -> absl::Status {
    return world->watches->Begin(id, devname);
  };
  const absl::Status begun = co_await pool_->Run(reactor, std::move(job));
  if (begun.ok()) {
    ++counters_.watches_added;
  } else if (StatusErrno(begun) == ENOENT) {
    // udevd: the node may be gone already.
    LogDebug("udevrules: %s: no watch: %s", EventLabel(event), begun.message());
  } else {
    LogWarning("udevrules: %s: no watch: %s", EventLabel(event), begun.message());
  }
}

Task<void> UdevRulesHandler::Serve(io::Reactor& reactor) {
  if (world_->watches == nullptr) co_return;
  struct Closes {
    uint64_t closes = 0;
    uint64_t changes = 0;
    uint64_t rereads = 0;
    std::vector<std::string> log;
  };
  for (;;) {
    const absl::StatusOr<unsigned> ready = co_await io::Poll(reactor, world_->watches->fd(), POLLIN);
    if (!ready.ok()) {
      LogError("udevrules: waiting for watched nodes: %s; watches are off", ready.status().ToString());
      co_return;
    }
    // Reading the records and re-reading a partition table may block: on the pool.
    auto job = [world = world_, sysfs = options_.sysfs_root, dev = options_.dev_root]() -> Closes {
      Closes out;
      for (const int wd : world->watches->TakeClosed()) {
        const std::string id = world->watches->WatchedDevice(wd);
        if (id.empty()) continue;  // dropped since
        ++out.closes;
        ChangeReport report = SynthesizeChange(sysfs, dev, id);
        out.changes += report.changes;
        out.rereads += report.reread ? 1 : 0;
        for (std::string& line : report.log) out.log.push_back(absl::StrCat(id, ": ", line));
      }
      return out;
    };
    absl::StatusOr<Closes> closes = co_await pool_->Run(reactor, std::move(job));
    if (!closes.ok()) {
      ++reporter_.counters().errors;
      LogWarning("udevrules: watched nodes: %s", closes.status().message());
      continue;
    }
    counters_.watch_closes += closes->closes;
    counters_.watch_changes += closes->changes;
    counters_.watch_rereads += closes->rereads;
    for (const std::string& line : closes->log) LogDebug("udevrules: watch of %s", line);
  }
}

Task<void> UdevRulesHandler::RunList(io::Reactor& reactor, const Event& event, const std::vector<RunEntry>& run,
                                     const std::vector<std::string>& env, MonoTime deadline) {
  for (const RunEntry& entry : run) {
    if (entry.builtin) {
      co_await RunBuiltin(reactor, event, entry, env);
      continue;
    }
    if (entry.argv.empty()) continue;
    const absl::Duration left = Since(MonoNow(), deadline);
    if (left <= absl::ZeroDuration()) {
      ++counters_.run_timed_out;
      LogWarning("udevrules: %s: event_timeout passed, '%s' not run", EventLabel(event), entry.command);
      continue;
    }
    io::process::SpawnRequest request;
    request.program = entry.argv[0];
    request.argv = entry.argv;
    request.envp = env;
    request.label = EventLabel(event);
    request.timeout = left;
    request.kill_grace = options_.kill_grace;
    ++counters_.run_programs;
    absl::StatusOr<io::process::SpawnResult> result = co_await spawner_->Run(reactor, std::move(request));
    if (!result.ok()) {
      ++counters_.run_failed;
      LogRunFailure(event, entry, result.status().message());
    } else if (result->timed_out) {
      ++counters_.run_timed_out;
      LogWarning("udevrules: %s: RUN '%s' timed out, %s", EventLabel(event), entry.command,
                 result->killed ? "killed" : "terminated");
    } else if (!result->exit.success()) {
      ++counters_.run_failed;
      LogRunFailure(event, entry, io::process::DescribeExit(result->exit));
    }
  }
}

void UdevRulesHandler::LogRunFailure(const Event& event, const RunEntry& entry, absl::string_view why) {
  // A program missing from an image fails for every device of a kind (99-systemd.rules'
  // systemd-sysctl for each interface): its first failures are warnings, the rest are counted
  // (udevrules_run_failed) and only written at debug level.
  constexpr uint32_t kWarnings = 3;
  constexpr size_t kProgramsTracked = 256;
  uint32_t* seen = nullptr;
  if (auto it = run_failures_.find(entry.argv[0]); it != run_failures_.end()) {
    seen = &it->second;
  } else if (run_failures_.size() < kProgramsTracked) {
    seen = &run_failures_[entry.argv[0]];
  }
  const uint32_t count = seen == nullptr ? kWarnings + 1 : ++*seen;
  if (count <= kWarnings) {
    LogWarning("udevrules: %s: RUN '%s': %s%s", EventLabel(event), entry.command, why,
               count == kWarnings ? " (further failures of this program are only counted)" : "");
  } else {
    LogDebug("udevrules: %s: RUN '%s': %s", EventLabel(event), entry.command, why);
  }
}

Task<void> UdevRulesHandler::RunBuiltin(io::Reactor& reactor, const Event& event, const RunEntry& entry,
                                        const std::vector<std::string>& env) {
  ++counters_.run_builtins;
  if (entry.builtin_name == "kmod") {
    // kmod load NAME...: through the modules stage, which joins loads already done or running.
    if (entry.argv.size() < 3 || entry.argv[1] != "load") co_return;
    if (options_.modules == nullptr) {
      ++counters_.builtins_missing;
      LogInfo("udevrules: %s: '%s': module loading is off", EventLabel(event), entry.command);
      co_return;
    }
    ++counters_.kmod_loads;
    const std::vector<std::string> names(entry.argv.begin() + 2, entry.argv.end());
    const absl::Status loaded = co_await options_.modules->LoadModules(reactor, names);
    if (!loaded.ok()) LogWarning("udevrules: %s: '%s': %s", EventLabel(event), entry.command, loaded.message());
    co_return;
  }
  const udev::BuiltinInfo* builtin = udev::FindBuiltin(entry.builtin_name);
  if (builtin == nullptr || builtin->run == nullptr) {
    ++counters_.builtins_missing;
    LogDebug("udevrules: %s: RUN{builtin} '%s' is not available", EventLabel(event), entry.command);
    co_return;
  }
  auto job = [world = world_, builtins = builtins_, entry, env, devpath = event.devpath]() -> absl::Status {
    std::vector<PropertyView> props;
    for (const std::string& kv : env) {
      const size_t eq = kv.find('=');
      props.emplace_back(absl::string_view(kv).substr(0, eq), absl::string_view(kv).substr(eq + 1));
    }
    // The same host as the rules', so that what the builtin asks is done as for IMPORT{builtin}.
    DaemonHost host(world->host, &builtins->resources);
    OwnedProperties ignored;
    absl::Status status = host.RunBuiltin(entry.builtin_name, entry.command, entry.argv, devpath, props, &ignored);
    for (const std::string& line : host.log()) LogWarning("udevrules: RUN{builtin} '%s': %s", entry.command, line);
    return status;
  };
  absl::StatusOr<absl::Status> ran = co_await pool_->Run(reactor, std::move(job));
  const absl::Status status = ran.ok() ? *ran : ran.status();
  if (!status.ok()) LogWarning("udevrules: %s: RUN{builtin} '%s': %s", EventLabel(event), entry.command, status.message());
}

std::string UdevRulesHandler::Describe(const Event& event) const {
  const auto it = waiting_.find(&event);
  return it == waiting_.end() ? "" : it->second;
}

void UdevRulesHandler::ReleaseIdleMemory() { world_->shapes->Clear(); }

void UdevRulesHandler::Starting(const Event& event) { ForgetShapesOf(*world_, event); }

void UdevRulesHandler::AppendCounters(std::vector<std::pair<std::string, uint64_t>>& out) const {
  const Counters& c = counters_;
  const udev::StageCounters& s = reporter_.counters();
  reporter_.AppendCounters({{"events", s.events},
                            {"lines_matched", c.lines_matched},
                            {"nodes_set", c.nodes_set},
                            {"links_made", s.links_made},
                            {"links_removed", s.links_removed},
                            {"links_refused", s.links_refused},
                            {"db_written", s.db_written},
                            {"db_removed", s.db_removed},
                            {"db_reads_skipped", world_->database.reads_skipped()},
                            {"sysfs_shapes_kept", world_->shapes->size()},
                            {"renamed", c.renamed},
                            {"run_programs", c.run_programs},
                            {"run_failed", c.run_failed},
                            {"run_timed_out", c.run_timed_out},
                            {"run_builtins", c.run_builtins},
                            {"builtins_missing", c.builtins_missing},
                            {"kmod_loads", c.kmod_loads},
                            {"monitor_sent", s.monitor_sent},
                            {"monitor_skipped", s.monitor_skipped},
                            {"errors", s.errors},
                            {"reloads", c.reloads},
                            {"rule_problems", c.rule_problems},
                            {"watches_added", c.watches_added},
                            {"watch_closes", c.watch_closes},
                            {"watch_changes", c.watch_changes},
                            {"watch_rereads", c.watch_rereads}},
                           out);
}

}  // namespace hotring::hotplug::udevrules
