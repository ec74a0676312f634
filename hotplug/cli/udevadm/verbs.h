// The verbs of udevadm, one function each (args without the verb), and what they share.
#ifndef HOTRING_HOTPLUG_CLI_UDEVADM_VERBS_H_
#define HOTRING_HOTPLUG_CLI_UDEVADM_VERBS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/flags.h"
#include "hotplug/cli/udevadm/device.h"

namespace hotring::hotplug::udevadm {

int InfoVerb(const std::vector<std::string>& args);
int TriggerVerb(const std::vector<std::string>& args);
int SettleVerb(const std::vector<std::string>& args);
int ControlVerb(const std::vector<std::string>& args);
int MonitorVerb(const std::vector<std::string>& args);
int TestVerb(const std::vector<std::string>& args);
int TestBuiltinVerb(const std::vector<std::string>& args);
int WaitVerb(const std::vector<std::string>& args);
int VerifyVerb(const std::vector<std::string>& args);
int HwdbVerb(const std::vector<std::string>& args);

// "udevadm VERB: message" on stderr; returns 1 (udevadm's exit code for every failure).
int Fail(absl::string_view verb, absl::string_view message);

// Parses with `flags`; nullopt: go on; otherwise the exit code (0 after a help text, 1 for a
// bad option, as 252's getopt handling returns -EINVAL).
[[nodiscard]] std::optional<int> ParseVerbFlags(const FlagSet& flags,
                                                const std::vector<std::string>& args);

// A device named as 252's find_device does: a /sys path, a /dev name (a node, or a link to
// one), a path relative to /sys ("/devices/..." with `prefix` "/sys"), or a network
// interface name; a path that exists is resolved first.
absl::StatusOr<std::unique_ptr<UdevDevice>> FindDevice(const Roots& roots, absl::string_view name,
                                                       absl::string_view prefix);

// The actions 252 knows, in its order (`--action=help` lists them).
inline constexpr const char* kActions[] = {"add",    "remove",  "change", "move",
                                           "online", "offline", "bind",   "unbind"};

// --action: one of kActions (into *action), or "help" (*help set); otherwise an error of
// `unknown` ("Unknown action", "Invalid action": the verbs word it differently) and the value.
absl::Status ParseAction(absl::string_view value, absl::string_view unknown, std::string* action, bool* help);

// The version line: kUdevVersion.
int PrintVersion();

}  // namespace hotring::hotplug::udevadm

#endif  // HOTRING_HOTPLUG_CLI_UDEVADM_VERBS_H_
