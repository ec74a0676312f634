#include "hotplug/udevcompat/udevcompat_handler.h"

#include <fcntl.h>
#include <algorithm>
#include <time.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/devroot/dev_root.h"
#include "hotplug/udev/block_probe.h"
#include "hotplug/udev/database.h"
#include "hotplug/udevcompat/links.h"
#include "hotplug/udev/monitor.h"
#include "hotplug/udevcompat/seat.h"

namespace hotring::hotplug::udevcompat {
namespace {

bool HasAncestorIn(const udev::SysfsView& view, absl::string_view devpath, absl::string_view subsystem) {
  std::optional<std::string> d(devpath);
  while (d.has_value()) {
    if (udev::SubsystemOf(view, *d) == subsystem) return true;
    d = udev::ParentOf(view, *d);
  }
  return false;
}

void Merge(udev::Properties& into, const udev::Properties& from) {
  for (const auto& [k, v] : from) udev::SetProperty(into, k, v);
}

void ProbeBlock(const udev::SysfsView& view, const Event& event, const std::string& dev_root,
                udev::Properties& props, std::string* probe_error) {
  const std::string kernel = event.devpath.substr(event.devpath.rfind('/') + 1);
  if (absl::StartsWith(kernel, "sr") || (absl::StartsWith(kernel, "mmcblk") && absl::StrContains(kernel, "boot"))) {
    return;  // udev does not run blkid on optical drives or eMMC boot partitions
  }
  if (event.devname.empty() || !devroot::IsSafeRelativePath(event.devname)) return;
  (void)udev::ProbeBlockDevice(view, event.devpath, event.Get("DEVTYPE").value_or(""), event.devname,
                               event.Get("PARTN").value_or(""), dev_root, props, probe_error);
}

uint64_t MonotonicUsec() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

}  // namespace

udev::Properties ComputeProperties(const udev::SysfsView& view, const Event& event, const std::string& dev_root,
                             const udev::Properties& parent_disk, std::string* probe_error) {
  udev::Properties props;
  const std::string kernel = event.devpath.substr(event.devpath.rfind('/') + 1);
  if (event.subsystem == "input") {
    props = udev::InputId(view, event.devpath);
    // 60-persistent-input.rules: the bus, then usb_id and path_id.
    std::string bustype;
    for (std::optional<std::string> d(event.devpath); d.has_value(); d = udev::ParentOf(view, *d)) {
      if (std::optional<std::string> b = view.Attribute(*d, "id/bustype"); b.has_value()) {
        bustype = *b;
        break;
      }
    }
    if (HasAncestorIn(view, event.devpath, "bluetooth") || bustype == "0005") {
      udev::SetProperty(props, "ID_BUS", "bluetooth");
      return props;
    }
    if (HasAncestorIn(view, event.devpath, "rmi4")) udev::SetProperty(props, "ID_BUS", "rmi");
    if (HasAncestorIn(view, event.devpath, "serio")) udev::SetProperty(props, "ID_BUS", "i8042");
    if (udev::PropertyValue(props, "ID_BUS").empty()) Merge(props, udev::UsbId(view, event.devpath));
    const std::string cls = InputClass(props, ReadLinkFacts(view, event.devpath));
    if (!cls.empty() && udev::PropertyValue(props, "ID_SERIAL").empty()) udev::SetProperty(props, "ID_SERIAL", "noserial");
    for (absl::string_view s : {"pci", "usb", "platform", "acpi"}) {
      if (HasAncestorIn(view, event.devpath, s)) {
        Merge(props, udev::PathId(view, event.devpath));
        break;
      }
    }
  } else if (event.subsystem == "block" && StorageKernelName(kernel)) {
    const std::string devtype(event.Get("DEVTYPE").value_or(""));
    if (devtype == "partition") {
      // IMPORT{parent}="ID_*": the disk's identity first, the partition's own on top.
      for (const auto& [k, v] : parent_disk) {
        if (absl::StartsWith(k, "ID_")) udev::SetProperty(props, k, v);
      }
    }
    if (devtype == "disk" && (absl::StartsWith(kernel, "sd") || absl::StartsWith(kernel, "sr")) &&
        udev::PropertyValue(props, "ID_SERIAL").empty() && HasAncestorIn(view, event.devpath, "usb")) {
      Merge(props, udev::UsbId(view, event.devpath));
    }
    // KERNEL=="vd*[!0-9]", ATTRS{serial}=="?*", ENV{ID_SERIAL}="$attr{serial}"
    if (absl::StartsWith(kernel, "vd") && devtype == "disk") {
      if (std::optional<std::string> serial = view.Attribute(event.devpath, "serial");
          serial.has_value() && !serial->empty()) {
        udev::SetProperty(props, "ID_SERIAL", *serial);
      }
    }
    if (!absl::StrContains(event.devpath, "/virtual/") && udev::PropertyValue(props, "ID_PATH").empty()) {
      Merge(props, udev::PathId(view, event.devpath));
    }
    ProbeBlock(view, event, dev_root, props, probe_error);
  } else if (event.subsystem == "usb" && event.Get("DEVTYPE") == "usb_device") {
    props = udev::UsbId(view, event.devpath);
  }
  // 75-net-description.rules: a USB interface's usb_id, else a PCI parent's ids;
  // 80-net-setup-link.rules: path_id. (net_id's ID_NET_NAME_* and the renaming are not done.)
  if (event.subsystem == "net") {
    if (HasAncestorIn(view, event.devpath, "usb")) {
      Merge(props, udev::UsbId(view, event.devpath));
    } else {
      for (std::optional<std::string> d = udev::ParentOf(view, event.devpath); d.has_value();
           d = udev::ParentOf(view, *d)) {
        if (udev::SubsystemOf(view, *d) != "pci") continue;
        udev::SetProperty(props, "ID_BUS", "pci");
        udev::SetProperty(props, "ID_VENDOR_ID", view.Attribute(*d, "vendor").value_or(""));
        udev::SetProperty(props, "ID_MODEL_ID", view.Attribute(*d, "device").value_or(""));
        break;
      }
    }
  }
  // 50-udev-default.rules: SUBSYSTEM=="pci|usb|platform", IMPORT{builtin}="path_id" (what
  // consumers such as libinput's device groups read from a parent); 80-net-setup-link.rules for
  // net. (71-seat.rules' path_id for the devices it tags is ApplySeatRules'.)
  if (event.subsystem == "pci" || event.subsystem == "usb" || event.subsystem == "platform" ||
      event.subsystem == "net") {
    Merge(props, udev::PathId(view, event.devpath));
  }
  return props;
}

struct UdevCompatHandler::Shared {
  Options options;
  udev::DatabaseDir db;
  devroot::DevRoot dev_root;
  std::optional<std::string> nomodeset;  // from the kernel command line, read once
};

namespace {

// The database entry of the device at `devpath` as its last event left it, or nullopt.
std::optional<udev::DatabaseEntry> EntryOf(const udev::SysfsView& view, const udev::DatabaseDir& db,
                                     absl::string_view devpath) {
  Event e;
  e.subsystem = udev::SubsystemOf(view, devpath);
  e.devpath = std::string(devpath);
  e.major = udev::UeventValue(view, devpath, "MAJOR").value_or("");
  e.minor = udev::UeventValue(view, devpath, "MINOR").value_or("");
  if (std::optional<std::string> ifindex = udev::UeventValue(view, devpath, "IFINDEX");
      ifindex.has_value()) {
    e.env.emplace_back("IFINDEX", *ifindex);
  }
  absl::StatusOr<std::string> id = udev::DeviceId(e);
  if (!id.ok()) return std::nullopt;
  absl::StatusOr<std::string> text = db.Read(*id);
  if (!text.ok()) return std::nullopt;
  return udev::ParseDatabaseEntry(*text);
}

// ":a:b:", as sd-device joins a tag set for TAGS= and CURRENT_TAGS=.
std::string JoinTags(const std::vector<std::string>& tags) {
  return tags.empty() ? "" : absl::StrCat(":", absl::StrJoin(tags, ":"), ":");
}

using Outcome = UdevCompatHandler::Outcome;

// The entry an add or change leaves: the properties udev's rules and builtins would give the
// device, its tags and its persistent links (as wanted: UpdateLinks keeps those made).
udev::DatabaseEntry NewEntry(const udev::SysfsView& view, const udev::DatabaseDir& db,
                       const devroot::DevRoot& dev_root,
                       const std::optional<std::string>& nomodeset, const Event& event,
                       const udev::DatabaseEntry& old, bool had_old, Outcome& out) {
  udev::DatabaseEntry entry;
  // The parent's entry: a partition imports its disk's ID_*, and every device its ID_SEAT.
  const std::optional<std::string> parent = udev::ParentOf(view, event.devpath);
  const std::optional<udev::DatabaseEntry> parent_entry =
      parent.has_value() ? EntryOf(view, db, *parent) : std::nullopt;
  udev::Properties parent_disk;
  if (event.subsystem == "block" && event.Get("DEVTYPE") == "partition" &&
      parent_entry.has_value()) {
    parent_disk = parent_entry->properties;
  }
  std::string probe_error;
  entry.properties = ComputeProperties(view, event, dev_root.path(), parent_disk, &probe_error);
  SeatContext seat{.nomodeset = nomodeset};
  if (parent_entry.has_value()) {
    seat.parent_id_seat = std::string(udev::PropertyValue(parent_entry->properties, "ID_SEAT"));
  }
  entry.current_tags = ApplySeatRules(view, event, seat, entry.properties);
  // Tags stay with the device until it is removed (sd-device copies the old entry's tags);
  // the current ones are this event's.
  entry.tags = old.tags;
  for (const std::string& tag : entry.current_tags) {
    if (std::find(entry.tags.begin(), entry.tags.end(), tag) == entry.tags.end())
      entry.tags.push_back(tag);
  }
  std::sort(entry.tags.begin(), entry.tags.end());
  std::sort(entry.current_tags.begin(), entry.current_tags.end());
  if (!probe_error.empty()) {
    ++out.probe_errors;
    out.report.log.push_back(absl::StrCat("probe: ", probe_error));
  }
  std::vector<std::string> refused;
  entry.links = PersistentLinks(event, entry.properties, ReadLinkFacts(view, event.devpath), &refused);
  for (const std::string& r : refused) {
    ++out.report.links_refused;
    out.report.log.push_back(absl::StrCat("link refused: ", r));
  }
  entry.usec_initialized = had_old && old.usec_initialized > 0 ? old.usec_initialized : MonotonicUsec();
  return entry;
}

// Links: the ones this device no longer has (all of them on remove), then the new ones.
// `entry.links` ends as the links that exist, which the database lists.
void UpdateLinks(const devroot::DevRoot& dev_root, const Event& event, bool remove,
                 const udev::DatabaseEntry& old, udev::DatabaseEntry& entry, udev::EventReport& report) {
  const bool node_ok = devroot::IsSafeRelativePath(event.devname);
  for (const std::string& link : old.links) {
    if (!remove && std::find(entry.links.begin(), entry.links.end(), link) != entry.links.end()) continue;
    if (!node_ok) break;
    absl::StatusOr<bool> removed = devroot::RemoveLinkBeneath(dev_root, link, event.devname);
    if (report.Check(removed.status()) && *removed) ++report.links_removed;
  }
  if (!remove && node_ok) {
    std::vector<std::string> made;
    for (const std::string& link : entry.links) {
      absl::StatusOr<bool> ok = devroot::MakeLinkBeneath(dev_root, link, event.devname);
      if (!ok.ok()) {
        report.LinkFailed(ok.status());
        continue;
      }
      if (*ok) ++report.links_made;
      made.push_back(link);
    }
    entry.links = std::move(made);  // the database lists the links that exist
  } else if (!remove) {
    entry.links.clear();
  }
}

// The database, before the announcement: a monitor client may look the device up at once.
void StoreEntry(const udev::DatabaseDir& db, const std::string& id, const Event& event, bool remove,
                bool had_old, const udev::DatabaseEntry& entry, udev::EventReport& report) {
  const bool has_devnum = !event.major.empty() && event.major != "0";
  const bool has_ifindex = event.Get("IFINDEX").has_value();
  // The tag index first (libudev's enumerate-by-tag lists it, then reads the entry): every tag
  // the device has, or, on remove, had.
  for (const std::string& tag : entry.tags) {
    report.Check(remove ? db.RemoveTag(tag, id) : db.AddTag(tag, id));
  }
  if (remove || (entry.properties.empty() && entry.links.empty() && entry.tags.empty() &&
                 !has_devnum && !has_ifindex)) {
    udev::RemoveEntry(db, id, had_old, report);
  } else {
    udev::WriteEntry(db, id, udev::FormatDatabaseEntry(entry), /*persist=*/false, report);
  }
}

// The announcement: the kernel's variables in their order, then what udev adds.
udev::MonitorMessage Announcement(const Event& event, const udev::DatabaseEntry& entry) {
  udev::MonitorMessage message;
  message.subsystem = event.subsystem;
  message.devtype = std::string(event.Get("DEVTYPE").value_or(""));
  message.tags = entry.tags;
  message.properties = event.env;
  for (const auto& [k, v] : entry.properties) {
    bool replaced = false;
    for (auto& [mk, mv] : message.properties) {
      if (mk == k) {
        mv = v;
        replaced = true;
      }
    }
    if (!replaced) message.properties.emplace_back(k, v);
  }
  if (!entry.links.empty()) {
    std::vector<std::string> full;
    for (const std::string& link : entry.links) full.push_back(absl::StrCat("/dev/", link));
    message.properties.emplace_back("DEVLINKS", absl::StrJoin(full, " "));
  }
  if (entry.usec_initialized > 0) {
    message.properties.emplace_back("USEC_INITIALIZED", absl::StrCat(entry.usec_initialized));
  }
  // The tags: as properties for sd-device's parser, and in the header's bloom filter for the
  // in-kernel filter of udev_monitor_filter_add_match_tag users. A remove carries the tags the
  // device had.
  if (!entry.tags.empty()) message.properties.emplace_back("TAGS", JoinTags(entry.tags));
  if (!entry.current_tags.empty())
    message.properties.emplace_back("CURRENT_TAGS", JoinTags(entry.current_tags));
  return message;
}

// Everything but the send, on a pool thread.
Outcome Process(const UdevCompatHandler::Options& options, const udev::DatabaseDir& db,
                const devroot::DevRoot& dev_root, const std::optional<std::string>& nomodeset,
                const Event& event) {
  Outcome out;
  absl::StatusOr<std::string> id = udev::DeviceId(event);
  if (!id.ok()) {
    out.report.Fail(absl::StrCat("no database entry: ", id.status().message()));
    out.report.not_announced = "no device id";
    return out;
  }
  const udev::DirSysfsView view(options.sysfs_root);
  udev::DatabaseEntry old;
  bool had_old = false;
  if (absl::StatusOr<std::string> text = db.Read(*id); text.ok()) {
    old = udev::ParseDatabaseEntry(*text);
    had_old = true;
  }
  const bool remove = event.action == "remove";
  udev::DatabaseEntry entry =
      remove ? old : NewEntry(view, db, dev_root, nomodeset, event, old, had_old, out);
  UpdateLinks(dev_root, event, remove, old, entry, out.report);
  StoreEntry(db, *id, event, remove, had_old, entry, out.report);
  if (!options.monitor) return out;
  absl::StatusOr<std::string> datagram = udev::EncodeMonitorMessage(Announcement(event, entry));
  if (!datagram.ok()) {
    out.report.not_announced = std::string(datagram.status().message());
  } else {
    out.report.datagram = std::move(*datagram);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<UdevCompatHandler>> UdevCompatHandler::Create(Options options) {
  HOTRING_ASSIGN_OR_RETURN(udev::DatabaseDir db, udev::DatabaseDir::Open(options.run_dir));
  HOTRING_ASSIGN_OR_RETURN(devroot::DevRoot dev_root, devroot::DevRoot::Open(options.dev_root));
  HOTRING_ASSIGN_OR_RETURN(udev::StageReporter reporter, udev::StageReporter::Open("udevcompat", options.monitor));
  // nomodeset (71-seat.rules' IMPORT{cmdline}) cannot change while the kernel runs.
  std::optional<std::string> nomodeset;
  if (!options.kernel_cmdline.empty()) {
    UniqueFd f(::open(options.kernel_cmdline.c_str(), O_RDONLY | O_CLOEXEC));
    char buf[4096];
    const ssize_t n = f.valid() ? ::read(f.get(), buf, sizeof(buf)) : -1;
    if (n > 0)
      nomodeset = KernelCmdlineValue(absl::string_view(buf, static_cast<size_t>(n)), "nomodeset");
  }
  auto shared = std::make_shared<Shared>(
      Shared{options, std::move(db), std::move(dev_root), std::move(nomodeset)});
  return std::unique_ptr<UdevCompatHandler>(
      new UdevCompatHandler(std::move(options), std::move(shared), std::move(reporter)));
}

UdevCompatHandler::UdevCompatHandler(Options options, std::shared_ptr<Shared> shared,
                                     udev::StageReporter reporter)
    : options_(std::move(options)),
      shared_(std::move(shared)),
      reporter_(std::move(reporter)),
      pool_(std::make_unique<io::BlockingPool>(io::BlockingPool::Options{
          .max_threads = std::max<size_t>(options_.threads, 1), .name = "hotring-udev"})) {}

UdevCompatHandler::~UdevCompatHandler() { pool_->Shutdown(); }

Task<HandlerResult> UdevCompatHandler::Handle(io::Reactor& reactor, const Event& event) {
  reporter_.Received();
  // The job owns copies: it may outlive this task when the task is dropped.
  auto job = [shared = shared_, event_copy = event]() -> absl::StatusOr<Outcome> {
    return Process(shared->options, shared->db, shared->dev_root, shared->nomodeset, event_copy);
  };
  Task<absl::StatusOr<Outcome>> run = pool_->Run(reactor, std::move(job));
  absl::StatusOr<Outcome> outcome = co_await std::move(run);
  if (!outcome.ok()) {
    reporter_.JobFailed(event, outcome.status());
    co_return HandlerResult{.outcome = HandlerOutcome::kHandled};
  }
  probe_errors_ += outcome->probe_errors;
  reporter_.Took(event, outcome->report);
  reporter_.Announce(event, outcome->report);
  co_return HandlerResult{.outcome = HandlerOutcome::kHandled};
}

void UdevCompatHandler::AppendCounters(std::vector<std::pair<std::string, uint64_t>>& out) const {
  const udev::StageCounters& c = reporter_.counters();
  reporter_.AppendCounters({{"events", c.events},
                            {"db_written", c.db_written},
                            {"db_removed", c.db_removed},
                            {"links_made", c.links_made},
                            {"links_removed", c.links_removed},
                            {"links_refused", c.links_refused},
                            {"probe_errors", probe_errors_},
                            {"monitor_sent", c.monitor_sent},
                            {"monitor_skipped", c.monitor_skipped},
                            {"errors", c.errors}},
                           out);
}

}  // namespace hotring::hotplug::udevcompat
