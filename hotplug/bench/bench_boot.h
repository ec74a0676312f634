// `hotring bench boot`: boots qemu guests with hotring's and other initramfs images and compares
// them. The images are built by a checkout's scripts, so this is
// testing/initramfs/bench_boot.sh, run with the hotring beside hotring-bench as the images'
// hotring.
#ifndef HOTRING_HOTPLUG_BENCH_BENCH_BOOT_H_
#define HOTRING_HOTPLUG_BENCH_BENCH_BOOT_H_

#include <string>
#include <vector>

namespace hotring::hotplug::bench {

// Execs the script with `args` (and --hotring HOTRING, the one beside this program, unless
// given); returns only on
// failure: 2 outside a checkout, 1 when the script cannot be started.
int BenchBootCommand(const std::vector<std::string>& args);

// What BenchBootCommand does, for any benchmark that is a checkout's guest script: execs
// `sh SCRIPT [--hotring /proc/self/exe] ARGS...` from the current directory. `command` names
// the caller in its errors ("hotring bench boot"). Returns only on failure, as above.
int ExecCheckoutScript(const char* command, const char* script, const std::vector<std::string>& args);

}  // namespace hotring::hotplug::bench

#endif  // HOTRING_HOTPLUG_BENCH_BENCH_BOOT_H_
