// append_line, the benches' cheapest handler: what it writes where, and that it fails when it
// cannot log; and the bench's copy of it (AppendLineHandler), whose lines the benches count.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hotplug/bench/bench_daemon.h"

namespace hotring::hotplug {
namespace {

std::string AppendLineBinary() {
  for (const char* var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    if (const char* dir = std::getenv(var)) {
      for (const char* rel :
           {"/hotring/hotplug/bench/append_line", "/__main__/hotplug/bench/append_line"}) {
        const std::string path = absl::StrCat(dir, rel);
        if (::access(path.c_str(), X_OK) == 0) return path;
      }
    }
  }
  return "hotplug/bench/append_line";
}

// Runs `program` with exactly `argv` and `env`; returns its exit code (-1 if it did not exit).
int RunProgram(const std::string& program, std::vector<std::string> argv,
               std::vector<std::string> env) {
  std::vector<char*> args, envp;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid;
  if (::posix_spawn(&pid, program.c_str(), nullptr, nullptr, args.data(), envp.data()) != 0) {
    return -1;
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class AppendLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/append_line_test.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { (void)!std::system(absl::StrCat("rm -rf '", dir_, "'").c_str()); }
  std::string dir_;
};

TEST_F(AppendLineTest, LogsBesideItselfOneLinePerRun) {
  // The daemon runs a handler as `PROGRAM SUBSYSTEM` with the event's environment only.
  absl::StatusOr<AppendLineHandler> handler = AppendLineHandler::Copy(AppendLineBinary());
  ASSERT_TRUE(handler.ok()) << handler.status();
  const std::string program = handler->program();
  EXPECT_EQ(RunProgram(program, {program, "block"},
                {"ACTION=add", "SEQNUM=7", "DEVPATH=/devices/virtual/block/loop0"}),
            0);
  EXPECT_EQ(RunProgram(program, {program, "net"}, {"ACTION=change", "SEQNUM=8"}), 0);
  EXPECT_EQ(ReadFile(program + ".log"),
            "block add 7 /devices/virtual/block/loop0\n"
            "net change 8 -\n");
  // The bench counts the lines and starts the next phase with an empty log.
  absl::StatusOr<uint64_t> lines = handler->TakeLines();
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(*lines, 2u);
  lines = handler->TakeLines();
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(*lines, 0u);
  EXPECT_EQ(RunProgram(program, {program, "usb"}, {}), 0);
  lines = handler->TakeLines();
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(*lines, 1u);
}

TEST_F(AppendLineTest, LogFromTheEnvironmentWins) {
  const std::string log = dir_ + "/chosen.log";
  EXPECT_EQ(RunProgram(AppendLineBinary(), {"append_line", "tty"},
                {"APPEND_LINE_LOG=" + log, "ACTION=remove", "SEQNUM=9", "DEVPATH=/devices/tty0"}),
            0);
  EXPECT_EQ(ReadFile(log), "tty remove 9 /devices/tty0\n");
}

TEST_F(AppendLineTest, FailsWhenItCannotLog) {
  EXPECT_EQ(RunProgram(AppendLineBinary(), {"append_line", "tty"},
                {"APPEND_LINE_LOG=" + dir_ + "/missing/dir/x.log"}),
            1);
}

TEST_F(AppendLineTest, TheCopyAndItsLogGoAwayWithTheHandler) {
  std::string program;
  {
    absl::StatusOr<AppendLineHandler> handler = AppendLineHandler::Copy(AppendLineBinary());
    ASSERT_TRUE(handler.ok()) << handler.status();
    program = handler->program();
    EXPECT_EQ(RunProgram(program, {program, "x"}, {}), 0);
    struct stat st;
    ASSERT_EQ(::stat((program + ".log").c_str(), &st), 0);
  }
  EXPECT_NE(::access(program.c_str(), F_OK), 0);
  EXPECT_NE(::access((program + ".log").c_str(), F_OK), 0);
}

TEST_F(AppendLineTest, CopyOfAMissingProgramIsAnError) {
  EXPECT_FALSE(AppendLineHandler::Copy(dir_ + "/nope").ok());
}

}  // namespace
}  // namespace hotring::hotplug
