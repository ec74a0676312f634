// Faults injected into a real `hotring daemon` by real means (resource limits set on the
// running daemon with prlimit, a private mount namespace with a tiny or read-only tmpfs as the
// dev root, /dev/kmsg replaced by a file that refuses writes). Each test shows the fault
// reported (a counter and a log line naming the cause), the daemon still serving, and every
// accepted event accounted for: received == handled + failed, and once the fault is gone,
// handlers run again.
#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/daemon_assertions.h"
#include "testing/daemon_fixture.h"
#include "testing/handler_recorder.h"

namespace hotring::hotplug {
namespace {

using ::hotring::testing::ControlSender;
using ::hotring::testing::DaemonProcess;
using ::hotring::testing::HandlerRecorder;
using ::hotring::testing::HandlerRun;
using ::hotring::testing::MakeTempDir;
using ::hotring::testing::TestEvent;
using ::testing::HasSubstr;

using ::hotring::testing::Counters;
using ::hotring::testing::SendAndSettle;
using ::hotring::testing::Seqnums;

// Sets the soft limit of `resource` on `pid`, keeping its hard limit (raising a hard limit
// needs CAP_SYS_RESOURCE, which a test may not have); RLIM_INFINITY: back up to the hard limit.
void SetLimit(pid_t pid, int resource, rlim_t value) {
  const auto which = static_cast<__rlimit_resource>(resource);
  rlimit old{};
  ASSERT_EQ(::prlimit(pid, which, nullptr, &old), 0) << "prlimit: " << std::strerror(errno);
  const rlimit limit{value == RLIM_INFINITY ? old.rlim_max : value, old.rlim_max};
  ASSERT_EQ(::prlimit(pid, which, &limit, nullptr), 0) << "prlimit: " << std::strerror(errno);
}

// user + system CPU time of `pid`, in clock ticks (/proc/PID/stat fields 14 and 15).
uint64_t CpuTicks(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  const std::vector<std::string> fields = absl::StrSplit(stat.substr(paren + 2), ' ');
  uint64_t user = 0, system = 0;
  // After "(comm) ": state is field 3, so utime (14) and stime (15) are at 11 and 12.
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &user) ||
      !absl::SimpleAtoi(fields[12], &system)) {
    return 0;
  }
  return user + system;
}

// The lowest descriptor number `pid` does not hold: with RLIMIT_NOFILE at this value every
// descriptor it may have is taken.
int LowestFreeFd(pid_t pid) {
  std::set<int> open;
  for (int fd = 0; fd < 4096; ++fd) {
    struct stat st;
    if (::lstat(absl::StrCat("/proc/", pid, "/fd/", fd).c_str(), &st) == 0) open.insert(fd);
  }
  int n = 0;
  while (open.count(n) != 0) ++n;
  return n;
}

// A recorder in a directory under /tmp that every user may enter and write (the test's own
// temporary directory lies under root's home, which other users cannot enter).
std::unique_ptr<HandlerRecorder> RecorderForEveryone() {
  const char* saved = std::getenv("TEST_TMPDIR");
  const std::string restore = saved != nullptr ? saved : "";
  ::setenv("TEST_TMPDIR", "/tmp", 1);
  auto recorder = std::make_unique<HandlerRecorder>();
  if (saved != nullptr) {
    ::setenv("TEST_TMPDIR", restore.c_str(), 1);
  } else {
    ::unsetenv("TEST_TMPDIR");
  }
  const std::string dir = recorder->handler().substr(0, recorder->handler().rfind('/'));
  EXPECT_EQ(::chmod(dir.c_str(), 0777), 0);
  return recorder;
}

// A process of user `uid` that sleeps until killed: it takes one of the user's processes.
// Returns once the sleeper runs as `uid` (it counts against that user's RLIMIT_NPROC only from
// its setuid on): the parent reads a close-on-exec pipe until the child's exec closes it.
pid_t StartSleeperAs(uid_t uid) {
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    if (::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(126);
    ::execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(ready[1]);
  char byte;
  while (::read(ready[0], &byte, 1) < 0 && errno == EINTR) {
  }
  ::close(ready[0]);
  return pid;
}

void KillAndReap(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

// `hotring ARGS` run as `uid`: the client takes replies only from root or its own user.
absl::StatusOr<::hotring::testing::CommandResult> RunHotringAs(const std::string& uid,
                                                               std::vector<std::string> args) {
  std::vector<std::string> argv = {"/usr/bin/setpriv", "--reuid=" + uid, "--regid=" + uid,
                                   "--clear-groups", ::hotring::testing::HotringBinary()};
  for (std::string& arg : args) argv.push_back(std::move(arg));
  return ::hotring::testing::RunCommand(argv);
}

std::map<std::string, uint64_t> CountersAs(const std::string& uid, const DaemonProcess& daemon) {
  std::map<std::string, uint64_t> counters;
  auto r = RunHotringAs(uid, {"control", "status", "--socket", daemon.socket()});
  EXPECT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->err : r.status().ToString());
  if (!r.ok()) return counters;
  for (const absl::string_view line : absl::StrSplit(r->out, '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> kv = absl::StrSplit(line, ' ');
    uint64_t value;
    if (kv.size() == 2 && absl::SimpleAtoi(kv[1], &value)) counters[std::string(kv[0])] = value;
  }
  return counters;
}

void SendAndSettleAs(const std::string& uid, const DaemonProcess& daemon,
                     const hotplug::EnvVars& env) {
  ControlSender sender(daemon.socket());
  ASSERT_TRUE(sender.SendEvent(env));
  auto r = RunHotringAs(uid, {"settle", "--socket", daemon.socket(), "--timeout", "30"});
  ASSERT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->err : r.status().ToString())
                                           << daemon.Log();
}

// Process creation fails: the daemon's user has reached RLIMIT_NPROC (other processes of the
// same user hold every slot, so clone returns EAGAIN; root is exempt from the limit, so the
// daemon runs as an unprivileged user of its own). Events arriving meanwhile fail, each counted
// and logged with the cause; once the other processes are gone, the next events' handlers run.
TEST(DaemonFaultsTest, ProcessCreationFailingFailsTheEventAndHandlersRunAgainAfterwards) {
  const std::unique_ptr<HandlerRecorder> owned = RecorderForEveryone();
  const HandlerRecorder& recorder = *owned;
  const uid_t uid_number = 3'000'000 + static_cast<uid_t>(::getpid() % 100'000);
  const std::string uid = absl::StrCat(uid_number);
  constexpr int kLimit = 8;
  absl::StatusOr<DaemonProcess> daemon = DaemonProcess::Start(
      {.args = {"--exec", recorder.handler(), "--log-level", "info"},
       .command_prefix = {"/usr/bin/prlimit", absl::StrCat("--nproc=", kLimit, ":", kLimit),
                          "/usr/bin/setpriv", "--reuid=" + uid, "--regid=" + uid,
                          "--clear-groups"}});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  SendAndSettleAs(uid, *daemon, TestEvent(1, "/devices/nproc/1"));

  std::vector<pid_t> sleepers;
  for (int i = 0; i < kLimit; ++i) sleepers.push_back(StartSleeperAs(uid_number));
  for (uint64_t seqnum = 2; seqnum <= 4; ++seqnum) {
    SendAndSettleAs(uid, *daemon, TestEvent(seqnum, absl::StrCat("/devices/nproc/", seqnum)));
  }
  std::map<std::string, uint64_t> counters = CountersAs(uid, *daemon);
  EXPECT_EQ(counters["received"], 4u);
  EXPECT_EQ(counters["handled"], 1u);
  EXPECT_EQ(counters["failed"], 3u) << daemon->Log();
  EXPECT_THAT(daemon->Log(), HasSubstr("clone: Resource temporarily unavailable"));
  EXPECT_THAT(Seqnums(recorder.Runs()), ::testing::ElementsAre("1"));

  for (const pid_t pid : sleepers) KillAndReap(pid);
  SendAndSettleAs(uid, *daemon, TestEvent(5, "/devices/nproc/5"));
  SendAndSettleAs(uid, *daemon, TestEvent(6, "/devices/nproc/2"));
  counters = CountersAs(uid, *daemon);
  EXPECT_EQ(counters["received"], 6u);
  EXPECT_EQ(counters["handled"], 3u) << daemon->Log();
  EXPECT_EQ(counters["failed"], 3u);
  EXPECT_THAT(Seqnums(recorder.Runs()), ::testing::ElementsAre("1", "5", "6"));
  EXPECT_TRUE(daemon->Stop().ok()) << daemon->Log();
}

// Descriptors exhausted (RLIMIT_NOFILE at the daemon's lowest free descriptor): events are
// still received and answered (no new descriptor is needed for that), each handler that cannot
// get its pipes fails with the cause counted and logged, the daemon does not spin while the
// limit holds, and handlers run again once it is lifted.
TEST(DaemonFaultsTest, DescriptorsExhaustedFailHandlersWithoutSpinningAndRecover) {
  HandlerRecorder recorder;
  absl::StatusOr<DaemonProcess> daemon =
      DaemonProcess::Start({.args = {"--exec", recorder.handler(), "--log-level", "info"}});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  SendAndSettle(*daemon, TestEvent(1, "/devices/nofile/1"));

  SetLimit(daemon->pid(), RLIMIT_NOFILE, static_cast<rlim_t>(LowestFreeFd(daemon->pid())));
  for (uint64_t seqnum = 2; seqnum <= 4; ++seqnum) {
    SendAndSettle(*daemon, TestEvent(seqnum, absl::StrCat("/devices/nofile/", seqnum)));
  }
  std::map<std::string, uint64_t> counters = Counters(*daemon);
  EXPECT_EQ(counters["received"], 4u);
  EXPECT_EQ(counters["handled"], 1u);
  EXPECT_EQ(counters["failed"], 3u) << daemon->Log();
  EXPECT_THAT(daemon->Log(), HasSubstr("Too many open files"));
  // Never spin: half a second with the limit still in force costs the daemon (almost) no CPU.
  // A functional bound, not a speed goal: a busy loop would use all of it (50 ticks).
  const uint64_t before = CpuTicks(daemon->pid());
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_LE(CpuTicks(daemon->pid()) - before, 10u);

  SetLimit(daemon->pid(), RLIMIT_NOFILE, RLIM_INFINITY);
  SendAndSettle(*daemon, TestEvent(5, "/devices/nofile/5"));
  counters = Counters(*daemon);
  EXPECT_EQ(counters["received"], 5u);
  EXPECT_EQ(counters["handled"], 2u) << daemon->Log();
  EXPECT_EQ(counters["failed"], 3u);
  EXPECT_THAT(Seqnums(recorder.Runs()), ::testing::ElementsAre("1", "5"));
  EXPECT_TRUE(daemon->Stop().ok()) << daemon->Log();
}

// A private mount namespace for this test process; the daemons it starts inherit it. Nothing
// mounted here is seen by the rest of the machine.
void EnterPrivateMountNamespace() {
  ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << "unshare(CLONE_NEWNS): " << std::strerror(errno);
  ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0);
}

hotplug::EnvVars BlockEvent(uint64_t seqnum, const std::string& name, int minor) {
  return {{"ACTION", "add"},
          {"DEVPATH", "/devices/virtual/block/" + name},
          {"SUBSYSTEM", "block"},
          {"DEVNAME", name},
          {"MAJOR", "8"},
          {"MINOR", absl::StrCat(minor)},
          {"SEQNUM", absl::StrCat(seqnum)}};
}

bool IsBlockNode(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode);
}

// The rules stage on a full /dev (a tmpfs out of inodes) and on a read-only one: each node that
// cannot be made is a logged, counted error (rules_node_errors) naming the cause; the event's
// later links still run; the daemon serves on, and makes nodes again when /dev can take them.
TEST(DaemonFaultsTest, FullAndReadOnlyDevAreCountedErrorsAndNodesComeBack) {
  EnterPrivateMountNamespace();
  absl::StatusOr<std::string> base = MakeTempDir("dev_faults");
  ASSERT_TRUE(base.ok()) << base.status();
  const std::string dev = *base + "/dev";
  ASSERT_EQ(::mkdir(dev.c_str(), 0755), 0);
  // Room for the root directory and two nodes.
  ASSERT_EQ(::mount("tmpfs", dev.c_str(), "tmpfs", 0, "nr_inodes=3,mode=0755"), 0)
      << std::strerror(errno);
  std::ofstream(*base + "/mdev.conf") << "sd[a-z] 0:6 0640\n";
  HandlerRecorder recorder;
  absl::StatusOr<DaemonProcess> daemon = DaemonProcess::Start(
      {.args = {"--config", *base + "/mdev.conf", "--dev-root", dev, "--sysfs-root",
                *base + "/sys", "--exec", recorder.handler(), "--log-level", "info"}});
  ASSERT_TRUE(daemon.ok()) << daemon.status();

  SendAndSettle(*daemon, BlockEvent(1, "sda", 0));
  SendAndSettle(*daemon, BlockEvent(2, "sdb", 16));
  SendAndSettle(*daemon, BlockEvent(3, "sdc", 32));  // no inode left
  EXPECT_TRUE(IsBlockNode(dev + "/sda"));
  EXPECT_TRUE(IsBlockNode(dev + "/sdb"));
  EXPECT_FALSE(IsBlockNode(dev + "/sdc"));
  std::map<std::string, uint64_t> counters = Counters(*daemon);
  EXPECT_EQ(counters["rules_nodes_made"], 2u);
  EXPECT_EQ(counters["rules_node_errors"], 1u) << daemon->Log();
  EXPECT_THAT(daemon->Log(), HasSubstr("No space left on device"));

  // Read-only: remount, then a new device.
  ASSERT_EQ(::mount(nullptr, dev.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, "nr_inodes=16"), 0)
      << std::strerror(errno);
  SendAndSettle(*daemon, BlockEvent(4, "sdd", 48));
  EXPECT_FALSE(IsBlockNode(dev + "/sdd"));
  counters = Counters(*daemon);
  EXPECT_EQ(counters["rules_node_errors"], 2u) << daemon->Log();
  EXPECT_THAT(daemon->Log(), HasSubstr("Read-only file system"));

  // Writable and roomy again: the next device gets its node.
  ASSERT_EQ(::mount(nullptr, dev.c_str(), nullptr, MS_REMOUNT, "nr_inodes=16"), 0)
      << std::strerror(errno);
  SendAndSettle(*daemon, BlockEvent(5, "sde", 64));
  EXPECT_TRUE(IsBlockNode(dev + "/sde"));
  counters = Counters(*daemon);
  EXPECT_EQ(counters["received"], 5u);
  EXPECT_EQ(counters["handled"] + counters["failed"], 5u);
  EXPECT_EQ(counters["rules_nodes_made"], 3u);
  // The rules' errors do not stop the chain: the --exec handler saw every event.
  EXPECT_THAT(Seqnums(recorder.Runs()), ::testing::ElementsAre("1", "2", "3", "4", "5"));
  EXPECT_TRUE(daemon->Stop().ok()) << daemon->Log();
  ::umount2(dev.c_str(), MNT_DETACH);
}

// /dev/kmsg unwritable. Opening it fails (a read-only file in its place): the daemon says so on
// stderr and logs there. Writes to it fail (/dev/full in its place, ENOSPC): the daemon moves
// its log to stderr and says why, instead of losing every later line. Either way it serves.
TEST(DaemonFaultsTest, UnwritableKmsgMovesTheLogToStderrAndTheDaemonServes) {
  EnterPrivateMountNamespace();
  absl::StatusOr<std::string> base = MakeTempDir("kmsg_faults");
  ASSERT_TRUE(base.ok()) << base.status();
  const std::string readonly = *base + "/kmsg";
  std::ofstream(readonly) << "";
  ASSERT_EQ(::mount(readonly.c_str(), "/dev/kmsg", nullptr, MS_BIND, nullptr), 0)
      << std::strerror(errno);
  ASSERT_EQ(::mount(nullptr, "/dev/kmsg", nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr), 0)
      << std::strerror(errno);
  {
    HandlerRecorder recorder;
    absl::StatusOr<DaemonProcess> daemon = DaemonProcess::Start(
        {.args = {"--log-kmsg", "--exec", recorder.handler(), "--log-level", "info"}});
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    SendAndSettle(*daemon, TestEvent(1, "/devices/kmsg/1"));
    EXPECT_EQ(Counters(*daemon)["handled"], 1u);
    EXPECT_THAT(daemon->Log(), HasSubstr("cannot log to /dev/kmsg"));
    EXPECT_THAT(daemon->Log(), HasSubstr("Read-only file system"));
    EXPECT_EQ(recorder.Runs().size(), 1u);
    EXPECT_TRUE(daemon->Stop().ok()) << daemon->Log();
  }
  ASSERT_EQ(::umount2("/dev/kmsg", 0), 0);
  ASSERT_EQ(::mount("/dev/full", "/dev/kmsg", nullptr, MS_BIND, nullptr), 0)
      << std::strerror(errno);
  {
    HandlerRecorder recorder;
    absl::StatusOr<DaemonProcess> daemon = DaemonProcess::Start(
        {.args = {"--log-kmsg", "--exec", recorder.handler(), "--log-level", "info"}});
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    SendAndSettle(*daemon, TestEvent(1, "/devices/kmsg/1"));
    SendAndSettle(*daemon, TestEvent(2, "/devices/kmsg/2"));
    EXPECT_EQ(Counters(*daemon)["handled"], 2u);
    const std::string log = daemon->Log();
    EXPECT_THAT(log, HasSubstr("cannot write to /dev/kmsg (No space left on device)"));
    // The lines after the failure are on stderr: the event the daemon finished later is there.
    EXPECT_THAT(log, HasSubstr("DEVPATH=/devices/kmsg/2"));
    EXPECT_EQ(recorder.Runs().size(), 2u);
    EXPECT_TRUE(daemon->Stop().ok()) << daemon->Log();
  }
  ::umount2("/dev/kmsg", MNT_DETACH);
}

}  // namespace
}  // namespace hotring::hotplug
