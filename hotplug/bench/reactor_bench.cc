#include "hotplug/bench/reactor_bench.h"

#include <sys/socket.h>

#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/clock.h"
#include "core/flags.h"
#include "core/status.h"
#include "core/task.h"
#include "core/task_scope.h"
#include "io/ops.h"
#include "io/reactor.h"
#include "io/socket.h"

namespace hotring::hotplug::bench {
namespace {

using io::Buffer;
using io::BufferResult;
using io::Nop;
using io::Reactor;
using io::Recv;
using io::Send;
using io::UnixSocketPair;

Task<absl::Status> NopLoop(Reactor& reactor, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) {
    HOTRING_CO_RETURN_IF_ERROR(co_await Nop(reactor));
  }
  co_return absl::OkStatus();
}

Task<void> NopWorker(Reactor& reactor, uint64_t count, absl::Status* status) {
  *status = co_await NopLoop(reactor, count);
}

Task<absl::Status> BatchedNops(Reactor& reactor, uint64_t total, int batch) {
  std::vector<absl::Status> statuses(batch);
  TaskScope scope;
  for (int i = 0; i < batch; ++i) scope.Spawn(NopWorker(reactor, total / batch, &statuses[i]));
  co_await scope.Join();
  for (const absl::Status& s : statuses) HOTRING_CO_RETURN_IF_ERROR(s);
  co_return absl::OkStatus();
}

// One side sends a message and waits for the echo; the other echoes.
Task<void> Echo(Reactor& reactor, int fd, uint64_t count, absl::Status* status) {
  Buffer buffer(64);
  for (uint64_t i = 0; i < count; ++i) {
    BufferResult got = co_await Recv(reactor, fd, std::move(buffer));
    if (!got.bytes.ok()) {
      *status = got.bytes.status();
      co_return;
    }
    got.buffer.resize(*got.bytes);
    BufferResult sent = co_await Send(reactor, fd, std::move(got.buffer));
    if (!sent.bytes.ok()) {
      *status = sent.bytes.status();
      co_return;
    }
    buffer = std::move(sent.buffer);
    buffer.resize(64);
  }
}

Task<absl::Status> PingPong(Reactor& reactor, uint64_t count) {
  HOTRING_CO_ASSIGN_OR_RETURN(auto pair, UnixSocketPair(SOCK_SEQPACKET));
  absl::Status echo_status;
  TaskScope scope;
  scope.Spawn(Echo(reactor, pair.second.get(), count, &echo_status));
  Buffer buffer(64, 'x');
  for (uint64_t i = 0; i < count; ++i) {
    BufferResult sent = co_await Send(reactor, pair.first.get(), std::move(buffer));
    HOTRING_CO_RETURN_IF_ERROR(sent.bytes.status());
    BufferResult got = co_await Recv(reactor, pair.first.get(), std::move(sent.buffer));
    HOTRING_CO_RETURN_IF_ERROR(got.bytes.status());
    if (*got.bytes != 64) co_return absl::DataLossError("ping-pong: short message");
    buffer = std::move(got.buffer);
  }
  co_await scope.Join();
  co_return echo_status;
}

template <typename MakeTask>
absl::StatusOr<BenchFigure> Measure(Reactor& reactor, std::string name, uint64_t ops,
                                    MakeTask make) {
  const MonoTime start = MonoNow();
  const absl::Status result = reactor.BlockOn(make());
  const MonoTime end = MonoNow();
  if (!result.ok()) return result;
  return BenchFigure{std::move(name), ops, absl::ToDoubleSeconds(Since(start, end))};
}

}  // namespace

absl::StatusOr<std::vector<BenchFigure>> RunReactorBench(const ReactorBenchOptions& options) {
  HOTRING_ASSIGN_OR_RETURN(std::unique_ptr<Reactor> reactor, Reactor::Create());
  std::vector<BenchFigure> figures;
  HOTRING_ASSIGN_OR_RETURN(
      BenchFigure single, Measure(*reactor, "nop_unbatched", options.nops,
                                  [&] { return NopLoop(*reactor, options.nops); }));
  figures.push_back(single);
  const uint64_t batched_ops = options.nops / options.batch * options.batch;
  HOTRING_ASSIGN_OR_RETURN(
      BenchFigure batched,
      Measure(*reactor, absl::StrCat("nop_batch", options.batch), batched_ops,
              [&] { return BatchedNops(*reactor, batched_ops, options.batch); }));
  figures.push_back(batched);
  HOTRING_ASSIGN_OR_RETURN(
      BenchFigure pingpong, Measure(*reactor, "socketpair_pingpong", options.pingpongs,
                                    [&] { return PingPong(*reactor, options.pingpongs); }));
  figures.push_back(pingpong);
  return figures;
}

std::string FormatBenchFigures(const std::vector<BenchFigure>& figures, bool json) {
  std::vector<std::string> parts;
  for (const BenchFigure& f : figures) {
    if (json) {
      parts.push_back(absl::StrFormat(
          "\"%s\": {\"operations\": %d, \"seconds\": %.6f, \"ops_per_s\": %.0f, "
          "\"ns_per_op\": %.1f}",
          f.name, f.operations, f.seconds, f.ops_per_second(), f.ns_per_op()));
    } else {
      parts.push_back(absl::StrFormat("%-22s %10d ops %8.3f s %12.0f ops/s %8.1f ns/op", f.name,
                                      f.operations, f.seconds, f.ops_per_second(),
                                      f.ns_per_op()));
    }
  }
  if (json) return absl::StrCat("{", absl::StrJoin(parts, ", "), "}\n");
  return absl::StrCat(absl::StrJoin(parts, "\n"), "\n");
}

int BenchReactorCommand(const std::vector<std::string>& args) {
  bool json = false;
  ReactorBenchOptions options;
  FlagSet flags("bench reactor",
                "usage: hotring bench reactor [--nops N] [--pingpongs N] [--json]");
  flags
      .Int("--nops", "N", &options.nops, 1, 1'000'000'000,
           "NOP round trips through the ring, one at a time and batched (default 2,000,000)")
      .Int("--pingpongs", "N", &options.pingpongs, 1, 1'000'000'000,
           "socketpair ping-pongs between two tasks on one reactor (default 200,000)")
      .Bool("--json", &json, "the figures as JSON");
  if (std::optional<int> exit = flags.ParseForCommand(args)) return *exit;
  absl::StatusOr<std::vector<BenchFigure>> figures = RunReactorBench(options);
  if (!figures.ok()) return ReportError("bench reactor", figures.status());
  std::fputs(FormatBenchFigures(*figures, json).c_str(), stdout);
  return 0;
}

}  // namespace hotring::hotplug::bench
