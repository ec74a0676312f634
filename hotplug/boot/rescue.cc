#include "hotplug/boot/rescue.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hotring::hotplug::boot {
namespace {

using Action = RescuePlan::Action;

// A value as blkid prints it: in double quotes, with `"` and `\` escaped and bytes outside
// printable ASCII as \xNN (a label is whatever the filesystem's creator wrote).
std::string Quoted(absl::string_view value) {
  std::string out = "\"";
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte < 0x20 || byte >= 0x7f) {
      absl::StrAppendFormat(&out, "\\x%02x", byte);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string DeviceLine(const SeenBlockDevice& device) {
  std::string line = absl::StrCat("/dev/", device.name, ":");
  if (device.empty) return absl::StrCat(line, " (empty)");
  for (const auto& [key, value] :
       {std::pair<absl::string_view, absl::string_view>{"TYPE", device.type},
        {"LABEL", device.label},
        {"UUID", device.uuid},
        {"PARTLABEL", device.partlabel},
        {"PARTUUID", device.partuuid}}) {
    if (!value.empty()) absl::StrAppend(&line, " ", key, "=", Quoted(value));
  }
  if (!device.problem.empty()) absl::StrAppend(&line, " (", device.problem, ")");
  if (device.type.empty() && device.partuuid.empty() && device.problem.empty()) {
    absl::StrAppend(&line, device.partition ? " (no filesystem known here)"
                                            : " (no filesystem or partition table known here)");
  }
  return line;
}

RescuePlan FromPanic(int panic) {
  const std::string because = absl::StrCat("panic=", panic);
  if (panic > 0) return {Action::kReboot, absl::Seconds(panic), because};
  if (panic < 0) return {Action::kReboot, absl::ZeroDuration(), because};
  return {Action::kHalt, absl::ZeroDuration(), because};
}

}  // namespace

RescuePlan ChooseRescue(const BootCmdline& cmdline, bool have_shell) {
  switch (cmdline.rescue) {
    case BootCmdline::Rescue::kShell:
      if (have_shell) return {Action::kShell, absl::ZeroDuration(), "hotring.rescue=shell"};
      break;  // the next rule decides; RescueLine says there is no shell
    case BootCmdline::Rescue::kReboot: {
      // panic=N's delay, when positive, as the kernel would wait.
      const int panic = cmdline.panic.value_or(0);
      return {Action::kReboot, absl::Seconds(panic > 0 ? panic : 0), "hotring.rescue=reboot"};
    }
    case BootCmdline::Rescue::kHalt:
      return {Action::kHalt, absl::ZeroDuration(), "hotring.rescue=halt"};
    case BootCmdline::Rescue::kPowerOff:
      return {Action::kPowerOff, absl::ZeroDuration(), "hotring.rescue=poweroff"};
    case BootCmdline::Rescue::kUnset:
      break;
  }
  const bool shell_missing = cmdline.rescue == BootCmdline::Rescue::kShell;
  RescuePlan plan;
  if (cmdline.test) {
    plan = {Action::kPowerOff, absl::ZeroDuration(), "hotring.test"};
  } else if (cmdline.panic.has_value()) {
    plan = FromPanic(*cmdline.panic);
  } else if (have_shell) {
    plan = {Action::kShell, absl::ZeroDuration(), "no panic= given"};
  } else {
    plan = {Action::kHalt, absl::ZeroDuration(), "no panic= given and no /bin/sh in the image"};
  }
  if (shell_missing) plan.because = absl::StrCat("hotring.rescue=shell, but no /bin/sh in the image; ", plan.because);
  return plan;
}

std::string DescribeRootWait(const BootCmdline& cmdline) {
  if (cmdline.root_wait == absl::InfiniteDuration()) {
    return absl::StrCat("without a deadline (", cmdline.root_wait_source, ")");
  }
  const std::string wait = absl::FormatDuration(cmdline.root_wait);
  if (cmdline.root_wait_source.empty()) {
    return absl::StrCat(wait, " (the default; rootdelay=S or rootwait change it)");
  }
  return absl::StrCat(wait, " (", cmdline.root_wait_source, ")");
}

std::string DescribeRootCondition(absl::string_view condition) {
  const size_t eq = condition.find('=');
  const absl::string_view key = condition.substr(0, eq);
  const absl::string_view value = eq == absl::string_view::npos ? "" : condition.substr(eq + 1);
  if (key == "DEVNAME") return absl::StrCat("a block device named ", value);
  if (key == "LABEL") return absl::StrCat("a filesystem labelled ", Quoted(value));
  if (key == "UUID") return absl::StrCat("a filesystem with UUID ", value);
  if (key == "PARTUUID") return absl::StrCat("a partition with PARTUUID ", value);
  if (key == "PARTLABEL") return absl::StrCat("a partition named ", Quoted(value));
  return std::string(condition);
}

std::vector<std::string> RootNotFoundLines(const BootCmdline& cmdline, absl::string_view condition,
                                           absl::Span<const SeenBlockDevice> seen,
                                           absl::Duration still_waiting_after) {
  std::vector<std::string> lines;
  if (still_waiting_after > absl::ZeroDuration()) {
    lines.push_back(absl::StrCat("root=", cmdline.root, " has not appeared in ",
                                 absl::FormatDuration(still_waiting_after), "; waiting ",
                                 DescribeRootWait(cmdline), " for ",
                                 DescribeRootCondition(condition)));
  } else {
    lines.push_back(absl::StrCat("root=", cmdline.root, " did not appear: waited ",
                                 DescribeRootWait(cmdline), " for ",
                                 DescribeRootCondition(condition)));
  }
  if (seen.empty()) {
    lines.push_back("no block device seen (/sys/class/block is empty): is the disk's driver in the "
                    "image, and its controller's?");
  } else {
    lines.push_back(absl::StrCat(seen.size(), seen.size() == 1 ? " block device" : " block devices",
                                 " seen:"));
    for (const SeenBlockDevice& device : seen) lines.push_back(absl::StrCat("  ", DeviceLine(device)));
  }
  lines.push_back(
      "check root= and rootdelay= (cat /proc/cmdline) and the drivers (cat /proc/modules)");
  return lines;
}

std::string RescueLine(const RescuePlan& plan) {
  switch (plan.action) {
    case Action::kShell:
      return absl::StrCat("dropping to a shell on the console (", plan.because, ")");
    case Action::kReboot:
      if (plan.delay <= absl::ZeroDuration()) return absl::StrCat("rebooting (", plan.because, ")");
      return absl::StrCat("rebooting in ", absl::FormatDuration(plan.delay), " (", plan.because,
                          ")");
    case Action::kHalt:
      return absl::StrCat("halting (", plan.because,
                          "; panic=N reboots after N s, hotring.rescue=shell opens a shell)");
    case Action::kPowerOff:
      return absl::StrCat("powering off (", plan.because, ")");
  }
  return "halting";
}

}  // namespace hotring::hotplug::boot
