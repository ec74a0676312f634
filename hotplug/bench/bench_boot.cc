#include "hotplug/bench/bench_boot.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/program_path.h"

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
  if (!has_hotring) argv.insert(argv.end(), {"--hotring", BesideThisProgram("hotring")});
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
