// Damaged copies of each index of a module tree: the damage costs that index only (as in kmod
// 30, which never falls back to the text file), is reported once with its path, and every other
// lookup still answers.
#include "hotplug/modules/module_index.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/modules/fake_modules_tree.h"
#include "hotplug/modules/kmod_resolver.h"

namespace hotring::hotplug::modules {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// One lookup per index, each answered by that index only.
struct IndexQuery {
  const char* index;  // the .bin whose loss makes the query unanswered
  const char* query;
  const char* module;
};
constexpr IndexQuery kProbes[] = {
    {"modules.dep", "nic", "nic"},
    {"modules.alias", "pci:v00001234d00000001", "nic"},
    {"modules.symbols", "symbol:nic_send", "nic"},
    {"modules.builtin", "rtc_cmos", "rtc_cmos"},
    {"modules.builtin.alias", "platform:rtc_cmos", "rtc_cmos"},
};

enum class Damage { kEmpty, kShort, kTruncated, kBadMagic, kBadVersion, kDirectory };

std::string Name(Damage d) {
  switch (d) {
    case Damage::kEmpty: return "empty";
    case Damage::kShort: return "short";
    case Damage::kTruncated: return "truncated";
    case Damage::kBadMagic: return "bad magic";
    case Damage::kBadVersion: return "bad version";
    case Damage::kDirectory: return "directory";
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class ModuleIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<FakeModulesTree> tree = FakeModulesTree::Create("6.1.0-damage");
    ASSERT_TRUE(tree.ok());
    tree_ = std::make_unique<FakeModulesTree>(std::move(*tree));
    tree_->AddModule({.path = "kernel/lib/base.ko", .symbols = {"base_fn"}});
    tree_->AddModule({.path = "kernel/drivers/net/nic.ko",
                      .deps = {"kernel/lib/base.ko"},
                      .aliases = {"pci:v00001234d*"},
                      .symbols = {"nic_send"}});
    tree_->AddBuiltin({.path = "kernel/drivers/rtc/rtc-cmos.ko", .aliases = {"platform:rtc_cmos"}});
    ASSERT_TRUE(tree_->Write().ok());
  }

  std::string Bin(const std::string& index) const {
    return absl::StrCat(tree_->modules_dir(), "/", index, ".bin");
  }

  void DamageFile(const std::string& path, Damage damage) {
    const std::string good = ReadFile(path);
    ASSERT_GT(good.size(), 12u);
    std::string bad = good;
    switch (damage) {
      case Damage::kEmpty: bad.clear(); break;
      case Damage::kShort: bad.resize(7); break;
      case Damage::kTruncated: bad.resize(good.size() - 3); break;
      case Damage::kBadMagic: bad[1] = 'X'; break;
      case Damage::kBadVersion: bad[5] = 9; break;
      case Damage::kDirectory:
        ASSERT_EQ(::unlink(path.c_str()), 0);
        ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
        return;
    }
    WriteFile(path, bad);
  }

  absl::StatusOr<std::unique_ptr<ModuleIndex>> Load(bool require_modules_dep = true) const {
    return ModuleIndex::Load({.modules_dir = tree_->modules_dir(),
                              .config_paths = DefaultConfigPaths(tree_->root()),
                              .kernel_cmdline = "",
                              .require_modules_dep = require_modules_dep});
  }

  std::unique_ptr<FakeModulesTree> tree_;
};

TEST_F(ModuleIndexTest, AGoodTreeAnswersEveryKindOfLookup) {
  absl::StatusOr<std::unique_ptr<ModuleIndex>> index = Load();
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_THAT((*index)->DamagedIndexes(), IsEmpty());
  ASSERT_THAT((*index)->index_files(), SizeIs(5));
  for (const IndexFile& file : (*index)->index_files()) {
    EXPECT_EQ(file.state, IndexFile::State::kBinary) << file.name;
    EXPECT_EQ(file.path, Bin(file.name));
  }
  const KmodResolver resolver(std::shared_ptr<const ModuleIndex>(std::move(*index)));
  for (const IndexQuery& p : kProbes) EXPECT_THAT(resolver.Lookup(p.query), ElementsAre(p.module)) << p.query;
}

// The measured failure: kmod's own test trees ship a 0-byte modules.builtin.bin, and the whole
// tree used to be refused ("Module X not found" for every module).
TEST_F(ModuleIndexTest, EachDamagedIndexCostsOnlyItself) {
  for (const IndexQuery& damaged : kProbes) {
    for (const Damage damage : {Damage::kEmpty, Damage::kShort, Damage::kTruncated,
                                Damage::kBadMagic, Damage::kBadVersion, Damage::kDirectory}) {
      SCOPED_TRACE(absl::StrCat(damaged.index, ".bin ", Name(damage)));
      SetUp();  // a fresh tree: each case damages exactly one file
      const std::string path = Bin(damaged.index);
      DamageFile(path, damage);
      absl::StatusOr<std::unique_ptr<ModuleIndex>> index = Load();
      ASSERT_TRUE(index.ok()) << index.status();
      // Reported once, with its path.
      const std::vector<std::string> reported = (*index)->DamagedIndexes();
      ASSERT_THAT(reported, SizeIs(1));
      EXPECT_THAT(reported[0], ::testing::StartsWith(path + ": "));
      for (const IndexFile& file : (*index)->index_files()) {
        if (file.name == damaged.index) {
          EXPECT_EQ(file.state, damage == Damage::kEmpty || damage == Damage::kShort
                                    ? IndexFile::State::kEmpty
                                    : IndexFile::State::kCorrupt);
        } else {
          EXPECT_EQ(file.state, IndexFile::State::kBinary) << file.name;
        }
      }
      const KmodResolver resolver(std::shared_ptr<const ModuleIndex>(std::move(*index)));
      for (const IndexQuery& p : kProbes) {
        if (&p == &damaged) {
          // The text file beside it is not read instead (kmod reads only the .bin).
          EXPECT_THAT(resolver.Lookup(p.query), IsEmpty()) << p.query;
        } else {
          EXPECT_THAT(resolver.Lookup(p.query), ElementsAre(p.module)) << p.query;
        }
      }
    }
  }
}

TEST_F(ModuleIndexTest, ADamagedDepIndexLeavesBuiltinsAndDependencyPaths) {
  DamageFile(Bin("modules.dep"), Damage::kEmpty);
  absl::StatusOr<std::unique_ptr<ModuleIndex>> index = Load();
  ASSERT_TRUE(index.ok()) << index.status();
  const KmodResolver resolver(std::shared_ptr<const ModuleIndex>(std::move(*index)));
  // nic is still found by its alias, but without modules.dep nothing says where its file is:
  // kmod prints nothing to insmod, and so do we.
  EXPECT_EQ(FormatShowDepends(resolver.Probe("pci:v00001234d00000001", {})), "");
  EXPECT_EQ(FormatShowDepends(resolver.Probe("rtc-cmos", {})), "builtin rtc_cmos\n");
}

TEST_F(ModuleIndexTest, AMissingBinIsBuiltFromItsTextFile) {
  ASSERT_EQ(::unlink(Bin("modules.alias").c_str()), 0);
  absl::StatusOr<std::unique_ptr<ModuleIndex>> index = Load();
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ((*index)->index_files()[1].state, IndexFile::State::kText);
  EXPECT_EQ((*index)->index_files()[1].path, tree_->modules_dir() + "/modules.alias");
  const KmodResolver resolver(std::shared_ptr<const ModuleIndex>(std::move(*index)));
  EXPECT_THAT(resolver.Lookup("pci:v00001234d00000001"), ElementsAre("nic"));
}

TEST_F(ModuleIndexTest, AnUnreadableTextFallbackCostsOnlyItsIndex) {
  for (const char* name : {"modules.dep", "modules.alias", "modules.symbols", "modules.builtin"}) {
    SCOPED_TRACE(name);
    SetUp();
    ASSERT_EQ(::unlink(Bin(name).c_str()), 0);
    const std::string text = absl::StrCat(tree_->modules_dir(), "/", name);
    ASSERT_EQ(::unlink(text.c_str()), 0);
    ASSERT_EQ(::mkdir(text.c_str(), 0755), 0);  // read() fails: EISDIR
    absl::StatusOr<std::unique_ptr<ModuleIndex>> index = Load();
    ASSERT_TRUE(index.ok()) << index.status();
    EXPECT_THAT((*index)->DamagedIndexes(), ElementsAre(text + ": read: Is a directory"));
    const KmodResolver resolver(std::shared_ptr<const ModuleIndex>(std::move(*index)));
    EXPECT_THAT(resolver.Lookup("platform:rtc_cmos"), ElementsAre("rtc_cmos"));
  }
}

TEST_F(ModuleIndexTest, NoModulesDepAtAllIsNoTreeUnlessTheCallerAcceptsIt) {
  ASSERT_EQ(::unlink(Bin("modules.dep").c_str()), 0);
  ASSERT_EQ(::unlink((tree_->modules_dir() + "/modules.dep").c_str()), 0);
  EXPECT_TRUE(absl::IsNotFound(Load().status()));
  // modprobe's way: the other indexes and the configuration still answer.
  absl::StatusOr<std::unique_ptr<ModuleIndex>> index = Load(/*require_modules_dep=*/false);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ((*index)->index_files()[0].state, IndexFile::State::kAbsent);
  EXPECT_THAT((*index)->DamagedIndexes(), IsEmpty());  // absent is not damaged
  const KmodResolver resolver(std::shared_ptr<const ModuleIndex>(std::move(*index)));
  EXPECT_THAT(resolver.Lookup("platform:rtc_cmos"), ElementsAre("rtc_cmos"));
  // A directory that does not exist at all: the same.
  index = ModuleIndex::Load({.modules_dir = tree_->root() + "/lib/modules/none",
                             .config_paths = {},
                             .kernel_cmdline = "",
                             .require_modules_dep = false});
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_THAT((*index)->DamagedIndexes(), IsEmpty());
}

}  // namespace
}  // namespace hotring::hotplug::modules
