// The udev rules executor: runs a CompiledRules program for one event as systemd-udevd 252's
// udev_rules_apply_to_event does, and says what udevd would do with the device: its final
// properties, the interface name, the /dev links and their priority, owner/group/mode, tags, the
// RUN list, the options. It applies nothing itself; everything outside goes through a RuleHost
// (rule_host.h). Synchronous, for a plain worker thread: one Executor per thread, reused from
// event to event, so that matching allocates nothing once its buffers have grown.
//
//   auto rules = LoadRules(DefaultRulesDirs(), options);   // once, shared
//   Executor executor;                                     // per worker thread
//   Outcome outcome;                                       // reused too
//   executor.Run(**rules, {.action = "add", .devpath = p, .properties = env}, host, {}, &outcome);
#ifndef HOTRING_HOTPLUG_UDEVRULES_EXECUTOR_H_
#define HOTRING_HOTPLUG_UDEVRULES_EXECUTOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "hotplug/udevrules/compiled_rules.h"
#include "hotplug/udevrules/rule_host.h"

namespace hotring::hotplug::udevrules {

// The event as the kernel sent it. Borrowed for the length of Run.
struct EventInput {
  absl::string_view action;   // "add", "change", "remove", "move", "bind", ...
  absl::string_view devpath;  // "/devices/..."
  // Every KEY=VALUE of the uevent in order (ACTION, DEVPATH, SUBSYSTEM, DEVNAME, MAJOR, MINOR,
  // IFINDEX, DRIVER, DEVTYPE, ... as sent). DEVNAME may be relative ("ttyS0").
  absl::Span<const PropertyView> properties;
};

struct ExecuteOptions {
  // How long one PROGRAM or IMPORT{program} may run (udevd: event_timeout, 180 s).
  absl::Duration program_timeout = absl::Seconds(180);
  // Properties every event sees as a last resort in ENV{} matches (`udevadm control
  // --property`).
  absl::Span<const PropertyView> global_properties;
  // Also log what each rule did (udevd's debug lines: "FILE:LINE NAME 'x'", ...).
  bool debug = false;
};

// One entry of the RUN list, substituted when its rule ran (as udevd 252 does). Owns its strings.
struct RunEntry {
  bool builtin = false;
  std::string command;            // as substituted
  std::string builtin_name;       // for builtins: the builtin it names ("kmod", "uaccess")
  std::vector<std::string> argv;  // split as udev splits; argv[0] made absolute (/lib/udev/)
};

// What udevd would do with the device. Owns everything; reused by Run (cleared first).
struct Outcome {
  // The device's properties after the rules, in order (new keys last, replaced ones in place),
  // with DEVLINKS, TAGS and CURRENT_TAGS as udevd derives them. Keys of the event that rules
  // deleted are listed in removed_properties.
  std::vector<std::pair<std::string, std::string>> properties;
  std::vector<std::string> removed_properties;
  // NAME= of a network interface (the name to rename it to), and whether := made it final.
  std::optional<std::string> name;
  bool name_final = false;
  // SYMLINK: the links to make, relative to /dev, normalized ("a//b" is "a/b"), in the order the
  // rules added them; links that would leave /dev are in refused_links (udevd fails them too).
  std::vector<std::string> links;
  std::vector<std::string> refused_links;
  int link_priority = 0;
  bool links_final = false;
  // OWNER, GROUP, MODE as the rules left them (unset: the rules said nothing), each with
  // whether := made it final. udevd's node then gets: uid (else DEVUID of the uevent, else 0),
  // gid (else DEVGID, else 0), mode (else DEVMODE, else 0660 when gid > 0, else 0600).
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<uint32_t> mode;
  bool uid_final = false;
  bool gid_final = false;
  bool mode_final = false;
  // TAGS (every tag, also those of earlier events) and CURRENT_TAGS (this event's).
  std::vector<std::string> tags;
  std::vector<std::string> current_tags;
  std::vector<RunEntry> run;
  bool run_final = false;
  // OPTIONS.
  bool db_persist = false;
  std::optional<bool> watch;  // watch / nowatch; unset: neither said (no watch, as udevd)
  std::optional<int> log_level;  // log_level= (a syslog level); -1: reset
  std::vector<std::pair<std::string, std::string>> seclabels;  // SECLABEL{module}="label"
  // What udevd would have logged: problems at run time (errors and warnings), and with
  // ExecuteOptions::debug each rule's doings. "FILE:LINE what".
  std::vector<std::string> log;
  // Not OK: udevd gives up on the event at this point (e.g. IMPORT{file} of an unreadable file,
  // an invalid TAG name given at run time); the rest of the outcome is what had been done.
  absl::Status status;
  // Counters, for benchmarks and reports.
  uint32_t lines_applied = 0;  // lines whose tokens were looked at
  uint32_t lines_matched = 0;  // lines whose every token matched

  void Clear();
  // A property's final value; nullopt when absent.
  [[nodiscard]] std::optional<absl::string_view> Property(absl::string_view key) const;
};

// udevd's permissions for the node from an outcome and the uevent's DEVUID/DEVGID/DEVMODE.
struct NodePermissions {
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t mode = 0600;
};
[[nodiscard]] NodePermissions PermissionsFor(const Outcome& outcome, absl::Span<const PropertyView> event);

class ExecutorState;

// Runs rules; holds only reusable buffers. Move-only; one per thread.
class Executor {
 public:
  Executor();
  ~Executor();
  Executor(Executor&&) noexcept;
  Executor& operator=(Executor&&) noexcept;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs `rules` for `event`; the result replaces *outcome.
  void Run(const CompiledRules& rules, const EventInput& event, RuleHost& host,
           const ExecuteOptions& options, Outcome* outcome);

 private:
  std::unique_ptr<ExecutorState> state_;
};

// One event with a fresh Executor (tests, tools).
[[nodiscard]] Outcome ExecuteRules(const CompiledRules& rules, const EventInput& event, RuleHost& host,
                                   const ExecuteOptions& options = {});

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_EXECUTOR_H_
