#include "hotplug/udev/database.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::udev {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

Event Make(std::string subsystem, std::string devpath, std::string major = "", std::string minor = "",
           std::vector<std::pair<std::string, std::string>> env = {}) {
  Event e;
  e.action = "add";
  e.subsystem = std::move(subsystem);
  e.devpath = std::move(devpath);
  e.major = std::move(major);
  e.minor = std::move(minor);
  e.env = std::move(env);
  return e;
}

TEST(DeviceId, AsLibudevNamesThem) {
  EXPECT_EQ(*DeviceId(Make("block", "/devices/x/block/vda/vda1", "254", "1")), "b254:1");
  EXPECT_EQ(*DeviceId(Make("input", "/devices/x/input/input3/event3", "13", "67")), "c13:67");
  EXPECT_EQ(*DeviceId(Make("net", "/devices/virtual/net/lo", "", "", {{"IFINDEX", "1"}})), "n1");
  EXPECT_EQ(*DeviceId(Make("input", "/devices/platform/i8042/serio1/input/input3")), "+input:input3");
  EXPECT_EQ(*DeviceId(Make("drivers", "/bus/usb/drivers/usbhid")), "+drivers:usb:usbhid");
  // A major of 0 is no device node.
  EXPECT_EQ(*DeviceId(Make("mem", "/devices/virtual/mem/x", "0", "0")), "+mem:x");
}

TEST(DeviceId, RefusesNamesThatAreNotFileNames) {
  EXPECT_FALSE(DeviceId(Make("", "/devices/x")).ok());
  EXPECT_FALSE(DeviceId(Make("a/b", "/devices/x")).ok());
  EXPECT_FALSE(DeviceId(Make("input", "/devices/x", "13", "nope")).ok());
  EXPECT_FALSE(DeviceId(Make("net", "/devices/virtual/net/x", "", "", {{"IFINDEX", "1/2"}})).ok());
}

TEST(DatabaseEntry, FormatsAsSdDeviceAndParsesBack) {
  DatabaseEntry e;
  e.links = {"disk/by-uuid/1234-ABCD", "disk/by-label/BOOT"};
  e.usec_initialized = 1234567;
  e.properties = {{"ID_FS_TYPE", "vfat"}, {"ID_FS_LABEL", "BOOT"}, {"BAD", "a\nE:INJECTED=1"}};
  // G: every tag the device had, Q: the last event's; a name no rule could set is left out.
  e.tags = {"seat", "uaccess", "bad:tag"};
  e.current_tags = {"seat", "x\nE:INJECTED=1"};
  const std::string text = FormatDatabaseEntry(e);
  EXPECT_EQ(text,
            "S:disk/by-uuid/1234-ABCD\nS:disk/by-label/BOOT\nI:1234567\nE:ID_FS_TYPE=vfat\n"
            "E:ID_FS_LABEL=BOOT\nG:seat\nG:uaccess\nQ:seat\nV:1\n");
  const DatabaseEntry back = ParseDatabaseEntry(text);
  EXPECT_EQ(back.links, e.links);
  EXPECT_EQ(back.usec_initialized, 1234567u);
  EXPECT_THAT(back.properties, ElementsAre(Pair("ID_FS_TYPE", "vfat"), Pair("ID_FS_LABEL", "BOOT")));
  EXPECT_THAT(back.tags, ElementsAre("seat", "uaccess"));
  EXPECT_THAT(back.current_tags, ElementsAre("seat"));
}

TEST(DatabaseEntry, LinkPriorityFollowsTheLinks) {
  DatabaseEntry e;
  e.links = {"disk/by-board/root"};
  e.link_priority = -10;
  e.properties = {{"ID_BOARD", "1"}};
  const std::string text = FormatDatabaseEntry(e);
  EXPECT_EQ(text, "S:disk/by-board/root\nL:-10\nE:ID_BOARD=1\nV:1\n");
  EXPECT_EQ(ParseDatabaseEntry(text).link_priority, -10);
}

TEST(ValidTagName, AsUdevRulesAcceptThem) {
  EXPECT_TRUE(ValidTagName("seat"));
  EXPECT_TRUE(ValidTagName("master-of-seat"));
  EXPECT_TRUE(ValidTagName("seat-pci-pci-0000_00_0a_0"));
  EXPECT_FALSE(ValidTagName(""));
  EXPECT_FALSE(ValidTagName(".."));
  EXPECT_FALSE(ValidTagName("a/b"));
  EXPECT_FALSE(ValidTagName("a:b"));
  EXPECT_FALSE(ValidTagName("seat 1"));
  EXPECT_FALSE(ValidTagName(std::string(201, 'a')));
}

std::string TempDir(const char* name) {
  const char* t = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(t != nullptr ? t : "/tmp", "/", name);
  (void)!std::system(absl::StrCat("rm -rf ", dir).c_str());
  return dir;
}

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] != '.' || (std::string(e->d_name) != "." && std::string(e->d_name) != "..")) {
      out.emplace_back(e->d_name);
    }
  }
  closedir(d);
  return out;
}

TEST(DatabaseDir, WritesAtomicallyReadsAndRemoves) {
  const std::string run = TempDir("run_udev");
  absl::StatusOr<DatabaseDir> db = DatabaseDir::Open(run);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(db->Write("b254:1", "E:A=1\nV:1\n").ok());
  ASSERT_TRUE(db->Write("b254:1", "E:A=2\nV:1\n").ok());
  std::ifstream in(run + "/data/b254:1");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "E:A=2\nV:1\n");
  struct stat st;
  ASSERT_EQ(stat((run + "/data/b254:1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_THAT(List(run + "/data"), ElementsAre("b254:1"));  // no temporary file left behind
  EXPECT_EQ(*db->Read("b254:1"), "E:A=2\nV:1\n");
  ASSERT_TRUE(db->Remove("b254:1").ok());
  EXPECT_TRUE(List(run + "/data").empty());
  EXPECT_TRUE(db->Remove("b254:1").ok());  // already gone: fine
  EXPECT_TRUE(absl::IsNotFound(db->Read("b254:1").status()));
  // db_persist: udevd marks the file sticky.
  ASSERT_TRUE(db->Write("c4:64", "V:1\n", /*persist=*/true).ok());
  ASSERT_EQ(stat((run + "/data/c4:64").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01644u);
}

TEST(DatabaseDir, TagIndexFilesAsUdevdMakesThem) {
  const std::string run = TempDir("run_udev_tags");
  absl::StatusOr<DatabaseDir> db = DatabaseDir::Open(run);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(db->AddTag("seat", "+input:input4").ok());
  ASSERT_TRUE(db->AddTag("seat", "c13:66").ok());
  ASSERT_TRUE(db->AddTag("seat", "c13:66").ok());  // already there: kept
  ASSERT_TRUE(db->AddTag("uaccess", "c13:66").ok());
  EXPECT_THAT(List(run + "/tags"), UnorderedElementsAre("seat", "uaccess"));
  EXPECT_THAT(List(run + "/tags/seat"), UnorderedElementsAre("+input:input4", "c13:66"));
  struct stat st;
  ASSERT_EQ(stat((run + "/tags/seat/c13:66").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0444u);
  EXPECT_EQ(st.st_size, 0);
  ASSERT_EQ(stat((run + "/tags/seat").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_TRUE(db->RemoveTag("seat", "c13:66").ok());
  EXPECT_TRUE(db->RemoveTag("seat", "c13:66").ok());     // already gone: fine
  EXPECT_TRUE(db->RemoveTag("absent", "c13:66").ok());   // no such tag directory: fine
  EXPECT_THAT(List(run + "/tags/seat"), ElementsAre("+input:input4"));
  // Names that would leave the directory.
  EXPECT_FALSE(db->AddTag("..", "c13:66").ok());
  EXPECT_FALSE(db->AddTag("a/b", "c13:66").ok());
  EXPECT_FALSE(db->AddTag("seat", "../x").ok());
  EXPECT_FALSE(db->RemoveTag("../tags", "x").ok());
  EXPECT_THAT(List(run), UnorderedElementsAre("tags"));
}

TEST(DatabaseDir, RefusesIdsThatLeaveTheDirectory) {
  const std::string run = TempDir("run_udev2");
  absl::StatusOr<DatabaseDir> db = DatabaseDir::Open(run);
  ASSERT_TRUE(db.ok());
  EXPECT_FALSE(db->Write("../escape", "x").ok());
  EXPECT_FALSE(db->Write("..", "x").ok());
  EXPECT_FALSE(db->Remove("a/b").ok());
  EXPECT_NE(access((run + "/escape").c_str(), F_OK), 0);
}

TEST(DatabaseDir, DoesNotFollowASymlinkedDataDirectory) {
  const std::string run = TempDir("run_udev3");
  const std::string elsewhere = TempDir("elsewhere");
  ASSERT_EQ(mkdir(run.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(elsewhere.c_str(), 0755), 0);
  ASSERT_EQ(symlink(elsewhere.c_str(), (run + "/data").c_str()), 0);
  absl::StatusOr<DatabaseDir> db = DatabaseDir::Open(run);
  ASSERT_TRUE(db.ok());
  EXPECT_FALSE(db->Write("b8:0", "x").ok());
  EXPECT_TRUE(List(elsewhere).empty());
}

TEST(DatabaseDir, MakesItsDirectoriesAgainWhenTheyAreGone) {
  // `udevadm info --cleanup-db` removes what is in them, and may remove a tag's directory.
  const std::string run = TempDir("run_udev4");
  absl::StatusOr<DatabaseDir> db = DatabaseDir::Open(run);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->Write("n2", "V:1\n").ok());
  ASSERT_TRUE(db->AddTag("systemd", "n2").ok());
  ASSERT_EQ(unlink((run + "/data/n2").c_str()), 0);
  ASSERT_EQ(rmdir((run + "/data").c_str()), 0);
  ASSERT_EQ(unlink((run + "/tags/systemd/n2").c_str()), 0);
  ASSERT_EQ(rmdir((run + "/tags/systemd").c_str()), 0);
  EXPECT_TRUE(absl::IsNotFound(db->Read("n2").status()));
  ASSERT_TRUE(db->Write("n2", "V:1\n").ok());
  ASSERT_TRUE(db->AddTag("systemd", "n2").ok());
  EXPECT_EQ(*db->Read("n2"), "V:1\n");
  EXPECT_THAT(List(run + "/tags/systemd"), ElementsAre("n2"));
  // A tag directory that is a dangling symlink is neither followed nor made.
  const std::string elsewhere = TempDir("elsewhere2");
  ASSERT_EQ(symlink(elsewhere.c_str(), (run + "/tags/seat").c_str()), 0);
  EXPECT_FALSE(db->AddTag("seat", "n2").ok());
  EXPECT_NE(access(elsewhere.c_str(), F_OK), 0);
}


TEST(DatabaseDir, TrackedEntriesAnswerReadsOfAbsentOnesWithoutOpening) {
  const std::string run = TempDir("run_udev_tracked");
  ASSERT_EQ(mkdir(run.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((run + "/data").c_str(), 0755), 0);
  // Left by an earlier daemon: an entry, and the temporary file of an interrupted write.
  std::ofstream(run + "/data/c13:64") << "E:ID_INPUT=1\nV:1\n";
  std::ofstream(run + "/data/.#b8:0.77") << "V:1\n";
  absl::StatusOr<DatabaseDir> db = DatabaseDir::Open(run);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->TrackEntries().ok());
  EXPECT_EQ(*db->Read("c13:64"), "E:ID_INPUT=1\nV:1\n");
  EXPECT_EQ(db->reads_skipped(), 0u);
  EXPECT_TRUE(absl::IsNotFound(db->Read("b8:0").status()));
  EXPECT_TRUE(absl::IsNotFound(db->Read("n2").status()));
  EXPECT_EQ(db->reads_skipped(), 2u);
  // What this DatabaseDir writes and removes, it knows.
  ASSERT_TRUE(db->Write("n2", "V:1\n").ok());
  EXPECT_EQ(*db->Read("n2"), "V:1\n");
  ASSERT_TRUE(db->Remove("c13:64").ok());
  EXPECT_TRUE(absl::IsNotFound(db->Read("c13:64").status()));
  EXPECT_EQ(db->reads_skipped(), 3u);
  // An entry removed behind its back is a failed open, as without tracking.
  ASSERT_EQ(unlink((run + "/data/n2").c_str()), 0);
  EXPECT_TRUE(absl::IsNotFound(db->Read("n2").status()));
  EXPECT_EQ(db->reads_skipped(), 3u);
  // One written behind its back is not seen (only the daemon writes entries): documented.
  std::ofstream(run + "/data/b8:16") << "V:1\n";
  EXPECT_TRUE(absl::IsNotFound(db->Read("b8:16").status()));
  // Untracked, every read opens.
  absl::StatusOr<DatabaseDir> plain = DatabaseDir::Open(run);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain->Read("b8:16"), "V:1\n");
  EXPECT_EQ(plain->reads_skipped(), 0u);
}

TEST(DatabaseDir, TrackedEntriesStayWhatDataHoldsWhenOneIdIsWrittenAndRemovedAtOnce) {
  // A reused device number: one device's remove and another's add run at once on one id. The
  // list must end as data/ ends, whichever goes last.
  const std::string run = TempDir("run_udev_one_id");
  absl::StatusOr<DatabaseDir> db = DatabaseDir::Open(run);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->TrackEntries().ok());
  for (int round = 0; round < 50; ++round) {
    const std::string id = absl::StrCat("b8:", round);
    std::thread writer([&] {
      for (int i = 0; i < 40; ++i) (void)db->Write(id, "V:1\n");
    });
    std::thread remover([&] {
      for (int i = 0; i < 40; ++i) (void)db->Remove(id);
    });
    writer.join();
    remover.join();
    const bool on_disk = ::access(absl::StrCat(run, "/data/", id).c_str(), F_OK) == 0;
    EXPECT_EQ(db->Read(id).ok(), on_disk) << id;
  }
}

TEST(DatabaseDir, AnEntryOfManyPagesIsReadWhole) {
  // A read that fills its buffer is followed by another; one that does not ends the entry.
  const std::string run = TempDir("run_udev_long");
  absl::StatusOr<DatabaseDir> db = DatabaseDir::Open(run);
  ASSERT_TRUE(db.ok());
  for (const size_t size : {size_t{4095}, size_t{4096}, size_t{4097}, size_t{12288}, size_t{20000}}) {
    std::string text;
    while (text.size() < size) absl::StrAppend(&text, "E:KEY", text.size(), "=value\n");
    text.resize(size);
    ASSERT_TRUE(db->Write("b8:0", text).ok());
    EXPECT_EQ(*db->Read("b8:0"), text) << size;
  }
}

TEST(DatabaseDir, ThreadsShareOneDirectoryEvenWhileItIsRemoved) {
  // The daemon's pool threads write, read and remove entries of different devices through one
  // DatabaseDir at once; data/ removed meanwhile is made again by whichever write finds it gone.
  const std::string run = TempDir("run_udev_threads");
  absl::StatusOr<DatabaseDir> db = DatabaseDir::Open(run);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->TrackEntries().ok());
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  std::atomic<int> written{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const std::string id = absl::StrCat("c", t, ":", i % 7);
        const std::string text = absl::StrCat("E:ROUND=", i, "\nV:1\n");
        const absl::Status w = db->Write(id, text);
        // A write that meets two removals in a row says so (ENOENT); most find data/ again.
        if (w.ok()) {
          ++written;
        } else if (!absl::IsNotFound(w)) {
          ++wrong;
        }
        absl::StatusOr<std::string> got = db->Read(id);
        // A removal of data/ (below) may take it away meanwhile, never leave another text.
        if (w.ok() && got.ok() && *got != text) ++wrong;
        if (i % 3 == 0 && !db->Remove(id).ok()) ++wrong;
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    (void)!std::system(absl::StrCat("rm -rf ", run, "/data 2>/dev/null").c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(written.load(), kThreads * kRounds * 9 / 10);
  // Whatever each thread wrote last is there now, once more written.
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(db->Write(absl::StrCat("c", t, ":0"), "V:1\n").ok());
    EXPECT_EQ(*db->Read(absl::StrCat("c", t, ":0")), "V:1\n");
  }
}

}  // namespace
}  // namespace hotring::hotplug::udev
