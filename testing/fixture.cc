#include "testing/fixture.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hotring::testing {

absl::StatusOr<std::string> ReplayRecordingText(const ReplaySpec& spec) {
  std::vector<std::string> args = {"replay", spec.recording};
  if (!spec.config.empty()) args.insert(args.end(), {"--config", spec.config});
  if (!spec.modules_root.empty()) args.insert(args.end(), {"--modules-root", spec.modules_root});
  if (!spec.firmware_root.empty()) {
    args.insert(args.end(), {"--firmware-root", spec.firmware_root});
  }
  for (const std::string& program : spec.exec) args.insert(args.end(), {"--exec", program});
  absl::StatusOr<CommandResult> run = RunHotring(args, {}, absl::Minutes(5));
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) {
    return absl::InternalError(absl::StrCat("hotring replay exited ", run->exit_code, ": ", run->err));
  }
  return run->out;
}

absl::StatusOr<Manifest> ReadManifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return hotplug::replay::ParseManifest(text.str());
}

absl::StatusOr<Manifest> ReplayRecording(const ReplaySpec& spec) {
  absl::StatusOr<std::string> text = ReplayRecordingText(spec);
  if (!text.ok()) return text.status();
  return hotplug::replay::ParseManifest(*text);
}

absl::Status RecordTree(const FakeSysfs& sysfs, const std::string& out, absl::string_view kernel) {
  // Empty proc and etc roots: no loaded modules, a root-only users database.
  absl::StatusOr<CommandResult> run =
      RunHotring({"record", "--out", out, "--sysfs-root", sysfs.root(), "--proc-root",
                  "/nonexistent", "--etc-root", "/nonexistent", "--kernel-version",
                  std::string(kernel)});
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) {
    return absl::InternalError(absl::StrCat("hotring record exited ", run->exit_code, ": ", run->err));
  }
  return absl::OkStatus();
}

const DevEntry* FindDevEntry(const Manifest& manifest, absl::string_view path) {
  for (const DevEntry& e : manifest.dev) {
    if (e.path == path) return &e;
  }
  return nullptr;
}

std::vector<const CommandRun*> RunsOf(const Manifest& manifest, absl::string_view kind) {
  std::vector<const CommandRun*> out;
  for (const CommandRun& r : manifest.runs) {
    if (r.kind == kind) out.push_back(&r);
  }
  return out;
}

std::string EnvOf(const CommandRun& run, absl::string_view key) {
  const std::string prefix = absl::StrCat(key, "=");
  for (const std::string& e : run.env) {
    if (absl::StartsWith(e, prefix)) return e.substr(prefix.size());
  }
  return "";
}

}  // namespace hotring::testing
