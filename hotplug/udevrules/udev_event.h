// One event through the udev rules, on a worker thread, as systemd-udevd 252's worker handles it
// up to its RUN list: the rules (Executor), then for add/change/... the interface rename (NAME,
// over rtnetlink), the node's owner, group and mode, the device's links with their claims
// (link_claims.h) and /dev/{char,block}/MAJ:MIN, the tag index and the database entry; for
// remove, the rules with the old entry, then the entry, tags and links go. What is left for the
// reactor (RUN, the libudev announcement) comes back in an EventWork. Also the pure pieces:
// which properties the database keeps, the node's permissions, the static nodes.
#ifndef HOTRING_HOTPLUG_UDEVRULES_UDEV_EVENT_H_
#define HOTRING_HOTPLUG_UDEVRULES_UDEV_EVENT_H_

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "hotplug/devroot/dev_root.h"
#include "hotplug/event.h"
#include "hotplug/udev/database.h"
#include "hotplug/udev/stage_report.h"
#include "hotplug/udevrules/builtin_calls.h"
#include "hotplug/udevrules/compiled_rules.h"
#include "hotplug/udevrules/daemon_host.h"
#include "hotplug/udevrules/executor.h"
#include "hotplug/udevrules/watches.h"

namespace hotring::hotplug::udevrules {

// What every event's processing shares. The stage owns it; jobs hold it by shared_ptr.
struct UdevWorld {
  HostContext host;  // its pointers point into this struct's owners below
  udev::DatabaseDir database;
  devroot::DevRoot dev_root;
  std::unique_ptr<io::process::BlockingSpawner> spawner;
  std::unique_ptr<NameLookup> names;
  bool rename_interfaces = true;  // NAME= on net renames (off in tests without a namespace)
  // Events update link claims under a shared lock; CleanUpLinkClaims takes it alone.
  std::unique_ptr<std::shared_mutex> claims_mutex = std::make_unique<std::shared_mutex>();
  // OPTIONS+="watch" (null: no inotify here, no watches). Each event of a device drops its
  // watch first; the stage puts it back after RUN (EventWork::watch).
  std::unique_ptr<Watches> watches;
  // Sysfs's shapes kept across events (host.shapes points here); the stage forgets a device's
  // when an event adds, removes or moves it, and its uevent file when any event of it starts
  // (ForgetShapesOf).
  std::unique_ptr<udev::DeviceShapes> shapes = std::make_unique<udev::DeviceShapes>();
};

// Before `event` runs: what was kept of the device it adds, removes or moves (and of its old
// place) goes; of a device it changes, binds or unbinds, its uevent file.
void ForgetShapesOf(const UdevWorld& world, const Event& event);

// What the reactor does after a worker's part. Owns everything.
struct EventWork {
  // Database, links, failures and warnings, the libudev announcement (as udevcompat's).
  udev::EventReport report;
  bool rules_ok = false;          // the rules ran to the end (RUN only then, as in udevd)
  std::vector<RunEntry> run;      // RUN, in order
  std::vector<std::string> env;   // RUN's environment: the device's properties, "KEY=VALUE"
  std::vector<std::string> debug; // the rules' own debug lines (udev_log=debug)
  // Counters of this stage's own.
  uint64_t lines_matched = 0;
  uint64_t nodes_set = 0;        // node owner/mode applied (or made)
  uint64_t renamed = 0;
  bool claims_touched = false;   // a claim directory under /run/udev/links was used
  // The rules said `watch` (an event that is no remove, with a node, rules run to the end):
  // the node is watched again after RUN, under this device id.
  bool watch = false;
  std::string device_id;
};

// The properties the database keeps (E: lines): those the rules set or changed, not the
// kernel's own, nor DEVLINKS/TAGS/CURRENT_TAGS, nor names starting with '.'.
[[nodiscard]] udev::Properties DatabaseProperties(const Outcome& outcome, const Event& event);

// The owner, group and mode udevd gives the node: the rules', else the uevent's DEVUID, DEVGID,
// DEVMODE; a group > 0 without a mode means 0660. Unset: leave as it is.
struct NodeSettings {
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<uint32_t> mode;
};
[[nodiscard]] NodeSettings NodeSettingsFor(const Outcome& outcome, const Event& event);

// The event's properties as the executor takes them (views into `event`).
[[nodiscard]] std::vector<PropertyView> EventProperties(const Event& event);

// Runs the event through `rules` (builtins: `builtins`; null: none) and applies what the worker
// applies (see the file comment).
[[nodiscard]] EventWork ProcessUdevEvent(const UdevWorld& world, const CompiledRules& rules,
                                         const udev::BuiltinResources* builtins,
                                         const ExecuteOptions& options, Executor& executor,
                                         const Event& event);

// OPTIONS+="static_node=": owner, group and mode of the nodes that exist beneath the dev root,
// and their tags as run/static_node-tags/TAG/NAME links, as udevd does at start. Problems come
// back as lines for the log.
[[nodiscard]] std::vector<std::string> ApplyStaticNodes(const UdevWorld& world, const CompiledRules& rules);

}  // namespace hotring::hotplug::udevrules

#endif  // HOTRING_HOTPLUG_UDEVRULES_UDEV_EVENT_H_
