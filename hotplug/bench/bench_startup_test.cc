#include "hotplug/bench/bench_startup.h"

#include <sys/socket.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "core/unique_fd.h"
#include "io/socket.h"
#include "testing/daemon_fixture.h"

namespace hotring::hotplug {
namespace {

using absl::Milliseconds;

// True while some process has the abstract name bound.
bool Bound(const std::string& name) {
  absl::StatusOr<io::SocketAddress> address = io::UnixAddress(name);
  absl::StatusOr<UniqueFd> fd = io::UnixSocket(SOCK_DGRAM);
  if (!address.ok() || !fd.ok()) return false;
  return ::sendto(fd->get(), "", 0, MSG_DONTWAIT, address->get(), address->length) == 0 ||
         errno == EAGAIN;
}

TEST(BenchStartupTest, EveryStartIsTimedAndEveryDaemonIsGoneAfterwards) {
  constexpr int kStarts = 3;
  absl::StatusOr<std::vector<StartupSeries>> series =
      RunStartupBench({.binary = testing::HotringBinary(), .starts = kStarts});
  ASSERT_TRUE(series.ok()) << series.status();
  ASSERT_EQ(series->size(), 4u);
  EXPECT_TRUE(absl::StartsWith((*series)[0].name, "ready"));
  EXPECT_TRUE(absl::StartsWith((*series)[1].name, "status"));
  EXPECT_TRUE(absl::StartsWith((*series)[2].name, "daemonize"));
  EXPECT_TRUE(absl::StartsWith((*series)[3].name, "daemon CPU time"));
  for (const StartupSeries& s : *series) {
    ASSERT_EQ(s.samples.size(), static_cast<size_t>(kStarts)) << s.name;
    for (const absl::Duration d : s.samples) EXPECT_GT(d, absl::ZeroDuration()) << s.name;
  }
  // 3 series x 3 starts, sockets numbered in start order: none is still served.
  for (int i = 0; i < 3 * kStarts; ++i) {
    const std::string name = absl::StrCat("@hotring-bench-startup-", ::getpid(), "-", i);
    EXPECT_FALSE(Bound(name)) << name << " still has a daemon";
  }
}

TEST(BenchStartupTest, ADaemonThatNeverGetsReadyIsAnErrorNotAFigure) {
  absl::StatusOr<std::vector<StartupSeries>> series =
      RunStartupBench({.binary = "/bin/false", .starts = 1});
  ASSERT_FALSE(series.ok());
  EXPECT_NE(series.status().message().find("before it was ready (exit 1)"), std::string::npos)
      << series.status();
}

TEST(BenchStartupTest, ReportGivesMedianAndP90PerSeries) {
  const std::vector<StartupSeries> series = {
      {"ready (x)",
       {Milliseconds(5), Milliseconds(1), Milliseconds(3), Milliseconds(2), Milliseconds(4),
        Milliseconds(6), Milliseconds(7), Milliseconds(8), Milliseconds(9), Milliseconds(100),
        Milliseconds(10)}}};
  const std::string text = FormatStartupReport(series, false, "0.50", "0.75");
  EXPECT_NE(text.find("11 starts  min   1.00  median   6.00  p90  10.00  max  100.00 ms"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("load average 0.50 at the start, 0.75 at the end"), std::string::npos);
  const std::string json = FormatStartupReport(series, true, "0.50", "0.75");
  EXPECT_NE(json.find("\"median_ms\": 6"), std::string::npos) << json;
  EXPECT_NE(json.find("\"p90_ms\": 10"), std::string::npos) << json;
  EXPECT_NE(json.find("\"load_average_start\": \"0.50\""), std::string::npos) << json;
}

}  // namespace
}  // namespace hotring::hotplug
