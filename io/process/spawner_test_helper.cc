// A child for spawner_test: reports what it inherited (descriptors, signal state, argv and
// environment) into a file, or misbehaves on request.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern char** environ;

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: spawner_test_helper fds OUT | sigstate OUT | env OUT [ARGS...] | "
               "ignore-term\n");
  return 2;
}

// Every open descriptor (except the one reading the directory), with what it points to.
int ListFds(const char* out_path) {
  std::string report;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 3;
  const int own = dirfd(dir);
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const int fd = std::atoi(entry->d_name);
    if (fd == own) continue;
    char target[256] = {};
    const std::string link = std::string("/proc/self/fd/") + entry->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
    report += std::to_string(fd) + " " + (n > 0 ? std::string(target, n) : "?") + "\n";
  }
  closedir(dir);
  FILE* out = std::fopen(out_path, "we");
  if (out == nullptr) return 4;
  std::fputs(report.c_str(), out);
  return std::fclose(out) == 0 ? 0 : 5;
}

// The SigBlk/SigIgn/SigCgt lines of /proc/self/status.
int SignalState(const char* out_path) {
  FILE* status = std::fopen("/proc/self/status", "re");
  if (status == nullptr) return 3;
  std::string report;
  char line[512];
  while (std::fgets(line, sizeof(line), status) != nullptr) {
    if (std::strncmp(line, "SigBlk:", 7) == 0 || std::strncmp(line, "SigIgn:", 7) == 0) {
      report += line;
    }
  }
  std::fclose(status);
  FILE* out = std::fopen(out_path, "we");
  if (out == nullptr) return 4;
  std::fputs(report.c_str(), out);
  return std::fclose(out) == 0 ? 0 : 5;
}

int Env(int argc, char** argv) {
  FILE* out = std::fopen(argv[2], "we");
  if (out == nullptr) return 4;
  for (int i = 0; i < argc; ++i) std::fprintf(out, "argv[%d]=%s\n", i, argv[i]);
  for (char** var = environ; *var != nullptr; ++var) std::fprintf(out, "env %s\n", *var);
  return std::fclose(out) == 0 ? 0 : 5;
}

int IgnoreTerm() {
  signal(SIGTERM, SIG_IGN);
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const std::string mode = argv[1];
  if (mode == "fds" && argc == 3) return ListFds(argv[2]);
  if (mode == "sigstate" && argc == 3) return SignalState(argv[2]);
  if (mode == "env" && argc >= 3) return Env(argc, argv);
  if (mode == "ignore-term") return IgnoreTerm();
  return Usage();
}
