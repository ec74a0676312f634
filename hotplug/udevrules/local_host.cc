#include "hotplug/udevrules/local_host.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/clock.h"
#include "core/status.h"
#include "hotplug/udev/builtin_registry.h"

namespace hotring::hotplug::udevrules {
namespace {

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// systemd's detect_virtualization, for the cases a board or container shows: the container
// managers' marks, then a hypervisor's.
std::string Virtualization() {
  if (std::optional<std::string> env = ReadText("/proc/1/environ")) {
    for (absl::string_view var : absl::StrSplit(*env, '\0')) {
      if (absl::ConsumePrefix(&var, "container=") && !var.empty()) {
        return var == "oci" ? "container-other" : std::string(var);
      }
    }
  }
  if (access("/.dockerenv", F_OK) == 0) return "docker";
  if (access("/run/.containerenv", F_OK) == 0) return "podman";
  if (std::optional<std::string> type = ReadText("/sys/hypervisor/type")) {
    if (absl::StartsWith(*type, "xen")) return "xen";
  }
  return "none";
}

}  // namespace

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

absl::Status RunProgramCaptured(const std::string& program, absl::Span<const std::string> argv,
                                absl::Span<const PropertyView> env, absl::Duration timeout,
                                size_t max_output, std::string* out) {

  out->clear();
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

std::string ArchitectureName() {
  utsname u;
  if (uname(&u) != 0) return "";
  const absl::string_view m = u.machine;
  if (m == "x86_64") return "x86-64";
  if (m == "i386" || m == "i486" || m == "i586" || m == "i686") return "x86";
  if (m == "aarch64") return "arm64";
  if (m == "aarch64_be") return "arm64-be";
  if (absl::StartsWith(m, "armv") || m == "arm") return absl::EndsWith(m, "b") ? "arm-be" : "arm";
  if (m == "riscv64") return "riscv64";
  if (m == "ppc64le") return "ppc64-le";
  if (m == "ppc64") return "ppc64";
  if (m == "s390x") return "s390x";
  if (m == "mips") return "mips";
  if (m == "mips64") return "mips64";
  if (m == "loongarch64") return "loongarch64";
  return std::string(m);
}

LocalHost::LocalHost(Options options)
    : SysfsHost(options.roots), options_(std::move(options)), links_(options_.roots.sysfs) {
  absl::StatusOr<udev::Hwdb> hwdb = udev::Hwdb::OpenFirst();
  if (hwdb.ok()) hwdb_ = std::move(*hwdb);
  resources_.hwdb = hwdb_ ? &*hwdb_ : nullptr;
  resources_.links = &links_;
  cmdline_ = std::string(absl::StripTrailingAsciiWhitespace(ReadText(options_.cmdline_file).value_or("")));
  arch_ = ArchitectureName();
  virt_ = Virtualization();
  absl::StatusOr<PasswdFiles> names = PasswdFiles::Load(options_.passwd_root);
  if (names.ok()) names_ = std::move(*names);
}

absl::Status LocalHost::RunProgram(absl::Span<const std::string> argv, absl::Span<const PropertyView> env,
                                   absl::Duration timeout, size_t max_output, std::string* out) {
  if (argv.empty()) return absl::InvalidArgumentError("no program");
  return RunProgramCaptured(argv[0], argv, env, timeout, max_output, out);
}

absl::Status LocalHost::RunBuiltin(absl::string_view name, absl::string_view command,
                                   absl::Span<const std::string> argv, absl::string_view devpath,
                                   absl::Span<const PropertyView> properties, OwnedProperties* out) {
  (void)command;
  std::vector<udev::PropertyView> views(properties.begin(), properties.end());
  const udev::BuiltinDevice device{.sysfs = view(), .devpath = devpath, .properties = views};
  absl::StatusOr<udev::BuiltinResult> result = udev::RunBuiltin(name, device, argv, resources_);
  if (!result.ok()) return result.status();
  for (auto& kv : result->properties) out->push_back(std::move(kv));
  return absl::OkStatus();
}

bool LocalHost::ReadDatabase(absl::string_view devpath, DatabaseEntry* out) {
  out->Clear();
  const std::string id = DeviceId(devpath);
  if (id.empty()) return false;
  std::optional<std::string> text = ReadText(absl::StrCat(options_.database_dir, "/", id));
  if (!text) return false;
  ParseDatabaseFile(*text, out);
  return true;
}

void LocalHost::DeviceTags(absl::string_view devpath, std::vector<std::string>* out) {
  out->clear();
  DatabaseEntry entry;
  if (ReadDatabase(devpath, &entry)) *out = std::move(entry.tags);
}

void LocalHost::DatabaseProperties(absl::string_view devpath, OwnedProperties* out) {
  DatabaseEntry entry;
  if (!ReadDatabase(devpath, &entry)) return;
  for (auto& kv : entry.properties) out->push_back(std::move(kv));
}

absl::string_view LocalHost::Constant(absl::string_view name) {
  if (name == "arch") return arch_;
  if (name == "virt") return virt_;
  return "";
}

std::optional<uint32_t> LocalHost::UserId(absl::string_view name) {
  return names_ ? names_->UserId(name) : std::nullopt;
}

std::optional<uint32_t> LocalHost::GroupId(absl::string_view name) {
  return names_ ? names_->GroupId(name) : std::nullopt;
}

}  // namespace hotring::hotplug::udevrules
