#include "io/rtnetlink.h"

#include <net/if.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "gtest/gtest.h"

namespace hotring::io {
namespace {

TEST(RtnetlinkTest, InterfaceNamesAsTheKernelTakesThem) {
  EXPECT_TRUE(ValidInterfaceName("eth0"));
  EXPECT_TRUE(ValidInterfaceName("lan-uplink.100"));
  EXPECT_FALSE(ValidInterfaceName(""));
  EXPECT_FALSE(ValidInterfaceName("."));
  EXPECT_FALSE(ValidInterfaceName("a/b"));
  EXPECT_FALSE(ValidInterfaceName("a:b"));
  EXPECT_FALSE(ValidInterfaceName("a b"));
  EXPECT_FALSE(ValidInterfaceName("sixteen-chars-xx"));
  EXPECT_FALSE(RenameInterface(1, "a/b").ok());
}

// In a network namespace of its own (root only), a child renames that namespace's loopback,
// which is down there, and checks the kernel's answer.
TEST(RtnetlinkTest, RenamesAnInterfaceInAPrivateNamespace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::unshare(CLONE_NEWNET) != 0) ::_exit(errno == EPERM ? 77 : 10);
    const int lo = static_cast<int>(if_nametoindex("lo"));
    if (lo == 0) ::_exit(11);
    if (!RenameInterface(lo, "board0").ok()) ::_exit(12);
    if (if_nametoindex("board0") != static_cast<unsigned>(lo)) ::_exit(13);
    if (if_nametoindex("lo") != 0) ::_exit(14);
    // A name nobody has: ENODEV from the kernel.
    if (RenameInterface(9999, "x0").ok()) ::_exit(15);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no network namespaces here";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace hotring::io
