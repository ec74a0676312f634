#include "hotplug/handler.h"

#include <unistd.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/status.h"
#include "core/task_scope.h"

namespace hotring::hotplug {

std::optional<absl::string_view> GlobalProperties::Get(absl::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return absl::string_view(v);
  }
  return std::nullopt;
}

Task<HandlerResult> HandlerChain::Handle(io::Reactor& reactor, const Event& event) {
  HandlerResult last;
  for (const std::unique_ptr<Handler>& link : links_) {
    last = co_await link->Handle(reactor, event);
    if (last.outcome != HandlerOutcome::kHandled) co_return last;
  }
  co_return last;
}

Task<void> HandlerChain::Serve(io::Reactor& reactor) {
  TaskScope links;
  for (const std::unique_ptr<Handler>& link : links_) links.Spawn(link->Serve(reactor));
  co_await links.Join();
}

absl::Status HandlerChain::Reload() {
  absl::Status first = absl::OkStatus();
  for (const std::unique_ptr<Handler>& link : links_) {
    absl::Status reloaded = link->Reload();
    if (first.ok() && !reloaded.ok()) first = std::move(reloaded);
  }
  return first;
}

std::string HandlerChain::Name() const {
  if (links_.empty()) return "none";
  std::string name;
  for (const std::unique_ptr<Handler>& link : links_) {
    if (!name.empty()) name += '+';
    name += link->Name();
  }
  return name;
}

void HandlerChain::AppendCounters(std::vector<std::pair<std::string, uint64_t>>& out) const {
  for (const std::unique_ptr<Handler>& link : links_) link->AppendCounters(out);
}

std::string HandlerChain::Describe(const Event& event) const {
  std::string out;
  for (const std::unique_ptr<Handler>& link : links_) {
    const std::string what = link->Describe(event);
    if (what.empty()) continue;
    if (!out.empty()) out += "; ";
    out += what;
  }
  return out;
}

Task<HandlerResult> NullHandler::Handle(io::Reactor& reactor, const Event& event) {
  co_return HandlerResult{};
}

absl::StatusOr<std::unique_ptr<ExecHandler>> ExecHandler::Create(Options options) {
  if (options.program.empty() || options.program[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("--exec needs an absolute path (no PATH search): '", options.program, "'"));
  }
  if (::access(options.program.c_str(), X_OK) != 0) {
    return ErrnoStatus(absl::StrCat("access(", options.program, ", X_OK)"));
  }
  io::process::Spawner::Options spawner_options;
  // A handler that complains on every event must not flood a rate-limited kmsg: the first few
  // stderr lines are warnings, later ones info (stdout is info from the start).
  spawner_options.line_sink = [stderr_lines = std::make_shared<uint64_t>(0)](
                                  const io::process::OutputLine& line) {
    constexpr uint64_t kWarned = 5;
    const absl::string_view mark = line.truncated ? " [truncated]" : "";
    if (line.stream == io::process::OutputStream::kStderr && ++*stderr_lines <= kWarned) {
      LogWarning("%s %s[%d]: %s%s%s", line.label, line.program, line.pid, line.text, mark,
                 *stderr_lines == kWarned ? " (further handler stderr lines: info level)" : "");
    } else {
      LogInfo("%s %s[%d]: %s%s", line.label, line.program, line.pid, line.text, mark);
    }
  };
  HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<io::process::Spawner> spawner,
                           io::process::Spawner::Create(std::move(spawner_options)));
  return std::unique_ptr<ExecHandler>(new ExecHandler(std::move(options), std::move(spawner)));
}

std::string ExecHandler::Describe(const Event& event) const {
  const auto it = running_.find(&event);
  if (it == running_.end()) return "";
  return absl::StrCat("exec pid ", it->second, ": ", options_.program, " ",
                      event.subsystem.substr(0, 64));
}

Task<HandlerResult> ExecHandler::Handle(io::Reactor& reactor, const Event& event) {
  io::process::SpawnRequest request;
  request.program = options_.program;
  request.argv = {options_.program, event.subsystem};
  bool has_home = false;
  bool has_path = false;
  // Taken once, at the start: a change while the program runs is for the next events.
  const std::shared_ptr<const GlobalProperties> globals = globals_;
  request.envp.reserve(event.env.size() + globals->entries.size() + 2);
  for (const auto& [key, value] : event.env) {
    has_home |= key == "HOME";
    has_path |= key == "PATH";
    request.envp.push_back(absl::StrCat(key, "=", value));
  }
  for (const auto& [key, value] : globals->entries) {
    if (event.Get(key).has_value()) continue;  // the event's own value wins
    has_home |= key == "HOME";
    has_path |= key == "PATH";
    request.envp.push_back(absl::StrCat(key, "=", value));
  }
  if (!has_home) request.envp.push_back("HOME=/");
  if (!has_path) request.envp.push_back("PATH=/sbin:/bin:/usr/sbin:/usr/bin");
  request.label = EventLabel(event);
  request.timeout = options_.timeout;
  request.kill_grace = options_.kill_grace;
  // Stdout lines are logged at info only: below that level nobody would see them, and a pipe
  // costs the daemon a pipe2, an fcntl, two closes, a poll and a read per handler run (with
  // a cheap handler, a few percent of the daemon's CPU). Asked at each run, as the level may
  // change while the daemon runs.
  request.stdout_to = LogEnabled(LogLevel::kInfo) ? io::process::ChildOutput::kPipe
                                                  : io::process::ChildOutput::kDevNull;
  request.on_started = [this, &event](pid_t pid) { running_[&event] = pid; };
  // Forgets the child however Handle ends (a dropped task included).
  struct Forget {
    absl::flat_hash_map<const Event*, pid_t>& running;
    const Event* event;
    ~Forget() { running.erase(event); }
  } forget{running_, &event};
  absl::StatusOr<io::process::SpawnResult> run =
      co_await spawner_->Run(reactor, std::move(request));
  HandlerResult result;
  if (!run.ok()) {
    result.outcome = HandlerOutcome::kFailed;
    result.detail = std::string(run.status().message());
    co_return result;
  }
  result.killed = run->killed;
  if (run->timed_out) {
    result.outcome = HandlerOutcome::kTimedOut;
    result.detail = absl::StrCat("timed out after ", absl::FormatDuration(options_.timeout),
                                 run->killed ? ", killed" : ", terminated");
  } else if (run->exit.success()) {
    result.outcome = HandlerOutcome::kHandled;
    result.detail = "exit 0";
  } else {
    result.outcome = HandlerOutcome::kFailed;
    result.detail = run->exit.exited ? absl::StrCat("exit ", run->exit.code)
                                     : absl::StrCat("signal ", run->exit.code);
  }
  co_return result;
}

}  // namespace hotring::hotplug
