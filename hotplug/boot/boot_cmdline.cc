#include "hotplug/boot/boot_cmdline.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace hotring::hotplug::boot {
namespace {

// False (and `out` untouched) for what is not a number of seconds from 0 to a day.
bool ReadSeconds(absl::string_view value, absl::Duration* out) {
  double seconds = 0;
  if (absl::SimpleAtod(value, &seconds) && seconds >= 0 && seconds <= 24 * 3600) {
    *out = absl::Seconds(seconds);
    return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> SplitCmdline(absl::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false;
  bool in_word = false;
  for (const char c : text) {
    if (c == '"') {
      quoted = !quoted;
      in_word = true;
    } else if (!quoted && (c == ' ' || c == '\t' || c == '\n')) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

BootCmdline ParseBootCmdline(absl::string_view text) {
  BootCmdline cmdline;
  bool forever = false;
  for (const std::string& word : SplitCmdline(text)) {
    const size_t eq = word.find('=');
    const absl::string_view key =
        eq == std::string::npos ? absl::string_view(word) : absl::string_view(word).substr(0, eq);
    const absl::string_view value =
        eq == std::string::npos ? absl::string_view() : absl::string_view(word).substr(eq + 1);
    if (key == "root") {
      cmdline.root = std::string(value);
    } else if (key == "rootfstype") {
      cmdline.root_fstype = std::string(value);
    } else if (key == "rootflags") {
      cmdline.root_flags = std::string(value);
    } else if (key == "rw" && eq == std::string::npos) {
      cmdline.root_rw = true;
    } else if (key == "ro" && eq == std::string::npos) {
      cmdline.root_rw = false;
    } else if (key == "init" && !value.empty()) {
      cmdline.init = std::string(value);
    } else if (key == "rootwait" && eq == std::string::npos) {
      forever = true;
    } else if (key == "rootdelay" || key == "rootwait" || key == "hotring.rootwait") {
      if (ReadSeconds(value, &cmdline.root_wait)) cmdline.root_wait_source = word;
    } else if (key == "panic") {
      // As initramfs-tools: what is not a number halts.
      int seconds = 0;
      cmdline.panic = absl::SimpleAtoi(value, &seconds) ? seconds : 0;
    } else if (key == "hotring.rescue") {
      cmdline.rescue = value == "shell"      ? BootCmdline::Rescue::kShell
                       : value == "reboot"   ? BootCmdline::Rescue::kReboot
                       : value == "halt"     ? BootCmdline::Rescue::kHalt
                       : value == "poweroff" ? BootCmdline::Rescue::kPowerOff
                                             : BootCmdline::Rescue::kUnset;
    } else if (key == "hotring.settle_timeout") {
      (void)ReadSeconds(value, &cmdline.settle_timeout);
    } else if (key == "hotring.settle_for" && absl::StrContains(value, '=')) {
      cmdline.settle_for.emplace_back(value);
    } else if (key == "hotring.drivers_first") {
      cmdline.drivers_first = !(value == "0" || value == "n" || value == "no");
    } else if (key == "hotring.coldplug_subsystems") {
      cmdline.coldplug_subsystems = !(value == "0" || value == "n" || value == "no");
    } else if (key == "hotring.coldplug_needed") {
      cmdline.coldplug_needed = !(value == "0" || value == "n" || value == "no");
    } else if (key == "hotring.early_coldplug") {
      cmdline.early_coldplug = !(value == "0" || value == "n" || value == "no");
    } else if (key == "hotring.timeline") {
      cmdline.timeline = !(value == "0" || value == "n" || value == "no");
    } else if (key == "hotring.test") {
      // `hotring.test` alone or `=1`/`=y`; `=0`/`=n` turns it off again.
      cmdline.test = !(value == "0" || value == "n" || value == "no");
    } else if (key == "hotring.stat") {
      for (absl::string_view node : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        cmdline.stat_nodes.emplace_back(node);
      }
    }
  }
  if (forever) {
    cmdline.root_wait = absl::InfiniteDuration();
    cmdline.root_wait_source = "rootwait";
  }
  return cmdline;
}

absl::StatusOr<RootSpec> ParseRootSpec(absl::string_view root) {
  for (const absl::string_view key : {"LABEL=", "UUID=", "PARTUUID=", "PARTLABEL="}) {
    if (!absl::StartsWith(root, key)) continue;
    if (root.size() == key.size()) {
      return absl::InvalidArgumentError(absl::StrCat("root=", root, ": empty ", key.substr(0, key.size() - 1)));
    }
    if (key == "PARTUUID=" && absl::StrContains(root, "/PARTNROFF=")) {
      return absl::UnimplementedError(
          absl::StrCat("root=", root, ": PARTNROFF= is not understood; name the partition itself"));
    }
    return RootSpec{std::string(root), ""};
  }
  if (absl::StartsWith(root, "/dev/") && !absl::StartsWith(root, "/dev/disk/") &&
      root.size() > 5) {
    return RootSpec{absl::StrCat("DEVNAME=", root.substr(5)), std::string(root)};
  }
  return absl::UnimplementedError(absl::StrCat(
      "root=", root, ": only /dev/NAME, LABEL=, UUID=, PARTUUID= and PARTLABEL= are understood"));
}

}  // namespace hotring::hotplug::boot
