#include "hotplug/replay/replay_command.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/clock.h"
#include "core/flags.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/client/client.h"
#include "hotplug/client/daemon_child.h"
#include "hotplug/event_parser.h"
#include "hotplug/replay/diff.h"
#include "hotplug/replay/manifest.h"
#include "hotplug/replay/recording.h"
#include "hotplug/replay/tree.h"
#include "hotplug/wire.h"
#include "io/process/child_process.h"

extern char** environ;

namespace hotring::hotplug::replay {
namespace {

// Closes a DIR* (a functor type, since closedir carries attributes a template argument drops).
struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

// The handler wrapper's first argument: `replay --run RUNS_DIR KIND PROGRAM... -- ARGS...`.
constexpr absl::string_view kRunFlag = "--run";

uint64_t MonotonicNanos() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

std::string Basename(absl::string_view path) {
  return std::string(path.substr(path.rfind('/') + 1));
}

// An absolute form of `path` without resolving symlinks (Bazel's runfiles are symlinks whose
// targets have other names).
absl::StatusOr<std::string> Absolute(const std::string& path) {
  if (absl::StartsWith(path, "/")) return path;
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr) return ErrnoStatus("getcwd");
  return absl::StrCat(cwd, "/", path);
}

absl::Status RemoveTree(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return absl::OkStatus();
  if (S_ISDIR(st.st_mode)) {
    std::unique_ptr<DIR, DirCloser> dir(::opendir(path.c_str()));
    if (dir) {
      std::vector<std::string> names;
      while (const dirent* e = ::readdir(dir.get())) {
        const absl::string_view name = e->d_name;
        if (name != "." && name != "..") names.emplace_back(name);
      }
      dir.reset();
      for (const std::string& name : names) (void)RemoveTree(absl::StrCat(path, "/", name));
    }
    if (::rmdir(path.c_str()) != 0) return ErrnoStatus(absl::StrCat("rmdir(", path, ")"));
    return absl::OkStatus();
  }
  if (::unlink(path.c_str()) != 0) return ErrnoStatus(absl::StrCat("unlink(", path, ")"));
  return absl::OkStatus();
}

// --- the handler wrapper --------------------------------------------------------------------

// Runs each PROGRAM with ARGS and the environment we were given (minus what the wrapper's
// shell added: PWD, and SHLVL and _ from busybox's ash or bash as /bin/sh, so a board's
// manifest matches one made where /bin/sh is dash), one after the other while they succeed,
// leaving one run record each in RUNS_DIR. Exits with the first failure's code, as the daemon's
// handler chain would stop.
int RunWrapped(const std::vector<std::string>& args) {
  // args: --run RUNS_DIR KIND PROGRAM... -- ARGS...
  const auto dashes = std::find(args.begin(), args.end(), "--");
  if (args.size() < 4 || dashes == args.end() || dashes - args.begin() < 4) {
    std::fprintf(stderr, "hotring replay --run: want RUNS_DIR KIND PROGRAM... -- ARGS...\n");
    return 2;
  }
  const std::string& runs_dir = args[1];
  const std::string& kind = args[2];
  const std::vector<std::string> programs(args.begin() + 3, dashes);
  const std::vector<std::string> rest(dashes + 1, args.end());
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (absl::StartsWith(*e, "PWD=") || absl::StartsWith(*e, "SHLVL=") ||
        absl::StartsWith(*e, "_=")) {
      continue;
    }
    env.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (size_t i = 0; i < programs.size(); ++i) {
    CommandRun run;
    run.kind = kind;
    run.order = MonotonicNanos();
    run.env = env;
    std::vector<std::string> argv = {programs[i]};
    argv.insert(argv.end(), rest.begin(), rest.end());
    // The program's name, not where this run found it: the manifest must not depend on paths.
    run.argv = argv;
    if (kind == "exec") run.argv[0] = Basename(programs[i]);
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    int code = 0;
    const pid_t pid = ::fork();
    if (pid < 0) {
      run.status = absl::StrCat("not started: ", ErrnoStatus("fork").message());
      code = 1;
    } else if (pid == 0) {
      ::execve(cargv[0], cargv.data(), envp.data());
      std::fprintf(stderr, "hotring replay: cannot run %s: %s\n", cargv[0], strerror(errno));
      ::_exit(127);
    } else {
      int wstatus = 0;
      while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
      }
      if (WIFEXITED(wstatus)) {
        code = WEXITSTATUS(wstatus);
        run.status = absl::StrCat("exit ", code);
      } else {
        code = 128 + WTERMSIG(wstatus);
        run.status = absl::StrCat("signal ", WTERMSIG(wstatus));
      }
    }
    const absl::Status written = WriteWholeFile(
        absl::StrCat(runs_dir, "/run-", run.order, "-", ::getpid(), "-", i), FormatRunRecord(run));
    if (!written.ok()) {
      std::fprintf(stderr, "hotring replay: %s\n", std::string(written.message()).c_str());
      return 1;
    }
    if (code != 0) return code;
  }
  return 0;
}

// --- replay ----------------------------------------------------------------------------------

struct ReplayOptions {
  std::string recording;
  std::string config;
  std::string modules_root;
  std::string firmware_root;
  std::vector<std::string> exec;
  std::string out;
  std::string golden;
  bool update = false;
  absl::Duration timeout = absl::Seconds(300);
  std::string keep_work;
};

// Parses `args` into `o`; kHelpShown once --help was printed.
absl::StatusOr<FlagsParsed> ParseReplayArgs(const std::vector<std::string>& args,
                                            ReplayOptions& o) {
  std::vector<std::string> positionals;
  FlagSet flags(
      "replay",
      "usage: hotring replay RECORDING [options]\n"
      "  Builds a private sysfs, dev root and users database from RECORDING, runs a daemon on a\n"
      "  private socket over its events (sent like `hotring send`: no privilege needed for that),\n"
      "  one event at a time, with modules loaded into a log instead of the kernel, and writes a\n"
      "  manifest: every dev entry, every module load, every command run (docs/recording.md).");
  flags.String("--config", "FILE", &o.config, "mdev.conf (default: none, every node root:root 0660)")
      .String("--modules-root", "DIR", &o.modules_root,
              "DIR/lib/modules/<recorded kernel>/ for MODALIAS (default: no modules)")
      .String("--firmware-root", "DIR", &o.firmware_root,
              "the board's /lib/firmware, for FIRMWARE requests (default: none, so every request "
              "is listed as missing)")
      .Strings("--exec", "PROGRAM", &o.exec,
               "run PROGRAM SUBSYSTEM for every event (repeatable: in order)")
      .String("--out", "FILE", &o.out, "write the manifest to FILE (default: stdout unless --golden)")
      .String("--golden", "FILE", &o.golden,
              "compare with FILE: print a diff and exit 1 when they differ")
      .Bool("--update", &o.update, "with --golden: rewrite FILE instead of comparing")
      .Seconds("--timeout", "S", &o.timeout,
               "give up when the events are not handled after S seconds (300)")
      .String("--keep-work", "DIR", &o.keep_work,
              "build in DIR (must not exist) and keep it, for a post-mortem")
      .Positionals(&positionals);
  HOTRING_ASSIGN_OR_RETURN(const FlagsParsed parsed, flags.Parse(args));
  if (parsed == FlagsParsed::kHelpShown) return parsed;
  if (positionals.size() > 1) return flags.Error("one recording only");
  if (!positionals.empty()) o.recording = positionals[0];
  if (o.recording.empty()) return flags.Error("which recording? (hotring replay --help)");
  if (o.update && o.golden.empty()) return flags.Error("--update needs --golden FILE");
  for (std::string* path : {&o.config, &o.modules_root, &o.firmware_root}) {
    if (path->empty()) continue;
    HOTRING_ASSIGN_OR_RETURN(*path, Absolute(*path));
  }
  for (std::string& program : o.exec) {
    HOTRING_ASSIGN_OR_RETURN(program, Absolute(program));
    if (program.find('\'') != std::string::npos) return flags.Error("a ' in an --exec path");
    if (::access(program.c_str(), X_OK) != 0) {
      return flags.Error(absl::StrCat("--exec ", program, ": not an executable file"));
    }
  }
  return FlagsParsed::kRun;
}

// Starts the daemon with stdin and stdout on /dev/null and stderr into `log_path`, and waits
// until it serves; when it does not, the error carries its log.
absl::StatusOr<DaemonChild> StartDaemon(std::vector<std::string> argv, const std::string& log_path,
                                        absl::Duration timeout) {
  const UniqueFd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!log.valid()) return ErrnoStatus(absl::StrCat("open(", log_path, ")"));
  const UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null.valid()) return ErrnoStatus("open(/dev/null)");
  const std::string program = argv[0];
  HOTRING_ASSIGN_OR_RETURN(DaemonChild child,
                           DaemonChild::Start({.program = program,
                                               .argv = std::move(argv),
                                               .stdin_fd = null.get(),
                                               .stdout_fd = null.get(),
                                               .stderr_fd = log.get()}));
  if (const absl::Status ready = child.WaitReady(timeout); !ready.ok()) {
    const absl::StatusOr<std::string> text = ReadWholeFile(log_path, 1 << 16);
    return absl::InternalError(absl::StrCat("the daemon did not start (", ready.message(), ")",
                                            text.ok() ? ": " + *text : std::string()));
  }
  return child;
}

std::string ShellQuote(absl::string_view s) { return absl::StrCat("'", s, "'"); }

// Sends every event of the recording to the daemon, in order; a full queue is waited out.
absl::Status SendEvents(const std::string& socket, const Recording& recording,
                        absl::Duration timeout) {
  HOTRING_ASSIGN_OR_RETURN(ControlClient client, ControlClient::Open(socket));
  const MonoTime deadline = MonoNow() + timeout;
  for (const RecordedEvent& env : recording.events) {
    HOTRING_ASSIGN_OR_RETURN(const Event event, EventFromEnv(env, EventSource::kSend));
    const WireMessage message = EventMessage(event, NewCookie(), /*want_ack=*/false);
    for (;;) {
      const absl::Status sent = client.Send(message);
      if (sent.ok()) break;
      if (!absl::IsResourceExhausted(sent) || MonoNow() > deadline) return sent;
      ::usleep(1000);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> MakeWorkDir(const std::string& keep) {
  if (!keep.empty()) {
    if (::mkdir(keep.c_str(), 0755) != 0) return ErrnoStatus(absl::StrCat("mkdir(", keep, ")"));
    return Absolute(keep);
  }
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string templ = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                                   "/hotring-replay-XXXXXX");
  if (::mkdtemp(templ.data()) == nullptr) return ErrnoStatus("mkdtemp");
  return templ;
}

// The replay proper, in `work`: returns the manifest's text.
absl::StatusOr<std::string> Replay(const ReplayOptions& o, const Recording& recording,
                                   const std::string& work) {
  char self_path[4096];
  const ssize_t self_size = ::readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
  if (self_size <= 0) return ErrnoStatus("readlink(/proc/self/exe)");
  const std::string self(self_path, static_cast<size_t>(self_size));
  if (self.find('\'') != std::string::npos || work.find('\'') != std::string::npos) {
    return absl::InvalidArgumentError("a ' in the binary's or the work directory's path");
  }
  for (const char* dir : {"/sys", "/dev", "/users", "/runs"}) {
    if (::mkdir(absl::StrCat(work, dir).c_str(), 0755) != 0) return ErrnoStatus("mkdir");
  }
  HOTRING_RETURN_IF_ERROR(BuildSysfs(recording, work + "/sys"));
  HOTRING_RETURN_IF_ERROR(BuildUsersRoot(recording, work + "/users"));
  if (!o.firmware_root.empty()) {
    HOTRING_RETURN_IF_ERROR(StageFirmware(recording, o.firmware_root, work + "/firmware"));
  }
  const std::string runs = work + "/runs";
  // The daemon runs rule commands and --exec programs through these wrappers, which record
  // each run (argv, environment, exit status) and then do what the daemon asked.
  const std::string rules_shell = work + "/rules-shell";
  HOTRING_RETURN_IF_ERROR(WriteWholeFile(
      rules_shell,
      absl::StrCat("#!/bin/sh\nexec ", ShellQuote(self), " replay --run ", ShellQuote(runs),
                   " rule /bin/sh -- \"$@\"\n"),
      0755));
  std::string config = o.config;
  if (config.empty()) {
    config = work + "/mdev.conf";
    HOTRING_RETURN_IF_ERROR(WriteWholeFile(config, "# no rules: every node root:root 0660\n"));
  }
  const std::string socket = absl::StrCat("@hotring-replay-", ::getpid(), "-", NewCookie());
  std::vector<std::string> argv = {self, "daemon", "--socket", socket, "--no-netlink",
                                   "--seqnum-file", "", "--sysfs-root", work + "/sys",
                                   // Nodes as placeholders: the same as root and unprivileged,
                                   // and no real node of this machine's devices in the tree.
                                   "--dev-root", work + "/dev", "--dev-root-placeholders",
                                   "--probe-dev-root", work + "/dev",
                                   "--users-root", work + "/users", "--rules-shell", rules_shell,
                                   "--config", config,
                                   // One event at a time: the manifest's order of module loads
                                   // and commands is then the same on every run.
                                   "--children-max", "1", "--reorder-timeout", "1",
                                   // Only the requested files, copied there (StageFirmware);
                                   // none: every request is answered "missing".
                                   "--firmware-root", work + "/firmware", "--log-level", "info"};
  uint64_t first_seqnum = UINT64_MAX;
  for (const RecordedEvent& env : recording.events) {
    for (const auto& [key, value] : env) {
      uint64_t n = 0;
      if (key == "SEQNUM" && absl::SimpleAtoi(value, &n)) first_seqnum = std::min(first_seqnum, n);
    }
  }
  if (first_seqnum != UINT64_MAX) {
    argv.insert(argv.end(), {"--expect-seqnum", absl::StrCat(first_seqnum)});
  }
  const std::string modules_log = work + "/modules.log";
  if (o.modules_root.empty()) {
    argv.push_back("--no-modules");
  } else {
    argv.insert(argv.end(), {"--modules-root", o.modules_root, "--kernel-version",
                             recording.kernel, "--modules-dry-run-log", modules_log,
                             "--modules-serial", "--kernel-cmdline", ""});
  }
  if (!o.exec.empty()) {
    std::string programs;
    for (const std::string& p : o.exec) absl::StrAppend(&programs, " ", ShellQuote(p));
    const std::string exec_wrapper = work + "/exec-handler";
    HOTRING_RETURN_IF_ERROR(WriteWholeFile(
        exec_wrapper,
        absl::StrCat("#!/bin/sh\nexec ", ShellQuote(self), " replay --run ", ShellQuote(runs),
                     " exec", programs, " -- \"$@\"\n"),
        0755));
    argv.insert(argv.end(), {"--exec", exec_wrapper});
  }
  Manifest manifest;
  {
    HOTRING_ASSIGN_OR_RETURN(DaemonChild daemon,
                             StartDaemon(argv, work + "/daemon.log", absl::Seconds(30)));
    HOTRING_RETURN_IF_ERROR(SendEvents(socket, recording, o.timeout));
    const absl::Status settled = Settle(socket, o.timeout);
    if (!settled.ok()) {
      manifest.problems.push_back(absl::StrCat("events not handled: ", settled.message()));
    }
    const std::string exit = io::process::DescribeWaitStatus(daemon.Terminate(absl::Seconds(30)));
    if (exit != "exit 0") manifest.problems.push_back(absl::StrCat("daemon ", exit));
  }
  HOTRING_ASSIGN_OR_RETURN(manifest.dev, ListDevRoot(work + "/dev", {::geteuid(), ::getegid()}));
  for (const FirmwareRequest& request : FirmwareRequests(recording)) {
    HOTRING_ASSIGN_OR_RETURN(std::string outcome, FirmwareOutcomeIn(work + "/sys", request));
    manifest.firmware.emplace_back(request.name, std::move(outcome));
  }
  if (!o.modules_root.empty()) {
    absl::StatusOr<std::string> log = ReadWholeFile(modules_log, 16 << 20);
    if (log.ok()) {
      HOTRING_ASSIGN_OR_RETURN(manifest.modules, ModulesFromDryRunLog(*log, o.modules_root));
    } else if (!absl::IsNotFound(log.status())) {
      return log.status();
    }
  }
  std::unique_ptr<DIR, DirCloser> dir(::opendir(runs.c_str()));
  if (!dir) return ErrnoStatus(absl::StrCat("opendir(", runs, ")"));
  while (const dirent* e = ::readdir(dir.get())) {
    if (!absl::StartsWith(e->d_name, "run-")) continue;
    HOTRING_ASSIGN_OR_RETURN(const std::string text,
                             ReadWholeFile(absl::StrCat(runs, "/", e->d_name), 1 << 20));
    absl::StatusOr<CommandRun> run = ParseRunRecord(text);
    if (!run.ok()) {
      return absl::InternalError(absl::StrCat(e->d_name, ":", run.status().message()));
    }
    manifest.runs.push_back(std::move(*run));
  }
  return FormatManifest(manifest, work);
}

// --- record ----------------------------------------------------------------------------------

}  // namespace

int RecordCommand(const std::vector<std::string>& args) {
  RecordOptions options;
  std::string out;
  FlagSet flags(
      "record",
      "usage: hotring record --out FILE [options]\n"
      "  Records what `hotring replay` needs about this machine: every device a coldplug walk of\n"
      "  sysfs finds (uevent, dev, modalias, subsystem and driver links), the coldplug uevents,\n"
      "  uname -r, the loaded modules, /etc/passwd and /etc/group. Reads only; writes FILE.");
  flags.String("--out", "FILE", &out, "the recording ('-': stdout)")
      .String("--sysfs-root", "DIR", &options.sysfs_root, "default /sys")
      .String("--proc-root", "DIR", &options.proc_root, "where `modules` is read (default /proc)")
      .String("--etc-root", "DIR", &options.etc_root,
              "where passwd and group are read (default /etc)")
      .Value("--kernel-version", "V", "instead of uname -r", [&options](absl::string_view v) {
        if (!IsSafeName(v)) return absl::InvalidArgumentError("not a release name");
        options.kernel = std::string(v);
        return absl::OkStatus();
      });
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  if (out.empty()) return ReportError("record", flags.Error("--out FILE is required"));
  absl::StatusOr<RecordResult> recorded = RecordMachine(options);
  if (!recorded.ok()) return ReportError("record", recorded.status());
  for (const std::string& problem : recorded->problems) {
    std::fprintf(stderr, "hotring record: skipped %s\n", problem.c_str());
  }
  const std::string text = FormatRecording(recorded->recording);
  // What we write must be what replay reads: a fact the parser refuses is our bug, not the
  // board's, and must not surface only on the other machine.
  if (absl::StatusOr<Recording> check = ParseRecording(text); !check.ok()) {
    return ReportError("record", absl::InternalError(absl::StrCat("the recording does not parse back: ",
                                                           check.status().message())));
  }
  if (out == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else if (absl::Status written = WriteWholeFile(out, text); !written.ok()) {
    return ReportError("record", written);
  }
  std::fprintf(stderr, "hotring record: %zu devices, %zu events, %zu loaded modules, kernel %s\n",
               recorded->recording.devices.size(), recorded->recording.events.size(),
               recorded->recording.loaded_modules.size(), recorded->recording.kernel.c_str());
  return 0;
}

int ReplayCommand(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == kRunFlag) return RunWrapped(args);
  ReplayOptions o;
  absl::StatusOr<FlagsParsed> parsed = ParseReplayArgs(args, o);
  if (!parsed.ok()) return ReportError("replay", parsed.status());
  if (*parsed == FlagsParsed::kHelpShown) return 0;
  absl::StatusOr<std::string> text = ReadWholeFile(o.recording, kMaxRecordingBytes);
  if (!text.ok()) return ReportError("replay", text.status());
  absl::StatusOr<Recording> recording = ParseRecording(*text);
  if (!recording.ok()) {
    std::fprintf(stderr, "hotring replay: %s:%s\n", o.recording.c_str(),
                 std::string(recording.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<std::string> work = MakeWorkDir(o.keep_work);
  if (!work.ok()) return ReportError("replay", work.status());
  absl::StatusOr<std::string> manifest = Replay(o, *recording, *work);
  if (o.keep_work.empty()) (void)RemoveTree(*work);
  if (!manifest.ok()) return ReportError("replay", manifest.status());
  if (!o.out.empty()) {
    if (absl::Status w = WriteWholeFile(o.out, *manifest); !w.ok()) return ReportError("replay", w);
  }
  if (o.golden.empty()) {
    if (o.out.empty()) std::fwrite(manifest->data(), 1, manifest->size(), stdout);
    return 0;
  }
  if (o.update) {
    if (absl::Status w = WriteWholeFile(o.golden, *manifest); !w.ok()) return ReportError("replay", w);
    std::fprintf(stderr, "hotring replay: wrote %s\n", o.golden.c_str());
    return 0;
  }
  absl::StatusOr<std::string> golden = ReadWholeFile(o.golden, 64 << 20);
  if (!golden.ok()) return ReportError("replay", golden.status());
  const std::string diff = UnifiedDiff(o.golden, *golden, "replay", *manifest);
  if (diff.empty()) {
    std::fprintf(stderr, "hotring replay: the manifest matches %s\n", o.golden.c_str());
    return 0;
  }
  std::fprintf(stdout, "hotring replay: the manifest differs from %s:\n%s", o.golden.c_str(),
               diff.c_str());
  return 1;
}

}  // namespace hotring::hotplug::replay
