#include "hotplug/bench/bench_boot.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/program_path.h"

namespace hotring::hotplug::bench {

int BenchBootCommand(const std::vector<std::string>& args) {
  return ExecCheckoutScript("hotring bench boot", "testing/initramfs/bench_boot.sh", args);
}

int ExecCheckoutScript(const char* command, const char* script, const std::vector<std::string>& args) {
  if (::access(script, R_OK) != 0) {
    std::fprintf(stderr,
                 "%s: no %s here: run it from a hotring checkout (it builds the "
                 "images with the checkout's scripts and boots them in qemu)\n",
                 command, script);
    return 2;
  }
  std::vector<std::string> argv = {"sh", script};
  bool has_hotring = false;
  for (const std::string& arg : args) has_hotring |= arg == "--hotring";
  if (!has_hotring) argv.insert(argv.end(), {"--hotring", BesideThisProgram("hotring")});
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> pointers;
  for (std::string& arg : argv) pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  std::fflush(nullptr);
  ::execv("/bin/sh", pointers.data());
  std::fprintf(stderr, "%s: exec /bin/sh: %s\n", command, std::strerror(errno));
  return 1;
}

}  // namespace hotring::hotplug::bench
