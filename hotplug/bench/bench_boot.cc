#include "hotplug/bench/bench_boot.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hotring::hotplug::bench {

int BenchBootCommand(const std::vector<std::string>& args) {
  constexpr char kScript[] = "testing/initramfs/bench_boot.sh";
  if (::access(kScript, R_OK) != 0) {
    std::fprintf(stderr,
                 "hotring bench boot: no %s here: run it from a hotring checkout (it builds the "
                 "images with the checkout's scripts and boots them in qemu)\n",
                 kScript);
    return 2;
  }
  std::vector<std::string> argv = {"sh", kScript};
  bool has_hotring = false;
  for (const std::string& arg : args) has_hotring |= arg == "--hotring";
  if (!has_hotring) {
    char self[4096];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
      std::fprintf(stderr, "hotring bench boot: cannot read /proc/self/exe\n");
      return 1;
    }
    argv.push_back("--hotring");
    argv.push_back(std::string(self, static_cast<size_t>(n)));
  }
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> pointers;
  for (std::string& arg : argv) pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  std::fflush(nullptr);
  ::execv("/bin/sh", pointers.data());
  std::fprintf(stderr, "hotring bench boot: exec /bin/sh: %s\n", std::strerror(errno));
  return 1;
}

}  // namespace hotring::hotplug::bench
