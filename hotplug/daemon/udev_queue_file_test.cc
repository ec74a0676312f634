#include "hotplug/daemon/udev_queue_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "testing/daemon_fixture.h"

namespace hotring::hotplug {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::string QueuePath() {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("udev_queue_file_test");
  EXPECT_TRUE(dir.ok());
  return *dir + "/queue";
}

TEST(UdevQueueFileTest, ExistsExactlyWhileBusy) {
  const std::string path = QueuePath();
  UdevQueueFile queue(path);
  EXPECT_FALSE(Exists(path));
  queue.Busy();
  EXPECT_TRUE(Exists(path));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_size, 0);
  queue.Busy();  // still busy: nothing changes
  EXPECT_TRUE(Exists(path));
  queue.Idle();
  EXPECT_FALSE(Exists(path));
  queue.Idle();
  EXPECT_FALSE(Exists(path));
  queue.Busy();
  EXPECT_TRUE(Exists(path));
}

TEST(UdevQueueFileTest, AStaleFileGoesAtStartAndTheFileGoesWithTheObject) {
  const std::string path = QueuePath();
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    UdevQueueFile queue(path);
    EXPECT_FALSE(Exists(path)) << "a new daemon starts idle";
    queue.Busy();
    EXPECT_TRUE(Exists(path));
  }
  EXPECT_FALSE(Exists(path));
}

TEST(UdevQueueFileTest, AnUnwritableDirectoryIsNotFatal) {
  UdevQueueFile queue("/proc/hotring-no-such-dir/queue");
  queue.Busy();
  EXPECT_TRUE(queue.busy());
  queue.Idle();
  EXPECT_FALSE(queue.busy());
}

}  // namespace
}  // namespace hotring::hotplug
