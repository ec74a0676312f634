#include "core/dir_names.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring {
namespace {

TEST(DirNamesTest, SortedWithoutDotEntries) {
  char dir[] = "/tmp/hotring_dir_names_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string root = dir;
  for (const char* name : {"vdb", ".hidden", "sr0", "vda1"}) {
    std::FILE* f = std::fopen((root + "/" + name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  ASSERT_EQ(::mkdir((root + "/vda").c_str(), 0755), 0);
  EXPECT_THAT(SortedDirNames(root), ::testing::ElementsAre("sr0", "vda", "vda1", "vdb"));
  EXPECT_TRUE(SortedDirNames(root + "/missing").empty());
  ASSERT_EQ(std::system(("rm -rf '" + root + "'").c_str()), 0);
}

}  // namespace
}  // namespace hotring
