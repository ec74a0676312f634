#include "hotplug/udevrules/test_host.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/clock.h"
#include "core/status.h"
#include "hotplug/udev/builtins.h"

namespace hotring::hotplug::udevrules {

void ParseDatabaseFile(absl::string_view text, DatabaseEntry* out) {
  out->Clear();
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line.size() < 2 || line[1] != ':') continue;
    const absl::string_view value = line.substr(2);
    switch (line[0]) {
      case 'E': {
        const size_t eq = value.find('=');
        if (eq != absl::string_view::npos) {
          out->properties.emplace_back(std::string(value.substr(0, eq)), std::string(value.substr(eq + 1)));
        }
        break;
      }
      case 'G':
        out->tags.emplace_back(value);
        break;
      case 'Q':
        out->current_tags.emplace_back(value);
        break;
      case 'S':
        out->links.emplace_back(value);
        break;
      case 'L':
        (void)absl::SimpleAtoi(value, &out->link_priority);
        break;
      default:
        break;
    }
  }
}

TestHost::TestHost(Options options) : SysfsHost(options.roots), options_(std::move(options)) {}

absl::string_view TestHost::Constant(absl::string_view name) {
  if (name == "arch") return options_.arch;
  if (name == "virt") return options_.virt;
  return "";
}

absl::Status TestHost::WriteAttribute(absl::string_view path, absl::string_view value) {
  absl::string_view rel = path;
  absl::ConsumePrefix(&rel, "/sys");
  std::string before;
  const bool existed = SysfsHost::ReadFile(path, 1 << 20, &before).ok();
  HOTRING_RETURN_IF_ERROR(SysfsHost::WriteAttribute(path, value));
  if (existed) replaced_.try_emplace(std::string(rel), std::move(before));
  attribute_writes_[std::string(rel)] = std::string(value);
  return absl::OkStatus();
}

void TestHost::RestoreAttributes() {
  for (const auto& [rel, content] : replaced_) {
    std::ofstream(absl::StrCat(roots().sysfs, rel), std::ios::binary | std::ios::trunc) << content;
  }
  replaced_.clear();
}

absl::Status TestHost::WriteSysctl(absl::string_view name, absl::string_view value) {
  HOTRING_RETURN_IF_ERROR(SysfsHost::WriteSysctl(name, value));
  sysctl_writes_[std::string(name)] = absl::StrCat(value, "\n");
  return absl::OkStatus();
}

std::string TestHost::DeviceId(absl::string_view devpath) {
  std::string uevent;
  if (!ReadAttribute(devpath, "uevent", &uevent)) return "";
  std::string major, minor, ifindex;
  for (absl::string_view line : absl::StrSplit(uevent, '\n')) {
    if (absl::ConsumePrefix(&line, "MAJOR=")) major = std::string(line);
    if (absl::ConsumePrefix(&line, "MINOR=")) minor = std::string(line);
    if (absl::ConsumePrefix(&line, "IFINDEX=")) ifindex = std::string(line);
  }
  std::string subsystem;
  (void)Subsystem(devpath, &subsystem);
  if (!major.empty() && !minor.empty()) {
    return absl::StrCat(subsystem == "block" ? "b" : "c", major, ":", minor);
  }
  if (!ifindex.empty()) return absl::StrCat("n", ifindex);
  const size_t slash = devpath.rfind('/');
  return absl::StrCat("+", subsystem, ":", devpath.substr(slash + 1));
}

bool TestHost::ReadDatabase(absl::string_view devpath, DatabaseEntry* out) {
  out->Clear();
  if (options_.database_dir.empty()) return false;
  const std::string id = DeviceId(devpath);
  if (id.empty()) return false;
  std::ifstream in(absl::StrCat(options_.database_dir, "/", id));
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  ParseDatabaseFile(text.str(), out);
  return true;
}

void TestHost::DeviceTags(absl::string_view devpath, std::vector<std::string>* out) {
  out->clear();
  DatabaseEntry entry;
  if (ReadDatabase(devpath, &entry)) *out = std::move(entry.tags);
}

void TestHost::DatabaseProperties(absl::string_view devpath, OwnedProperties* out) {
  DatabaseEntry entry;
  if (!ReadDatabase(devpath, &entry)) return;
  for (auto& kv : entry.properties) out->push_back(std::move(kv));
}

absl::Status TestHost::RunBuiltin(absl::string_view name, absl::string_view command, absl::Span<const std::string> argv,
                                  absl::string_view devpath, absl::Span<const PropertyView> properties,
                                  OwnedProperties* out) {
  if (options_.own_builtins && (name == "input_id" || name == "path_id" || name == "usb_id")) {
    const udev::DirSysfsView& v = view();
    udev::Properties props = name == "input_id" ? udev::InputId(v, devpath)
                                   : name == "path_id" ? udev::PathId(v, devpath)
                                                       : udev::UsbId(v, devpath);
    // input_id always succeeds; path_id and usb_id fail when they find nothing, as in udevd.
    if (props.empty() && name != "input_id") return absl::NotFoundError(absl::StrCat(name, ": nothing found"));
    for (auto& kv : props) out->push_back(std::move(kv));
    return absl::OkStatus();
  }
  const std::string key = absl::StrCat(devpath, "\t", command);
  auto it = options_.recorded_builtins.find(key);
  if (it == options_.recorded_builtins.end()) {
    unanswered_.push_back(key);
    return absl::UnavailableError(absl::StrCat("builtin ", name, " is not available here"));
  }
  if (!it->second.has_value()) return absl::NotFoundError(absl::StrCat(name, " failed in udevd"));
  for (const auto& kv : *it->second) out->push_back(kv);
  return absl::OkStatus();
}

absl::Status TestHost::RunProgram(absl::Span<const std::string> argv, absl::Span<const PropertyView> env,
                                  absl::Duration timeout, size_t max_output, std::string* out) {
  out->clear();
  std::string program = argv[0];
  if (!options_.program_dir.empty() && absl::StartsWith(program, "/lib/udev/")) {
    program = absl::StrCat(options_.program_dir, "/", program.substr(10));
  }
  std::vector<std::string> args(argv.begin(), argv.end());
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::vector<std::string> environment;
  for (const auto& [k, v] : env) environment.push_back(absl::StrCat(k, "=", v));
  std::vector<char*> cenv;
  for (std::string& e : environment) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return ErrnoStatus("pipe2");
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus("fork");
  if (pid == 0) {
    ::dup2(pipefd[1], 1);
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 2);
    }
    ::execve(program.c_str(), cargs.data(), cenv.data());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  const MonoTime deadline = MonoNow() + timeout;
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const absl::Duration left = Since(MonoNow(), deadline);
    if (left <= absl::ZeroDuration()) {
      timed_out = true;
      break;
    }
    struct pollfd p = {pipefd[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t n = ::read(pipefd[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const size_t keep = std::min(static_cast<size_t>(n), max_output - std::min(max_output, out->size()));
    out->append(buf, keep);
  }
  ::close(pipefd[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return absl::DeadlineExceededError(absl::StrCat(program, " timed out"));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(program, " failed (status ", status, ")"));
  }
  return absl::OkStatus();
}

}  // namespace hotring::hotplug::udevrules
