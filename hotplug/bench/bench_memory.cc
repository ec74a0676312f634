#include "hotplug/bench/bench_memory.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "core/flags.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/bench/bench_daemon.h"
#include "hotplug/wire.h"
#include "io/socket.h"

namespace hotring::hotplug::bench {
namespace {

struct Options {
  int64_t events = 100000;
  absl::Duration idle_wait = absl::Seconds(5);
  // The goal: back within kIdleGoalKib resident this long after the burst settled.
  absl::Duration idle_after = absl::Seconds(10);
  std::vector<std::string> daemon_args;
  bool mappings = false;
};

// "Key:   123 kB" -> 123.
bool KibField(absl::string_view line, absl::string_view key, int64_t& out) {
  if (!absl::ConsumePrefix(&line, key)) return false;
  line = absl::StripAsciiWhitespace(line);
  (void)absl::ConsumeSuffix(&line, "kB");
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &out);
}

absl::StatusOr<std::string> ReadText(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(absl::StrCat("read(", path, ")"));
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
  }
}

std::string EventBytes(int64_t seqnum) {
  WireMessage m;
  m.type = WireType::kEvent;
  m.fields = {{"ACTION", "add"},
              {"DEVPATH", absl::StrCat("/devices/bench/dev", seqnum)},
              {"SUBSYSTEM", "bench"},
              {"SEQNUM", absl::StrCat(seqnum)}};
  return EncodeWireMessage(m);
}

// Blocking sendmmsg, 64 datagrams a call: the daemon's receive queue fills and the sender
// waits for room, so the burst is as dense as the daemon can take it.
absl::Status SendBurst(const std::string& socket, int64_t count) {
  return SendDatagrams(socket, count, 64, [](int64_t i) { return EventBytes(i); });
}

std::string Row(absl::string_view name, const MemorySample& m) {
  return absl::StrFormat("%-28s %8d %8d %8d %8d %4d\n", name, m.rss_kib, m.anonymous_kib,
                         m.file_kib, m.peak_rss_kib, m.threads);
}

// The goal for an idle daemon, after start-up and after a burst alike.
constexpr int64_t kIdleGoalKib = 1024;

std::string SeriesRow(absl::Duration since, const MemorySample& m) {
  return absl::StrFormat("  %5.1f s %8d %8d %8d %8d\n", absl::ToDoubleSeconds(since), m.vm_rss_kib,
                         m.rss_anon_kib, m.rss_file_kib, m.rss_shmem_kib);
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "hotring bench memory: %s\n", status.ToString().c_str());
  return 1;
}

// The mappings holding the most resident memory: "rss anon start-end perms name" per line.
std::string LargestMappings(pid_t pid, absl::string_view title) {
  absl::StatusOr<std::string> smaps = ReadText(absl::StrCat("/proc/", pid, "/smaps"));
  if (!smaps.ok()) return std::string(smaps.status().message());
  std::vector<std::pair<int64_t, std::string>> rows;
  std::string header;
  int64_t rss = 0;
  for (absl::string_view line : absl::StrSplit(*smaps, '\n')) {
    int64_t anonymous = 0;
    // A mapping's first line starts "start-end perms"; its fields start "Name:".
    const absl::string_view first = line.substr(0, line.find(' '));
    if (!first.empty() && first.back() != ':' && first.find('-') != absl::string_view::npos) {
      header = std::string(line);
    } else if (KibField(line, "Rss:", rss)) {
    } else if (KibField(line, "Anonymous:", anonymous) && rss > 0) {
      rows.emplace_back(rss, absl::StrFormat("  %6d %6d  %s\n", rss, anonymous, header));
    }
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out = absl::StrCat(title, " (largest mappings: rss anon, KiB)\n");
  for (size_t i = 0; i < rows.size() && i < 8; ++i) out += rows[i].second;
  return out;
}

}  // namespace

absl::StatusOr<MemorySample> ReadMemory(pid_t pid) {
  HOTRING_ASSIGN_OR_RETURN(const std::string rollup,
                           ReadText(absl::StrCat("/proc/", pid, "/smaps_rollup")));
  HOTRING_ASSIGN_OR_RETURN(const std::string status,
                           ReadText(absl::StrCat("/proc/", pid, "/status")));
  MemorySample m;
  bool rss = false, anonymous = false, peak = false;
  for (absl::string_view line : absl::StrSplit(rollup, '\n')) {
    rss = rss || KibField(line, "Rss:", m.rss_kib);
    anonymous = anonymous || KibField(line, "Anonymous:", m.anonymous_kib);
  }
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    peak = peak || KibField(line, "VmHWM:", m.peak_rss_kib);
    (void)(KibField(line, "VmRSS:", m.vm_rss_kib) || KibField(line, "RssAnon:", m.rss_anon_kib) ||
           KibField(line, "RssFile:", m.rss_file_kib) ||
           KibField(line, "RssShmem:", m.rss_shmem_kib));
    if (absl::ConsumePrefix(&line, "Threads:")) {
      (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &m.threads);
    }
  }
  if (!rss || !anonymous || !peak) {
    return absl::DataLossError(absl::StrCat("no Rss/Anonymous/VmHWM for pid ", pid));
  }
  m.file_kib = m.rss_kib - m.anonymous_kib;
  return m;
}

int BenchMemoryCommand(const std::vector<std::string>& args) {
  Options options;
  FlagSet flags(
      "bench memory",
      "usage: hotring bench memory [options]\n"
      "A private daemon (--no-netlink, a private socket): its memory when idle after start-up,\n"
      "its peak resident set (VmHWM) over a burst of events sent as fast as the socket takes them\n"
      "(sendmmsg x64), and its memory once idle again: VmRSS, RssAnon, RssFile and RssShmem\n"
      "(/proc/PID/status) every second from the burst's settle on, then the goal (idle within\n"
      "1 MiB resident --idle-after seconds after the burst); checks that every event was handled.");
  flags.Int("--events", "N", &options.events, 1, 100'000'000,
            "events of the burst (default 100000)")
      .Seconds("--idle-wait", "S", &options.idle_wait,
               "seconds idle before the reading after start-up (default 5; the daemon gives "
               "memory back after 2)")
      .Seconds("--idle-after", "S", &options.idle_after,
               "seconds of readings after the burst settled; the goal is read at the last "
               "(default 10)")
      .Strings("--daemon-arg", "ARG", &options.daemon_args,
               "one more argument for the daemon (repeatable)")
      .Bool("--mappings", &options.mappings,
            "also list the daemon's largest mappings at each reading");
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  auto run = [&]() -> absl::Status {
    BenchDaemon::Options daemon_options;
    daemon_options.args = {"--no-netlink", "--expect-seqnum", "0", "--log-level", "warning"};
    daemon_options.args.insert(daemon_options.args.end(), options.daemon_args.begin(),
                               options.daemon_args.end());
    HOTRING_ASSIGN_OR_RETURN(BenchDaemon daemon, BenchDaemon::Start(std::move(daemon_options)));
    absl::SleepFor(options.idle_wait);
    HOTRING_ASSIGN_OR_RETURN(const MemorySample idle, ReadMemory(daemon.pid()));
    std::string maps;
    if (options.mappings) maps += LargestMappings(daemon.pid(), "idle after start-up");
    HOTRING_RETURN_IF_ERROR(SendBurst(daemon.socket(), options.events));
    HOTRING_RETURN_IF_ERROR(daemon.Settle(absl::Seconds(600)));
    const absl::Time settled_at = absl::Now();
    HOTRING_ASSIGN_OR_RETURN(const MemorySample settled, ReadMemory(daemon.pid()));
    if (options.mappings) maps += LargestMappings(daemon.pid(), "burst settled");
    // One reading a second while the daemon idles: when it gives memory back, and how much.
    std::string series = absl::StrFormat("%-10s %8s %8s %8s %8s\n", "  settled+",
                                         "VmRSS", "RssAnon", "RssFile", "RssShmem");
    series += SeriesRow(absl::ZeroDuration(), settled);
    for (int64_t i = 1; absl::Seconds(i) <= options.idle_after; ++i) {
      absl::SleepFor(settled_at + absl::Seconds(i) - absl::Now());
      HOTRING_ASSIGN_OR_RETURN(const MemorySample m, ReadMemory(daemon.pid()));
      series += SeriesRow(absl::Now() - settled_at, m);
    }
    HOTRING_ASSIGN_OR_RETURN(const MemorySample after, ReadMemory(daemon.pid()));
    if (options.mappings) maps += LargestMappings(daemon.pid(), "idle after the burst");
    HOTRING_ASSIGN_OR_RETURN(const auto counters, daemon.Status());
    auto counter = [&](const char* key) -> uint64_t {
      const auto it = counters.find(key);
      return it == counters.end() ? 0 : it->second;
    };
    uint64_t dropped = 0;
    for (const auto& [key, value] : counters) {
      if (absl::StartsWith(key, "dropped_")) dropped += value;
    }
    std::string out = absl::StrFormat("%-28s %8s %8s %8s %8s %4s\n", "KiB", "rss", "anon",
                                      "file", "peak", "thr");
    out += Row("idle after start-up", idle);
    out += Row("burst settled", settled);
    out += Row("idle after the burst", after);
    out += absl::StrCat("after the burst settled (KiB, /proc/PID/status):\n", series);
    out += absl::StrFormat(
        "goal: idle within %d KiB resident %s after the burst: %s (%d KiB: %d anonymous, %d "
        "file, %d shared)\n",
        kIdleGoalKib, absl::FormatDuration(options.idle_after),
        after.vm_rss_kib <= kIdleGoalKib ? "met" : "NOT MET", after.vm_rss_kib,
        after.rss_anon_kib, after.rss_file_kib, after.rss_shmem_kib);
    out += absl::StrFormat(
        "burst: %d events sent, received %d, handled %d, failed %d, dropped %d%s\n",
        options.events, counter("received"), counter("handled"), counter("failed"), dropped,
        counter("handled") == static_cast<uint64_t>(options.events) &&
                counter("received") == static_cast<uint64_t>(options.events)
            ? " (lossless)"
            : " (EVENTS LOST)");
    out += maps;
    std::fputs(out.c_str(), stdout);
    if (counter("handled") != static_cast<uint64_t>(options.events)) {
      return absl::DataLossError("not every event of the burst was handled");
    }
    return daemon.Stop();
  };
  const absl::Status status = run();
  if (!status.ok()) return Fail(status);
  return 0;
}

}  // namespace hotring::hotplug::bench
