// A handler program for tests of `hotring daemon --exec`. It appends one line per event to
// `record.log` in the directory it lives in (tests copy or link it into a temp dir), so a test
// can assert which events ran, in which order, overlapping or not, with which environment:
//
//   <SEQNUM|-> <DEVPATH> <ACTION> <SUBSYSTEM(argv[1])> <start_ns> <end_ns> <pid> <fds> <ENVHASH>
//
// Behaviour is chosen by the event's own variables (the handler's environment):
//   SLEEP_MS=N     sleep N ms between start and end
//   HANG=1         sleep forever (and ignore SIGTERM when HANG=stubborn)
//   CRASH=1        abort() after recording the start (no end line)
//   FLOOD=N        write N bytes of output lines to stdout
//   GRANDCHILD=1   fork a grandchild that keeps stdout open for 30 s, then exit
//   EXIT=N         exit with N after recording
//   WAIT_FOR=PATH  create PATH.waiting, then wait until PATH exists (at most 60 s)
// <fds> is the list of open descriptors ("0,1,2"), <ENVHASH> the sorted KEY list joined by ','.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

extern char** environ;

#ifdef __SANITIZE_ADDRESS__
// The daemon runs a handler with only the event's environment, so the test's ASAN_OPTIONS
// never reaches this program, and LeakSanitizer's exit-time scan (about 60 ms of CPU per run
// here, twice the rest of its start and exit) made a thousand-event test take a minute. A
// handler run is short-lived and its leaks are not hotring's.
extern "C" __attribute__((visibility("default"), used)) const char* __asan_default_options() {
  return "detect_leaks=0";
}
#endif

namespace {

long long NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

std::string Env(const char* key, const char* fallback = "-") {
  const char* v = getenv(key);
  return v != nullptr ? v : fallback;
}

std::string OpenFds() {
  std::vector<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return "?";
  const int own = dirfd(dir);
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const int fd = atoi(e->d_name);
    if (fd != own) fds.push_back(fd);
  }
  closedir(dir);
  std::sort(fds.begin(), fds.end());
  std::string out;
  for (const int fd : fds) out += (out.empty() ? "" : ",") + std::to_string(fd);
  return out;
}

std::string EnvKeys() {
  std::vector<std::string> keys;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = strchr(*e, '=');
    keys.emplace_back(*e, eq != nullptr ? static_cast<size_t>(eq - *e) : strlen(*e));
  }
  std::sort(keys.begin(), keys.end());
  std::string out;
  for (const std::string& k : keys) out += (out.empty() ? "" : ",") + k;
  return out;
}

std::string LogPath(const char* argv0) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string path = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string(argv0);
  const size_t slash = path.rfind('/');
  return (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) + "/record.log";
}

void Append(const std::string& path, const std::string& line) {
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!write(fd, line.data(), line.size());  // one small O_APPEND write: atomic
  close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  const long long start = NowNs();
  const std::string fds = OpenFds();
  const std::string log = LogPath(argv[0]);
  const std::string subsystem = argc > 1 ? argv[1] : "-";
  const std::string prefix = Env("SEQNUM") + " " + Env("DEVPATH") + " " + Env("ACTION") + " " +
                             subsystem;
  if (Env("CRASH") == "1") {
    Append(log, prefix + " " + std::to_string(start) + " crash " + std::to_string(getpid()) +
                    " " + fds + " " + EnvKeys() + "\n");
    abort();
  }
  if (Env("HANG") != "-") {
    if (Env("HANG") == "stubborn") signal(SIGTERM, SIG_IGN);
    for (;;) pause();
  }
  if (Env("GRANDCHILD") == "1") {
    if (fork() == 0) {
      sleep(30);  // holds stdout and stderr open
      _exit(0);
    }
  }
  if (const std::string flood = Env("FLOOD"); flood != "-") {
    long long left = atoll(flood.c_str());
    std::string chunk(4096, 'x');
    for (size_t i = 99; i < chunk.size(); i += 100) chunk[i] = '\n';
    while (left > 0) {
      const ssize_t n = write(1, chunk.data(), std::min<long long>(left, chunk.size()));
      if (n <= 0) break;
      left -= n;
    }
  }
  if (const std::string gate = Env("WAIT_FOR"); gate != "-") {
    Append(gate + ".waiting", std::to_string(getpid()) + "\n");
    for (int i = 0; i < 6000 && access(gate.c_str(), F_OK) != 0; ++i) {
      timespec ts{0, 10 * 1000000};
      nanosleep(&ts, nullptr);
    }
  }
  if (const std::string ms = Env("SLEEP_MS"); ms != "-") {
    const long long n = atoll(ms.c_str());
    timespec ts{static_cast<time_t>(n / 1000), static_cast<long>((n % 1000) * 1000000)};
    nanosleep(&ts, nullptr);
  }
  const long long end = NowNs();
  Append(log, prefix + " " + std::to_string(start) + " " + std::to_string(end) + " " +
                  std::to_string(getpid()) + " " + fds + " " + EnvKeys() + "\n");
  const std::string code = Env("EXIT");
  return code == "-" ? 0 : atoi(code.c_str());
}
