// spawn_cost: what one child costs, by the way it is started. Runs PROGRAM --children times
// per method and round, methods interleaved round by round, and reports per child the
// children's CPU, minor page faults and context switches (getrusage(RUSAGE_CHILDREN) deltas),
// this process's own CPU and the wall time. Methods:
//   posix        posix_spawn + waitpid (glibc: clone(CLONE_VM|CLONE_VFORK), 32 KiB stack)
//   start        Spawner::Start as the daemon's --exec asks (pipes, setsid, /dev/null), then
//                the leftovers' SIGKILL and a blocking reap: no reactor
//   run          Spawner::Run on a reactor, one child at a time (the daemon's path)
//   run-par      Spawner::Run, --parallel children in flight at once (the daemon's coldplug)
//   posix-par    --parallel threads each running posix_spawn + waitpid
//   posix-procs  --parallel processes (forked) each running posix_spawn + waitpid: side by
//                side like posix-par, but from separate address spaces
//   faults       no program: one forked process maps 1 MiB, touches its 256 pages and unmaps
//                it, --children times; reported as CPU per page fault. A child is mostly such
//                page-table work (clone, exec, its faults, exit), and on a guest whose page
//                tables the host shadows it costs far more than on bare metal
//   faults-par   the same in --parallel processes at once: how much dearer a fault gets when
//                the other CPUs fault too (compare with faults on an otherwise idle machine)
// Usage: spawn_cost [--children N] [--rounds R] [--parallel K] [--methods a,b,...] PROGRAM
// (PROGRAM an absolute path; not needed when only the faults methods run)
// The child gets a uevent-sized environment and one argument, like a handler.
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/task.h"
#include "core/task_scope.h"
#include "io/process/spawner.h"
#include "io/reactor.h"

namespace hotring::io::process {
namespace {

struct Sample {
  double children_cpu_us = 0;  // per child
  double children_minflt = 0;
  double children_nvcsw = 0;
  double children_nivcsw = 0;
  double self_cpu_us = 0;
  double self_minflt = 0;
  double self_nvcsw = 0;
  double wall_us = 0;
};

double TvUs(const timeval& tv) { return tv.tv_sec * 1e6 + tv.tv_usec; }

double NowUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

std::vector<std::string> HandlerEnv(int i) {
  return {"ACTION=change", absl::StrCat("DEVPATH=/devices/virtual/bench/dev", i),
          "SUBSYSTEM=bench", absl::StrCat("SEQNUM=", 1000 + i), "HOME=/",
          "PATH=/sbin:/bin:/usr/sbin:/usr/bin"};
}

bool PosixSpawnOne(const std::string& program, int i) {
  std::vector<std::string> env = HandlerEnv(i);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string arg0 = program;
  std::string arg1 = "bench";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid;
  if (posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv, envp.data()) != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

SpawnRequest Request(const std::string& program, int i) {
  SpawnRequest request;
  request.program = program;
  request.argv = {program, "bench"};
  request.envp = HandlerEnv(i);
  request.label = absl::StrCat("SEQNUM=", 1000 + i);
  return request;
}

Task<void> RunSome(Spawner& spawner, io::Reactor& reactor, const std::string& program,
                   std::atomic<int>& next, int total, int& failures) {
  for (;;) {
    const int i = next.fetch_add(1);
    if (i >= total) co_return;
    const absl::StatusOr<SpawnResult> result =
        co_await spawner.Run(reactor, Request(program, i));
    if (!result.ok() || !result->exit.exited || result->exit.code != 0) ++failures;
  }
}

Task<void> JoinAll(TaskScope& scope) { co_await scope.Join(); }

// `rounds` times: map 1 MiB, write one byte per page, unmap. 0 on success.
int TouchPages(int rounds) {
  constexpr size_t kBytes = 1 << 20;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (int i = 0; i < rounds; ++i) {
    void* const map =
        mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return 1;
    volatile char* const bytes = static_cast<char*>(map);
    for (size_t at = 0; at < kBytes; at += page) bytes[at] = 1;
    munmap(map, kBytes);
  }
  return 0;
}

// Runs `n` children by `method`; returns the number that failed.
int RunMethod(const std::string& method, const std::string& program, int n, int parallel,
              Spawner& spawner, io::Reactor& reactor) {
  int failures = 0;
  if (method == "posix") {
    for (int i = 0; i < n; ++i) failures += PosixSpawnOne(program, i) ? 0 : 1;
  } else if (method == "posix-par") {
    std::atomic<int> next{0};
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < parallel; ++t) {
      threads.emplace_back([&] {
        for (int i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
          if (!PosixSpawnOne(program, i)) ++failed;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    failures = failed.load();
  } else if (method == "posix-procs") {
    // Each process runs its share; their children are reaped by them, so RUSAGE_CHILDREN
    // counts the loops' own CPU too once they are reaped here (reported as the children's).
    std::vector<pid_t> loops;
    for (int t = 0; t < parallel; ++t) {
      const int share = n / parallel + (t < n % parallel ? 1 : 0);
      const pid_t pid = fork();
      if (pid == 0) {
        int failed = 0;
        for (int i = 0; i < share; ++i) failed += PosixSpawnOne(program, i) ? 0 : 1;
        _exit(failed == 0 ? 0 : 1);
      }
      if (pid < 0) return n;
      loops.push_back(pid);
    }
    for (const pid_t pid : loops) {
      int status = 0;
      while (waitpid(pid, &status, 0) < 0) {
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
    }
  } else if (method == "faults" || method == "faults-par") {
    const int processes = method == "faults" ? 1 : parallel;
    std::vector<pid_t> workers;
    for (int t = 0; t < processes; ++t) {
      const pid_t pid = fork();
      if (pid == 0) _exit(TouchPages(n));
      if (pid < 0) return n;
      workers.push_back(pid);
    }
    for (const pid_t pid : workers) {
      int status = 0;
      while (waitpid(pid, &status, 0) < 0) {
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
    }
  } else if (method == "start") {
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<ChildProcess> child = spawner.Start(Request(program, i));
      if (!child.ok()) {
        ++failures;
        continue;
      }
      const absl::StatusOr<io::ExitStatus> exit = child->WaitBlocking();
      if (!exit.ok() || !exit->exited || exit->code != 0) ++failures;
    }
  } else if (method == "run" || method == "run-par") {
    std::atomic<int> next{0};
    TaskScope scope;
    const int workers = method == "run" ? 1 : parallel;
    for (int w = 0; w < workers; ++w) {
      scope.Spawn(RunSome(spawner, reactor, program, next, n, failures));
    }
    const absl::Status joined = reactor.BlockOn(JoinAll(scope));
    if (!joined.ok()) {
      std::fprintf(stderr, "spawn_cost: %s\n", std::string(joined.message()).c_str());
      return n;
    }
  } else {
    std::fprintf(stderr, "spawn_cost: unknown method %s\n", method.c_str());
    return n;
  }
  return failures;
}

Sample Measure(const std::string& method, const std::string& program, int n, int parallel,
               Spawner& spawner, io::Reactor& reactor, int& failures) {
  rusage c0, s0, c1, s1;
  getrusage(RUSAGE_CHILDREN, &c0);
  getrusage(RUSAGE_SELF, &s0);
  const double w0 = NowUs();
  failures += RunMethod(method, program, n, parallel, spawner, reactor);
  const double w1 = NowUs();
  getrusage(RUSAGE_CHILDREN, &c1);
  getrusage(RUSAGE_SELF, &s1);
  Sample s;
  s.children_cpu_us = (TvUs(c1.ru_utime) + TvUs(c1.ru_stime) - TvUs(c0.ru_utime) -
                       TvUs(c0.ru_stime)) / n;
  s.children_minflt = static_cast<double>(c1.ru_minflt - c0.ru_minflt) / n;
  s.children_nvcsw = static_cast<double>(c1.ru_nvcsw - c0.ru_nvcsw) / n;
  s.children_nivcsw = static_cast<double>(c1.ru_nivcsw - c0.ru_nivcsw) / n;
  s.self_cpu_us = (TvUs(s1.ru_utime) + TvUs(s1.ru_stime) - TvUs(s0.ru_utime) -
                   TvUs(s0.ru_stime)) / n;
  s.self_minflt = static_cast<double>(s1.ru_minflt - s0.ru_minflt) / n;
  s.self_nvcsw = static_cast<double>(s1.ru_nvcsw - s0.ru_nvcsw) / n;
  s.wall_us = (w1 - w0) / n;
  return s;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

int Main(int argc, char** argv) {
  int children = 400;
  int rounds = 5;
  int parallel = 2;
  std::vector<std::string> methods = {"posix", "start", "run", "run-par"};
  std::string program;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--children") {
      if (!absl::SimpleAtoi(value(), &children) || children <= 0) return 2;
    } else if (arg == "--rounds") {
      if (!absl::SimpleAtoi(value(), &rounds) || rounds <= 0) return 2;
    } else if (arg == "--parallel") {
      if (!absl::SimpleAtoi(value(), &parallel) || parallel <= 0) return 2;
    } else if (arg == "--methods") {
      methods = absl::StrSplit(value(), ',');
    } else {
      program = arg;
    }
  }
  const bool needs_program = std::any_of(methods.begin(), methods.end(), [](const std::string& m) {
    return m != "faults" && m != "faults-par";
  });
  if (needs_program && (program.empty() || program[0] != '/')) {
    std::fprintf(stderr,
                 "usage: spawn_cost [--children N] [--rounds R] [--parallel K] "
                 "[--methods posix,posix-par,posix-procs,start,run,run-par,faults,faults-par] "
                 "/ABSOLUTE/PROGRAM\n");
    return 2;
  }
  absl::StatusOr<std::unique_ptr<Spawner>> spawner = Spawner::Create();
  absl::StatusOr<std::unique_ptr<io::Reactor>> reactor = io::Reactor::Create();
  if (!spawner.ok() || !reactor.ok()) {
    std::fprintf(stderr, "spawn_cost: cannot set up a spawner and a reactor\n");
    return 1;
  }
  std::map<std::string, std::vector<Sample>> samples;
  int failures = 0;
  for (int r = 0; r < rounds; ++r) {
    for (const std::string& method : methods) {
      samples[method].push_back(
          Measure(method, program, children, parallel, **spawner, **reactor, failures));
    }
  }
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) < 0) load[0] = -1;
  std::printf("spawn_cost: %d children x %d rounds per method, interleaved; parallel %d; "
              "load average at the end %.2f; failures %d\n",
              children, rounds, parallel, load[0], failures);
  std::printf("per child, medians of the rounds:\n");
  std::printf("%-10s %10s %9s %8s %8s %10s %9s %8s %9s\n", "method", "child CPU", "child flt",
              "child vcs", "child ics", "parent CPU", "parent flt", "parent vcs", "wall");
  for (const std::string& method : methods) {
    const std::vector<Sample>& v = samples[method];
    auto col = [&](double Sample::*field) {
      std::vector<double> values;
      for (const Sample& s : v) values.push_back(s.*field);
      return Median(values);
    };
    if (method == "faults" || method == "faults-par") {
      std::printf("%-10s %.2f us of CPU per page fault (%.0f faults per process)\n",
                  method.c_str(), col(&Sample::children_cpu_us) / col(&Sample::children_minflt),
                  col(&Sample::children_minflt) * children / (method == "faults" ? 1 : parallel));
      continue;
    }
    std::printf("%-10s %8.1fus %9.1f %8.2f %8.2f %8.1fus %9.1f %8.2f %7.1fus\n", method.c_str(),
                col(&Sample::children_cpu_us), col(&Sample::children_minflt),
                col(&Sample::children_nvcsw), col(&Sample::children_nivcsw),
                col(&Sample::self_cpu_us), col(&Sample::self_minflt), col(&Sample::self_nvcsw),
                col(&Sample::wall_us));
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hotring::io::process

int main(int argc, char** argv) { return hotring::io::process::Main(argc, argv); }
