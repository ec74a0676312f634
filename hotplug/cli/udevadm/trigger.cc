// `udevadm trigger`: 252's enumeration (enumerator.h), one write of "ACTION" or "ACTION UUID"
// into each uevent file, and --settle: wait until every triggered device's event (known by
// the SYNTH_UUID the kernel gives it) was handled, by hotring's daemon (settle --for) or by
// systemd-udevd (its libudev messages on netlink group 2).
#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "hotplug/cli/udevadm/deadline.h"
#include "hotplug/cli/udevadm/control_protocol.h"
#include "hotplug/cli/udevadm/enumerator.h"
#include "hotplug/cli/udevadm/verbs.h"
#include "hotplug/client/client.h"
#include "hotplug/udev/monitor.h"
#include "io/netlink.h"

namespace hotring::hotplug::udevadm {
namespace {

constexpr char kTriggerHelp[] =
    "udevadm trigger [OPTIONS] DEVPATH\n"
    "\n"
    "Request events from the kernel.\n"
    "\n"
    "  -h --help                         Show this help\n"
    "  -V --version                      Show package version\n"
    "  -v --verbose                      Print the list of devices while running\n"
    "  -n --dry-run                      Do not actually trigger the events\n"
    "  -q --quiet                        Suppress error logging in triggering events\n"
    "  -t --type=                        Type of events to trigger\n"
    "          devices                     sysfs devices (default)\n"
    "          subsystems                  sysfs subsystems and drivers\n"
    "  -c --action=ACTION|help           Event action value, default is \"change\"\n"
    "  -s --subsystem-match=SUBSYSTEM    Trigger devices from a matching subsystem\n"
    "  -S --subsystem-nomatch=SUBSYSTEM  Exclude devices from a matching subsystem\n"
    "  -a --attr-match=FILE[=VALUE]      Trigger devices with a matching attribute\n"
    "  -A --attr-nomatch=FILE[=VALUE]    Exclude devices with a matching attribute\n"
    "  -p --property-match=KEY=VALUE     Trigger devices with a matching property\n"
    "  -g --tag-match=TAG                Trigger devices with a matching tag\n"
    "  -y --sysname-match=NAME           Trigger devices with this /sys path\n"
    "     --name-match=NAME              Trigger devices with this /dev name\n"
    "  -b --parent-match=NAME            Trigger devices with that parent device\n"
    "     --initialized-match            Trigger devices that are already initialized\n"
    "     --initialized-nomatch          Trigger devices that are not initialized yet\n"
    "  -w --settle                       Wait for the triggered events to complete\n"
    "     --wait-daemon[=SECONDS]        Wait for udevd daemon to be initialized\n"
    "                                    before triggering uevents\n"
    "     --uuid                         Print synthetic uevent UUID\n"
    "     --prioritized-subsystem=SUBSYSTEM[,SUBSYSTEM\xe2\x80\xa6]\n"
    "                                    Trigger devices from a matching subsystem first\n";

// A random version 4 UUID, as sd_id128_randomize makes it, in the 8-4-4-4-12 form.
std::string NewUuid() {
  unsigned char b[16] = {};
  ssize_t got = getrandom(b, sizeof b, 0);
  if (got != static_cast<ssize_t>(sizeof b)) {
    // No entropy source: a clock-based value still tells our events from others'.
    const uint64_t t = static_cast<uint64_t>(MonoNow().time_since_epoch().count());
    for (int i = 0; i < 16; ++i) b[i] = static_cast<unsigned char>((t >> ((i % 8) * 8)) ^ (i * 37) ^ getpid());
  }
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  return absl::StrFormat("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                         b[12], b[13], b[14], b[15]);
}

// Writes `text` into the uevent file without buffering, as sd_device_set_sysattr_value does.
int WriteUevent(const Roots& roots, const std::string& syspath, const std::string& text) {
  const int fd = open(roots.Map(syspath + "/uevent").c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
  if (fd < 0) return -errno;
  const std::string line = text + "\n";
  const ssize_t n = write(fd, line.data(), line.size());
  const int err = n < 0 ? errno : 0;
  close(fd);
  if (n < 0) return -err;
  return 0;
}

bool HotringDaemonListens() {
  struct stat st;
  return stat(std::string(kDefaultSocket).c_str(), &st) == 0;
}

// Waits for hotring's daemon to have handled an event with each SYNTH_UUID, a batch of
// conditions per request (a request is one datagram).
int SettleWithHotring(const std::vector<std::string>& uuids) {
  constexpr size_t kBatch = 64;
  for (size_t i = 0; i < uuids.size(); i += kBatch) {
    std::vector<std::string> conditions;
    for (size_t j = i; j < std::min(uuids.size(), i + kBatch); ++j) {
      conditions.push_back(absl::StrCat("SYNTH_UUID=", uuids[j]));
    }
    absl::Status s = SettleFor(kDefaultSocket, conditions, absl::Hours(24));
    if (absl::IsUnavailable(s)) return 0;  // no daemon: nothing will handle them
    if (!s.ok()) return Fail("trigger", absl::StrCat("Failed to wait for the triggered events: ", s.message()));
  }
  return 0;
}

// Reads libudev messages from `fd` until each UUID was seen.
int SettleWithUdevd(int fd, std::set<std::string> pending) {
  std::string buf(udev::kMaxMonitorMessage, '\0');
  while (!pending.empty()) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, -1) < 0) {
      if (errno == EINTR) continue;
      return Fail("trigger", absl::StrCat("poll: ", strerror(errno)));
    }
    const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) continue;
    absl::StatusOr<std::vector<std::pair<std::string, std::string>>> props =
        udev::DecodeMonitorMessage(absl::string_view(buf.data(), static_cast<size_t>(n)));
    if (!props.ok()) continue;
    for (const auto& [k, v] : *props) {
      if (k == "SYNTH_UUID") pending.erase(v);
    }
  }
  return 0;
}

bool DaemonAnswers() {
  if (HotringDaemonListens()) {
    ControlRequest request;
    request.command = ControlCommand::kStatus;
    if (Ask(kDefaultSocket, std::move(request), absl::Milliseconds(200)).ok()) return true;
  }
  return PingUdevControl(Roots::FromEnvironment().Map("/run/udev/control"), absl::Milliseconds(200)).ok();
}

// --type.
absl::Status ParseType(absl::string_view v, EnumeratorFilter* filter) {
  if (v == "devices") {
    filter->type = EnumeratorFilter::Type::kDevices;
  } else if (v == "subsystems") {
    filter->type = EnumeratorFilter::Type::kSubsystems;
  } else if (v == "all") {
    filter->type = EnumeratorFilter::Type::kAll;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("Unknown type --type=", v));
  }
  return absl::OkStatus();
}

// --attr-match/--attr-nomatch: FILE (it exists) or FILE=VALUE, appended to `dest`.
auto AttrMatch(std::vector<std::pair<std::string, std::optional<std::string>>>* dest) {
  return [dest](absl::string_view v) {
    const size_t eq = v.find('=');
    if (eq == absl::string_view::npos) {
      dest->emplace_back(std::string(v), std::nullopt);
    } else {
      dest->emplace_back(std::string(v.substr(0, eq)), std::string(v.substr(eq + 1)));
    }
    return absl::OkStatus();
  };
}

// What trigger does with each device it found.
struct TriggerWrite {
  const std::string& action;
  bool verbose, dry_run, quiet, uuid, settle;
};

// Writes the action (and a fresh UUID when asked for or settling) into each device's uevent
// file, as 252 does: 1 after a failure other than a vanished device, -1 on a read-only sysfs
// (252 stops there).
int WriteEvents(const Roots& roots, const std::vector<std::unique_ptr<UdevDevice>>& devices,
                const TriggerWrite& w, std::vector<std::string>* uuids) {
  int ret = 0;
  for (const std::unique_ptr<UdevDevice>& d : devices) {
    if (w.verbose) std::printf("%s\n", d->syspath().c_str());
    if (w.dry_run) continue;
    std::string id;
    if (w.uuid || w.settle) id = NewUuid();
    const int r = WriteUevent(roots, d->syspath(), id.empty() ? w.action : absl::StrCat(w.action, " ", id));
    if (r < 0) {
      const bool ignore = r == -ENOENT || r == -ENODEV;
      if (!w.quiet && !ignore) {
        std::fprintf(stderr, "%s: Failed to write '%s' to '%s/uevent': %s\n", d->Sysname().c_str(),
                     w.action.c_str(), d->syspath().c_str(), strerror(-r));
      }
      if (r == -EROFS) return -1;
      if (ret == 0 && !ignore) ret = 1;
      continue;
    }
    if (w.uuid) std::printf("%s\n", id.c_str());
    if (w.settle) uuids->push_back(id);
  }
  return ret;
}

}  // namespace

int TriggerVerb(const std::vector<std::string>& args) {
  EnumeratorFilter filter;
  bool help = false, verbose = false, dry_run = false, quiet = false, settle = false, uuid = false;
  std::string action = "change";
  bool action_help = false;
  std::optional<absl::Duration> wait_daemon;
  std::vector<std::string> positionals, names, parents;
  FlagSet flags("trigger", "");
  flags.Bool("--help|-h", &help, "")
      .Switch("--version|-V", "", [] { return absl::CancelledError("version"); })
      .Bool("--verbose|-v", &verbose, "")
      .Bool("--dry-run|-n", &dry_run, "")
      .Bool("--quiet|-q", &quiet, "")
      .Value("--type|-t", "TYPE", "", [&](absl::string_view v) { return ParseType(v, &filter); })
      .Value("--action|-c", "ACTION", "",
             [&](absl::string_view v) { return ParseAction(v, "Unknown action", &action, &action_help); })
      .Strings("--subsystem-match|-s", "SUBSYSTEM", &filter.subsystem_match, "")
      .Strings("--subsystem-nomatch|-S", "SUBSYSTEM", &filter.subsystem_nomatch, "")
      .Value("--attr-match|-a", "FILE[=VALUE]", "", AttrMatch(&filter.attr_match))
      .Value("--attr-nomatch|-A", "FILE[=VALUE]", "", AttrMatch(&filter.attr_nomatch))
      .Value("--property-match|-p", "KEY=VALUE", "",
             [&](absl::string_view v) {
               const size_t eq = v.find('=');
               if (eq == absl::string_view::npos) {
                 return absl::InvalidArgumentError(absl::StrCat("expect <KEY>=<value> instead of '", v, "'"));
               }
               filter.property_match.emplace_back(std::string(v.substr(0, eq)), std::string(v.substr(eq + 1)));
               return absl::OkStatus();
             })
      .Strings("--tag-match|-g", "TAG", &filter.tag_match, "")
      .Strings("--sysname-match|-y", "NAME", &filter.sysname_match, "")
      .Strings("--name-match", "NAME", &names, "")
      .Strings("--parent-match|-b", "NAME", &parents, "")
      .Store("--initialized-match", &filter.initialized, EnumeratorFilter::Initialized::kYes, "")
      .Store("--initialized-nomatch", &filter.initialized, EnumeratorFilter::Initialized::kNo, "")
      .Bool("--settle|-w", &settle, "")
      .OptionalValue("--wait-daemon", "SECONDS", "",
                     [&](std::optional<absl::string_view> v) {
                       absl::Duration d = absl::Seconds(5);
                       if (v) {
                         absl::StatusOr<absl::Duration> s = FlagSet::ParseSeconds(*v);
                         if (!s.ok()) return s.status();
                         d = *s;
                       }
                       wait_daemon = d;
                       return absl::OkStatus();
                     })
      .Bool("--uuid", &uuid, "")
      .Value("--prioritized-subsystem", "SUBSYSTEM[,SUBSYSTEM...]", "",
             [&](absl::string_view v) {
               for (absl::string_view s : absl::StrSplit(v, ',', absl::SkipEmpty())) {
                 filter.prioritized_subsystems.emplace_back(s);
               }
               return absl::OkStatus();
             })
      .Positionals(&positionals);
  if (std::optional<int> code = ParseVerbFlags(flags, args)) return *code;
  if (help) {
    std::fputs(kTriggerHelp, stdout);
    return 0;
  }
  if (action_help) {
    for (const char* a : kActions) std::printf("%s\n", a);
    return 0;
  }
  const Roots roots = Roots::FromEnvironment();
  for (const auto& [list, prefix] : {std::pair{&names, "/dev/"}, {&parents, "/sys/"}, {&positionals, ""}}) {
    for (const std::string& name : *list) {
      absl::StatusOr<std::unique_ptr<UdevDevice>> d = FindDevice(roots, name, prefix);
      if (!d.ok()) return Fail("trigger", absl::StrCat("Failed to open the device '", name, "': No such device"));
      filter.parent_match.push_back((*d)->syspath());
    }
  }
  if (wait_daemon) {
    const Deadline deadline(*wait_daemon);
    while (!DaemonAnswers()) {
      if (deadline.Passed()) {
        return Fail("trigger", "Failed to wait for daemon to reply: Connection timed out");
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  // 252 listens for systemd-udevd's messages before writing, so none is missed.
  std::optional<io::UeventListener> udev_listener;
  const bool use_hotring = settle && !dry_run && HotringDaemonListens();
  if (settle && !dry_run && !use_hotring &&
      PingUdevControl(roots.Map("/run/udev/control"), absl::Seconds(1)).ok()) {
    absl::StatusOr<io::UeventListener> l =
        io::OpenUeventListener({.group = udev::kUdevMonitorGroup, .receive_buffer = 8 << 20});
    if (l.ok()) udev_listener = std::move(*l);
  }

  absl::StatusOr<std::vector<std::unique_ptr<UdevDevice>>> devices = EnumerateDevices(roots, filter);
  if (!devices.ok()) return Fail("trigger", absl::StrCat("Failed to scan devices: ", devices.status().message()));
  std::vector<std::string> uuids;
  int ret = WriteEvents(roots, *devices, {.action = action, .verbose = verbose, .dry_run = dry_run,
                                          .quiet = quiet, .uuid = uuid, .settle = settle}, &uuids);
  if (ret < 0) return 1;
  std::fflush(stdout);
  if (settle && !dry_run && !uuids.empty()) {
    int r = 0;
    if (use_hotring) {
      r = SettleWithHotring(uuids);
    } else if (udev_listener) {
      r = SettleWithUdevd(udev_listener->fd.get(), std::set<std::string>(uuids.begin(), uuids.end()));
    }
    if (ret == 0) ret = r;
  }
  return ret;
}

}  // namespace hotring::hotplug::udevadm
