// The parts of `modprobe -c`'s format that kmod's quirks decide. The whole output is checked
// against Debian's modprobe on the trees of testdata/show_config by modprobe_command_test.
#include "hotplug/modules/show_config.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hotplug/modules/fake_modules_tree.h"
#include "hotplug/modules/module_index.h"

namespace hotring::hotplug::modules {
namespace {

TEST(ShowConfigTest, SoftdepListsAreSpansOfTheLine) {
  absl::StatusOr<FakeModulesTree> tree = FakeModulesTree::Create("1.0");
  ASSERT_TRUE(tree.ok());
  tree->AddConfig("/etc/modprobe.d", "t.conf",
                  "softdep a post: p1 pre: q1 post: p2\nsoftdep b pre: x y\nsoftdep c post: z\n");
  ASSERT_TRUE(tree->Write().ok());
  absl::StatusOr<std::unique_ptr<ModuleIndex>> index =
      ModuleIndex::Load({.modules_dir = tree->modules_dir(),
                         .config_paths = DefaultConfigPaths(tree->root()),
                         .kernel_cmdline = ""});
  ASSERT_TRUE(index.ok()) << index.status();
  const std::string out = FormatShowConfig(**index);
  // kmod's softdep_to_char: no blank between the parts, and a post: name written between two
  // pre: names (or the other way round) shows in both.
  EXPECT_NE(out.find("softdep a pre: q1post: p1 q1 p2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("softdep b pre: x y\n"), std::string::npos) << out;
  EXPECT_NE(out.find("softdep c post: z\n"), std::string::npos) << out;
}

TEST(ShowConfigTest, DumpsOnlyBinaryIndexesAfterTheConfiguration) {
  absl::StatusOr<FakeModulesTree> tree = FakeModulesTree::Create("1.0");
  ASSERT_TRUE(tree.ok());
  tree->AddModule({.path = "kernel/a.ko", .aliases = {"pci:v1*", "acpi:X"}, .symbols = {"fa"}});
  tree->AddModule({.path = "kernel/b.ko", .aliases = {"pci:v1*"}, .symbols = {"fb"}});
  tree->AddConfig("/etc/modprobe.d", "x.conf", "blacklist b\n");
  ASSERT_TRUE(tree->Write().ok());
  const ModuleIndexOptions options = {.modules_dir = tree->modules_dir(),
                                      .config_paths = DefaultConfigPaths(tree->root()),
                                      .kernel_cmdline = ""};
  absl::StatusOr<std::unique_ptr<ModuleIndex>> index = ModuleIndex::Load(options);
  ASSERT_TRUE(index.ok()) << index.status();
  // Keys in byte order, a key's values as stored (depmod's priority order), aliases then
  // symbols.
  EXPECT_EQ(FormatShowConfig(**index),
            "blacklist b\n"
            "\n# End of configuration files. Dumping indexes now:\n\n"
            "alias acpi:X a\n"
            "alias pci:v1* a\n"
            "alias pci:v1* b\n"
            "alias symbol:fa a\n"
            "alias symbol:fb b\n");
  // Built from text (no .bin): kmod reads no text index, so there is nothing to dump.
  ASSERT_EQ(::unlink((tree->modules_dir() + "/modules.alias.bin").c_str()), 0);
  ASSERT_EQ(::unlink((tree->modules_dir() + "/modules.symbols.bin").c_str()), 0);
  index = ModuleIndex::Load(options);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(FormatShowConfig(**index),
            "blacklist b\n\n# End of configuration files. Dumping indexes now:\n\n");
}

}  // namespace
}  // namespace hotring::hotplug::modules
