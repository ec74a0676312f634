// Fuzzes the mdev.conf parser, the rule matcher and the event planner together. The input is a
// configuration, then (after the first NUL byte) events: blocks separated by an empty line, one
// KEY=VALUE a line. Beyond "no crash and no hang":
//   - the strict parse (the daemon's) either succeeds or fails with "FILE:LINE: ..." as
//     InvalidArgument; the lenient parse (busybox mdev's: skip bad lines) always succeeds and,
//     when the strict one did, keeps the same rules and warns of nothing;
//   - every rule is well formed (permission bits only, a line number, regexes where needed);
//   - Match visits rules in file order, every one but the last marked '-', and ends with the
//     first rule not so marked or with the built-in default;
//   - a plan never names a node, link or firmware path that leaves its root; its commands are
//     the configuration's own text; a refused DEVNAME plans nothing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "hotplug/event.h"
#include "hotplug/event_parser.h"
#include "hotplug/rules/device.h"
#include "hotplug/rules/engine.h"
#include "hotplug/rules/rule_set.h"
#include "hotplug/devroot/user_db.h"
#include "testing/fuzz/fuzz_check.h"

namespace hotring::fuzz {
namespace {

namespace rules = hotplug::rules;
namespace devroot = hotplug::devroot;

constexpr absl::string_view kFile = "fuzz.conf";

// The names busybox's and Alpine's example configurations use.
const devroot::UserDb& Users() {
  static const devroot::UserDb* const users = new devroot::UserDb(devroot::UserDb::FromText(
      "root:x:0:0:root:/root:/bin/sh\nbin:x:1:1::/:/bin/false\ndaemon:x:2:2::/:/bin/false\n"
      "lp:x:7:7::/:/bin/false\nnobody:x:65534:65534::/:/bin/false\n",
      "root:x:0:\nbin:x:1:\ndaemon:x:2:\ntty:x:5:\ndisk:x:6:\nlp:x:7:\nkmem:x:9:\n"
      "dialout:x:20:\ncdrom:x:24:\nfloppy:x:11:\naudio:x:29:\nvideo:x:44:\nuucp:x:14:\n"
      "input:x:97:\nkvm:x:78:\nnetwork:x:90:\nusb:x:85:\nnogroup:x:65534:\n"));
  return *users;
}

std::vector<hotplug::Event> ParseEvents(absl::string_view text) {
  std::vector<hotplug::Event> events;
  for (const absl::string_view block : absl::StrSplit(text, "\n\n")) {
    hotplug::EnvVars env;
    for (const absl::string_view line : absl::StrSplit(block, '\n', absl::SkipEmpty())) {
      const size_t eq = line.find('=');
      if (eq == absl::string_view::npos) continue;
      env.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    }
    absl::StatusOr<hotplug::Event> event =
        hotplug::EventFromEnv(std::move(env), hotplug::EventSource::kKernel);
    // What EventFromEnv refuses never reaches the rules (the fuzz target of the parsers checks
    // those drops).
    if (event.ok()) events.push_back(*std::move(event));
  }
  return events;
}

void CheckRules(const rules::RuleSet& set) {
  for (const rules::Rule& rule : set.rules()) {
    Require(rule.line >= 1 && rule.file == kFile, "a rule knows where it was read");
    Require((rule.mode & ~07777) == 0, "a rule's mode is permission bits only");
    Require(rule.kind != rules::MatchKind::kAll, "only the built-in default matches everything");
    if (rule.kind == rules::MatchKind::kName || rule.kind == rules::MatchKind::kEnv) {
      Require(rule.regex.has_value(), "a regex rule has its compiled regex");
    }
    if (rule.kind == rules::MatchKind::kEnv) Require(!rule.env_name.empty(), "$ENVVAR has a name");
    if (rule.node_action == rules::NodeAction::kMove ||
        rule.node_action == rules::NodeAction::kMoveAndLink) {
      Require(!rule.path.empty(), "=path and >path have a path");
    }
    Require(rule.command_when != rules::CommandWhen::kNever || rule.command.empty(),
            "no command text without a command");
  }
}

bool IsConfigCommand(const rules::RuleSet& set, absl::string_view text) {
  for (const rules::Rule& rule : set.rules()) {
    if (rule.command_when != rules::CommandWhen::kNever && rule.command == text) return true;
  }
  return false;
}

void CheckEvent(const rules::RuleSet& set, const hotplug::Event& event) {
  const rules::Device device = rules::DeviceFromEvent(event);

  // Match: file order, '-' rules then one stopping rule (or the default).
  std::vector<const rules::Rule*> visited;
  set.Match(device, [&](const rules::Rule& rule, absl::string_view subject,
                        const rules::MatchGroups& groups) {
    for (const auto& group : groups.group) {
      if (group.matched) {
        Require(group.begin <= group.end && group.end <= subject.size(),
                "a capture lies inside its subject");
      }
    }
    visited.push_back(&rule);
  });
  Require(!visited.empty(), "every device gets at least the default rule");
  // Position in the file; the default comes after every rule.
  const auto position = [&](const rules::Rule* rule) -> size_t {
    if (rule == &rules::RuleSet::DefaultRule()) return set.rules().size();
    const size_t at = static_cast<size_t>(rule - set.rules().data());
    Require(at < set.rules().size(), "Match passes the set's own rules or the default");
    return at;
  };
  for (size_t i = 0; i + 1 < visited.size(); ++i) {
    Require(visited[i]->keep_matching, "only '-' rules let the search go on");
    Require(position(visited[i]) < position(visited[i + 1]),
            "rules are visited once, in file order, the default last");
  }
  Require(!visited.back()->keep_matching || visited.back() == &rules::RuleSet::DefaultRule(),
          "the search ends at a rule without '-' or at the default");

  const rules::EventPlan plan = rules::PlanEvent(set, device);
  for (const rules::PlanOptions options :
       {rules::PlanOptions{}, rules::PlanOptions{rules::DevNumber{8, 0}, true}}) {
    const rules::EventPlan other = rules::PlanEvent(set, device, options);
    Require(other.rules_matched == plan.rules_matched, "options do not change which rules match");
  }
  if (!rules::IsSafeRelativePath(device.name)) {
    Require(!plan.refused.empty() && plan.nodes.empty() && plan.commands.empty() &&
                !plan.firmware.has_value(),
            "a DEVNAME leaving the dev root plans nothing");
    return;
  }
  const bool ignored = device.action == rules::DeviceAction::kRemove && !device.firmware.empty();
  Require(plan.rules_matched == (ignored ? 0 : static_cast<int>(visited.size())),
          "the plan applies every rule Match found");
  for (const rules::NodeStep& step : plan.nodes) {
    Require(rules::IsSafeRelativePath(step.path), "a node path stays beneath the dev root");
    Require(step.link.empty() || rules::IsSafeRelativePath(step.link),
            "a link stays beneath the dev root");
    Require(step.name == device.name, "a node step names the kernel's node");
    Require((step.mode & ~07777) == 0, "a node's mode is permission bits only");
    Require(step.kind != rules::NodeStep::Kind::kCreate || step.number.has_value(),
            "a node is created only with a device number");
  }
  for (const rules::Command& command : plan.commands) {
    Require(IsConfigCommand(set, command.text), "commands come from the configuration only");
    bool has_mdev = false;
    for (const std::string& entry : command.envp) {
      Require(entry.find('=') != std::string::npos, "a command's environment is KEY=VALUE");
      has_mdev = has_mdev || absl::StartsWith(entry, "MDEV=");
    }
    Require(has_mdev, "a command gets MDEV");
  }
  if (plan.firmware) {
    Require(rules::IsSafeRelativePath(*plan.firmware), "firmware stays beneath its root");
  }
}

}  // namespace
}  // namespace hotring::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hotring::fuzz;
  namespace rules = hotring::hotplug::rules;
  const absl::string_view input = AsText(data, size);
  const size_t nul = input.find('\0');
  const absl::string_view config = input.substr(0, nul);
  const absl::string_view events =
      nul == absl::string_view::npos ? absl::string_view() : input.substr(nul + 1);

  absl::StatusOr<rules::RuleSet> strict = rules::ParseRules(config, kFile, Users());
  absl::StatusOr<rules::RuleSet> lenient =
      rules::ParseRules(config, kFile, Users(), rules::ParseOptions{.skip_bad_lines = true});
  Require(lenient.ok(), "skipping bad lines never fails the parse");
  if (strict.ok()) {
    Require(strict->rules().size() == lenient->rules().size() && lenient->warnings().empty(),
            "a file the strict parser takes has no bad line to skip");
  } else {
    Require(strict.status().code() == absl::StatusCode::kInvalidArgument,
            "a bad configuration is InvalidArgument");
    Require(absl::StartsWith(strict.status().message(), "fuzz.conf:"),
            "a parse error names FILE:LINE");
  }
  for (const std::string& warning : lenient->warnings()) {
    Require(absl::StartsWith(warning, "fuzz.conf:"), "a skipped line's warning names FILE:LINE");
  }
  CheckRules(*lenient);
  for (const hotring::hotplug::Event& event : ParseEvents(events)) CheckEvent(*lenient, event);
  return 0;
}
