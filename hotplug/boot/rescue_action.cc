#include "hotplug/boot/rescue_action.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/time/clock.h"

namespace hotring::hotplug::boot {
namespace {

// The terminal to give the shell: the first console the kernel lists (ttyS0 on a serial
// console; the VT in use for tty0), else /dev/console, which cannot be a controlling terminal.
std::string ConsoleDevice() {
  std::ifstream in("/proc/consoles");
  std::string name;
  if (!(in >> name) || name.empty()) return "/dev/console";
  if (name == "tty0") name = "tty1";
  return "/dev/" + name;
}

}  // namespace

bool HaveShell() { return ::access("/bin/sh", X_OK) == 0; }

bool RunRescueShell(const std::string& reason) {
  const std::string console = ConsoleDevice();
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    (void)::setsid();
    int fd = ::open(console.c_str(), O_RDWR);
    if (fd < 0) fd = ::open("/dev/console", O_RDWR);
    if (fd >= 0) {
      (void)::ioctl(fd, TIOCSCTTY, 0);
      for (int i = 0; i < 3; ++i) {
        if (fd != i) ::dup2(fd, i);
      }
      if (fd > 2) ::close(fd);
    }
    ::setenv("REASON", reason.c_str(), 1);
    ::setenv("PS1", "(initramfs) ", 1);
    ::execl("/bin/sh", "sh", "-i", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Only the shell: the daemon is init's child too, and its owner reaps it.
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 127);
}

void EndBoot(const RescuePlan& plan) {
  using Action = RescuePlan::Action;
  if (plan.action == Action::kReboot && plan.delay > absl::ZeroDuration()) {
    absl::SleepFor(plan.delay);
  }
  ::sync();
  switch (plan.action) {
    case Action::kReboot:
      ::reboot(RB_AUTOBOOT);
      break;
    case Action::kPowerOff:
      ::reboot(RB_POWER_OFF);
      break;
    case Action::kShell:
    case Action::kHalt:
      ::reboot(RB_HALT_SYSTEM);
      break;
  }
  for (;;) ::pause();
}

}  // namespace hotring::hotplug::boot
