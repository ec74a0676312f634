/* A libudev client for libudev_monitor_test: Debian's libudev, its udev_monitor on the "udev"
 * netlink group with a subsystem filter (an in-kernel BPF filter on hotring's header hashes).
 * Prints "ready" once receiving, then for each device received: "device" and its properties
 * (KEY=VALUE lines), "initialized=N", "end". Exits after argv[2] devices. */
#include <libudev.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  struct udev* udev = udev_new();
  if (udev == NULL) return 3;
  struct udev_monitor* mon = udev_monitor_new_from_netlink(udev, "udev");
  if (mon == NULL) return 4;
  if (udev_monitor_filter_add_match_subsystem_devtype(mon, argv[1], NULL) < 0) return 5;
  if (udev_monitor_enable_receiving(mon) < 0) return 6;
  printf("ready\n");
  fflush(stdout);
  int want = atoi(argv[2]);
  struct pollfd p = {.fd = udev_monitor_get_fd(mon), .events = POLLIN};
  while (want > 0) {
    if (poll(&p, 1, 20000) <= 0) return 7; /* nothing came: the test fails on the exit code */
    struct udev_device* dev = udev_monitor_receive_device(mon);
    if (dev == NULL) continue;
    printf("device\n");
    struct udev_list_entry* e;
    udev_list_entry_foreach(e, udev_device_get_properties_list_entry(dev)) {
      printf("%s=%s\n", udev_list_entry_get_name(e), udev_list_entry_get_value(e));
    }
    printf("initialized=%d\nend\n", udev_device_get_is_initialized(dev));
    fflush(stdout);
    udev_device_unref(dev);
    --want;
  }
  udev_monitor_unref(mon);
  udev_unref(udev);
  return 0;
}
