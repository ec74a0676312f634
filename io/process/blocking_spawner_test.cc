#include "io/process/blocking_spawner.h"

#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace hotring::io::process {
namespace {

SpawnRequest Shell(std::string script) {
  SpawnRequest r;
  r.program = "/bin/sh";
  r.argv = {"sh", "-c", std::move(script)};
  r.envp = {"GREETING=hello"};
  r.label = "test";
  return r;
}

TEST(BlockingSpawnerTest, ReturnsOutputAndExit) {
  auto spawner = BlockingSpawner::Create();
  ASSERT_TRUE(spawner.ok()) << spawner.status();
  absl::StatusOr<BlockingRunResult> r = (*spawner)->Run(Shell("echo $GREETING; echo oops >&2; exit 3"), 1024);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_text, "hello\n");
  EXPECT_EQ(r->stderr_text, "oops\n");
  EXPECT_TRUE(r->exit.exited);
  EXPECT_EQ(r->exit.code, 3);
  EXPECT_FALSE(r->timed_out);
}

TEST(BlockingSpawnerTest, CutsOutputAtTheBound) {
  auto spawner = BlockingSpawner::Create();
  ASSERT_TRUE(spawner.ok());
  absl::StatusOr<BlockingRunResult> r = (*spawner)->Run(Shell("printf 0123456789"), 4);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text, "0123");
  EXPECT_TRUE(r->stdout_truncated);
  EXPECT_TRUE(r->exit.success());
}

TEST(BlockingSpawnerTest, TermsThenKillsAtTheDeadline) {
  auto spawner = BlockingSpawner::Create();
  ASSERT_TRUE(spawner.ok());
  SpawnRequest term = Shell("sleep 30");
  term.timeout = absl::Milliseconds(100);
  absl::StatusOr<BlockingRunResult> r = (*spawner)->Run(term, 16);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->killed);
  EXPECT_FALSE(r->exit.exited);
  EXPECT_EQ(r->exit.code, SIGTERM);

  SpawnRequest stubborn = Shell("trap '' TERM; echo ready; while :; do sleep 1; done");
  stubborn.timeout = absl::Milliseconds(100);
  stubborn.kill_grace = absl::Milliseconds(100);
  r = (*spawner)->Run(stubborn, 16);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_TRUE(r->killed);
  EXPECT_EQ(r->exit.code, SIGKILL);
}

TEST(BlockingSpawnerTest, MissingProgramIsAnError) {
  auto spawner = BlockingSpawner::Create();
  ASSERT_TRUE(spawner.ok());
  SpawnRequest r;
  r.program = "/nonexistent/program";
  EXPECT_FALSE((*spawner)->Run(r, 16).ok());
}

TEST(BlockingSpawnerTest, ManyThreadsAtOnce) {
  auto spawner = BlockingSpawner::Create();
  ASSERT_TRUE(spawner.ok());
  std::vector<std::string> outputs(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<BlockingRunResult> r = (*spawner)->Run(Shell(absl::StrCat("echo ", i)), 64);
      if (r.ok()) outputs[i] = r->stdout_text;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(outputs[i], absl::StrCat(i, "\n"));
}

}  // namespace
}  // namespace hotring::io::process
