#include "hotplug/udevrules/udev_event.h"

#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/status.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udev/ifindex.h"
#include "hotplug/udev/monitor.h"
#include "hotplug/udevrules/link_claims.h"
#include "io/rtnetlink.h"

namespace hotring::hotplug::udevrules {
namespace {

uint64_t MonotonicUsec() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

bool Contains(const std::vector<std::string>& v, absl::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool HasDevnum(const Event& event) {
  uint32_t major = 0;
  return absl::SimpleAtoi(event.major, &major) && !event.minor.empty();
}

devroot::DevNumber Number(const Event& event) {
  devroot::DevNumber n;
  (void)absl::SimpleAtoi(event.major, &n.major);
  (void)absl::SimpleAtoi(event.minor, &n.minor);
  return n;
}

// "/dev/{char,block}/MAJ:MIN", relative to /dev.
std::string DevnumLink(const Event& event) {
  return absl::StrCat(event.subsystem == "block" ? "block/" : "char/", event.major, ":", event.minor);
}

// NAME= on an added interface: the rename udevd does before anything else of the device.
// Returns false when the event must stop here (udevd fails it).
bool RenameInterface(const UdevWorld& world, const Event& event, Outcome& outcome, EventWork& work) {
  if (!outcome.name.has_value() || event.action != "add" || event.subsystem != "net") return true;
  const std::optional<int> ifindex = udev::ParseIfindex(event.Get("IFINDEX").value_or(""));
  if (!ifindex.has_value()) return true;
  const size_t slash = event.devpath.rfind('/');
  const absl::string_view sysname = absl::string_view(event.devpath).substr(slash + 1);
  const std::string& name = *outcome.name;
  if (name == sysname) return true;
  if (!io::ValidInterfaceName(name)) {
    work.report.Fail(absl::StrCat("NAME '", name, "' is not an interface name, not renaming"));
    return true;
  }
  if (world.rename_interfaces) {
    const absl::Status renamed = io::RenameInterface(*ifindex, name);
    if (StatusErrno(renamed) == EBUSY) {
      // udevd: the interface is up, someone else took it over; not an error.
      work.report.log.push_back(absl::StrCat("interface ", sysname, " is up, not renamed to ", name));
      return true;
    }
    if (!renamed.ok()) {
      work.report.Fail(absl::StrCat("rename of ", sysname, " to ", name, ": ", renamed.message()));
      return false;
    }
  }
  ++work.renamed;
  udev::SetProperty(outcome.properties, "DEVPATH", absl::StrCat(event.devpath.substr(0, slash + 1), name));
  udev::SetProperty(outcome.properties, "INTERFACE", name);
  return true;
}

// Owner, group and mode of the event's node, as udevd sets them: a node devtmpfs made is
// chmod'ed and chown'ed, one that is missing is made only where the dev root is no devtmpfs.
void ApplyPermissions(const UdevWorld& world, const Event& event, const Outcome& outcome, EventWork& work) {
  const NodeSettings settings = NodeSettingsFor(outcome, event);
  struct stat st;
  const bool exists = devroot::StatBeneath(world.dev_root, event.devname, &st);
  const devroot::DevNumber number = Number(event);
  const bool block = event.subsystem == "block";
  if (exists && (((st.st_mode & S_IFMT) != (block ? S_IFBLK : S_IFCHR)) ||
                 st.st_rdev != makedev(number.major, number.minor))) {
    work.report.log.push_back(absl::StrCat("node ", event.devname, " is not this device's, skipping it"));
    return;
  }
  if (!exists && world.dev_root.devtmpfs()) {
    work.report.log.push_back(absl::StrCat("node ", event.devname, " is missing, skipping it"));
    return;
  }
  devroot::NodeStep step;
  step.kind = devroot::NodeStep::Kind::kCreate;
  step.path = step.name = event.devname;
  step.number = number;
  step.block = block;
  step.owner.uid = settings.uid.value_or(exists ? st.st_uid : 0);
  step.owner.gid = settings.gid.value_or(exists ? st.st_gid : 0);
  step.mode = settings.mode.value_or(exists ? st.st_mode & 07777 : (step.owner.gid > 0 ? 0660 : 0600));
  step.origin = "udev rules";
  if (exists && (st.st_mode & 07777) == step.mode && st.st_uid == step.owner.uid && st.st_gid == step.owner.gid) {
    // This device's node, as the rules want it (a coldplug's `change` of most devices): the
    // stat above said all there is; ApplyNodes would mknod (EEXIST) and stat it again.
    ++work.nodes_set;
    return;
  }
  const devroot::NodeReport report = devroot::ApplyNodes(world.dev_root, absl::MakeConstSpan(&step, 1));
  work.nodes_set += report.chowned;
  for (const std::string& e : report.errors) work.report.Fail(e);
}

void UpdateClaim(const UdevWorld& world, const std::string& id, const Event& event, absl::string_view link,
                 int priority, bool add, EventWork& work) {
  if (IsOwnDiskseqLink(link, event.subsystem, event.Get("DEVTYPE").value_or(""), event.Get("DISKSEQ"))) {
    // No other device has this name: removed whatever it points at, with its empty directories.
    absl::StatusOr<bool> changed = add ? devroot::MakeLinkBeneath(world.dev_root, link, event.devname)
                                       : devroot::RemoveSymlinkBeneath(world.dev_root, link);
    if (!changed.ok()) {
      work.report.LinkFailed(changed.status());
    } else if (*changed && add) {
      ++work.report.links_made;
    } else if (*changed) {
      ++work.report.links_removed;
    }
    return;
  }
  work.claims_touched = true;
  const LinkClaim claim{.link = std::string(link), .device_id = id, .node = event.devname, .priority = priority};
  absl::StatusOr<LinkUpdate> update = UpdateLinkClaim(world.database.fd(), world.dev_root, claim, add);
  if (!update.ok()) {
    work.report.LinkFailed(update.status());
    return;
  }
  if (update->change == LinkChange::kMade) ++work.report.links_made;
  if (update->change == LinkChange::kRemoved) ++work.report.links_removed;
}

// Links: the old entry's that are no longer wanted go first, then permissions, then the new
// ones and /dev/{char,block}/MAJ:MIN (udevd's update_devnode order).
void UpdateNode(const UdevWorld& world, const std::string& id, const Event& event,
                const udev::DatabaseEntry& old, const Outcome& outcome, EventWork& work) {
  for (const std::string& link : old.links) {
    if (!Contains(outcome.links, link)) UpdateClaim(world, id, event, link, 0, /*add=*/false, work);
  }
  ApplyPermissions(world, event, outcome, work);
  for (const std::string& link : outcome.links) {
    UpdateClaim(world, id, event, link, outcome.link_priority, /*add=*/true, work);
  }
  // The executor said so in its log already.
  work.report.links_refused += outcome.refused_links.size();
  absl::StatusOr<bool> made = devroot::MakeLinkBeneath(world.dev_root, DevnumLink(event), event.devname);
  if (!made.ok()) work.report.log.push_back(std::string(made.status().message()));
}

void Announce(const Event& event, const Outcome& outcome, uint64_t usec, EventWork& work) {
  udev::MonitorMessage message;
  message.subsystem = event.subsystem;
  message.devtype = std::string(event.Get("DEVTYPE").value_or(""));
  message.tags = outcome.tags;
  message.properties = outcome.properties;
  if (usec > 0) message.properties.emplace_back("USEC_INITIALIZED", absl::StrCat(usec));
  for (const auto& [k, v] : message.properties) work.env.push_back(absl::StrCat(k, "=", v));
  absl::StatusOr<std::string> datagram = udev::EncodeMonitorMessage(message);
  if (datagram.ok()) {
    work.report.datagram = *std::move(datagram);
  } else {
    work.report.not_announced = std::string(datagram.status().message());
  }
}

// `absent`: reading the old entry found none, so there is none to remove.
void StoreEntry(const UdevWorld& world, const std::string& id, const Event& event,
                const udev::DatabaseEntry& old, bool absent, const Outcome& outcome, uint64_t usec,
                EventWork& work) {
  // The tag index: the tags the device no longer has go, then every tag it has.
  for (const std::string& tag : old.tags) {
    if (Contains(outcome.tags, tag)) continue;
    if (absl::Status s = world.database.RemoveTag(tag, id); !s.ok()) {
      work.report.log.push_back(std::string(s.message()));
    }
  }
  for (const std::string& tag : outcome.tags) work.report.Check(world.database.AddTag(tag, id));
  udev::DatabaseEntry entry;
  const bool devnum = HasDevnum(event);
  if (devnum) {
    entry.links = outcome.links;
    entry.link_priority = outcome.link_priority;
  }
  entry.usec_initialized = usec;
  entry.properties = DatabaseProperties(outcome, event);
  entry.tags = outcome.tags;
  entry.current_tags = outcome.current_tags;
  entry.persist = outcome.db_persist;
  const bool has_info = !entry.links.empty() || entry.link_priority != 0 || !entry.properties.empty() ||
                        !entry.tags.empty() || !entry.current_tags.empty();
  if (!has_info && !devnum && !event.Get("IFINDEX").has_value()) {
    if (!absent) work.report.Check(world.database.Remove(id));
  } else {
    // udevd writes no line at all (not even I:) for a device the rules said nothing about.
    udev::WriteEntry(world.database, id, has_info ? udev::FormatDatabaseEntry(entry) : "", entry.persist,
                     work.report);
  }
}

void RemoveDevice(const UdevWorld& world, const std::string& id, const Event& event,
                  const udev::DatabaseEntry& old, bool had_old, EventWork& work) {
  for (const std::string& tag : old.tags) {
    if (absl::Status s = world.database.RemoveTag(tag, id); !s.ok()) {
      work.report.log.push_back(std::string(s.message()));
    }
  }
  udev::RemoveEntry(world.database, id, had_old, work.report);
  if (!HasDevnum(event) || !devroot::IsSafeRelativePath(event.devname)) return;
  for (const std::string& link : old.links) UpdateClaim(world, id, event, link, 0, /*add=*/false, work);
  (void)devroot::RemoveLinkBeneath(world.dev_root, DevnumLink(event), event.devname);
  if (!world.dev_root.devtmpfs()) {
    // Nobody else removes a node this stage made: only while it is still this device's.
    devroot::NodeStep step;
    step.kind = devroot::NodeStep::Kind::kRemove;
    step.path = step.name = event.devname;
    step.number = Number(event);
    step.block = event.subsystem == "block";
    const devroot::NodeReport report = devroot::ApplyNodes(world.dev_root, absl::MakeConstSpan(&step, 1));
    for (const std::string& e : report.errors) work.report.log.push_back(e);
  }
}

}  // namespace

udev::Properties DatabaseProperties(const Outcome& outcome, const Event& event) {
  udev::Properties out;
  for (const auto& [key, value] : outcome.properties) {
    if (key.empty() || key[0] == '.' || key == "DEVLINKS" || key == "TAGS" || key == "CURRENT_TAGS") continue;
    const std::optional<absl::string_view> kernel = event.Get(key);
    if (kernel.has_value() && (*kernel == value || key == "DEVNAME")) continue;
    out.emplace_back(key, value);
  }
  return out;
}

NodeSettings NodeSettingsFor(const Outcome& outcome, const Event& event) {
  NodeSettings s{outcome.uid, outcome.gid, outcome.mode};
  uint32_t n = 0;
  if (!s.uid.has_value() && absl::SimpleAtoi(event.Get("DEVUID").value_or(""), &n)) s.uid = n;
  if (!s.gid.has_value() && absl::SimpleAtoi(event.Get("DEVGID").value_or(""), &n)) s.gid = n;
  if (!s.mode.has_value() && ParseOctalMode(event.Get("DEVMODE").value_or(""), &n)) s.mode = n;
  if (!s.mode.has_value() && s.gid.has_value() && *s.gid > 0) s.mode = 0660;
  return s;
}

std::vector<PropertyView> EventProperties(const Event& event) {
  std::vector<PropertyView> out;
  out.reserve(event.env.size());
  for (const auto& [k, v] : event.env) out.emplace_back(k, v);
  return out;
}

void ForgetShapesOf(const UdevWorld& world, const Event& event) {
  if (world.shapes == nullptr) return;
  if (event.action != "add" && event.action != "remove" && event.action != "move") {
    // A change, bind or unbind: the device is where it was, its uevent file may say otherwise.
    world.shapes->ForgetUevent(event.devpath);
    return;
  }
  world.shapes->Forget(event.devpath);
  if (const std::optional<absl::string_view> old = event.Get("DEVPATH_OLD"); old.has_value() && !old->empty()) {
    world.shapes->Forget(*old);
  }
}

EventWork ProcessUdevEvent(const UdevWorld& world, const CompiledRules& rules,
                           const udev::BuiltinResources* builtins, const ExecuteOptions& options,
                           Executor& executor, const Event& event) {
  EventWork work;
  const bool remove = event.action == "remove";
  absl::StatusOr<std::string> id = udev::DeviceId(event);
  udev::DatabaseEntry old;
  bool had_old = false;
  bool old_absent = false;
  if (id.ok()) {
    if (absl::StatusOr<std::string> text = world.database.Read(*id); text.ok()) {
      old = udev::ParseDatabaseEntry(*text);
      had_old = true;
    } else {
      old_absent = absl::IsNotFound(text.status());
    }
    // udevd drops the watch while the event runs (a remove's for good).
    if (world.watches != nullptr && !event.devname.empty()) world.watches->End(*id);
  } else {
    work.report.Fail(absl::StrCat("no database entry: ", id.status().message()));
  }
  // Every event starts from the uevent, `move` too (the executor adds the old entry's tags).
  const std::vector<PropertyView> props = EventProperties(event);
  DaemonHost host(world.host, builtins);
  host.SetEventDevice(event.devpath, had_old ? &old : nullptr);
  Outcome outcome;
  executor.Run(rules, EventInput{.action = event.action, .devpath = event.devpath, .properties = props}, host,
               options, &outcome);
  work.lines_matched = outcome.lines_matched;
  for (std::string& line : outcome.log) (options.debug ? work.debug : work.report.log).push_back(std::move(line));
  for (std::string& line : host.log()) work.report.log.push_back(std::move(line));
  const uint64_t usec = had_old && old.usec_initialized > 0 ? old.usec_initialized : MonotonicUsec();
  work.rules_ok = outcome.status.ok();
  if (!work.rules_ok) {
    work.report.Fail(absl::StrCat("rules: ", outcome.status.message()));
  } else if (id.ok() && remove) {
    std::shared_lock<std::shared_mutex> claims(*world.claims_mutex);
    RemoveDevice(world, *id, event, old, had_old, work);
  } else if (id.ok()) {
    work.rules_ok = RenameInterface(world, event, outcome, work);
    if (work.rules_ok && HasDevnum(event) && devroot::IsSafeRelativePath(event.devname)) {
      std::shared_lock<std::shared_mutex> claims(*world.claims_mutex);
      UpdateNode(world, *id, event, old, outcome, work);
    }
    if (work.rules_ok) StoreEntry(world, *id, event, old, old_absent, outcome, usec, work);
  }
  if (work.rules_ok && id.ok() && !remove && outcome.watch.value_or(false) && !event.devname.empty()) {
    work.watch = true;
    work.device_id = *id;
  }
  for (const RunEntry& r : outcome.run) work.run.push_back(r);
  Announce(event, outcome, remove ? old.usec_initialized : usec, work);
  return work;
}

std::vector<std::string> ApplyStaticNodes(const UdevWorld& world, const CompiledRules& rules) {
  std::vector<std::string> log;
  for (const StaticNode& node : rules.static_nodes()) {
    struct stat st;
    if (!devroot::IsSafeRelativePath(node.node) || !devroot::StatBeneath(world.dev_root, node.node, &st) ||
        !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
      continue;  // udevd skips nodes that are not there
    }
    std::optional<uint32_t> mode = node.mode;
    if (!mode.has_value() && node.gid.has_value() && *node.gid > 0) mode = 0660;
    if (node.uid.has_value() || node.gid.has_value() || mode.has_value()) {
      devroot::NodeStep step;
      step.path = step.name = node.node;
      step.number = devroot::DevNumber{major(st.st_rdev), minor(st.st_rdev)};
      step.block = S_ISBLK(st.st_mode);
      step.owner.uid = node.uid.value_or(st.st_uid);
      step.owner.gid = node.gid.value_or(st.st_gid);
      step.mode = mode.value_or(st.st_mode & 07777);
      step.origin = node.where;
      const devroot::NodeReport report = devroot::ApplyNodes(world.dev_root, absl::MakeConstSpan(&step, 1));
      for (const std::string& e : report.errors) log.push_back(absl::StrCat(node.where, ": ", e));
    }
    for (const std::string& tag : node.tags) {
      // run/static_node-tags/TAG/NAME -> /dev/NAME, for logind's uaccess of nodes with no device.
      const std::string escaped = EscapeLinkName(node.node);
      if (!udev::ValidTagName(tag) || escaped.empty()) continue;
      const std::string dir = absl::StrCat("static_node-tags/", tag);
      (void)::mkdirat(world.database.fd(), "static_node-tags", 0755);
      (void)::mkdirat(world.database.fd(), dir.c_str(), 0755);
      const std::string link = absl::StrCat(dir, "/", escaped);
      const std::string target = absl::StrCat("/dev/", node.node);
      if (::symlinkat(target.c_str(), world.database.fd(), link.c_str()) != 0 && errno != EEXIST) {
        log.push_back(absl::StrCat(node.where, ": ", ErrnoStatus(absl::StrCat("symlink(", link, ")")).message()));
      }
    }
  }
  return log;
}

}  // namespace hotring::hotplug::udevrules
