// The udev rules link on a fake sysfs, with a dev root, a run directory and rules in the test's
// temporary directory: nodes' owner and mode, links and their claims between two devices with
// priorities, the database entry, RUN's order and environment (testing/record_handler), a RUN
// that hangs killed at event_timeout, kmod through the modules stage's interface, static nodes,
// reloads that keep the good rules of a broken file, watched nodes (OPTIONS+="watch"), and the
// libudev announcement on group 2 (in a private network namespace).
#include "hotplug/udevrules/udev_rules_handler.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "core/log.h"
#include "core/task_scope.h"
#include "io/ops.h"
#include "io/reactor.h"
#include "testing/fake_sysfs.h"
#include "testing/handler_recorder.h"
#include "testing/udev_monitor_listener.h"
#include "testing/uevent_injector.h"

namespace hotring::hotplug::udevrules {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::FakeSysfs;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

std::string Readlink(const std::string& path) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// The database file without its I: line (a clock reading).
std::string WithoutInit(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (!absl::StartsWith(line, "I:")) absl::StrAppend(&out, line, "\n");
  }
  return out;
}

// Records what `kmod load` asked for.
class FakeModules final : public ModuleLoading {
 public:
  Task<absl::Status> LoadModules(io::Reactor& reactor, absl::Span<const std::string> names) override {
    for (const std::string& n : names) asked.push_back(n);
    co_return absl::OkStatus();
  }
  std::vector<std::string> asked;
};

class UdevRulesHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::EnterPrivateNetworkNamespace().ok());
    absl::StatusOr<FakeSysfs> sys = FakeSysfs::Create();
    ASSERT_TRUE(sys.ok());
    sys_.emplace(std::move(*sys));
    const char* t = std::getenv("TEST_TMPDIR");
    base_ = absl::StrCat(t != nullptr ? t : "/tmp", "/udevrules_",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(std::system(absl::StrCat("rm -rf ", base_, " && mkdir -p ", base_, "/dev ", base_, "/run ",
                                       base_, "/rules ", base_, "/etc").c_str()),
              0);
    WriteFile(base_ + "/etc/passwd", "root:x:0:0::/root:/bin/sh\nmodem:x:1000:1000::/:/bin/false\n");
    WriteFile(base_ + "/etc/group", "root:x:0:\ndialout:x:20:\nvideo:x:44:\n");
    absl::StatusOr<std::unique_ptr<io::Reactor>> r = io::Reactor::Create();
    ASSERT_TRUE(r.ok());
    reactor_ = std::move(*r);
    absl::StatusOr<testing::UdevMonitorListener> listener = testing::UdevMonitorListener::Open();
    ASSERT_TRUE(listener.ok()) << listener.status();
    listener_.emplace(std::move(*listener));
  }
  void TearDown() override { handler_.reset(); }

  void Rules(const std::string& name, const std::string& text) { WriteFile(base_ + "/rules/" + name, text); }

  void MakeHandler(absl::Duration event_timeout = absl::Seconds(30)) {
    UdevRulesHandler::Options o;
    o.rules_dirs = {base_ + "/rules"};
    o.udev_conf = "";
    o.run_dir = base_ + "/run";
    o.dev_root = base_ + "/dev";
    o.sysfs_root = sys_->root();
    o.kernel_cmdline = "";
    o.users_root = base_;
    o.rename_interfaces = false;
    o.event_timeout = event_timeout;
    o.kill_grace = absl::Milliseconds(200);
    o.modules = &modules_;
    o.hwdb_paths = {base_ + "/etc/hwdb.bin"};  // none: the hwdb builtin fails
    o.network_dirs = {base_ + "/network"};
    o.resolve_names = resolve_names_;
    absl::StatusOr<std::unique_ptr<UdevRulesHandler>> h = UdevRulesHandler::Create(std::move(o));
    ASSERT_TRUE(h.ok()) << h.status();
    handler_ = std::move(*h);
  }

  std::optional<ResolveNames> resolve_names_;  // udevd's --resolve-names, for MakeHandler

  // As the daemon starts an event: Starting, then Handle.
  void Handle(const Event& event) {
    handler_->Starting(event);
    absl::StatusOr<HandlerResult> r = reactor_->BlockOn(handler_->Handle(*reactor_, event));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->outcome, HandlerOutcome::kHandled);
  }

  // A tty device in sysfs and its node in the dev root, as devtmpfs leaves it (root, 0600).
  void AddTty(const std::string& name, int minor, int major = 188) {
    ASSERT_TRUE(sys_->AddDevice({.devpath = TtyPath(name),
                                 .subsystem = "tty",
                                 .uevent = {{"MAJOR", absl::StrCat(major)}, {"MINOR", absl::StrCat(minor)},
                                            {"DEVNAME", name}}}).ok());
    const std::string node = absl::StrCat(base_, "/dev/", name);
    ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0600, makedev(major, minor)), 0) << node;
  }
  static std::string TtyPath(const std::string& name) { return absl::StrCat("/devices/virtual/tty/", name); }
  Event TtyEvent(const std::string& action, const std::string& name, int minor, uint64_t seq, int major = 188) {
    absl::StatusOr<Event> e = testing::MakeUevent(
        action, TtyPath(name), "tty", seq,
        {{"MAJOR", absl::StrCat(major)}, {"MINOR", absl::StrCat(minor)}, {"DEVNAME", name}});
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *e : Event{};
  }

  std::vector<std::map<std::string, std::string>> Announcements() {
    absl::StatusOr<std::vector<std::map<std::string, std::string>>> got = listener_->ReceiveAnnouncements();
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? *std::move(got) : std::vector<std::map<std::string, std::string>>{};
  }

  uint64_t Counter(const std::string& name) {
    std::vector<std::pair<std::string, uint64_t>> counters;
    handler_->AppendCounters(counters);
    for (const auto& [k, v] : counters) {
      if (k == name) return v;
    }
    ADD_FAILURE() << "no counter " << name;
    return 0;
  }

  std::string Dev(const std::string& rel) const { return absl::StrCat(base_, "/dev/", rel); }
  std::string Run(const std::string& rel) const { return absl::StrCat(base_, "/run/", rel); }

  std::optional<FakeSysfs> sys_;
  std::string base_;
  std::unique_ptr<io::Reactor> reactor_;
  FakeModules modules_;
  std::unique_ptr<UdevRulesHandler> handler_;
  std::optional<testing::UdevMonitorListener> listener_;
};

TEST_F(UdevRulesHandlerTest, NodeOwnerModeLinksDatabaseAndAnnouncement) {
  Rules("50-board.rules",
        "KERNEL==\"ttyUSB0\", OWNER=\"modem\", GROUP=\"dialout\", MODE=\"0640\", "
        "SYMLINK+=\"modem gps/primary\", ENV{ID_BOARD_ROLE}=\"modem\", TAG+=\"board\"\n");
  AddTty("ttyUSB0", 0);
  MakeHandler();
  Handle(TtyEvent("add", "ttyUSB0", 0, 10));
  struct stat st;
  ASSERT_EQ(::lstat(Dev("ttyUSB0").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_gid, 20u);
  EXPECT_EQ(Readlink(Dev("modem")), "ttyUSB0");
  EXPECT_EQ(Readlink(Dev("gps/primary")), "../ttyUSB0");
  EXPECT_EQ(Readlink(Dev("char/188:0")), "../ttyUSB0");
  // The claims, as udevd 252 writes them.
  EXPECT_EQ(Readlink(Run("links/modem/c188:0")), "0:/dev/ttyUSB0");
  EXPECT_EQ(Readlink(Run("links/gps\\x2fprimary/c188:0")), "0:/dev/ttyUSB0");
  // Idle again: the claim directories keep their claims but not their locks (udevd 252.39's
  // udev_node_cleanup, as its /run/udev showed in the guest comparison).
  EXPECT_FALSE(Exists(Run("links/modem/.lock")));
  EXPECT_FALSE(Exists(Run("links/gps\\x2fprimary/.lock")));
  EXPECT_EQ(WithoutInit(ReadFile(Run("data/c188:0"))),
            "S:modem\nS:gps/primary\nE:ID_BOARD_ROLE=modem\nG:board\nQ:board\nV:1\n");
  EXPECT_THAT(ReadFile(Run("data/c188:0")), HasSubstr("\nI:"));
  EXPECT_TRUE(Exists(Run("tags/board/c188:0")));
  const auto announced = Announcements();
  ASSERT_EQ(announced.size(), 1u);
  EXPECT_EQ(announced[0].at("ACTION"), "add");
  EXPECT_EQ(announced[0].at("DEVNAME"), "/dev/ttyUSB0");
  EXPECT_EQ(announced[0].at("ID_BOARD_ROLE"), "modem");
  EXPECT_EQ(announced[0].at("DEVLINKS"), "/dev/modem /dev/gps/primary");
  EXPECT_EQ(announced[0].at("TAGS"), ":board:");
  EXPECT_EQ(announced[0].at("CURRENT_TAGS"), ":board:");
  EXPECT_EQ(announced[0].count("USEC_INITIALIZED"), 1u);

  // A change keeps the initialization time; remove takes the links, the claims, the tags and the
  // entry (and, on a dev root that is no devtmpfs, the node this stage may have made).
  const std::string init = ReadFile(Run("data/c188:0"));
  Handle(TtyEvent("change", "ttyUSB0", 0, 11));
  EXPECT_EQ(ReadFile(Run("data/c188:0")), init);
  // A node changed behind the daemon's back gets the rules' owner and mode again at the next
  // event; one left as the rules want it is counted as set and left alone.
  const uint64_t set = Counter("udevrules_nodes_set");
  ASSERT_EQ(::chmod(Dev("ttyUSB0").c_str(), 0666), 0);
  ASSERT_EQ(::chown(Dev("ttyUSB0").c_str(), 0, 0), 0);
  Handle(TtyEvent("change", "ttyUSB0", 0, 13));
  ASSERT_EQ(::lstat(Dev("ttyUSB0").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_gid, 20u);
  Handle(TtyEvent("change", "ttyUSB0", 0, 14));
  ASSERT_EQ(::lstat(Dev("ttyUSB0").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(Counter("udevrules_nodes_set"), set + 2);
  Handle(TtyEvent("remove", "ttyUSB0", 0, 15));
  EXPECT_FALSE(Exists(Dev("modem")));
  EXPECT_FALSE(Exists(Dev("gps"))) << "empty link directories go too";
  EXPECT_FALSE(Exists(Dev("char/188:0")));
  EXPECT_FALSE(Exists(Run("links/modem/c188:0")));
  EXPECT_FALSE(Exists(Run("data/c188:0")));
  EXPECT_FALSE(Exists(Run("tags/board/c188:0")));
  EXPECT_FALSE(Exists(Dev("ttyUSB0")));
  const auto after = Announcements();
  ASSERT_EQ(after.size(), 4u);
  EXPECT_EQ(after[3].at("ACTION"), "remove");
  EXPECT_EQ(after[3].at("ID_BOARD_ROLE"), "modem") << "remove carries what the database had";
  EXPECT_EQ(Counter("udevrules_db_removed"), 1u);
}

// Two devices claim one link: the higher link_priority wins; on a tie the device being added
// takes it; when the owner goes, the link falls back to the other claim, and with no claim
// left it is removed.
TEST_F(UdevRulesHandlerTest, TwoDevicesClaimOneLink) {
  Rules("50-gps.rules",
        "SUBSYSTEM==\"tty\", KERNEL==\"ttyUSB*\", SYMLINK+=\"gps\"\n"
        "KERNEL==\"ttyUSB1\", OPTIONS+=\"link_priority=10\"\n");
  AddTty("ttyUSB0", 0);
  AddTty("ttyUSB1", 1);
  AddTty("ttyUSB2", 2);
  MakeHandler();
  Handle(TtyEvent("add", "ttyUSB1", 1, 1));
  EXPECT_EQ(Readlink(Dev("gps")), "ttyUSB1");
  Handle(TtyEvent("add", "ttyUSB0", 0, 2));
  EXPECT_EQ(Readlink(Dev("gps")), "ttyUSB1") << "priority 10 beats 0";
  EXPECT_EQ(Readlink(Run("links/gps/c188:1")), "10:/dev/ttyUSB1");
  EXPECT_THAT(ReadFile(Run("data/c188:1")), HasSubstr("S:gps\nL:10\n"));
  Handle(TtyEvent("add", "ttyUSB2", 2, 3));
  EXPECT_EQ(Readlink(Dev("gps")), "ttyUSB1");
  Handle(TtyEvent("remove", "ttyUSB1", 1, 4));
  // ttyUSB0 and ttyUSB2 tie at 0: the first claim by name.
  EXPECT_EQ(Readlink(Dev("gps")), "ttyUSB0");
  Handle(TtyEvent("change", "ttyUSB2", 2, 5));
  EXPECT_EQ(Readlink(Dev("gps")), "ttyUSB2") << "on a tie the device being handled takes it";
  Handle(TtyEvent("remove", "ttyUSB2", 2, 6));
  EXPECT_EQ(Readlink(Dev("gps")), "ttyUSB0");
  Handle(TtyEvent("remove", "ttyUSB0", 0, 7));
  EXPECT_FALSE(Exists(Dev("gps")));
  EXPECT_FALSE(Exists(Run("links/gps"))) << "a claim directory left empty goes once idle";
  EXPECT_EQ(Counter("udevrules_links_removed"), 1u);
}

// A link that is a node or a file is never replaced; a link that would leave /dev is refused.
TEST_F(UdevRulesHandlerTest, LinksNeverReplaceANodeNorLeaveTheDevRoot) {
  Rules("50-bad.rules", "KERNEL==\"ttyUSB0\", SYMLINK+=\"ttyS9 ../outside x/../../y $env{EVIL}\"\n");
  AddTty("ttyUSB0", 0);
  ASSERT_EQ(::mknod(Dev("ttyS9").c_str(), S_IFCHR | 0600, makedev(4, 73)), 0);
  MakeHandler();
  Event e = TtyEvent("add", "ttyUSB0", 0, 1);
  e.env.emplace_back("EVIL", "../../etc/passwd");
  Handle(e);
  struct stat st;
  ASSERT_EQ(::lstat(Dev("ttyS9").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the node of another device stays";
  EXPECT_FALSE(Exists(base_ + "/outside"));
  EXPECT_FALSE(Exists(base_ + "/y"));
  EXPECT_FALSE(Exists(base_ + "/etc/passwd.lnk"));
  EXPECT_EQ(ReadFile(base_ + "/etc/passwd").substr(0, 4), "root");
  EXPECT_GE(Counter("udevrules_links_refused"), 3u);
}

TEST_F(UdevRulesHandlerTest, RunProgramsInOrderWithTheDevicesEnvironment) {
  testing::HandlerRecorder recorder;
  const std::string script = base_ + "/env.sh";
  WriteFile(script, absl::StrCat("#!/bin/sh\necho \"$1 $ID_BOARD_ROLE $DEVNAME $DEVLINKS $SEQNUM\" >> ", base_,
                                 "/env.log\n"));
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  Rules("50-run.rules",
        absl::StrCat("KERNEL==\"ttyUSB0\", ENV{ID_BOARD_ROLE}=\"console\", SYMLINK+=\"console0\", RUN+=\"",
                     recorder.handler(), " first\"\n",
                     "KERNEL==\"ttyUSB0\", RUN+=\"", script, " second;rm -rf /\"\n",
                     "KERNEL==\"ttyUSB0\", RUN+=\"", recorder.handler(), " third\"\n"));
  AddTty("ttyUSB0", 0);
  MakeHandler();
  Handle(TtyEvent("add", "ttyUSB0", 0, 42));
  const std::vector<testing::HandlerRun> runs = recorder.Runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].subsystem, "first");
  EXPECT_EQ(runs[1].subsystem, "third");
  EXPECT_EQ(runs[0].seqnum, "42");
  EXPECT_THAT(runs[0].env_keys, HasSubstr("DEVLINKS"));
  EXPECT_THAT(runs[0].env_keys, HasSubstr("USEC_INITIALIZED"));
  EXPECT_LE(runs[0].end, runs[1].start) << "one after the other";
  // No shell: ';' and what follows are the program's argument.
  EXPECT_EQ(ReadFile(base_ + "/env.log"), "second;rm console /dev/ttyUSB0 /dev/console0 42\n");
  // RUN comes after the database write: the entry existed when the programs ran.
  EXPECT_TRUE(Exists(Run("data/c188:0")));
  EXPECT_EQ(Counter("udevrules_run_programs"), 3u);
  EXPECT_EQ(Counter("udevrules_run_failed"), 0u);
}

TEST_F(UdevRulesHandlerTest, AHangingRunIsKilledAtEventTimeout) {
  testing::HandlerRecorder recorder;
  Rules("50-hang.rules", absl::StrCat("KERNEL==\"ttyUSB0\", ENV{HANG}=\"stubborn\", RUN+=\"", recorder.handler(),
                                      " hang\"\n"));
  AddTty("ttyUSB0", 0);
  MakeHandler(absl::Milliseconds(300));
  Handle(TtyEvent("add", "ttyUSB0", 0, 1));
  EXPECT_EQ(Counter("udevrules_run_timed_out"), 1u);
  // Announced all the same, after the kill.
  EXPECT_EQ(Announcements().size(), 1u);
}

TEST_F(UdevRulesHandlerTest, KmodLoadGoesThroughTheModulesStage) {
  Rules("80-drivers.rules",
        "ACTION!=\"add\", GOTO=\"drivers_end\"\n"
        "ENV{MODALIAS}==\"?*\", RUN{builtin}+=\"kmod load $env{MODALIAS}\"\n"
        "LABEL=\"drivers_end\"\n");
  ASSERT_TRUE(sys_->AddDevice({.devpath = "/devices/pci0000:00/0000:00:03.0", .subsystem = "pci",
                               .kind = FakeSysfs::Kind::kBus}).ok());
  MakeHandler();
  absl::StatusOr<Event> e = testing::MakeUevent("add", "/devices/pci0000:00/0000:00:03.0", "pci", 1,
                                                {{"MODALIAS", "pci:v00008086d0000100Esv*"}});
  ASSERT_TRUE(e.ok());
  Handle(*e);
  EXPECT_THAT(modules_.asked, ElementsAre("pci:v00008086d0000100Esv*"));
  e->action = "change";
  Handle(*e);
  EXPECT_EQ(modules_.asked.size(), 1u);
  EXPECT_EQ(Counter("udevrules_kmod_loads"), 1u);
}

TEST_F(UdevRulesHandlerTest, StaticNodesGetTheirPermissionsAndTagsAtStart) {
  Rules("50-static.rules",
        "SUBSYSTEM==\"misc\", KERNEL==\"fuse\", OPTIONS+=\"static_node=fuse\", GROUP=\"video\", TAG+=\"uaccess\"\n");
  ASSERT_EQ(::mknod(Dev("fuse").c_str(), S_IFCHR | 0600, makedev(10, 229)), 0);
  MakeHandler();
  struct stat st;
  ASSERT_EQ(::lstat(Dev("fuse").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 44u);
  EXPECT_EQ(st.st_mode & 07777, 0660u) << "a group without a mode means 0660";
  EXPECT_EQ(Readlink(Run("static_node-tags/uaccess/fuse")), "/dev/fuse");
}

// initramfs-tools starts udevd with --resolve-names=never, over images whose /etc/group lacks
// the groups of Debian's rules: GROUP= is then left out without a word, MODE still applies.
TEST_F(UdevRulesHandlerTest, ResolveNamesNeverDropsGroupNamesQuietly) {
  Rules("50-a.rules", "KERNEL==\"ttyUSB0\", GROUP=\"cdrom\", MODE=\"0640\"\n");
  AddTty("ttyUSB0", 0);
  MakeHandler();
  EXPECT_EQ(Counter("udevrules_rule_problems"), 1u) << "early: the unknown group is said";
  handler_.reset();
  resolve_names_ = ResolveNames::kNever;
  MakeHandler();
  EXPECT_EQ(Counter("udevrules_rule_problems"), 0u);
  Handle(TtyEvent("add", "ttyUSB0", 0, 1));
  struct stat st;
  ASSERT_EQ(::lstat(Dev("ttyUSB0").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_F(UdevRulesHandlerTest, ReloadKeepsTheGoodRulesOfABrokenFile) {
  Rules("50-a.rules", "KERNEL==\"ttyUSB0\", SYMLINK+=\"first\"\n");
  AddTty("ttyUSB0", 0);
  MakeHandler();
  Handle(TtyEvent("add", "ttyUSB0", 0, 1));
  EXPECT_EQ(Readlink(Dev("first")), "ttyUSB0");
  Rules("50-a.rules",
        "KERNEL==\"ttyUSB0\", SYMLINK+=\"second\"\n"
        "KERNEL==\"ttyUSB0\", BOGUS=\"x\"\n");
  EXPECT_TRUE(handler_->Reload().ok());
  EXPECT_EQ(Counter("udevrules_rule_problems"), 1u);
  Handle(TtyEvent("change", "ttyUSB0", 0, 2));
  EXPECT_FALSE(Exists(Dev("first"))) << "a link the device no longer has goes";
  EXPECT_EQ(Readlink(Dev("second")), "ttyUSB0");
  EXPECT_EQ(Counter("udevrules_reloads"), 1u);
}

// NAME on an interface: the announcement and the database carry the new name (the rename
// itself is rtnetlink's, tested in io/rtnetlink_test).
TEST_F(UdevRulesHandlerTest, NetworkNameGoesIntoTheDevice) {
  Rules("70-names.rules", "SUBSYSTEM==\"net\", ACTION==\"add\", ATTR{address}==\"52:54:00:12:34:56\", NAME=\"lan0\"\n");
  ASSERT_TRUE(sys_->AddDevice({.devpath = "/devices/virtual/net/eth7",
                               .subsystem = "net",
                               .uevent = {{"INTERFACE", "eth7"}, {"IFINDEX", "7"}},
                               .attributes = {{"address", "52:54:00:12:34:56\n"}}}).ok());
  MakeHandler();
  absl::StatusOr<Event> e = testing::MakeUevent("add", "/devices/virtual/net/eth7", "net", 1,
                                                {{"INTERFACE", "eth7"}, {"IFINDEX", "7"}});
  ASSERT_TRUE(e.ok());
  Handle(*e);
  const auto announced = Announcements();
  ASSERT_EQ(announced.size(), 1u);
  EXPECT_EQ(announced[0].at("INTERFACE"), "lan0");
  EXPECT_EQ(announced[0].at("DEVPATH"), "/devices/virtual/net/lan0");
  EXPECT_EQ(Counter("udevrules_renamed"), 1u);
  EXPECT_TRUE(Exists(Run("data/n7")));
}

// A disk's own by-diskseq link is made and removed directly: no claim directory, as udevd
// 252.39 in the guest comparison (by-diskseq/12 of vda there); its by-path link has one.
TEST_F(UdevRulesHandlerTest, ADisksOwnDiskseqLinkHasNoClaim) {
  Rules("60-persistent-storage.rules",
        "ENV{DISKSEQ}==\"?*\", ENV{DEVTYPE}!=\"partition\", SYMLINK+=\"disk/by-diskseq/$env{DISKSEQ}\"\n"
        "ENV{DISKSEQ}==\"?*\", SYMLINK+=\"disk/by-path/virtio-pci-0000:00:07.0\"\n");
  const std::string path = "/devices/pci0000:00/0000:00:07.0/virtio2/block/vda";
  const std::vector<std::pair<std::string, std::string>> uevent = {
      {"MAJOR", "254"}, {"MINOR", "0"}, {"DEVNAME", "vda"}, {"DEVTYPE", "disk"}, {"DISKSEQ", "12"}};
  ASSERT_TRUE(sys_->AddDevice({.devpath = path, .subsystem = "block", .uevent = uevent}).ok());
  ASSERT_EQ(::mknod(Dev("vda").c_str(), S_IFBLK | 0660, makedev(254, 0)), 0);
  MakeHandler();
  absl::StatusOr<Event> add = testing::MakeUevent("add", path, "block", 1, uevent);
  ASSERT_TRUE(add.ok());
  Handle(*add);
  EXPECT_EQ(Readlink(Dev("disk/by-diskseq/12")), "../../vda");
  EXPECT_FALSE(Exists(Run("links/disk\\x2fby-diskseq\\x2f12")));
  EXPECT_EQ(Readlink(Dev("disk/by-path/virtio-pci-0000:00:07.0")), "../../vda");
  EXPECT_EQ(Readlink(Run("links/disk\\x2fby-path\\x2fvirtio-pci-0000:00:07.0/b254:0")), "0:/dev/vda");
  EXPECT_THAT(ReadFile(Run("data/b254:0")), HasSubstr("S:disk/by-diskseq/12\n"));
  absl::StatusOr<Event> remove = testing::MakeUevent("remove", path, "block", 2, uevent);
  ASSERT_TRUE(remove.ok());
  Handle(*remove);
  EXPECT_FALSE(Exists(Dev("disk/by-diskseq/12")));
  EXPECT_FALSE(Exists(Dev("disk")));
  EXPECT_FALSE(Exists(Run("links/disk\\x2fby-diskseq\\x2f12")));
  EXPECT_FALSE(Exists(Run("links/disk\\x2fby-path\\x2fvirtio-pci-0000:00:07.0")));
}

// The kernel's `move` of a renamed interface starts from the uevent: 99-systemd.rules'
// SYSTEMD_ALIAS+= gives the alias once, as systemd-udevd 252 did for ens3 and ens4 in the guest
// comparison (guest_compare.sh --rules: "SYSTEMD_ALIAS=/sys/subsystem/net/devices/ens3"), not
// appended to the value the add event stored. The tags of the add stay in G: (TAGS).
TEST_F(UdevRulesHandlerTest, AMoveStartsFromTheUeventNotFromTheDatabase) {
  Rules("99-systemd.rules",
        "SUBSYSTEM==\"net\", KERNEL!=\"lo\", TAG+=\"systemd\", "
        "ENV{SYSTEMD_ALIAS}+=\"/sys/subsystem/net/devices/$name\"\n"
        "SUBSYSTEM==\"net\", ACTION==\"add\", TAG+=\"on-add\"\n");
  const std::string path = "/devices/pci0000:00/0000:00:03.0/net/ens3";
  ASSERT_TRUE(sys_->AddDevice({.devpath = path,
                               .subsystem = "net",
                               .uevent = {{"INTERFACE", "ens3"}, {"IFINDEX", "2"}}}).ok());
  MakeHandler();
  absl::StatusOr<Event> add = testing::MakeUevent("add", path, "net", 1, {{"INTERFACE", "ens3"}, {"IFINDEX", "2"}});
  ASSERT_TRUE(add.ok());
  Handle(*add);
  EXPECT_EQ(WithoutInit(ReadFile(Run("data/n2"))),
            "E:SYSTEMD_ALIAS=/sys/subsystem/net/devices/ens3\nG:systemd\nG:on-add\nQ:systemd\nQ:on-add\nV:1\n");
  absl::StatusOr<Event> move = testing::MakeUevent(
      "move", path, "net", 2,
      {{"DEVPATH_OLD", "/devices/pci0000:00/0000:00:03.0/net/eth0"}, {"INTERFACE", "ens3"}, {"IFINDEX", "2"}});
  ASSERT_TRUE(move.ok());
  Handle(*move);
  EXPECT_EQ(WithoutInit(ReadFile(Run("data/n2"))),
            "E:SYSTEMD_ALIAS=/sys/subsystem/net/devices/ens3\nG:systemd\nG:on-add\nQ:systemd\nV:1\n");
  const auto announced = Announcements();
  ASSERT_EQ(announced.size(), 2u);
  EXPECT_EQ(announced[1].at("ACTION"), "move");
  EXPECT_EQ(announced[1].at("SYSTEMD_ALIAS"), "/sys/subsystem/net/devices/ens3");
}

// A parent's uevent file is kept from event to event too (IMPORT{parent} reads it for every
// device below), until an event of the parent itself starts: the kernel announces what changes
// it (a bind, an unbind, a change).
TEST_F(UdevRulesHandlerTest, AParentsUeventFileIsReadAgainWhenAnEventOfItStarts) {
  Rules("73-import.rules", "SUBSYSTEM==\"tty\", IMPORT{parent}=\"HUB_*\"\n");
  const std::string hub = "/devices/platform/hub0";
  const std::string port = hub + "/tty/ttyX0";
  ASSERT_TRUE(sys_->AddDevice({.devpath = hub, .subsystem = "platform", .kind = FakeSysfs::Kind::kBus}).ok());
  ASSERT_TRUE(sys_->AddDevice({.devpath = port, .subsystem = "tty"}).ok());
  ASSERT_TRUE(sys_->WriteFile(hub + "/uevent", "HUB_STATE=one\n").ok());
  MakeHandler();
  uint64_t seq = 0;
  auto handle = [&](const std::string& action, const std::string& devpath, const std::string& subsystem) {
    absl::StatusOr<Event> e = testing::MakeUevent(action, devpath, subsystem, ++seq, {});
    ASSERT_TRUE(e.ok()) << e.status();
    handler_->Starting(*e);  // as the chain tells each link when an event starts
    Handle(*e);
  };
  auto hub_state = [&]() {
    const auto announced = Announcements();
    if (announced.empty() || announced.back().count("HUB_STATE") == 0) return std::string("none");
    return announced.back().at("HUB_STATE");
  };
  handle("change", port, "tty");
  EXPECT_EQ(hub_state(), "one");
  // Rewritten behind the daemon's back: the kept text stands.
  ASSERT_TRUE(sys_->WriteFile(hub + "/uevent", "HUB_STATE=two\n").ok());
  handle("change", port, "tty");
  EXPECT_EQ(hub_state(), "one");
  // The hub's own event (a change, a bind) starts: the next event below it reads the file again.
  for (const char* action : {"change", "bind"}) {
    const std::string state = action == std::string("change") ? "two" : "three";
    ASSERT_TRUE(sys_->WriteFile(hub + "/uevent", "HUB_STATE=" + state + "\n").ok());
    handle(action, hub, "platform");
    handle("change", port, "tty");
    EXPECT_EQ(hub_state(), state) << "after the hub's " << action;
  }
}

// IMPORT{builtin} runs udev's builtins by name: path_id answers from sysfs; hwdb without a
// hwdb.bin fails, and a failed import makes its rule not match.
// Which directories are devices, and their subsystems, are kept from event to event (every
// event walks its parents); an event that adds, removes or moves a device forgets what was kept
// of it and of what is beneath it, before it runs.
TEST_F(UdevRulesHandlerTest, ParentsAreAskedOfSysfsAgainWhenAnEventAddsOrRemovesThem) {
  Rules("60-parent.rules",
        "SUBSYSTEM==\"tty\", SUBSYSTEMS==\"usb\", ENV{PARENT_BUS}=\"usb\"\n"
        "SUBSYSTEM==\"tty\", SUBSYSTEMS==\"pci\", ENV{PARENT_BUS}=\"pci\"\n");
  const std::string hub = "/devices/platform/hub0";
  const std::string port = hub + "/tty/ttyX0";
  auto plug = [&](const std::string& bus) {
    ASSERT_TRUE(sys_->AddDevice({.devpath = hub, .subsystem = bus, .kind = FakeSysfs::Kind::kBus}).ok());
    ASSERT_TRUE(sys_->AddDevice({.devpath = port, .subsystem = "tty"}).ok());
  };
  auto handle = [&](const std::string& action, const std::string& devpath, const std::string& subsystem,
                    uint64_t seq) {
    absl::StatusOr<Event> e = testing::MakeUevent(action, devpath, subsystem, seq, {});
    ASSERT_TRUE(e.ok()) << e.status();
    Handle(*e);
  };
  auto parent_bus = [&]() {
    const auto announced = Announcements();
    if (announced.empty() || announced.back().count("PARENT_BUS") == 0) return std::string("none");
    return announced.back().at("PARENT_BUS");
  };
  plug("usb");
  MakeHandler();
  handle("change", port, "tty", 1);
  EXPECT_EQ(parent_bus(), "usb");
  // What a chain tells every link when an event starts, before its first link runs (the
  // modules link may let the events below a device start before this link handles it).
  {
    const uint64_t kept = Counter("udevrules_sysfs_shapes_kept");
    absl::StatusOr<Event> unplugged = testing::MakeUevent("remove", hub, "usb", 100, {});
    ASSERT_TRUE(unplugged.ok());
    handler_->Starting(*unplugged);
    EXPECT_LT(Counter("udevrules_sysfs_shapes_kept"), kept);  // the hub's and its port's
    handle("change", port, "tty", 101);  // asked again: still the same hub
    EXPECT_EQ(parent_bus(), "usb");
  }
  // The hub is replaced by one on another bus behind the daemon's back (no event): the kept
  // answer stands, which is what makes a parent cost nothing the second time.
  ASSERT_TRUE(sys_->RemoveDevice(hub).ok());
  plug("pci");
  handle("change", port, "tty", 2);
  EXPECT_EQ(parent_bus(), "usb");
  // The kernel's own order: the port and the hub go, a hub comes, its port comes.
  ASSERT_TRUE(sys_->RemoveDevice(hub).ok());
  handle("remove", port, "tty", 3);
  handle("remove", hub, "pci", 4);
  plug("pci");
  handle("add", hub, "pci", 5);
  handle("add", port, "tty", 6);
  EXPECT_EQ(parent_bus(), "pci");
  // A move forgets the old place too.
  ASSERT_TRUE(sys_->RemoveDevice(hub).ok());
  plug("usb");
  absl::StatusOr<Event> moved = testing::MakeUevent("move", port, "tty", 7, {{"DEVPATH_OLD", hub + "/tty/ttyOld"}});
  ASSERT_TRUE(moved.ok());
  Handle(*moved);
  EXPECT_EQ(parent_bus(), "pci");  // the hub itself neither came nor went
  handle("add", hub, "usb", 8);
  handle("change", port, "tty", 9);
  EXPECT_EQ(parent_bus(), "usb");
  // Idle, the daemon lets go of them; the next event asks sysfs again.
  EXPECT_GT(Counter("udevrules_sysfs_shapes_kept"), 0u);
  handler_->ReleaseIdleMemory();
  EXPECT_EQ(Counter("udevrules_sysfs_shapes_kept"), 0u);
  ASSERT_TRUE(sys_->RemoveDevice(hub).ok());
  plug("pci");
  handle("change", port, "tty", 10);
  EXPECT_EQ(parent_bus(), "pci");
}

TEST_F(UdevRulesHandlerTest, ImportBuiltinRunsTheBuiltinsAndAFailureDoesNotMatch) {
  Rules("60-ids.rules",
        "SUBSYSTEM==\"pci\", IMPORT{builtin}=\"path_id\"\n"
        "SUBSYSTEM==\"pci\", IMPORT{builtin}=\"hwdb\", ENV{HWDB_SEEN}=\"1\"\n"
        "SUBSYSTEM==\"pci\", IMPORT{builtin}=\"nosuch\", ENV{NOSUCH_SEEN}=\"1\"\n");
  ASSERT_TRUE(sys_->AddDevice({.devpath = "/devices/pci0000:00/0000:00:03.0", .subsystem = "pci",
                               .kind = FakeSysfs::Kind::kBus}).ok());
  MakeHandler();
  absl::StatusOr<Event> e = testing::MakeUevent("add", "/devices/pci0000:00/0000:00:03.0", "pci", 1, {});
  ASSERT_TRUE(e.ok());
  Handle(*e);
  const auto announced = Announcements();
  ASSERT_EQ(announced.size(), 1u);
  EXPECT_EQ(announced[0].count("ID_PATH") ? announced[0].at("ID_PATH") : "", "pci-0000:00:03.0");
  EXPECT_EQ(announced[0].count("HWDB_SEEN"), 0u);
  EXPECT_EQ(announced[0].count("NOSUCH_SEEN"), 0u);
}

// udevd's reload reads hwdb.bin again too: a hwdb.bin that appears (an image's `udevadm hwdb
// --update`, a package) is used from the reload on. The machine's own hwdb.bin (udev's package)
// stands in; its pci:v00008086* entry names Intel.
TEST_F(UdevRulesHandlerTest, ReloadReadsHwdbAgain) {
  std::ifstream system_hwdb("/lib/udev/hwdb.bin", std::ios::binary);
  if (!system_hwdb) GTEST_SKIP() << "no /lib/udev/hwdb.bin here (Debian's udev package)";
  Rules("60-hwdb.rules", "SUBSYSTEM==\"pci\", IMPORT{builtin}=\"hwdb\", ENV{HWDB_SEEN}=\"1\"\n");
  ASSERT_TRUE(sys_->AddDevice({.devpath = "/devices/pci0000:00/0000:00:00.0", .subsystem = "pci",
                               .kind = FakeSysfs::Kind::kBus,
                               .uevent = {{"MODALIAS", "pci:v00008086d00001237sv00001AF4sd00001100bc06sc00i00"}}}).ok());
  MakeHandler();
  absl::StatusOr<Event> e = testing::MakeUevent("add", "/devices/pci0000:00/0000:00:00.0", "pci", 1,
                                                {{"MODALIAS", "pci:v00008086d00001237sv00001AF4sd00001100bc06sc00i00"}});
  ASSERT_TRUE(e.ok());
  Handle(*e);
  {
    std::ofstream out(base_ + "/etc/hwdb.bin", std::ios::binary);
    out << system_hwdb.rdbuf();
  }
  Handle(*e);  // the hwdb read at start (none) is still the one in use
  ASSERT_TRUE(handler_->Reload().ok());
  Handle(*e);
  const auto announced = Announcements();
  ASSERT_EQ(announced.size(), 3u);
  EXPECT_EQ(announced[0].count("HWDB_SEEN"), 0u) << "no hwdb.bin yet: the import fails";
  EXPECT_EQ(announced[1].count("HWDB_SEEN"), 0u) << "hwdb.bin is read again only on reload";
  EXPECT_EQ(announced[2].count("HWDB_SEEN"), 1u);
  EXPECT_THAT(announced[2].count("ID_VENDOR_FROM_DATABASE") ? announced[2].at("ID_VENDOR_FROM_DATABASE") : "",
              HasSubstr("Intel"));
}

// OPTIONS+="watch": the node is watched after RUN (each event drops the watch while it runs),
// a writer's close becomes a `change` of the device, and nowatch or a remove leave no watch.
TEST_F(UdevRulesHandlerTest, AWatchedNodeClosedAfterAWriteChangesTheDevice) {
  const std::string script = base_ + "/during_run.sh";
  WriteFile(script, absl::StrCat("#!/bin/sh\nif [ -e ", Run("watch/c1:3"), " ]; then echo watched; else echo unwatched; fi >> ",
                                 base_, "/during_run.log\n"));
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  Rules("60-watch.rules", absl::StrCat("KERNEL==\"watched\", OPTIONS+=\"watch\", RUN+=\"", script, "\"\n",
                                       "KERNEL==\"watched\", ENV{NOWATCH}==\"1\", OPTIONS+=\"nowatch\"\n"));
  // Major 1, minor 3 is the null device: a node the test can open for writing.
  AddTty("watched", 3, 1);
  ASSERT_EQ(::mkdir(sys_->Path("/dev").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(sys_->Path("/dev/char").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(absl::StrCat("../..", TtyPath("watched")).c_str(), sys_->Path("/dev/char/1:3").c_str()), 0);
  MakeHandler();

  Handle(TtyEvent("add", "watched", 3, 1, 1));
  const std::string first = Readlink(Run("watch/c1:3"));
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(Readlink(Run("watch/" + first)), "c1:3");
  Handle(TtyEvent("change", "watched", 3, 2, 1));
  const std::string second = Readlink(Run("watch/c1:3"));
  EXPECT_NE(second, first) << "the event dropped the watch and put a new one";
  EXPECT_FALSE(Exists(Run("watch/" + first)));
  EXPECT_EQ(ReadFile(base_ + "/during_run.log"), "unwatched\nunwatched\n");
  EXPECT_EQ(Counter("udevrules_watches_added"), 2u);

  // A writer closes the node: the daemon writes `change` into the device's uevent file.
  auto serve = [&]() -> Task<void> {
    TaskScope scope;
    scope.Spawn(handler_->Serve(*reactor_));
    const int fd = ::open(Dev("watched").c_str(), O_WRONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::write(fd, "x", 1), 1);
    ::close(fd);
    for (int i = 0; i < 1000 && Counter("udevrules_watch_changes") == 0; ++i) {
      (void)co_await io::Sleep(*reactor_, absl::Milliseconds(10));
    }
    scope.CancelAll();
  };
  ASSERT_TRUE(reactor_->BlockOn(serve()).ok());
  EXPECT_EQ(Counter("udevrules_watch_closes"), 1u);
  EXPECT_EQ(Counter("udevrules_watch_changes"), 1u);
  EXPECT_TRUE(absl::StartsWith(ReadFile(sys_->UeventPath(TtyPath("watched"))), "change"));

  // nowatch: no watch after the event; a remove leaves none either.
  absl::StatusOr<Event> nowatch = testing::MakeUevent("change", TtyPath("watched"), "tty", 3,
                                                      {{"MAJOR", "1"}, {"MINOR", "3"}, {"DEVNAME", "watched"},
                                                       {"NOWATCH", "1"}});
  ASSERT_TRUE(nowatch.ok());
  Handle(*nowatch);
  EXPECT_FALSE(Exists(Run("watch/c1:3")));
  EXPECT_FALSE(Exists(Run("watch/" + second)));
  Handle(TtyEvent("change", "watched", 3, 4, 1));
  EXPECT_TRUE(Exists(Run("watch/c1:3")));
  Handle(TtyEvent("remove", "watched", 3, 5, 1));
  EXPECT_FALSE(Exists(Run("watch/c1:3")));
}

// A program missing from the image fails for every device of a kind: the first failures are
// warnings, the rest are counted and written at debug level only.
TEST_F(UdevRulesHandlerTest, ARunProgramThatKeepsFailingIsLoggedThreeTimesAndCounted) {
  Rules("99-missing.rules", "KERNEL==\"ttyUSB*\", RUN+=\"/nonexistent/systemd-sysctl --prefix=/net\"\n");
  for (int i = 0; i < 6; ++i) AddTty(absl::StrCat("ttyUSB", i), i);
  MakeHandler();
  const std::string log = base_ + "/handler.log";
  ASSERT_TRUE(InitLogging(LogSink::kFile, LogLevel::kInfo, "hotring", log).ok());
  for (int i = 0; i < 6; ++i) Handle(TtyEvent("add", absl::StrCat("ttyUSB", i), i, 10 + i));
  ASSERT_TRUE(InitLogging(LogSink::kStderr, LogLevel::kInfo).ok());
  EXPECT_EQ(Counter("udevrules_run_failed"), 6u);
  const std::string text = ReadFile(log);
  size_t warnings = 0;
  for (size_t at = text.find("RUN '/nonexistent/systemd-sysctl"); at != std::string::npos;
       at = text.find("RUN '/nonexistent/systemd-sysctl", at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 3u) << text;
  EXPECT_THAT(text, HasSubstr("further failures of this program are only counted"));
}

}  // namespace
}  // namespace hotring::hotplug::udevrules
